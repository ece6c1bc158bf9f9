/* rope.c - rotary position embeddings as transformers computes them
 * (modeling_rope_utils.py: _compute_default_rope_parameters,
 * _compute_linear_scaling_rope_parameters, _compute_llama3_parameters; the
 * models' rotate_half and apply_rotary_pos_emb), in float32 where it keeps
 * float32 tensors. */
#include "core/layers/layers.h"

#include <math.h>

/* Llama 3's frequency bands: long wavelengths divided by the factor, short
 * ones kept, those between blended (float32, as the torch ops run). */
static float llama3(float f, const attn_lm_rope *s) {
    float factor = (float)s->factor, old = (float)s->original_context;
    float low = (float)s->low_freq_factor, high = (float)s->high_freq_factor;
    float low_wavelen = old / low, high_wavelen = old / high;
    float wavelen = (float)(2.0 * M_PI) / f;
    float scaled = wavelen > low_wavelen ? f / factor : f;
    if (wavelen < high_wavelen || wavelen > low_wavelen) return scaled;
    float smooth = (old / wavelen - low) / (high - low);
    return (1.0f - smooth) * scaled / factor + smooth * scaled;
}

void attn__rope_freqs(float *inv_freq, int rot, double theta, const attn_lm_rope *s) {
    for (int i = 0; i < rot / 2; i++) {
        /* 1.0 / (base ** (arange(0, dim, 2).float() / dim)) */
        float e = (float)(2 * i) / (float)rot;
        float f = 1.0f / (float)pow(theta, (double)e);
        if (s && s->type == ATTN_ROPE_LINEAR) f = f / (float)s->factor;
        if (s && s->type == ATTN_ROPE_LLAMA3) f = llama3(f, s);
        inv_freq[i] = f;
    }
}

void attn__rope_angles(float *cos_out, float *sin_out, const float *inv_freq, int rot, int pos) {
    for (int i = 0; i < rot / 2; i++) {
        float a = (float)pos * inv_freq[i];
        cos_out[i] = (float)cos((double)a);
        sin_out[i] = (float)sin((double)a);
    }
}

void attn__rope_apply(float *x, int n, int D, int rot, const float *c, const float *s) {
    int half = rot / 2;
    for (int h = 0; h < n; h++) {
        float *x1 = x + (size_t)h * (size_t)D, *x2 = x1 + half;
        for (int i = 0; i < half; i++) {
            float a = x1[i], b = x2[i];
            x1[i] = a * c[i] + (-b) * s[i]; /* q * cos + rotate_half(q) * sin */
            x2[i] = b * c[i] + a * s[i];
        }
    }
}
