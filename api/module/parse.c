/* parse.c - a request object into an api_request: the module and its
 * constructor arguments (attn_config), the input tensors, masks and options.
 * A JSON null is the same as an absent field (Python's None). */
#include "api/module/module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ==== Module and field names ============================================== */

static int pick_module(api_endpoint ep, const json_t *root, attn_module *m, api_err *e) {
    attn_module mods[ATTN_MODULE_COUNT];
    int n = api__endpoint_modules(ep, mods);
    if (n == 0) return api__fail(e, API_E_NOT_FOUND, NULL, "unknown endpoint %d", (int)ep);
    const json_t *v = api__field(root, "module");
    if (v == NULL) {
        *m = mods[0];
        return 0;
    }
    if (!json_is_string(v)) return api__field_wrong_type(e, "module", v, "a string");
    attn_module want;
    if (attn_module_from_name(json_string_value(v), &want) == ATTN_OK)
        for (int i = 0; i < n; i++)
            if (mods[i] == want) {
                *m = want;
                return 0;
            }
    char list[256] = "", echo[API_ECHO_MAX + 4];
    for (int i = 0; i < n; i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s\"%s\"", i ? ", " : "", attn_module_name(mods[i]));
    }
    return api__fail(e, API_E_INVALID_ARGUMENT, "module", "module \"%s\" is not served by %s, which takes %s",
                     api__echo(echo, sizeof echo, json_string_value(v)), api_endpoint_path(ep), list);
}

static int check_fields(const json_t *root, attn_module m, api_err *e) {
    const char *key = api__unknown_key(root, api__module_fields(m));
    if (key == NULL) return 0;
    char echo[API_ECHO_MAX + 4];
    api__echo(echo, sizeof echo, key);
    for (int o = 0; o < ATTN_MODULE_COUNT; o++) /* a field of another module */
        if (api__has_field(api__module_fields((attn_module)o), key))
            return api__fail(e, API_E_UNKNOWN_FIELD, echo, "%s does not take \"%s\"",
                             attn_module_name(m), echo);
    return api__fail(e, API_E_UNKNOWN_FIELD, echo, "unknown field \"%s\"", echo);
}

/* ==== Tensors ============================================================== */

/* inputs: [T][d_in] or [B][T][d_in] */
static int read_inputs(const json_t *root, api_request *rq, size_t *budget, api_err *e) {
    const json_t *v = api__field(root, "inputs");
    if (v == NULL)
        return api__fail(e, API_E_MISSING_FIELD, "inputs",
                         "inputs are required: [T][d_in] or [B][T][d_in] token embeddings");
    if (api__tensor_read(v, "inputs", 2, 3, API_VAL_NUMBER, budget, &rq->x, e)) return -1;
    rq->batched = rq->x.rank == 3;
    int off = rq->batched;
    rq->cfg.batch = off ? rq->x.shape[0] : 1;
    rq->cfg.tokens = rq->x.shape[off];
    rq->cfg.d_in = rq->x.shape[off + 1];
    return 0;
}

/* torch.nn.MultiheadAttention cross-attention: key [B][S][kdim], value [B][S][vdim] */
static int read_kv_inputs(const json_t *root, api_request *rq, size_t *budget, api_err *e) {
    const json_t *k = api__field(root, "key"), *v = api__field(root, "value");
    if (v && !k)
        return api__fail(e, API_E_MISSING_FIELD, "key", "value needs key (the keys' inputs)");
    int r = rq->x.rank;
    if (k && api__tensor_read(k, "key", r, r, API_VAL_NUMBER, budget, &rq->x_key, e)) return -1;
    if (v && api__tensor_read(v, "value", r, r, API_VAL_NUMBER, budget, &rq->x_value, e)) return -1;
    if (!k) return 0;
    const api_tensor *kt = &rq->x_key, *vt = v ? &rq->x_value : &rq->x_key;
    if (r == 3 && kt->shape[0] != rq->cfg.batch)
        return api__fail(e, API_E_INVALID_SHAPE, "key", "key has batch %d, inputs have %d",
                         kt->shape[0], rq->cfg.batch);
    if (v && (vt->shape[0] != kt->shape[0] || vt->shape[r - 2] != kt->shape[r - 2]))
        return api__fail(e, API_E_INVALID_SHAPE, "value",
                         "value must have the key's batch and length (key has %d tokens, value %d)",
                         kt->shape[r - 2], vt->shape[r - 2]);
    rq->cfg.kv_tokens = kt->shape[r - 2];
    int kdim = kt->shape[r - 1], vdim = vt->shape[r - 1];
    if (rq->cfg.kdim && rq->cfg.kdim != kdim)
        return api__fail(e, API_E_INVALID_SHAPE, "kdim", "kdim is %d, key has width %d",
                         rq->cfg.kdim, kdim);
    if (rq->cfg.vdim && rq->cfg.vdim != vdim)
        return api__fail(e, API_E_INVALID_SHAPE, "vdim", "vdim is %d, value has width %d",
                         rq->cfg.vdim, vdim);
    rq->cfg.kdim = kdim;
    rq->cfg.vdim = vdim;
    return 0;
}

/* SDPA: query [B][H][L][E], key [B][Hkv][S][E], value [B][Hkv][S][Ev]; rank 3
 * drops B, rank 2 drops B and H. */
static int read_qkv(const json_t *root, api_request *rq, size_t *budget, api_err *e) {
    static const char *const names[3] = {"query", "key", "value"};
    api_tensor *t[3] = {&rq->query, &rq->key, &rq->value};
    for (int i = 0; i < 3; i++) {
        const json_t *v = api__field(root, names[i]);
        if (v == NULL)
            return api__fail(e, API_E_MISSING_FIELD, names[i],
                             "query, key and value are required: [B][H][L][E], [B][Hkv][S][E], "
                             "[B][Hkv][S][Ev] (or without B, or without B and H)");
        int min = i ? t[0]->rank : 2, max = i ? t[0]->rank : 4;
        if (api__tensor_read(v, names[i], min, max, API_VAL_NUMBER, budget, t[i], e)) return -1;
    }
    int r = t[0]->rank;
    int s[3][4];
    for (int i = 0; i < 3; i++) { /* as [B][H][rows][width] */
        for (int d = 0; d < 4 - r; d++) s[i][d] = 1;
        memcpy(s[i] + (4 - r), t[i]->shape, (size_t)r * sizeof(int));
    }
    if (s[1][0] != s[0][0] || s[2][0] != s[0][0])
        return api__fail(e, API_E_INVALID_SHAPE, s[1][0] != s[0][0] ? "key" : "value",
                         "query, key and value must have the same batch");
    if (s[1][3] != s[0][3])
        return api__fail(e, API_E_INVALID_SHAPE, "key",
                         "key has width %d, query has %d: they must match", s[1][3], s[0][3]);
    if (s[2][1] != s[1][1] || s[2][2] != s[1][2])
        return api__fail(e, API_E_INVALID_SHAPE, "value",
                         "value must have the key's heads and length (key [%d][%d], value [%d][%d])",
                         s[1][1], s[1][2], s[2][1], s[2][2]);
    rq->batched = r == 4;
    rq->headed = r >= 3;
    rq->cfg.batch = s[0][0];
    rq->cfg.num_heads = s[0][1];
    rq->cfg.tokens = s[0][2];
    rq->cfg.d_in = s[0][3];
    rq->cfg.kv_heads = s[1][1];
    rq->cfg.kv_tokens = s[1][2];
    rq->cfg.vdim = s[2][3];
    return 0;
}

/* attn_mask [L][S] or [B][L][S]: booleans/0-1 (1 = masked out) or additive */
static int read_attn_mask(const json_t *root, api_request *rq, size_t *budget, api_err *e) {
    const json_t *v = api__field(root, "attn_mask");
    if (v == NULL) return 0;
    api_tensor *t = &rq->attn_mask;
    if (api__tensor_read(v, "attn_mask", 2, 3, API_VAL_MASK, budget, t, e)) return -1;
    int L = rq->cfg.tokens, S = rq->cfg.kv_tokens ? rq->cfg.kv_tokens : L, B = rq->cfg.batch;
    int r = t->rank;
    if (t->shape[r - 2] != L || t->shape[r - 1] != S || (r == 3 && t->shape[0] != B)) {
        char have[96];
        api__shape_str(have, sizeof have, r, t->shape);
        return api__fail(e, API_E_INVALID_SHAPE, "attn_mask",
                         "attn_mask has shape %s, expected [%d, %d] or [%d, %d, %d]", have, L, S, B,
                         L, S);
    }
    if (t->all_binary) {
        rq->mask_bool = malloc(t->count);
        if (rq->mask_bool == NULL)
            return api__fail(e, API_E_OUT_OF_MEMORY, "attn_mask", "cannot allocate attn_mask");
        for (size_t i = 0; i < t->count; i++) rq->mask_bool[i] = t->data[i] != 0.0f;
    }
    return 0;
}

/* key_padding_mask [B][S], or [S] for every sequence */
static int read_kpm(const json_t *root, api_request *rq, size_t *budget, api_err *e) {
    const json_t *v = api__field(root, "key_padding_mask");
    if (v == NULL) return 0;
    api_tensor *t = &rq->kpm;
    if (api__tensor_read(v, "key_padding_mask", 1, 2, API_VAL_BOOL, budget, t, e)) return -1;
    int S = rq->cfg.kv_tokens ? rq->cfg.kv_tokens : rq->cfg.tokens, B = rq->cfg.batch;
    if (t->shape[t->rank - 1] != S || (t->rank == 2 && t->shape[0] != B)) {
        char have[96];
        api__shape_str(have, sizeof have, t->rank, t->shape);
        return api__fail(e, API_E_INVALID_SHAPE, "key_padding_mask",
                         "key_padding_mask has shape %s, expected [%d, %d] or [%d]", have, B, S, S);
    }
    size_t n = (size_t)B * (size_t)S;
    rq->kpm_bool = malloc(n);
    if (rq->kpm_bool == NULL)
        return api__fail(e, API_E_OUT_OF_MEMORY, "key_padding_mask", "cannot allocate the mask");
    for (size_t i = 0; i < n; i++) rq->kpm_bool[i] = t->data[t->rank == 2 ? i : i % (size_t)S] != 0.0f;
    return 0;
}

/* ==== Options ============================================================== */

static int read_tokens(const json_t *root, api_request *rq, api_err *e) {
    const json_t *v = api__field(root, "tokens");
    if (v == NULL) return 0;
    if (!json_is_array(v)) return api__field_wrong_type(e, "tokens", v, "an array of strings");
    size_t n = json_array_size(v), bytes = 1;
    if (n != (size_t)rq->cfg.tokens)
        return api__fail(e, API_E_INVALID_SHAPE, "tokens", "tokens has %zu labels, the %s have %d tokens",
                         n, attn_module_has(rq->cfg.module, ATTN_MOD_QKV_INPUTS) ? "queries" : "inputs",
                         rq->cfg.tokens);
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(v, i);
        if (!json_is_string(s)) {
            char name[48];
            snprintf(name, sizeof name, "tokens[%zu]", i);
            return api__field_wrong_type(e, name, s, "a string");
        }
        bytes += strlen(json_string_value(s)) + 1;
    }
    rq->tokens = malloc(bytes);
    if (rq->tokens == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, "tokens", "cannot copy tokens");
    char *o = rq->tokens;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(v, i));
        size_t len = strlen(s) + 1;
        memcpy(o, s, len);
        o += len;
    }
    rq->n_tokens = (int)n;
    return 0;
}

static int read_return(const json_t *root, api_request *rq, api_err *e) {
    const char *names[API_OUT_COUNT];
    for (int k = 0; k < API_OUT_COUNT; k++) names[k] = api__outputs[k].name;
    int rc = api__return_read(root, names, API_OUT_COUNT, &rq->returns, NULL, e);
    if (rc == 0) {
        rq->returns = 1u << API_OUT_CONTEXT | 1u << API_OUT_ATTN_WEIGHTS;
        if (rq->tokens) rq->returns |= 1u << API_OUT_TOKENS;
    }
    return rc < 0 ? -1 : 0;
}

/* ==== Constructor arguments ================================================ */

static int width_matches(const json_t *root, const char *name, int width, api_err *e) {
    int given = 0;
    int rc = api__field_int(root, name, 1, INT32_MAX, &given, e);
    if (rc < 0) return -1;
    if (rc == 1 && given != width)
        return api__fail(e, API_E_INVALID_SHAPE, name, "%s is %d, the inputs have width %d", name,
                         given, width);
    return 0;
}

static int read_dropout(const json_t *root, attn_config *c, api_err *e) {
    double p = 0.0;
    if (api__field_number(root, "dropout", &p, e) < 0) return -1;
    if (!(p >= 0.0 && p <= 1.0))
        return api__fail(e, API_E_INVALID_ARGUMENT, "dropout", "dropout must be in [0, 1], got %g", p);
    c->dropout = p;
    return 0;
}

/* The constructor's arguments, under the names the module's row gives them
 * (core/attention.h ATTN_MODULE_MAP); api__module_fields has already
 * rejected the fields the module does not take. */
static int read_constructor(const json_t *root, api_request *rq, api_err *e) {
    attn_config *c = &rq->cfg;
    const attn_module_info *mod = attn_module_get(c->module);
    /* F.scaled_dot_product_attention applies dropout_p whenever it is set */
    if (mod->flags & ATTN_MOD_FUNCTIONAL) c->training = 1;
    if (mod->flags & ATTN_MOD_BIAS) c->bias = 1;
    if ((mod->flags & ATTN_MOD_PROJECTED) && width_matches(root, mod->in_name, c->d_in, e)) return -1;
    if (mod->out_name && api__field_required_int(root, mod->out_name, 1, INT32_MAX, &c->d_out, e)) return -1;
    if (mod->heads_name && api__field_required_int(root, mod->heads_name, 1, INT32_MAX, &c->num_heads, e)) return -1;
    if (mod->bias_name && api__field_bool(root, mod->bias_name, &c->bias, e) < 0) return -1;
    if (mod->context_name &&
        api__field_int(root, mod->context_name, 1, INT32_MAX, &c->context_length, e) < 0)
        return -1;
    if ((mod->flags & ATTN_MOD_CROSS) && (api__field_int(root, "kdim", 1, INT32_MAX, &c->kdim, e) < 0 ||
                                          api__field_int(root, "vdim", 1, INT32_MAX, &c->vdim, e) < 0))
        return -1;
    return read_dropout(root, c, e);
}

static int read_options(const json_t *root, const api_limits *lim, api_request *rq, api_err *e) {
    attn_config *c = &rq->cfg;
    attn_module m = c->module;
    static const char *const norms[] = {"softmax", "sum", NULL};
    static const char *const methods[] = {"neg_inf", "renorm", NULL};
    int norm = 0, method = 0;
    double scale = 0.0;
    c->causal = attn_module_has(m, ATTN_MOD_CAUSAL);
    if (api__field_bool(root, "causal", &c->causal, e) < 0 || api__field_bool(root, "training", &c->training, e) < 0 ||
        api__field_choice(root, "normalization", norms, &norm, e) < 0 ||
        api__field_choice(root, "mask_method", methods, &method, e) < 0 ||
        api__options_read(root, lim, API_MODULE_FORMATS, &rq->fmt, e) < 0 ||
        api__field_bool(root, "average_attn_weights", &rq->average, e) < 0 ||
        api__select_parse(root, &rq->sel, e) < 0)
        return -1;
    c->normalization = (attn_norm)norm;
    c->mask_method = (attn_mask_method)method;
    int rc = api__field_number(root, "scale", &scale, e);
    if (rc < 0) return -1;
    if (rc == 1) {
        if (!(scale >= -3.4e38 && scale <= 3.4e38))
            return api__fail(e, API_E_NON_FINITE, "scale", "scale is beyond the float32 range");
        c->has_scale = 1;
        c->scale = (float)scale;
    }
    const json_t *ds = api__field(root, "dropout_seed");
    if (ds) {
        if (!json_is_integer(ds)) return api__field_wrong_type(e, "dropout_seed", ds, "an integer");
        c->has_dropout_seed = 1;
        c->dropout_seed = (uint64_t)json_integer_value(ds);
    }
    return 0;
}

/* ==== The request ========================================================== */

int api__request_parse(api_endpoint ep, const json_t *root, const api_limits *lim,
                       api_request *rq, api_err *e) {
    *rq = (api_request){.ep = ep};
    if (!json_is_object(root))
        return api__fail(e, API_E_INVALID_TYPE, NULL, "the request body must be a JSON object");
    attn_module m;
    if (pick_module(ep, root, &m, e) || check_fields(root, m, e)) return -1;
    rq->cfg.module = m;
    rq->multi_head = attn_module_has(m, ATTN_MOD_MULTI_HEAD);
    size_t budget = lim && lim->max_elements ? lim->max_elements : ATTN_MAX_ELEMENTS;

    if (attn_module_has(m, ATTN_MOD_QKV_INPUTS)) {
        if (read_qkv(root, rq, &budget, e)) return -1;
        rq->multi_head = rq->headed;
    } else if (read_inputs(root, rq, &budget, e)) {
        return -1;
    }
    if (read_constructor(root, rq, e)) return -1;
    if (attn_module_has(m, ATTN_MOD_CROSS) && read_kv_inputs(root, rq, &budget, e)) return -1;
    if (read_options(root, lim, rq, e) || read_attn_mask(root, rq, &budget, e) ||
        read_kpm(root, rq, &budget, e) || read_tokens(root, rq, e) || read_return(root, rq, e))
        return -1;
    if (api__has_field(api__module_fields(m), "init") &&
        api__params_source(root, "the module", &rq->params, e))
        return -1;
    return 0;
}

void api__request_free(api_request *rq) {
    if (rq == NULL) return;
    api_tensor *t[] = {&rq->x, &rq->x_key, &rq->x_value, &rq->query, &rq->key, &rq->value,
                       &rq->attn_mask, &rq->kpm};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) api__tensor_free(t[i]);
    free(rq->mask_bool);
    free(rq->kpm_bool);
    free(rq->tokens);
    api__select_free(&rq->sel);
    *rq = (api_request){0};
}
