/* parse.c - the fields that look inside a POST /model run:
 *
 *   "return": [..., "blocks.3.attn.hook_z", "blocks.*.hook_resid_pre",
 *              "ln_final.hook_normalized"]   TransformerLens's hook names
 *   "ablate": [{"layer": 0, "head": 1, "method": "zero" | "mean"}]
 *   "patch": {"corrupted_idx": [...] | "corrupted_text": "...",
 *             "site": "attn_head" | "resid_pre" | "attn_out" | "mlp_out"
 *                     | "resid_mid" | "resid_post",
 *             "logit_diff": [a, b]}     (ids, or texts of one token each)
 *   "logit_lens": {"k": 5}
 *   "analysis": ["entropy", ...]  (analysis.c)
 *
 * Every layer, head, id and length is checked against the model here, so
 * that the steps after the parse meet no bad value.
 */
#include "api/bpe/bpe.h"
#include "api/inside/inside.h"
#include "api/tokens/tokens.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const inside_site_info sites[INSIDE_SITE_COUNT] = {
#define INSIDE_SITE_ROW(id, name, hook, per_head) [INSIDE_SITE_##id] = {name, hook, per_head},
    INSIDE_SITE_MAP(INSIDE_SITE_ROW)
#undef INSIDE_SITE_ROW
};

const inside_site_info *api__inside_site(inside_site s) { return &sites[s]; }

void api__inside_rq_free(inside_rq *in) {
    free(in->hooks);
    free(in->ablate);
    free(in->corrupted);
    *in = (inside_rq){0};
}

/* ==== Hooks in "return" =================================================== */

static int hook_like(const char *name) {
    return strncmp(name, "blocks.", 7) == 0 || strncmp(name, "ln_final.", 9) == 0 ||
           strstr(name, "hook_") != NULL;
}

static int add_hook(inside_rq *in, int layer, attn_hook hook, api_err *e) {
    if (in->n_hooks == in->cap_hooks) {
        int cap = in->cap_hooks ? 2 * in->cap_hooks : 16;
        inside_hook *h = realloc(in->hooks, (size_t)cap * sizeof *h);
        if (h == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, "return", "out of memory");
        in->hooks = h, in->cap_hooks = cap;
    }
    in->hooks[in->n_hooks++] = (inside_hook){layer, hook};
    return 0;
}

/* "a, b, ..." of the block hooks the model has. */
static void hook_list(const attn_lm_plan *p, char *out, size_t size) {
    size_t n = 0;
    out[0] = '\0';
    for (int h = 0; h < ATTN_HOOK_COUNT && n < size; h++)
        if (attn_hook_get((attn_hook)h)->per_block && attn_lm_has_hook(p, (attn_hook)h))
            n += (size_t)snprintf(out + n, size - n, "%s%s", n ? ", " : "",
                                  attn_hook_get((attn_hook)h)->name);
}

int api__inside_return_name(inside_rq *in, const attn_lm_plan *p, const char *name, int at,
                            api_err *e) {
    if (!hook_like(name)) return 0;
    char field[48], echo[API_ECHO_MAX + 4], list[600];
    snprintf(field, sizeof field, "return[%d]", at);
    api__echo(echo, sizeof echo, name);
    int layer, n_layer = p->n_layer;
    attn_hook hook;
    if (attn_hook_parse(name, &layer, &hook) != ATTN_OK || !attn_lm_has_hook(p, hook)) {
        hook_list(p, list, sizeof list);
        return api__fail(e, API_E_INVALID_ARGUMENT, field,
                         "%s \"%s\" is not a hook of this %s in TransformerLens's names: "
                         "blocks.L.NAME (L a layer, or * for every layer) with NAME one of %s; "
                         "or ln_final.hook_normalized", field, echo, attn_arch_name(p->cfg.arch),
                         list);
    }
    if (layer >= n_layer)
        return api__fail(e, API_E_INVALID_ARGUMENT, field,
                         "%s \"%s\": the model has %d blocks (layers 0 to %d)", field, echo,
                         n_layer, n_layer - 1);
    if (layer >= 0) return add_hook(in, layer, hook, e) ? -1 : 1;
    for (int l = 0; l < n_layer; l++)
        if (add_hook(in, l, hook, e)) return -1;
    return 1;
}

/* Forward order: block by block, each block's hooks in ATTN_HOOK_MAP's
 * order, the model's own (ln_final) last. */
static long forward_key(const inside_hook *h) {
    return attn_hook_get(h->hook)->per_block ? (long)h->layer * ATTN_HOOK_COUNT + h->hook
                                             : 0x7fffffffL;
}

static int cmp_hooks(const void *a, const void *b) {
    long x = forward_key(a), y = forward_key(b);
    return (x > y) - (x < y);
}

int api__inside_hooks_sort(inside_rq *in, api_err *e) {
    (void)e;
    if (in->n_hooks == 0) return 0;
    qsort(in->hooks, (size_t)in->n_hooks, sizeof *in->hooks, cmp_hooks);
    int n = 1;
    for (int i = 1; i < in->n_hooks; i++)
        if (cmp_hooks(&in->hooks[i], &in->hooks[n - 1]) != 0) in->hooks[n++] = in->hooks[i];
    in->n_hooks = n;
    return 0;
}

/* ==== Shared checks ======================================================= */

/* The keys of obj (at `where`) among allowed. */
static int check_keys(const json_t *obj, const char *where, const char *const *allowed,
                      const char *list, api_err *e) {
    const char *key = api__unknown_key(obj, allowed);
    if (key == NULL) return 0;
    char echo[API_ECHO_MAX + 4], field[API_ECHO_MAX + 48];
    snprintf(field, sizeof field, "%s.%s", where, api__echo(echo, sizeof echo, key));
    return api__fail(e, API_E_UNKNOWN_FIELD, field, "unknown field \"%s\" (%s takes %s)", field,
                     where, list);
}

/* An integer member `name` of obj in [0, limit): 0, or -1 (absent too). */
static int member_index(const json_t *obj, const char *where, const char *name, int limit,
                        const char *what, int *out, api_err *e) {
    char field[64];
    snprintf(field, sizeof field, "%s.%s", where, name);
    const json_t *v = api__field(obj, name);
    if (v == NULL) return api__fail(e, API_E_MISSING_FIELD, field, "%s is required", field);
    if (!json_is_integer(v)) return api__field_wrong_type(e, field, v, "an integer");
    long long x = json_integer_value(v);
    if (x < 0 || x >= limit)
        return api__fail(e, API_E_INVALID_ARGUMENT, field, "%s is %lld: the model's %s are 0 to %d",
                         field, x, what, limit - 1);
    *out = (int)x;
    return 0;
}

/* ==== "ablate" ============================================================ */

static int read_ablation(const json_t *o, int i, const attn_lm_config *c, attn_lm_ablate *a,
                         api_err *e) {
    static const char *const keys[] = {"layer", "head", "method", NULL};
    static const char *const methods[] = {"zero", "mean", NULL};
    char where[32];
    snprintf(where, sizeof where, "ablate[%d]", i);
    *a = (attn_lm_ablate){0}; /* every batch row */
    if (!json_is_object(o))
        return api__field_wrong_type(e, where, o, "an object {\"layer\", \"head\", \"method\"}");
    if (check_keys(o, where, keys, "layer, head and method", e) ||
        member_index(o, where, "layer", c->n_layer, "layers", &a->layer, e) ||
        member_index(o, where, "head", c->n_head, "heads", &a->head, e))
        return -1;
    char field[48], echo[API_ECHO_MAX + 4];
    snprintf(field, sizeof field, "%s.method", where);
    const json_t *v = api__field(o, "method");
    a->method = ATTN_ABLATE_ZERO;
    if (v == NULL) return 0;
    if (!json_is_string(v)) return api__field_wrong_type(e, field, v, "\"zero\" or \"mean\"");
    for (int m = 0; methods[m]; m++)
        if (strcmp(json_string_value(v), methods[m]) == 0) {
            a->method = m ? ATTN_ABLATE_MEAN : ATTN_ABLATE_ZERO;
            return 0;
        }
    return api__fail(e, API_E_INVALID_ARGUMENT, field, "%s \"%s\" is not \"zero\" or \"mean\"",
                     field, api__echo(echo, sizeof echo, json_string_value(v)));
}

static int read_ablate(const json_t *root, inside_ctx *rq, api_err *e) {
    const json_t *v = api__field(root, "ablate");
    if (v == NULL) return 0;
    if (!json_is_array(v))
        return api__field_wrong_type(e, "ablate", v, "an array of {\"layer\", \"head\", \"method\"}");
    size_t n = json_array_size(v);
    if (n == 0) return 0;
    inside_rq *in = &rq->in;
    if ((in->ablate = malloc(n * sizeof *in->ablate)) == NULL)
        return api__fail(e, API_E_OUT_OF_MEMORY, "ablate", "out of memory");
    for (size_t i = 0; i < n; i++, in->n_ablate++)
        if (read_ablation(json_array_get(v, i), (int)i, &rq->cfg, &in->ablate[i], e)) return -1;
    /* by layer, keeping the order within a layer (a run from block l takes
     * the ablations of blocks l on: a suffix) */
    for (int i = 1; i < in->n_ablate; i++) {
        attn_lm_ablate x = in->ablate[i];
        int j = i;
        for (; j > 0 && in->ablate[j - 1].layer > x.layer; j--) in->ablate[j] = in->ablate[j - 1];
        in->ablate[j] = x;
    }
    return 0;
}

/* ==== "logit_lens" ======================================================== */

static int read_lens(const json_t *root, inside_ctx *rq, api_err *e) {
    static const char *const keys[] = {"k", NULL};
    const json_t *v = api__field(root, "logit_lens");
    if (v == NULL) return 0;
    if (!json_is_object(v)) return api__field_wrong_type(e, "logit_lens", v, "an object {\"k\": N}");
    if (check_keys(v, "logit_lens", keys, "k", e)) return -1;
    if (rq->cfg.n_layer < 1)
        return api__fail(e, API_E_INVALID_ARGUMENT, "logit_lens",
                         "logit_lens reads each block's input: the model has no block");
    rq->in.lens_k = rq->cfg.vocab_size < 5 ? rq->cfg.vocab_size : 5;
    const json_t *k = api__field(v, "k");
    if (k == NULL) return 0;
    if (!json_is_integer(k)) return api__field_wrong_type(e, "logit_lens.k", k, "an integer");
    long long x = json_integer_value(k);
    if (x < 1 || x > rq->cfg.vocab_size)
        return api__fail(e, API_E_INVALID_ARGUMENT, "logit_lens.k",
                         "logit_lens.k is %lld: from 1 to vocab_size %d", x, rq->cfg.vocab_size);
    rq->in.lens_k = (int)x;
    return 0;
}

/* ==== "patch" ============================================================= */

/* The corrupted ids must have idx's shape: [T], or [B][T]. */
static int read_corrupted_idx(const json_t *v, const api_limits *lim, inside_ctx *rq, api_err *e) {
    static const char *const f = "patch.corrupted_idx";
    size_t budget = lim && lim->max_elements ? lim->max_elements : ATTN_MAX_ELEMENTS;
    api_tensor t;
    if (api__tensor_read(v, f, 1, 2, API_VAL_NUMBER, &budget, &t, e)) return -1;
    int rc = 0;
    if (t.rank != (rq->batched ? 2 : 1) || t.shape[t.rank - 1] != rq->T ||
        (rq->batched && t.shape[0] != rq->B)) {
        char got[64], want[64];
        int shape[2] = {rq->B, rq->T};
        api__shape_str(got, sizeof got, t.rank, t.shape);
        api__shape_str(want, sizeof want, rq->batched ? 2 : 1, rq->batched ? shape : shape + 1);
        rc = api__fail(e, API_E_INVALID_SHAPE, f,
                       "%s is %s and the clean ids %s: the two runs need the same shape", f, got,
                       want);
    } else if ((rq->in.corrupted = malloc(t.count * sizeof(int32_t))) == NULL) {
        rc = api__fail(e, API_E_OUT_OF_MEMORY, f, "out of memory");
    }
    for (size_t i = 0; rc == 0 && i < t.count; i++) {
        float x = t.data[i];
        if (!(x >= 0.0f && x < (float)rq->cfg.vocab_size && x == (float)(int32_t)x))
            rc = api__fail(e, API_E_INVALID_ARGUMENT, f,
                           "%s[%zu] is %g: token ids are integers in [0, vocab_size %d)", f, i,
                           (double)x, rq->cfg.vocab_size);
        else
            rq->in.corrupted[i] = (int32_t)x;
    }
    api__tensor_free(&t);
    return rc;
}

/* The tokenizer's ids of text into *ids (n of them); field names it. */
static int encode(const inside_ctx *rq, const char *field, const json_t *v, int32_t **ids, size_t *n,
                  api_err *e) {
    if (!json_is_string(v)) return api__field_wrong_type(e, field, v, "a string");
    if (rq->tok == NULL)
        return api__tokenizer_missing(field, e);
    int rc = api_bpe_encode_ex(rq->tok->bpe, json_string_value(v), json_string_length(v),
                               rq->text_flags, ids, n);
    if (rc == API_BPE_ENOMEM) return api__fail(e, API_E_OUT_OF_MEMORY, field, "out of memory");
    if (rc) return api__fail(e, API_E_INVALID_ARGUMENT, field, "%s: %s", field, api_bpe_strerror(rc));
    for (size_t i = 0; i < *n; i++)
        if ((*ids)[i] >= rq->cfg.vocab_size)
            return api__fail(e, API_E_INVALID_ARGUMENT, field,
                             "token %zu of %s is id %d, not below vocab_size %d", i, field,
                             (int)(*ids)[i], rq->cfg.vocab_size);
    return 0;
}

static int read_corrupted_text(const json_t *v, inside_ctx *rq, api_err *e) {
    static const char *const f = "patch.corrupted_text";
    size_t n = 0;
    if (encode(rq, f, v, &rq->in.corrupted, &n, e)) return -1;
    if (rq->batched || n != (size_t)rq->T)
        return api__fail(e, API_E_INVALID_SHAPE, f,
                         "%s is %zu tokens and the clean input %s%d: the two runs need the same "
                         "length", f, n, rq->batched ? "a batch of " : "", rq->T);
    return 0;
}

/* logit_diff[i]: a token id, or a text of exactly one token. */
static int read_diff_token(const json_t *x, int i, const inside_ctx *rq, int32_t *out, api_err *e) {
    char f[32];
    snprintf(f, sizeof f, "patch.logit_diff[%d]", i);
    if (json_is_string(x)) {
        int32_t *ids = NULL;
        size_t n = 0;
        int rc = encode(rq, f, x, &ids, &n, e);
        if (rc == 0 && n != 1)
            rc = api__fail(e, API_E_INVALID_ARGUMENT, f,
                           "%s is %zu tokens: a logit difference compares single tokens", f, n);
        if (rc == 0) *out = ids[0];
        free(ids);
        return rc;
    }
    if (!json_is_integer(x)) return api__field_wrong_type(e, f, x, "a token id or a token's text");
    long long id = json_integer_value(x);
    if (id < 0 || id >= rq->cfg.vocab_size)
        return api__fail(e, API_E_INVALID_ARGUMENT, f, "%s is %lld: ids are in [0, vocab_size %d)",
                         f, id, rq->cfg.vocab_size);
    *out = (int32_t)id;
    return 0;
}

static int read_site(const json_t *p, inside_rq *in, api_err *e) {
    const json_t *v = api__field(p, "site");
    in->site = INSIDE_SITE_ATTN_HEAD;
    if (v == NULL) return 0;
    if (!json_is_string(v)) return api__field_wrong_type(e, "patch.site", v, "a string");
    char list[160] = "", echo[API_ECHO_MAX + 4];
    for (int s = 0; s < INSIDE_SITE_COUNT; s++) {
        if (strcmp(json_string_value(v), sites[s].name) == 0) {
            in->site = (inside_site)s;
            return 0;
        }
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s\"%s\"", s ? ", " : "", sites[s].name);
    }
    return api__fail(e, API_E_INVALID_ARGUMENT, "patch.site", "patch.site \"%s\" is not one of %s",
                     api__echo(echo, sizeof echo, json_string_value(v)), list);
}

static int read_patch(const json_t *p, const api_limits *lim, inside_ctx *rq, api_err *e) {
    static const char *const keys[] = {"corrupted_idx", "corrupted_text", "site", "logit_diff", NULL};
    if (!json_is_object(p))
        return api__field_wrong_type(e, "patch", p, "an object {\"corrupted_idx\" or "
                                     "\"corrupted_text\", \"site\", \"logit_diff\"}");
    if (check_keys(p, "patch", keys, "corrupted_idx or corrupted_text, site and logit_diff", e))
        return -1;
    if (rq->training)
        return api__fail(e, API_E_INVALID_ARGUMENT, "patch",
                         "patching runs the model in eval mode: leave \"training\" out");
    const json_t *idx = api__field(p, "corrupted_idx"), *text = api__field(p, "corrupted_text");
    if ((idx != NULL) == (text != NULL))
        return api__fail(e, idx ? API_E_INVALID_ARGUMENT : API_E_MISSING_FIELD, "patch.corrupted_idx",
                         "patch needs the corrupted input: corrupted_idx or corrupted_text (one)");
    if ((idx ? read_corrupted_idx(idx, lim, rq, e) : read_corrupted_text(text, rq, e)) ||
        read_site(p, &rq->in, e))
        return -1;
    const json_t *d = api__field(p, "logit_diff");
    if (d == NULL)
        return api__fail(e, API_E_MISSING_FIELD, "patch.logit_diff",
                         "patch.logit_diff is required: [a, b], the metric logit[a] - logit[b] "
                         "at the last position");
    if (!json_is_array(d) || json_array_size(d) != 2)
        return api__field_wrong_type(e, "patch.logit_diff", d, "an array of two tokens [a, b]");
    for (int i = 0; i < 2; i++)
        if (read_diff_token(json_array_get(d, (size_t)i), i, rq, &rq->in.diff[i], e)) return -1;
    rq->in.patch = 1;
    return 0;
}

int api__inside_parse(const json_t *root, const api_limits *lim, inside_ctx *rq, api_err *e) {
    if (read_ablate(root, rq, e) || read_lens(root, rq, e) || api__inside_hooks_sort(&rq->in, e) ||
        api__inside_analysis_parse(root, rq, e))
        return -1;
    const json_t *p = api__field(root, "patch");
    return p ? read_patch(p, lim, rq, e) : 0;
}
