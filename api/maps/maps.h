/* maps.h - the map-shaped outputs as a reply gives them (private to api/,
 * prefix api__): the selection of heads and query rows, head averaging,
 * top-k, and pictures.
 *
 *   select.c   "heads", "query_rows", "top_k", "cell", "color_scale" read,
 *              and a computed map cut down to them
 *   topk.c     the k largest entries of each row
 *   layout.c   the viridis colours, the grid of panels, a weight's colour
 *   png.c      a map as a PNG heat map (libspng)
 *   svg.c      the same as SVG with token labels
 */
#ifndef API_MAPS_H
#define API_MAPS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/reply/reply.h"

/* ==== What a request selects ============================================== */

/* How a picture maps a weight to a colour ("color_scale"). */
typedef enum {
    API_COLOR_UNIT,  /* 0..1 as they are (clamped) */
    API_COLOR_ROW,   /* each query row divided by its largest value */
    API_COLOR_MAX,   /* each panel divided by its largest value */
} api_color_scale;

/* What of the map-shaped outputs a request wants; rows [row_start,
 * row_stop) are the range core can later compute alone. */
typedef struct {
    int n_heads;           /* 0: every head */
    int *heads;            /* n_heads distinct head indices in the request's order, malloc'd */
    int has_rows;          /* "query_rows" given */
    int row_start, row_stop; /* query rows [start, stop) */
    int top_k;             /* 0: whole rows */
    int cell;              /* picture pixels per entry; 0: the default */
    api_color_scale color;
} api_select;

/* Reads "heads", "query_rows", "top_k", "cell" and "color_scale"; their
 * ranges against the sizes are the kind's to check (api__select_heads_check). */
int api__select_parse(const json_t *root, api_select *sel, api_err *e);
void api__select_free(api_select *sel);
/* 1 if the request selects heads or rows or takes top-k. */
int api__select_any(const api_select *sel);
/* Checks the heads against H and the rows against L: 400 naming the field,
 * `what` naming the thing that has the heads ("module", "model"). */
int api__select_check(const api_select *sel, int H, int L, const char *what, api_err *e);

/* ==== Cutting a computed map ============================================== */

/* A map-shaped tensor as computed: [outer][H][rows][cols] of floats or
 * bytes, outer being B or layers x B. */
typedef struct {
    const void *data;
    int u8;                  /* uint8_t elements, else float */
    int outer;               /* blocks of the result */
    const int *outer_src;    /* the source block of each (NULL: block o is o) */
    int H, rows, cols;       /* H = 1: no head axis */
    const uint8_t *mask;     /* [rows][cols] per mask block (1 = never picked by top-k), or NULL */
    size_t mask_step;        /* elements between the mask blocks of two source blocks; 0 = one
                                mask for all */
} api_map_src;

/* What of it is kept: heads in that order (NULL: all), rows [r0, r1), the
 * k largest of each row, or the mean over the heads listed. */
typedef struct {
    const int *heads;
    int n_heads;
    int r0, r1;
    int top_k;
    int average;
} api_map_cut;

/* The cut of src, [outer][heads, or 1 averaged][r1 - r0][k or cols], into
 * new arrays of a: *values (float, or uint8_t), *indices (top-k: the key of
 * each value, -1 = padding; else NULL). 0, or -1 with e filled. */
int api__map_cut(const api_map_src *src, const api_map_cut *cut, api_arrays *a, void **values,
                 int32_t **indices, api_err *e);

/* Top-k of rows x n floats: for each row the k largest entries not masked
 * (mask[j] != 0, or -inf), in descending order, ties to the lower index;
 * padding index -1 and value 0. mask is one [n] row shared by every row
 * when mask_step is 0, else row r uses mask + r * mask_step (NULL: none).
 * scratch holds n ints. (topk.c) */
void api__topk_f32(const float *x, size_t rows, int n, const uint8_t *mask, size_t mask_step,
                   int k, float *values, int32_t *indices, int *scratch);
void api__topk_u8(const uint8_t *x, size_t rows, int n, const uint8_t *mask, size_t mask_step,
                  int k, uint8_t *values, int32_t *indices, int *scratch);

/* ==== Pictures ============================================================ */

/* A map as the reply gives it: panels [B][H][rows][cols] (H = 0: one panel
 * per batch entry). */
typedef struct {
    void *data;            /* float, or uint8_t for U8 outputs; top-k: the values */
    int32_t *indices;      /* top-k: the key index of each value, -1 = padding; else NULL */
    int B, H, rows, cols;  /* H = 0: no head axis; cols = k with top-k */
} api_map;

/* What a picture format draws (api_contents.image). */
typedef struct api_image {
    api_map map;
    int batched;               /* the request had a batch axis: titles say "batch b" */
    const int *heads;          /* the head of each panel (NULL: 0, 1, ...) */
    const char *one_title;     /* the title of a panel without a head axis */
    const char *const *labels; /* token labels (NULL: positions) */
    int n_labels;
    int row0;                  /* the first query row shown */
    int cell;                  /* pixels per entry; 0: the default */
    api_color_scale color;
} api_image;

/* viridis as 256 RGB triples (matplotlib's table). */
extern const uint8_t api__viridis[256][3];

/* The layout of a picture: panels [B*H] in a grid of cols x rows, each
 * panel_w x panel_h pixels, gap pixels between them. */
typedef struct {
    int panels, grid_cols, grid_rows;
    int cell, gap, panel_w, panel_h;
    int width, height;
} api_image_layout;

/* The PNG layout of map m with cell pixels per entry (0: the default). */
void api__image_layout(const api_map *m, int cell, api_image_layout *lay);
/* The colour-map index (0..255) of value v of a panel's row after the
 * colour scale: row_max and panel_max are the row's and panel's largest. */
int api__image_level(float v, float row_max, float panel_max, api_color_scale scale);
/* Refuses a picture too large to make: a PNG side over 32,768 pixels, an
 * SVG of more than 2^18 cells (413 naming cell or output_format). */
int api__image_check(const api_map *m, int cell, api_format f, api_err *e);
/* The values of the picture of m in format f, counted in floats, for the
 * memory estimate: its pixels (PNG) or text (SVG). */
size_t api__image_values(const api_map *m, int cell, api_format f);

/* ==== Text in pictures (font.c) and the PNG's frame (png.c) ============== */

#define API_FONT_W 5           /* a glyph's columns */
#define API_FONT_H 7           /* and rows */
#define API_FONT_ADVANCE 6     /* pixels from one character to the next */
extern const uint8_t api__font5x7[95][5]; /* ASCII 32..126, columns of 7 bits, bit 0 on top */

/* An RGB picture being drawn: width x height x 3 bytes. */
typedef struct {
    uint8_t *rgb;
    int width, height;
} api_canvas;

/* The glyph of c (ASCII 32..126, anything else '?'). */
int api__font_index(unsigned char c);
/* Characters of UTF-8 text, at most max. */
size_t api__font_chars(const char *text, size_t max);
/* The first max characters of text with the top left of the first at (x,
 * y), or with up turned to read upward from its bottom left at (x, y);
 * pixels outside the canvas are skipped. */
void api__font_draw(const api_canvas *cv, long x, long y, const char *text, size_t max, int up,
                    const uint8_t color[3]);

/* Where the PNG puts things: a title line, then the panels in the grid of
 * api__image_layout, each framed by its title and (cells of at least
 * API_FONT_H + 1 pixels) its token labels, then a colour bar. */
typedef struct {
    int labels;            /* the axes carry labels */
    int left, top;         /* a panel's query labels' width, key labels' height */
    int box_w, box_h;      /* a panel with its title and labels */
    int x0, y0;            /* the first panel's first cell's top left pixel */
    int step_x, step_y;    /* from one panel to the next across and down */
    int bar_y;             /* the colour bar's top */
    int width, height;
} api_png_frame;
void api__png_frame(const api_image *im, const api_image_layout *lay, api_png_frame *f);
/* The largest a PNG of m can be (the labels at their longest): its sides. */
void api__png_bound(const api_map *m, int cell, long long *width, long long *height);

/* The writers of the picture rows of API_FORMAT_MAP (reply.h's signature):
 * contents->image drawn. */
int api__write_png(api_buf *b, const api_contents *c, api_st_parts *parts, api_err *e);
int api__write_svg(api_buf *b, const api_contents *c, api_st_parts *parts, api_err *e);

#endif
