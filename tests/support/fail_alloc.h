/* fail_alloc.h - making one allocation fail, for the chaos tests.
 *
 * A test program linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
 * (see the Makefile) routes every allocation of its own code, api/, core/ and
 * jansson through these wrappers; libc's own (strdup) and OpenBLAS's are not
 * seen. Not thread-safe: arm it around single-threaded work.
 */
#ifndef TESTS_FAIL_ALLOC_H
#define TESTS_FAIL_ALLOC_H

/* Counts the allocations from now on, failing none. */
void fail_alloc_count(void);
/* Fails allocation number k (from 0) from now on, once. */
void fail_alloc_at(long k);
/* Stops failing; returns how many allocations were seen since the last
 * fail_alloc_count or fail_alloc_at. */
long fail_alloc_stop(void);
/* With on, allocations pass without being counted or failed (a check that
 * allocates between two armed steps); with 0, as before. */
void fail_alloc_pause(int on);
/* Whether the armed allocation was reached (and failed). */
int fail_alloc_reached(void);

#endif
