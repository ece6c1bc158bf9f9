/* json_guard.c - jansson's allocations and its parse, guarded (base.h).
 *
 * jansson 2.14 does not always say when it ran out of memory: some failed
 * allocations of its lexer come back as syntax errors ("string or '}'
 * expected"), others drop a character and parse on (found by
 * tests/test_api_chaos.c). So its allocations go through json_alloc, which
 * notes a failure for the thread that made it, and api_handle answers 503
 * out_of_memory whenever one failed. Installed once; it is plain malloc and
 * free, like jansson's defaults, so a jansson call already running elsewhere
 * is not disturbed.
 *
 * Some failed allocations make it abort: its lexer asserts that the
 * character it could not save is there (load.c: assert(0) when the escape
 * it decodes has lost its letter, assert(c == d) when it puts a character
 * back), which any request could hit under real memory pressure (ulimit -v,
 * strict overcommit; tests/test_api_jansson_oom.c). So while jansson parses
 * on a thread, the assertion handler of glibc, replaced here for the whole
 * program, jumps back out of it when an allocation of that parse failed:
 * the request gets 503 out_of_memory and what jansson held is lost (leaked),
 * which only happens when memory is already short. Any other failed
 * assertion prints glibc's message and aborts, as before. This file calls
 * nothing of api/ or core/.
 */
#include "api/base/base.h"

#include <jansson.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static _Thread_local int json_alloc_failed;
static _Thread_local sigjmp_buf *json_escape; /* set while jansson parses on this thread */
static pthread_once_t json_alloc_once = PTHREAD_ONCE_INIT;

static void *json_alloc(size_t n) {
    void *p = malloc(n);
    if (p == NULL) json_alloc_failed = 1;
    return p;
}

static void json_alloc_install(void) { json_set_alloc_funcs(json_alloc, free); }

void __assert_fail(const char *assertion, const char *file, unsigned int line, const char *function) {
    if (json_escape && json_alloc_failed) siglongjmp(*json_escape, 1);
    fprintf(stderr, "%s:%u: %s: Assertion `%s' failed.\n", file, line, function, assertion);
    abort();
}

void api__json_begin(void) {
    pthread_once(&json_alloc_once, json_alloc_install);
    json_alloc_failed = 0;
}

int api__json_failed(void) { return json_alloc_failed; }

json_t *api__json_parse(const char *text, size_t len, json_error_t *je) {
    sigjmp_buf escape;
    json_t *volatile root = NULL;
    if (sigsetjmp(escape, 0) == 0) {
        json_escape = &escape;
        root = json_loadb(text, len, JSON_REJECT_DUPLICATES, je);
    }
    json_escape = NULL;
    return root;
}
