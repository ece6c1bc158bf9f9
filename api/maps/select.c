/* select.c - what a reply gives of the map-shaped outputs (attn_scores,
 * masked_scores, attn_weights, mask, dropout_mask):
 *
 *   "heads": [h, ...]           those heads, in that order
 *   "query_rows": [start, stop] those query rows (half-open)
 *   average_attn_weights        with "heads", the mean over the selected heads
 *   "top_k": k                  per row the k largest entries (topk.c), as
 *                               {"indices", "values"}
 *
 * in that order. Core computes whole maps today and api__map_cut slices
 * them here; api_select keeps the row range as one [start, stop) pair so
 * that core can later be asked for those rows alone (work proportional to
 * them) without changing the reply. "cell" and "color_scale" are the
 * pictures' options (png.c, svg.c), read here with the rest.
 */
#include "api/maps/maps.h"
#include "api/request/request.h"

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

/* ==== Checks ============================================================== */

int api__select_any(const api_select *sel) {
    return sel->n_heads || sel->has_rows || sel->top_k;
}

int api__select_check(const api_select *sel, int H, int L, const char *what, api_err *e) {
    for (int i = 0; i < sel->n_heads; i++)
        if (sel->heads[i] >= H) {
            char name[32];
            snprintf(name, sizeof name, "heads[%d]", i);
            return api__fail(e, API_E_INVALID_ARGUMENT, name,
                             "head %d does not exist: this %s has %d head%s (0 to %d)",
                             sel->heads[i], what, H, H == 1 ? "" : "s", H - 1);
        }
    if (sel->has_rows && sel->row_stop > L)
        return api__fail(e, API_E_INVALID_ARGUMENT, "query_rows",
                         "query_rows [%d, %d] is beyond the %d query positions (0 to %d)",
                         sel->row_start, sel->row_stop, L, L);
    return 0;
}

static size_t cells(const api_map *m) {
    return (size_t)m->B * (size_t)(m->H ? m->H : 1) * (size_t)m->rows * (size_t)m->cols;
}

int api__image_check(const api_map *m, int cell, api_format f, api_err *e) {
    long long w, h; /* the PNG with its title, labels and colour bar */
    api__png_bound(m, cell, &w, &h);
    if (f == API_FORMAT_PNG && (w > MAX_IMAGE_SIDE || h > MAX_IMAGE_SIDE))
        return api__fail(e, API_E_TOO_LARGE, "cell",
                         "the image would be %lld x %lld pixels, over %d: choose a smaller cell, "
                         "fewer heads or query_rows",
                         w, h, MAX_IMAGE_SIDE);
    if (f == API_FORMAT_SVG && cells(m) > MAX_SVG_CELLS)
        return api__fail(e, API_E_TOO_LARGE, "output_format",
                         "an SVG of %zu cells is too large to view (the limit is %d): select "
                         "heads or query_rows, or ask for a PNG",
                         cells(m), MAX_SVG_CELLS);
    return 0;
}

size_t api__image_values(const api_map *m, int cell, api_format f) {
    /* the picture (3 bytes a pixel) or the SVG text (about 128 bytes a cell), in floats */
    long long w, h;
    api__png_bound(m, cell, &w, &h);
    return f == API_FORMAT_PNG ? (size_t)w * (size_t)h : cells(m) * 32;
}

/* ==== Cutting ============================================================= */

/* rows x cols entries of one head (or the average) at src into the cut:
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

/* The mean of the listed heads' [rows][cols] slabs of one block into avg:
 * their sum in the listed order divided by their count, as torch divides. */
static void head_mean(const float *block, const api_map_src *src, const api_map_cut *cut,
                      float *avg) {
    size_t rows = (size_t)(cut->r1 - cut->r0), cols = (size_t)src->cols;
    memset(avg, 0, rows * cols * sizeof(float));
    for (int i = 0; i < cut->n_heads; i++) {
        const float *w = block + ((size_t)cut->heads[i] * (size_t)src->rows + (size_t)cut->r0) * cols;
        for (size_t j = 0; j < rows * cols; j++) avg[j] += w[j];
    }
    for (size_t j = 0; j < rows * cols; j++) avg[j] /= (float)cut->n_heads;
}

typedef struct {
    char *values;
    int32_t *indices;
    float *avg;
    int *scratch;
} cut_out;

static void cut_block(const api_map_src *src, const api_map_cut *cut, int o, cut_out *w) {
    size_t item = src->u8 ? 1 : sizeof(float), cols = (size_t)src->cols;
    size_t rows = (size_t)(cut->r1 - cut->r0), slab = (size_t)src->rows * cols;
    int from = src->outer_src ? src->outer_src[o] : o;
    const char *block = (const char *)src->data + (size_t)from * (size_t)src->H * slab * item;
    const uint8_t *mask = src->mask ? src->mask + (size_t)from * src->mask_step +
                                          (size_t)cut->r0 * cols : NULL;
    if (cut->average) {
        head_mean((const float *)block, src, cut, w->avg);
        put_slab(w->avg, 0, rows, src->cols, mask, cut->top_k, &w->values, &w->indices, w->scratch);
        return;
    }
    int heads = cut->heads ? cut->n_heads : src->H;
    for (int i = 0; i < heads; i++) {
        int h = cut->heads ? cut->heads[i] : i;
        const char *slab_at = block + ((size_t)h * slab + (size_t)cut->r0 * cols) * item;
        put_slab(slab_at, src->u8, rows, src->cols, mask, cut->top_k, &w->values, &w->indices,
                 w->scratch);
    }
}

int api__map_cut(const api_map_src *src, const api_map_cut *cut, api_arrays *a, void **values,
                 int32_t **indices, api_err *e) {
    size_t item = src->u8 ? 1 : sizeof(float), cols = (size_t)src->cols;
    size_t rows = (size_t)(cut->r1 - cut->r0);
    size_t heads = cut->average ? 1 : (size_t)(cut->heads ? cut->n_heads : src->H);
    size_t width = cut->top_k ? (size_t)cut->top_k : cols;
    size_t count = (size_t)src->outer * heads * rows * width;
    cut_out w = {.values = api__arrays_take(a, count, item)};
    if (cut->top_k) w.indices = api__arrays_take(a, count, sizeof(int32_t));
    if (cut->average) w.avg = api__arrays_take(a, rows * cols, sizeof(float));
    if (cut->top_k) w.scratch = api__arrays_take(a, cols, sizeof(int));
    if (a->failed) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the selected maps");
    *values = w.values;
    *indices = w.indices;
    for (int o = 0; o < src->outer; o++) cut_block(src, cut, o, &w);
    return 0;
}
