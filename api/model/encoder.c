/* encoder.c - what the encoders (BERT, RoBERTa, DistilBERT) add to POST
 * /model, and how padding shows in a reply:
 *
 *   "fill_mask": {"top_k": 5, "mask_id": 103}
 *        each mask token's top_k tokens by the MLM head's probabilities
 *        (softmax over the vocabulary), as transformers' fill-mask pipeline;
 *        mask_id defaults to the tokenizer's [MASK] or <mask>
 *   "return": [..., "embeddings", "pooler_output", "attention_mask", "token_type_ids"]
 *        embeddings: the model folder's sentence-transformers pooling (mean
 *        over the tokens without one); pooler_output: BertModel's
 *   "sentence_b_start": where each text pair's sentence B starts
 *
 * A padded position (attention_mask 0) is reported as null in JSON (-inf in
 * base64 and safetensors, as masked scores are): its logits, hidden states,
 * every hook's rows, its row of each attention map, the lens's rows (ids
 * -1). A padded key keeps its weight, exactly 0. */
#include "api/bpe/bpe.h"
#include "api/model/model.h"
#include "api/numbers/numbers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct model_enc {
    float *last, *emb, *pooler;
    /* attention_mask and token_type_ids as asked, in the job's arrays: the
     * request's own (rq->mask, rq->types) are freed before a safetensors
     * reply is sent, which points at its tensors' bytes */
    uint8_t *mask;          /* all ones without padding */
    int32_t *types;         /* all zeros when none were given */
    int width;
    api_buf fill, b_start;  /* JSON text */
};

static int returns(const model_rq *rq, int k) { return (rq->returns & 1u << k) != 0; }

int api__model_plan1(const model_rq *rq, attn_lm_plan *p, api_err *e) {
    attn_error ae = {0};
    if (attn_lm_plan_make(&rq->cfg, 1, 1, 0, p, &ae) == ATTN_OK) return 0;
    api__from_attn(e, &ae, ATTN_MODULE_COUNT);
    return -1;
}

/* ==== Parse =============================================================== */

/* fill_mask: {"top_k", "mask_id"}; at least one mask token in idx. */
static int read_fill(const json_t *root, model_rq *rq, api_err *e) {
    static const char *const keys[] = {"top_k", "mask_id", NULL};
    const json_t *v = api__field(root, "fill_mask");
    if (v == NULL) return 0;
    if (!json_is_object(v)) return api__field_wrong_type(e, "fill_mask", v, "an object {\"top_k\", \"mask_id\"}");
    const char *bad = api__unknown_key(v, keys);
    if (bad) return api__fail(e, API_E_UNKNOWN_FIELD, "fill_mask", "fill_mask takes top_k and mask_id");
    int k = 5 < rq->cfg.vocab_size ? 5 : rq->cfg.vocab_size, id = api__model_mask_token(rq->tok);
    if (api__field_int(v, "top_k", 1, rq->cfg.vocab_size, &k, e) < 0 ||
        api__field_int(v, "mask_id", 0, rq->cfg.vocab_size - 1, &id, e) < 0)
        return -1;
    if (id < 0)
        return api__fail(e, API_E_MISSING_FIELD, "fill_mask.mask_id", "fill_mask.mask_id is required: "
                         "no tokenizer here names a mask token ([MASK] or <mask>)");
    int found = 0;
    for (size_t i = 0; i < (size_t)rq->B * (size_t)rq->T; i++)
        found |= rq->idx[i] == id && (!rq->mask || rq->mask[i]);
    if (!found)
        return api__fail(e, API_E_INVALID_ARGUMENT, "fill_mask", "the input has no mask token (id %d) "
                         "to fill", id);
    rq->fill_k = k, rq->fill_id = id;
    return 0;
}

/* The outputs an encoder, or a model without a head, cannot give. */
static int check_outputs(const model_rq *rq, const attn_lm_plan *p, api_err *e) {
    const char *arch = attn_arch_name(rq->cfg.arch);
    if (!p->head && (returns(rq, M_OUT_LOGITS) || returns(rq, M_OUT_NEXT_TOKEN) || rq->fill_k ||
                     rq->in.lens_k || rq->in.patch))
        return api__fail(e, API_E_INVALID_ARGUMENT, rq->fill_k ? "fill_mask" : rq->in.lens_k ? "logit_lens"
                         : rq->in.patch ? "patch" : "return", "this %s has no MLM head (its checkpoint "
                         "holds the base model alone): it gives hidden_states, embeddings, "
                         "pooler_output and hooks, not logits", arch);
    if (p->spec.bidirectional && (returns(rq, M_OUT_NEXT_TOKEN) || rq->gen))
        return api__fail(e, API_E_INVALID_ARGUMENT, rq->gen ? "generate" : "return", "%s is an "
                         "encoder: it predicts masked tokens (fill_mask), not the next one", arch);
    if (returns(rq, M_OUT_POOLER_OUTPUT) && !p->spec.pooler)
        return api__fail(e, API_E_INVALID_ARGUMENT, "return", "this %s has no pooler (its "
                         "checkpoint holds no pooler.dense)", arch);
    if (rq->mask && (rq->in.patch || rq->gen))
        return api__fail(e, API_E_INVALID_ARGUMENT, rq->gen ? "generate" : "patch", "%s takes a batch "
                         "without padding (rows of one length)", rq->gen ? "generate" : "patch");
    return 0;
}

int api__model_enc_parse(const json_t *root, model_rq *rq, api_err *e) {
    attn_lm_plan p;
    if (api__model_plan1(rq, &p, e) || read_fill(root, rq, e)) return -1;
    rq->pooling = rq->model && rq->model->pooling.modes ? rq->model->pooling
                                                      : (attn_lm_pooling){.modes = ATTN_POOL_MEAN};
    if (p.spec.bidirectional && !api__field(root, "return")) { /* an encoder's own default */
        rq->returns &= ~(1u << M_OUT_LOGITS | 1u << M_OUT_NEXT_TOKEN);
        rq->returns |= 1u << (p.head ? M_OUT_LOGITS : M_OUT_EMBEDDINGS);
    }
    if (rq->mask) rq->returns |= 1u << M_OUT_ATTENTION_MASK;
    if (rq->from_text && rq->types) rq->returns |= 1u << M_OUT_TOKEN_TYPE_IDS;
    return check_outputs(rq, &p, e);
}

/* ==== Compute ============================================================= */

static int masks(const model_rq *rq) {
    int n = 0;
    for (size_t i = 0; rq->fill_k && i < (size_t)rq->B * (size_t)rq->T; i++)
        n += rq->idx[i] == rq->fill_id && (!rq->mask || rq->mask[i]);
    return n;
}

size_t api__model_enc_floats(const model_rq *rq, const attn_lm_plan *p) {
    size_t BT = (size_t)p->B * (size_t)p->T, n = 0;
    if (returns(rq, M_OUT_EMBEDDINGS))
        n += BT * (size_t)p->C + (size_t)p->B * (size_t)attn_lm_pool_width(&rq->pooling, p->C);
    if (returns(rq, M_OUT_POOLER_OUTPUT)) n += (size_t)p->B * (size_t)p->C;
    return n + BT + (size_t)masks(rq) * (size_t)rq->fill_k * 16 + (size_t)p->V;
}

int api__model_enc_alloc(const model_rq *rq, const attn_lm_plan *p, api_arrays *a, model_enc **out_x,
                         attn_lm_outputs *out, api_err *e) {
    model_enc *x = *out_x = calloc(1, sizeof *x);
    size_t BT = (size_t)p->B * (size_t)p->T;
    if (x == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    if (returns(rq, M_OUT_EMBEDDINGS)) {
        x->width = attn_lm_pool_width(&rq->pooling, p->C);
        out->last_hidden = x->last = api__arrays_take(a, BT * (size_t)p->C, sizeof(float));
        x->emb = api__arrays_take(a, (size_t)p->B * (size_t)x->width, sizeof(float));
    }
    if (returns(rq, M_OUT_POOLER_OUTPUT))
        out->pooler_output = x->pooler = api__arrays_take(a, (size_t)p->B * (size_t)p->C, sizeof(float));
    if (returns(rq, M_OUT_ATTENTION_MASK) && (x->mask = api__arrays_take(a, BT, 1)))
        rq->mask ? (void)memcpy(x->mask, rq->mask, BT) : (void)memset(x->mask, 1, BT);
    if (returns(rq, M_OUT_TOKEN_TYPE_IDS) && (x->types = api__arrays_take(a, BT, sizeof(int32_t))))
        rq->types ? (void)memcpy(x->types, rq->types, BT * sizeof(int32_t)) : (void)memset(x->types, 0, BT * sizeof(int32_t));
    return a->failed ? api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the model") : 0;
}

/* One mask token's top_k ids and probabilities (softmax of the row in
 * double, as the logit lens computes them), as {"position", "ids",
 * "probs", "tokens"} (and "batch" for a batch). */
static void fill_one(const model_rq *rq, const attn_lm_plan *p, const float *row, int b, int t,
                     float *v, int32_t *ids, int *scratch, api_buf *j) {
    api__topk_f32(row, 1, p->V, NULL, 0, rq->fill_k, v, ids, scratch);
    double max = v[0], sum = 0.0;
    for (int i = 0; i < p->V; i++) sum += exp((double)row[i] - max);
    if (rq->batched) api__buf_printf(j, "{\"batch\":%d,", b);
    api__buf_printf(j, "%s\"position\":%d,\"ids\":[", rq->batched ? "" : "{", t);
    for (int k = 0; k < rq->fill_k; k++) api__buf_printf(j, k ? ",%d" : "%d", (int)ids[k]);
    api__buf_puts(j, "],\"probs\":[");
    for (int k = 0; k < rq->fill_k; k++) {
        char num[64];
        int len = api__format_float(num, (float)(exp((double)v[k] - max) / sum), 0);
        if (k) api__buf_puts(j, ",");
        api__buf_put(j, num, (size_t)len);
    }
    api__buf_puts(j, "]");
    if (rq->tok) {
        size_t cap = 3 * api_bpe_max_token_bytes(rq->tok->bpe) + 1, len;
        char *text = malloc(cap);
        api__buf_puts(j, ",\"tokens\":[");
        for (int k = 0; k < rq->fill_k; k++) {
            if (k) api__buf_puts(j, ",");
            if (text && api_bpe_token_shown(rq->tok->bpe, ids[k], text, cap, &len) == 0)
                api__buf_json_stringn(j, text, len);
            else
                api__buf_puts(j, "null");
        }
        api__buf_puts(j, "]");
        free(text);
        j->failed |= text == NULL;
    }
    api__buf_puts(j, "}");
}

/* fill_mask's list, in batch and position order. */
static int fill(const model_rq *rq, const attn_lm_plan *p, const float *logits, api_buf *j) {
    float *v = malloc((size_t)rq->fill_k * sizeof *v);
    int32_t *ids = malloc((size_t)rq->fill_k * sizeof *ids);
    int *scratch = malloc((size_t)p->V * sizeof *scratch), n = 0;
    api__buf_puts(j, "[");
    for (int b = 0; v && ids && scratch && b < p->B; b++)
        for (int t = 0; t < p->T; t++) {
            size_t i = (size_t)b * (size_t)p->T + (size_t)t;
            if (rq->idx[i] != rq->fill_id || (rq->mask && !rq->mask[i])) continue;
            if (n++) api__buf_puts(j, ",");
            fill_one(rq, p, logits + i * (size_t)p->V, b, t, v, ids, scratch, j);
        }
    api__buf_puts(j, "]");
    int ok = v && ids && scratch && !j->failed;
    free(v), free(ids), free(scratch);
    return ok ? 0 : -1;
}

/* ==== Padding as null ====================================================== */

static void neg_inf(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = -INFINITY;
}

/* x [lead][B][T][width]: padded positions' rows -inf. */
static void blank_rows(float *x, size_t lead, const attn_lm_plan *p, size_t width, const uint8_t *m) {
    size_t BT = (size_t)p->B * (size_t)p->T;
    for (size_t l = 0; x && l < lead; l++)
        for (size_t i = 0; i < BT; i++)
            if (!m[i]) neg_inf(x + (l * BT + i) * width, width);
}

/* maps [lead][B][H][T][T]: padded queries' rows -inf (and padded keys'
 * columns with keys set: a top-k cut then never picks them). */
static void blank_maps(float *x, size_t lead, int H, const attn_lm_plan *p, const uint8_t *m, int keys) {
    size_t T = (size_t)p->T;
    for (size_t o = 0; x && o < lead * (size_t)p->B * (size_t)H; o++) {
        const uint8_t *mb = m + (o / (size_t)H % (size_t)p->B) * T;
        for (size_t i = 0; i < T; i++) {
            float *row = x + (o * T + i) * T;
            if (!mb[i]) neg_inf(row, T);
            for (size_t j = 0; keys && mb[i] && j < T; j++)
                if (!mb[j]) row[j] = -INFINITY;
        }
    }
}

/* Every capture, and the lens's rows (probabilities -inf, ids -1). */
static void blank_inside(const model_rq *rq, const attn_lm_plan *p, inside_out *io) {
    size_t BT = (size_t)p->B * (size_t)p->T, L1 = (size_t)p->n_layer + 1, k = (size_t)rq->in.lens_k;
    for (int i = 0; i < io->n_caps; i++) {
        int shape[4];
        size_t count;
        attn_hook_dims(p, io->caps[i].hook, shape, &count);
        if (attn_hook_get(io->caps[i].hook)->shape == ATTN_HOOK_SHAPE_MAP)
            blank_maps(io->caps[i].dst, 1, shape[1], p, rq->mask, 0);
        else
            blank_rows(io->caps[i].dst, 1, p, count / BT, rq->mask);
    }
    blank_rows(io->lens_probs, L1, p, k, rq->mask);
    for (size_t l = 0; io->lens_ids && l < L1; l++)
        for (size_t i = 0; i < BT; i++)
            for (size_t c = 0; !rq->mask[i] && c < k; c++) io->lens_ids[(l * BT + i) * k + c] = -1;
}

int api__model_enc_after(const model_rq *rq, const attn_lm_plan *p, model_enc *x, float *logits,
                         int last_only, float *attn, float *hidden, inside_out *io, api_err *e) {
    attn_error ae = {0};
    if (x->emb && attn_lm_pool(&rq->pooling, x->last, rq->mask, p->B, p->T, p->C, x->emb, &ae)) {
        api__from_attn(e, &ae, ATTN_MODULE_COUNT);
        return -1;
    }
    if (rq->fill_k && fill(rq, p, logits, &x->fill))
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate fill_mask");
    if (!rq->mask) return 0;
    if (!last_only) blank_rows(logits, 1, p, (size_t)p->V, rq->mask);
    blank_maps(attn, (size_t)p->n_layer, p->H, p, rq->mask, rq->sel.top_k > 0);
    blank_rows(hidden, (size_t)p->n_layer + 1, p, (size_t)p->C, rq->mask);
    blank_inside(rq, p, io);
    return 0;
}

/* ==== Items =============================================================== */

/* A [B][...] item, without the B axis for a [T] request. */
static api_item *item(api_item *it, const model_rq *rq, const char *name, api_item_kind kind,
                      const void *data, int n_rest, const int *rest) {
    *it = (api_item){.name = name, .kind = kind, .data = data};
    if (rq->batched) it->shape[it->rank++] = rq->B;
    for (int i = 0; i < n_rest; i++) it->shape[it->rank++] = rest[i];
    return it;
}

int api__model_enc_items(const model_rq *rq, const attn_lm_plan *p, model_enc *x, api_item *items,
                         api_err *e) {
    int n = 0, T[1] = {p->T}, W[1] = {x->width}, C[1] = {p->C};
    if (returns(rq, M_OUT_ATTENTION_MASK))
        item(&items[n++], rq, "attention_mask", API_ITEM_U8, x->mask, 1, T)->plain = 1;
    if (returns(rq, M_OUT_TOKEN_TYPE_IDS))
        item(&items[n++], rq, "token_type_ids", API_ITEM_I32, x->types, 1, T)->plain = 1;
    if (rq->b_start) {
        api__buf_puts(&x->b_start, rq->batched ? "[" : "");
        for (int b = 0; b < rq->B; b++) api__buf_printf(&x->b_start, b ? ",%d" : "%d", rq->b_start[b]);
        api__buf_puts(&x->b_start, rq->batched ? "]" : "");
        items[n++] = (api_item){.name = "sentence_b_start", .kind = API_ITEM_JSON, .data = x->b_start.data};
    }
    if (returns(rq, M_OUT_EMBEDDINGS)) item(&items[n++], rq, "embeddings", API_ITEM_F32, x->emb, 1, W);
    if (returns(rq, M_OUT_POOLER_OUTPUT)) item(&items[n++], rq, "pooler_output", API_ITEM_F32, x->pooler, 1, C);
    if (rq->fill_k) items[n++] = (api_item){.name = "fill_mask", .kind = API_ITEM_JSON, .data = x->fill.data};
    if (x->b_start.failed || x->fill.failed)
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    return n;
}

void api__model_enc_free(model_enc *x) {
    if (x == NULL) return;
    api_buf_free(&x->fill);
    api_buf_free(&x->b_start);
    free(x);
}
