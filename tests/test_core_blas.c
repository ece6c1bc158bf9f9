/* test_core_blas.c - attn_blas_check (core/blas.c), the start-up check of
 * OpenBLAS's kernels:
 *   - the kernels of this process pass, with one and two OpenBLAS threads,
 *     every product compared (worst ratio above 0: the comparisons ran);
 *   - the comparison tolerates float32 rounding (an entry moved by one ulp,
 *     or by 0.9 of its bound, passes) and catches wrong products: an entry
 *     1.1 bounds off, a hundredth of its value off, zeroed, NaN, a product
 *     with B not transposed, one K panel left out;
 *   - ATTN_BLAS_CHECK_FAIL makes the check fail for the named core only.
 * The server's fallback on a failing check is tested in
 * test_server_kernels.c.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/attention.h"
#include "core/blas.h"
#include "tests/support/check_main.h"

#include <cblas.h> /* openblas_set_num_threads, openblas_get_corename */

static void expect_pass(const attn_blas_report *r) {
    ck_assert_msg(r->passed, "%s failed: %s at %g of the bound", r->core, r->failed, r->worst);
    ck_assert_int_eq(r->products, 8);
    /* float32 results differ from the double reference: a ratio of 0 would
     * mean nothing was compared */
    ck_assert_msg(r->worst > 0.0 && r->worst < 1.0, "worst %g", r->worst);
    ck_assert_str_eq(r->core, openblas_get_corename());
    ck_assert_ptr_nonnull(strstr(r->config, "OpenBLAS"));
    ck_assert_str_eq(r->failed, "");
    ck_assert_msg(r->ms > 0.0 && r->ms < 5000.0, "%g ms", r->ms);
}

START_TEST(test_kernels_pass) {
    attn_blas_report r;
    for (int threads = 1; threads <= 2; threads++) {
        openblas_set_num_threads(threads);
        ck_assert_int_eq(attn_blas_check(&r), ATTN_OK);
        expect_pass(&r);
    }
    ck_assert_int_eq(attn_blas_check(NULL), ATTN_ERR_ARG);
}
END_TEST

/* ==== the comparison ====================================================== */

/* c_attn's block (linear.c): 35 rows, 132 of the output columns, K = 768. */
static const attn__blas_case NT = {"nt", 0, 0, 1, 35, 132, 768, 768, 768, 132, 1.0f, 1.0f};

typedef struct {
    attn__blas_case bc;
    float *a, *b, *c0, *c;
    double *scratch;
} product;

static void product_make(product *p, const attn__blas_case *bc) {
    p->bc = *bc;
    size_t na = attn__blas_size_a(bc), nb = attn__blas_size_b(bc), nc = attn__blas_size_c(bc);
    p->a = malloc((na + nb + 2 * nc) * sizeof(float));
    p->scratch = malloc(2 * (size_t)bc->n * sizeof(double));
    ck_assert(p->a && p->scratch);
    p->b = p->a + na, p->c0 = p->b + nb, p->c = p->c0 + nc;
    uint64_t s = 7;
    for (size_t i = 0; i < na + nb + nc; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        p->a[i] = (float)((double)(s >> 40) / (1 << 23) - 1.0);
    }
    memcpy(p->c, p->c0, nc * sizeof(float));
    attn__blas_run(bc, p->a, p->b, p->c);
}

static double ratio(const product *p) {
    return attn__blas_ratio(&p->bc, p->a, p->b, p->c0, p->c, p->scratch, p->scratch + p->bc.n);
}

static void product_free(product *p) { free(p->a), free(p->scratch); }

START_TEST(test_rounding_passes) {
    openblas_set_num_threads(1);
    product p;
    product_make(&p, &NT);
    double r0 = ratio(&p);
    ck_assert_msg(r0 > 0.0 && r0 < 0.5, "right product: %g of the bound", r0);
    float *e = &p.c[17 * NT.ldc + 61];
    *e = nextafterf(*e, INFINITY); /* one ulp: float rounding, within the bound */
    ck_assert_msg(ratio(&p) < 1.0, "one ulp off: %g", ratio(&p));
    product_free(&p);
}
END_TEST

/* The bound of entry (i, j) of NT as attention.h states it, computed here
 * on its own: gamma(k + 2) (sum_l |a_il b_jl| + |c0_ij|). */
static double bound_of(const product *p, int i, int j) {
    double mag = fabs(p->c0[i * NT.ldc + j]), u = ldexp(1.0, -24), n = NT.k + 2;
    for (int l = 0; l < NT.k; l++)
        mag += fabs((double)p->a[i * NT.lda + l] * p->b[j * NT.ldb + l]);
    return n * u / (1 - n * u) * mag;
}

START_TEST(test_wrong_entries_caught) {
    openblas_set_num_threads(1);
    product p;
    product_make(&p, &NT);
    double r0 = ratio(&p); /* every entry's own rounding, below 1 */
    float *e = &p.c[17 * NT.ldc + 61], keep = *e;
    double bound = bound_of(&p, 17, 61);
    *e = (float)(keep + (0.9 - r0) * bound); /* within the bound: passes */
    ck_assert_msg(ratio(&p) < 1.0, "0.9 - %g bounds off: %g", r0, ratio(&p));
    *e = (float)(keep + (1.1 + r0) * bound); /* beyond it: caught */
    ck_assert_msg(ratio(&p) > 1.0, "1.1 + %g bounds off: %g", r0, ratio(&p));
    *e = keep * 1.01f; /* a hundredth of its value: caught (caught here) */
    ck_assert_msg(ratio(&p) > 1.0, "off by 1e-2 relative: %g", ratio(&p));
    *e = 0.0f;
    ck_assert_msg(ratio(&p) > 1.0, "zeroed: %g", ratio(&p));
    *e = NAN;
    ck_assert_msg(isinf(ratio(&p)), "NaN: %g", ratio(&p));
    *e = keep;
    ck_assert_msg(ratio(&p) == r0, "restored: %g", ratio(&p));
    product_free(&p);
}
END_TEST

START_TEST(test_wrong_products_caught) {
    openblas_set_num_threads(1);
    /* B read as [k][n] where it is [n][k]: a transposition mistake */
    attn__blas_case square = {"sq", 0, 0, 1, 35, 64, 64, 64, 64, 64, 1.0f, 0.0f};
    product p;
    product_make(&p, &square);
    ck_assert(ratio(&p) < 1.0);
    memcpy(p.c, p.c0, attn__blas_size_c(&square) * sizeof(float));
    attn__blas_case nn = square;
    nn.trans_b = 0;
    attn__blas_run(&nn, p.a, p.b, p.c);
    ck_assert_msg(ratio(&p) > 1.0, "untransposed B: %g", ratio(&p));
    product_free(&p);
    /* the last K panel (K 384..767) left out */
    product_make(&p, &NT);
    attn__blas_case half = NT;
    half.k = 384;
    memcpy(p.c, p.c0, attn__blas_size_c(&NT) * sizeof(float));
    attn__blas_run(&half, p.a, p.b, p.c);
    ck_assert_msg(ratio(&p) > 1.0, "half of K: %g", ratio(&p));
    product_free(&p);
}
END_TEST

/* ==== the test-only failure ================================================ */

START_TEST(test_fail_named_core_only) {
    openblas_set_num_threads(1);
    attn_blas_report r;
    char list[96];
    /* the current core, in lower case, among others */
    snprintf(list, sizeof list, "Prescott2,%s,Nehalem3", openblas_get_corename());
    for (char *c = list; *c; c++) *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
    setenv("ATTN_BLAS_CHECK_FAIL", list, 1);
    ck_assert_int_eq(attn_blas_check(&r), ATTN_OK);
    ck_assert_msg(!r.passed, "passed with ATTN_BLAS_CHECK_FAIL=%s", list);
    ck_assert_str_eq(r.failed, "linear_nt_k768");
    ck_assert_msg(r.worst > 10.0, "worst %g", r.worst);
    ck_assert_int_eq(r.products, 8); /* every product still compared */
    setenv("ATTN_BLAS_CHECK_FAIL", "NoSuchCore,Other", 1);
    ck_assert_int_eq(attn_blas_check(&r), ATTN_OK);
    expect_pass(&r);
    unsetenv("ATTN_BLAS_CHECK_FAIL");
    ck_assert_int_eq(attn_blas_check(&r), ATTN_OK);
    expect_pass(&r);
}
END_TEST

static Suite *blas_suite(void) {
    Suite *s = suite_create("blas");
    const TTest *check[] = {test_kernels_pass, test_fail_named_core_only, NULL};
    tcase_with(s, "check", 30, check);
    const TTest *compare[] = {test_rounding_passes, test_wrong_entries_caught,
                              test_wrong_products_caught, NULL};
    tcase_with(s, "compare", 30, compare);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {blas_suite}};
