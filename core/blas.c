/* blas.c - attn_blas_check: the OpenBLAS kernels of this process against a
 * plain double loop, on the products the core runs.
 *
 * OpenBLAS picks its kernels at load time (or from OPENBLAS_CORETYPE); a
 * kernel set that miscomputes on a CPU it does not know would make every
 * result wrong while looking fine. Each case below is one shape of product
 * the core calls, with the same transposes and leading dimensions, at sizes
 * that pass through every part of a kernel (full and partial register
 * tiles, several K panels) in milliseconds.
 */
#include "blas.h"
#include "attention.h"

#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* name, gemv, trans_a, trans_b, m, n, k, lda, ldb, ldc, alpha, beta. Row
 * counts are 35 (two 16-row tiles and a remainder), column counts cover
 * full and partial tiles; K and the leading dimensions are GPT-2's (768
 * wide, 3072 in the MLP, Q/K/V rows of 768, tiles of 256 keys). */
static const attn__blas_case CASES[] = {
    /* nn.Linear blocks (linear.c): y = x Wᵀ + b, bias preloaded in y (beta 1) */
    {"linear_nt_k768", 0, 0, 1, 35, 132, 768, 768, 768, 2304, 1.0f, 1.0f},
    {"linear_nt_k3072", 0, 0, 1, 35, 36, 3072, 3072, 3072, 768, 1.0f, 1.0f},
    /* SelfAttention_v1's raw [in][out] weights: y = x W */
    {"linear_nn_in_out", 0, 0, 0, 35, 100, 768, 768, 384, 384, 1.0f, 0.0f},
    /* scores of a tile: Q Kᵀ scaled, rows of the [T][768] projections (flash.c, kernel.c) */
    {"scores_qkt", 0, 0, 1, 64, 200, 64, 768, 768, 256, 0.125f, 0.0f},
    /* weights · V added to the tile's output rows (flash.c) */
    {"context_pv", 0, 0, 0, 64, 64, 200, 256, 768, 768, 1.0f, 1.0f},
    /* decoding one token: W x and x W, and the same as a one-row sgemm */
    {"decode_gemv_n", 1, 0, 0, 260, 1, 768, 768, 1, 1, 1.0f, 1.0f},
    {"decode_gemv_t", 1, 1, 0, 260, 1, 768, 260, 1, 1, 1.0f, 0.0f},
    {"decode_gemm_1row", 0, 0, 1, 1, 384, 768, 768, 768, 384, 1.0f, 1.0f},
};
#define N_CASES ((int)(sizeof CASES / sizeof CASES[0]))

size_t attn__blas_size_a(const attn__blas_case *bc) {
    return (size_t)(bc->trans_a ? bc->k : bc->m) * (size_t)bc->lda;
}

size_t attn__blas_size_b(const attn__blas_case *bc) {
    return (size_t)(bc->trans_b ? bc->n : bc->k) * (size_t)bc->ldb;
}

size_t attn__blas_size_c(const attn__blas_case *bc) { return (size_t)bc->m * (size_t)bc->ldc; }

void attn__blas_run(const attn__blas_case *bc, const float *a, const float *b, float *c) {
    if (bc->gemv) {
        /* A as stored: [m][k] for y = A x, [k][m] for y = Aᵀ x */
        int rows = bc->trans_a ? bc->k : bc->m, cols = bc->trans_a ? bc->m : bc->k;
        cblas_sgemv(CblasRowMajor, bc->trans_a ? CblasTrans : CblasNoTrans, rows, cols, bc->alpha,
                    a, bc->lda, b, 1, bc->beta, c, 1);
        return;
    }
    cblas_sgemm(CblasRowMajor, bc->trans_a ? CblasTrans : CblasNoTrans,
                bc->trans_b ? CblasTrans : CblasNoTrans, bc->m, bc->n, bc->k, bc->alpha, a,
                bc->lda, b, bc->ldb, bc->beta, c, bc->ldc);
}

/* gamma(n) = n u / (1 - n u) with u = 2^-24 (Higham, Accuracy and Stability
 * of Numerical Algorithms, 3.1): |fl(sum) - sum| <= gamma(n) sum |terms| for
 * n float32 operations in any order. */
static double gamma_f32(int n) {
    double nu = n * ldexp(1.0, -24);
    return nu / (1.0 - nu);
}

/* sum_l x[l sx] y[l] and sum_l |x[l sx] y[l]| for l < k, in double over
 * four chains (a vector with AVX2). */
static inline void dot(const float *x, size_t sx, const float *y, int k, double *sum,
                       double *mag) {
    double s[4] = {0}, m[4] = {0};
    int l = 0;
    for (; l + 4 <= k; l += 4)
        for (int u = 0; u < 4; u++) {
            double p = (double)x[(size_t)(l + u) * sx] * y[l + u];
            s[u] += p, m[u] += fabs(p);
        }
    for (; l < k; l++) {
        double p = (double)x[(size_t)l * sx] * y[l];
        s[0] += p, m[0] += fabs(p);
    }
    *sum = (s[0] + s[1]) + (s[2] + s[3]);
    *mag = (m[0] + m[1]) + (m[2] + m[3]);
}

/* Row i of op(A) op(B) into acc[n] and its magnitude sum_l |a b| into
 * mag[n], in double (each a b is exact in double): dot products when
 * op(B)'s columns are contiguous (B stored [n][k], or one column), else rows
 * of B added into acc. Vector clones for speed only: the reference is
 * double either way. */
__attribute__((target_clones("arch=x86-64-v3", "default")))
static void reference_row(const attn__blas_case *bc, const float *a, const float *b, int i,
                          double *restrict acc, double *restrict mag) {
    size_t sa = bc->trans_a ? (size_t)bc->lda : 1; /* op(A)(i, l) = arow[l * sa] */
    const float *arow = bc->trans_a ? a + i : a + (size_t)i * bc->lda;
    if (bc->trans_b || (bc->n == 1 && bc->ldb == 1)) {
        for (int j = 0; j < bc->n; j++) {
            const float *bcol = b + (size_t)j * bc->ldb;
            if (sa == 1) /* the same call, with the stride known: contiguous loads */
                dot(arow, 1, bcol, bc->k, &acc[j], &mag[j]);
            else
                dot(arow, sa, bcol, bc->k, &acc[j], &mag[j]);
        }
        return;
    }
    for (int j = 0; j < bc->n; j++) acc[j] = mag[j] = 0.0;
    for (int l = 0; l < bc->k; l++) {
        double x = arow[(size_t)l * sa];
        const float *brow = b + (size_t)l * bc->ldb;
        for (int j = 0; j < bc->n; j++) {
            double p = x * brow[j];
            acc[j] += p, mag[j] += fabs(p);
        }
    }
}

double attn__blas_ratio(const attn__blas_case *bc, const float *a, const float *b,
                        const float *c0, const float *c, double *acc, double *mag) {
    double g = gamma_f32(bc->k + 2), worst = 0.0, alpha = bc->alpha, beta = bc->beta;
    for (int i = 0; i < bc->m; i++) {
        reference_row(bc, a, b, i, acc, mag);
        for (int j = 0; j < bc->n; j++) {
            size_t at = (size_t)i * bc->ldc + j;
            double ref = alpha * acc[j] + beta * c0[at];
            double bound = g * (fabs(alpha) * mag[j] + fabs(beta * c0[at]));
            double err = fabs((double)c[at] - ref);
            double ratio = bound > 0.0 ? err / bound : err == 0.0 ? 0.0 : INFINITY;
            if (!(ratio <= worst)) worst = isnan(ratio) ? INFINITY : ratio; /* NaN: fails */
        }
    }
    return worst;
}

/* Uniform in [-1, 1) from a 64-bit LCG (Knuth's MMIX constants): the same
 * inputs on every run. */
static float uniform(uint64_t *s) {
    *s = *s * 6364136223846793005u + 1442695040888963407u;
    return (float)((double)(*s >> 40) / (double)(1u << 23) - 1.0);
}

/* 1 when ATTN_BLAS_CHECK_FAIL names `core` (see attention.h). */
static int fail_requested(const char *core) {
    const char *list = getenv("ATTN_BLAS_CHECK_FAIL");
    size_t n = strlen(core);
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncasecmp(p, core, n) == 0) return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

static void copy_text(char *dst, size_t cap, const char *src) {
    snprintf(dst, cap, "%s", src ? src : "");
}

/* Runs case bc on fresh inputs in the work space (a, b, c0, c) and returns
 * its ratio (acc: 2n doubles of scratch); `corrupt` makes one entry wrong
 * first. */
static double check_case(const attn__blas_case *bc, float *work, double *acc, int corrupt,
                         uint64_t *seed) {
    size_t na = attn__blas_size_a(bc), nb = attn__blas_size_b(bc), nc = attn__blas_size_c(bc);
    float *a = work, *b = a + na, *c0 = b + nb, *c = c0 + nc;
    for (size_t i = 0; i < na + nb + nc; i++) a[i] = uniform(seed);
    memcpy(c, c0, nc * sizeof *c);
    attn__blas_run(bc, a, b, c);
    if (corrupt) c[(size_t)(bc->m / 2) * bc->ldc + (size_t)(bc->n / 2)] += 1.0f;
    return attn__blas_ratio(bc, a, b, c0, c, acc, acc + bc->n);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int attn_blas_check(attn_blas_report *r) {
    if (r == NULL) return ATTN_ERR_ARG;
    double t0 = now_ms();
    memset(r, 0, sizeof *r);
    copy_text(r->core, sizeof r->core, openblas_get_corename());
    copy_text(r->config, sizeof r->config, openblas_get_config());
    /* one work space for the largest case: A, B, C0 and C, and 2n doubles */
    size_t most = 0, widest = 0;
    for (int i = 0; i < N_CASES; i++) {
        const attn__blas_case *bc = &CASES[i];
        size_t f = attn__blas_size_a(bc) + attn__blas_size_b(bc) + 2 * attn__blas_size_c(bc);
        most = f > most ? f : most;
        widest = (size_t)bc->n > widest ? (size_t)bc->n : widest;
    }
    /* small constant sizes: no overflow */
    float *work = malloc(most * sizeof *work);
    double *acc = malloc(2 * widest * sizeof *acc);
    if (work == NULL || acc == NULL) {
        free(work), free(acc);
        return ATTN_ERR_NOMEM;
    }
    int corrupt = fail_requested(r->core);
    uint64_t seed = 20261125;
    r->passed = 1;
    for (int i = 0; i < N_CASES; i++) {
        double ratio = check_case(&CASES[i], work, acc, corrupt && i == 0, &seed);
        r->products++;
        if (!(ratio <= r->worst)) r->worst = ratio;
        if (!(ratio < 1.0) && r->passed) {
            r->passed = 0;
            copy_text(r->failed, sizeof r->failed, CASES[i].name);
        }
    }
    free(work), free(acc);
    r->ms = now_ms() - t0;
    return ATTN_OK;
}
