/* view.c - what a module request's reply gives of its map-shaped outputs
 * (attn_scores, masked_scores, attn_weights, mask, dropout_mask): the heads
 * of "heads", the rows of "query_rows", the mean of the selected heads with
 * average_attn_weights, the k largest of each row with "top_k" (maps/'s
 * api__map_cut does the cutting), and the checks and sizes of all that. */
#include "api/module/module.h"

#include <string.h>

/* The computed tensor of output k and what the reply keeps of it. */
typedef struct {
    api_out_tensor t;
    int src_heads;       /* head blocks in the computed tensor (1 without a head axis) */
    int headed;          /* the reply has a head axis before averaging */
    int average;         /* mean over the selected heads */
    int n_heads;         /* heads kept */
    int r0, r1;          /* query rows kept */
    int width;           /* cols, or k */
} view_plan;

static void plan_view(const api_request *rq, const attn_plan *p, api_out k, view_plan *v) {
    const api_select *s = &rq->sel;
    api__out_tensor(k, rq, p, &v->t);
    v->src_heads = v->t.H ? v->t.H : 1;
    v->headed = v->t.H && rq->multi_head;
    v->average = k == API_OUT_ATTN_WEIGHTS && rq->average && rq->multi_head && s->n_heads;
    v->n_heads = v->headed && s->n_heads ? s->n_heads : v->src_heads;
    v->r0 = s->has_rows ? s->row_start : 0;
    v->r1 = s->has_rows ? s->row_stop : v->t.rows;
    v->width = s->top_k ? s->top_k : v->t.cols;
}

/* The reply's panels of a view (before top-k). */
static api_map view_map(const view_plan *v) {
    return (api_map){.B = v->t.B, .H = v->average || !v->headed ? 0 : v->n_heads,
                     .rows = v->r1 - v->r0, .cols = v->t.cols};
}

static size_t view_count(const view_plan *v) {
    size_t heads = v->average ? 1 : (size_t)v->n_heads;
    return (size_t)v->t.B * heads * (size_t)(v->r1 - v->r0) * (size_t)v->width;
}

static int is_image(const api_request *rq) {
    return (api_format_get(rq->fmt.format)->flags & API_FMT_IMAGE) != 0;
}

static int is_map(const api_request *rq, int k) {
    return api__outputs[k].map && (rq->returns & 1u << k);
}

int api__view_check(const api_request *rq, const attn_plan *p, api_err *e) {
    const api_select *s = &rq->sel;
    if (api__select_check(s, p->H, p->L, "module", e)) return -1;
    if (!is_image(rq)) return 0;
    if (!(rq->returns & 1u << API_OUT_ATTN_WEIGHTS))
        return api__fail(e, API_E_INVALID_ARGUMENT, "output_format",
                         "an image shows attn_weights: add it to return");
    if (s->top_k)
        return api__fail(e, API_E_INVALID_ARGUMENT, "top_k",
                         "top_k gives lists, not maps: it does not combine with an image format");
    view_plan v;
    plan_view(rq, p, API_OUT_ATTN_WEIGHTS, &v);
    api_map m = view_map(&v);
    return api__image_check(&m, s->cell, rq->fmt.format, e);
}

size_t api__view_count(const api_request *rq, const attn_plan *p, api_out k) {
    view_plan v;
    plan_view(rq, p, k, &v);
    if (!api__outputs[k].map) return v.t.count;
    size_t n = view_count(&v) * (rq->sel.top_k ? 2 : 1);
    if (k == API_OUT_ATTN_WEIGHTS && is_image(rq)) {
        api_map m = view_map(&v);
        n += api__image_values(&m, rq->sel.cell, rq->fmt.format);
    }
    return n;
}

int api__view_needs_mask(const api_request *rq) {
    if (!rq->sel.top_k) return 0;
    for (int k = 0; k < API_OUT_COUNT; k++)
        if (is_map(rq, k)) return 1;
    return 0;
}

/* Output k as computed (the whole tensor of out). */
static void computed_map(const api_request *rq, const attn_plan *p, const attn_outputs *out,
                         api_out k, api_map *m) {
    api_out_tensor t;
    api__out_tensor(k, rq, p, &t);
    *m = (api_map){.data = *(void *const *)((const char *)out + t.slot), .B = t.B,
                   .H = t.H && rq->multi_head ? t.H : 0, .rows = t.rows, .cols = t.cols};
}

/* The cut of map output k into m: heads, rows, average, top-k; mask is
 * core's [B][L][S] mask (NULL if none). */
static int cut_one(const api_request *rq, const attn_plan *p, const attn_outputs *out, api_out k,
                   const uint8_t *mask, api_arrays *a, api_map *m, api_err *e) {
    view_plan v;
    plan_view(rq, p, k, &v);
    const api_select *s = &rq->sel;
    /* masked entries are never chosen: core's mask covers the [L][S] maps,
     * not GPT-2's dropout on the output */
    int masked = s->top_k && mask && v.t.cols == p->S &&
                 !(k == API_OUT_DROPOUT_MASK && p->drop_site == ATTN_DROP_OUTPUT);
    api_map_src src = {.data = *(void *const *)((const char *)out + v.t.slot),
                       .u8 = api__outputs[k].elem == API_ELEM_U8, .outer = v.t.B,
                       .H = v.src_heads, .rows = v.t.rows, .cols = v.t.cols,
                       .mask = masked ? mask : NULL, .mask_step = (size_t)p->L * (size_t)p->S};
    api_map_cut cut = {.heads = v.headed && s->n_heads ? s->heads : NULL,
                       .n_heads = s->n_heads, .r0 = v.r0, .r1 = v.r1, .top_k = s->top_k,
                       .average = v.average};
    *m = view_map(&v);
    m->cols = v.width;
    return api__map_cut(&src, &cut, a, &m->data, &m->indices, e);
}

int api__view_maps(const api_request *rq, const attn_plan *p, const attn_outputs *out,
                   api_arrays *a, api_map maps[API_OUT_COUNT], api_err *e) {
    int cut = api__select_any(&rq->sel);
    for (int k = 0; k < API_OUT_COUNT; k++) {
        if (!is_map(rq, k)) continue;
        if (!cut) computed_map(rq, p, out, (api_out)k, &maps[k]);
        else if (cut_one(rq, p, out, (api_out)k, out->mask, a, &maps[k], e)) return -1;
    }
    return 0;
}
