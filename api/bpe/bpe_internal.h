/* bpe_internal.h - what the files of api/bpe/ share: the tokenizer object,
 * GPT-2's hand matcher (split.c, generated unicode.c) and the helpers of
 * util.c. The tokenizer.json pipeline's own types are in hf.h. */
#ifndef API_BPE_INTERNAL_H
#define API_BPE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "api/base/base.h" /* api__utf8_put */
#include "bpe.h"

/* ==== GPT-2's pattern by hand (split.c, unicode.c) ==== */

enum { API__BPE_OTHER = 0, API__BPE_LETTER, API__BPE_NUMBER, API__BPE_SPACE };

typedef struct {
    uint32_t lo, hi; /* inclusive */
    uint32_t cls;    /* API__BPE_LETTER, _NUMBER or _SPACE */
} api__bpe_range;

extern const api__bpe_range api__bpe_ranges[];
extern const unsigned api__bpe_n_ranges;

/* The class of a code point: API__BPE_OTHER when in no range. */
int api__bpe_class(uint32_t cp);

/* Decodes one UTF-8 character of s[0 .. len) (len >= 1): its code point and
 * byte count; 0 if the bytes there are not valid UTF-8 (overlong, surrogate,
 * beyond U+10FFFF, cut short). */
size_t api__bpe_utf8(const unsigned char *s, size_t len, uint32_t *cp);

/* The length in bytes of the pre-token that starts at text[pos] (pos < len;
 * text valid UTF-8): GPT-2's pattern, first alternative that matches, each
 * greedy. */
size_t api__bpe_next_piece(const char *text, size_t len, size_t pos);

/* ==== The tokenizer ==== */

typedef struct {
    uint64_t key;   /* left id << 32 | right id; API__EMPTY_KEY when free */
    int32_t rank;   /* the merge's place in the list, 0 first */
    int32_t merged; /* the id of left + right */
} api__merge;

#define API__EMPTY_KEY UINT64_MAX

typedef struct api__hf api__hf; /* a tokenizer.json pipeline (hf.h) */

struct api_bpe {
    size_t n_vocab;        /* ids 0 .. n_vocab - 1 */
    size_t max_token;      /* the longest token's bytes */
    size_t *off;           /* [n_vocab + 1]: token i stands for bytes[off[i] .. off[i + 1]) */
    char *bytes;
    int32_t byte_id[256];  /* vocab.json kind: the token of each single byte */
    api__merge *merges;    /* open addressing, mask + 1 slots */
    size_t mask;
    api__hf *hf;           /* the tokenizer.json pipeline; NULL for vocab.json + merges.txt */
    int32_t bos, eos;      /* -1 when the folder names none */
    int32_t pad_id, mask_id; /* -1 when the folder names none */
    size_t model_max;      /* tokenizer_config.json's model_max_length; 0: none */
    int has_trunc;         /* tokenizer.json's "truncation", as trunc */
    api_bpe_opts trunc;
    const char *kind;      /* api_bpe_kind */
};

/* ==== util.c ==== */

/* Writes the message into err (one line: control bytes become '?') and
 * returns code. */
int api__bpe_fail(char *err, size_t err_size, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The whole of a regular file (not a FIFO or device), NUL-terminated:
 * *data (malloc'd) of *len bytes, at most 1 GiB. */
int api__bpe_read_file(const char *path, char **data, size_t *len, char *err, size_t err_size);

/* 1 if dir/name exists (stat, not open), its path in path. */
int api__bpe_exists(const char *dir, const char *name, char *path, size_t cap);

/* A merge table of 2 n slots or more, all free; 0 or API_BPE_ENOMEM. */
int api__bpe_merges_alloc(api_bpe *t, size_t n);
uint64_t api__bpe_pair(int32_t a, int32_t b);
api__merge *api__bpe_merge_slot(const api_bpe *t, uint64_t key);
/* The rank and result of merging a then b; 0 if they do not merge. */
int api__bpe_merge_get(const api_bpe *t, int32_t a, int32_t b, int32_t *rank, int32_t *merged);

/* GPT-2's byte symbols: sym[b] is the code point byte b is written as;
 * inverse[cp] the byte of symbol cp (< 324), or -1. */
void api__bpe_byte_symbols(uint32_t sym[256], int16_t inverse[324]);

/* Frees t and its tables, not its pipeline (api_bpe_free frees both). */
void api__bpe_free_base(api_bpe *t);

/* Growable id list of one encoding. */
typedef struct {
    int32_t *v;
    size_t n, cap;
} api__ids;
int api__ids_push(api__ids *l, int32_t id); /* 0 or API_BPE_ENOMEM */

/* ==== gpt2.c, gpt2_encode.c: vocab.json + merges.txt ==== */

int api__gpt2_load_dir(const char *dir, api_bpe **out, char *err, size_t err_size);
int api__gpt2_load_mem(const char *vocab_json, size_t vocab_len, const char *merges_txt,
                       size_t merges_len, api_bpe **out, char *err, size_t err_size);
int api__gpt2_encode(const api_bpe *t, const char *text, size_t len, int32_t **ids, size_t *n);

/* ==== hf_load.c, hf_encode.c, hf_decode.c: tokenizer.json ==== */

/* tokenizer.json's text (and tokenizer_config.json's, or NULL); the names
 * say where they come from in faults. */
int api__hf_load(const char *json, size_t len, const char *config, size_t config_len,
                 const char *json_name, const char *config_name, api_bpe **out, char *err,
                 size_t err_size);
/* The same from parsed trees (cfg NULL: no tokenizer_config.json). */
typedef struct json_t json_t;
int api__hf_load_tree(json_t *root, json_t *cfg, const char *json_name, api_bpe **out, char *err,
                      size_t err_size);
void api__hf_free(api__hf *h);
/* The text alone, without the template (flags: API_BPE_SPECIAL_AS_TEXT).
 * ends (NULL: not wanted) gets where each split of the text (a pre-token,
 * or an added token as ~end) ends in the ids, for truncation's early exit. */
int api__hf_encode(const api_bpe *t, const char *text, size_t len, unsigned flags, int32_t **ids,
                   size_t *n, api__ids *ends);
int api__hf_decode(const api_bpe *t, const int32_t *ids, size_t n, unsigned flags, char **text,
                   size_t *len);
int api__hf_is_special(const api_bpe *t, int32_t id);
int32_t api__hf_token_id(const api_bpe *t, const char *s, size_t n);

#endif
