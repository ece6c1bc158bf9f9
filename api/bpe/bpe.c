/* bpe.c - the public functions of bpe.h and api.h but encoding's
 * (encode.c): which kind of tokenizer a directory holds, and each call to
 * the code of that kind (gpt2*.c for vocab.json + merges.txt, hf_*.c for
 * tokenizer.json, wp_vocab.c and hf_*.c for vocab.txt). */
#include "bpe_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wp.h"

#include <jansson.h>

/* dir/tokenizer.json, with dir/tokenizer_config.json when it exists. */
static int load_json_dir(const char *dir, const char *json_path, api_bpe **out, char *err,
                         size_t err_size) {
    char config_path[4096];
    char *json = NULL, *config = NULL;
    size_t len = 0, config_len = 0;
    int rc = api__bpe_read_file(json_path, &json, &len, err, err_size);
    if (rc == 0 && api__bpe_exists(dir, "tokenizer_config.json", config_path, sizeof config_path))
        rc = api__bpe_read_file(config_path, &config, &config_len, err, err_size);
    if (rc == 0)
        rc = api__hf_load(json, len, config, config_len, json_path, config_path, out, err, err_size);
    free(json);
    free(config);
    return rc;
}

/* dir/name into *data when it exists (else *data NULL). */
static int read_optional(const char *dir, const char *name, char **data, size_t *len, char *err, size_t err_size) {
    char path[4200];
    *data = NULL;
    *len = 0;
    return api__bpe_exists(dir, name, path, sizeof path) ? api__bpe_read_file(path, data, len, err, err_size) : 0;
}

/* added_tokens.json beside a vocab.txt: only an empty one is followed. */
static int no_added_tokens(const char *dir, char *err, size_t err_size) {
    char *s;
    size_t n;
    int rc = read_optional(dir, "added_tokens.json", &s, &n, err, err_size);
    json_t *j = s ? json_loadb(s, n, 0, NULL) : NULL;
    if (rc == 0 && s && !(json_is_object(j) && json_object_size(j) == 0))
        rc = api__bpe_fail(err, err_size, API_BPE_ENOTSUP, "%s/added_tokens.json: tokens added to a vocab.txt are not "
                           "implemented here", dir);
    json_decref(j);
    free(s);
    return rc;
}

/* dir/vocab.txt with tokenizer_config.json and special_tokens_map.json
 * when they exist, as BertConverter's tokenizer.json. */
static int load_vocab_dir(const char *dir, const char *vocab_path, api_bpe **out, char *err, size_t err_size) {
    char *vocab = NULL, *config = NULL, *map = NULL;
    size_t len = 0, config_len = 0, map_len = 0;
    json_t *root = NULL, *cfg = NULL;
    int rc = api__bpe_read_file(vocab_path, &vocab, &len, err, err_size);
    if (rc == 0) rc = read_optional(dir, "tokenizer_config.json", &config, &config_len, err, err_size);
    if (rc == 0) rc = read_optional(dir, "special_tokens_map.json", &map, &map_len, err, err_size);
    if (rc == 0) rc = no_added_tokens(dir, err, err_size);
    if (rc == 0) {
        char inner[400] = "";
        rc = api__wp_vocab_json(vocab, len, config, config_len, map, map_len, &root, &cfg, inner, sizeof inner);
        if (rc) api__bpe_fail(err, err_size, rc, "%s: %s", dir, inner[0] ? inner : api_bpe_strerror(rc));
    }
    if (rc == 0) rc = api__hf_load_tree(root, cfg, vocab_path, out, err, err_size);
    if (rc == 0) (*out)->kind = "vocab.txt (WordPiece)";
    json_decref(root);
    json_decref(cfg);
    free(vocab);
    free(config);
    free(map);
    return rc;
}

int api_bpe_load(const char *dir, api_bpe **out, char *err, size_t err_size) {
    *out = NULL;
    if (err && err_size) err[0] = '\0';
    if (strlen(dir) > 4000)
        return api__bpe_fail(err, err_size, API_BPE_ETOOBIG, "directory name too long");
    char path[4096];
    if (api__bpe_exists(dir, "tokenizer.json", path, sizeof path))
        return load_json_dir(dir, path, out, err, err_size);
    if (api__bpe_exists(dir, "vocab.txt", path, sizeof path))
        return load_vocab_dir(dir, path, out, err, err_size);
    return api__gpt2_load_dir(dir, out, err, err_size);
}

int api_bpe_load_mem(const char *vocab_json, size_t vocab_len, const char *merges_txt,
                     size_t merges_len, api_bpe **out, char *err, size_t err_size) {
    *out = NULL;
    if (err && err_size) err[0] = '\0';
    return api__gpt2_load_mem(vocab_json, vocab_len, merges_txt, merges_len, out, err, err_size);
}

int api_bpe_load_json_mem(const char *json, size_t json_len, const char *config,
                          size_t config_len, api_bpe **out, char *err, size_t err_size) {
    *out = NULL;
    if (err && err_size) err[0] = '\0';
    return api__hf_load(json, json_len, config, config_len, "tokenizer.json",
                        "tokenizer_config.json", out, err, err_size);
}

void api_bpe_free(api_bpe *t) {
    if (!t) return;
    api__hf_free(t->hf);
    api__bpe_free_base(t);
}

size_t api_bpe_vocab_size(const api_bpe *t) {
    return t->n_vocab;
}

size_t api_bpe_max_token_bytes(const api_bpe *t) {
    return t->max_token;
}

const char *api_bpe_kind(const api_bpe *t) {
    return t->kind;
}

int32_t api_bpe_bos_id(const api_bpe *t) {
    return t->bos;
}

int32_t api_bpe_eos_id(const api_bpe *t) {
    return t->eos;
}

int32_t api_bpe_pad_id(const api_bpe *t) {
    return t->pad_id;
}

int32_t api_bpe_mask_id(const api_bpe *t) {
    return t->mask_id;
}

int api_bpe_file_truncation(const api_bpe *t, api_bpe_opts *o) {
    if (t->has_trunc) *o = t->trunc;
    return t->has_trunc;
}

size_t api_bpe_model_max_length(const api_bpe *t) {
    return t->model_max;
}

int api_bpe_has_template(const api_bpe *t) {
    return t->hf != NULL;
}

int api_bpe_is_special(const api_bpe *t, int32_t id) {
    return t->hf && id >= 0 && (size_t)id < t->n_vocab && api__hf_is_special(t, id);
}

int32_t api_bpe_token_id(const api_bpe *t, const char *s, size_t n) {
    return api__hf_token_id(t, s, n);
}

/* ==== Decoding ==== */

int api_bpe_token_bytes(const api_bpe *t, int32_t id, const char **bytes, size_t *len) {
    if (id < 0 || (size_t)id >= t->n_vocab) return API_BPE_ERANGE;
    if (t->hf && !api__hf_exists(t, id)) return API_BPE_ERANGE;
    *bytes = t->bytes + t->off[id];
    *len = t->off[id + 1] - t->off[id];
    return 0;
}

int api_bpe_token_name(const api_bpe *t, int32_t id, const char **s, size_t *len) {
    if (!t->hf) return api_bpe_token_bytes(t, id, s, len);
    if (!api__hf_exists(t, id)) return API_BPE_ERANGE;
    *s = t->hf->str + t->hf->soff[id];
    *len = t->hf->soff[id + 1] - t->hf->soff[id];
    return 0;
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

int api_bpe_token_shown(const api_bpe *t, int32_t id, char *out, size_t out_size, size_t *len) {
    const char *s;
    size_t n;
    if (!t->hf || !t->hf->wordpiece) return api_bpe_token_text(t, id, out, out_size, len);
    int rc = api_bpe_token_name(t, id, &s, &n);
    if (rc) return rc;
    if (out_size < n + 1) return API_BPE_ETOOBIG;
    memcpy(out, s, n);
    out[n] = '\0';
    *len = n;
    return 0;
}

/* vocab.json + merges.txt: the tokens' bytes, concatenated. */
static int decode_bytes(const api_bpe *t, const int32_t *ids, size_t n, char **text, size_t *len) {
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

int api_bpe_decode_ex(const api_bpe *t, const int32_t *ids, size_t n, unsigned flags, char **text,
                      size_t *len) {
    *text = NULL;
    *len = 0;
    if (t->hf) return api__hf_decode(t, ids, n, flags, text, len);
    return decode_bytes(t, ids, n, text, len);
}

int api_bpe_decode(const api_bpe *t, const int32_t *ids, size_t n, char **text, size_t *len) {
    return api_bpe_decode_ex(t, ids, n, 0, text, len);
}
