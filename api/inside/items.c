/* items.c - the reply's look inside, as groups of items (reply.h):
 *
 *   "cache": {"blocks.3.attn.hook_z": [B][T][H][D], ...}  TransformerLens's
 *            names and shapes, forward order; safetensors "cache.<name>"
 *   "patch": {"result": [B][n_layer][H or T], "clean": [B], "corrupted": [B]}
 *   "logit_lens": {"ids": [n_layer + 1][B][T][k], "probs": the same,
 *                  "tokens": the same as text (with a tokenizer)}
 *   "analysis": {"entropy": [B][n_layer][H], ...} (analysis.c)
 *   "neuron_view": neuron.c's group
 *
 * The batch axis is left out for a [T] request, as everywhere. */
#include "api/inside/inside.h"
#include "api/bpe/bpe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dims with the batch axis at `batch_at` removed unless batched */
static void shape_of(api_item *it, int rank, const int *dims, int batch_at, int batched) {
    it->rank = 0;
    for (int d = 0; d < rank; d++)
        if (d != batch_at || batched) it->shape[it->rank++] = dims[d];
}

static int cache_group(const inside_rq *rq, const attn_lm_plan *p, int batched, inside_out *io,
                       api_item *g, api_err *e) {
    int n = rq->n_hooks;
    io->names = calloc((size_t)n, sizeof *io->names);
    io->cache_items = calloc((size_t)n, sizeof *io->cache_items);
    if (io->names == NULL || io->cache_items == NULL)
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    for (int i = 0; i < n; i++) {
        const inside_hook *h = &rq->hooks[i];
        const attn_hook_info *info = attn_hook_get(h->hook);
        if (info->per_block) snprintf(io->names[i], sizeof io->names[i], "blocks.%d.%s", h->layer, info->name);
        else snprintf(io->names[i], sizeof io->names[i], "%s", info->name);
        int dims[4];
        size_t count;
        int rank = attn_hook_dims(p, h->hook, dims, &count);
        api_item *it = &io->cache_items[i];
        *it = (api_item){.name = io->names[i], .kind = API_ITEM_F32,
                         .data = api__inside_capture(io, h->layer, h->hook)};
        shape_of(it, rank, dims, 0, batched);
    }
    *g = (api_item){.name = "cache", .kind = API_ITEM_GROUP, .items = io->cache_items, .n_items = n};
    return 0;
}

static void patch_group(const inside_rq *rq, const attn_lm_plan *p, int batched, inside_out *io,
                        api_item *g) {
    int X = api__inside_site(rq->site)->per_head ? p->H : p->T;
    int dims[3] = {p->B, p->n_layer, X};
    api_item *it = io->patch_items;
    it[0] = (api_item){.name = "result", .kind = API_ITEM_F32, .data = io->result};
    shape_of(&it[0], 3, dims, 0, batched);
    it[1] = (api_item){.name = "clean", .kind = API_ITEM_F32, .data = io->clean};
    it[2] = (api_item){.name = "corrupted", .kind = API_ITEM_F32, .data = io->corrupted};
    shape_of(&it[1], 1, dims, 0, batched);
    shape_of(&it[2], 1, dims, 0, batched);
    it[1].plain = it[2].plain = 1; /* a number, or [B] numbers, in every JSON format */
    *g = (api_item){.name = "patch", .kind = API_ITEM_GROUP, .items = it, .n_items = 3};
}

/* The lens's tokens as JSON text: nested like ids, each a token's text. */
static int lens_tokens(const api_bpe *tok, const int32_t *ids, const api_item *shape, api_buf *b) {
    size_t cap = 3 * api_bpe_max_token_bytes(tok) + 1, len, n = api__item_count(shape);
    char *text = malloc(cap);
    if (text == NULL) return -1;
    int r = shape->rank;
    for (size_t i = 0; i < n && !b->failed; i++) {
        /* open the axes that start at i, close those that end after it */
        size_t span = 1;
        for (int d = r - 1; d >= 0; d--) {
            span *= (size_t)shape->shape[d];
            if (i % span == 0) api__buf_puts(b, "[");
        }
        if (api_bpe_token_shown(tok, ids[i], text, cap, &len) == 0) api__buf_json_stringn(b, text, len);
        else api__buf_puts(b, "null");
        span = 1;
        for (int d = r - 1; d >= 0; d--) {
            span *= (size_t)shape->shape[d];
            if ((i + 1) % span == 0) api__buf_puts(b, "]");
        }
        if (i + 1 < n) api__buf_puts(b, ",");
    }
    free(text);
    return b->failed ? -1 : 0;
}

static int lens_group(const inside_rq *rq, const attn_lm_plan *p, int batched,
                      const api_bpe *tok, inside_out *io, api_item *g, api_err *e) {
    int dims[4] = {p->n_layer + 1, p->B, p->T, rq->lens_k}, n = 2;
    api_item *it = io->lens_items;
    it[0] = (api_item){.name = "ids", .kind = API_ITEM_I32, .data = io->lens_ids};
    it[1] = (api_item){.name = "probs", .kind = API_ITEM_F32, .data = io->lens_probs};
    shape_of(&it[0], 4, dims, 1, batched);
    shape_of(&it[1], 4, dims, 1, batched);
    if (tok) {
        if (lens_tokens(tok, io->lens_ids, &it[0], &io->lens_tokens))
            return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
        it[n++] = (api_item){.name = "tokens", .kind = API_ITEM_JSON, .data = io->lens_tokens.data};
    }
    *g = (api_item){.name = "logit_lens", .kind = API_ITEM_GROUP, .items = it, .n_items = n};
    return 0;
}

int api__inside_items(const inside_rq *rq, const attn_lm_plan *p, int batched,
                      const api_bpe *tok, inside_out *io, api_item *items, api_err *e) {
    int n = 0;
    if (rq->n_hooks && cache_group(rq, p, batched, io, &items[n++], e)) return -1;
    if (rq->patch) patch_group(rq, p, batched, io, &items[n++]);
    if (rq->lens_k && lens_group(rq, p, batched, tok, io, &items[n++], e)) return -1;
    if (rq->analyses) api__inside_analysis_group(rq, p, batched, io, &items[n++]);
    if (rq->neuron && api__inside_neuron_item(rq, p, io, &items[n++], e)) return -1;
    return n;
}
