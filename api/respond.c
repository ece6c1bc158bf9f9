/* respond.c - the 200 reply, written straight into the output buffer:
 * {"module", "shape": {...}, then each requested output in a fixed order}.
 * Tensors lose the batch axis when the inputs had none, and the head axis
 * for single-head modules (and SDPA on [L][E] tensors). */
#include "api/api_internal.h"

#include <string.h>

/* Builds a shape from [B][H][rows][cols], dropping B and H as the request
 * asks; has_heads 0 means the tensor never has a head axis. */
static int dims(int *shape, const api_request *rq, int B, int has_heads, int H, int rows, int cols) {
    int r = 0;
    if (rq->batched) shape[r++] = B;
    if (has_heads && rq->multi_head) shape[r++] = H;
    shape[r++] = rows;
    shape[r++] = cols;
    return r;
}

static void key(api_buf *b, const char *k) {
    api__buf_put(b, ",\"", 2);
    api__buf_puts(b, k);
    api__buf_put(b, "\":", 2);
}

static void floats(api_buf *b, const char *k, const float *x, int rank, const int *shape,
                   const api_fmt *f, int *nonfinite) {
    key(b, k);
    api__emit_floats(b, x, rank, shape, f, nonfinite);
}

static void params_out(api_buf *b, const api_result *r, int *nonfinite) {
    const api_request *rq = r->rq;
    api__buf_put(b, "{", 1);
    for (int i = 0; i < r->plan->param_count && !b->failed; i++) {
        attn_param p;
        attn_param_get(&rq->cfg, r->plan, i, &p);
        if (i) api__buf_put(b, ",", 1);
        api__buf_json_string(b, p.name);
        api__buf_put(b, ":", 1);
        api__emit_floats(b, r->params + p.offset, p.rank, p.shape, &rq->fmt, nonfinite);
    }
    api__buf_put(b, "}", 1);
}

int api__respond(api_buf *b, const api_result *r, const api_reply *timing_so_far,
                 double t_serialise_start, api_err *e) {
    const api_request *rq = r->rq;
    const attn_plan *p = r->plan;
    const attn_outputs *o = &r->out;
    const api_fmt *f = &rq->fmt;
    unsigned want = rq->returns;
    int nonfinite = 0, s[API_MAX_RANK], n;

    api__buf_puts(b, "{\"module\":");
    api__buf_json_string(b, attn_module_name(rq->cfg.module));
    api__buf_printf(b,
                    ",\"shape\":{\"batch\":%d,\"tokens\":%d,\"kv_tokens\":%d,\"d_in\":%d,"
                    "\"d_out\":%d,\"num_heads\":%d,\"head_dim\":%d}",
                    p->B, p->L, p->S, p->in_width, p->out_width, p->H, p->Dk);

    if (want & 1u << API_OUT_CONTEXT) {
        if (rq->cfg.module == ATTN_SDPA) {
            /* as F.scaled_dot_product_attention returns it: [B][H][L][Ev] */
            n = dims(s, rq, p->B, 1, p->H, p->L, p->Dv);
            floats(b, "context", r->context_bhld, n, s, f, &nonfinite);
        } else {
            n = dims(s, rq, p->B, 0, 0, p->L, p->out_width);
            floats(b, "context", o->context, n, s, f, &nonfinite);
        }
    }
    if (want & 1u << API_OUT_ATTN_WEIGHTS) {
        int avg = o->weights_avg != NULL;
        n = dims(s, rq, p->B, !avg, p->H, p->L, p->S);
        floats(b, "attn_weights", avg ? o->weights_avg : o->weights, n, s, f, &nonfinite);
    }
    n = dims(s, rq, p->B, 1, p->H, p->L, p->S);
    if (want & 1u << API_OUT_ATTN_SCORES) floats(b, "attn_scores", o->scores, n, s, f, &nonfinite);
    if (want & 1u << API_OUT_MASKED_SCORES)
        floats(b, "masked_scores", o->masked_scores, n, s, f, &nonfinite);
    if (want & 1u << API_OUT_MASK) {
        int m = dims(s, rq, p->B, 0, 0, p->L, p->S);
        key(b, "mask");
        api__emit_bytes(b, o->mask, m, s, f);
    }
    if (want & 1u << API_OUT_DROPOUT_MASK) {
        int m = p->drop_site == ATTN_DROP_OUTPUT ? dims(s, rq, p->B, 0, 0, p->L, p->out_width)
                                                 : dims(s, rq, p->B, 1, p->H, p->L, p->S);
        floats(b, "dropout_mask", o->dropout_mask, m, s, f, &nonfinite);
    }
    if (want & 1u << API_OUT_QUERIES) {
        n = dims(s, rq, p->B, 1, p->H, p->L, p->Dk);
        floats(b, "queries", o->queries, n, s, f, &nonfinite);
    }
    if (want & 1u << API_OUT_KEYS) {
        n = dims(s, rq, p->B, 1, p->Hkv, p->S, p->Dk);
        floats(b, "keys", o->keys, n, s, f, &nonfinite);
    }
    if (want & 1u << API_OUT_VALUES) {
        n = dims(s, rq, p->B, 1, p->Hkv, p->S, p->Dv);
        floats(b, "values", o->values, n, s, f, &nonfinite);
    }
    if (want & 1u << API_OUT_CONTEXT_HEADS) {
        n = dims(s, rq, p->B, 0, 0, p->L, p->ctx_width);
        floats(b, "context_heads", o->context_heads, n, s, f, &nonfinite);
    }
    if (want & 1u << API_OUT_PARAMS) {
        key(b, "params");
        params_out(b, r, &nonfinite);
    }
    if (want & 1u << API_OUT_TOKENS) {
        key(b, "tokens");
        if (rq->tokens == NULL) {
            api__buf_puts(b, "null");
        } else {
            api__buf_put(b, "[", 1);
            const char *t = rq->tokens;
            for (int i = 0; i < rq->n_tokens; i++) {
                if (i) api__buf_put(b, ",", 1);
                api__buf_json_string(b, t);
                t += strlen(t) + 1;
            }
            api__buf_put(b, "]", 1);
        }
    }
    if (want & 1u << API_OUT_TIMING) {
        double ser = api__now_ms() - t_serialise_start;
        api__buf_printf(b, ",\"timing\":{\"parse_ms\":%.3f,\"compute_ms\":%.3f,\"serialise_ms\":%.3f}",
                        timing_so_far->ms_parse, timing_so_far->ms_compute, ser);
    }
    api__buf_puts(b, "}\n");
    if (nonfinite)
        return api__fail(e, 500, "internal_error", NULL,
                         "the result holds NaN or infinity, which JSON cannot carry");
    if (b->failed)
        return api__fail(e, 503, "out_of_memory", NULL, "cannot allocate the reply");
    return 0;
}
