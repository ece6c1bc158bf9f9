/* gpt2.c - Hugging Face GPT-2 checkpoints (model.safetensors, or its
 * shards) into core's GPT2 (seed 003's layout, which core runs).
 *
 * The layout is transformers' GPT2Model / GPT2LMHeadModel state_dict:
 *
 *   [transformer.]wte.weight [V][C]         [transformer.]wpe.weight [P][C]
 *   [transformer.]h.N.ln_1.weight/bias [C]  h.N.attn.c_attn.weight [C][3C]
 *   h.N.attn.c_attn.bias [3C]               h.N.attn.c_proj.weight [C][C], bias [C]
 *   h.N.ln_2.weight/bias [C]                h.N.mlp.c_fc.weight [C][4C], bias [4C]
 *   h.N.mlp.c_proj.weight [4C][C], bias [C] [transformer.]ln_f.weight/bias [C]
 *   lm_head.weight [V][C] (optional: tied to wte.weight, so it must equal it)
 *   h.N.attn.bias, h.N.attn.masked_bias (buffers of older files: ignored)
 *
 * Weights of GPT-2's Conv1D are stored [in][out]; core computes nn.Linear
 * with [out][in] weights (seed 003's GPT2), so each is transposed once, here,
 * into core's one parameter buffer, in attn_lm_param_get's order (with
 * core's own attn.bias tril buffers), each held in the dtype the plan gives
 * it (--weights-dtype) in the same pass.
 *
 * The config comes from the shapes: vocab_size and n_embd from wte,
 * block_size (n_positions) from wpe, n_layer from the h.N blocks; n_head
 * from the hints (":heads=N", config.json), __metadata__'s "n_head", or
 * n_embd / 64 (GPT-2's head width: right for gpt2, gpt2-medium, -large and
 * -xl). The activation is gelu_new (or config.json's); dropout is GPT-2's
 * 0.1 (resid_pdrop), used only by requests with "training".
 */
#include "api/weights/weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const block_names[] = {
    "ln_1.weight",        "ln_1.bias",          "attn.c_attn.weight", "attn.c_attn.bias",
    "attn.c_proj.weight", "attn.c_proj.bias",   "ln_2.weight",        "ln_2.bias",
    "mlp.c_fc.weight",    "mlp.c_fc.bias",      "mlp.c_proj.weight",  "mlp.c_proj.bias",
    "attn.bias",          "attn.masked_bias",   NULL};

/* 1 if rest (a name without the prefix) belongs to the layout; the block
 * count grows to hold h.N. */
static int known_name(const char *rest, int *n_layer) {
    if (strncmp(rest, "h.", 2) != 0)
        return !strcmp(rest, "wte.weight") || !strcmp(rest, "wpe.weight") ||
               !strcmp(rest, "ln_f.weight") || !strcmp(rest, "ln_f.bias");
    const char *end;
    int l = api__ckpt_layer_number(rest + 2, &end);
    if (l < 0 || *end != '.') return 0;
    for (int k = 0; block_names[k]; k++)
        if (strcmp(end + 1, block_names[k]) == 0) {
            if (l + 1 > *n_layer) *n_layer = l + 1;
            return 1;
        }
    return 0;
}

/* Every tensor of the set belongs to the layout; counts the blocks. */
static int check_names(const api_st_set *set, const char *prefix, int *n_layer, char *why,
                       size_t size) {
    size_t pl = strlen(prefix);
    *n_layer = 0;
    for (int f = 0; f < set->count; f++)
        for (size_t i = 0; i < set->file[f].count; i++) {
            const char *name = set->file[f].tensors[i].name;
            if (strcmp(name, "lm_head.weight") == 0) continue;
            if (strncmp(name, prefix, pl) == 0 && known_name(name + pl, n_layer)) continue;
            return api__ckpt_fail(why, size, "tensor \"%.64s\" is not part of GPT-2's layout (wte, "
                                  "wpe, h.N.{ln_1,attn,ln_2,mlp}.*, ln_f, lm_head%s)",
                                  name, pl ? ", with the prefix \"transformer.\"" : "");
        }
    return 0;
}

/* The checkpoint's name of core's entry (seed 003 says mlp.fc, mlp.proj). */
static void hf_name(char *out, size_t size, const char *prefix, const char *core) {
    const char *fc = strstr(core, ".mlp.fc."), *proj = strstr(core, ".mlp.proj.");
    if (fc) snprintf(out, size, "%s%.*s.mlp.c_fc.%s", prefix, (int)(fc - core), core, fc + 8);
    else if (proj)
        snprintf(out, size, "%s%.*s.mlp.c_proj.%s", prefix, (int)(proj - core), core, proj + 10);
    else snprintf(out, size, "%s%s", prefix, core);
}

/* Copies every entry of core's state_dict from the set (transposing the
 * Conv1D weights); core's buffers are filled already. */
static int fill_params(const api_st_set *set, const char *prefix, const attn_lm_plan *plan,
                       api_model *m, char *why, size_t size) {
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_lm_param_get(plan, i, &p);
        if (p.buffer) continue;
        char name[ATTN_PARAM_NAME_MAX + 32];
        hf_name(name, sizeof name, prefix, p.name);
        const api_st_tensor *t = api__st_set_find(set, name);
        if (!t) return api__ckpt_fail(why, size, "tensor \"%s\" is missing", name);
        /* Conv1D: every rank-2 weight but the embeddings is [in][out] */
        int conv = p.rank == 2 && strcmp(p.name, "wte.weight") && strcmp(p.name, "wpe.weight");
        size_t want[2] = {(size_t)p.shape[conv ? 1 : 0], (size_t)p.shape[conv ? 0 : 1]};
        if (api__ckpt_copy(t, name, p.rank, want, conv, &p, m, why, size)) return -1;
        m->n_weights += p.count;
    }
    return 0;
}

/* GPT2LMHeadModel's names start with "transformer." (but lm_head),
 * GPT2Model's do not; both at once is two models. */
static int find_prefix(const api_st_set *set, const char **prefix, char *why, size_t size) {
    *prefix = "";
    for (int f = 0; f < set->count; f++)
        for (size_t i = 0; i < set->file[f].count; i++)
            if (strncmp(set->file[f].tensors[i].name, "transformer.", 12) == 0) *prefix = "transformer.";
    if ((*prefix)[0] && api__st_set_find(set, "wte.weight"))
        return api__ckpt_fail(why, size, "both wte.weight and transformer.wte.weight: two models in one file?");
    return 0;
}

/* The config from wte, wpe and the blocks. */
static int shapes_config(const api_st_set *set, const char *prefix, int n_layer,
                         const api_ckpt_hints *h, attn_lm_config *c, char *why, size_t size) {
    char name[64];
    snprintf(name, sizeof name, "%swte.weight", prefix);
    const api_st_tensor *wte = api__st_set_find(set, name);
    snprintf(name, sizeof name, "%swpe.weight", prefix);
    const api_st_tensor *wpe = api__st_set_find(set, name);
    if (!wte || wte->rank != 2 || wte->shape[0] < 1 || wte->shape[1] < 1 ||
        wte->shape[0] > INT32_MAX || wte->shape[1] > INT32_MAX)
        return api__ckpt_fail(why, size, wte ? "tensor \"%swte.weight\" must be [vocab_size][n_embd]"
                                             : "tensor \"%swte.weight\" is missing", prefix);
    if (!wpe || wpe->rank != 2 || wpe->shape[1] != wte->shape[1] || wpe->shape[0] < 1 ||
        wpe->shape[0] > INT32_MAX)
        return api__ckpt_fail(why, size, wpe ? "tensor \"%swpe.weight\" must be [n_positions][n_embd] "
                                               "with wte.weight's n_embd"
                                             : "tensor \"%swpe.weight\" is missing", prefix);
    if (h->checked) *c = h->cfg;
    else attn_lm_config_json_defaults(ATTN_ARCH_GPT2, c);
    c->vocab_size = (int)wte->shape[0], c->context = (int)wpe->shape[0];
    c->n_layer = n_layer, c->width = (int)wte->shape[1];
    return 0;
}

/* After the parameters are filled: lm_head.weight, when there (GPT-2 ties
 * it to wte.weight: a float tensor of its shape and values), and every value
 * finite, named as the file names it (c_fc, not core's fc). */
static int check_loaded(const api_st_set *set, const char *prefix, const attn_lm_plan *plan,
                        api_model *m, char *why, size_t size) {
    const api_st_tensor *head = api__st_set_find(set, "lm_head.weight");
    m->has_lm_head = head != NULL;
    if (head && strcmp(head->dtype, "F32") && strcmp(head->dtype, "F16") && strcmp(head->dtype, "BF16"))
        return api__ckpt_fail(why, size, "lm_head.weight is %s: GPT-2 ties it to wte.weight, a "
                              "float tensor (leave it out or make it equal)", head->dtype);
    if (head && (head->rank != 2 || head->shape[0] != (size_t)plan->V || head->shape[1] != (size_t)plan->C)) {
        char got[64];
        size_t n = (size_t)snprintf(got, sizeof got, "[");
        for (int d = 0; d < head->rank && n < sizeof got; d++)
            n += (size_t)snprintf(got + n, sizeof got - n, d ? ", %zu" : "%zu", head->shape[d]);
        return api__ckpt_fail(why, size, "lm_head.weight is %s], wte.weight [%d, %d]: GPT-2 ties them "
                              "(leave it out or make it equal)", got, plan->V, plan->C);
    }
    attn_param wte;
    attn_lm_param_get(plan, 0, &wte);
    if (head && !api__st_equals(head, (char *)m->params + wte.byte_offset, wte.dtype))
        return api__ckpt_fail(why, size, "lm_head.weight differs from wte.weight: GPT-2 ties them "
                              "(leave it out or make it equal)");
    attn_error ae = {0};
    if (attn_lm_params_check(plan, m->params, &ae) == ATTN_OK) return 0;
    char name[96];
    const char *core = strncmp(ae.field, "state_dict.", 11) == 0 ? ae.field + 11 : ae.field;
    hf_name(name, sizeof name, prefix, core);
    if (ae.code == ATTN_ERR_NONFINITE) return api__ckpt_fail(why, size, "tensor %s holds NaN or infinity", name);
    return api__ckpt_fail(why, size, "tensor \"%s\": %s", name, ae.message);
}

int api__ckpt_gpt2_load(const api_st_set *set, const api_ckpt_hints *h, api_model *m, char *why,
                        size_t size) {
    const char *prefix;
    int n_layer;
    attn_lm_plan plan;
    m->layout = "GPT-2";
    if (find_prefix(set, &prefix, why, size) || check_names(set, prefix, &n_layer, why, size) ||
        shapes_config(set, prefix, n_layer, h, &m->cfg, why, size))
        return -1;
    if (n_layer == 0) /* it would load as a GPT-2 of no layer */
        return api__ckpt_fail(why, size, "no transformer block (%sh.0.*): not a GPT-2 checkpoint", prefix);
    if (api__ckpt_check_config(h, &m->cfg, why, size) ||
        api__ckpt_finish_config(set, h, "n_head", m, &plan, why, size) ||
        fill_params(set, prefix, &plan, m, why, size) || check_loaded(set, prefix, &plan, m, why, size))
        return -1;
    m->prefixed = prefix[0] != '\0';
    return 0;
}
