/* request.c - a POST /model request object into a model_rq: the
 * architecture ("module") and its config (config.c) or a loaded checkpoint
 * ("model"), the token ids (idx, or text through a tokenizer), the outputs
 * and their options. */
#include "api/bpe/bpe.h"
#include "api/model/model.h"
#include "api/tokens/tokens.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const out_names[M_OUT_COUNT] = {
#define M_OUT_NAME(id, name) name,
    MODEL_OUTPUT_MAP(M_OUT_NAME)
#undef M_OUT_NAME
};

/* The fields every architecture takes; the config's are its row's own
 * (config.c). */
static const char *const fields[] = {
    "module", "init", "state_dict", "idx", "text", "tokenizer", "training", "dropout_seed", "return",
    "layers", "precision", "output_format", "dtype", "model", "heads", "query_rows", "top_k", "generate",
    "ablate", "patch", "logit_lens", "analysis", "add_special", "attention_mask", "token_type_ids",
    "fill_mask", "neuron_view", NULL};

void api__model_rq_free(model_rq *rq) {
    api__model_gen_free(rq);
    free(rq->idx);
    free(rq->mask);
    free(rq->types);
    free(rq->b_start);
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

/* Every key is a field of the endpoint or a config field of the
 * architecture; another architecture's config name is told apart. */
static int check_fields(const json_t *root, attn_arch arch, api_err *e) {
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)root, key, v) {
        if (api__has_field(fields, key) || api__model_config_field(arch, key)) continue;
        if (api__model_config_other(arch, key, e)) return -1;
        char echo[API_ECHO_MAX + 4];
        api__echo(echo, sizeof echo, key);
        return api__fail(e, API_E_UNKNOWN_FIELD, echo,
                         "unknown field \"%s\" for /model (it takes module, %s's config "
                         "fields, init or state_dict, or model; idx or text, attention_mask, "
                         "token_type_ids, tokenizer, add_special, training, dropout_seed, return, layers, heads, "
                         "query_rows, top_k, ablate, patch, logit_lens, analysis, neuron_view, fill_mask, "
                         "precision, output_format, dtype, generate)", echo,
                         attn_arch_name(arch));
    }
    return 0;
}

/* tokenizer: the one rule of api__tokenizer_pick (a name, the model's, the
 * server's default); NULL when the server has none. add_special: the
 * folder's template around texts (BOS, an encoder's [CLS] A [SEP]) as
 * transformers' tokenizer(text) adds it; true by default. */
static int read_tokenizer(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    rq->tok_default = !api__field(root, "tokenizer") && !(rq->model && rq->model->bpe);
    int add = 1;
    if (api__field_bool(root, "add_special", &add, e) < 0) return -1;
    rq->text_flags = add ? API_BPE_ADD_SPECIAL : 0;
    return api__tokenizer_pick(root, lim, rq->model, 0, "text", &rq->tok, e);
}

/* text: one string, strings or pairs (text.c). */
static int read_text(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    if (api__field(root, "idx"))
        return api__fail(e, API_E_INVALID_ARGUMENT, "text", "give either text or idx, not both");
    return api__model_text_read(api__field(root, "text"), "text", lim, rq, e);
}

/* A hook name of "return" (api/inside/), against the model's hooks. */
static int hook_name(void *ctx, const char *name, int at, api_err *e) {
    model_rq *rq = ctx;
    attn_lm_plan p;
    attn_error ae = {0};
    if (attn_lm_plan_make(&rq->cfg, 1, 1, 0, &p, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, ATTN_MODULE_COUNT);
        return -1;
    }
    return api__inside_return_name(&rq->in, &p, name, at, e);
}

static int read_return(const json_t *root, model_rq *rq, api_err *e) {
    int tokens_at = -1;
    int rc = api__return_read_with(root, out_names, M_OUT_COUNT, &rq->returns, &tokens_at,
                                   hook_name, rq, e);
    if (rc < 0) return -1;
    if (rc == 0 && api__field(root, "generate")) { /* the text written, and its tokens */
        rq->returns = 1u << M_OUT_IDX | (api__model_text_bpe(rq) ? 1u << M_OUT_TOKENS : 0);
    } else if (rc == 0) { /* with text: its idx and tokens too */
        rq->returns = 1u << M_OUT_LOGITS | 1u << M_OUT_NEXT_TOKEN;
        if (rq->from_text) rq->returns |= 1u << M_OUT_IDX | 1u << M_OUT_TOKENS;
    }
    if (tokens_at >= 0 && rq->tok == NULL) {
        char name[48];
        snprintf(name, sizeof name, "return[%d]", tokens_at);
        return api__tokenizer_missing(name, e);
    }
    return 0;
}

/* layers: increasing layer indices whose maps attn_weights returns (all by default). */
static int read_layers(const json_t *root, model_rq *rq, api_err *e) {
    const json_t *v = api__field(root, "layers");
    int L = rq->cfg.n_layer;
    const char *nl = api__hparam_name(rq->cfg.arch, ATTN_HP_LAYERS);
    size_t n = v ? json_array_size(v) : (size_t)L;
    if (v && !json_is_array(v)) return api__field_wrong_type(e, "layers", v, "an array of layer indices");
    if (n > (size_t)L)
        return api__fail(e, API_E_INVALID_ARGUMENT, "layers", "layers lists more than %s %d", nl, L);
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
                             "%s is %lld: layers are increasing indices in [0, %s %d)", name,
                             l, nl, L);
        rq->layers[i] = (int)l;
    }
    return 0;
}

/* training, dropout_seed, the maps' selection, and the options every kind
 * reads (output_format among API_MODEL_GEN_FORMATS, dtype, precision). */
static int read_options(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    const json_t *tr = api__field(root, "training");
    if (tr) {
        if (!json_is_boolean(tr)) return api__field_wrong_type(e, "training", tr, "true or false");
        rq->training = json_is_true(tr);
    }
    /* the kind's formats (API_KIND_DEFINE's); the streamed ones are a
     * generation's only */
    unsigned formats = API_MODEL_GEN_FORMATS;
    for (int f = 0; f < API_FORMAT_COUNT && !api__field(root, "generate"); f++)
        if (api_format_get((api_format)f)->flags & API_FMT_EVENTS) formats &= ~(1u << f);
    if (api__options_read(root, lim, formats, &rq->fmt, e)) return -1;
    const json_t *ds = api__field(root, "dropout_seed");
    if (ds) {
        if (get_seed(ds, "dropout_seed", &rq->dropout_seed, e)) return -1;
        rq->has_dropout_seed = 1;
    }
    return api__select_parse(root, &rq->sel, e);
}

/* A field a loaded model brings itself: any architecture's config field,
 * the parameters, a "module" other than its own. */
static int model_brings(const json_t *root, const api_model *m, api_err *e) {
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)root, key, v) {
        int config = !strcmp(key, "init") || !strcmp(key, "state_dict");
        for (int a = 0; a < ATTN_ARCH_COUNT && !config; a++)
            config = api__model_config_field((attn_arch)a, key);
        if (config && !json_is_null(v))
            return api__fail(e, API_E_INVALID_ARGUMENT, key,
                             "model \"%s\" brings its config and parameters: leave %s out",
                             m->name, key);
    }
    attn_arch arch;
    if (api__model_arch_read(root, &arch, e)) return -1;
    if (api__field(root, "module") && arch != m->cfg.arch)
        return api__fail(e, API_E_INVALID_ARGUMENT, "module",
                         "model \"%s\" is a %s, not a %s: leave module out", m->name,
                         attn_arch_name(m->cfg.arch), attn_arch_name(arch));
    return 0;
}

/* "model": a loaded checkpoint, which brings the architecture, the config and
 * the parameters. */
static int read_model(const json_t *root, const json_t *v, const api_limits *lim, model_rq *rq,
                      api_err *e) {
    if (!json_is_string(v)) return api__field_wrong_type(e, "model", v, "a string (a loaded model's name)");
    const api_models *models = lim ? lim->models : NULL;
    rq->model = api__models_find(models, json_string_value(v));
    if (!rq->model) {
        char echo[API_ECHO_MAX + 4], names[256];
        api__models_names(models, names, sizeof names);
        return api__fail(e, API_E_INVALID_ARGUMENT, "model",
                         "model \"%s\" is not loaded (loaded: %s; GET /models lists them, "
                         "--model NAME=DIR or NAME=FILE.safetensors loads one)",
                         api__echo(echo, sizeof echo, json_string_value(v)), names);
    }
    if (model_brings(root, rq->model, e)) return -1;
    rq->cfg = rq->model->cfg;
    return check_fields(root, rq->cfg.arch, e);
}

/* The architecture ("module"), its config fields, the parameters' source. */
static int read_config(const json_t *root, model_rq *rq, api_err *e) {
    attn_arch arch;
    return api__model_arch_read(root, &arch, e) || check_fields(root, arch, e) ||
           api__model_config_read(root, arch, &rq->cfg, e) ||
           api__params_source(root, attn_arch_ctor(arch), &rq->params, e);
}

/* "ablate", "patch" and "logit_lens" (api/inside/), with what they check
 * against: the config, the ids' shape, the tokenizer. */
static int inside_parse(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    inside_ctx ctx = {.cfg = rq->cfg, .batched = rq->batched, .B = rq->B, .T = rq->T,
                      .training = rq->training, .tok = rq->tok, .text_flags = rq->text_flags,
                      .mask = rq->mask, .in = rq->in};
    int rc = api__inside_parse(root, lim, &ctx, e) || api__inside_neuron_parse(root, &ctx, e) ? -1 : 0;
    rq->in = ctx.in; /* what it read, and what it holds on failure, freed with rq */
    return rc;
}

int api__model_parse(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    if (!json_is_object(root))
        return api__fail(e, API_E_INVALID_TYPE, NULL, "the request body must be a JSON object");
    size_t budget = lim && lim->max_elements ? lim->max_elements : ATTN_MAX_ELEMENTS;
    const json_t *model = api__field(root, "model");
    if ((model ? read_model(root, model, lim, rq, e) : read_config(root, rq, e)) ||
        read_tokenizer(root, lim, rq, e) ||
        (api__field(root, "text") ? read_text(root, lim, rq, e) : api__model_ids_read(root, rq, &budget, e)) ||
        read_return(root, rq, e) || read_layers(root, rq, e) || read_options(root, lim, rq, e) ||
        api__model_gen_parse(root, lim, rq, e) || inside_parse(root, lim, rq, e))
        return -1;
    /* the captures are sized for the prompt, a generation's forward runs over
     * the final text */
    const inside_rq *in = &rq->in;
    if (rq->gen && (in->n_hooks || in->n_ablate || in->patch || in->lens_k || in->analyses))
        return api__fail(e, API_E_INVALID_ARGUMENT, "generate",
                         "generate does not combine with hook names in return, ablate, patch, "
                         "logit_lens or analysis: send the written text (the reply's idx) again "
                         "with them");
    if (api__model_enc_parse(root, rq, e)) return -1;
    /* the maps' selection against the model's heads and the tokens (the
     * final text's at most with generate) */
    return api__select_check(&rq->sel, rq->cfg.n_head, rq->gen ? rq->gen->T_max : rq->T, "model", e);
}
