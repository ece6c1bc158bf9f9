/* groups.c - the /model/gpt2 outputs that are groups of named tensors:
 * "params", the model's state_dict (the parameters a request ran with, a
 * checkpoint's included), and "dropout_masks", the multipliers of every
 * dropout call of a training-mode forward pass under the name of its
 * nn.Dropout module. Both are views: no copy. */
#include "api/model/model.h"

#include <stdio.h>
#include <string.h>

/* ==== params ============================================================== */

int api__model_params_count(const attn_gpt2_plan *plan) { return plan->param_count + plan->tied; }

void api__model_params_items(const attn_gpt2_plan *plan, const float *params,
                             char (*names)[ATTN_PARAM_NAME_MAX], api_item *items) {
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_gpt2_param_get(plan, i, &p);
        memcpy(names[i], p.name, sizeof p.name);
        items[i] = (api_item){.name = names[i], .kind = API_ITEM_F32, .data = params + p.offset,
                              .rank = p.rank};
        for (int d = 0; d < p.rank; d++) items[i].shape[d] = p.shape[d];
    }
    if (plan->tied) { /* GPT2: lm_head.weight is wte.weight, the first entry */
        int n = plan->param_count;
        snprintf(names[n], ATTN_PARAM_NAME_MAX, "lm_head.weight");
        items[n] = items[0];
        items[n].name = names[n];
    }
}

/* ==== dropout_masks ======================================================= */

/* Calls per block: GPT2 attn.resid_drop and mlp.drop; GPTModel the
 * attention weights' dropout and drop_shortcut twice. */
static int per_block(const attn_gpt2_plan *plan) { return plan->family == ATTN_FAMILY_GPTMODEL ? 3 : 2; }

int api__model_dropout_count(const attn_gpt2_plan *plan) { return 1 + per_block(plan) * plan->n_layer; }

/* The k-th call of block l: its name and whether it is on the weights
 * ([B][H][T][T]) rather than on activations ([B][T][C]). */
static int block_call(const attn_gpt2_plan *plan, int l, int k, char *name) {
    static const char *const gpt2[] = {"attn.resid_drop", "mlp.drop"};
    static const char *const book[] = {"att.dropout", "drop_shortcut.0", "drop_shortcut.1"};
    int gm = plan->family == ATTN_FAMILY_GPTMODEL;
    snprintf(name, API_MODEL_DROP_NAME, "%s.%d.%s", gm ? "trf_blocks" : "h", l, gm ? book[k] : gpt2[k]);
    return gm && k == 0;
}

static void set_shape(api_item *it, int batched, int B, int n, const int *rest) {
    if (batched) it->shape[it->rank++] = B;
    for (int i = 0; i < n; i++) it->shape[it->rank++] = rest[i];
}

void api__model_dropout_items(const attn_gpt2_plan *plan, const float *masks, int batched,
                              char (*names)[API_MODEL_DROP_NAME], api_item *items) {
    int TC[2] = {plan->T, plan->C}, HTT[3] = {plan->H, plan->T, plan->T};
    size_t BTC = (size_t)plan->B * (size_t)plan->T * (size_t)plan->C;
    size_t BHTT = (size_t)plan->B * (size_t)plan->H * (size_t)plan->T * (size_t)plan->T;
    snprintf(names[0], API_MODEL_DROP_NAME, "%s", plan->family == ATTN_FAMILY_GPTMODEL ? "drop_emb" : "drop");
    items[0] = (api_item){.name = names[0], .kind = API_ITEM_F32, .data = masks};
    set_shape(&items[0], batched, plan->B, 2, TC);
    const float *at = masks + BTC;
    int n = 1;
    for (int l = 0; l < plan->n_layer; l++)
        for (int k = 0; k < per_block(plan); k++, n++) {
            int weights = block_call(plan, l, k, names[n]);
            items[n] = (api_item){.name = names[n], .kind = API_ITEM_F32, .data = at};
            set_shape(&items[n], batched, plan->B, weights ? 3 : 2, weights ? HTT : TC);
            at += weights ? BHTT : BTC;
        }
}
