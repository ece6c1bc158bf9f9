/* groups.c - the POST /model outputs that are groups of named tensors:
 * "params", the model's state_dict (the parameters a request ran with, a
 * checkpoint's included), and "dropout_masks", the multipliers of every
 * dropout call of a training-mode forward pass under the name of its
 * nn.Dropout module. Both are views: no copy. */
#include "api/model/model.h"

#include <stdio.h>
#include <string.h>

/* ==== params ============================================================== */

int api__model_params_count(const attn_lm_plan *plan) {
    return plan->param_count + (attn_lm_tied_head_name(plan) != NULL);
}

void api__model_params_items(const attn_lm_plan *plan, const float *params,
                             char (*names)[ATTN_PARAM_NAME_MAX], api_item *items) {
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_lm_param_get(plan, i, &p);
        memcpy(names[i], p.name, sizeof p.name);
        items[i] = (api_item){.name = names[i], .kind = API_ITEM_F32, .data = params + p.offset,
                              .rank = p.rank};
        for (int d = 0; d < p.rank; d++) items[i].shape[d] = p.shape[d];
    }
    const char *tied = attn_lm_tied_head_name(plan);
    if (tied) { /* GPT2: lm_head.weight is wte.weight, the first entry */
        int n = plan->param_count;
        snprintf(names[n], ATTN_PARAM_NAME_MAX, "%s", tied);
        items[n] = items[0];
        items[n].name = names[n];
    }
}

/* ==== dropout_masks ======================================================= */

int api__model_dropout_count(const attn_lm_plan *plan) { return attn_lm_dropout_count(plan); }

void api__model_dropout_items(const attn_lm_plan *plan, const float *masks, int batched,
                              char (*names)[API_MODEL_DROP_NAME], api_item *items) {
    int n = attn_lm_dropout_count(plan);
    for (int i = 0; i < n; i++) {
        attn_lm_dropout d;
        attn_lm_dropout_get(plan, i, &d);
        snprintf(names[i], API_MODEL_DROP_NAME, "%s", d.name);
        items[i] = (api_item){.name = names[i], .kind = API_ITEM_F32, .data = masks + d.offset};
        for (int k = batched ? 0 : 1; k < d.rank; k++) items[i].shape[items[i].rank++] = d.shape[k];
    }
}
