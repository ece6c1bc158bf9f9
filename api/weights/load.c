/* load.c - what every layout of a loaded model shares (weights.h): block
 * numbers in names, the dtype the weight matrices are held in, a tensor
 * copied into core's buffer with its shape and dtype checked, a folder's
 * config.json checked against the tensors, the head count (no shape says
 * it), core's plan and buffer. */
#include "api/weights/weights.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LAYERS 100000

int api__ckpt_layer_number(const char *s, const char **end) {
    if (!isdigit((unsigned char)*s) || (s[0] == '0' && isdigit((unsigned char)s[1]))) return -1;
    long n = 0;
    while (isdigit((unsigned char)*s) && n <= MAX_LAYERS) n = n * 10 + (*s++ - '0');
    *end = s;
    return n < MAX_LAYERS ? (int)n : -1;
}

static void shape_text(char *out, size_t size, int rank, const size_t *shape) {
    size_t n = (size_t)snprintf(out, size, "[");
    for (int d = 0; d < rank && n < size; d++)
        n += (size_t)snprintf(out + n, size - n, d ? ", %zu" : "%zu", shape[d]);
    if (n < size) snprintf(out + n, size - n, "]");
}

attn_dtype api__ckpt_weights_dtype(const api_st_set *set, api_weights_mode mode) {
    if (mode != API_WEIGHTS_KEEP) return mode == API_WEIGHTS_BF16 ? ATTN_DTYPE_BF16 : ATTN_DTYPE_F32;
    const char *seen = NULL;
    for (int f = 0; f < set->count; f++)
        for (size_t i = 0; i < set->file[f].count; i++) {
            const api_st_tensor *t = &set->file[f].tensors[i];
            if (t->rank != 2) continue;
            if (seen && strcmp(seen, t->dtype)) return ATTN_DTYPE_F32; /* mixed */
            seen = t->dtype;
        }
    if (seen && strcmp(seen, "F16") == 0) return ATTN_DTYPE_F16;
    if (seen && strcmp(seen, "BF16") == 0) return ATTN_DTYPE_BF16;
    return ATTN_DTYPE_F32;
}

int api__ckpt_alloc(const attn_lm_plan *plan, api_model *m, char *why, size_t size) {
    if ((m->params = malloc(plan->param_bytes)) == NULL)
        return api__ckpt_fail(why, size, "cannot allocate %zu bytes for its parameters",
                              plan->param_bytes);
    m->n_params = plan->n_params, m->param_bytes = plan->param_bytes;
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_lm_param_get(plan, i, &p);
        if (p.buffer) attn_param_buffer_fill(&p, (float *)((char *)m->params + p.byte_offset));
    }
    return 0;
}

int api__ckpt_copy(const api_st_tensor *t, const char *name, int rank, const size_t *want,
                   int transpose, const attn_param *p, api_model *m, char *why, size_t size) {
    int ok = t->rank == rank;
    for (int d = 0; ok && d < rank; d++) ok = t->shape[d] == want[d];
    if (!ok) {
        char w[96], g[96];
        shape_text(w, sizeof w, rank, want);
        shape_text(g, sizeof g, t->rank, t->shape);
        return api__ckpt_fail(why, size, "tensor \"%s\" has shape %s, %s with %s %d needs %s%s", name,
                              g, m->layout, api__hparam_name(m->cfg.arch, ATTN_HP_WIDTH),
                              m->cfg.width, w, transpose ? " (Conv1D: [in][out])" : "");
    }
    int rc = api__st_convert(t, (char *)m->params + p->byte_offset, p->dtype, transpose);
    if (rc == -2) return api__ckpt_fail(why, size, "out of memory");
    if (rc)
        return api__ckpt_fail(why, size, "tensor \"%s\" has dtype %s: weights must be F32, F16 or BF16",
                              name, t->dtype);
    if (p->dtype == ATTN_DTYPE_BF16 && strcmp(t->dtype, "BF16")) m->lossy = 1;
    if (!m->dtype[0]) snprintf(m->dtype, sizeof m->dtype, "%s", t->dtype);
    else if (strcmp(m->dtype, t->dtype)) snprintf(m->dtype, sizeof m->dtype, "mixed");
    return 0;
}

int api__ckpt_check_config(const api_ckpt_hints *h, const attn_lm_config *got, char *why,
                           size_t size) {
    if (!h->checked) return 0;
    /* what the shapes say: the sizes but the heads, and whether biases are there */
    static const attn_hparam sizes[] = {ATTN_HP_VOCAB, ATTN_HP_CONTEXT, ATTN_HP_LAYERS,
                                        ATTN_HP_WIDTH};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int said = (int)attn_lm_config_get(&h->cfg, sizes[i]), have = (int)attn_lm_config_get(got, sizes[i]);
        if (said != have)
            return api__ckpt_fail(why, size, "config.json says %s %d, the tensors %d",
                                  api__hparam_config_name(got->arch, sizes[i]), said, have);
    }
    const char *bias = api__hparam_config_name(got->arch, ATTN_HP_QKV_BIAS);
    const attn_arch_hparam *hp;
    int takes = 0, n = attn_arch_hparams(got->arch, &hp);
    for (int i = 0; i < n; i++) takes |= hp[i].id == ATTN_HP_QKV_BIAS && hp[i].config_name;
    if (takes && h->cfg.qkv_bias != got->qkv_bias)
        return api__ckpt_fail(why, size, "config.json says %s %s, the tensors %s (W_query.bias)",
                              bias, h->cfg.qkv_bias ? "true" : "false",
                              got->qkv_bias ? "true" : "false");
    return 0;
}

/* __metadata__[key] of any file: a head count in [1, width]; 0 when absent. */
static int metadata_heads(const api_st_set *set, const char *key, int width, int *out, char *why,
                          size_t size) {
    for (int f = 0; f < set->count; f++) {
        const json_t *v = set->file[f].metadata ? json_object_get(set->file[f].metadata, key) : NULL;
        if (!v) continue;
        const char *s = json_string_value(v);
        char *end;
        long x = strtol(s, &end, 10);
        if (end == s || *end || x < 1 || x > width)
            return api__ckpt_fail(why, size, "__metadata__.%s \"%.32s\" is not a head count in [1, %d]",
                                  key, s, width);
        *out = (int)x;
        return 1;
    }
    return 0;
}

/* The heads: the hints', the metadata's, or width / 64. */
static int pick_heads(const api_st_set *set, const api_ckpt_hints *h, const char *key, api_model *m,
                      char *why, size_t size) {
    int C = m->cfg.width, found;
    const char *width = api__hparam_name(m->cfg.arch, ATTN_HP_WIDTH);
    if (h->n_head > 0) {
        m->cfg.n_head = h->n_head;
        snprintf(m->n_head_from, sizeof m->n_head_from, "%s", h->n_head_from);
    } else if ((found = metadata_heads(set, key, C, &m->cfg.n_head, why, size)) != 0) {
        if (found < 0) return -1;
        snprintf(m->n_head_from, sizeof m->n_head_from, "metadata");
    } else if (C % 64) {
        return api__ckpt_fail(why, size, "%s is not in the file and %s %d is not a multiple of 64 "
                              "(GPT-2's head width): give it as NAME=FILE:heads=N", key, width, C);
    } else {
        m->cfg.n_head = C / 64;
        snprintf(m->n_head_from, sizeof m->n_head_from, "%s/64", width);
    }
    return 0;
}

int api__ckpt_finish_config(const api_st_set *set, const api_ckpt_hints *h, const char *key,
                            api_model *m, attn_lm_plan *plan, char *why, size_t size) {
    attn_error ae = {0};
    if (pick_heads(set, h, key, m, why, size)) return -1;
    m->cfg.weights_dtype = api__ckpt_weights_dtype(set, h->mode);
    if (attn_lm_plan_make(&m->cfg, 1, 1, 0, plan, &ae) != ATTN_OK)
        return api__ckpt_fail(why, size, "the config from its shapes is not a %s (%s)",
                              attn_arch_name(m->cfg.arch), ae.message);
    return api__ckpt_alloc(plan, m, why, size);
}

