/* bench_serialise.c - the reply float printer against snprintf("%.9g") and
 * jansson's json_dumps on the same 1M floats, in one run. Built and run by
 * `make bench` (build/bench/bench_serialise). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_internal.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void) {
    enum { N = 1000000, ROUNDS = 5 };
    float *x = malloc(N * sizeof *x);
    uint64_t s = 42;
    for (int i = 0; i < N; i++) { /* softmax-like weights and activations in [-2, 2] */
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 4.0 - 2.0);
    }
    double best[3] = {1e9, 1e9, 1e9};
    size_t bytes[3] = {0};
    for (int r = 0; r < ROUNDS; r++) {
        api_buf b = {0};
        api_fmt f = {0};
        double t = now();
        api__emit_floats(&b, x, 1, (int[]){N}, &f, NULL);
        t = now() - t;
        if (t < best[0]) best[0] = t;
        bytes[0] = b.len;
        api_buf_free(&b);

        char *out = malloc((size_t)N * 18 + 2);
        size_t len = 0;
        t = now();
        out[len++] = '[';
        for (int i = 0; i < N; i++) {
            if (i) out[len++] = ',';
            len += (size_t)snprintf(out + len, 18, "%.9g", (double)x[i]);
        }
        out[len++] = ']';
        t = now() - t;
        if (t < best[1]) best[1] = t;
        bytes[1] = len;
        free(out);

        t = now();
        json_t *a = json_array();
        for (int i = 0; i < N; i++) json_array_append_new(a, json_real(x[i]));
        char *d = json_dumps(a, JSON_COMPACT);
        json_decref(a);
        t = now() - t;
        if (t < best[2]) best[2] = t;
        bytes[2] = strlen(d);
        free(d);
    }
    printf("1M floats, best of %d:\n", ROUNDS);
    printf("  api printer (shortest round-trip): %7.1f ms  %zu bytes\n", best[0] * 1e3, bytes[0]);
    printf("  snprintf %%.9g:                     %7.1f ms  %zu bytes  (%.1fx slower)\n", best[1] * 1e3,
           bytes[1], best[1] / best[0]);
    printf("  jansson json_real + json_dumps:    %7.1f ms  %zu bytes  (%.1fx slower)\n", best[2] * 1e3,
           bytes[2], best[2] / best[0]);
    free(x);
    return 0;
}
