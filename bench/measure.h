/* measure.h - what the benchmarks share to time and place their figures:
 * the clock (wall, or this thread's CPU time when one thread runs, so that
 * other processes on a shared machine do not count), medians, the
 * machine's sgemm rate and its load average, and a failure that exits
 * (a benchmark is a program of its own, never a request path). */
#ifndef BENCH_MEASURE_H
#define BENCH_MEASURE_H

#include <time.h>

#include "core/attention.h"

/* The clock bench_now_ms reads: CLOCK_MONOTONIC (the default) or
 * CLOCK_THREAD_CPUTIME_ID. */
void bench_use_clock(clockid_t clock);
/* Milliseconds on that clock. */
double bench_now_ms(void);
/* Any clock read in milliseconds (two clocks in one run: wall and CPU). */
double bench_clock_ms(clockid_t clock);

/* Sorts x[0..n) in place and returns its median (x[n / 2]). */
double bench_median(double *x, int n);

/* GFLOP/s of a 1024^3 cblas_sgemm on `threads` OpenBLAS threads, the best
 * of `runs`, on a, b, c of 1024 * 1024 floats each (NULL: allocated here).
 * OpenBLAS is left on one thread. */
double bench_sgemm_rate(int threads, int runs, const float *a, const float *b, float *c);

/* The load averages of /proc/loadavg (1, 5, 15 minutes; -1 unreadable). */
void bench_load_average(double load[3]);

/* Prints "program: what: message (field)" and exits 1. */
void bench_fail(const char *what, const attn_error *err);

#endif
