/* work.c - the work space of one call: what each block will need (maps
 * materialised or not, masked scores kept or not, rotary angles), sized
 * once and carved from one allocation; a step's too. */
#include "core/flash.h"
#include "core/lm/lm.h"

#include <stdlib.h>

static int weight_dropout(const attn_lm_plan *p) {
    return p->dropout_active && p->spec.weight_dropout;
}

int attn__run_materialises(const attn__run *r, int l) {
    return r->out->attn_weights != NULL || weight_dropout(r->p) || attn__analysing(r) ||
           attn__capture_dst(r, l, ATTN_HOOK_ATTN_SCORES) ||
           attn__capture_dst(r, l, ATTN_HOOK_PATTERN);
}

int attn__run_keeps_masked(const attn__run *r, int l) {
    int weights_wanted = r->out->attn_weights || attn__capture_dst(r, l, ATTN_HOOK_PATTERN) ||
                         attn__analysing(r);
    return attn__capture_dst(r, l, ATTN_HOOK_ATTN_SCORES) ||
           (weight_dropout(r->p) && weights_wanted);
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* What the blocks of this call need: any materialised map, any kept masked
 * scores, any normalised norm input. */
static void needs(const attn__run *r, int *map, int *masked, int *unit) {
    *map = *masked = *unit = 0;
    for (int l = r->in->start_layer; l < r->p->n_layer; l++) {
        *map |= attn__run_materialises(r, l);
        *masked |= attn__run_keeps_masked(r, l);
    }
    for (int i = 0; i < r->in->n_captures; i++) {
        attn_hook h = r->in->captures[i].hook;
        *unit |= h == ATTN_HOOK_LN1_NORMALIZED || h == ATTN_HOOK_LN2_NORMALIZED ||
                 h == ATTN_HOOK_LN_FINAL_NORMALIZED;
    }
}

/* Floats of the pieces every mode has, per row: x h a a2, qkv, z, m, and
 * the rotary angles (cos and sin of each row, then the frequencies). */
enum { ROW_PIECES = 5 };

static void row_pieces(const attn_lm_plan *p, size_t rows, size_t n[ROW_PIECES]) {
    size_t C = (size_t)p->C, rot = (size_t)p->spec.rope.dims;
    n[0] = 4 * rows * C;
    n[1] = rows * ((size_t)p->QD + 2 * (size_t)p->KVD);
    n[2] = rows * (size_t)p->QD;
    n[3] = rows * (size_t)p->F * (p->spec.gated ? 2 : 1);
    n[4] = (rot ? align16(rows * rot) + align16(rot / 2) : 0) +
           align16((size_t)p->QD + 2 * (size_t)p->KVD); /* tmp */
}

static size_t rows_total(const attn_lm_plan *p, size_t rows) {
    size_t n[ROW_PIECES], total = 0;
    row_pieces(p, rows, n);
    for (int i = 0; i < ROW_PIECES; i++) total += align16(n[i]);
    return total;
}

/* Points r's row pieces at `at`, in row_pieces' order; returns their end. */
static float *carve_rows(attn__run *r, float *at, size_t rows) {
    const attn_lm_plan *p = r->p;
    size_t n[ROW_PIECES], C = (size_t)p->C, rot = (size_t)p->spec.rope.dims;
    row_pieces(p, rows, n);
    r->x = at, r->h = r->x + rows * C, r->a = r->h + rows * C, r->a2 = r->a + rows * C;
    r->qkv = at + align16(n[0]);
    r->z = r->qkv + align16(n[1]);
    r->m = r->z + align16(n[2]);
    at = r->m + align16(n[3]);
    r->rope = rot ? at : NULL;
    r->inv_freq = rot ? at + align16(rows * rot) : NULL;
    r->tmp = at + (rot ? align16(rows * rot) + align16(rot / 2) : 0);
    return at + align16(n[4]);
}

void *attn__run_alloc(attn__run *r, attn_error *err) {
    const attn_lm_plan *p = r->p;
    size_t rows = (size_t)p->B * (size_t)p->T, T = (size_t)p->T;
    size_t BHTT = (size_t)p->B * (size_t)p->H * T * T, BTT = (size_t)p->B * T * T;
    int map, masked, unit;
    needs(r, &map, &masked, &unit);
    r->width = attn_pool_width(r->pool);
    size_t total = rows_total(p, rows);
    /* then flash, the mask, the maps' rows, weight dropout, masked scores,
     * unit, a local layer's window and mask, the analyses' weights, head
     * means, previous occurrences and loss rows, and the widened blocks of
     * half-size weights */
    enum { N = 13 };
    int window = p->spec.window > 0 && (size_t)p->spec.window < T, an = attn__analysing(r);
    int full = r->out->logits && !r->out->last_only;
    size_t more[N] = {(size_t)r->width * attn__flash_scratch(&p->attn_plan),
                      map ? (BTT + 3) / 4 : 0,
                      map ? 3 * (size_t)r->width * ATTN__MAP_ROWS * T : 0,
                      weight_dropout(p) && !r->out->dropout_masks ? BHTT : 0,
                      masked ? BHTT : 0, unit ? 2 * (size_t)p->C : 0,
                      window ? (T * T + 3) / 4 : 0, window && map ? (BTT + 3) / 4 : 0,
                      an && !r->out->attn_weights ? BHTT : 0,
                      r->out->analysis[ATTN_ANALYSIS_ROLLOUT] ? BTT : 0, an ? rows : 0,
                      r->out->loss ? (size_t)p->V * (full ? 1 : (size_t)attn__loss_rows(p)) : 0,
                      (size_t)r->width * attn__lm_tile_floats(p)};
    for (int i = 0; i < N; i++) total += align16(more[i]);
    float *base = malloc(total * sizeof *base);
    if (base == NULL) {
        attn__fail(err, ATTN_ERR_NOMEM, "", "cannot allocate %zu bytes of work space",
                   total * sizeof *base);
        return NULL;
    }
    float *at = carve_rows(r, base, rows), *piece[N];
    for (int i = 0; i < N; i++) {
        piece[i] = more[i] ? at : NULL;
        at += align16(more[i]);
    }
    r->flash = piece[0], r->mask = (uint8_t *)piece[1], r->rowbuf = piece[2];
    r->wdrop = piece[3], r->masked = piece[4], r->unit = piece[5];
    r->wbool = (uint8_t *)piece[6], r->wmask = (uint8_t *)piece[7];
    r->pattern = piece[8], r->abar = piece[9], r->occ = (int *)piece[10], r->lossbuf = piece[11];
    r->wtile = piece[12];
    for (int c = 0; unit && c < p->C; c++) r->unit[c] = 1.0f, r->unit[p->C + c] = 0.0f;
    for (size_t i = 0; window && i < T; i++) /* keys i - j >= window back are out */
        for (size_t j = 0; j < T; j++) r->wbool[i * T + j] = i >= j + (size_t)p->spec.window;
    if (map) { /* the masks of the materialised kernel, once per call */
        attn_inputs none = {.key_padding_mask = r->kpm},
                    local = {.attn_mask_bool = r->wbool, .key_padding_mask = r->kpm};
        attn__heads hd = {.plan = &p->attn_plan, .cfg = &p->attn, .inputs = &none, .mask = r->mask};
        attn__build_mask(&hd);
        hd.inputs = &local, hd.mask = r->wmask;
        if (window) attn__build_mask(&hd);
    }
    return base;
}

size_t attn__step_work_floats(const attn_lm_plan *p, int n, int capacity) {
    return rows_total(p, (size_t)n) + align16((size_t)n * (size_t)p->H * (size_t)capacity) +
           align16(3 * (size_t)n);
}

int *attn__step_work_carve(attn__run *r, float *base, int capacity) {
    float *at = carve_rows(r, base, (size_t)r->rows);
    r->scores = at;
    r->width = attn_pool_width(r->pool);
    return (int *)(at + align16((size_t)r->rows * (size_t)r->p->H * (size_t)capacity));
}
