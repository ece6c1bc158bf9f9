/* hf_parts.c - tokenizer.json's "normalizer", "pre_tokenizer" and "decoder"
 * into the steps of the pipeline (hf.h), a Sequence flattened, a
 * BertPreTokenizer as its two steps (WhitespaceSplit, then Punctuation), a
 * Whitespace as the Split of its regex. A type this library does not
 * implement is refused (API_BPE_ENOTSUP), never skipped. */
#include "wp.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define fail api__bpe_fail

typedef struct {
    const char *name;
    int type;
} kind;

static const kind norm_kinds[] = {{"Prepend", API__N_PREPEND}, {"Replace", API__N_REPLACE},
                                  {"NFC", API__N_NFC},         {"NFD", API__N_NFD},
                                  {"NFKC", API__N_NFKC},       {"NFKD", API__N_NFKD},
                                  {"BertNormalizer", API__N_BERT}, {"Lowercase", API__N_BERT},
                                  {"StripAccents", API__N_BERT}, {NULL, 0}};
static const kind pre_kinds[] = {{"ByteLevel", API__P_BYTELEVEL}, {"Split", API__P_SPLIT},
                                 {"Metaspace", API__P_METASPACE}, {"Digits", API__P_DIGITS},
                                 {"BertPreTokenizer", API__P_WSPLIT}, {"WhitespaceSplit", API__P_WSPLIT},
                                 {"Whitespace", API__P_SPLIT}, {"Punctuation", API__P_PUNCT},
                                 {NULL, 0}};
static const kind dec_kinds[] = {{"ByteLevel", API__D_BYTELEVEL}, {"Replace", API__D_REPLACE},
                                 {"ByteFallback", API__D_BYTEFALLBACK}, {"Fuse", API__D_FUSE},
                                 {"Strip", API__D_STRIP}, {"Metaspace", API__D_METASPACE},
                                 {"WordPiece", API__D_WORDPIECE}, {NULL, 0}};

static int boolean(json_t *j, const char *key, int dflt) {
    json_t *v = json_object_get(j, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static int copy_string(json_t *v, char **out, size_t *len) {
    *len = json_string_length(v);
    *out = malloc(*len + 1);
    if (!*out) return API_BPE_ENOMEM;
    memcpy(*out, json_string_value(v), *len + 1);
    return 0;
}

/* The one code point of a JSON string ("▁"), or -1. */
static long one_char(json_t *v) {
    uint32_t cp;
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (!s || n == 0 || api__bpe_utf8((const unsigned char *)s, n, &cp) != n) return -1;
    return (long)cp;
}

/* A pattern {"String": s} or {"Regex": r}: s into st->a, or r compiled. */
static int pattern(api__step *st, json_t *p, int regex_ok, const char *part, char *err, size_t err_size) {
    json_t *s = json_object_get(p, "String"), *r = json_object_get(p, "Regex");
    if (json_is_string(s) && json_string_length(s) > 0) {
        if (st->type == API__P_SPLIT) {
            st->re = api__re_new(json_string_value(s), json_string_length(s), 1, err, err_size);
            return st->re ? 0 : API_BPE_EFORMAT;
        }
        return copy_string(s, &st->a, &st->na);
    }
    if (json_is_string(r) && regex_ok) {
        st->re = api__re_new(json_string_value(r), json_string_length(r), 0, err, err_size);
        return st->re ? 0 : API_BPE_EFORMAT;
    }
    return fail(err, err_size, API_BPE_ENOTSUP, "%s: a pattern that is not a non-empty String or a Regex", part);
}

static int split_behavior(json_t *j) {
    static const char *const names[] = {"Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
    const char *b = json_string_value(json_object_get(j, "behavior"));
    for (int i = 0; b && i < 5; i++)
        if (strcmp(b, names[i]) == 0) return i;
    return -1;
}

/* Metaspace (pre-tokenizer or decoder): replacement, prepend_scheme (or the
 * older add_prefix_space), split. */
static int metaspace(api__step *st, json_t *j, char *err, size_t err_size) {
    long cp = one_char(json_object_get(j, "replacement"));
    if (cp < 0) return fail(err, err_size, API_BPE_EFORMAT, "Metaspace: replacement is not one character");
    st->ch = (uint32_t)cp;
    char rep[4];
    st->na = api__utf8_put(rep, st->ch);
    if (!(st->a = malloc(st->na))) return API_BPE_ENOMEM;
    memcpy(st->a, rep, st->na);
    const char *scheme = json_string_value(json_object_get(j, "prepend_scheme"));
    st->prepend = !scheme || strcmp(scheme, "always") == 0 ? API__ALWAYS
                  : strcmp(scheme, "first") == 0           ? API__FIRST
                                                           : API__NEVER;
    if (scheme && st->prepend == API__NEVER && strcmp(scheme, "never") != 0)
        return fail(err, err_size, API_BPE_ENOTSUP, "Metaspace: prepend_scheme \"%.20s\"", scheme);
    if (!boolean(j, "add_prefix_space", 1)) st->prepend = API__NEVER;
    st->split = boolean(j, "split", 1);
    return 0;
}

/* BertNormalizer's fields (their defaults as its Default), or what
 * Lowercase and StripAccents do, as API__BN_* flags. */
static unsigned bert_flags(json_t *j) {
    const char *type = json_string_value(json_object_get(j, "type"));
    if (strcmp(type, "Lowercase") == 0) return API__BN_LOWER;
    if (strcmp(type, "StripAccents") == 0) return API__BN_MARKS;
    int lower = boolean(j, "lowercase", 1);
    return (boolean(j, "clean_text", 1) ? API__BN_CLEAN : 0) | (boolean(j, "handle_chinese_chars", 1) ? API__BN_CHINESE : 0) |
           (boolean(j, "strip_accents", lower) ? API__BN_STRIP : 0) | (lower ? API__BN_LOWER : 0);
}

/* The fields of the steps that are not patterns (step's). */
static int plain_step(api__step *st, json_t *j) {
    /* pre_tokenizers/whitespace.rs' \w+|[^\w\s]+ with the regex crate's \w and \s
     * (Oniguruma's \w is L, M, N and Pc: it has No and Nl, not Join_Control) */
    static const char whitespace[] = "[\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}]+"
                                     "|[^\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}\\p{White_Space}]+";
    json_t *prefix = json_object_get(j, "prefix");
    switch (st->type) {
    case API__N_BERT:
        st->flags = bert_flags(j);
        return 0;
    case API__P_SPLIT: /* Whitespace: the spaces between the regex's matches removed */
        st->invert = 1;
        st->behavior = API__REMOVED;
        st->re = api__re_new(whitespace, sizeof whitespace - 1, 0, NULL, 0);
        return st->re ? 0 : API_BPE_ENOMEM;
    case API__P_PUNCT:
        st->behavior = json_object_get(j, "behavior") ? split_behavior(j) : API__ISOLATED;
        return st->behavior < 0 ? API_BPE_EFORMAT : 0;
    case API__D_WORDPIECE:
        st->flags = (unsigned)boolean(j, "cleanup", 1);
        if (json_is_string(prefix)) return copy_string(prefix, &st->a, &st->na);
        if (!(st->a = malloc(3))) return API_BPE_ENOMEM;
        memcpy(st->a, "##", 3), st->na = 2;
        return 0;
    default:
        return 0;
    }
}

/* One step of a part (j an object with "type"), its fields read. */
static int step(api__step *st, json_t *j, const char *part, char *err, size_t err_size) {
    if (st->type == API__N_BERT || st->type == API__D_WORDPIECE ||
        (st->type == API__P_SPLIT && strcmp(json_string_value(json_object_get(j, "type")), "Whitespace") == 0))
        return plain_step(st, j);
    switch (st->type) {
    case API__N_PREPEND:
        if (!json_is_string(json_object_get(j, "prepend"))) break;
        return copy_string(json_object_get(j, "prepend"), &st->a, &st->na);
    case API__N_REPLACE:
    case API__D_REPLACE:
        if (!json_is_string(json_object_get(j, "content"))) break;
        if (copy_string(json_object_get(j, "content"), &st->b, &st->nb)) return API_BPE_ENOMEM;
        return pattern(st, json_object_get(j, "pattern"), 1, part, err, err_size);
    case API__P_BYTELEVEL:
        st->prefix_space = boolean(j, "add_prefix_space", 1);
        st->use_regex = boolean(j, "use_regex", 1);
        return 0;
    case API__P_SPLIT:
        st->behavior = split_behavior(j);
        st->invert = boolean(j, "invert", 0);
        if (st->behavior < 0) break;
        return pattern(st, json_object_get(j, "pattern"), 1, part, err, err_size);
    case API__P_METASPACE:
    case API__D_METASPACE:
        return metaspace(st, j, err, err_size);
    case API__P_DIGITS:
        st->split = boolean(j, "individual_digits", 0);
        return 0;
    case API__P_PUNCT:
        if (plain_step(st, j) == 0) return 0;
        break;
    case API__D_STRIP: {
        long cp = one_char(json_object_get(j, "content"));
        json_t *a = json_object_get(j, "start"), *b = json_object_get(j, "stop");
        if (cp < 0 || !json_is_integer(a) || !json_is_integer(b) || json_integer_value(a) < 0 ||
            json_integer_value(b) < 0 || json_integer_value(a) > 1000 || json_integer_value(b) > 1000)
            break;
        st->ch = (uint32_t)cp;
        st->start = (int)json_integer_value(a);
        st->stop = (int)json_integer_value(b);
        return 0;
    }
    default:
        return 0;
    }
    return fail(err, err_size, API_BPE_EFORMAT, "%s: a %s without the fields it needs", part,
                json_string_value(json_object_get(j, "type")));
}

/* Appends the steps of j (a step, or a Sequence of them under seq_key). */
static int parse(api__step **steps, size_t *n, json_t *j, const kind *kinds, const char *seq_key,
                 const char *part, char *err, size_t err_size) {
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!json_is_object(j) || !type) return fail(err, err_size, API_BPE_EFORMAT, "%s: not an object with a type", part);
    if (strcmp(type, "Sequence") == 0) {
        json_t *list = json_object_get(j, seq_key), *e;
        size_t i;
        if (!json_is_array(list)) return fail(err, err_size, API_BPE_EFORMAT, "%s: a Sequence without %s", part, seq_key);
        json_array_foreach(list, i, e) {
            int rc = parse(steps, n, e, kinds, seq_key, part, err, err_size);
            if (rc) return rc;
        }
        return 0;
    }
    const kind *k = kinds;
    while (k->name && strcmp(k->name, type) != 0) k++;
    if (!k->name) return fail(err, err_size, API_BPE_ENOTSUP, "%s: %.40s is not implemented here", part, type);
    int bert = strcmp(type, "BertPreTokenizer") == 0, rc = 0; /* WhitespaceSplit, then Punctuation */
    for (int i = 0; i <= bert && rc == 0; i++) {
        if (*n >= 64) return fail(err, err_size, API_BPE_ETOOBIG, "%s: over 64 steps", part);
        api__step *grown = realloc(*steps, (*n + 1) * sizeof *grown);
        if (!grown) return API_BPE_ENOMEM;
        *steps = grown;
        api__step *st = &grown[(*n)++];
        memset(st, 0, sizeof *st);
        st->type = i ? API__P_PUNCT : k->type;
        rc = i ? plain_step(st, j) : step(st, j, part, err, err_size);
    }
    return rc;
}

int api__hf_parse_norm(api__hf *h, json_t *j, char *err, size_t err_size) {
    return json_is_null(j) || !j ? 0 : parse(&h->norm, &h->n_norm, j, norm_kinds, "normalizers", "normalizer", err, err_size);
}

int api__hf_parse_pre(api__hf *h, json_t *j, char *err, size_t err_size) {
    if (json_is_null(j) || !j) return 0;
    int rc = parse(&h->pre, &h->n_pre, j, pre_kinds, "pretokenizers", "pre_tokenizer", err, err_size);
    for (size_t i = 0; rc == 0 && i < h->n_pre; i++) {
        if (h->pre[i].type != API__P_BYTELEVEL) continue;
        if (i + 1 != h->n_pre) /* the model would then see byte symbols in later steps */
            return fail(err, err_size, API_BPE_ENOTSUP, "pre_tokenizer: a step after ByteLevel");
        h->byte_level = 1;
        if (h->pre[i].use_regex) {
            static const char gpt2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
            h->gpt2_re = api__re_new(gpt2, sizeof gpt2 - 1, 0, err, err_size);
            if (!h->gpt2_re) return API_BPE_ENOMEM;
        }
    }
    return rc;
}

int api__hf_parse_dec(api__hf *h, json_t *j, char *err, size_t err_size) {
    h->has_decoder = j && !json_is_null(j);
    return h->has_decoder ? parse(&h->dec, &h->n_dec, j, dec_kinds, "decoders", "decoder", err, err_size) : 0;
}

void api__hf_steps_free(api__step *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (s[i].re) onig_free(s[i].re);
        free(s[i].a);
        free(s[i].b);
    }
    free(s);
}
