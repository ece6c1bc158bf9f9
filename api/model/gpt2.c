/* model.c - POST /model/gpt2: the whole GPT2 of seed 003 (gpt2_min.py),
 * core's attn_gpt2_*, from a parsed request to the 200 reply.
 *
 *   {"vocab_size": 50, "block_size": 16, "n_layer": 2, "n_head": 2, "n_embd": 8,
 *    "init": {"seed": 0}, "idx": [[1, 2, 3]], "return": ["logits", "attn_weights"]}
 *
 * GPTConfig's fields are top-level (n_layer, n_head, n_embd and dropout
 * default to the dataclass's 12, 12, 768 and 0.1), the parameters come from
 * init.seed (torch.manual_seed(seed); GPT2(config), bit for bit) or a
 * state_dict under the seed's names (the attn.bias buffers may be left out;
 * lm_head.weight may be given only equal to wte.weight, it is tied). idx is
 * [T] or [B][T]; every tensor of a [T] request loses its batch axis. Or
 * "text" instead of idx: one string, tokenized by a tokenizer the server
 * loaded (--tokenizer NAME=DIR, GPT-2's BPE, api/bpe/bpe.h) into a [T] idx.
 *
 * Or "model": NAME, a checkpoint loaded at start (--model NAME=FILE,
 * checkpoint.c): its config and parameters, no GPTConfig field, init or
 * state_dict; its parameter buffer is read in place, never copied.
 */
#include "api/model/model.h"
#include "api/bpe/bpe.h"
#include "api/model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The outputs of /model/gpt2, in reply order. */
#define MODEL_OUTPUT_MAP(XX)                                                                       \
    XX(IDX, "idx")                                                                                 \
    XX(TOKENS, "tokens")                                                                           \
    XX(LOGITS, "logits")                                                                           \
    XX(NEXT_TOKEN, "next_token")                                                                   \
    XX(ATTN_WEIGHTS, "attn_weights")                                                               \
    XX(HIDDEN_STATES, "hidden_states")                                                             \
    XX(TIMING, "timing")

enum {
#define XX(id, name) M_OUT_##id,
    MODEL_OUTPUT_MAP(XX)
#undef XX
    M_OUT_COUNT
};

static const char *const out_names[M_OUT_COUNT] = {
#define XX(id, name) name,
    MODEL_OUTPUT_MAP(XX)
#undef XX
};

static const char *const fields[] = {
    "vocab_size", "block_size", "n_layer", "n_head", "n_embd", "dropout", "activation",
    "init", "state_dict", "idx", "text", "tokenizer", "training", "dropout_seed", "return", "layers",
    "precision", "output_format", "dtype", "model", "heads", "query_rows", "top_k", NULL};

typedef struct {
    attn_gpt2_config cfg;
    int batched, B, T;
    int32_t *idx;
    const api_tokenizer *tok;  /* named in "tokenizer", or the only one loaded; may be NULL */
    int from_text;             /* idx is the tokens of "text" */
    int training;
    int has_init;
    uint64_t seed;
    const json_t *state_dict;  /* borrowed from the tree */
    const api_model *model;    /* "model": a checkpoint loaded at start */
    int has_dropout_seed;
    uint64_t dropout_seed;
    unsigned returns;          /* bits of M_OUT_* */
    int *layers, n_layers;     /* the layers whose maps are returned, increasing */
    api_select sel;            /* heads, query_rows, top_k of those maps */
    api_fmt fmt;
} model_rq;

static void model_rq_free(model_rq *rq) {
    free(rq->idx);
    free(rq->layers);
    api__select_free(&rq->sel);
}

/* ==== Fields ============================================================== */

static int get_seed(const json_t *v, const char *name, uint64_t *out, api_err *e) {
    if (!json_is_integer(v)) return api__field_wrong_type(e, name, v, "an integer");
    *out = (uint64_t)json_integer_value(v); /* negative seeds wrap, as torch's */
    return 0;
}

static int check_fields(const json_t *root, api_err *e) {
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)root, key, v) {
        if (api__has_field(fields, key)) continue;
        char echo[API_ECHO_MAX + 4];
        api__echo(echo, sizeof echo, key);
        return api__fail(e, API_E_UNKNOWN_FIELD, echo,
                         "unknown field \"%s\" for /model/gpt2 (it takes GPTConfig's fields, "
                         "init or state_dict, or model; idx or text, tokenizer, training, "
                         "dropout_seed, return, layers, heads, query_rows, top_k, "
                         "precision, output_format, dtype)", echo);
    }
    return 0;
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

static int read_return(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    const json_t *v = api__field(root, "return");
    if (v == NULL) { /* with text: its idx and tokens too */
        rq->returns = 1u << M_OUT_LOGITS | 1u << M_OUT_NEXT_TOKEN;
        if (rq->from_text) rq->returns |= 1u << M_OUT_IDX | 1u << M_OUT_TOKENS;
        return 0;
    }
    if (!json_is_array(v)) return api__field_wrong_type(e, "return", v, "an array of strings");
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *s = json_array_get(v, i);
        char name[48];
        snprintf(name, sizeof name, "return[%zu]", i);
        if (!json_is_string(s)) return api__field_wrong_type(e, name, s, "a string");
        int k = 0;
        while (k < M_OUT_COUNT && strcmp(out_names[k], json_string_value(s)) != 0) k++;
        if (k == M_OUT_COUNT) {
            char echo[API_ECHO_MAX + 4];
            return api__fail(e, API_E_INVALID_ARGUMENT, name,
                             "%s \"%s\" is not an output; choose from idx, tokens, logits, "
                             "next_token, attn_weights, hidden_states, timing",
                             name, api__echo(echo, sizeof echo, json_string_value(s)));
        }
        if (k == M_OUT_TOKENS && rq->tok == NULL) return no_tokenizer(lim, name, e);
        rq->returns |= 1u << k;
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

/* output_format: nested, flat, base64 or safetensors (also from an Accept
 * preferring application/octet-stream when the request names none); no
 * images here. */
static int read_options(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    static const char *const formats[] = {"nested", "flat", "base64", "safetensors", NULL};
    static const char *const dtypes[] = {"float32", "float16", NULL};
    int format = 0, half = 0;
    const json_t *tr = api__field(root, "training");
    if (tr) {
        if (!json_is_boolean(tr)) return api__field_wrong_type(e, "training", tr, "true or false");
        rq->training = json_is_true(tr);
    }
    if (api__field_choice(root, "output_format", formats, &format, e) < 0 ||
        api__field_choice(root, "dtype", dtypes, &half, e) < 0 ||
        api__field_int(root, "precision", 1, 9, &rq->fmt.precision, e) < 0)
        return -1;
    if (api__field(root, "output_format") == NULL && lim && lim->prefer_safetensors)
        format = API_FORMAT_SAFETENSORS;
    rq->fmt.pool = lim ? lim->compute : NULL; /* a large tensor's text over the pool */
    rq->fmt.format = (api_format)format;
    rq->fmt.flat = format == API_FORMAT_FLAT;
    rq->fmt.half = half;
    if (half && format != API_FORMAT_BASE64 && format != API_FORMAT_SAFETENSORS)
        return api__fail(e, API_E_INVALID_ARGUMENT, "dtype",
                         "dtype float16 is for binary replies: set output_format to \"base64\" "
                         "or \"safetensors\"");
    const json_t *ds = api__field(root, "dropout_seed");
    if (ds) {
        if (get_seed(ds, "dropout_seed", &rq->dropout_seed, e)) return -1;
        rq->has_dropout_seed = 1;
    }
    return api__select_parse(root, &rq->sel, e);
}

static int read_params_source(const json_t *root, model_rq *rq, api_err *e) {
    api_params_source src;
    if (api__params_source(root, "GPT2(config)", &src, e)) return -1;
    rq->state_dict = src.state_dict;
    rq->has_init = src.has_init;
    rq->seed = src.seed;
    return 0;
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

static int parse(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    if (!json_is_object(root))
        return api__fail(e, API_E_INVALID_TYPE, NULL, "the request body must be a JSON object");
    size_t budget = lim && lim->max_elements ? lim->max_elements : ATTN_MAX_ELEMENTS;
    const json_t *model = api__field(root, "model");
    if (check_fields(root, e) ||
        (model ? read_model(root, model, lim, rq, e) : read_config(root, rq, e)) ||
        read_tokenizer(root, lim, rq, e) ||
        (api__field(root, "text") ? read_text(root, lim, rq, e) : read_idx(root, rq, &budget, e)) ||
        read_return(root, lim, rq, e) || read_layers(root, rq, e) || read_options(root, lim, rq, e) ||
        (!model && read_params_source(root, rq, e)))
        return -1;
    /* the maps' selection against the model's heads and the tokens */
    const api_select *sel = &rq->sel;
    for (int i = 0; i < sel->n_heads; i++)
        if (sel->heads[i] >= rq->cfg.n_head) {
            char name[32];
            snprintf(name, sizeof name, "heads[%d]", i);
            return api__fail(e, API_E_INVALID_ARGUMENT, name,
                             "head %d does not exist: this model has %d head%s (0 to %d)",
                             sel->heads[i], rq->cfg.n_head, rq->cfg.n_head == 1 ? "" : "s",
                             rq->cfg.n_head - 1);
        }
    if (sel->has_rows && sel->row_stop > rq->T)
        return api__fail(e, API_E_INVALID_ARGUMENT, "query_rows",
                         "query_rows [%d, %d] is beyond the %d query positions (0 to %d)",
                         sel->row_start, sel->row_stop, rq->T, rq->T);
    return 0;
}

/* ==== Parameters ========================================================== */

static int map_attn(api_err *e, const attn_error *ae) {
    api_error code = ae->code == ATTN_ERR_SHAPE       ? API_E_INVALID_SHAPE
                     : ae->code == ATTN_ERR_RANGE     ? API_E_TOO_LARGE
                     : ae->code == ATTN_ERR_NONFINITE ? API_E_NON_FINITE
                     : ae->code == ATTN_ERR_NOMEM     ? API_E_OUT_OF_MEMORY
                                                      : API_E_INVALID_ARGUMENT;
    return api__fail(e, code, ae->field[0] ? ae->field : NULL, "%s", ae->message);
}

/* state_dict into params: every parameter, buffers optional, lm_head.weight
 * optional but equal to wte.weight. */
static int read_state_dict(const json_t *sd, const attn_gpt2_plan *plan, float *params,
                           api_err *e) {
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)sd, key, v) {
        int found = strcmp(key, "lm_head.weight") == 0;
        for (int i = 0; i < plan->param_count && !found; i++) {
            attn_param p;
            attn_gpt2_param_get(plan, i, &p);
            found = strcmp(p.name, key) == 0;
        }
        if (!found) {
            char echo[API_ECHO_MAX + 4], field[API_ECHO_MAX + 16];
            snprintf(field, sizeof field, "state_dict.%s", api__echo(echo, sizeof echo, key));
            return api__fail(e, API_E_INVALID_ARGUMENT, field,
                             "GPT2 has no parameter \"%s\" (names as gpt2_min.py's state_dict: "
                             "wte.weight, h.0.attn.c_attn.weight, h.0.mlp.fc.weight, ...)", echo);
        }
    }
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_gpt2_param_get(plan, i, &p);
        char field[ATTN_PARAM_NAME_MAX + 16], shape[64];
        snprintf(field, sizeof field, "state_dict.%s", p.name);
        v = json_object_get(sd, p.name);
        if (v == NULL && p.buffer) {
            attn_param_buffer_fill(&p, params + p.offset);
            continue;
        }
        api__shape_str(shape, sizeof shape, p.rank, p.shape);
        if (v == NULL)
            return api__fail(e, API_E_MISSING_FIELD, field,
                             "state_dict has no \"%s\": GPT2 needs it with shape %s", p.name, shape);
        if (api__tensor_read_into(v, field, p.rank, p.shape, params + p.offset, e)) return -1;
    }
    v = json_object_get(sd, "lm_head.weight");
    if (v) {
        size_t n = (size_t)plan->V * (size_t)plan->C;
        float *head = malloc(n * sizeof *head);
        if (head == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "out of memory");
        int shape[2] = {plan->V, plan->C};
        int rc = api__tensor_read_into(v, "state_dict.lm_head.weight", 2, shape, head, e);
        if (rc == 0 && memcmp(head, params, n * sizeof *head) != 0)
            rc = api__fail(e, API_E_INVALID_ARGUMENT, "state_dict.lm_head.weight",
                           "lm_head.weight is tied to wte.weight: leave it out or give the "
                           "same values");
        free(head);
        if (rc) return -1;
    }
    attn_error ae = {0};
    if (attn_gpt2_params_check(plan, params, &ae) != ATTN_OK) return map_attn(e, &ae);
    return 0;
}

/* ==== The maps ============================================================ */

/* attn_weights as the reply gives them: the layers of "layers", then the
 * heads of "heads", the rows of "query_rows", and with "top_k" the k largest
 * weights of each row (masked keys, above the causal diagonal, never chosen):
 * [n_layers][B][Hs][R][cols]. */
typedef struct {
    float *values;      /* owned when selected; else the forward's own buffer */
    int32_t *indices;   /* top-k: the key of each value, -1 = padding; else NULL */
    int Hs, R, cols;
    int owned;
} model_maps;

static int select_active(const model_rq *rq) {
    return rq->sel.n_heads || rq->sel.has_rows || rq->sel.top_k;
}

static void maps_dims(const model_rq *rq, const attn_gpt2_plan *p, model_maps *m) {
    const api_select *s = &rq->sel;
    m->Hs = s->n_heads ? s->n_heads : p->H;
    m->R = s->has_rows ? s->row_stop - s->row_start : p->T;
    m->cols = s->top_k ? s->top_k : p->T;
}

/* Elements of the selected view (values, and indices with top-k). */
static size_t maps_count(const model_rq *rq, const attn_gpt2_plan *p) {
    model_maps m;
    maps_dims(rq, p, &m);
    size_t n = (size_t)rq->n_layers * (size_t)p->B * (size_t)m.Hs * (size_t)m.R * (size_t)m.cols;
    return rq->sel.top_k ? 2 * n : n;
}

/* The view of attn [n_layer][B][H][T][T]: the selected layers moved together
 * in place when nothing else is selected, else a new array. */
static int maps_make(const model_rq *rq, const attn_gpt2_plan *p, float *attn, model_maps *m,
                     api_err *e) {
    size_t T = (size_t)p->T, per = (size_t)p->B * (size_t)p->H * T * T;
    *m = (model_maps){0};
    maps_dims(rq, p, m);
    if (!select_active(rq)) {
        for (int i = 0; i < rq->n_layers; i++)
            if (rq->layers[i] != i)
                memmove(attn + (size_t)i * per, attn + (size_t)rq->layers[i] * per,
                        per * sizeof *attn);
        m->values = attn;
        return 0;
    }
    const api_select *s = &rq->sel;
    int r0 = s->has_rows ? s->row_start : 0, k = s->top_k;
    size_t panels = (size_t)rq->n_layers * (size_t)p->B * (size_t)m->Hs;
    size_t n = panels * (size_t)m->R * (size_t)m->cols;
    m->owned = 1;
    m->values = malloc((n ? n : 1) * sizeof *m->values);
    uint8_t *tril = NULL;
    int *scratch = NULL;
    if (k) {
        m->indices = malloc((n ? n : 1) * sizeof *m->indices);
        tril = malloc(T * T);
        scratch = malloc(T * sizeof *scratch);
    }
    if (!m->values || (k && (!m->indices || !tril || !scratch))) {
        free(tril), free(scratch);
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the selected maps");
    }
    for (size_t i = 0; k && i < T; i++)
        for (size_t j = 0; j < T; j++) tril[i * T + j] = j > i; /* 1 = masked out */
    size_t at = 0, block = (size_t)m->R * (size_t)m->cols;
    for (int li = 0; li < rq->n_layers; li++)
        for (int b = 0; b < p->B; b++)
            for (int hi = 0; hi < m->Hs; hi++, at += block) {
                int h = s->n_heads ? s->heads[hi] : hi;
                const float *src = attn + (size_t)rq->layers[li] * per +
                                   (((size_t)b * (size_t)p->H + (size_t)h) * T + (size_t)r0) * T;
                if (k)
                    api__topk_f32(src, (size_t)m->R, p->T, tril + (size_t)r0 * T, T, k,
                                  m->values + at, m->indices + at, scratch);
                else
                    memcpy(m->values + at, src, block * sizeof *src);
            }
    free(tril), free(scratch);
    return 0;
}

static void maps_free(model_maps *m) {
    if (m->owned) free(m->values);
    free(m->indices);
    *m = (model_maps){0};
}

/* ==== Reply =============================================================== */

static void key(api_buf *b, const char *k, int first) {
    api__buf_puts(b, first ? "{\"" : ",\"");
    api__buf_puts(b, k);
    api__buf_put(b, "\":", 2);
}

/* A [lead...][B][rest...] tensor, without the B axis for a [T] request. */
static void emit(api_buf *b, const model_rq *rq, const float *x, int n_lead, const int *lead,
                 int n_rest, const int *rest, int *nonfinite) {
    int shape[API_MAX_RANK + 2], r = 0;
    for (int i = 0; i < n_lead; i++) shape[r++] = lead[i];
    if (rq->batched) shape[r++] = rq->B;
    for (int i = 0; i < n_rest; i++) shape[r++] = rest[i];
    api__emit_floats(b, x, r, shape, &rq->fmt, nonfinite);
}

/* tokens: each token's text ([T], or [B][T]) as the tokenizer shows it
 * (api_bpe_token_text: U+FFFD for a piece of a character). */
static void tokens_out(api_buf *b, const model_rq *rq, const attn_gpt2_plan *p) {
    size_t cap = 3 * api_bpe_max_token_bytes(rq->tok->bpe) + 1, len;
    char *text = malloc(cap);
    if (text == NULL) {
        b->failed = 1;
        return;
    }
    api__buf_puts(b, rq->batched ? "[" : "");
    for (int bi = 0; bi < p->B; bi++) {
        api__buf_puts(b, bi ? ",[" : "[");
        for (int t = 0; t < p->T; t++) {
            if (t) api__buf_puts(b, ",");
            /* ids were checked below vocab_size, not below the tokenizer's size */
            if (api_bpe_token_text(rq->tok->bpe, rq->idx[(size_t)bi * p->T + t], text, cap,
                                   &len) == 0)
                api__buf_json_stringn(b, text, len);
            else
                api__buf_puts(b, "null");
        }
        api__buf_puts(b, "]");
    }
    api__buf_puts(b, rq->batched ? "]" : "");
    free(text);
}

/* The GPTConfig used, and the activation, as a JSON object. */
static void config_json(api_buf *b, const attn_gpt2_config *c) {
    /* dropout: the shortest of 15 or 17 digits that reads back (0.1, not 0.10000000000000001) */
    char drop[32];
    snprintf(drop, sizeof drop, "%.15g", c->dropout);
    if (strtod(drop, NULL) != c->dropout) snprintf(drop, sizeof drop, "%.17g", c->dropout);
    api__buf_printf(b,
                    "{\"vocab_size\":%d,\"block_size\":%d,\"n_layer\":%d,\"n_head\":%d,"
                    "\"n_embd\":%d,\"dropout\":%s,\"activation\":\"%s\"}",
                    c->vocab_size, c->block_size, c->n_layer, c->n_head, c->n_embd, drop,
                    c->gelu == ATTN_GELU_TANH ? "gelu_new" : "gelu");
}

/* next[b]: argmax of the last position's logits, the first on ties (torch.argmax) */
static void next_tokens(const model_rq *rq, const attn_gpt2_plan *p, const float *logits,
                        int32_t *next) {
    for (int bi = 0; bi < p->B; bi++) {
        size_t at = rq->returns & 1u << M_OUT_LOGITS ? (size_t)bi * p->T + (size_t)(p->T - 1)
                                                    : (size_t)bi;
        const float *row = logits + at * (size_t)p->V;
        int best = 0;
        for (int v = 1; v < p->V; v++)
            if (row[v] > row[best]) best = v;
        next[bi] = best;
    }
}

/* logits: [B][T][V], or [B][V] (the last position) when the reply does not return them */
static void respond(api_buf *b, const model_rq *rq, const attn_gpt2_plan *p, const float *logits,
                    const model_maps *maps, const float *hidden, const int32_t *next,
                    const api_reply *timing, int *nonfinite) {
    key(b, "module", 1);
    api__buf_puts(b, "\"GPT2\"");
    if (rq->model) {
        key(b, "model", 0);
        api__buf_json_string(b, rq->model->name);
    }
    key(b, "config", 0);
    config_json(b, &rq->cfg);
    key(b, "shape", 0);
    api__buf_printf(b, "{\"batch\":%d,\"tokens\":%d,\"head_dim\":%d}", p->B, p->T, p->C / p->H);
    if (rq->returns & 1u << M_OUT_IDX) {
        key(b, "idx", 0);
        api__buf_puts(b, rq->batched ? "[" : "");
        for (int bi = 0; bi < p->B; bi++) {
            api__buf_puts(b, bi ? ",[" : "[");
            for (int t = 0; t < p->T; t++)
                api__buf_printf(b, t ? ",%d" : "%d", (int)rq->idx[(size_t)bi * p->T + t]);
            api__buf_puts(b, "]");
        }
        api__buf_puts(b, rq->batched ? "]" : "");
    }
    if (rq->returns & 1u << M_OUT_TOKENS) {
        key(b, "tokens", 0);
        tokens_out(b, rq, p);
    }
    if (rq->returns & 1u << M_OUT_LOGITS) {
        key(b, "logits", 0);
        int rest[2] = {p->T, p->V};
        emit(b, rq, logits, 0, NULL, 2, rest, nonfinite);
    }
    if (rq->returns & 1u << M_OUT_NEXT_TOKEN) {
        key(b, "next_token", 0);
        api__buf_puts(b, rq->batched ? "[" : "");
        for (int bi = 0; bi < p->B; bi++) api__buf_printf(b, bi ? ",%d" : "%d", (int)next[bi]);
        api__buf_puts(b, rq->batched ? "]" : "");
    }
    if (rq->returns & 1u << M_OUT_ATTN_WEIGHTS) {
        key(b, "layers", 0);
        api__buf_puts(b, "[");
        for (int i = 0; i < rq->n_layers; i++) api__buf_printf(b, i ? ",%d" : "%d", rq->layers[i]);
        api__buf_puts(b, "]");
        key(b, "attn_weights", 0);
        int lead[1] = {rq->n_layers}, rest[3] = {maps->Hs, maps->R, maps->cols};
        if (maps->indices) { /* top_k: {"indices": ..., "values": ...} */
            int shape[6], r = 0;
            shape[r++] = rq->n_layers;
            if (rq->batched) shape[r++] = rq->B;
            for (int i = 0; i < 3; i++) shape[r++] = rest[i];
            api__buf_puts(b, "{\"indices\":");
            if (rq->n_layers == 0) api__buf_puts(b, "[]");
            else api__emit_ints(b, maps->indices, r, shape, &rq->fmt);
            api__buf_puts(b, ",\"values\":");
            if (rq->n_layers == 0) api__buf_puts(b, "[]");
            else emit(b, rq, maps->values, 1, lead, 3, rest, nonfinite);
            api__buf_puts(b, "}");
        } else if (rq->n_layers == 0) { /* no layer (n_layer 0, or "layers": []): an empty list */
            api__buf_puts(b, "[]");
        } else {
            emit(b, rq, maps->values, 1, lead, 3, rest, nonfinite);
        }
    }
    if (rq->returns & 1u << M_OUT_HIDDEN_STATES) {
        key(b, "hidden_states", 0);
        int lead[1] = {p->n_layer + 1}, rest[2] = {p->T, p->C};
        emit(b, rq, hidden, 1, lead, 2, rest, nonfinite);
    }
    if (rq->returns & 1u << M_OUT_TIMING) {
        key(b, "timing", 0);
        api__buf_printf(b, "{\"parse_ms\":%.3f,\"compute_ms\":%.3f}", timing->ms_parse,
                        timing->ms_compute);
    }
    api__buf_puts(b, "}");
}

/* One tensor of a [lead...][B][rest...] output, without the B axis for a [T] request. */
static api_st_entry *st_add(api_st_entry *t, int *n, const model_rq *rq, const char *name,
                            api_st_kind kind, const void *data, int n_lead, const int *lead,
                            int n_rest, const int *rest) {
    api_st_entry *x = &t[(*n)++];
    *x = (api_st_entry){.data = data, .kind = kind};
    snprintf(x->name, sizeof x->name, "%s", name);
    for (int i = 0; i < n_lead; i++) x->shape[x->rank++] = lead[i];
    if (rq->batched) x->shape[x->rank++] = rq->B;
    for (int i = 0; i < n_rest; i++) x->shape[x->rank++] = rest[i];
    return x;
}

/* The reply as one safetensors file: idx and next_token (I32), logits,
 * attn_weights ("attn_weights.values" and I32 ".indices" with top_k) and
 * hidden_states; the config, shape, layers, model, tokens and timing as JSON
 * strings in __metadata__. */
static int respond_safetensors(api_buf *b, const model_rq *rq, const attn_gpt2_plan *p,
                               const float *logits, const model_maps *maps, const float *hidden,
                               const int32_t *next, const api_reply *timing, double t2,
                               api_err *e) {
    api_st_entry t[8];
    int n = 0;
    int T[1] = {p->T}, TV[2] = {p->T, p->V}, TC[2] = {p->T, p->C}, L[1] = {rq->n_layers};
    int H1[1] = {p->n_layer + 1}, maps_rest[3] = {maps->Hs, maps->R, maps->cols};
    if (rq->returns & 1u << M_OUT_IDX) st_add(t, &n, rq, "idx", API_ST_INT32, rq->idx, 0, NULL, 1, T);
    if (rq->returns & 1u << M_OUT_LOGITS)
        st_add(t, &n, rq, "logits", API_ST_FLOAT, logits, 0, NULL, 2, TV);
    if (rq->returns & 1u << M_OUT_NEXT_TOKEN)
        st_add(t, &n, rq, "next_token", API_ST_INT32, next, 0, NULL, 0, NULL);
    if (rq->returns & 1u << M_OUT_ATTN_WEIGHTS) {
        st_add(t, &n, rq, maps->indices ? "attn_weights.values" : "attn_weights", API_ST_FLOAT,
               maps->values, 1, L, 3, maps_rest);
        if (maps->indices)
            st_add(t, &n, rq, "attn_weights.indices", API_ST_INT32, maps->indices, 1, L, 3,
                   maps_rest);
    }
    if (rq->returns & 1u << M_OUT_HIDDEN_STATES)
        st_add(t, &n, rq, "hidden_states", API_ST_FLOAT, hidden, 1, H1, 2, TC);
    enum { M_CONFIG, M_SHAPE, M_LAYERS, M_MODEL, M_TOKENS, M_TIMING, M_N };
    api_buf v[M_N] = {{0}};
    api_st_meta m[M_N];
    int n_meta = 0;
    config_json(&v[M_CONFIG], &rq->cfg);
    m[n_meta++] = (api_st_meta){"config", &v[M_CONFIG]};
    api__buf_printf(&v[M_SHAPE], "{\"batch\":%d,\"tokens\":%d,\"head_dim\":%d}", p->B, p->T,
                    p->C / p->H);
    m[n_meta++] = (api_st_meta){"shape", &v[M_SHAPE]};
    if (rq->returns & 1u << M_OUT_ATTN_WEIGHTS) {
        api__buf_puts(&v[M_LAYERS], "[");
        for (int i = 0; i < rq->n_layers; i++)
            api__buf_printf(&v[M_LAYERS], i ? ",%d" : "%d", rq->layers[i]);
        api__buf_puts(&v[M_LAYERS], "]");
        m[n_meta++] = (api_st_meta){"layers", &v[M_LAYERS]};
    }
    if (rq->model) {
        api__buf_json_string(&v[M_MODEL], rq->model->name);
        m[n_meta++] = (api_st_meta){"model", &v[M_MODEL]};
    }
    if (rq->returns & 1u << M_OUT_TOKENS) {
        tokens_out(&v[M_TOKENS], rq, p);
        m[n_meta++] = (api_st_meta){"tokens", &v[M_TOKENS]};
    }
    if (rq->returns & 1u << M_OUT_TIMING) {
        api__buf_printf(&v[M_TIMING], "{\"parse_ms\":%.3f,\"compute_ms\":%.3f,\"serialise_ms\":%.3f}",
                        timing->ms_parse, timing->ms_compute, api__now_ms() - t2);
        m[n_meta++] = (api_st_meta){"timing", &v[M_TIMING]};
    }
    int rc = api__safetensors_write(b, t, n, rq->fmt.half, "GPT2", m, n_meta, NULL, e);
    for (int i = 0; i < M_N; i++) api_buf_free(&v[i]);
    return rc;
}

/* ==== The request ========================================================= */

/* Reply values per float in the JSON estimate (as handle.c counts them). */
#define REPLY_FLOATS_PER_VALUE 3

int api__model_gpt2(json_t **root_ref, const api_limits *lim, api_reply *reply, double t0,
                    api_err *e) {
    const json_t *root = *root_ref;
    model_rq rq = {0};
    attn_gpt2_plan plan;
    float *params = NULL, *logits = NULL, *attn = NULL, *hidden = NULL;
    int32_t *next = NULL;
    model_maps maps = {0};
    attn_rng rng;
    attn_rng *rng_ptr = NULL;
    int rc = -1;
    size_t max = lim && lim->max_elements ? lim->max_elements : ATTN_MAX_ELEMENTS;

    if (parse(root, lim, &rq, e)) goto done;
    attn_error ae = {0};
    if (attn_gpt2_plan_make(&rq.cfg, rq.B, rq.T, rq.training, &plan, &ae) != ATTN_OK) {
        map_attn(e, &ae);
        goto done;
    }
    /* the budget: the plan's bound (parameters, outputs, work space) and the reply text */
    size_t out_values = 0;
    if (rq.returns & 1u << M_OUT_LOGITS) out_values += plan.n_logits;
    if (rq.returns & 1u << M_OUT_ATTN_WEIGHTS) out_values += plan.n_attn;
    if (rq.returns & 1u << M_OUT_HIDDEN_STATES) out_values += plan.n_hidden;
    size_t need = plan.total_elements;
    /* the selected maps are a copy (top_k: values and indices); their reply
     * text is counted instead of the whole maps' */
    if ((rq.returns & 1u << M_OUT_ATTN_WEIGHTS) && select_active(&rq)) {
        size_t sel = maps_count(&rq, &plan);
        out_values = out_values - plan.n_attn + sel;
        need += sel;
    }
    if (rq.model) need -= plan.n_params; /* loaded once at start, not per request */
    if (out_values > (max - (need < max ? need : max)) / REPLY_FLOATS_PER_VALUE || need > max) {
        api__fail(e, API_E_TOO_LARGE, NULL,
                  "this model needs about %zu values (parameters, activations, outputs and "
                  "reply), over this server's limit of %zu",
                  need + out_values * REPLY_FLOATS_PER_VALUE, max);
        goto done;
    }
    need += out_values * REPLY_FLOATS_PER_VALUE;
    /* the work is about the parameters read per token: a loaded model's
     * count too, though they are not allocated here */
    if (lim && lim->defer_above && need + (rq.model ? plan.n_params : 0) > lim->defer_above) {
        rc = 1; /* too big for the caller's thread: run it on a worker */
        goto done;
    }
    if (lim && lim->reserve) {
        char msg[256] = "no memory for this request now; retry later";
        if (lim->reserve(lim->reserve_ctx, need * sizeof(float), msg, sizeof msg) != 0) {
            msg[sizeof msg - 1] = '\0';
            api__fail(e, API_E_OVERLOADED, NULL, "%s", msg);
            goto done;
        }
    }
    /* next_token alone needs the last position's logits only: [B][V] */
    int last_only = !(rq.returns & 1u << M_OUT_LOGITS);
    if (!rq.model) params = malloc(plan.n_params * sizeof *params);
    logits = malloc((last_only ? (size_t)plan.B * (size_t)plan.V : plan.n_logits) * sizeof *logits);
    if (rq.returns & 1u << M_OUT_ATTN_WEIGHTS)
        attn = malloc((plan.n_attn ? plan.n_attn : 1) * sizeof *attn);
    if (rq.returns & 1u << M_OUT_HIDDEN_STATES) hidden = malloc(plan.n_hidden * sizeof *hidden);
    next = malloc((size_t)plan.B * sizeof *next);
    if (params) api__huge_pages(params, plan.n_params * sizeof *params);
    api__huge_pages(logits, (last_only ? (size_t)plan.B * (size_t)plan.V : plan.n_logits) * sizeof *logits);
    if (attn) api__huge_pages(attn, plan.n_attn * sizeof *attn);
    if (hidden) api__huge_pages(hidden, plan.n_hidden * sizeof *hidden);
    if ((!rq.model && !params) || !logits || !next || ((rq.returns & 1u << M_OUT_ATTN_WEIGHTS) && !attn) ||
        ((rq.returns & 1u << M_OUT_HIDDEN_STATES) && !hidden)) {
        api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the model");
        goto done;
    }
    if (rq.model) {
        /* nothing to build: the loaded buffer is used as it is */
    } else if (rq.state_dict) {
        if (read_state_dict(rq.state_dict, &plan, params, e)) goto done;
    } else {
        attn_rng_seed(&rng, rq.seed);
        if (attn_gpt2_params_init(&plan, params, &rng, &ae) != ATTN_OK) {
            map_attn(e, &ae);
            goto done;
        }
        rng_ptr = &rng; /* dropout continues from the constructor's generator */
    }
    if (rq.has_dropout_seed) {
        attn_rng_seed(&rng, rq.dropout_seed);
        rng_ptr = &rng;
    }
    /* the tree is no longer needed: free it before computing */
    json_decref(*root_ref);
    *root_ref = NULL;
    double t1 = api__now_ms();
    reply->ms_parse = t1 - t0;

    attn_gpt2_outputs out = {.logits = logits, .attn_weights = attn, .hidden_states = hidden,
                             .last_only = last_only};
    if (attn_gpt2_forward(&plan, rq.model ? rq.model->params : params, rq.idx,
                          lim ? lim->compute : NULL, rng_ptr, &out,
                          &ae) != ATTN_OK) {
        map_attn(e, &ae);
        goto done;
    }
    double t2 = api__now_ms();
    reply->ms_compute = t2 - t1;

    next_tokens(&rq, &plan, logits, next);
    if ((rq.returns & 1u << M_OUT_ATTN_WEIGHTS) && maps_make(&rq, &plan, attn, &maps, e))
        goto done;
    if (rq.fmt.format == API_FORMAT_SAFETENSORS) {
        if (respond_safetensors(&reply->body, &rq, &plan, logits, &maps, hidden, next, reply, t2,
                                e))
            goto done;
        reply->content_type = "application/octet-stream";
    } else {
        int nonfinite = 0;
        if (api__buf_reserve(&reply->body, out_values * 10 + 512) == 0)
            respond(&reply->body, &rq, &plan, logits, &maps, hidden, next, reply, &nonfinite);
        if (nonfinite) {
            api__fail(e, API_E_INTERNAL_ERROR, NULL, "the result holds NaN or infinity");
            goto done;
        }
        if (reply->body.failed) {
            api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
            goto done;
        }
    }
    reply->ms_serialise = api__now_ms() - t2;
    rc = 0;
done:
    maps_free(&maps);
    free(next);
    free(params);
    free(logits);
    free(attn);
    free(hidden);
    model_rq_free(&rq);
    return rc;
}
