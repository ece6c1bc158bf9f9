/* png.c - attn_weights as a PNG heat map ("output_format": "png", or
 * Accept: image/png), written with libspng.
 *
 * One panel per batch entry and head (after selection and averaging), rows
 * = queries, columns = keys, `cell` x `cell` pixels per weight; the panels
 * fill a grid of ceil(sqrt(n)) columns, row by row, 4 white pixels apart.
 * Colours: viridis at round(255 v), v the weight clamped to 0..1, or divided
 * by its row's largest ("color_scale": "row") or its panel's ("max").
 */
#include "api/maps/maps.h"

#include <spng.h>
#include <stdlib.h>
#include <string.h>

static float max_of(const float *x, size_t n) {
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* Paints the panels into rgb (width x height x 3, white). */
static void paint(uint8_t *rgb, const api_map *m, const api_image_layout *lay, api_color_scale scale) {
    size_t stride = (size_t)lay->width * 3, cols = (size_t)m->cols, rows = (size_t)m->rows;
    const float *w = m->data;
    for (int p = 0; p < lay->panels; p++) {
        const float *panel = w + (size_t)p * rows * cols;
        float panel_max = max_of(panel, rows * cols);
        size_t x0 = (size_t)(p % lay->grid_cols) * (size_t)(lay->panel_w + lay->gap);
        size_t y0 = (size_t)(p / lay->grid_cols) * (size_t)(lay->panel_h + lay->gap);
        for (size_t i = 0; i < rows; i++) {
            const float *row = panel + i * cols;
            float row_max = max_of(row, cols);
            uint8_t *line = rgb + (y0 + i * (size_t)lay->cell) * stride + x0 * 3;
            for (size_t j = 0; j < cols; j++) {
                const uint8_t *c = api__viridis[api__image_level(row[j], row_max, panel_max, scale)];
                for (int dx = 0; dx < lay->cell; dx++)
                    memcpy(line + (j * (size_t)lay->cell + (size_t)dx) * 3, c, 3);
            }
            for (int dy = 1; dy < lay->cell; dy++)
                memcpy(line + (size_t)dy * stride, line, (size_t)lay->panel_w * 3);
        }
    }
}

int api__write_png(api_buf *b, const api_contents *c, api_st_parts *parts, api_err *e) {
    (void)parts;
    const api_image *im = c->image;
    const api_map m = im->map;
    api_image_layout lay;
    api__image_layout(&m, im->cell, &lay);
    size_t bytes = (size_t)lay.width * (size_t)lay.height * 3; /* sides checked by api__select_check */
    uint8_t *rgb = malloc(bytes ? bytes : 1);
    if (rgb == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the image");
    memset(rgb, 255, bytes);
    paint(rgb, &m, &lay, im->color);

    spng_ctx *ctx = spng_ctx_new(SPNG_CTX_ENCODER);
    int rc = ctx ? 0 : SPNG_EMEM;
    struct spng_ihdr ihdr = {.width = (uint32_t)lay.width, .height = (uint32_t)lay.height,
                             .bit_depth = 8, .color_type = SPNG_COLOR_TYPE_TRUECOLOR};
    if (!rc) rc = spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
    /* Heat maps are runs of equal pixels and rows repeated cell times, which
     * deflate finds by itself: no filter is as small as trying all five
     * per row (libspng's default) and several times faster (T = 1,024, 12
     * heads: about 0.2 s instead of 1.2 s). */
    if (!rc) rc = spng_set_option(ctx, SPNG_FILTER_CHOICE, SPNG_FILTER_CHOICE_NONE);
    if (!rc) rc = spng_set_ihdr(ctx, &ihdr);
    if (!rc) rc = spng_encode_image(ctx, rgb, bytes, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
    size_t len = 0;
    void *png = NULL;
    if (!rc) png = spng_get_png_buffer(ctx, &len, &rc);
    spng_ctx_free(ctx);
    free(rgb);
    if (png == NULL || rc) {
        free(png);
        return api__fail(e, rc == SPNG_EMEM ? API_E_OUT_OF_MEMORY : API_E_INTERNAL_ERROR, NULL,
                         "cannot encode the PNG: %s", spng_strerror(rc));
    }
    api__buf_put(b, png, len);
    free(png);
    if (b->failed) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    return 0;
}
