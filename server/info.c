/* info.c - see info.h. */
#include "info.h"

#include <cblas.h>
#include <jansson.h>
#include <string.h>

#include "core/attention.h"
#include "kernels.h"

#ifdef __clang__
#define COMPILER "clang " __clang_version__
#else
#define COMPILER "gcc " __VERSION__
#endif

char *srv_info_version_json(size_t *len) {
    const srv_kernels *k = srv_kernels_get();
    json_t *v = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:i, s:s, s:{s:b, s:i, s:f, s:f, s:s}}}",
                          "name", "attention-server", "version", ATTN_VERSION,
                          "build", "date", __DATE__ " " __TIME__, "compiler", COMPILER,
                          "openblas", "core", openblas_get_corename(),
                          "threads", openblas_get_num_threads(),
                          "config", openblas_get_config(),
                          "check", "passed", k->report.passed, "products", k->report.products,
                          "worst", k->report.worst, "ms", k->report.ms,
                          "fallback_from", k->fallback_from);
    if (!v) return NULL;
    char *s = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    if (s) *len = strlen(s);
    return s;
}

const char *srv_info_version_line(void) {
    return "attention-server " ATTN_VERSION " (built " __DATE__ " " __TIME__ ")";
}

const char *srv_info_version(void) { return ATTN_VERSION; }

const char *srv_info_compiler(void) { return COMPILER; }

const char *srv_info_openblas(void) { return openblas_get_corename(); }
