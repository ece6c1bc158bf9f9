/* respond.c - the 200 reply, written straight into the output buffer:
 * {"module", "shape": {...}, then each requested output in the order of the
 * output table}. Tensors lose the batch axis when the inputs had none, and
 * the head axis for single-head modules (and SDPA on [L][E] tensors). */
#include "api/module/module.h"

#include <string.h>

void api__shape_json(api_buf *b, const attn_plan *p) {
    api__buf_printf(b,
                    "{\"batch\":%d,\"tokens\":%d,\"kv_tokens\":%d,\"d_in\":%d,"
                    "\"d_out\":%d,\"num_heads\":%d,\"head_dim\":%d}",
                    p->B, p->L, p->S, p->in_width, p->out_width, p->H, p->Dk);
}

void api__tokens_json(api_buf *b, const api_request *rq) {
    if (rq->tokens == NULL) {
        api__buf_puts(b, "null");
        return;
    }
    api__buf_put(b, "[", 1);
    const char *t = rq->tokens;
    for (int i = 0; i < rq->n_tokens; i++) {
        if (i) api__buf_put(b, ",", 1);
        api__buf_json_string(b, t);
        t += strlen(t) + 1;
    }
    api__buf_put(b, "]", 1);
}

static void key(api_buf *b, const char *k) {
    api__buf_put(b, ",\"", 2);
    api__buf_puts(b, k);
    api__buf_put(b, "\":", 2);
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

int api__out_dims(const api_result *r, api_out k, int *shape, const void **data) {
    const api_request *rq = r->rq;
    api_map m;
    if (api__outputs[k].map) {
        api__map_of(r, k, &m); /* after selection and top-k */
    } else {
        api_out_tensor t;
        api__out_tensor(k, rq, r->plan, &t);
        m = (api_map){.data = *(void *const *)((const char *)&r->out + t.slot), .B = t.B,
                      .H = t.H && rq->multi_head ? t.H : 0, .rows = t.rows, .cols = t.cols};
    }
    int n = 0;
    if (rq->batched) shape[n++] = m.B;
    if (m.H) shape[n++] = m.H;
    shape[n++] = m.rows;
    shape[n++] = m.cols;
    *data = m.data;
    return n;
}

int api__reply_has_nonfinite(const api_result *r) {
    const api_request *rq = r->rq;
    for (int k = 0; k < API_OUT_COUNT; k++) {
        if (!(rq->returns & 1u << k)) continue;
        if (k == API_OUT_PARAMS) {
            if (api__has_nan_or_inf(r->params, r->plan->n_params)) return 1;
            continue;
        }
        if (api__outputs[k].elem != API_ELEM_F32) continue;
        int shape[API_MAX_RANK];
        const void *data;
        int rank = api__out_dims(r, (api_out)k, shape, &data);
        size_t n = 1;
        for (int d = 0; d < rank; d++) n *= (size_t)shape[d];
        if (api__has_nan_or_inf(data, n)) return 1;
    }
    return 0;
}

static void tensor_out(api_buf *b, const api_result *r, api_out k, int *nonfinite) {
    int s[API_MAX_RANK];
    const void *data;
    int n = api__out_dims(r, k, s, &data);
    const int32_t *indices = r->mapped & 1u << k ? r->maps[k].indices : NULL;
    if (indices) { /* top-k */
        api__buf_puts(b, "{\"indices\":");
        api__emit_ints(b, indices, n, s, &r->rq->fmt);
        api__buf_puts(b, ",\"values\":");
    }
    if (api__outputs[k].elem == API_ELEM_U8)
        api__emit_bytes(b, data, n, s, &r->rq->fmt);
    else
        api__emit_floats(b, data, n, s, &r->rq->fmt, nonfinite);
    if (indices) api__buf_put(b, "}", 1);
}

int api__respond(api_buf *b, const api_result *r, const api_reply *timing_so_far,
                 double t_serialise_start, api_st_parts *parts, api_err *e) {
    const api_request *rq = r->rq;
    const attn_plan *p = r->plan;
    int nonfinite = 0;

    if (rq->fmt.format == API_FORMAT_SAFETENSORS)
        return api__respond_safetensors(b, r, timing_so_far, t_serialise_start, parts, e);
    if (rq->fmt.format == API_FORMAT_PNG) return api__respond_png(b, r, e);
    if (rq->fmt.format == API_FORMAT_SVG) return api__respond_svg(b, r, e);
    api__buf_puts(b, "{\"module\":");
    api__buf_json_string(b, attn_module_name(rq->cfg.module));
    api__buf_put(b, ",\"shape\":", 9);
    api__shape_json(b, p);

    for (int k = 0; k < API_OUT_COUNT; k++) {
        if (!(rq->returns & 1u << k)) continue;
        key(b, api__outputs[k].name);
        switch ((api_out)k) {
        case API_OUT_PARAMS: params_out(b, r, &nonfinite); break;
        case API_OUT_TOKENS: api__tokens_json(b, rq); break;
        case API_OUT_TIMING:
            api__buf_printf(b, "{\"parse_ms\":%.3f,\"compute_ms\":%.3f,\"serialise_ms\":%.3f}",
                            timing_so_far->ms_parse, timing_so_far->ms_compute,
                            api__now_ms() - t_serialise_start);
            break;
        default: tensor_out(b, r, (api_out)k, &nonfinite); break;
        }
    }
    api__buf_puts(b, "}\n");
    if (nonfinite)
        return api__fail(e, API_E_INTERNAL_ERROR, NULL,
                         "the result holds NaN or infinity, which JSON cannot carry");
    if (b->failed)
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    return 0;
}
