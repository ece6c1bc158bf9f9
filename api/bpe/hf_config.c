/* hf_config.c - the special tokens around a text or a pair: tokenizer.json's
 * post_processor as two templates, one text and a pair (processors/: a
 * TemplateProcessing's single and pair; BertProcessing's [CLS] A [SEP] and
 * [CLS] A [SEP] B:1 [SEP]:1; RobertaProcessing's <s> A </s> and <s> A </s>
 * </s> B </s>, every type id 0; ByteLevel and none: A, and A B:1), what
 * transformers makes of tokenizer_config.json (update_post_processor of
 * LlamaTokenizerFast and GemmaTokenizerFast, and of PreTrainedTokenizerFast
 * when add_bos_token or add_eos_token is set), the BOS, EOS, pad and mask
 * ids, and the lengths the files state. */
#include "hf.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define fail api__bpe_fail

typedef struct {
    api__tpl_item *v;
    size_t n;
} tpl;

static int push(tpl *t, int32_t id, int32_t type_id) {
    api__tpl_item *g = realloc(t->v, (t->n + 1) * sizeof *g);
    if (!g) return API_BPE_ENOMEM;
    g[t->n++] = (api__tpl_item){id, type_id};
    t->v = g;
    return 0;
}

static int32_t type_id(json_t *piece) {
    json_t *v = json_object_get(piece, "type_id");
    return json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= INT32_MAX
               ? (int32_t)json_integer_value(v) : 0;
}

/* A template of TemplateProcessing (which: "single" or "pair") into *out. */
static int template(tpl *out, json_t *post, const char *which, char *err, size_t err_size) {
    json_t *list = json_object_get(post, which), *specials = json_object_get(post, "special_tokens"), *item;
    size_t i;
    if (!json_is_array(list)) return fail(err, err_size, API_BPE_EFORMAT, "post_processor: no %s template", which);
    json_array_foreach(list, i, item) {
        json_t *seq = json_object_get(item, "Sequence"), *sp = json_object_get(item, "SpecialToken"), *id;
        const char *s = json_string_value(json_object_get(seq ? seq : sp, "id"));
        if (seq && (!s || (strcmp(s, "A") != 0 && strcmp(s, "B") != 0)))
            return fail(err, err_size, API_BPE_EFORMAT, "post_processor: %s template item %zu is no sequence A or B", which, i);
        if (seq && push(out, s[0] == 'A' ? API__TPL_A : API__TPL_B, type_id(seq))) return API_BPE_ENOMEM;
        if (seq) continue;
        json_t *ids = json_object_get(json_object_get(specials, s ? s : ""), "ids");
        size_t k;
        if (!s || !json_is_array(ids))
            return fail(err, err_size, API_BPE_EFORMAT, "post_processor: %s template item %zu names no special token", which, i);
        json_array_foreach(ids, k, id) {
            if (!json_is_integer(id)) return fail(err, err_size, API_BPE_EFORMAT, "post_processor: ids of %.40s", s);
            if (push(out, (int32_t)json_integer_value(id), type_id(sp))) return API_BPE_ENOMEM;
        }
    }
    return 0;
}

/* ["[CLS]", 101]: a Bert or Roberta processing's cls or sep id, or -1. */
static int32_t pair_id(json_t *p) {
    json_t *id = json_array_get(p, 1);
    return json_is_integer(id) && json_integer_value(id) >= 0 ? (int32_t)json_integer_value(id) : -1;
}

/* BertProcessing (roberta 0) or RobertaProcessing (1) as templates. */
static int cls_sep(tpl out[2], json_t *post, int roberta) {
    int32_t cls = pair_id(json_object_get(post, "cls")), sep = pair_id(json_object_get(post, "sep")), b = !roberta;
    if (cls < 0 || sep < 0) return API_BPE_EFORMAT;
    int rc = push(&out[0], cls, 0) || push(&out[0], API__TPL_A, 0) || push(&out[0], sep, 0) ||
             push(&out[1], cls, 0) || push(&out[1], API__TPL_A, 0) || push(&out[1], sep, 0) ||
             (roberta && push(&out[1], sep, 0)) || push(&out[1], API__TPL_B, b) || push(&out[1], sep, b);
    return rc ? API_BPE_ENOMEM : 0;
}

/* The templates of post (a processor, or a Sequence of them); *found counts
 * the processors that make templates. */
static int processor(tpl out[2], json_t *post, int *found, char *err, size_t err_size) {
    const char *type = json_string_value(json_object_get(post, "type"));
    if (!type) return fail(err, err_size, API_BPE_EFORMAT, "post_processor: no type");
    if (strcmp(type, "ByteLevel") == 0) return 0;
    if (strcmp(type, "Sequence") == 0) {
        json_t *list = json_object_get(post, "processors"), *p;
        size_t i;
        json_array_foreach(list, i, p) {
            int rc = processor(out, p, found, err, err_size);
            if (rc) return rc;
        }
        return 0;
    }
    int roberta = strcmp(type, "RobertaProcessing") == 0, bert = strcmp(type, "BertProcessing") == 0;
    if (!roberta && !bert && strcmp(type, "TemplateProcessing") != 0)
        return fail(err, err_size, API_BPE_ENOTSUP, "post_processor: %.40s is not implemented here", type);
    if (++*found > 1) return fail(err, err_size, API_BPE_ENOTSUP, "post_processor: a Sequence of two templates");
    if (roberta || bert) {
        int rc = cls_sep(out, post, roberta);
        return rc == API_BPE_EFORMAT ? fail(err, err_size, rc, "post_processor: %s without cls and sep", type) : rc;
    }
    int rc = template(&out[0], post, "single", err, err_size);
    if (rc == 0 && json_object_get(post, "pair")) rc = template(&out[1], post, "pair", err, err_size);
    return rc;
}

/* The templates into h: the file's, else A and A B:1; each id a token, A
 * once in each, B only in the pair's. */
static int templates(const api_bpe *t, api__hf *h, json_t *post, char *err, size_t err_size) {
    tpl out[2] = {{0}, {0}};
    int found = 0, rc = post && !json_is_null(post) ? processor(out, post, &found, err, err_size) : 0;
    if (rc == 0 && found == 0)
        rc = push(&out[0], API__TPL_A, 0) || push(&out[1], API__TPL_A, 0) || push(&out[1], API__TPL_B, 1) ? API_BPE_ENOMEM : 0;
    for (int k = 0; k < 2; k++) h->tpl[k] = out[k].v, h->n_tpl[k] = out[k].n;
    for (int k = 0; k < 2 && rc == 0; k++) {
        size_t a = 0, b = 0;
        for (size_t i = 0; i < out[k].n; i++) {
            int32_t id = out[k].v[i].id;
            a += id == API__TPL_A, b += id == API__TPL_B;
            if (id >= 0 && !api__hf_exists(t, id))
                return fail(err, err_size, API_BPE_EFORMAT, "post_processor: id %d is no token", (int)id);
        }
        if (out[k].n && (a != 1 || b != (size_t)k))
            return fail(err, err_size, API_BPE_EFORMAT, "post_processor: the %s template needs %s", k ? "pair" : "single",
                        k ? "$A and $B once each" : "$A once and no $B");
    }
    return rc;
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

/* transformers' template: [bos:0] A:0 [eos:0], and [bos:0] A:0 [eos:0]
 * [bos:1] B:1 [eos:1]. */
static int rebuild(api_bpe *t, api__hf *h, int add_bos, int add_eos) {
    tpl out[2] = {{0}, {0}};
    int rc = 0;
    for (int k = 0; k < 2; k++)
        for (int s = 0; s <= k; s++)
            rc |= (add_bos && push(&out[k], t->bos, s)) || push(&out[k], s ? API__TPL_B : API__TPL_A, s) ||
                  (add_eos && push(&out[k], t->eos, s));
    for (int k = 0; k < 2; k++) free(h->tpl[k]), h->tpl[k] = out[k].v, h->n_tpl[k] = out[k].n;
    return rc ? API_BPE_ENOMEM : 0;
}

/* tokenizer.json's "truncation" into t->trunc; tokenizer_config.json's
 * model_max_length (or the older max_len) into t->model_max. */
static int lengths(api_bpe *t, json_t *trunc, json_t *config, char *err, size_t err_size) {
    static const char *const strategies[] = {"LongestFirst", "OnlyFirst", "OnlySecond"};
    json_t *m = json_object_get(config, "model_max_length");
    if (!json_is_number(m)) m = json_object_get(config, "max_len");
    double v = json_is_number(m) ? json_number_value(m) : 0;
    t->model_max = v >= 1 && v <= 1e9 ? (size_t)v : 0; /* transformers' 1e30: no limit */
    if (!trunc || json_is_null(trunc)) return 0;
    json_t *max = json_object_get(trunc, "max_length");
    const char *strategy = json_string_value(json_object_get(trunc, "strategy")),
               *direction = json_string_value(json_object_get(trunc, "direction"));
    int s = 0;
    while (s < 3 && strategy && strcmp(strategy, strategies[s]) != 0) s++;
    if (!json_is_integer(max) || json_integer_value(max) < 0 || s == 3 ||
        (direction && strcmp(direction, "Left") != 0 && strcmp(direction, "Right") != 0))
        return fail(err, err_size, API_BPE_EFORMAT, "truncation: max_length, strategy or direction is not one the library knows");
    t->has_trunc = 1;
    t->trunc = (api_bpe_opts){API_BPE_ADD_SPECIAL, (size_t)json_integer_value(max), s,
                              direction && strcmp(direction, "Left") == 0};
    return 0;
}

int api__hf_parse_specials(api_bpe *t, api__hf *h, json_t *root, json_t *config, char *err, size_t err_size) {
    int rc = templates(t, h, json_object_get(root, "post_processor"), err, err_size);
    if (rc == 0) rc = lengths(t, json_object_get(root, "truncation"), config, err, err_size);
    int32_t first = h->n_tpl[0] && h->tpl[0][0].id >= 0 ? h->tpl[0][0].id : -1;
    json_t *pad = json_object_get(json_object_get(root, "padding"), "pad_id");
    t->bos = config ? config_token(t, config, "bos_token") : first;
    t->eos = config ? config_token(t, config, "eos_token") : -1;
    t->pad_id = config ? config_token(t, config, "pad_token") : -1;
    t->mask_id = config ? config_token(t, config, "mask_token") : -1;
    if (t->pad_id < 0 && json_is_integer(pad) && api__hf_exists(t, (int32_t)json_integer_value(pad)))
        t->pad_id = (int32_t)json_integer_value(pad);
    int add_bos, add_eos;
    if (rc == 0 && config && rebuilds(config, &add_bos, &add_eos)) {
        if ((add_bos && t->bos < 0) || (add_eos && t->eos < 0))
            return fail(err, err_size, API_BPE_EFORMAT, "tokenizer_config.json: add_%s_token without a %s_token of the vocabulary",
                        add_bos && t->bos < 0 ? "bos" : "eos", add_bos && t->bos < 0 ? "bos" : "eos");
        rc = rebuild(t, h, add_bos, add_eos);
    }
    return rc;
}
