/* hf_config.c - the special tokens around a text: tokenizer.json's
 * post_processor (processors/template.rs; ByteLevel adds nothing; Roberta
 * and Bert processing add cls and sep) and what transformers makes of
 * tokenizer_config.json (update_post_processor of LlamaTokenizerFast and
 * GemmaTokenizerFast, and of PreTrainedTokenizerFast when add_bos_token or
 * add_eos_token is set), and the BOS and EOS ids. */
#include "hf.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define fail api__bpe_fail

static int push(int32_t **v, size_t *n, int32_t id) {
    int32_t *g = realloc(*v, (*n + 1) * sizeof *g);
    if (!g) return API_BPE_ENOMEM;
    g[(*n)++] = id;
    *v = g;
    return 0;
}

/* TemplateProcessing's "single": its special tokens' ids before and after $A. */
static int template(api__hf *h, json_t *post, char *err, size_t err_size) {
    json_t *single = json_object_get(post, "single"), *specials = json_object_get(post, "special_tokens"), *item;
    size_t i;
    int after = 0;
    if (!json_is_array(single)) return fail(err, err_size, API_BPE_EFORMAT, "post_processor: no single template");
    json_array_foreach(single, i, item) {
        if (json_object_get(item, "Sequence")) {
            after = 1;
            continue;
        }
        const char *name = json_string_value(json_object_get(json_object_get(item, "SpecialToken"), "id"));
        json_t *ids = json_object_get(json_object_get(specials, name ? name : ""), "ids"), *id;
        size_t k;
        if (!name || !json_is_array(ids))
            return fail(err, err_size, API_BPE_EFORMAT, "post_processor: template item %zu names no special token", i);
        json_array_foreach(ids, k, id) {
            if (!json_is_integer(id)) return fail(err, err_size, API_BPE_EFORMAT, "post_processor: ids of %.40s", name);
            if (push(after ? &h->after : &h->before, after ? &h->n_after : &h->n_before, (int32_t)json_integer_value(id)))
                return API_BPE_ENOMEM;
        }
    }
    return 0;
}

/* ["<s>", 0]: the id of a Roberta or Bert processing's cls or sep. */
static int pair_id(json_t *p, int32_t **v, size_t *n) {
    json_t *id = json_array_get(p, 1);
    return json_is_integer(id) ? push(v, n, (int32_t)json_integer_value(id)) : API_BPE_EFORMAT;
}

static int post_processor(api__hf *h, json_t *post, char *err, size_t err_size) {
    const char *type = json_string_value(json_object_get(post, "type"));
    if (!post || json_is_null(post)) return 0;
    if (!type) return fail(err, err_size, API_BPE_EFORMAT, "post_processor: no type");
    if (strcmp(type, "ByteLevel") == 0) return 0;
    if (strcmp(type, "TemplateProcessing") == 0) return template(h, post, err, err_size);
    if (strcmp(type, "RobertaProcessing") == 0 || strcmp(type, "BertProcessing") == 0) {
        if (pair_id(json_object_get(post, "cls"), &h->before, &h->n_before) ||
            pair_id(json_object_get(post, "sep"), &h->after, &h->n_after))
            return fail(err, err_size, API_BPE_EFORMAT, "post_processor: %s without cls and sep", type);
        return 0;
    }
    if (strcmp(type, "Sequence") == 0) {
        json_t *list = json_object_get(post, "processors"), *p;
        size_t i;
        json_array_foreach(list, i, p) {
            int rc = post_processor(h, p, err, err_size);
            if (rc) return rc;
        }
        return 0;
    }
    return fail(err, err_size, API_BPE_ENOTSUP, "post_processor: %.40s is not implemented here", type);
}

/* A token of tokenizer_config.json: "<s>" or {"content": "<s>", ...}. */
static int32_t config_token(const api_bpe *t, json_t *config, const char *key) {
    json_t *v = json_object_get(config, key);
    if (json_is_object(v)) v = json_object_get(v, "content");
    return json_is_string(v) ? api__hf_token_id(t, json_string_value(v), json_string_length(v)) : -1;
}

/* Whether transformers rebuilds the template from add_bos_token and
 * add_eos_token, and with which defaults. */
static int rebuilds(json_t *config, int *bos, int *eos) {
    static const char *const classes[] = {"LlamaTokenizer", "LlamaTokenizerFast", "GemmaTokenizer",
                                          "GemmaTokenizerFast", "CodeLlamaTokenizer", "CodeLlamaTokenizerFast"};
    const char *cls = json_string_value(json_object_get(config, "tokenizer_class"));
    int known = 0;
    for (int i = 0; cls && i < 6; i++) known |= strcmp(cls, classes[i]) == 0;
    json_t *b = json_object_get(config, "add_bos_token"), *e = json_object_get(config, "add_eos_token");
    *bos = json_is_boolean(b) ? json_is_true(b) : known;
    *eos = json_is_true(e);
    return known || json_is_boolean(b) || json_is_boolean(e);
}

int api__hf_parse_specials(api_bpe *t, api__hf *h, json_t *post, json_t *config, char *err, size_t err_size) {
    int rc = post_processor(h, post, err, err_size);
    t->bos = config ? config_token(t, config, "bos_token") : (h->n_before ? h->before[0] : -1);
    t->eos = config ? config_token(t, config, "eos_token") : -1;
    int add_bos, add_eos;
    if (rc == 0 && config && rebuilds(config, &add_bos, &add_eos)) {
        if ((add_bos && t->bos < 0) || (add_eos && t->eos < 0))
            return fail(err, err_size, API_BPE_EFORMAT, "tokenizer_config.json: add_%s_token without a %s_token of the vocabulary",
                        add_bos && t->bos < 0 ? "bos" : "eos", add_bos && t->bos < 0 ? "bos" : "eos");
        h->n_before = h->n_after = 0;
        if (add_bos && push(&h->before, &h->n_before, t->bos)) return API_BPE_ENOMEM;
        if (add_eos && push(&h->after, &h->n_after, t->eos)) return API_BPE_ENOMEM;
    }
    for (size_t i = 0; rc == 0 && i < h->n_before + h->n_after; i++) {
        int32_t id = i < h->n_before ? h->before[i] : h->after[i - h->n_before];
        if (!api__hf_exists(t, id)) return fail(err, err_size, API_BPE_EFORMAT, "post_processor: id %d is no token", (int)id);
    }
    return rc;
}
