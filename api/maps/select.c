/* maps.c - what a reply gives of the map-shaped outputs (attn_scores,
 * masked_scores, attn_weights, mask, dropout_mask):
 *
 *   "heads": [h, ...]           those heads, in that order
 *   "query_rows": [start, stop] those query rows (half-open)
 *   average_attn_weights        with "heads", the mean over the selected heads
 *   "top_k": k                  per row the k largest entries (topk.c), as
 *                               {"indices", "values"}
 *
 * in that order. Core computes whole maps today and the selection slices
 * them here; api_select keeps the row range as one [start, stop) pair so
 * that core can later be asked for those rows alone (work proportional to
 * them) without changing the reply. "cell" and "color_scale" are the image
 * options (image.c, svg.c), read here with the rest.
 */
#include "api/module/module.h"

#include <stdlib.h>
#include <string.h>

/* Longest heads list; largest k, image cell and image side (pixels). */
#define MAX_HEADS 4096
#define MAX_TOP_K (1 << 20)
#define MAX_CELL 64
#define MAX_IMAGE_SIDE 32768
/* Most cells an SVG reply may draw (each is a <rect> with a <title>). */
#define MAX_SVG_CELLS (1 << 18)

/* ==== Parsing ============================================================= */

static int want_int(api_err *e, const char *name, const json_t *v, long long min, long long max,
                    int *out) {
    if (!json_is_integer(v))
        return api__fail(e, API_E_INVALID_TYPE, name, "%s must be an integer", name);
    long long x = json_integer_value(v);
    if (x < min || x > max)
        return api__fail(e, API_E_INVALID_ARGUMENT, name, "%s must be from %lld to %lld, got %lld",
                         name, min, max, x);
    *out = (int)x;
    return 0;
}

static int read_heads(const json_t *v, api_select *sel, api_err *e) {
    if (!json_is_array(v))
        return api__fail(e, API_E_INVALID_TYPE, "heads", "heads must be an array of head indices");
    size_t n = json_array_size(v);
    if (n == 0)
        return api__fail(e, API_E_INVALID_ARGUMENT, "heads", "heads is empty: name at least one head");
    if (n > MAX_HEADS)
        return api__fail(e, API_E_INVALID_ARGUMENT, "heads", "heads lists %zu heads, over %d", n, MAX_HEADS);
    sel->heads = malloc(n * sizeof *sel->heads);
    if (sel->heads == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, "heads", "cannot copy heads");
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "heads[%zu]", i);
        if (want_int(e, name, json_array_get(v, i), 0, INT32_MAX, &sel->heads[i])) return -1;
        for (size_t j = 0; j < i; j++)
            if (sel->heads[j] == sel->heads[i])
                return api__fail(e, API_E_INVALID_ARGUMENT, name, "head %d is listed twice",
                                 sel->heads[i]);
        sel->n_heads = (int)i + 1;
    }
    return 0;
}

static int read_rows(const json_t *v, api_select *sel, api_err *e) {
    if (!json_is_array(v) || json_array_size(v) != 2)
        return api__fail(e, API_E_INVALID_TYPE, "query_rows",
                         "query_rows must be [start, stop]: the query positions start..stop-1");
    if (want_int(e, "query_rows", json_array_get(v, 0), 0, INT32_MAX, &sel->row_start) ||
        want_int(e, "query_rows", json_array_get(v, 1), 0, INT32_MAX, &sel->row_stop))
        return -1;
    if (sel->row_stop <= sel->row_start)
        return api__fail(e, API_E_INVALID_ARGUMENT, "query_rows",
                         "query_rows [%d, %d] is empty: stop must be above start", sel->row_start,
                         sel->row_stop);
    sel->has_rows = 1;
    return 0;
}

int api__select_parse(const json_t *root, api_select *sel, api_err *e) {
    const json_t *v;
    if ((v = api__field(root, "heads")) && read_heads(v, sel, e)) return -1;
    if ((v = api__field(root, "query_rows")) && read_rows(v, sel, e)) return -1;
    if ((v = api__field(root, "top_k")) && want_int(e, "top_k", v, 1, MAX_TOP_K, &sel->top_k)) return -1;
    if ((v = api__field(root, "cell")) && want_int(e, "cell", v, 1, MAX_CELL, &sel->cell)) return -1;
    if ((v = api__field(root, "color_scale"))) {
        static const char *const names[] = {"unit", "row", "max"};
        const char *s = json_string_value(v);
        for (int i = 0; s && i < 3; i++)
            if (strcmp(s, names[i]) == 0) {
                sel->color = (api_color_scale)i;
                return 0;
            }
        return api__fail(e, s ? API_E_INVALID_ARGUMENT : API_E_INVALID_TYPE, "color_scale",
                         "color_scale must be \"unit\", \"row\" or \"max\"");
    }
    return 0;
}

void api__select_free(api_select *sel) {
    if (sel == NULL) return;
    free(sel->heads);
    *sel = (api_select){0};
}

/* ==== Shapes ============================================================== */

int api__select_active(const api_request *rq) {
    return rq->sel.n_heads || rq->sel.has_rows || rq->sel.top_k;
}

static int is_image(const api_request *rq) {
    return rq->fmt.format == API_FORMAT_PNG || rq->fmt.format == API_FORMAT_SVG;
}

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

static size_t view_count(const view_plan *v) {
    size_t heads = v->average ? 1 : (size_t)v->n_heads;
    return (size_t)v->t.B * heads * (size_t)(v->r1 - v->r0) * (size_t)v->width;
}

static int is_map(const api_request *rq, int k) {
    return api__outputs[k].map && (rq->returns & 1u << k);
}

int api__select_check(const api_request *rq, const attn_plan *p, api_err *e) {
    const api_select *s = &rq->sel;
    for (int i = 0; i < s->n_heads; i++)
        if (s->heads[i] >= p->H) {
            char name[32];
            snprintf(name, sizeof name, "heads[%d]", i);
            return api__fail(e, API_E_INVALID_ARGUMENT, name,
                             "head %d does not exist: this module has %d head%s (0 to %d)",
                             s->heads[i], p->H, p->H == 1 ? "" : "s", p->H - 1);
        }
    if (s->has_rows && s->row_stop > p->L)
        return api__fail(e, API_E_INVALID_ARGUMENT, "query_rows",
                         "query_rows [%d, %d] is beyond the %d query positions (0 to %d)",
                         s->row_start, s->row_stop, p->L, p->L);
    if (!is_image(rq)) return 0;
    if (!(rq->returns & 1u << API_OUT_ATTN_WEIGHTS))
        return api__fail(e, API_E_INVALID_ARGUMENT, "output_format",
                         "an image shows attn_weights: add it to return");
    if (s->top_k)
        return api__fail(e, API_E_INVALID_ARGUMENT, "top_k",
                         "top_k gives lists, not maps: it does not combine with an image format");
    view_plan v;
    plan_view(rq, p, API_OUT_ATTN_WEIGHTS, &v);
    api_map m = {.B = v.t.B, .H = v.average || !v.headed ? 0 : v.n_heads, .rows = v.r1 - v.r0,
                 .cols = v.t.cols};
    api_image_layout lay;
    api__image_layout(&m, s->cell, &lay);
    if (rq->fmt.format == API_FORMAT_PNG && (lay.width > MAX_IMAGE_SIDE || lay.height > MAX_IMAGE_SIDE))
        return api__fail(e, API_E_TOO_LARGE, "cell",
                         "the image would be %d x %d pixels, over %d: choose a smaller cell, "
                         "fewer heads or query_rows",
                         lay.width, lay.height, MAX_IMAGE_SIDE);
    if (rq->fmt.format == API_FORMAT_SVG && view_count(&v) > MAX_SVG_CELLS)
        return api__fail(e, API_E_TOO_LARGE, "output_format",
                         "an SVG of %zu cells is too large to view (the limit is %d): select "
                         "heads or query_rows, or ask for a PNG",
                         view_count(&v), MAX_SVG_CELLS);
    return 0;
}

size_t api__select_count(const api_request *rq, const attn_plan *p, api_out k) {
    view_plan v;
    plan_view(rq, p, k, &v);
    if (!api__outputs[k].map) return v.t.count;
    size_t n = view_count(&v) * (rq->sel.top_k ? 2 : 1);
    if (k == API_OUT_ATTN_WEIGHTS && is_image(rq)) {
        /* the picture (3 bytes a pixel) or the SVG text (about 128 bytes a cell), in floats */
        api_map m = {.B = v.t.B, .H = v.average || !v.headed ? 0 : v.n_heads,
                     .rows = v.r1 - v.r0, .cols = v.t.cols};
        api_image_layout lay;
        api__image_layout(&m, rq->sel.cell, &lay);
        n += rq->fmt.format == API_FORMAT_PNG ? (size_t)lay.width * (size_t)lay.height
                                              : view_count(&v) * 32;
    }
    return n;
}

int api__select_needs_mask(const api_request *rq) {
    if (!rq->sel.top_k) return 0;
    for (int k = 0; k < API_OUT_COUNT; k++)
        if (is_map(rq, k)) return 1;
    return 0;
}

/* ==== Slicing ============================================================= */

void api__map_of(const api_result *r, api_out k, api_map *m) {
    if (r->mapped & 1u << k) {
        *m = r->maps[k];
        return;
    }
    api_out_tensor t;
    api__out_tensor(k, r->rq, r->plan, &t);
    *m = (api_map){.data = *(void *const *)((const char *)&r->out + t.slot),
                   .B = t.B, .H = t.H && r->rq->multi_head ? t.H : 0, .rows = t.rows, .cols = t.cols};
}

/* rows x cols entries of one head (or the average) at src into the view:
 * copied, or their top-k. mask: the [rows][cols] mask of these rows, or NULL. */
static void put_slab(const void *src, int u8, size_t rows, int cols, const uint8_t *mask,
                     int top_k, char **values, int32_t **indices, int *scratch) {
    size_t item = u8 ? 1 : sizeof(float);
    if (!top_k) {
        memcpy(*values, src, rows * (size_t)cols * item);
        *values += rows * (size_t)cols * item;
        return;
    }
    size_t step = mask ? (size_t)cols : 0;
    if (u8) api__topk_u8(src, rows, cols, mask, step, top_k, (uint8_t *)*values, *indices, scratch);
    else api__topk_f32(src, rows, cols, mask, step, top_k, (float *)*values, *indices, scratch);
    *values += rows * (size_t)top_k * item;
    *indices += rows * (size_t)top_k;
}

static int apply_one(api_result *r, api_out k, const uint8_t *mask, api_err *e) {
    const api_request *rq = r->rq;
    const attn_plan *p = r->plan;
    view_plan v;
    plan_view(rq, p, k, &v);
    int u8 = api__outputs[k].elem == API_ELEM_U8, top_k = rq->sel.top_k;
    size_t item = u8 ? 1 : sizeof(float), count = view_count(&v);
    size_t rows = (size_t)(v.r1 - v.r0), cols = (size_t)v.t.cols;
    api_map *m = &r->maps[k];
    *m = (api_map){.B = v.t.B, .H = v.average || !v.headed ? 0 : v.n_heads, .rows = (int)rows,
                   .cols = v.width};
    m->data = malloc(count ? count * item : 1);
    if (top_k) m->indices = malloc(count ? count * sizeof(int32_t) : 1);
    float *avg = v.average ? malloc(rows * cols * sizeof(float)) : NULL;
    int *scratch = top_k ? malloc(cols * sizeof(int)) : NULL;
    r->mapped |= 1u << k; /* released by api__select_release, even half-built */
    if (m->data == NULL || (top_k && (m->indices == NULL || scratch == NULL)) ||
        (v.average && avg == NULL)) {
        free(avg);
        free(scratch);
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the selected maps");
    }

    /* masked entries are never chosen: core's mask covers the [L][S] maps,
     * not GPT-2's dropout on the output */
    int masked = top_k && mask && cols == (size_t)p->S &&
                 !(k == API_OUT_DROPOUT_MASK && p->drop_site == ATTN_DROP_OUTPUT);
    const char *base = *(const char *const *)((const char *)&r->out + v.t.slot);
    char *values = m->data;
    int32_t *indices = m->indices;
    for (int b = 0; b < v.t.B; b++) {
        const uint8_t *bm = masked ? mask + ((size_t)b * p->L + (size_t)v.r0) * cols : NULL;
        if (v.average) {
            memset(avg, 0, rows * cols * sizeof(float));
            for (int i = 0; i < v.n_heads; i++) {
                const float *w = (const float *)base +
                    (((size_t)b * v.src_heads + (size_t)rq->sel.heads[i]) * v.t.rows + (size_t)v.r0) * cols;
                for (size_t j = 0; j < rows * cols; j++) avg[j] += w[j];
            }
            for (size_t j = 0; j < rows * cols; j++) avg[j] /= (float)v.n_heads; /* sum / H, as torch */
            put_slab(avg, 0, rows, (int)cols, bm, top_k, &values, &indices, scratch);
            continue;
        }
        for (int i = 0; i < v.n_heads; i++) {
            int h = v.headed && rq->sel.n_heads ? rq->sel.heads[i] : i;
            const char *src = base + (((size_t)b * v.src_heads + (size_t)h) * v.t.rows +
                                      (size_t)v.r0) * cols * item;
            put_slab(src, u8, rows, (int)cols, bm, top_k, &values, &indices, scratch);
        }
    }
    free(avg);
    free(scratch);
    return 0;
}

int api__select_apply(api_result *r, const uint8_t *mask, api_err *e) {
    if (!api__select_active(r->rq)) return 0;
    for (int k = 0; k < API_OUT_COUNT; k++)
        if (is_map(r->rq, k) && apply_one(r, (api_out)k, mask, e)) return -1;
    return 0;
}

void api__select_release(api_result *r) {
    for (int k = 0; k < API_OUT_COUNT; k++) {
        if (!(r->mapped & 1u << k)) continue;
        free(r->maps[k].data);
        free(r->maps[k].indices);
        r->maps[k] = (api_map){0};
    }
    r->mapped = 0;
}
