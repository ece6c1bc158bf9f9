/* capture.c - a run's captures and interventions (attn_lm_inputs):
 * copying an activation out where the caller asked for it, knocking out
 * heads and patching activations in, and checking every entry first. */
#include "core/layers/layers.h"
#include "core/lm/lm.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ==== Captures ============================================================ */

static int matches(const attn_lm_capture *c, int layer, attn_hook hook) {
    return c->hook == hook && (!attn_hook_get(hook)->per_block || c->layer == layer);
}

float *attn__capture_dst(const attn__run *r, int layer, attn_hook hook) {
    for (int i = 0; i < r->in->n_captures; i++)
        if (matches(&r->in->captures[i], layer, hook)) return r->in->captures[i].dst;
    return NULL;
}

void attn__capture(const attn__run *r, int layer, attn_hook hook, const float *src, size_t n,
                   int width, int ld) {
    for (int i = 0; i < r->in->n_captures; i++) {
        const attn_lm_capture *c = &r->in->captures[i];
        if (!matches(c, layer, hook) || c->dst == src) continue;
        for (size_t row = 0; row < n; row++)
            memcpy(c->dst + row * (size_t)width, src + row * (size_t)ld,
                   (size_t)width * sizeof(float));
    }
}

void attn__capture_normalized(const attn__run *r, int layer, attn_hook hook, const float *x) {
    const attn_lm_plan *p = r->p;
    size_t rows = (size_t)r->rows;
    float *dst = attn__capture_dst(r, layer, hook);
    if (dst == NULL) return;
    /* the model's norm with weight 1 (Gemma's 1 + w: w 0) and bias 0:
     * (x - mean) / sqrt(var + eps), or x / sqrt(mean(x^2) + eps) */
    const float *one = p->spec.norm == ATTN_LM_RMSNORM_1P ? r->unit + p->C : r->unit;
    attn__run_norm(r, dst, x, one, r->unit + p->C, rows);
    attn__capture(r, layer, hook, dst, rows, p->C, p->C);
}

/* ==== Interventions ======================================================= */

/* z[b][t][h][:] for every t := 0, or its mean over the tokens t (mask:
 * [B][T], 1 a token; NULL: every t), in a's batch rows. */
static void ablate(const attn_lm_plan *p, const uint8_t *mask, float *z, const attn_lm_ablate *a) {
    size_t T = (size_t)p->T, C = (size_t)p->QD, D = (size_t)p->D;
    int h = a->head, b1 = a->batch_count ? a->batch_start + a->batch_count : p->B;
    attn_ablation method = a->method;
    for (int b = a->batch_count ? a->batch_start : 0; b < b1; b++) {
        float *zb = z + (size_t)b * T * C + (size_t)h * D;
        const uint8_t *m = mask ? mask + (size_t)b * T : NULL;
        size_t n = 0;
        for (size_t t = 0; t < T; t++) n += !m || m[t];
        for (size_t d = 0; d < D; d++) {
            double sum = 0.0;
            if (method == ATTN_ABLATE_MEAN)
                for (size_t t = 0; t < T; t++) sum += !m || m[t] ? zb[t * C + d] : 0.0f;
            float v = n ? (float)(sum / (double)n) : 0.0f;
            for (size_t t = 0; t < T; t++) zb[t * C + d] = v;
        }
    }
}

void attn__intervene_z(const attn__run *r, int l) {
    const attn_lm_plan *p = r->p;
    const attn_lm_inputs *in = r->in;
    size_t T = (size_t)p->T, C = (size_t)p->QD, D = (size_t)p->D;
    for (int i = 0; i < in->n_ablations; i++)
        if (in->ablations[i].layer == l) ablate(p, in->attention_mask, r->z, &in->ablations[i]);
    for (int i = 0; i < in->n_patches; i++) {
        const attn_lm_patch *pt = &in->patches[i];
        if (pt->layer != l || pt->hook != ATTN_HOOK_Z) continue;
        for (size_t bt = 0; bt < (size_t)p->B * T; bt++) {
            size_t at = bt * C + (size_t)pt->index * D;
            memcpy(r->z + at, pt->src + at, D * sizeof(float));
        }
    }
}

void attn__patch_resid(const attn__run *r, int l, attn_hook hook, float *x) {
    const attn_lm_plan *p = r->p;
    size_t T = (size_t)p->T, C = (size_t)p->C;
    for (int i = 0; i < r->in->n_patches; i++) {
        const attn_lm_patch *pt = &r->in->patches[i];
        if (pt->layer != l || pt->hook != hook) continue;
        for (int b = 0; b < p->B; b++) {
            size_t at = ((size_t)b * T + (size_t)pt->index) * C;
            memcpy(x + at, pt->src + at, C * sizeof(float));
        }
    }
}

/* ==== Checks ============================================================== */

__attribute__((format(printf, 4, 5)))
static int bad(attn_error *err, const char *list, int i, const char *fmt, ...) {
    char field[64], what[160];
    snprintf(field, sizeof field, "%s[%d]", list, i);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return attn__fail(err, ATTN_ERR_ARG, field, "%s: %s", field, what);
}

/* A block index in [start, n_layer). */
static int bad_layer(const attn_lm_plan *p, int start, int l) {
    return l < start || l >= p->n_layer;
}

static int check_captures(const attn_lm_plan *p, const attn_lm_inputs *in, attn_error *err) {
    for (int i = 0; i < in->n_captures; i++) {
        const attn_lm_capture *c = &in->captures[i];
        const attn_hook_info *h = attn_hook_get(c->hook);
        if (h == NULL || c->dst == NULL)
            return bad(err, "captures", i, "unknown hook %d or no destination", (int)c->hook);
        if (!attn_lm_has_hook(p, c->hook))
            return bad(err, "captures", i, "this model has no %s", h->name);
        if (h->per_block && bad_layer(p, in->start_layer, c->layer))
            return bad(err, "captures", i, "layer %d is not a block of this run (from %d)",
                       c->layer, in->start_layer);
    }
    return ATTN_OK;
}

static int check_ablations(const attn_lm_plan *p, const attn_lm_inputs *in,
                           attn_error *err) {
    for (int i = 0; i < in->n_ablations; i++) {
        const attn_lm_ablate *a = &in->ablations[i];
        if (bad_layer(p, in->start_layer, a->layer))
            return bad(err, "ablations", i, "layer %d is not a block of this run (from %d)",
                       a->layer, in->start_layer);
        if (a->head < 0 || a->head >= p->H)
            return bad(err, "ablations", i, "head %d outside [0, %d)", a->head, p->H);
        if (a->method != ATTN_ABLATE_ZERO && a->method != ATTN_ABLATE_MEAN)
            return bad(err, "ablations", i, "unknown method %d", (int)a->method);
        if (a->batch_count < 0 || a->batch_start < 0 ||
            (a->batch_count && a->batch_start > p->B - a->batch_count))
            return bad(err, "ablations", i, "batch rows [%d, +%d) outside [0, %d)", a->batch_start,
                       a->batch_count, p->B);
    }
    return ATTN_OK;
}

static int check_patches(const attn_lm_plan *p, const attn_lm_inputs *in, attn_error *err) {
    for (int i = 0; i < in->n_patches; i++) {
        const attn_lm_patch *pt = &in->patches[i];
        int head = pt->hook == ATTN_HOOK_Z;
        int resid = pt->hook == ATTN_HOOK_RESID_PRE || pt->hook == ATTN_HOOK_ATTN_OUT ||
                    pt->hook == ATTN_HOOK_MLP_OUT || pt->hook == ATTN_HOOK_RESID_MID ||
                    pt->hook == ATTN_HOOK_RESID_POST;
        if ((!head && !resid) || pt->src == NULL || !attn_lm_has_hook(p, pt->hook))
            return bad(err, "patches", i, "hook %d cannot be patched here, or no source",
                       (int)pt->hook);
        if (bad_layer(p, in->start_layer, pt->layer))
            return bad(err, "patches", i, "layer %d is not a block of this run (from %d)",
                       pt->layer, in->start_layer);
        int limit = head ? p->H : p->T;
        if (pt->index < 0 || pt->index >= limit)
            return bad(err, "patches", i, "index %d outside [0, %d)", pt->index, limit);
    }
    return ATTN_OK;
}

int attn__check_inputs(const attn_lm_plan *p, const attn_lm_inputs *in, attn_error *err) {
    if (in->resid == NULL && (in->idx == NULL || in->start_layer != 0))
        return attn__fail(err, ATTN_ERR_ARG, in->idx ? "start_layer" : "idx",
                          "a run starts from idx (start_layer 0) or from resid");
    if (in->resid && (in->start_layer < 0 || in->start_layer > p->n_layer))
        return attn__fail(err, ATTN_ERR_ARG, "start_layer", "start_layer must be in [0, %d], got %d",
                          p->n_layer, in->start_layer);
    if (in->resid && p->training)
        return attn__fail(err, ATTN_ERR_ARG, "training",
                          "a run from a block's input is eval-only (the blocks before it would "
                          "draw dropout)");
    if (in->resid && !attn__all_finite(in->resid, (size_t)p->B * p->T * (size_t)p->C))
        return attn__fail(err, ATTN_ERR_NONFINITE, "resid", "resid holds NaN or infinity");
    if (in->n_captures < 0 || in->n_ablations < 0 || in->n_patches < 0 ||
        (in->n_captures && !in->captures) || (in->n_ablations && !in->ablations) ||
        (in->n_patches && !in->patches))
        return attn__fail(err, ATTN_ERR_ARG, "captures", "a list's count and pointer disagree");
    int rc = check_captures(p, in, err);
    if (rc || (rc = check_ablations(p, in, err))) return rc;
    return check_patches(p, in, err);
}
