/* book.c - the book's GPTModel saved as safetensors (its state_dict
 * under its own names, e.g. safetensors.torch.save_file(model.state_dict(),
 * "model.safetensors")) into core's GPTModel, whose parameter buffer has
 * the same names, shapes ([out][in], nn.Linear's) and order:
 *
 *   tok_emb.weight [V][C]   pos_emb.weight [context_length][C]
 *   trf_blocks.N.att.mask [context_length][context_length] (a buffer: may be left out)
 *   trf_blocks.N.att.W_query / W_key / W_value .weight [C][C] (.bias with qkv_bias)
 *   trf_blocks.N.att.out_proj.weight, .bias   trf_blocks.N.ff.layers.0 / .2 .weight, .bias
 *   trf_blocks.N.norm1 / norm2 .scale, .shift  final_norm.scale, .shift
 *   out_head.weight [V][C] (untied: required)
 *
 * The config comes from the shapes: vocab_size and emb_dim from tok_emb,
 * context_length from pos_emb, n_layers from the trf_blocks.N blocks,
 * qkv_bias from W_query.bias; n_heads from the hints (":heads=N", the
 * folder's config.json), __metadata__'s "n_heads", or emb_dim / 64;
 * drop_rate GPT_CONFIG_124M's 0.1 unless config.json says.
 */
#include "api/weights/weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The blocks: the highest trf_blocks.N + 1. */
static int count_blocks(const api_st_set *set) {
    int n = 0;
    for (int f = 0; f < set->count; f++)
        for (size_t i = 0; i < set->file[f].count; i++) {
            const char *name = set->file[f].tensors[i].name, *end;
            int l = strncmp(name, "trf_blocks.", 11) ? -1 : api__ckpt_layer_number(name + 11, &end);
            if (l >= 0 && *end == '.' && l + 1 > n) n = l + 1;
        }
    return n;
}

/* The config from tok_emb, pos_emb, the blocks and W_query.bias. */
static int shapes_config(const api_st_set *set, const api_ckpt_hints *h, attn_lm_config *c,
                         char *why, size_t size) {
    const api_st_tensor *tok = api__st_set_find(set, "tok_emb.weight");
    const api_st_tensor *pos = api__st_set_find(set, "pos_emb.weight");
    if (!tok || tok->rank != 2 || tok->shape[0] < 1 || tok->shape[1] < 1 ||
        tok->shape[0] > INT32_MAX || tok->shape[1] > INT32_MAX)
        return api__ckpt_fail(why, size, tok ? "tensor \"tok_emb.weight\" must be [vocab_size][emb_dim]"
                                             : "tensor \"tok_emb.weight\" is missing");
    if (!pos || pos->rank != 2 || pos->shape[1] != tok->shape[1] || pos->shape[0] < 1 ||
        pos->shape[0] > INT32_MAX)
        return api__ckpt_fail(why, size, pos ? "tensor \"pos_emb.weight\" must be [context_length]"
                                               "[emb_dim] with tok_emb.weight's emb_dim"
                                             : "tensor \"pos_emb.weight\" is missing");
    if (h->checked) *c = h->cfg;
    else attn_lm_config_json_defaults(ATTN_ARCH_GPTMODEL, c);
    c->vocab_size = (int)tok->shape[0], c->context = (int)pos->shape[0];
    c->n_layer = count_blocks(set), c->width = (int)tok->shape[1];
    c->qkv_bias = c->n_layer > 0 ? api__st_set_find(set, "trf_blocks.0.att.W_query.bias") != NULL
                                 : h->checked && h->cfg.qkv_bias;
    return 0;
}

/* Every tensor of the set is an entry of the model's state_dict. */
static int check_names(const api_st_set *set, const attn_lm_plan *plan, char *why, size_t size) {
    for (int f = 0; f < set->count; f++)
        for (size_t i = 0; i < set->file[f].count; i++) {
            const char *name = set->file[f].tensors[i].name;
            int found = 0;
            for (int k = 0; k < plan->param_count && !found; k++) {
                attn_param p;
                attn_lm_param_get(plan, k, &p);
                found = strcmp(p.name, name) == 0;
            }
            if (!found)
                return api__ckpt_fail(why, size, "tensor \"%.64s\" is not part of GPTModel's state_dict "
                                      "with this config (n_layers %d, qkv_bias %s): tok_emb, pos_emb, "
                                      "trf_blocks.N.{att,ff,norm1,norm2}.*, final_norm, out_head",
                                      name, plan->n_layer, plan->cfg.qkv_bias ? "true" : "false");
        }
    return 0;
}

/* Every parameter copied (required), the mask buffers when given. */
static int fill_params(const api_st_set *set, const attn_lm_plan *plan, api_model *m, char *why,
                       size_t size) {
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_lm_param_get(plan, i, &p);
        const api_st_tensor *t = api__st_set_find(set, p.name);
        if (!t && p.buffer) continue; /* core's triu, filled already */
        if (!t) return api__ckpt_fail(why, size, "tensor \"%s\" is missing", p.name);
        size_t want[2] = {(size_t)p.shape[0], p.rank > 1 ? (size_t)p.shape[1] : 0};
        if (api__ckpt_copy(t, p.name, p.rank, want, 0, &p, m, why, size)) return -1;
        if (!p.buffer) m->n_weights += p.count;
    }
    return 0;
}

int api__ckpt_book_load(const api_st_set *set, const api_ckpt_hints *h, api_model *m, char *why,
                        size_t size) {
    attn_lm_plan plan;
    attn_error ae = {0};
    m->layout = "GPTModel";
    if (shapes_config(set, h, &m->cfg, why, size) || api__ckpt_check_config(h, &m->cfg, why, size) ||
        api__ckpt_finish_config(set, h, "n_heads", m, &plan, why, size) ||
        check_names(set, &plan, why, size) || fill_params(set, &plan, m, why, size))
        return -1;
    if (attn_lm_params_check(&plan, m->params, &ae) != ATTN_OK)
        return api__ckpt_fail(why, size, "%s", ae.message);
    return 0;
}
