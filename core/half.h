/* half.h - half-size weights (private, prefix attn__): F16 and BF16 values
 * widened to float32 exactly and float32 rounded to them (nearest even),
 * rows of them widened (half.c), and the products of a few rows with
 * half-size weight rows, widened in registers (halfdot.c).
 *
 * Two sets of kernels, one chosen per process: AVX2 with FMA and F16C
 * (function target attributes, the project builds without -march) where the
 * CPU has all three, portable C anywhere else. attn__half_force_portable
 * makes a test run the portable set on any machine. There is no AVX-512 set:
 * the machines this was written on have no AVX-512 to test one on, and a
 * kernel that no test has run does not ship.
 */
#ifndef ATTN_HALF_H
#define ATTN_HALF_H

#include "attention.h"

#include <stdint.h>
#include <string.h>

static inline float attn__bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16; /* bfloat16 is float32's upper half */
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline float attn__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = h >> 10 & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000 | man << 13; /* infinity, NaN */
    } else if (exp != 0) {
        bits = sign | (exp + 112) << 23 | man << 13; /* exponent bias 15 -> 127 */
    } else {
        float v = (float)man * 0x1p-24f; /* zero or subnormal: man * 2^-24, exact */
        memcpy(&bits, &v, sizeof bits);
        bits |= sign;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline float attn__half_to_f32(attn_dtype t, uint16_t h) {
    return t == ATTN_DTYPE_F16 ? attn__f16_to_f32(h) : attn__bf16_to_f32(h);
}

/* float32 to BF16, round to nearest even; a NaN stays a (quiet) NaN. */
uint16_t attn__f32_to_bf16(float f);
/* float32 to F16, round to nearest even: beyond 65504 (and half an ulp) is
 * infinity, below 2^-14 a subnormal or zero; a NaN stays a quiet NaN. */
uint16_t attn__f32_to_f16(float f);

/* 1 if every value of x[0..n) (F16 or BF16) is finite. */
int attn__half_finite(attn_dtype t, const uint16_t *x, size_t n);
/* dst[0..n) = src[0..n) widened (F16 or BF16 to float32, exactly). */
void attn__half_widen(attn_dtype t, const uint16_t *src, float *dst, size_t n);
/* The same in portable C, whatever the CPU has (the portable set's). */
void attn__half_widen_portable(attn_dtype t, const uint16_t *src, float *dst, size_t n);

/* y[r][j] = bias[j] + sum over k of x[r][k] * w[j][k], for rows r < rows and
 * weight rows j < cols (bias may be NULL: 0). Each result is one fixed
 * sequence of operations (eight lanes, then their sum, then the tail): the
 * same bits whatever thread computes it. */
typedef struct {
    const float *x;     /* [rows][ldx] */
    int ldx, rows;
    const uint16_t *w;  /* [cols][in] */
    int in, cols;
    const float *bias;  /* [cols] or NULL */
    float *y;           /* [rows][ldy] */
    int ldy;
} attn__half_dot_args;
void attn__half_dot(attn_dtype t, const attn__half_dot_args *a);

/* The kernels in use: "avx2" (AVX2, FMA and F16C) or "portable". */
const char *attn__half_kernels(void);
/* on = 1: the portable kernels from now on, whatever the CPU has (tests);
 * 0: the CPU's best again. */
void attn__half_force_portable(int on);
/* 1 when the AVX2 set runs (the CPU has it and it is not forced off). */
int attn__half_avx2(void);

#endif
