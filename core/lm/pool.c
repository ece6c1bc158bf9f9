/* pool.c - sentence embeddings from a model's last hidden states, as
 * sentence-transformers' Pooling.forward computes them (its config.json's
 * pooling_mode_* modes, concatenated in its order), and Normalize
 * (F.normalize: x / max(||x||, 1e-12)). Sums in float32 over the tokens in
 * order, as torch.sum over one axis of a small tensor adds them. */
#include "core/lm/lm.h"

#include <math.h>
#include <string.h>

static const unsigned order[] = {ATTN_POOL_CLS, ATTN_POOL_MAX, ATTN_POOL_MEAN, ATTN_POOL_MEAN_SQRT,
                                 ATTN_POOL_WEIGHTED, ATTN_POOL_LAST};
#define N_MODES (int)(sizeof order / sizeof order[0])

int attn_lm_pool_width(const attn_lm_pooling *pl, int C) {
    int n = 0;
    for (int i = 0; pl && i < N_MODES; i++) n += (pl->modes & order[i]) != 0;
    return n * C;
}

/* One mode of one row h [T][C] (m [T], NULL: all tokens) into out [C]. */
static void pool_row(unsigned mode, const float *h, const uint8_t *m, int T, int C, float *out) {
    int n = 0, last = 0;
    float wn = 0.0f; /* the weights' sum: positions 1, 2, ... of the tokens */
    for (int t = 0; t < T; t++)
        if (!m || m[t]) n++, last = t, wn += (float)(t + 1);
    for (int c = 0; c < C; c++) {
        float sum = 0.0f, wsum = 0.0f, most = -INFINITY;
        for (int t = 0; t < T; t++) {
            float x = h[(size_t)t * C + c], keep = !m || m[t] ? 1.0f : 0.0f;
            sum += x * keep;
            wsum += x * keep * (float)(t + 1);
            most = fmaxf(most, keep != 0.0f ? x : -1e9f);
        }
        switch (mode) {
        case ATTN_POOL_CLS: out[c] = h[c]; break;
        case ATTN_POOL_MAX: out[c] = most; break;
        case ATTN_POOL_MEAN: out[c] = sum / fmaxf((float)n, 1e-9f); break;
        case ATTN_POOL_MEAN_SQRT: out[c] = sum / sqrtf(fmaxf((float)n, 1e-9f)); break;
        case ATTN_POOL_WEIGHTED: out[c] = wsum / fmaxf(wn, 1e-9f); break;
        default: out[c] = n ? h[(size_t)last * C + c] : 0.0f; break;
        }
    }
}

int attn_lm_pool(const attn_lm_pooling *pl, const float *hidden, const uint8_t *mask, int B, int T,
                 int C, float *out, attn_error *err) {
    int width = attn_lm_pool_width(pl, C);
    if (width == 0 || hidden == NULL || out == NULL || B < 1 || T < 1 || C < 1)
        return attn__fail(err, ATTN_ERR_ARG, "pooling", "pooling needs a mode and [B][T][C] "
                          "hidden states");
    for (int b = 0; b < B; b++) {
        float *o = out + (size_t)b * (size_t)width;
        const float *h = hidden + (size_t)b * (size_t)T * (size_t)C;
        const uint8_t *m = mask ? mask + (size_t)b * (size_t)T : NULL;
        for (int i = 0, at = 0; i < N_MODES; i++)
            if (pl->modes & order[i]) pool_row(order[i], h, m, T, C, o + at), at += C;
        if (!pl->normalize) continue;
        double sq = 0.0;
        for (int c = 0; c < width; c++) sq += (double)o[c] * o[c];
        float norm = fmaxf((float)sqrt(sq), 1e-12f);
        for (int c = 0; c < width; c++) o[c] /= norm;
    }
    return ATTN_OK;
}
