/* layers.h - the layers a transformer block is composed of besides the
 * attention kernels and the products (private to core/, prefix attn__):
 * embeddings, the norms, rotary positions, activations, dropout and the
 * residual adds. Shapes: x [rows][C] row-major float32. Kernels: they own
 * no memory and never fail (the caller validated every size and index).
 *
 *   embed.c  token (and learned position) embeddings, dropout, adds
 *   norm.c   LayerNorm (nn.LayerNorm's and the book's), RMSNorm (w and 1 + w)
 *   rope.c   rotary position embeddings: frequencies (scaled), rotation
 *   act.c    the activations and the gated MLP's product
 */
#ifndef ATTN_LAYERS_H
#define ATTN_LAYERS_H

#include "core/lm.h"

/* ==== embed.c ============================================================= */

/* x[i] = wte[tok[i]] * scale (+ wpe[pos[i]] when wpe) for i < n rows of C;
 * scale 1 multiplies nothing. ids and positions already checked. */
void attn__embed_rows(float *x, const int32_t *tok, const int *pos, int n, const float *wte,
                      const float *wpe, float scale, int C);
/* x[B][T][C] = wte[idx[b][t]] * scale (+ wpe[t]). */
void attn__embed(float *x, const int32_t *idx, const float *wte, const float *wpe, float scale,
                 int B, int T, int C);
/* nn.Dropout(p) in training mode, in place: one Bernoulli draw per element
 * in order, kept values scaled by 1/(1-p); p >= 1 zeroes without drawing.
 * mask (may be NULL) gets the multipliers (0 or 1/(1-p)). */
void attn__dropout_masked(float *x, float *mask, size_t n, double p, attn_rng *rng);
/* x[n] += y[n]. */
void attn__add(float *x, const float *y, size_t n);
/* x[n] += y[n] + z[n], as (y + z) + x (GPT-NeoX's parallel residual:
 * mlp_output + attn_output + hidden_states). */
void attn__add2(float *x, const float *y, const float *z, size_t n);

/* ==== norm.c ============================================================== */

/* y[rows][C] = the norm of each row of x, weight w and bias b (LayerNorms;
 * RMSNorm has no bias), epsilon eps; y may be x. */
void attn__norm(attn_lm_norm kind, float *y, const float *x, const float *w, const float *b,
                size_t rows, int C, double eps);

/* ==== rope.c ============================================================== */

/* inv_freq[rot / 2] of rotary dims rot (even), base theta, scaled as r
 * says (modeling_rope_utils.py's _compute_default_rope_parameters and its
 * linear and llama3 variants), in float32 as transformers keeps them. */
void attn__rope_freqs(float *inv_freq, int rot, double theta, const attn_lm_rope *r);
/* cos and sin [rot / 2] of position pos: angle = (float)pos * inv_freq. */
void attn__rope_angles(float *cos, float *sin, const float *inv_freq, int rot, int pos);
/* Rotates the first rot dims of each of n heads of x (head h at x + h * D),
 * the halves layout (rotate_half: x1, x2 = the two halves of those dims):
 * x1' = x1 cos - x2 sin, x2' = x2 cos + x1 sin, as q * cos + rotate_half(q)
 * * sin computes them; the dims past rot are left as they are. */
void attn__rope_apply(float *x, int n, int D, int rot, const float *cos, const float *sin);

/* ==== act.c =============================================================== */

/* x[j] = act(x[j]) for j < n, in place. */
void attn__act_row(float *x, int n, attn_act act);
/* gate[j] = act(gate[j]) * up[j] for j < n (a gated MLP's product). */
void attn__gated_row(float *gate, const float *up, int n, attn_act act);

#endif
