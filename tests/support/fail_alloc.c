/* fail_alloc.c - see fail_alloc.h. */
#include "tests/support/fail_alloc.h"

#include <stddef.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);

static long calls;        /* allocations counted since the last reset */
static long fail_at = -1; /* the one to fail, counting from 0; -1: none */
static int failed;        /* it was reached */
static int paused;        /* allocations pass uncounted */

static int should_fail(void) {
    if (fail_at < 0 || paused) return 0;
    if (calls++ != fail_at) return 0;
    failed = 1;
    return 1;
}

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n) { return should_fail() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return should_fail() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { return should_fail() ? NULL : __real_realloc(p, n); }

void fail_alloc_count(void) {
    calls = 0;
    failed = 0;
    paused = 0;
    fail_at = 1L << 60;
}

void fail_alloc_at(long k) {
    calls = 0;
    failed = 0;
    paused = 0;
    fail_at = k;
}

long fail_alloc_stop(void) {
    fail_at = -1;
    return calls;
}

int fail_alloc_reached(void) { return failed; }

void fail_alloc_pause(int on) { paused = on; }
