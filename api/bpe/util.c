/* util.c - what every file of api/bpe/ uses: error text, reading files, the
 * merge table, UTF-8 output, GPT-2's byte symbols (see bpe_internal.h). */
#include "bpe_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *api_bpe_strerror(int code) {
    switch (code) {
    case API_BPE_OK: return "ok";
    case API_BPE_ENOMEM: return "out of memory";
    case API_BPE_EIO: return "a file could not be read";
    case API_BPE_EFORMAT: return "not a tokenizer file of a known kind";
    case API_BPE_EUTF8: return "the text is not valid UTF-8";
    case API_BPE_ERANGE: return "a token id outside the vocabulary";
    case API_BPE_ETOOBIG: return "too large";
    case API_BPE_ENOTSUP: return "a tokenizer.json step this server does not implement";
    default: return "unknown error";
    }
}

int api__bpe_fail(char *err, size_t err_size, int code, const char *fmt, ...) {
    if (err && err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
        /* a file's text quoted in the message: one line, no terminal escapes */
        for (char *c = err; *c; c++)
            if ((unsigned char)*c < ' ' || *c == 0x7f) *c = '?';
    }
    return code;
}

/* Opens path for reading if it is a regular file: a FIFO or a device would
 * block the start (open and read wait for a writer) or never end. Returns
 * the descriptor, or -1 with err filled. */
static int open_regular(const char *path, char *err, size_t err_size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO: no wait for a writer */
    if (fd < 0) return api__bpe_fail(err, err_size, API_BPE_EIO, "%s: %s", path, strerror(errno)), -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return api__bpe_fail(err, err_size, API_BPE_EIO, "%s: not a regular file", path), -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags != -1) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}

int api__bpe_read_file(const char *path, char **data, size_t *len, char *err, size_t err_size) {
    *data = NULL;
    int fd = open_regular(path, err, err_size);
    if (fd < 0) return API_BPE_EIO;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return api__bpe_fail(err, err_size, API_BPE_EIO, "%s: %s", path, strerror(errno));
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1) break;
        if (cap > (size_t)1 << 30) {
            free(buf);
            fclose(f);
            return api__bpe_fail(err, err_size, API_BPE_ETOOBIG, "%s: over 1 GiB", path);
        }
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) free(buf);
        buf = bigger;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf) return api__bpe_fail(err, err_size, API_BPE_ENOMEM, "%s: out of memory", path);
    if (bad) {
        free(buf);
        return api__bpe_fail(err, err_size, API_BPE_EIO, "%s: read error", path);
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return 0;
}

int api__bpe_exists(const char *dir, const char *name, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0;
}

/* ==== The merge table ==== */

int api__bpe_merges_alloc(api_bpe *t, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    t->merges = malloc(cap * sizeof *t->merges);
    if (!t->merges) return API_BPE_ENOMEM;
    for (size_t i = 0; i < cap; i++) t->merges[i].key = API__EMPTY_KEY;
    t->mask = cap - 1;
    return 0;
}

uint64_t api__bpe_pair(int32_t a, int32_t b) {
    return (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
}

api__merge *api__bpe_merge_slot(const api_bpe *t, uint64_t key) {
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & t->mask;
    while (t->merges[i].key != API__EMPTY_KEY && t->merges[i].key != key) i = (i + 1) & t->mask;
    return &t->merges[i];
}

int api__bpe_merge_get(const api_bpe *t, int32_t a, int32_t b, int32_t *rank, int32_t *merged) {
    const api__merge *s = api__bpe_merge_slot(t, api__bpe_pair(a, b));
    if (s->key == API__EMPTY_KEY) return 0;
    *rank = s->rank;
    *merged = s->merged;
    return 1;
}

/* ==== Text ==== */

size_t api_bpe_utf8_text(const char *b, size_t n, char *out) {
    /* the WHATWG UTF-8 decoder, U+FFFD for each maximal invalid subpart */
    size_t o = 0, needed = 0, seen = 0;
    uint32_t cp = 0;
    unsigned lower = 0x80, upper = 0xBF;
    for (size_t i = 0; i < n;) {
        unsigned c = (unsigned char)b[i];
        if (needed == 0) {
            i++;
            if (c < 0x80) out[o++] = (char)c;
            else if (c >= 0xC2 && c <= 0xDF) needed = 1, cp = c & 0x1F;
            else if (c >= 0xE0 && c <= 0xEF) {
                if (c == 0xE0) lower = 0xA0;
                if (c == 0xED) upper = 0x9F;
                needed = 2, cp = c & 0x0F;
            } else if (c >= 0xF0 && c <= 0xF4) {
                if (c == 0xF0) lower = 0x90;
                if (c == 0xF4) upper = 0x8F;
                needed = 3, cp = c & 0x07;
            } else o += api__utf8_put(out + o, 0xFFFD);
            continue;
        }
        if (c < lower || c > upper) { /* this byte starts again */
            needed = seen = 0, lower = 0x80, upper = 0xBF;
            o += api__utf8_put(out + o, 0xFFFD);
            continue;
        }
        i++;
        lower = 0x80, upper = 0xBF;
        cp = cp << 6 | (c & 0x3F);
        if (++seen == needed) {
            o += api__utf8_put(out + o, cp);
            needed = seen = 0;
        }
    }
    if (needed) o += api__utf8_put(out + o, 0xFFFD);
    out[o] = '\0';
    return o;
}

/* bytes_to_unicode() of encoder.py: printable Latin-1 bytes stand for
 * themselves, the other 68 for U+0100 onwards in byte order. */
void api__bpe_byte_symbols(uint32_t sym[256], int16_t inverse[324]) {
    uint32_t n = 0;
    for (int i = 0; i < 324; i++) inverse[i] = -1;
    for (uint32_t b = 0; b < 256; b++) {
        int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        sym[b] = printable ? b : 256 + n++;
        inverse[sym[b]] = (int16_t)b;
    }
}

void api__bpe_free_base(api_bpe *t) {
    if (!t) return;
    free(t->off);
    free(t->bytes);
    free(t->merges);
    free(t);
}

int api__ids_push(api__ids *l, int32_t id) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        if (cap > SIZE_MAX / sizeof *l->v) return API_BPE_ENOMEM;
        int32_t *v = realloc(l->v, cap * sizeof *v);
        if (!v) return API_BPE_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = id;
    return 0;
}
