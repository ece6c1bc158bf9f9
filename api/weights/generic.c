/* generic.c - a checkpoint whose tensors carry its architecture's own
 * state_dict names (every row without a loader of its own in
 * API_WEIGHTS_MAP: Llama, Mistral, Qwen2, Qwen3, GPT-NeoX, Gemma 3 as
 * transformers saves them), from a folder whose config.json gave the
 * config: each entry of core's state_dict found by its name, its shape
 * checked, F32, F16 or BF16 held in the dtype the plan gives it; a tied
 * head, when the file has it, equal to the token embedding; any other
 * tensor a fault but for the buffers old checkpoints carry (rotary
 * inv_freq, causal masks) and the names the row says checkpoints hold
 * unused (names.c). */
#include "api/weights/weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Buffers older transformers saved with the weights: not parameters. */
static int old_buffer(const char *name) {
    static const char *const ends[] = {"rotary_emb.inv_freq", "attention.bias", "attention.masked_bias",
                                       "attn.bias", "attn.masked_bias"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        size_t k = strlen(ends[i]);
        if (n >= k && strcmp(name + n - k, ends[i]) == 0 && (n == k || name[n - k - 1] == '.')) return 1;
    }
    return 0;
}

/* Every tensor of the set is an entry, the tied head, a name the row
 * ignores (names.c), or an old buffer. */
static int check_names(const api_st_set *set, const attn_lm_plan *plan, char *why, size_t size) {
    for (int f = 0; f < set->count; f++)
        for (size_t i = 0; i < set->file[f].count; i++) {
            const char *name = set->file[f].tensors[i].name;
            if (old_buffer(name) || api__ckpt_belongs(plan, name)) continue;
            attn_param first;
            attn_lm_param_get(plan, 0, &first);
            return api__ckpt_fail(why, size, "tensor \"%.64s\" is not part of %s's state_dict with "
                                  "this config (%d layers; its names are %s, ...)", name,
                                  attn_arch_name(plan->cfg.arch), plan->n_layer, first.name);
        }
    return 0;
}

/* Every parameter's tensor there with its shape, before anything the
 * config asks is allocated (a config.json of another model must not make
 * the server allocate what its tensors do not hold). */
static int check_shapes(const api_st_set *set, const attn_lm_plan *plan, char *why, size_t size) {
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_lm_param_get(plan, i, &p);
        const api_st_tensor *t = api__ckpt_find(set, plan, p.name);
        if (!t && p.buffer) continue;
        if (!t) return api__ckpt_fail(why, size, "tensor \"%s\" is missing", p.name);
        int same = t->rank == p.rank;
        for (int d = 0; same && d < p.rank; d++) same = t->shape[d] == (size_t)p.shape[d];
        if (!same)
            return api__ckpt_fail(why, size, "tensor \"%s\" does not have the shape config.json "
                                  "gives it ([%d, %d] for rank 2)", p.name, p.shape[0],
                                  p.rank > 1 ? p.shape[1] : 1);
    }
    return 0;
}

/* Every parameter from its tensor (the buffers are core's, filled already). */
static int fill_params(const api_st_set *set, const attn_lm_plan *plan, api_model *m, char *why,
                       size_t size) {
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_lm_param_get(plan, i, &p);
        const api_st_tensor *t = api__ckpt_find(set, plan, p.name);
        if (!t && p.buffer) continue;
        if (!t) return api__ckpt_fail(why, size, "tensor \"%s\" is missing", p.name);
        size_t want[4];
        for (int d = 0; d < p.rank; d++) want[d] = (size_t)p.shape[d];
        if (api__ckpt_copy(t, p.name, p.rank, want, 0, &p, m, why, size)) return -1;
        if (!p.buffer) m->n_weights += p.count;
    }
    return 0;
}

/* A tied head the file holds all the same: the token embedding's values. */
static int check_tied(const api_st_set *set, const attn_lm_plan *plan, api_model *m, char *why,
                      size_t size) {
    const char *tied = attn_lm_tied_head_name(plan);
    const api_st_tensor *head = tied ? api__st_set_find(set, tied) : NULL;
    attn_param emb;
    attn_lm_param_get(plan, 0, &emb);
    m->has_lm_head = head != NULL;
    if (head && !(head->rank == 2 && head->shape[0] == (size_t)plan->V &&
                  head->shape[1] == (size_t)plan->C &&
                  api__st_equals(head, (char *)m->params + emb.byte_offset, emb.dtype)))
        return api__ckpt_fail(why, size, "%s differs from %s, and config.json ties them "
                              "(tie_word_embeddings)", tied, emb.name);
    return 0;
}

int api__ckpt_generic_load(const api_st_set *set, const api_ckpt_hints *h, api_model *m, char *why,
                           size_t size) {
    attn_lm_plan plan;
    attn_error ae = {0};
    if (!h->arch_known)
        return api__ckpt_fail(why, size, "a single file of these tensors needs its folder's "
                              "config.json: load the folder");
    m->cfg = h->cfg;
    api__ckpt_parts(set, &m->cfg); /* an encoder's MLM head and pooler, as the file has them */
    m->cfg.weights_dtype = api__ckpt_weights_dtype(set, h->mode);
    m->layout = attn_arch_name(h->cfg.arch);
    snprintf(m->n_head_from, sizeof m->n_head_from, "config.json");
    if (attn_lm_plan_make(&m->cfg, 1, 1, 0, &plan, &ae) != ATTN_OK)
        return api__ckpt_fail(why, size, "config.json: %s", ae.message);
    if (check_names(set, &plan, why, size) || check_shapes(set, &plan, why, size)) return -1;
    if (api__ckpt_alloc(&plan, m, why, size)) return -1;
    if (fill_params(set, &plan, m, why, size) || check_tied(set, &plan, m, why, size))
        return -1;
    if (attn_lm_params_check(&plan, m->params, &ae) != ATTN_OK)
        return api__ckpt_fail(why, size, "%s", ae.message);
    return 0;
}
