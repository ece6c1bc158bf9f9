/* gpt2.c - loading GPT-2's files: vocab.json + merges.txt (Hugging Face's
 * names) or encoder.json + vocab.bpe (OpenAI's), from a directory or from
 * memory. Encoding is gpt2_encode.c. */
#include "bpe_internal.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define fail api__bpe_fail

/* The code point a GPT-2 byte symbol stands for, or -1 (symbols end at U+0143). */
static int symbol_byte(const int16_t inverse[324], uint32_t cp) {
    return cp < 324 ? inverse[cp] : -1;
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
    api__bpe_byte_symbols(sym, inverse);

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
    if (api__bpe_merges_alloc(t, lines) != 0)
        return fail(err, err_size, API_BPE_ENOMEM, "%s: out of memory", path);

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
        uint64_t key = api__bpe_pair((int32_t)json_integer_value(a), (int32_t)json_integer_value(b));
        api__merge *s = api__bpe_merge_slot(t, key);
        if (s->key != API__EMPTY_KEY)
            return fail(err, err_size, API_BPE_EFORMAT, "%s:%zu: the same merge as line %d", path,
                        line_no, (int)s->rank + 1);
        s->key = key;
        s->rank = rank++;
        s->merged = (int32_t)json_integer_value(ab);
    }
    return 0;
}

/* The vocabulary's JSON, from a regular file only (open_regular). */
static json_t *load_json(const char *path, char *err, size_t err_size) {
    char *text;
    size_t len;
    if (api__bpe_read_file(path, &text, &len, err, err_size) != 0) return NULL;
    json_error_t jerr;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
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
        api__bpe_free_base(t);
        return rc;
    }
    t->bos = t->eos = t->pad_id = t->mask_id = -1;
    t->kind = "vocab.json + merges.txt (GPT-2 byte-level BPE)";
    *out = t;
    return 0;
}

int api__gpt2_load_dir(const char *dir, api_bpe **out, char *err, size_t err_size) {
    char vocab_path[4096], merges_path[4096];
    if (strlen(dir) > 4000) return fail(err, err_size, API_BPE_ETOOBIG, "directory name too long");
    if (!api__bpe_exists(dir, "vocab.json", vocab_path, sizeof vocab_path)) {
        if (!api__bpe_exists(dir, "encoder.json", vocab_path, sizeof vocab_path))
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
    else if ((rc = api__bpe_read_file(merges_path, &merges, &merges_len, err, err_size)) != 0)
        json_decref(vocab);
    else
        rc = load_parsed(vocab, merges, merges_len, vocab_path, merges_path, out, err, err_size);
    free(merges);
    return rc;
}

int api__gpt2_load_mem(const char *vocab_json, size_t vocab_len, const char *merges_txt,
                       size_t merges_len, api_bpe **out, char *err, size_t err_size) {
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
