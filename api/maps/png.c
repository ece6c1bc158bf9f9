/* image.c - attn_weights as a PNG heat map ("output_format": "png", or
 * Accept: image/png), written with libspng.
 *
 * One panel per batch entry and head (after selection and averaging), rows
 * = queries, columns = keys, `cell` x `cell` pixels per weight; the panels
 * fill a grid of ceil(sqrt(n)) columns, row by row, 4 white pixels apart.
 * Colours: viridis at round(255 v), v the weight clamped to 0..1, or divided
 * by its row's largest ("color_scale": "row") or its panel's ("max").
 */
#include "api/module/module.h"

#include <math.h>
#include <spng.h>
#include <stdlib.h>
#include <string.h>

/* matplotlib's viridis (CC0), sampled at 256 levels and rounded to 8 bits:
 * np.round(cm.get_cmap('viridis', 256)(range(256))[:, :3] * 255). */
const uint8_t api__viridis[256][3] = {
    {68, 1, 84}, {68, 2, 86}, {69, 4, 87}, {69, 5, 89}, {70, 7, 90}, {70, 8, 92}, {70, 10, 93},
    {70, 11, 94}, {71, 13, 96}, {71, 14, 97}, {71, 16, 99}, {71, 17, 100}, {71, 19, 101},
    {72, 20, 103}, {72, 22, 104}, {72, 23, 105}, {72, 24, 106}, {72, 26, 108}, {72, 27, 109},
    {72, 28, 110}, {72, 29, 111}, {72, 31, 112}, {72, 32, 113}, {72, 33, 115}, {72, 35, 116},
    {72, 36, 117}, {72, 37, 118}, {72, 38, 119}, {72, 40, 120}, {72, 41, 121}, {71, 42, 122},
    {71, 44, 122}, {71, 45, 123}, {71, 46, 124}, {71, 47, 125}, {70, 48, 126}, {70, 50, 126},
    {70, 51, 127}, {70, 52, 128}, {69, 53, 129}, {69, 55, 129}, {69, 56, 130}, {68, 57, 131},
    {68, 58, 131}, {68, 59, 132}, {67, 61, 132}, {67, 62, 133}, {66, 63, 133}, {66, 64, 134},
    {66, 65, 134}, {65, 66, 135}, {65, 68, 135}, {64, 69, 136}, {64, 70, 136}, {63, 71, 136},
    {63, 72, 137}, {62, 73, 137}, {62, 74, 137}, {62, 76, 138}, {61, 77, 138}, {61, 78, 138},
    {60, 79, 138}, {60, 80, 139}, {59, 81, 139}, {59, 82, 139}, {58, 83, 139}, {58, 84, 140},
    {57, 85, 140}, {57, 86, 140}, {56, 88, 140}, {56, 89, 140}, {55, 90, 140}, {55, 91, 141},
    {54, 92, 141}, {54, 93, 141}, {53, 94, 141}, {53, 95, 141}, {52, 96, 141}, {52, 97, 141},
    {51, 98, 141}, {51, 99, 141}, {50, 100, 142}, {50, 101, 142}, {49, 102, 142}, {49, 103, 142},
    {49, 104, 142}, {48, 105, 142}, {48, 106, 142}, {47, 107, 142}, {47, 108, 142}, {46, 109, 142},
    {46, 110, 142}, {46, 111, 142}, {45, 112, 142}, {45, 113, 142}, {44, 113, 142}, {44, 114, 142},
    {44, 115, 142}, {43, 116, 142}, {43, 117, 142}, {42, 118, 142}, {42, 119, 142}, {42, 120, 142},
    {41, 121, 142}, {41, 122, 142}, {41, 123, 142}, {40, 124, 142}, {40, 125, 142}, {39, 126, 142},
    {39, 127, 142}, {39, 128, 142}, {38, 129, 142}, {38, 130, 142}, {38, 130, 142}, {37, 131, 142},
    {37, 132, 142}, {37, 133, 142}, {36, 134, 142}, {36, 135, 142}, {35, 136, 142}, {35, 137, 142},
    {35, 138, 141}, {34, 139, 141}, {34, 140, 141}, {34, 141, 141}, {33, 142, 141}, {33, 143, 141},
    {33, 144, 141}, {33, 145, 140}, {32, 146, 140}, {32, 146, 140}, {32, 147, 140}, {31, 148, 140},
    {31, 149, 139}, {31, 150, 139}, {31, 151, 139}, {31, 152, 139}, {31, 153, 138}, {31, 154, 138},
    {30, 155, 138}, {30, 156, 137}, {30, 157, 137}, {31, 158, 137}, {31, 159, 136}, {31, 160, 136},
    {31, 161, 136}, {31, 161, 135}, {31, 162, 135}, {32, 163, 134}, {32, 164, 134}, {33, 165, 133},
    {33, 166, 133}, {34, 167, 133}, {34, 168, 132}, {35, 169, 131}, {36, 170, 131}, {37, 171, 130},
    {37, 172, 130}, {38, 173, 129}, {39, 173, 129}, {40, 174, 128}, {41, 175, 127}, {42, 176, 127},
    {44, 177, 126}, {45, 178, 125}, {46, 179, 124}, {47, 180, 124}, {49, 181, 123}, {50, 182, 122},
    {52, 182, 121}, {53, 183, 121}, {55, 184, 120}, {56, 185, 119}, {58, 186, 118}, {59, 187, 117},
    {61, 188, 116}, {63, 188, 115}, {64, 189, 114}, {66, 190, 113}, {68, 191, 112}, {70, 192, 111},
    {72, 193, 110}, {74, 193, 109}, {76, 194, 108}, {78, 195, 107}, {80, 196, 106}, {82, 197, 105},
    {84, 197, 104}, {86, 198, 103}, {88, 199, 101}, {90, 200, 100}, {92, 200, 99}, {94, 201, 98},
    {96, 202, 96}, {99, 203, 95}, {101, 203, 94}, {103, 204, 92}, {105, 205, 91}, {108, 205, 90},
    {110, 206, 88}, {112, 207, 87}, {115, 208, 86}, {117, 208, 84}, {119, 209, 83}, {122, 209, 81},
    {124, 210, 80}, {127, 211, 78}, {129, 211, 77}, {132, 212, 75}, {134, 213, 73}, {137, 213, 72},
    {139, 214, 70}, {142, 214, 69}, {144, 215, 67}, {147, 215, 65}, {149, 216, 64}, {152, 216, 62},
    {155, 217, 60}, {157, 217, 59}, {160, 218, 57}, {162, 218, 55}, {165, 219, 54}, {168, 219, 52},
    {170, 220, 50}, {173, 220, 48}, {176, 221, 47}, {178, 221, 45}, {181, 222, 43}, {184, 222, 41},
    {186, 222, 40}, {189, 223, 38}, {192, 223, 37}, {194, 223, 35}, {197, 224, 33}, {200, 224, 32},
    {202, 225, 31}, {205, 225, 29}, {208, 225, 28}, {210, 226, 27}, {213, 226, 26}, {216, 226, 25},
    {218, 227, 25}, {221, 227, 24}, {223, 227, 24}, {226, 228, 24}, {229, 228, 25}, {231, 228, 25},
    {234, 229, 26}, {236, 229, 27}, {239, 229, 28}, {241, 229, 29}, {244, 230, 30}, {246, 230, 32},
    {248, 230, 33}, {251, 231, 35}, {253, 231, 37}
};

/* The default cell: about 512 pixels a panel side, from 1 to 32 per entry. */
#define DEFAULT_PANEL 512
#define DEFAULT_CELL_MAX 32
#define PANEL_GAP 4

static int clamp_int(long long v) { return v > INT32_MAX ? INT32_MAX : (int)v; }

void api__image_layout(const api_map *m, int cell, api_image_layout *lay) {
    int side = m->rows > m->cols ? m->rows : m->cols;
    if (cell <= 0) {
        cell = side > 0 ? DEFAULT_PANEL / side : DEFAULT_CELL_MAX;
        cell = cell < 1 ? 1 : cell > DEFAULT_CELL_MAX ? DEFAULT_CELL_MAX : cell;
    }
    long long panels = (long long)m->B * (m->H ? m->H : 1);
    int gc = 1;
    while ((long long)gc * gc < panels) gc++;
    int gr = (int)((panels + gc - 1) / gc);
    *lay = (api_image_layout){.panels = clamp_int(panels), .grid_cols = gc, .grid_rows = gr,
                              .cell = cell, .gap = PANEL_GAP,
                              .panel_w = clamp_int((long long)m->cols * cell),
                              .panel_h = clamp_int((long long)m->rows * cell)};
    lay->width = clamp_int((long long)gc * lay->panel_w + (long long)(gc - 1) * PANEL_GAP);
    lay->height = clamp_int((long long)gr * lay->panel_h + (long long)(gr - 1) * PANEL_GAP);
}

int api__image_level(float v, float row_max, float panel_max, api_color_scale scale) {
    float d = scale == API_COLOR_ROW ? row_max : scale == API_COLOR_MAX ? panel_max : 1.0f;
    float x = d > 0.0f ? v / d : 0.0f;
    x = x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x;
    return (int)(x * 255.0f + 0.5f);
}

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

int api__respond_png(api_buf *b, const api_result *r, api_err *e) {
    api_map m;
    api__map_of(r, API_OUT_ATTN_WEIGHTS, &m);
    api_image_layout lay;
    api__image_layout(&m, r->rq->sel.cell, &lay);
    size_t bytes = (size_t)lay.width * (size_t)lay.height * 3; /* sides checked by api__select_check */
    uint8_t *rgb = malloc(bytes ? bytes : 1);
    if (rgb == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the image");
    memset(rgb, 255, bytes);
    paint(rgb, &m, &lay, r->rq->sel.color);

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
