/* hf_load.c - a tokenizer from tokenizer.json (and tokenizer_config.json):
 * the parts in the order the pipeline needs them, the added tokens
 * (tokenizer/added_vocabulary.rs), each id's string and bytes. */
#include "wp.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define fail api__bpe_fail

/* One past the largest id of the vocabulary and the added tokens. */
static int id_extent(json_t *root, size_t *n, char *err, size_t err_size) {
    json_t *vocab = json_object_get(json_object_get(root, "model"), "vocab"), *v, *a;
    const char *key;
    size_t i;
    json_int_t most = -1;
    json_object_foreach(vocab, key, v)
        if (json_is_integer(v) && json_integer_value(v) > most) most = json_integer_value(v);
    json_array_foreach(json_object_get(root, "added_tokens"), i, a) {
        json_t *id = json_object_get(a, "id");
        if (json_is_integer(id) && json_integer_value(id) > most) most = json_integer_value(id);
    }
    if (most < 0) return fail(err, err_size, API_BPE_EFORMAT, "no tokens");
    if (most >= (json_int_t)API_BPE_MAX_VOCAB)
        return fail(err, err_size, API_BPE_ETOOBIG, "token id %lld, over %u", (long long)most, API_BPE_MAX_VOCAB);
    *n = (size_t)most + 1;
    return 0;
}

static int flag(json_t *a, const char *key, int dflt) {
    json_t *v = json_object_get(a, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static int added_token(api__hf *h, api__added *d, json_t *a, size_t i, size_t n_ids, char *err, size_t err_size) {
    json_t *id = json_object_get(a, "id"), *content = json_object_get(a, "content");
    if (!json_is_integer(id) || json_integer_value(id) < 0 || !json_is_string(content))
        return fail(err, err_size, API_BPE_EFORMAT, "added_tokens[%zu]: no id or content", i);
    d->id = (int32_t)json_integer_value(id);
    d->len = json_string_length(content);
    d->special = (unsigned char)flag(a, "special", 0);
    d->single_word = (unsigned char)flag(a, "single_word", 0);
    d->lstrip = (unsigned char)flag(a, "lstrip", 0);
    d->rstrip = (unsigned char)flag(a, "rstrip", 0);
    d->normalized = (unsigned char)flag(a, "normalized", !d->special);
    if ((size_t)d->id >= n_ids) return API_BPE_EFORMAT;
    if (!(d->content = malloc(d->len + 1))) return API_BPE_ENOMEM;
    memcpy(d->content, json_string_value(content), d->len + 1);
    h->flags[d->id] |= API__T_EXISTS | API__T_ADDED | (d->special ? API__T_SPECIAL : 0);
    if (!d->normalized || h->n_norm == 0) {
        d->match = d->content, d->match_len = d->len;
        return 0;
    }
    long m = api__hf_normalize(h, d->content, d->len, &d->match);
    if (m < 0) return (int)m;
    d->match_len = (size_t)m;
    return 0;
}

/* The two tries: the added tokens found in the text as it is, and those
 * found after normalization. */
static int added_tries(api__hf *h) {
    size_t n = h->n_added;
    const char **s = malloc((n + 1) * sizeof *s);
    size_t *len = malloc((n + 1) * sizeof *len);
    int *use = malloc((n + 1) * sizeof *use);
    int rc = s && len && use ? 0 : API_BPE_ENOMEM;
    api__trie *tries[2] = {&h->raw, &h->normed};
    for (int k = 0; rc == 0 && k < 2; k++) {
        for (size_t i = 0; i < n; i++) {
            s[i] = h->added[i].match, len[i] = h->added[i].match_len;
            use[i] = h->added[i].normalized == k;
        }
        rc = api__trie_build(tries[k], s, len, use, n);
    }
    free(s);
    free(len);
    free(use);
    return rc;
}

static int added_tokens(api__hf *h, json_t *list, size_t n_ids, char *err, size_t err_size) {
    if (list && !json_is_array(list)) return fail(err, err_size, API_BPE_EFORMAT, "added_tokens is not a list");
    size_t n = json_array_size(list);
    h->added = calloc(n + 1, sizeof *h->added);
    if (!h->added) return API_BPE_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int rc = added_token(h, &h->added[i], json_array_get(list, i), i, n_ids, err, err_size);
        h->n_added = i + 1;
        if (rc) return rc;
    }
    return added_tries(h);
}

/* The bytes each id stands for (t->off, t->bytes; cap bytes to start). */
static int pieces(api_bpe *t, const api__hf *h, size_t cap) {
    size_t used = 0;
    if (!(t->bytes = malloc(cap))) return API_BPE_ENOMEM;
    for (size_t i = 0; i < t->n_vocab; i++) {
        char *p = NULL;
        long k = (h->flags[i] & API__T_EXISTS) ? api__hf_token_piece(h, (int32_t)i, &p) : 0;
        if (k < 0) return API_BPE_ENOMEM;
        if (used + (size_t)k > cap) {
            char *g = realloc(t->bytes, cap = 2 * (used + (size_t)k));
            if (!g) return free(p), API_BPE_ENOMEM;
            t->bytes = g;
        }
        if (k) memcpy(t->bytes + used, p, (size_t)k);
        free(p);
        used += (size_t)k;
        t->off[i + 1] = used;
        if ((size_t)k > t->max_token) t->max_token = (size_t)k;
    }
    return 0;
}

/* Each id's string in the file (h->soff, h->str), then its bytes. */
static int strings(api_bpe *t, api__hf *h) {
    size_t n = t->n_vocab, total = 0;
    const char **s = calloc(n, sizeof *s);
    size_t *len = calloc(n, sizeof *len);
    h->soff = calloc(n + 1, sizeof *h->soff);
    t->off = calloc(n + 1, sizeof *t->off);
    if (!s || !len || !h->soff || !t->off) return free(s), free(len), API_BPE_ENOMEM;
    for (size_t i = 0; i < h->vocab.n; i++)
        s[h->vocab.e[i].id] = h->vocab.keys + h->vocab.e[i].off, len[h->vocab.e[i].id] = h->vocab.e[i].len;
    for (size_t i = 0; i < h->n_added; i++) s[h->added[i].id] = h->added[i].content, len[h->added[i].id] = h->added[i].len;
    for (size_t i = 0; i < n; i++) total += len[i], h->soff[i + 1] = total;
    h->str = malloc(total + 1);
    int rc = h->str ? 0 : API_BPE_ENOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++) memcpy(h->str + h->soff[i], s[i] ? s[i] : "", len[i]);
    free(s);
    free(len);
    return rc ? rc : pieces(t, h, total + 64);
}

/* "model": a BPE or a WordPiece. */
static int model(api_bpe *t, api__hf *h, json_t *m, size_t n_ids, char *err, size_t err_size) {
    const char *type = json_string_value(json_object_get(m, "type"));
    if (type && strcmp(type, "WordPiece") == 0) return api__wp_parse_model(h, m, n_ids, err, err_size);
    return api__hf_parse_model(t, h, m, n_ids, err, err_size);
}

/* The parts of root, each in turn. */
static int parts(api_bpe *t, api__hf *h, json_t *root, json_t *config, char *err, size_t err_size) {
    size_t n_ids = 0;
    const char *type = json_string_value(json_object_get(json_object_get(root, "model"), "type"));
    if (type && strcmp(type, "BPE") != 0 && strcmp(type, "WordPiece") != 0)
        return fail(err, err_size, API_BPE_ENOTSUP, "model: %.30s (BPE and WordPiece are implemented here)", type);
    int rc = id_extent(root, &n_ids, err, err_size);
    if (rc) return rc;
    t->n_vocab = n_ids;
    if (!(h->flags = calloc(n_ids, 1))) return API_BPE_ENOMEM;
    if ((rc = api__hf_parse_norm(h, json_object_get(root, "normalizer"), err, err_size)) ||
        (rc = api__hf_parse_pre(h, json_object_get(root, "pre_tokenizer"), err, err_size)) ||
        (rc = api__hf_parse_dec(h, json_object_get(root, "decoder"), err, err_size)) ||
        (rc = model(t, h, json_object_get(root, "model"), n_ids, err, err_size)) ||
        (rc = added_tokens(h, json_object_get(root, "added_tokens"), n_ids, err, err_size)) ||
        (rc = api__hf_parse_specials(t, h, root, config, err, err_size)))
        return rc;
    return strings(t, h);
}

/* tokenizer_config.json's numbers are read as reals: transformers writes
 * model_max_length 1e30 as an integer that fits no json_int_t. */
static json_t *parse_json(const char *s, size_t n, const char *name, int reals, char *err, size_t err_size) {
    json_error_t je;
    json_t *j = json_loadb(s, n, JSON_REJECT_DUPLICATES | (reals ? JSON_DECODE_INT_AS_REAL : 0), &je);
    if (!j) fail(err, err_size, API_BPE_EFORMAT, "%s:%d:%d: %s", name, je.line, je.column, je.text);
    else if (!json_is_object(j)) fail(err, err_size, API_BPE_EFORMAT, "%s: not a JSON object", name), json_decref(j), j = NULL;
    return j;
}

int api__hf_load(const char *json, size_t len, const char *config, size_t config_len, const char *json_name,
                 const char *config_name, api_bpe **out, char *err, size_t err_size) {
    json_t *root = parse_json(json, len, json_name, 0, err, err_size);
    json_t *cfg = root && config ? parse_json(config, config_len, config_name, 1, err, err_size) : NULL;
    if (!root || (config && !cfg)) return json_decref(root), API_BPE_EFORMAT;
    int rc = api__hf_load_tree(root, cfg, json_name, out, err, err_size);
    json_decref(root);
    json_decref(cfg);
    return rc;
}

int api__hf_load_tree(json_t *root, json_t *cfg, const char *json_name, api_bpe **out, char *err, size_t err_size) {
    api_bpe *t = calloc(1, sizeof *t);
    api__hf *h = calloc(1, sizeof *h);
    char inner[400] = "";
    int rc = t && h ? 0 : API_BPE_ENOMEM;
    if (t) t->hf = h, t->bos = t->eos = t->pad_id = t->mask_id = -1;
    if (rc == 0) rc = parts(t, h, root, cfg, inner, sizeof inner);
    if (rc) {
        if (rc == API_BPE_ENOMEM && !inner[0]) snprintf(inner, sizeof inner, "out of memory");
        else if (!inner[0]) snprintf(inner, sizeof inner, "%s", api_bpe_strerror(rc));
        api__hf_free(t ? t->hf : h);
        api__bpe_free_base(t);
        return fail(err, err_size, rc, "%s: %s", json_name, inner);
    }
    t->kind = h->wordpiece   ? "tokenizer.json (WordPiece)"
              : h->byte_level ? "tokenizer.json (byte-level BPE)"
                              : "tokenizer.json (SentencePiece-style BPE)";
    *out = t;
    return 0;
}

void api__hf_free(api__hf *h) {
    if (!h) return;
    api__map_free(&h->vocab);
    free(h->soff);
    free(h->str);
    free(h->flags);
    api__hf_steps_free(h->norm, h->n_norm);
    api__hf_steps_free(h->pre, h->n_pre);
    api__hf_steps_free(h->dec, h->n_dec);
    if (h->gpt2_re) onig_free(h->gpt2_re);
    for (size_t i = 0; i < h->n_added; i++) {
        if (h->added[i].match != h->added[i].content) free(h->added[i].match);
        free(h->added[i].content);
    }
    free(h->added);
    api__trie_free(&h->raw);
    api__trie_free(&h->normed);
    free(h->tpl[0]);
    free(h->tpl[1]);
    free(h->prefix);
    free(h);
}
