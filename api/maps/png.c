/* png.c - attn_weights as a PNG heat map ("output_format": "png", or
 * Accept: image/png), written with libspng.
 *
 * From the top: the title (the module, and what the colours are), then one
 * panel per batch entry and head (after selection and averaging) in a grid
 * of ceil(sqrt(n)) columns, row by row, 4 white pixels apart; each panel
 * titled ("head 1", "batch 0, head 1", or the averaged map's title) over
 * its cells, rows = queries, columns = keys, `cell` x `cell` pixels per
 * weight, with the token labels (positions when there are none) left of
 * the rows and above the columns (reading upward) when a cell is at least
 * 8 pixels; last the colour bar, viridis from 0 to 1 (or to the row's or
 * panel's largest weight, as "color_scale" says). Text is api__font5x7.
 * Colours: viridis at round(255 v), v the weight clamped to 0..1, or divided
 * by its row's largest ("color_scale": "row") or its panel's ("max").
 */
#include "api/maps/maps.h"

#include <spng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TITLE_H 16          /* the image's title line */
#define PANEL_TITLE_H 12    /* a panel's title line */
#define LABEL_MAX 12        /* characters of a label (a longer one ends in '~') */
#define BAR_GAP 8           /* between the panels and the colour bar */
#define BAR_H 10
#define BAR_W 256           /* one pixel per colour level */
#define LEGEND_H (BAR_GAP + BAR_H + 3 + API_FONT_H + 4)
#define MARGIN 4

static const uint8_t INK[3] = {29, 35, 48};

/* ==== The frame =========================================================== */

/* Pixels of a label band for labels of at most n characters. */
static int band(size_t n) { return (int)n * API_FONT_ADVANCE + 4; }

/* The i-th label: a token (its first LABEL_MAX characters, or LABEL_MAX - 1
 * and '~'), or the position. */
static const char *label(const api_image *im, int i, int tokens, char *buf, size_t size) {
    if (!tokens || !im->labels || i >= im->n_labels) {
        snprintf(buf, size, "%d", i);
        return buf;
    }
    const char *s = im->labels[i];
    if (api__font_chars(s, LABEL_MAX + 1) <= LABEL_MAX) return s;
    size_t at = 0; /* the bytes of the first LABEL_MAX - 1 characters (4 bytes each at most) */
    for (int n = 0; s[at] && n < LABEL_MAX - 1 && at + 4 < size - 2; n++)
        for (at++; ((unsigned char)s[at] & 0xC0) == 0x80; at++) {}
    memcpy(buf, s, at);
    memcpy(buf + at, "~", 2);
    return buf;
}

/* Keys are labelled by tokens when there are as many keys as tokens. */
static int key_tokens(const api_image *im) { return im->labels && im->map.cols == im->n_labels; }

static size_t widest(const api_image *im, int n, int first, int tokens) {
    size_t w = 1;
    char buf[64];
    for (int i = 0; i < n; i++) {
        size_t c = api__font_chars(label(im, first + i, tokens, buf, sizeof buf), LABEL_MAX);
        w = c > w ? c : w;
    }
    return w;
}

void api__png_frame(const api_image *im, const api_image_layout *lay, api_png_frame *f) {
    *f = (api_png_frame){.labels = lay->cell >= API_FONT_H + 1};
    if (f->labels) {
        f->left = band(widest(im, im->map.rows, im->row0, 1));
        f->top = band(widest(im, im->map.cols, 0, key_tokens(im)));
    }
    f->box_w = f->left + lay->panel_w;
    f->box_h = PANEL_TITLE_H + f->top + lay->panel_h;
    f->x0 = f->left;
    f->y0 = TITLE_H + PANEL_TITLE_H + f->top;
    f->step_x = f->box_w + lay->gap;
    f->step_y = f->box_h + lay->gap;
    int grid_w = lay->grid_cols * f->box_w + (lay->grid_cols - 1) * lay->gap;
    int grid_h = lay->grid_rows * f->box_h + (lay->grid_rows - 1) * lay->gap;
    f->width = grid_w > BAR_W + 2 * MARGIN ? grid_w : BAR_W + 2 * MARGIN;
    f->bar_y = TITLE_H + grid_h + BAR_GAP;
    f->height = TITLE_H + grid_h + LEGEND_H;
}

void api__png_bound(const api_map *m, int cell, long long *width, long long *height) {
    api_image_layout lay;
    api__image_layout(m, cell, &lay);
    long long labels = lay.cell >= API_FONT_H + 1 ? band(LABEL_MAX) : 0;
    long long w = lay.grid_cols * (labels + lay.panel_w) + (long long)(lay.grid_cols - 1) * lay.gap;
    *width = w > BAR_W + 2 * MARGIN ? w : BAR_W + 2 * MARGIN;
    *height = TITLE_H + lay.grid_rows * (PANEL_TITLE_H + labels + lay.panel_h) +
              (long long)(lay.grid_rows - 1) * lay.gap + LEGEND_H;
}

/* ==== Drawing ============================================================= */

static float max_of(const float *x, size_t n) {
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

/* Panel p's cells with their top left at (x0, y0). */
static void paint_cells(const api_canvas *cv, const api_map *m, int p, int cell, size_t x0, size_t y0,
                        api_color_scale scale) {
    size_t stride = (size_t)cv->width * 3, cols = (size_t)m->cols, rows = (size_t)m->rows;
    const float *panel = (const float *)m->data + (size_t)p * rows * cols;
    float panel_max = max_of(panel, rows * cols);
    for (size_t i = 0; i < rows; i++) {
        const float *row = panel + i * cols;
        float row_max = max_of(row, cols);
        uint8_t *line = cv->rgb + (y0 + i * (size_t)cell) * stride + x0 * 3;
        for (size_t j = 0; j < cols; j++) {
            const uint8_t *c = api__viridis[api__image_level(row[j], row_max, panel_max, scale)];
            for (int dx = 0; dx < cell; dx++) memcpy(line + (j * (size_t)cell + (size_t)dx) * 3, c, 3);
        }
        for (int dy = 1; dy < cell; dy++) memcpy(line + (size_t)dy * stride, line, cols * (size_t)cell * 3);
    }
}

/* Panel p's title, as the SVG's: "head h", "batch b, head h", or the title
 * of a map without a head axis. */
static void panel_title(const api_image *im, int p, char *out, size_t size) {
    const api_map *m = &im->map;
    int heads = m->H ? m->H : 1, bi = p / heads, h = p % heads;
    size_t n = 0;
    if (m->B > 1 || im->batched) n = (size_t)snprintf(out, size, "batch %d, ", bi);
    if (m->H) snprintf(out + n, size - n, "head %d", im->heads ? im->heads[h] : h);
    else snprintf(out + n, size - n, "%s", im->one_title ? im->one_title : "");
}

/* Panel p: its title, its labels, its cells, in the box at (x, y). */
static void draw_panel(const api_canvas *cv, const api_image *im, const api_image_layout *lay,
                       const api_png_frame *f, int p, long x, long y) {
    char buf[64];
    long cx = x + f->left, cy = y + PANEL_TITLE_H + f->top;
    panel_title(im, p, buf, sizeof buf);
    api__font_draw(cv, cx, y + 2, buf, (size_t)(f->box_w - f->left) / API_FONT_ADVANCE + 1, 0, INK);
    int cell = lay->cell, pad = (cell - API_FONT_H) / 2;
    for (int i = 0; f->labels && i < im->map.rows; i++) {
        const char *t = label(im, im->row0 + i, 1, buf, sizeof buf);
        long w = (long)api__font_chars(t, LABEL_MAX) * API_FONT_ADVANCE;
        api__font_draw(cv, cx - 3 - w, cy + (long)i * cell + pad, t, LABEL_MAX, 0, INK);
    }
    for (int j = 0; f->labels && j < im->map.cols; j++)
        api__font_draw(cv, cx + (long)j * cell + pad, cy - 4, label(im, j, key_tokens(im), buf, sizeof buf),
                       LABEL_MAX, 1, INK);
    paint_cells(cv, &im->map, p, cell, (size_t)cx, (size_t)cy, im->color);
}

/* The title line and the colour bar under the panels, 0 to its top. */
static void draw_legend(const api_canvas *cv, const api_image *im, const api_png_frame *f,
                        const char *module) {
    static const char *const tops[] = {[API_COLOR_UNIT] = "1", [API_COLOR_ROW] = "row max",
                                       [API_COLOR_MAX] = "map max"};
    char title[160];
    snprintf(title, sizeof title, "%s: attention weights%s", module ? module : "attention",
             im->color == API_COLOR_ROW ? ", each row to its largest"
             : im->color == API_COLOR_MAX ? ", each map to its largest" : "");
    api__font_draw(cv, MARGIN, 5, title, (size_t)(f->width - 2 * MARGIN) / API_FONT_ADVANCE, 0, INK);
    for (int k = 0; k < BAR_W; k++)
        for (int dy = 0; dy < BAR_H; dy++)
            memcpy(cv->rgb + ((size_t)(f->bar_y + dy) * (size_t)f->width + MARGIN + (size_t)k) * 3,
                   api__viridis[k], 3);
    long text_y = f->bar_y + BAR_H + 3;
    const char *top = tops[im->color];
    api__font_draw(cv, MARGIN, text_y, "0", 1, 0, INK);
    api__font_draw(cv, MARGIN + BAR_W + 1 - (long)strlen(top) * API_FONT_ADVANCE, text_y, top, 16, 0, INK);
}

/* The picture of c into a new white canvas. 0, or -1 when memory ran out. */
static int draw(const api_contents *c, api_canvas *cv) {
    const api_image *im = c->image;
    api_image_layout lay;
    api_png_frame f;
    api__image_layout(&im->map, im->cell, &lay);
    api__png_frame(im, &lay, &f);
    size_t bytes = (size_t)f.width * (size_t)f.height * 3; /* sides checked by api__image_check */
    *cv = (api_canvas){.rgb = malloc(bytes), .width = f.width, .height = f.height};
    if (cv->rgb == NULL) return -1;
    memset(cv->rgb, 255, bytes);
    for (int p = 0; p < lay.panels; p++)
        draw_panel(cv, im, &lay, &f, p, (long)(p % lay.grid_cols) * f.step_x,
                   TITLE_H + (long)(p / lay.grid_cols) * f.step_y);
    draw_legend(cv, im, &f, c->module);
    return 0;
}

int api__write_png(api_buf *b, const api_contents *c, api_st_parts *parts, api_err *e) {
    (void)parts;
    api_canvas cv;
    if (draw(c, &cv)) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the image");
    size_t bytes = (size_t)cv.width * (size_t)cv.height * 3;
    spng_ctx *ctx = spng_ctx_new(SPNG_CTX_ENCODER);
    int rc = ctx ? 0 : SPNG_EMEM;
    struct spng_ihdr ihdr = {.width = (uint32_t)cv.width, .height = (uint32_t)cv.height,
                             .bit_depth = 8, .color_type = SPNG_COLOR_TYPE_TRUECOLOR};
    if (!rc) rc = spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
    /* Heat maps are runs of equal pixels and rows repeated cell times, which
     * deflate finds by itself: no filter is as small as trying all five
     * per row (libspng's default) and several times faster (T = 1,024, 12
     * heads: about 0.2 s instead of 1.2 s). */
    if (!rc) rc = spng_set_option(ctx, SPNG_FILTER_CHOICE, SPNG_FILTER_CHOICE_NONE);
    if (!rc) rc = spng_set_ihdr(ctx, &ihdr);
    if (!rc) rc = spng_encode_image(ctx, cv.rgb, bytes, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
    size_t len = 0;
    void *png = NULL;
    if (!rc) png = spng_get_png_buffer(ctx, &len, &rc);
    spng_ctx_free(ctx);
    free(cv.rgb);
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
