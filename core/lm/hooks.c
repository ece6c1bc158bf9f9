/* hooks.c - TransformerLens's hook points (ATTN_HOOK_MAP): the table, full
 * names to (layer, hook), and each activation's shape in a call. */
#include "core/lm/lm.h"

#include <stdlib.h>
#include <string.h>

static const attn_hook_info hooks[ATTN_HOOK_COUNT] = {
#define XX(id, name, shape, block, what) {ATTN_HOOK_##id, name, ATTN_HOOK_SHAPE_##shape, block, what},
    ATTN_HOOK_MAP(XX)
#undef XX
};

const attn_hook_info *attn_hook_get(attn_hook h) {
    if ((int)h < 0 || h >= ATTN_HOOK_COUNT) return NULL;
    return &hooks[h];
}

static int find(const char *name, int per_block, attn_hook *hook) {
    for (int h = 0; h < ATTN_HOOK_COUNT; h++)
        if (hooks[h].per_block == per_block && strcmp(hooks[h].name, name) == 0) {
            *hook = (attn_hook)h;
            return ATTN_OK;
        }
    return ATTN_ERR_ARG;
}

int attn_hook_parse(const char *name, int *layer, attn_hook *hook) {
    attn_hook h;
    int l = 0;
    if (name == NULL) return ATTN_ERR_ARG;
    if (strncmp(name, "blocks.", 7) != 0) {
        if (find(name, 0, &h)) return ATTN_ERR_ARG;
    } else {
        const char *at = name + 7, *rest;
        if (at[0] == '*' && at[1] == '.') {
            l = -1, rest = at + 2;
        } else {
            char *end;
            if (at[0] < '0' || at[0] > '9' || (at[0] == '0' && at[1] != '.')) return ATTN_ERR_ARG;
            long v = strtol(at, &end, 10);
            if (*end != '.' || v > INT32_MAX) return ATTN_ERR_ARG;
            l = (int)v, rest = end + 1;
        }
        if (find(rest, 1, &h)) return ATTN_ERR_ARG;
    }
    if (layer) *layer = l;
    if (hook) *hook = h;
    return ATTN_OK;
}

int attn_hook_dims(const attn_lm_plan *p, attn_hook h, int shape[4], size_t *count) {
    const attn_hook_info *info = attn_hook_get(h);
    if (info == NULL || p == NULL) return 0;
    int dims[5][4] = {
        [ATTN_HOOK_SHAPE_RESID] = {p->B, p->T, p->C, 1},
        [ATTN_HOOK_SHAPE_HEADS] = {p->B, p->T, p->H, p->D},
        [ATTN_HOOK_SHAPE_MAP] = {p->B, p->H, p->T, p->T},
        [ATTN_HOOK_SHAPE_MLP] = {p->B, p->T, p->F, 1},
        [ATTN_HOOK_SHAPE_KV_HEADS] = {p->B, p->T, p->Hkv, p->D},
    };
    int rank = info->shape == ATTN_HOOK_SHAPE_HEADS || info->shape == ATTN_HOOK_SHAPE_MAP ||
                       info->shape == ATTN_HOOK_SHAPE_KV_HEADS
                   ? 4
                   : 3;
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)dims[info->shape][i]; /* within the plan's checks */
    if (shape) memcpy(shape, dims[info->shape], sizeof dims[0]);
    if (count) *count = n;
    return rank;
}

int attn_lm_has_hook(const attn_lm_plan *p, attn_hook h) {
    if (p == NULL || attn_hook_get(h) == NULL) return 0;
    switch (h) {
    case ATTN_HOOK_ROT_Q: case ATTN_HOOK_ROT_K: return p->spec.rope.dims > 0 || p->spec.qk_norm;
    case ATTN_HOOK_MLP_PRE_LINEAR: return p->spec.gated;
    case ATTN_HOOK_RESID_MID: return !p->spec.parallel;
    case ATTN_HOOK_NORMALIZED_RESID_POST: return p->spec.post_norm;
    case ATTN_HOOK_LN_FINAL_NORMALIZED: return !p->spec.post_norm;
    default: return 1;
    }
}

attn_hook attn_lm_block_output_hook(const attn_lm_plan *p) {
    return p && p->spec.post_norm ? ATTN_HOOK_NORMALIZED_RESID_POST : ATTN_HOOK_RESID_POST;
}
