/* blas.h - the products attn_blas_check compares, and the comparison
 * (private; tests/test_core_blas.c feeds it wrong products). */
#ifndef ATTN_BLAS_H
#define ATTN_BLAS_H

#include <stddef.h>

/* One product as the core calls it, row-major:
 *   gemm: C[m][n] (ldc) = alpha op(A)[m][k] op(B)[k][n] + beta C;
 *   gemv: y[m] = alpha op(A)[m][k] x[k] + beta y, A stored [m][k] (lda) or
 *         [k][m] when trans_a; then n is 1, x is B with ldb 1, ldc is 1.
 * op(A) is A or Aᵀ (trans_a), op(B) likewise: A is stored [m][lda] or
 * [k][lda], B [k][ldb] or [n][ldb]. */
typedef struct {
    const char *name;
    int gemv;
    int trans_a, trans_b;
    int m, n, k, lda, ldb, ldc;
    float alpha, beta;
} attn__blas_case;

/* Floats of A, B and C of a case (C counts the ldc-strided rows). */
size_t attn__blas_size_a(const attn__blas_case *bc);
size_t attn__blas_size_b(const attn__blas_case *bc);
size_t attn__blas_size_c(const attn__blas_case *bc);

/* Runs the case through OpenBLAS: c (attn__blas_size_c floats) holds the
 * initial C on entry, the product on return. */
void attn__blas_run(const attn__blas_case *bc, const float *a, const float *b, float *c);

/* The largest |c - ref| / bound over the m x n entries of c, where ref and
 * bound are computed from a, b and c0 (C before the product) in double as
 * attn_blas_check says; INFINITY when an entry is NaN, or wrong where the
 * bound is 0. acc and mag are scratch of n doubles each. */
double attn__blas_ratio(const attn__blas_case *bc, const float *a, const float *b,
                        const float *c0, const float *c, double *acc, double *mag);

#endif
