/* test_server_openai.c - OpenAI's official Node client drives
 * /v1/completions unchanged (tests/clients/openai_client.mjs), against the
 * server of this build with the Hugging Face checkpoint tiny_hf.safetensors
 * and the byte-level tokenizer, and gets PyTorch's completions
 * (tests/golden/generation/tiny_hf.json):
 *
 *   - models.list() lists the model;
 *   - completions.create: greedy (text and token_logprobs within 1e-4),
 *     n = 2 sampled from one seed with top_p, top_k (llama.cpp's), a stop
 *     string with echo, a prompt of token ids;
 *   - the same streamed (stream: true, include_usage): the client's own
 *     stream reader puts together the same texts, log-probabilities,
 *     finish reasons and usage;
 *   - a model that does not exist is the client's 404 (NotFoundError).
 *
 * npm's "openai" is pinned to a release that runs on Debian bookworm's Node
 * 18 (7.x needs Node 22: its "engines"; 6.x has none and uses Node 18's
 * fetch), installed once into build/npm-openai. tests/node18-check.sh runs
 * this test with Node 18.20.4 too.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/bpe/bpe.h"
#include "support/check_main.h"
#include "support/files.h"
#include "support/gen_golden.h"
#include "support/npm.h"
#include "support/procs.h"
#include "support/server_harness.h"
#include "support/tiny_server.h"
#include "support/tmpdir.h"

#define OPENAI "openai@6.49.0"
#define LP_TOL 1e-4

static gg_case g_hf[8];

static const gg_case *hf(const char *name) {
    for (int i = 0; i < 8; i++)
        if (strcmp(g_hf[i].name, name) == 0) return &g_hf[i];
    ck_abort_msg("no golden %s", name);
    return NULL;
}

/* Row b of golden c as the reply's text (U+FFFD for pieces of characters),
 * its first n tokens (all: -1), after `prefix`. */
static void text_of(const gg_case *c, int b, int n, const char *prefix, char *out) {
    char bytes[GG_MAX_TOKENS + 1];
    if (n < 0) n = c->n[b];
    for (int k = 0; k < n; k++) bytes[k] = (char)c->tokens[b][k];
    strcpy(out, prefix);
    api_bpe_utf8_text(bytes, (size_t)n, out + strlen(prefix));
}

static const json_t *choice(const json_t *r, const char *part, const char *name, int i) {
    return json_array_get(json_object_get(json_object_get(json_object_get(r, part), name), "choices"),
                          (size_t)i);
}

static void check_text(const json_t *r, const char *name, int i, const char *want) {
    for (int s = 0; s < 2; s++) {
        const char *part = s ? "stream" : "whole";
        const char *got = json_string_value(json_object_get(choice(r, part, name, i), "text"));
        ck_assert_msg(got && strcmp(got, want) == 0, "%s %s choice %d: \"%s\", want \"%s\"", part, name,
                      i, got ? got : "(none)", want);
    }
}

/* Runs the client against a server of this build; its report, parsed. */
static json_t *run_client(void) {
    char prefix[1024];
    const char *const specs[] = {OPENAI, NULL};
    ck_assert_msg(npm_ensure("build/npm-openai", specs, prefix, sizeof prefix), "npm could not install " OPENAI);
    srvt_server s;
    tiny_server_start(&s);
    char script[1024], cmd[4096];
    tfile_path(script, sizeof script, "tests/clients/openai_client.mjs");
    snprintf(cmd, sizeof cmd, "OPENAI_DIR='%s/node_modules' timeout 120 node '%s' '%s'", prefix, script, s.base);
    int status = 0;
    char *out = procs_capture(cmd, &status);
    ck_assert_msg(status == 0 && out, "the client failed (status %d): %s", status, out ? out : "");
    json_error_t je;
    json_t *r = json_loads(out, JSON_ALLOW_NUL, &je);
    ck_assert_msg(r != NULL, "the client's report is not JSON (%s): %.500s", je.text, out);
    ck_assert_msg(json_object_get(r, "error") == NULL, "the client threw: %s",
                  json_string_value(json_object_get(r, "error")));
    printf("openai %s: %zu completions, streamed and whole\n",
           json_string_value(json_object_get(r, "version")), json_object_size(json_object_get(r, "whole")));
    free(out);
    srvt_must_stop(&s);
    return r;
}

START_TEST(official_client) {
    attn_lm_config cfg;
    int n = gg_load_hf(g_hf, 8, &cfg);
    ck_assert_int_eq(n, 6);
    json_t *r = run_client();
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "models"), 0)), "tiny");
    char want[512];
    const gg_case *g = hf("hf_greedy"), *sp = hf("hf_sampled_n2"), *tk = hf("hf_topk_seed");
    text_of(g, 0, -1, "", want);
    check_text(r, "greedy", 0, want);
    for (int b = 0; b < 2; b++) {
        text_of(sp, b, -1, "", want);
        check_text(r, "sampled", b, want);
    }
    text_of(tk, 0, -1, "", want);
    check_text(r, "top_k", 0, want);
    for (int b = 0; b < 2; b++) { /* extra fields the client passes through */
        text_of(hf("hf_penalties_n2"), b, -1, "", want);
        check_text(r, "penalties", b, want);
    }
    text_of(g, 0, 8, "Hello", want); /* echo, cut before "9l" */
    check_text(r, "stop", 0, want);
    text_of(g, 0, 4, "", want);
    check_text(r, "ids", 0, want);
    /* the log-probabilities, whole and streamed */
    for (int s = 0; s < 2; s++) {
        const json_t *c = choice(r, s ? "stream" : "whole", "greedy", 0);
        const json_t *tl = s ? json_object_get(c, "token_logprobs")
                             : json_object_get(json_object_get(c, "logprobs"), "token_logprobs");
        ck_assert_uint_eq(json_array_size(tl), (size_t)g->n[0]);
        for (int k = 0; k < g->n[0]; k++)
            ck_assert(fabs(json_number_value(json_array_get(tl, (size_t)k)) - g->logprobs[0][k]) <= LP_TOL);
    }
    static const char *const names[] = {"greedy", "sampled", "top_k", "stop", "ids"};
    for (size_t i = 0; i < 5; i++) {
        const json_t *w = json_object_get(json_object_get(r, "whole"), names[i]);
        const json_t *st = json_object_get(json_object_get(r, "stream"), names[i]);
        ck_assert_msg(json_equal(json_object_get(w, "usage"), json_object_get(st, "usage")), "%s usage", names[i]);
        for (size_t c = 0; c < json_array_size(json_object_get(w, "choices")); c++)
            ck_assert_str_eq(json_string_value(json_object_get(choice(r, "whole", names[i], (int)c), "finish_reason")),
                             json_string_value(json_object_get(choice(r, "stream", names[i], (int)c), "finish_reason")));
    }
    ck_assert_str_eq(json_string_value(json_object_get(choice(r, "whole", "stop", 0), "finish_reason")), "stop");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "missing"), "status")), 404);
    json_decref(r);
    for (int i = 0; i < n; i++) gg_free(&g_hf[i]);
}
END_TEST

static Suite *openai_client_suite(void) {
    const TTest *tests[] = {official_client, NULL};
    return suite_with("openai_client", "client", 600, tests, NULL, ttmp_remove);
}

const test_program TEST_PROGRAM = {.suites = {openai_client_suite}};
