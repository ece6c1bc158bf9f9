/* convert.c - one model's parameters from one layout to another (lm.h's
 * attn_lm_params_convert): a float32 model's half-size copy, or a half-size
 * one widened; tensor by tensor, each where its plan puts it. */
#include "core/lm/lm.h"

#include <string.h>

/* 1 if plans a and b are of one model: configs equal but for the weights'
 * dtype (compared field by field through the table: a config's padding is
 * not compared). */
static int same_model(const attn_lm_plan *a, const attn_lm_plan *b) {
    if (a->cfg.arch != b->cfg.arch || a->param_count != b->param_count) return 0;
    for (int h = 0; h < ATTN_HP_COUNT; h++)
        if (attn_lm_config_get(&a->cfg, (attn_hparam)h) != attn_lm_config_get(&b->cfg, (attn_hparam)h))
            return 0;
    if (memcmp(a->cfg.local_layers, b->cfg.local_layers, sizeof a->cfg.local_layers)) return 0;
    for (int i = 0; i < a->param_count; i++) {
        attn_param x, y;
        attn_lm_param_get(a, i, &x);
        attn_lm_param_get(b, i, &y);
        if (x.count != y.count || x.rank != y.rank || strcmp(x.name, y.name)) return 0;
    }
    return 1;
}

int attn_lm_params_convert(const attn_lm_plan *to, void *dst, const attn_lm_plan *from,
                           const void *src, attn_error *err) {
    if (to == NULL || dst == NULL || from == NULL || src == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "params", "both plans and buffers are required");
    if (!same_model(to, from))
        return attn__fail(err, ATTN_ERR_ARG, "weights_dtype", "the plans are not of one model (their "
                          "configs differ in more than weights_dtype)");
    for (int i = 0; i < to->param_count; i++) {
        attn_param d, s;
        attn_lm_param_get(to, i, &d);
        attn_lm_param_get(from, i, &s);
        attn_dtype_convert(d.dtype, (char *)dst + d.byte_offset, s.dtype,
                           (const char *)src + s.byte_offset, d.count);
    }
    return ATTN_OK;
}
