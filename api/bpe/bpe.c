/* bpe.c - GPT-2's byte-level BPE: loading the vocabulary and merges, encoding
 * and decoding (see bpe.h). The pre-tokenizer is api/bpe_split.c. */
#include "bpe.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpe_internal.h"

typedef struct {
    uint64_t key;   /* left id << 32 | right id; EMPTY_KEY when free */
    int32_t rank;   /* the line of the merge, 0 first */
    int32_t merged; /* the id of left + right */
} merge_slot;

#define EMPTY_KEY UINT64_MAX

struct api_bpe {
    size_t n_vocab;
    size_t max_token;     /* the longest token's bytes */
    size_t *off;          /* [n_vocab + 1]: token i is bytes[off[i] .. off[i + 1]) */
    char *bytes;          /* every token's raw bytes */
    int32_t byte_id[256]; /* the token of each single byte */
    merge_slot *merges;   /* open addressing, mask + 1 slots */
    size_t mask;
};

const char *api_bpe_strerror(int code) {
    switch (code) {
    case API_BPE_OK: return "ok";
    case API_BPE_ENOMEM: return "out of memory";
    case API_BPE_EIO: return "a file could not be read";
    case API_BPE_EFORMAT: return "not a GPT-2 vocabulary or merges file";
    case API_BPE_EUTF8: return "the text is not valid UTF-8";
    case API_BPE_ERANGE: return "a token id outside the vocabulary";
    case API_BPE_ETOOBIG: return "too large";
    default: return "unknown error";
    }
}

static int fail(char *err, size_t err_size, int code, const char *fmt, ...) {
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

/* ==== GPT-2's byte symbols ==== */

/* bytes_to_unicode() of encoder.py: printable Latin-1 bytes stand for
 * themselves, the other 68 for U+0100 onwards in byte order. */
static void byte_symbols(uint32_t sym[256]) {
    uint32_t n = 0;
    for (uint32_t b = 0; b < 256; b++) {
        int printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        sym[b] = printable ? b : 256 + n++;
    }
}

/* The byte a symbol code point stands for, or -1 (symbols end at U+0143). */
static int symbol_byte(const int16_t inverse[324], uint32_t cp) {
    return cp < 324 ? inverse[cp] : -1;
}

/* ==== The merge table ==== */

static uint64_t pair_key(int32_t a, int32_t b) {
    return (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
}

static merge_slot *merge_find(merge_slot *slots, size_t mask, uint64_t key) {
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
    while (slots[i].key != EMPTY_KEY && slots[i].key != key) i = (i + 1) & mask;
    return &slots[i];
}

/* The rank and result of merging a then b; 0 if they do not merge. */
static int merge_lookup(const api_bpe *t, int32_t a, int32_t b, int32_t *rank, int32_t *merged) {
    const merge_slot *s = merge_find(t->merges, t->mask, pair_key(a, b));
    if (s->key == EMPTY_KEY) return 0;
    *rank = s->rank;
    *merged = s->merged;
    return 1;
}

/* ==== Loading ==== */

/* Opens path for reading if it is a regular file: a FIFO or a device would
 * block the start (open and read wait for a writer) or never end. Returns
 * the descriptor, or -1 with err filled. */
static int open_regular(const char *path, char *err, size_t err_size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO: no wait for a writer */
    if (fd < 0) return fail(err, err_size, API_BPE_EIO, "%s: %s", path, strerror(errno)), -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(err, err_size, API_BPE_EIO, "%s: not a regular file", path), -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags != -1) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}

static int read_file(const char *path, char **data, size_t *len, char *err, size_t err_size) {
    *data = NULL;
    int fd = open_regular(path, err, err_size);
    if (fd < 0) return API_BPE_EIO;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return fail(err, err_size, API_BPE_EIO, "%s: %s", path, strerror(errno));
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1) break;
        if (cap > (size_t)1 << 30) {
            free(buf);
            fclose(f);
            return fail(err, err_size, API_BPE_ETOOBIG, "%s: over 1 GiB", path);
        }
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) free(buf);
        buf = bigger;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf) return fail(err, err_size, API_BPE_ENOMEM, "%s: out of memory", path);
    if (bad) {
        free(buf);
        return fail(err, err_size, API_BPE_EIO, "%s: read error", path);
    }
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return 0;
}

/* Each token's length in bytes (len[id]), every id given once, every
 * symbol one of GPT-2's byte symbols (inverse: code point to byte). */
static int vocab_lengths(json_t *vocab, const int16_t inverse[324], size_t *len, char *seen,
                         const char *path, char *err, size_t err_size) {
    const char *key;
    json_t *value;
    json_object_foreach(vocab, key, value) {
        size_t id = (size_t)json_integer_value(value);
        if (seen[id]) return fail(err, err_size, API_BPE_EFORMAT, "%s: id %zu is given to two tokens", path, id);
        seen[id] = 1;
        size_t klen = strlen(key), count = 0;
        for (size_t p = 0; p < klen;) {
            uint32_t cp;
            size_t k = api__bpe_utf8((const unsigned char *)key + p, klen - p, &cp);
            if (k == 0 || symbol_byte(inverse, cp) < 0)
                return fail(err, err_size, API_BPE_EFORMAT,
                            "%s: token %zu (\"%.40s\") is not made of GPT-2's byte symbols", path,
                            id, key);
            p += k;
            count++;
        }
        len[id] = count;
    }
    return 0;
}

/* Every token's bytes at t->bytes + t->off[id]. */
static void vocab_bytes(api_bpe *t, json_t *vocab, const int16_t inverse[324]) {
    const char *key;
    json_t *value;
    json_object_foreach(vocab, key, value) {
        size_t id = (size_t)json_integer_value(value), klen = strlen(key);
        char *out = t->bytes + t->off[id];
        for (size_t p = 0; p < klen;) {
            uint32_t cp = 0;
            p += api__bpe_utf8((const unsigned char *)key + p, klen - p, &cp);
            *out++ = (char)symbol_byte(inverse, cp);
        }
    }
}

/* t->byte_id: every byte must have its own token. */
static int vocab_byte_ids(api_bpe *t, json_t *vocab, const uint32_t sym[256], const char *path,
                          char *err, size_t err_size) {
    for (int b = 0; b < 256; b++) {
        char name[4];
        size_t k = 0;
        if (sym[b] < 0x80) name[k++] = (char)sym[b];
        else name[k++] = (char)(0xC0 | sym[b] >> 6), name[k++] = (char)(0x80 | (sym[b] & 0x3F));
        name[k] = '\0';
        json_t *id = json_object_get(vocab, name);
        if (!id)
            return fail(err, err_size, API_BPE_EFORMAT, "%s: no token for byte 0x%02X (\"%s\")",
                        path, b, name);
        t->byte_id[b] = (int32_t)json_integer_value(id);
    }
    return 0;
}

/* The vocabulary: {"symbols": id, ...} with ids 0 .. n - 1, each once; every
 * symbol made of GPT-2's byte symbols. Fills t->n_vocab, off, bytes, byte_id. */
static int load_vocab(api_bpe *t, json_t *vocab, const char *path, char *err, size_t err_size) {
    if (!json_is_object(vocab) || json_object_size(vocab) == 0)
        return fail(err, err_size, API_BPE_EFORMAT, "%s: not a JSON object of tokens", path);
    size_t n = json_object_size(vocab);
    if (n > API_BPE_MAX_VOCAB)
        return fail(err, err_size, API_BPE_ETOOBIG, "%s: %zu tokens, over %u", path, n,
                    API_BPE_MAX_VOCAB);
    uint32_t sym[256];
    int16_t inverse[324];
    byte_symbols(sym);
    for (int i = 0; i < 324; i++) inverse[i] = -1;
    for (int b = 0; b < 256; b++) inverse[sym[b]] = (int16_t)b;

    /* each symbol's bytes: at most as many as the key's UTF-8 bytes */
    size_t total = 0;
    const char *key;
    json_t *value;
    json_object_foreach(vocab, key, value) {
        json_int_t id = json_is_integer(value) ? json_integer_value(value) : -1;
        if (id < 0 || (size_t)id >= n)
            return fail(err, err_size, API_BPE_EFORMAT,
                        "%s: token \"%.40s\" has id %.40s, not an integer in 0 .. %zu", path, key,
                        json_is_integer(value) ? "out of range" : "of another type", n - 1);
        total += strlen(key);
    }
    t->off = calloc(n + 1, sizeof *t->off);
    t->bytes = malloc(total + 1);
    size_t *len = calloc(n, sizeof *len);
    char *seen = calloc(n, 1);
    int rc = 0;
    if (!t->off || !t->bytes || !len || !seen)
        rc = fail(err, err_size, API_BPE_ENOMEM, "%s: out of memory", path);
    else
        rc = vocab_lengths(vocab, inverse, len, seen, path, err, err_size);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        t->off[i + 1] = t->off[i] + len[i];
        if (len[i] > t->max_token) t->max_token = len[i];
    }
    if (rc == 0) {
        vocab_bytes(t, vocab, inverse);
        t->n_vocab = n;
        rc = vocab_byte_ids(t, vocab, sym, path, err, err_size);
    }
    free(len);
    free(seen);
    return rc;
}

/* The merge lines of a merges file (neither empty nor the "#version" line),
 * after checking that it is not empty and holds no NUL byte (which would
 * cut a line short without a word). Returns 0, or an error code. */
static int count_merges(const char *text, size_t text_len, const char *path, size_t *merges,
                        char *err, size_t err_size) {
    if (text_len == 0)
        return fail(err, err_size, API_BPE_EFORMAT, "%s: empty (a merges file holds at least its "
                    "#version line; a byte-level tokenizer has that line and no merge)", path);
    const char *nul = memchr(text, '\0', text_len);
    if (nul) {
        size_t line_no = 1;
        for (const char *c = text; c < nul; c++) line_no += *c == '\n';
        return fail(err, err_size, API_BPE_EFORMAT, "%s:%zu: a NUL byte", path, line_no);
    }
    size_t n = 0;
    for (const char *line = text, *end; line < text + text_len; line = end + 1) {
        end = memchr(line, '\n', (size_t)(text + text_len - line));
        if (!end) end = text + text_len;
        size_t len = (size_t)(end - line) - (end > line && end[-1] == '\r');
        n += len > 0 && !(line == text && strncmp(line, "#version", 8) == 0);
    }
    if (n > INT32_MAX / 2) return fail(err, err_size, API_BPE_ETOOBIG, "%s: too many merges", path);
    *merges = n;
    return 0;
}

/* The merges: an optional "#version" line, then "left right" lines in rank
 * order; left, right and left + right must be tokens. The table is sized by
 * the merges, not the lines (20 MB of newlines took 1 GB). */
static int load_merges(api_bpe *t, json_t *vocab, char *text, size_t text_len, const char *path,
                       char *err, size_t err_size) {
    size_t lines = 0;
    int rc = count_merges(text, text_len, path, &lines, err, err_size);
    if (rc) return rc;
    size_t cap = 16;
    while (cap < 2 * lines) cap *= 2;
    t->merges = malloc(cap * sizeof *t->merges);
    if (!t->merges) return fail(err, err_size, API_BPE_ENOMEM, "%s: out of memory", path);
    for (size_t i = 0; i < cap; i++) t->merges[i].key = EMPTY_KEY;
    t->mask = cap - 1;

    int32_t rank = 0;
    size_t line_no = 0;
    for (char *line = text, *end; line < text + text_len; line = end + 1) {
        line_no++;
        end = memchr(line, '\n', (size_t)(text + text_len - line));
        if (!end) end = text + text_len;
        *end = '\0';
        if (end > line && end[-1] == '\r') end[-1] = '\0';
        if (line_no == 1 && strncmp(line, "#version", 8) == 0) continue;
        if (*line == '\0') continue;
        char *space = strchr(line, ' ');
        if (!space || space == line || space[1] == '\0' || strchr(space + 1, ' '))
            return fail(err, err_size, API_BPE_EFORMAT,
                        "%s:%zu: \"%.60s\" is not two symbols separated by one space", path,
                        line_no, line);
        *space = '\0';
        json_t *a = json_object_get(vocab, line), *b = json_object_get(vocab, space + 1);
        *space = ' ';
        /* the merged symbol: the line without its space */
        memmove(space, space + 1, strlen(space + 1) + 1);
        json_t *ab = json_object_get(vocab, line);
        if (!a || !b || !ab)
            return fail(err, err_size, API_BPE_EFORMAT,
                        "%s:%zu: a symbol of this merge (or the merged \"%.60s\") is not in the "
                        "vocabulary",
                        path, line_no, line);
        uint64_t key = pair_key((int32_t)json_integer_value(a), (int32_t)json_integer_value(b));
        merge_slot *s = merge_find(t->merges, t->mask, key);
        if (s->key != EMPTY_KEY)
            return fail(err, err_size, API_BPE_EFORMAT, "%s:%zu: the same merge as line %d", path,
                        line_no, (int)s->rank + 1);
        s->key = key;
        s->rank = rank++;
        s->merged = (int32_t)json_integer_value(ab);
    }
    return 0;
}

/* stat, not open: opening a FIFO would wait for a writer. */
static int exists(const char *dir, const char *name, char *path, size_t cap) {
    snprintf(path, cap, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0;
}

/* The vocabulary's JSON, from a regular file only (open_regular). */
static json_t *load_json(const char *path, char *err, size_t err_size) {
    int fd = open_regular(path, err, err_size);
    if (fd < 0) return NULL;
    json_error_t jerr;
    json_t *j = json_loadfd(fd, JSON_REJECT_DUPLICATES, &jerr);
    close(fd);
    if (!j) fail(err, err_size, API_BPE_EFORMAT, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
    return j;
}

/* A tokenizer from its parsed vocabulary and its merges' text (changed in
 * place); the paths name them in faults. Takes vocab's reference. */
static int load_parsed(json_t *vocab, char *merges, size_t merges_len, const char *vocab_path,
                       const char *merges_path, api_bpe **out, char *err, size_t err_size) {
    api_bpe *t = calloc(1, sizeof *t);
    int rc = t ? 0 : fail(err, err_size, API_BPE_ENOMEM, "out of memory");
    if (rc == 0 && (rc = load_vocab(t, vocab, vocab_path, err, err_size)) == 0)
        rc = load_merges(t, vocab, merges, merges_len, merges_path, err, err_size);
    json_decref(vocab);
    if (rc) {
        api_bpe_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

int api_bpe_load(const char *dir, api_bpe **out, char *err, size_t err_size) {
    *out = NULL;
    if (err && err_size) err[0] = '\0';
    char vocab_path[4096], merges_path[4096];
    if (strlen(dir) > 4000) return fail(err, err_size, API_BPE_ETOOBIG, "directory name too long");
    if (!exists(dir, "vocab.json", vocab_path, sizeof vocab_path)) {
        if (!exists(dir, "encoder.json", vocab_path, sizeof vocab_path))
            return fail(err, err_size, API_BPE_EIO,
                        "%s: neither vocab.json + merges.txt nor encoder.json + vocab.bpe", dir);
        snprintf(merges_path, sizeof merges_path, "%s/vocab.bpe", dir);
    } else {
        snprintf(merges_path, sizeof merges_path, "%s/merges.txt", dir);
    }
    char *merges = NULL;
    size_t merges_len = 0;
    json_t *vocab = load_json(vocab_path, err, err_size);
    int rc;
    if (!vocab)
        rc = API_BPE_EFORMAT;
    else if ((rc = read_file(merges_path, &merges, &merges_len, err, err_size)) != 0)
        json_decref(vocab);
    else
        rc = load_parsed(vocab, merges, merges_len, vocab_path, merges_path, out, err, err_size);
    free(merges);
    return rc;
}

int api_bpe_load_mem(const char *vocab_json, size_t vocab_len, const char *merges_txt,
                     size_t merges_len, api_bpe **out, char *err, size_t err_size) {
    *out = NULL;
    if (err && err_size) err[0] = '\0';
    json_error_t jerr;
    json_t *vocab = json_loadb(vocab_json, vocab_len, JSON_REJECT_DUPLICATES, &jerr);
    if (!vocab)
        return fail(err, err_size, API_BPE_EFORMAT, "vocab.json:%d:%d: %s", jerr.line, jerr.column,
                    jerr.text);
    char *merges = malloc(merges_len + 1);
    if (!merges) {
        json_decref(vocab);
        return fail(err, err_size, API_BPE_ENOMEM, "out of memory");
    }
    memcpy(merges, merges_txt, merges_len);
    merges[merges_len] = '\0';
    int rc = load_parsed(vocab, merges, merges_len, "vocab.json", "merges.txt", out, err, err_size);
    free(merges);
    return rc;
}

void api_bpe_free(api_bpe *t) {
    if (!t) return;
    free(t->off);
    free(t->bytes);
    free(t->merges);
    free(t);
}

size_t api_bpe_vocab_size(const api_bpe *t) {
    return t->n_vocab;
}

size_t api_bpe_max_token_bytes(const api_bpe *t) {
    return t->max_token;
}

/* ==== Encoding ==== */

typedef struct {
    int32_t rank, pos;
} heap_entry;

/* The work area of one call, sized for the longest piece (m bytes). */
typedef struct {
    int32_t *sym, *prev, *next, *pending;
    heap_entry *heap;
    size_t n_heap, n_pending;
} work;

static int entry_less(heap_entry a, heap_entry b) {
    return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos);
}

static void heap_push(work *w, heap_entry e) {
    size_t i = w->n_heap++;
    while (i > 0 && entry_less(e, w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = e;
}

static heap_entry heap_pop(work *w) {
    heap_entry top = w->heap[0], last = w->heap[--w->n_heap];
    size_t i = 0, n = w->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && entry_less(w->heap[c + 1], w->heap[c])) c++;
        if (!entry_less(w->heap[c], last)) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n) w->heap[i] = last;
    return top;
}

/* Pushes the pair that starts at node i, when it merges. */
static void push_pair(const api_bpe *t, work *w, int32_t i) {
    int32_t j = w->next[i], rank, merged;
    if (j >= 0 && merge_lookup(t, w->sym[i], w->sym[j], &rank, &merged))
        heap_push(w, (heap_entry){rank, i});
}

/* BPE of one piece of m bytes, as encoder.py's bpe(): merge every occurrence
 * of the lowest-ranked pair, left to right, and again, until none merges.
 * Pairs made by merges of one rank enter the heap only after every occurrence
 * of that rank is merged (pending), so the order is encoder.py's for any
 * merges file. Appends the tokens to ids[*n]. */
static void bpe_piece(const api_bpe *t, work *w, const unsigned char *p, size_t m, int32_t *ids,
                      size_t *n) {
    if (m == 1) {
        ids[(*n)++] = t->byte_id[p[0]];
        return;
    }
    for (size_t i = 0; i < m; i++) {
        w->sym[i] = t->byte_id[p[i]];
        w->prev[i] = (int32_t)i - 1;
        w->next[i] = i + 1 < m ? (int32_t)i + 1 : -1;
    }
    w->n_heap = w->n_pending = 0;
    for (size_t i = 0; i + 1 < m; i++) push_pair(t, w, (int32_t)i);
    int32_t current = -1;
    for (;;) {
        if (w->n_pending && (w->n_heap == 0 || w->heap[0].rank != current)) {
            for (size_t k = 0; k < w->n_pending; k++)
                if (w->sym[w->pending[k]] >= 0) push_pair(t, w, w->pending[k]);
            w->n_pending = 0;
        }
        if (w->n_heap == 0) break;
        heap_entry e = heap_pop(w);
        int32_t i = e.pos, j = w->next[i], rank, merged;
        if (w->sym[i] < 0 || j < 0 || !merge_lookup(t, w->sym[i], w->sym[j], &rank, &merged) ||
            rank != e.rank)
            continue; /* stale: a merge changed this pair */
        current = rank;
        w->sym[i] = merged;
        w->sym[j] = -1;
        int32_t k = w->next[j];
        w->next[i] = k;
        if (k >= 0) w->prev[k] = i;
        if (w->prev[i] >= 0) w->pending[w->n_pending++] = w->prev[i];
        w->pending[w->n_pending++] = i;
    }
    for (int32_t i = 0; i >= 0; i = w->next[i]) ids[(*n)++] = w->sym[i];
}

int api_bpe_encode(const api_bpe *t, const char *text, size_t len, int32_t **ids, size_t *n) {
    *ids = NULL;
    *n = 0;
    if (len > API_BPE_MAX_TEXT) return API_BPE_ETOOBIG;
    if (len == 0) return 0;
    /* valid UTF-8, and the longest piece */
    for (size_t p = 0; p < len;) {
        uint32_t cp;
        size_t k = api__bpe_utf8((const unsigned char *)text + p, len - p, &cp);
        if (k == 0) return API_BPE_EUTF8;
        p += k;
    }
    size_t longest = 0;
    for (size_t p = 0; p < len;) {
        size_t m = api__bpe_next_piece(text, len, p);
        if (m > longest) longest = m;
        p += m;
    }
    work w = {0};
    int32_t *out = malloc(len * sizeof *out);
    w.sym = malloc(longest * sizeof *w.sym);
    w.prev = malloc(longest * sizeof *w.prev);
    w.next = malloc(longest * sizeof *w.next);
    w.pending = malloc(2 * longest * sizeof *w.pending);
    w.heap = malloc(3 * longest * sizeof *w.heap);
    int rc = 0;
    if (!out || !w.sym || !w.prev || !w.next || !w.pending || !w.heap) {
        rc = API_BPE_ENOMEM;
    } else {
        for (size_t p = 0; p < len;) {
            size_t m = api__bpe_next_piece(text, len, p);
            bpe_piece(t, &w, (const unsigned char *)text + p, m, out, n);
            p += m;
        }
    }
    free(w.sym);
    free(w.prev);
    free(w.next);
    free(w.pending);
    free(w.heap);
    if (rc) {
        free(out);
        *n = 0;
        return rc;
    }
    *ids = out;
    return 0;
}

/* ==== Decoding ==== */

int api_bpe_token_bytes(const api_bpe *t, int32_t id, const char **bytes, size_t *len) {
    if (id < 0 || (size_t)id >= t->n_vocab) return API_BPE_ERANGE;
    *bytes = t->bytes + t->off[id];
    *len = t->off[id + 1] - t->off[id];
    return 0;
}

static size_t put_cp(char *out, uint32_t cp) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

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
            } else o += put_cp(out + o, 0xFFFD);
            continue;
        }
        if (c < lower || c > upper) { /* this byte starts again */
            needed = seen = 0, lower = 0x80, upper = 0xBF;
            o += put_cp(out + o, 0xFFFD);
            continue;
        }
        i++;
        lower = 0x80, upper = 0xBF;
        cp = cp << 6 | (c & 0x3F);
        if (++seen == needed) {
            o += put_cp(out + o, cp);
            needed = seen = 0;
        }
    }
    if (needed) o += put_cp(out + o, 0xFFFD);
    out[o] = '\0';
    return o;
}

int api_bpe_token_text(const api_bpe *t, int32_t id, char *out, size_t out_size, size_t *len) {
    const char *b;
    size_t n;
    int rc = api_bpe_token_bytes(t, id, &b, &n);
    if (rc) return rc;
    if (out_size < 3 * n + 1) return API_BPE_ETOOBIG;
    *len = api_bpe_utf8_text(b, n, out);
    return 0;
}

int api_bpe_decode(const api_bpe *t, const int32_t *ids, size_t n, char **text, size_t *len) {
    *text = NULL;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || (size_t)ids[i] >= t->n_vocab) return API_BPE_ERANGE;
        total += t->off[ids[i] + 1] - t->off[ids[i]]; /* each under 2^32, n under 2^31: no wrap */
        if (total > API_BPE_MAX_TEXT) return API_BPE_ETOOBIG;
    }
    char *out = malloc(total + 1);
    if (!out) return API_BPE_ENOMEM;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = t->off[ids[i] + 1] - t->off[ids[i]];
        memcpy(out + o, t->bytes + t->off[ids[i]], k);
        o += k;
    }
    out[o] = '\0';
    *text = out;
    *len = o;
    return 0;
}
