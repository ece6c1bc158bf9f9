/* measure.c - clocks, medians, the sgemm rate and the load average of the
 * benchmarks (measure.h). */
#include "bench/measure.h"

#include <cblas.h>
#include <errno.h> /* program_invocation_short_name */
#include <stdio.h>
#include <stdlib.h>

static clockid_t g_clock = CLOCK_MONOTONIC;

void bench_use_clock(clockid_t clock) { g_clock = clock; }

double bench_clock_ms(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double bench_now_ms(void) { return bench_clock_ms(g_clock); }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *x, int n) {
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return x[n / 2];
}

enum { N = 1024 };

double bench_sgemm_rate(int threads, int runs, const float *a, const float *b, float *c) {
    float *own = NULL;
    if (a == NULL) {
        size_t nn = (size_t)N * N;
        own = malloc(3 * nn * sizeof *own);
        if (own == NULL) exit(1);
        for (size_t i = 0; i < 2 * nn; i++) own[i] = (float)(i % 13) * 0.01f;
        a = own, b = own + nn, c = own + 2 * nn;
    }
    openblas_set_num_threads(threads);
    double best = 1e30;
    for (int i = 0; i < runs; i++) {
        double t0 = bench_now_ms();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
        double ms = bench_now_ms() - t0;
        best = ms < best ? ms : best;
    }
    openblas_set_num_threads(1);
    free(own);
    return 2.0 * N * N * (double)N / best / 1e6;
}

void bench_load_average(double load[3]) {
    load[0] = load[1] = load[2] = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f && fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = load[1] = load[2] = -1;
    if (f) fclose(f);
}

void bench_fail(const char *what, const attn_error *err) {
    fprintf(stderr, "%s: %s: %s (%s)\n", program_invocation_short_name, what, err->message, err->field);
    exit(1);
}
