/* hf.h - what the hf_*.c files share: a tokenizer.json pipeline as loaded
 * (hf_load.c, hf_parts.c, hf_model.c) and run (hf_encode.c, hf_pretok.c,
 * hf_word.c, hf_decode.c) on the helpers of hf_map.c and hf_text.c. Each
 * step follows the Rust file of Hugging Face's `tokenizers` it names. */
#ifndef API_BPE_HF_H
#define API_BPE_HF_H

#include <oniguruma.h>

#include "bpe_internal.h"

/* ==== hf_map.c: tables ==== */

/* Strings (copied in) to ids: open addressing, sized once for n entries. */
typedef struct {
    char *keys;
    size_t used, key_cap;
    struct api__entry {
        size_t off;
        uint32_t len;
        int32_t id;
    } *e;
    size_t n, cap;
    int32_t *slot; /* index into e, or -1 */
    size_t mask;
} api__map;
int api__map_init(api__map *m, size_t n, size_t key_bytes);
/* 0; 1 if k is there already (then its id changes to id); API_BPE_ENOMEM */
int api__map_put(api__map *m, const char *k, size_t n, int32_t id);
int32_t api__map_get(const api__map *m, const char *k, size_t n); /* -1 if absent */
void api__map_free(api__map *m);

/* The contents of the added tokens as a byte trie: node 0 is the root, an
 * edge is a key (node << 8 | byte) of an open-addressing table. */
typedef struct {
    uint64_t *key;
    int32_t *child;
    size_t mask;
    int32_t *term; /* per node: the added token ending there (index), or -1 */
    size_t nodes;
} api__trie;
int api__trie_build(api__trie *tr, const char *const *s, const size_t *len, const int *use, size_t n);
/* The longest token of tr starting at s[0 .. n): its index, *m its length; -1 if none. */
int32_t api__trie_longest(const api__trie *tr, const char *s, size_t n, size_t *m);
void api__trie_free(api__trie *tr);

/* ==== hf_text.c: Unicode and Oniguruma ==== */

/* The pattern (n bytes) compiled as the library's onig::Regex::new does;
 * NULL and err filled if it does not compile. literal: escaped first. */
regex_t *api__re_new(const char *pat, size_t n, int literal, char *err, size_t err_size);
typedef struct {
    size_t s, e; /* s[s .. e) of the text */
} api__span;
/* The matches of re in s[0 .. n), as onig's find_iter yields them, into
 * *out (grown with realloc; *cap slots); their count, or -1 (no memory). */
long api__re_find(regex_t *re, const char *s, size_t n, api__span **out, size_t *cap);
int api__is_space(uint32_t cp);   /* Rust's char::is_whitespace, regex \s */
int api__is_word(uint32_t cp);    /* regex \w */
int api__is_numeric(uint32_t cp); /* char::is_numeric (Nd, Nl, No) */
/* Unicode normalization form (API__N_NFC ..) of s[0 .. n) into *out
 * (malloc'd); its length, or -1. */
long api__unicode_form(int form, const char *s, size_t n, char **out);

/* ==== The pipeline ==== */

enum { /* normalizers, pre-tokenizers, decoders */
    API__N_PREPEND, API__N_REPLACE, API__N_NFC, API__N_NFD, API__N_NFKC, API__N_NFKD,
    API__N_BERT, /* BertNormalizer, Lowercase, StripAccents (wp.h) */
    API__P_BYTELEVEL, API__P_SPLIT, API__P_METASPACE, API__P_DIGITS,
    API__P_WSPLIT, API__P_PUNCT, /* WhitespaceSplit, Punctuation; BertPreTokenizer is both */
    API__D_BYTELEVEL, API__D_REPLACE, API__D_BYTEFALLBACK, API__D_FUSE, API__D_STRIP,
    API__D_METASPACE, API__D_WORDPIECE
};
enum { API__ISOLATED, API__REMOVED, API__MERGED_PREV, API__MERGED_NEXT, API__CONTIGUOUS };
enum { API__NEVER, API__FIRST, API__ALWAYS }; /* Metaspace's prepend_scheme */

typedef struct {
    int type;
    regex_t *re;      /* Split; Replace with a Regex pattern */
    char *a, *b;      /* Prepend's text; Replace's pattern and content; Metaspace's
                         replacement; the WordPiece decoder's prefix */
    size_t na, nb;
    int behavior;     /* Split, Punctuation */
    unsigned flags;   /* BertNormalizer's API__BN_* (wp.h); the WordPiece decoder's cleanup */
    int invert;       /* Split */
    int prefix_space; /* ByteLevel add_prefix_space */
    int use_regex;    /* ByteLevel */
    int split;        /* Metaspace split; Digits individual_digits */
    int prepend;      /* Metaspace prepend_scheme */
    uint32_t ch;      /* Strip's content; Metaspace's replacement */
    int start, stop;  /* Strip */
} api__step;

/* An item of a template (processors/template.rs' Piece): a token's id, or
 * where text A or B goes; with its type id. */
enum { API__TPL_A = -1, API__TPL_B = -2 };
typedef struct {
    int32_t id, type_id;
} api__tpl_item;

typedef struct {
    int32_t id;
    char *content, *match; /* as in the file; as looked for (normalized if .normalized) */
    size_t len, match_len;
    unsigned char lstrip, rstrip, single_word, normalized, special;
} api__added;

#define API__T_EXISTS 1u
#define API__T_ADDED 2u
#define API__T_SPECIAL 4u

struct api__hf {
    api__map vocab;        /* the model's tokens as written in the file */
    size_t *soff;          /* [n_vocab + 1]: each id's string in the file */
    char *str;
    unsigned char *flags;  /* API__T_* per id */
    int byte_level;        /* a ByteLevel pre-tokenizer: the model sees byte symbols */
    int byte_fallback, ignore_merges, fuse_unk;
    int wordpiece;         /* a WordPiece model (wp_model.c), not a BPE */
    char *prefix;          /* WordPiece's continuing_subword_prefix ("##") */
    size_t prefix_len, max_chars; /* and max_input_chars_per_word */
    int32_t unk;           /* unk_token's id, or -1 */
    int32_t fallback[256]; /* <0xNN>'s id, or -1 */
    int32_t ascii[128];    /* the model's id of each ASCII character, or -1 */
    char sym[256][2];      /* each byte's GPT-2 symbol in UTF-8 (sym_len bytes) */
    unsigned char sym_len[256];
    api__step *norm, *pre, *dec;
    size_t n_norm, n_pre, n_dec;
    int has_decoder;       /* no decoder: tokens joined by spaces */
    regex_t *gpt2_re;      /* ByteLevel's own pattern, when one uses it */
    api__added *added;
    size_t n_added;
    api__trie raw, normed; /* added tokens found before / after normalization */
    api__tpl_item *tpl[2]; /* the post-processor as templates: one text, a pair */
    size_t n_tpl[2];       /* n_tpl[1] 0: the file has no pair template */
};

/* hf_parts.c: the JSON of each part into its steps (h->norm ...). */
int api__hf_parse_norm(api__hf *h, json_t *j, char *err, size_t err_size);
int api__hf_parse_pre(api__hf *h, json_t *j, char *err, size_t err_size);
int api__hf_parse_dec(api__hf *h, json_t *j, char *err, size_t err_size);
void api__hf_steps_free(api__step *s, size_t n);

/* hf_model.c: "model" into t (n_vocab) and h (vocab, merges, flags); its
 * vocabulary (an object of ids) into h->vocab and h->flags. */
int api__hf_parse_model(api_bpe *t, api__hf *h, json_t *model, size_t n_ids, char *err,
                        size_t err_size);
int api__hf_load_vocab(api__hf *h, json_t *vocab, size_t n_ids, char *err, size_t err_size);

/* hf_config.c: the templates, BOS, EOS, pad and mask ids and the length
 * limits of tokenizer.json (root) and tokenizer_config.json (NULL if none). */
int api__hf_parse_specials(api_bpe *t, api__hf *h, json_t *root, json_t *config, char *err,
                           size_t err_size);

/* Normalizes s[0 .. n) by h->norm into *out (malloc'd); its length or an
 * API_BPE_E* code (hf_pretok.c). */
long api__hf_normalize(const api__hf *h, const char *s, size_t n, char **out);

/* Work area of one encoding (hf_pretok.c, hf_word.c). */
typedef struct {
    char *arena;          /* the pieces' text */
    size_t used, cap;
    struct api__piece { size_t off, len; int at_start; } *p, *q; /* pieces, next pieces */
    size_t np, nq, pcap, qcap;
    api__span *m;         /* regex matches */
    size_t mcap;
    struct api__sym { int32_t c, prev, next, len; } *sym; /* one word's symbols */
    size_t scap;
    struct api__heapent { int32_t rank, pos, id; } *heap;
    size_t nheap, hcap;
    char *word;           /* a word in byte symbols, for ignore_merges */
    size_t wcap;
    api__ids *ends;       /* NULL, or where each split ends (api__hf_encode) */
} api__work;
void api__work_free(api__work *w);
/* Pre-tokenizes s[0 .. n) into w->p[0 .. w->np). */
int api__hf_pretokenize(const api__hf *h, api__work *w, const char *s, size_t n, int at_start);
/* The model's ids of one pre-token (hf_word.c; wp_model.c for WordPiece). */
int api__hf_word(const api_bpe *t, api__work *w, const char *s, size_t n, api__ids *out);

/* The bytes token id stands for alone (api_bpe_token_bytes), into *out
 * (malloc'd); its length, or -1 (hf_decode.c). */
long api__hf_token_piece(const api__hf *h, int32_t id, char **out);

/* hf_lookup.c: ids by their file's strings, and what an id is. */
int api__hf_exists(const api_bpe *t, int32_t id);

#endif
