/* torchmath.h - PyTorch 1.13's CPU arithmetic where sampling needs its bits
 * (private): the exponential of Vectorized<float> and the row reductions of
 * its AVX2 kernels, and libstdc++'s std::sort as torch.sort calls it.
 */
#ifndef ATTN_TORCHMATH_H
#define ATTN_TORCHMATH_H

#include <stddef.h>
#include <stdint.h>

/* vec::reduce_all<float>(max) over x[0..n), n >= 1: the largest value
 * (no NaN expected). */
float attn__torch_row_max(const float *x, size_t n);

/* y[j] = exp(x[j] - shift) with Sleef_expf8_u10 (AVX2 + FMA) for j < n, and
 * vec::reduce_all<float>(+) of the y: the sum in the order of PyTorch's AVX2
 * build (eight lane sums, then folded (0+4)+(2+6), (1+5)+(3+7); below eight
 * elements a left-to-right sum). y may be x, or NULL for the sum alone. */
float attn__torch_exp_sum(const float *x, float *y, float shift, size_t n);

/* One (value, index) entry of torch.sort's output. */
typedef struct {
    float value;
    int32_t index;
} attn__kv;

/* torch.sort(values) ascending, stable=False, on PyTorch 1.13's CPU: GCC 12's
 * std::sort (introsort: median of three, unguarded partition, insertion
 * sort below 16 elements, heap sort past 2 floor(log2 n) levels) over the
 * pairs, comparing values only, so equal values end in the same order as
 * PyTorch's. No NaN expected. kv[j].index must be j on entry. */
void attn__torch_sort_ascending(attn__kv *kv, size_t n);

#endif
