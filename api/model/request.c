/* request.c - a /model/gpt2 request object into a model_rq: GPTConfig or
 * a loaded checkpoint ("model"), the token ids (idx, or text through a
 * tokenizer), the outputs and their options. */
#include "api/model/model.h"
#include "api/bpe/bpe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const out_names[M_OUT_COUNT] = {
#define M_OUT_NAME(id, name) name,
    MODEL_OUTPUT_MAP(M_OUT_NAME)
#undef M_OUT_NAME
};

static const char *const fields[] = {
    "vocab_size", "block_size", "n_layer", "n_head", "n_embd", "dropout", "activation",
    "init", "state_dict", "idx", "text", "tokenizer", "training", "dropout_seed", "return", "layers",
    "precision", "output_format", "dtype", "model", "heads", "query_rows", "top_k",
    "ablate", "patch", "logit_lens", NULL};

void api__model_rq_free(model_rq *rq) {
    free(rq->idx);
    free(rq->layers);
    api__select_free(&rq->sel);
    api__inside_rq_free(&rq->in);
}

/* ==== Fields ============================================================== */

static int get_seed(const json_t *v, const char *name, uint64_t *out, api_err *e) {
    if (!json_is_integer(v)) return api__field_wrong_type(e, name, v, "an integer");
    *out = (uint64_t)json_integer_value(v); /* negative seeds wrap, as torch's */
    return 0;
}

static int check_fields(const json_t *root, api_err *e) {
    const char *key = api__unknown_key(root, fields);
    if (key == NULL) return 0;
    char echo[API_ECHO_MAX + 4];
    api__echo(echo, sizeof echo, key);
    return api__fail(e, API_E_UNKNOWN_FIELD, echo,
                     "unknown field \"%s\" for /model/gpt2 (it takes GPTConfig's fields, "
                     "init or state_dict, or model; idx or text, tokenizer, training, "
                     "dropout_seed, return, layers, heads, query_rows, top_k, "
                     "ablate, patch, logit_lens, precision, output_format, dtype)", echo);
}

static int read_config(const json_t *root, model_rq *rq, api_err *e) {
    attn_gpt2_config *c = &rq->cfg;
    *c = (attn_gpt2_config){.n_layer = 12, .n_head = 12, .n_embd = 768, .dropout = 0.1};
    static const char *const acts[] = {"gelu", "gelu_new", NULL};
    int act = 0;
    if (api__field_required_int(root, "vocab_size", 1, INT32_MAX, &c->vocab_size, e) ||
        api__field_required_int(root, "block_size", 1, INT32_MAX, &c->block_size, e) ||
        api__field_int(root, "n_layer", 0, INT32_MAX, &c->n_layer, e) < 0 ||
        api__field_int(root, "n_head", 1, INT32_MAX, &c->n_head, e) < 0 ||
        api__field_int(root, "n_embd", 1, INT32_MAX, &c->n_embd, e) < 0 ||
        api__field_choice(root, "activation", acts, &act, e) < 0)
        return -1;
    c->gelu = act ? ATTN_GELU_TANH : ATTN_GELU_ERF;
    const json_t *p = api__field(root, "dropout");
    if (p) {
        if (!json_is_number(p)) return api__field_wrong_type(e, "dropout", p, "a number");
        c->dropout = json_number_value(p);
        if (!(c->dropout >= 0.0 && c->dropout <= 1.0))
            return api__fail(e, API_E_INVALID_ARGUMENT, "dropout", "dropout must be in [0, 1]");
    }
    if (c->n_embd % c->n_head != 0)
        return api__fail(e, API_E_INVALID_SHAPE, "n_head",
                         "n_embd must be divisible by n_head (n_embd %d, n_head %d)", c->n_embd,
                         c->n_head);
    return 0;
}

/* idx: [T] or [B][T] integers in [0, vocab_size), T <= block_size. */
static int read_idx(const json_t *root, model_rq *rq, size_t *budget, api_err *e) {
    const json_t *v = api__field(root, "idx");
    if (v == NULL)
        return api__fail(e, API_E_MISSING_FIELD, "idx", "idx is required: token ids [T] or [B][T]");
    api_tensor t;
    if (api__tensor_read(v, "idx", 1, 2, API_VAL_NUMBER, budget, &t, e)) return -1;
    rq->batched = t.rank == 2;
    rq->B = rq->batched ? t.shape[0] : 1;
    rq->T = t.shape[t.rank - 1];
    int rc = 0;
    if (rq->T < 1 || rq->B < 1) {
        rc = api__fail(e, API_E_INVALID_SHAPE, "idx", "idx holds no token");
    } else if (rq->T > rq->cfg.block_size) {
        rc = api__fail(e, API_E_INVALID_SHAPE, "idx",
                       "%d tokens exceed block_size %d (wpe has only %d rows)", rq->T,
                       rq->cfg.block_size, rq->cfg.block_size);
    } else if ((rq->idx = malloc(t.count * sizeof *rq->idx)) == NULL) {
        rc = api__fail(e, API_E_OUT_OF_MEMORY, "idx", "cannot allocate idx");
    }
    for (size_t i = 0; rc == 0 && i < t.count; i++) {
        float x = t.data[i];
        if (!(x >= 0.0f && x < (float)rq->cfg.vocab_size && x == floorf(x))) {
            char field[64];
            size_t b = i / (size_t)rq->T, s = i % (size_t)rq->T;
            if (rq->batched) snprintf(field, sizeof field, "idx[%zu][%zu]", b, s);
            else snprintf(field, sizeof field, "idx[%zu]", s);
            rc = api__fail(e, API_E_INVALID_ARGUMENT, field,
                           "%s is %g: token ids are integers in [0, vocab_size %d)", field,
                           (double)x, rq->cfg.vocab_size);
        } else {
            rq->idx[i] = (int32_t)x;
        }
    }
    api__tensor_free(&t);
    return rc;
}

/* tokenizer: the name of a loaded tokenizer; when left out, the only one
 * loaded (if exactly one is). */
static int read_tokenizer(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    size_t n = lim ? lim->n_tokenizers : 0;
    const json_t *v = api__field(root, "tokenizer");
    if (v == NULL) {
        if (n == 1) rq->tok = &lim->tokenizers[0];
        return 0;
    }
    if (!json_is_string(v)) return api__field_wrong_type(e, "tokenizer", v, "a string");
    for (size_t i = 0; i < n; i++)
        if (strcmp(lim->tokenizers[i].name, json_string_value(v)) == 0) {
            rq->tok = &lim->tokenizers[i];
            return 0;
        }
    char echo[API_ECHO_MAX + 4], list[256] = "";
    for (size_t i = 0; i < n; i++) {
        size_t k = strlen(list);
        snprintf(list + k, sizeof list - k, "%s\"%s\"", i ? ", " : "", lim->tokenizers[i].name);
    }
    return api__fail(e, API_E_INVALID_ARGUMENT, "tokenizer",
                     "tokenizer \"%s\" is not loaded; this server has %s",
                     api__echo(echo, sizeof echo, json_string_value(v)),
                     n ? list : "none (start it with --tokenizer NAME=DIR)");
}

/* The error when field needs a tokenizer and the request has none. */
static int no_tokenizer(const api_limits *lim, const char *field, api_err *e) {
    size_t n = lim ? lim->n_tokenizers : 0;
    if (n == 0)
        return api__fail(e, API_E_INVALID_ARGUMENT, field,
                         "%s needs a tokenizer and this server has none: start it with "
                         "--tokenizer NAME=DIR (GPT-2's vocab.json + merges.txt)", field);
    return api__fail(e, API_E_MISSING_FIELD, "tokenizer",
                     "%s needs a tokenizer: name one of the %zu loaded in \"tokenizer\"", field, n);
}

/* text: one string, GPT-2's BPE tokens of it become idx [T]. */
static int read_text(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    const json_t *v = api__field(root, "text");
    if (api__field(root, "idx"))
        return api__fail(e, API_E_INVALID_ARGUMENT, "text", "give either text or idx, not both");
    if (!json_is_string(v)) return api__field_wrong_type(e, "text", v, "a string");
    if (rq->tok == NULL) return no_tokenizer(lim, "text", e);
    const api_bpe *bpe = rq->tok->bpe;
    size_t len = json_string_length(v), most = api_bpe_max_token_bytes(bpe);
    int block = rq->cfg.block_size;
    /* each token covers at most `most` bytes: a longer text cannot fit */
    if (len > (size_t)block * most)
        return api__fail(e, API_E_INVALID_SHAPE, "text",
                         "text of %zu bytes is more than block_size %d tokens", len, block);
    size_t n = 0;
    int rc = api_bpe_encode(bpe, json_string_value(v), len, &rq->idx, &n);
    if (rc == API_BPE_ENOMEM)
        return api__fail(e, API_E_OUT_OF_MEMORY, "text", "cannot allocate the tokens of text");
    if (rc != 0)
        return api__fail(e, API_E_INVALID_ARGUMENT, "text", "text: %s", api_bpe_strerror(rc));
    if (n == 0) return api__fail(e, API_E_INVALID_SHAPE, "text", "text is empty: no token");
    if (n > (size_t)block)
        return api__fail(e, API_E_INVALID_SHAPE, "text",
                         "text is %zu tokens, over block_size %d (wpe has only %d rows)", n, block,
                         block);
    for (size_t i = 0; i < n; i++)
        if (rq->idx[i] >= rq->cfg.vocab_size)
            return api__fail(e, API_E_INVALID_ARGUMENT, "text",
                             "token %zu of text is id %d, not below vocab_size %d (tokenizer "
                             "\"%s\" has %zu tokens)",
                             i, (int)rq->idx[i], rq->cfg.vocab_size, rq->tok->name,
                             api_bpe_vocab_size(bpe));
    rq->batched = 0;
    rq->B = 1;
    rq->T = (int)n;
    rq->from_text = 1;
    return 0;
}

/* A hook name of "return" (inside_parse.c). */
static int hook_name(void *ctx, const char *name, int at, api_err *e) {
    model_rq *rq = ctx;
    return api__inside_return_name(&rq->in, rq->cfg.n_layer, name, at, e);
}

static int read_return(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    int tokens_at = -1;
    int rc = api__return_read_with(root, out_names, M_OUT_COUNT, &rq->returns, &tokens_at,
                                   hook_name, rq, e);
    if (rc < 0) return -1;
    if (rc == 0) { /* with text: its idx and tokens too */
        rq->returns = 1u << M_OUT_LOGITS | 1u << M_OUT_NEXT_TOKEN;
        if (rq->from_text) rq->returns |= 1u << M_OUT_IDX | 1u << M_OUT_TOKENS;
    }
    if (tokens_at >= 0 && rq->tok == NULL) {
        char name[48];
        snprintf(name, sizeof name, "return[%d]", tokens_at);
        return no_tokenizer(lim, name, e);
    }
    return 0;
}

/* layers: increasing layer indices whose maps attn_weights returns (all by default). */
static int read_layers(const json_t *root, model_rq *rq, api_err *e) {
    const json_t *v = api__field(root, "layers");
    int L = rq->cfg.n_layer;
    size_t n = v ? json_array_size(v) : (size_t)L;
    if (v && !json_is_array(v)) return api__field_wrong_type(e, "layers", v, "an array of layer indices");
    if (n > (size_t)L)
        return api__fail(e, API_E_INVALID_ARGUMENT, "layers", "layers lists more than n_layer %d", L);
    rq->layers = malloc((n ? n : 1) * sizeof *rq->layers);
    if (rq->layers == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, "layers", "out of memory");
    rq->n_layers = (int)n;
    for (size_t i = 0; i < n; i++) {
        if (!v) {
            rq->layers[i] = (int)i;
            continue;
        }
        const json_t *x = json_array_get(v, i);
        char name[48];
        snprintf(name, sizeof name, "layers[%zu]", i);
        if (!json_is_integer(x)) return api__field_wrong_type(e, name, x, "an integer");
        long long l = json_integer_value(x);
        if (l < 0 || l >= L || (i > 0 && l <= rq->layers[i - 1]))
            return api__fail(e, API_E_INVALID_ARGUMENT, name,
                             "%s is %lld: layers are increasing indices in [0, n_layer %d)", name,
                             l, L);
        rq->layers[i] = (int)l;
    }
    return 0;
}

/* training, dropout_seed, the maps' selection, and the options every kind
 * reads (output_format among API_MODEL_FORMATS, dtype, precision). */
static int read_options(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    const json_t *tr = api__field(root, "training");
    if (tr) {
        if (!json_is_boolean(tr)) return api__field_wrong_type(e, "training", tr, "true or false");
        rq->training = json_is_true(tr);
    }
    if (api__options_read(root, lim, API_MODEL_FORMATS, &rq->fmt, e)) return -1;
    const json_t *ds = api__field(root, "dropout_seed");
    if (ds) {
        if (get_seed(ds, "dropout_seed", &rq->dropout_seed, e)) return -1;
        rq->has_dropout_seed = 1;
    }
    return api__select_parse(root, &rq->sel, e);
}

/* "model": a loaded checkpoint, which brings the config and the parameters. */
static int read_model(const json_t *root, const json_t *v, const api_limits *lim, model_rq *rq,
                      api_err *e) {
    static const char *const own[] = {"vocab_size", "block_size", "n_layer", "n_head", "n_embd",
                                      "dropout", "activation", "init", "state_dict", NULL};
    if (!json_is_string(v)) return api__field_wrong_type(e, "model", v, "a string (a loaded model's name)");
    const api_models *models = lim ? lim->models : NULL;
    rq->model = api__models_find(models, json_string_value(v));
    if (!rq->model) {
        char echo[API_ECHO_MAX + 4], names[256];
        api__models_names(models, names, sizeof names);
        return api__fail(e, API_E_INVALID_ARGUMENT, "model",
                         "model \"%s\" is not loaded (loaded: %s; GET /models lists them, "
                         "--model NAME=FILE.safetensors loads one)",
                         api__echo(echo, sizeof echo, json_string_value(v)), names);
    }
    for (int i = 0; own[i]; i++)
        if (api__field(root, own[i]))
            return api__fail(e, API_E_INVALID_ARGUMENT, own[i],
                             "model \"%s\" brings its config and parameters: leave %s out",
                             rq->model->name, own[i]);
    rq->cfg = rq->model->cfg;
    return 0;
}

int api__model_parse(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    if (!json_is_object(root))
        return api__fail(e, API_E_INVALID_TYPE, NULL, "the request body must be a JSON object");
    size_t budget = lim && lim->max_elements ? lim->max_elements : ATTN_MAX_ELEMENTS;
    const json_t *model = api__field(root, "model");
    if (check_fields(root, e) ||
        (model ? read_model(root, model, lim, rq, e) : read_config(root, rq, e)) ||
        read_tokenizer(root, lim, rq, e) ||
        (api__field(root, "text") ? read_text(root, lim, rq, e) : read_idx(root, rq, &budget, e)) ||
        read_return(root, lim, rq, e) || read_layers(root, rq, e) || read_options(root, lim, rq, e) ||
        api__inside_parse(root, lim, rq, e) ||
        (!model && api__params_source(root, "GPT2(config)", &rq->params, e)))
        return -1;
    /* the maps' selection against the model's heads and the tokens */
    return api__select_check(&rq->sel, rq->cfg.n_head, rq->T, "model", e);
}

