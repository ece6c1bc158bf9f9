/* svg.c - attn_weights as SVG ("output_format": "svg", or Accept:
 * image/svg+xml): one titled panel per batch entry and head (after
 * selection and averaging) in a grid of ceil(sqrt(n)) columns; in each, the
 * keys' labels above the columns (class "klabel"), the queries' labels left
 * of the rows ("qlabel"), and one <rect> per weight coloured as in the PNG
 * (png.c) with its value in a <title> (shown on hover).
 *
 * Labels are the request's tokens (the keys' too when there are as many keys
 * as tokens), else positions; with query_rows the rows keep their positions.
 */
#include "api/maps/maps.h"
#include "api/numbers/numbers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SVG_CELL 24          /* default pixels per weight */
#define LABEL_CHARS 16       /* longest label shown (more is cut with "…") */
#define CHAR_W 7             /* pixels per label character at font-size 12 */
#define TITLE_H 22
#define PANEL_GAP 24

/* XML text: & < > " escaped; control characters and U+FFFE, U+FFFF (not
 * XML characters) as '?'. s is UTF-8 (jansson checked it). */
static void xml_text(api_buf *b, const char *s, size_t max_chars) {
    size_t chars = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c & 0xC0) != 0x80 && chars++ == max_chars) {
            api__buf_puts(b, "\xE2\x80\xA6");
            return;
        }
        if (c == 0xEF && (unsigned char)s[1] == 0xBF && ((unsigned char)s[2] & 0xFE) == 0xBE) {
            api__buf_put(b, "?", 1);
            s += 2;
            continue;
        }
        switch (c) {
        case '&': api__buf_puts(b, "&amp;"); break;
        case '<': api__buf_puts(b, "&lt;"); break;
        case '>': api__buf_puts(b, "&gt;"); break;
        case '"': api__buf_puts(b, "&quot;"); break;
        default: api__buf_put(b, c < 0x20 ? "?" : s, 1); break;
        }
    }
}

/* The i-th label: a token, or its position. */
static const char *label(const char *const *tokens, int n, int i, char *tmp, size_t size) {
    if (tokens && i < n) return tokens[i];
    snprintf(tmp, size, "%d", i);
    return tmp;
}

typedef struct {
    const api_image *im;
    api_map m;
    int cell, label_w, precision;
    int key_labels;        /* keys labelled by the labels (as many keys as labels) */
} svg_ctx;

static void panel_title(api_buf *b, const svg_ctx *c, int p) {
    const api_image *im = c->im;
    int heads = c->m.H ? c->m.H : 1, bi = p / heads, h = p % heads;
    if (c->m.B > 1 || im->batched) api__buf_printf(b, "batch %d, ", bi);
    if (c->m.H) api__buf_printf(b, "head %d", im->heads ? im->heads[h] : h);
    else api__buf_puts(b, im->one_title);
}

static void panel(api_buf *b, const svg_ctx *c, int p, int x0, int y0) {
    const api_image *im = c->im;
    const char *const *labels = im->labels;
    int rows = c->m.rows, cols = c->m.cols, cell = c->cell, n = im->n_labels;
    int gx = x0 + c->label_w, gy = y0 + TITLE_H + c->label_w;
    char tmp[16], num[API_FLOAT_MAX + API_FLOAT_SLACK];
    api__buf_printf(b, "<g class=\"panel\"><text class=\"title\" x=\"%d\" y=\"%d\">", gx, y0 + 15);
    panel_title(b, c, p);
    api__buf_puts(b, "</text>\n");
    for (int j = 0; j < cols; j++) {
        api__buf_printf(b, "<text class=\"klabel\" transform=\"translate(%d,%d) rotate(-90)\">",
                        gx + j * cell + cell / 2 + 4, gy - 4);
        xml_text(b, label(c->key_labels ? labels : NULL, n, j, tmp, sizeof tmp), LABEL_CHARS);
        api__buf_puts(b, "</text>\n");
    }
    const float *w = (const float *)c->m.data + (size_t)p * (size_t)rows * (size_t)cols;
    float panel_max = 0.0f;
    for (size_t e = 0; e < (size_t)rows * cols; e++) panel_max = w[e] > panel_max ? w[e] : panel_max;
    for (int i = 0; i < rows && !b->failed; i++) {
        const float *row = w + (size_t)i * cols;
        float row_max = 0.0f;
        for (int j = 0; j < cols; j++) row_max = row[j] > row_max ? row[j] : row_max;
        const char *q = label(labels, n, im->row0 + i, tmp, sizeof tmp);
        api__buf_printf(b, "<text class=\"qlabel\" x=\"%d\" y=\"%d\">", gx - 4, gy + i * cell + cell / 2 + 4);
        xml_text(b, q, LABEL_CHARS);
        api__buf_puts(b, "</text>\n");
        for (int j = 0; j < cols; j++) {
            const uint8_t *rgb = api__viridis[api__image_level(row[j], row_max, panel_max, im->color)];
            api__buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                            "fill=\"#%02x%02x%02x\"><title>", gx + j * cell, gy + i * cell, cell,
                            cell, rgb[0], rgb[1], rgb[2]);
            xml_text(b, q, LABEL_CHARS);
            api__buf_puts(b, " \xE2\x86\x92 ");
            char ktmp[16];
            xml_text(b, label(c->key_labels ? labels : NULL, n, j, ktmp, sizeof ktmp), LABEL_CHARS);
            int len = api__format_float(num, row[j], c->precision);
            api__buf_puts(b, ": ");
            api__buf_put(b, num, (size_t)len);
            api__buf_puts(b, "</title></rect>\n");
        }
    }
    api__buf_puts(b, "</g>\n");
}

int api__write_svg(api_buf *b, const api_contents *contents, api_st_parts *parts, api_err *e) {
    (void)parts;
    const api_image *im = contents->image;
    svg_ctx c = {.im = im, .m = im->map, .precision = contents->fmt.precision};
    c.cell = im->cell ? im->cell : SVG_CELL;
    c.key_labels = im->labels && c.m.cols == im->n_labels;
    /* the widest label, in characters */
    int longest = 4;
    for (int i = 0; i < im->n_labels; i++) {
        int n = 0;
        for (const char *s = im->labels[i]; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
        longest = n > longest ? n : longest;
    }
    longest = longest > LABEL_CHARS ? LABEL_CHARS + 1 : longest;
    c.label_w = longest * CHAR_W + 8;

    api_image_layout lay;
    api__image_layout(&c.m, c.cell, &lay);
    int pw = c.label_w + lay.panel_w, ph = TITLE_H + c.label_w + lay.panel_h;
    int width = lay.grid_cols * pw + (lay.grid_cols - 1) * PANEL_GAP;
    int height = lay.grid_rows * ph + (lay.grid_rows - 1) * PANEL_GAP;
    api__buf_printf(b,
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                    "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
                    "<style>.qlabel{text-anchor:end}.title{font-weight:bold;font-size:14px}"
                    "rect:hover{stroke:#f33;stroke-width:2}</style>\n"
                    "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
                    width, height, width, height);
    for (int p = 0; p < lay.panels && !b->failed; p++)
        panel(b, &c, p, (p % lay.grid_cols) * (pw + PANEL_GAP), (p / lay.grid_cols) * (ph + PANEL_GAP));
    api__buf_puts(b, "</svg>\n");
    if (b->failed) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    return 0;
}
