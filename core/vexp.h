/* vexp.h - vectorised exponentials and row reductions for the softmax, and
 * GPT-2's GELU (private).
 *
 * One implementation, chosen once per process by the CPU (AVX-512, AVX2+FMA
 * or SSE2 clones of the same C): every thread of a process computes the same
 * bits. The exponential is Cephes' expf polynomial (within 2 ulp of the
 * correctly rounded value), so results agree with the libm-based reference
 * to float rounding.
 */
#ifndef ATTN_VEXP_H
#define ATTN_VEXP_H

/* The largest of x[0..n), -INFINITY for n == 0 or all -INFINITY. */
float attn__row_max(const float *x, int n);

/* y[j] = exp(x[j] - shift) (0 where x[j] is -INFINITY) for j < n and returns
 * their sum, accumulated in a fixed order. shift is finite and >= every x[j].
 * y may be x. */
float attn__exp_shifted(float *y, const float *x, float shift, int n);

/* y[j] *= a for j < n. */
void attn__scale_row(float *y, float a, int n);

/* x[j] = gelu(x[j]) for j < n, in place: F.gelu's erf form (tanh_form 0,
 * ATTN_GELU_ERF) or gelu_new's tanh approximation (ATTN_GELU_TANH). */
void attn__gelu_row(float *x, int n, int tanh_form);

/* x[j] = x[j] * sigmoid(x[j]) (SiLU) for j < n, in place. */
void attn__silu_row(float *x, int n);

#endif
