/* maps.h - the map-shaped outputs as a reply gives them (private to api/,
 * prefix api__): selection of heads and query rows, head averaging, top-k,
 * and images.
 *
 *   select.c   "heads", "query_rows", "top_k", "cell", "color_scale"
 *   topk.c     the k largest entries of each row
 *   png.c      attn_weights as a PNG heat map (libspng), the viridis table
 *   svg.c      the same as SVG with token labels
 */
#ifndef API_MAPS_H
#define API_MAPS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/reply/reply.h"

/* ==== Selection, top-k and images (maps.c) =============================== */

/* How an image maps a weight to a colour ("color_scale"). */
typedef enum {
    API_COLOR_UNIT,  /* 0..1 as they are (clamped) */
    API_COLOR_ROW,   /* each query row divided by its largest value */
    API_COLOR_MAX,   /* each panel divided by its largest value */
} api_color_scale;

/* What of the map-shaped outputs a request wants. The selection is applied
 * in api/ to the maps core computed (maps.c); rows [row_start, row_stop) are
 * the range core can later compute alone. */
typedef struct {
    int n_heads;           /* 0: every head */
    int *heads;            /* n_heads distinct head indices in the request's order, malloc'd */
    int has_rows;          /* "query_rows" given */
    int row_start, row_stop; /* query rows [start, stop) */
    int top_k;             /* 0: whole rows */
    int cell;              /* image pixels per entry; 0: the default */
    api_color_scale color;
} api_select;

/* Reads "heads", "query_rows", "top_k", "cell" and "color_scale" (parse.c
 * calls it); their ranges are checked against the plan by api__select_check. */
int api__select_parse(const json_t *root, api_select *sel, api_err *e);
void api__select_free(api_select *sel);

/* A map-shaped output as the reply gives it, after selection, averaging and
 * top-k (maps.c). */
typedef struct {
    void *data;            /* float, or uint8_t for U8 outputs; top-k: the values */
    int32_t *indices;      /* top-k: the key index of each value, -1 = padding; else NULL */
    int B, H, rows, cols;  /* H = 0: no head axis; cols = k with top-k */
} api_map;

/* ==== Images (image.c, svg.c) ============================================= */

/* viridis as 256 RGB triples (matplotlib's table). */
extern const uint8_t api__viridis[256][3];

/* The layout of an image of attn_weights: panels [B*H] in a grid of
 * cols x rows, each panel_w x panel_h pixels, gap pixels between them. */
typedef struct {
    int panels, grid_cols, grid_rows;
    int cell, gap, panel_w, panel_h;
    int width, height;
} api_image_layout;

/* The layout of the image of map m with the request's cell size. */
void api__image_layout(const api_map *m, int cell, api_image_layout *lay);
/* The colour-map index (0..255) of value v of row `row` of a panel, after
 * the colour scale: row_max and panel_max are the row's and panel's largest
 * values. */
int api__image_level(float v, float row_max, float panel_max, api_color_scale scale);
#endif
