/* test_api_gen_request.c - "generate" on POST /model/gpt2 through
 * api_handle, against PyTorch's goldens (tests/golden/generation/):
 *
 *   - the GPT2 loops of cases.json (the book's and nanoGPT's, greedy and
 *     sampled, cropped past block_size) as requests with init.seed: the
 *     same tokens, log-probabilities within 1e-4; idx is the final text's
 *     last block_size tokens (window_start says where they start);
 *   - the same requests with output_format "events" say the same: a start
 *     event with the prompt, one token event per step whose JSON equals the
 *     whole reply's step, a done event equal to the whole reply without its
 *     steps (timings aside);
 *   - the Hugging Face checkpoint tiny_hf.safetensors loaded as a model,
 *     with the byte-level tokenizer: text in, PyTorch's completions out
 *     (greedy, and sampled with top-k and seed), texts as UTF-8 with U+FFFD
 *     for pieces of characters, stop strings, eos;
 *   - outputs over the final text (logits and attention maps equal to a
 *     request without generate on that text), and the errors.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "api/bpe/bpe.h"
#include "support/api_call.h"
#include "support/bpe_files.h"
#include "support/check_main.h"
#include "support/files.h"
#include "support/gen_golden.h"
#include "support/sse.h"

#include <cblas.h>

#define LP_TOL 1e-4
#define MAX_CASES 16

static gg_case g_cases[MAX_CASES];
static int g_n;
static api_models *g_models;
static api_tokenizer g_tok;
static api_limits g_lim = {.max_elements = 100000000};
static api_limits g_plain = {.max_elements = 100000000}; /* no tokenizer: the seed-built models */

/* The goldens, the checkpoint and the tokenizer, in the test's process
 * (every test's checked fixture). */
static void setup(void) {
    g_n = gg_load_cases(g_cases, MAX_CASES);
    gg_load_tiny(&g_models, &g_tok);
    g_lim.models = g_models;
    g_plain.models = g_models;
    g_lim.tokenizers = &g_tok;
    g_lim.n_tokenizers = 1;
}

static void teardown(void) {
    for (int i = 0; i < g_n; i++) gg_free(&g_cases[i]);
    gg_unload_tiny(&g_models, &g_tok);
}

/* The steps of a reply against case c's row 0. */
static void check_steps(const gg_case *c, const json_t *gen) {
    const json_t *steps = json_object_get(gen, "steps");
    ck_assert_msg(json_array_size(steps) == (size_t)c->n[0], "%s: %zu steps, PyTorch %d", c->name,
                  json_array_size(steps), c->n[0]);
    for (int k = 0; k < c->n[0]; k++) {
        const json_t *s = json_array_get(steps, (size_t)k);
        ck_assert_int_eq(json_integer_value(json_object_get(s, "id")), c->tokens[0][k]);
        ck_assert_int_eq(json_integer_value(json_object_get(s, "index")), k);
        ck_assert_int_eq(json_integer_value(json_object_get(s, "position")), c->T0 + k);
        double lp = json_number_value(json_object_get(s, "logprob"));
        ck_assert_msg(fabs(lp - c->logprobs[0][k]) <= LP_TOL, "%s token %d: %g, PyTorch %g", c->name,
                      k, lp, c->logprobs[0][k]);
        const json_t *top = json_object_get(s, "top");
        ck_assert_uint_eq(json_array_size(top), GG_TOP);
        ck_assert(fabs(json_number_value(json_object_get(json_array_get(top, 0), "logprob")) -
                       c->top_lp[0][k][0]) <= LP_TOL);
    }
}

START_TEST(golden_requests) {
    const gg_case *c = &g_cases[_i];
    if (c->cfg.arch != ATTN_ARCH_GPT2 || c->B != 1) return; /* GPTModel requests: issue 21's fields */
    char *body = gg_request(c, NULL);
    json_t *j = tapi_call(API_EP_MODEL_GPT2, body, &g_plain, 200);
    const json_t *gen = json_object_get(j, "generation");
    check_steps(c, gen);
    int total = c->T0 + c->n[0], T = total < c->cfg.context ? total : c->cfg.context;
    const json_t *idx = json_object_get(j, "idx");
    ck_assert_uint_eq(json_array_size(idx), (size_t)T);
    ck_assert_int_eq(json_integer_value(json_object_get(gen, "window_start")), total - T);
    ck_assert_int_eq(json_integer_value(json_array_get(idx, (size_t)T - 1)), c->tokens[0][c->n[0] - 1]);
    ck_assert_str_eq(json_string_value(json_object_get(gen, "finish_reason")), "length");
    ck_assert_int_eq(json_integer_value(json_object_get(gen, "completion_tokens")), c->n[0]);
    json_decref(j);
    free(body);
}
END_TEST

/* api_handle's whole reply (no callbacks): status, text, content type. */
static char *raw_call(const char *body, const api_limits *lim, int *status, const char **type) {
    api_reply r;
    *status = api_handle(API_EP_MODEL_GPT2, body, strlen(body), lim, &r);
    *type = r.content_type;
    char *text = strndup(r.body.data ? r.body.data : "", r.body.len);
    api_reply_free(&r);
    return text;
}

static json_t *parse(const char *s) {
    json_error_t je;
    json_t *j = json_loads(s, 0, &je);
    ck_assert_msg(j != NULL, "not JSON (%s): %.200s", je.text, s);
    return j;
}

/* Streamed and whole replies say the same: every step, and the rest. */
static void same_content(const char *body_json, const char *body_events, const api_limits *lim) {
    int st;
    const char *type;
    json_t *whole = tapi_call(API_EP_MODEL_GPT2, body_json, lim, 200);
    char *text = raw_call(body_events, lim, &st, &type);
    ck_assert_int_eq(st, 200);
    ck_assert_str_eq(type, "text/event-stream");
    static sse_list ev;
    sse_parse(text, strlen(text), &ev);
    ck_assert(ev.complete);
    json_t *gen = json_object_get(whole, "generation"), *steps = json_incref(json_object_get(gen, "steps"));
    size_t n = json_array_size(steps);
    ck_assert_int_eq(ev.n, (int)n + 2);
    ck_assert_str_eq(ev.ev[0].event, "start");
    for (size_t k = 0; k < n; k++) {
        ck_assert_str_eq(ev.ev[k + 1].event, "token");
        json_t *t = parse(ev.ev[k + 1].data);
        ck_assert_msg(json_equal(t, json_array_get(steps, k)), "token event %zu differs", k);
        json_decref(t);
    }
    ck_assert_str_eq(ev.ev[n + 1].event, "done");
    json_t *done = parse(ev.ev[n + 1].data);
    json_object_del(gen, "steps");
    json_object_del(gen, "ms");
    json_object_del(json_object_get(done, "generation"), "ms");
    json_object_del(whole, "timing");
    json_object_del(done, "timing");
    ck_assert_msg(json_equal(done, whole), "the done event differs from the reply: %s", ev.ev[n + 1].data);
    json_decref(done);
    json_decref(steps);
    json_decref(whole);
    sse_free(&ev);
    free(text);
}

START_TEST(events_equal_whole) {
    const gg_case *c = &g_cases[1]; /* gpt2_book_topk: sampled */
    char *a = gg_request(c, "{\"return\": [\"idx\", \"next_token\", \"timing\"]}");
    char *b = gg_request(c, "{\"return\": [\"idx\", \"next_token\", \"timing\"], \"output_format\": \"events\"}");
    same_content(a, b, &g_plain);
    free(a), free(b);
    /* text through the tokenizer, with attention rows */
    a = strdup("{\"model\": \"tiny\", \"text\": \"Hello\", \"layers\": [1], \"heads\": [0],"
               " \"generate\": {\"max_new_tokens\": 6, \"temperature\": 1.0, \"seed\": 3,"
               " \"logprobs\": 2, \"attention\": true}}");
    b = strdup("{\"model\": \"tiny\", \"text\": \"Hello\", \"layers\": [1], \"heads\": [0],"
               " \"output_format\": \"events\", \"generate\": {\"max_new_tokens\": 6,"
               " \"temperature\": 1.0, \"seed\": 3, \"logprobs\": 2, \"attention\": true}}");
    same_content(a, b, &g_lim);
    free(a), free(b);
    /* Accept: text/event-stream (the server's prefer_format) streams too */
    api_limits lim = g_lim;
    lim.prefer_format = 1 + API_FORMAT_EVENTS;
    api_reply r;
    const char *q = "{\"model\": \"tiny\", \"idx\": [1, 2], \"generate\": {\"max_new_tokens\": 2}}";
    ck_assert_int_eq(api_handle(API_EP_MODEL_GPT2, q, strlen(q), &lim, &r), 200);
    ck_assert_str_eq(r.content_type, "text/event-stream");
    api_reply_free(&r);
    q = "{\"model\": \"tiny\", \"idx\": [1, 2]}"; /* no generate: JSON as before */
    ck_assert_int_eq(api_handle(API_EP_MODEL_GPT2, q, strlen(q), &lim, &r), 200);
    ck_assert_str_eq(r.content_type, "application/json");
    api_reply_free(&r);
}
END_TEST

/* The checkpoint's completions as PyTorch wrote them (generate_checkpoint.py's
 * forward, the book's sampling order), from text. */
START_TEST(checkpoint_completions) {
    gg_case hf[8];
    attn_lm_config cfg;
    int n = gg_load_hf(hf, 8, &cfg);
    for (int i = 0; i < n; i++) {
        const gg_case *c = &hf[i];
        if (c->B != 1) { /* n = 2: /v1/completions */
            gg_free(&hf[i]);
            continue;
        }
        json_t *gen = json_deep_copy(c->generate), *req = json_object();
        json_object_set_new(gen, "logprobs", json_integer(GG_TOP));
        char text[GG_MAX_TOKENS + 1] = {0};
        int ascii = 1;
        json_t *idx = json_array();
        for (int t = 0; t < c->T0; t++) {
            text[t] = (char)c->prompt[0][t];
            ascii &= c->prompt[0][t] < 0x80;
            json_array_append_new(idx, json_integer(c->prompt[0][t]));
        }
        json_object_set_new(req, "model", json_string("tiny"));
        if (ascii) json_object_set_new(req, "text", json_string(text)); /* else the ids, as bytes */
        json_object_set_new(req, ascii ? "unused" : "idx", idx);
        json_object_del(req, "unused");
        json_object_set_new(req, "generate", gen);
        char *body = json_dumps(req, JSON_COMPACT);
        json_t *j = tapi_call(API_EP_MODEL_GPT2, body, &g_lim, 200);
        check_steps(c, json_object_get(j, "generation"));
        /* the text: the written bytes, each piece of a character as U+FFFD */
        char bytes[GG_MAX_TOKENS + 1] = {0}, want[4 * GG_MAX_TOKENS] = {0};
        for (int k = 0; k < c->n[0]; k++) bytes[k] = (char)c->tokens[0][k];
        api_bpe_utf8_text(bytes, (size_t)c->n[0], want);
        if (ascii) { /* a request of ids has no text */
            ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "generation"), "text")), want);
            ck_assert_uint_eq(json_array_size(json_object_get(j, "tokens")),
                              json_array_size(json_object_get(j, "idx")));
        }
        json_decref(j);
        free(body);
        json_decref(req);
        gg_free(&hf[i]);
    }
}
END_TEST

static json_t *gen_call(const char *gen_json, int status) {
    char body[1024];
    snprintf(body, sizeof body, "{\"model\": \"tiny\", \"text\": \"Hello\", \"generate\": %s}", gen_json);
    return tapi_call(API_EP_MODEL_GPT2, body, &g_lim, status);
}

/* A stop string ends the text before it (the token that completed it is
 * written); the end-of-text id ends it unwritten (the book's eos_id). */
START_TEST(stop_and_eos) {
    gg_case hf[8];
    attn_lm_config cfg;
    int n_hf = gg_load_hf(hf, 8, &cfg);
    const gg_case *c = &hf[0]; /* hf_greedy */
    int p = -1;
    for (int k = 1; k < c->n[0] && p < 0; k++) {
        int32_t b = c->tokens[0][k];
        int first = 1;
        for (int i = 0; i < k; i++) first &= c->tokens[0][i] != b;
        if (b >= 0x20 && b < 0x7f && b != '"' && b != '\\' && first) p = k;
    }
    ck_assert_msg(p > 0, "no ASCII byte in the greedy completion to stop at");
    char g[256];
    snprintf(g, sizeof g, "{\"max_new_tokens\": 12, \"stop\": [\"zzz\", \"%c\"]}", (char)c->tokens[0][p]);
    json_t *j = gen_call(g, 200);
    const json_t *gen = json_object_get(j, "generation");
    ck_assert_str_eq(json_string_value(json_object_get(gen, "finish_reason")), "stop");
    ck_assert_uint_eq(json_array_size(json_object_get(gen, "steps")), (size_t)p + 1);
    char want[64] = {0}, bytes[64] = {0};
    for (int k = 0; k < p; k++) bytes[k] = (char)c->tokens[0][k];
    api_bpe_utf8_text(bytes, (size_t)p, want);
    ck_assert_str_eq(json_string_value(json_object_get(gen, "text")), want);
    json_decref(j);
    int q = 4;
    while (q > 0 && c->tokens[0][q - 1] == c->tokens[0][4]) q--; /* its first occurrence */
    for (int i = 0; i < q; i++) if (c->tokens[0][i] == c->tokens[0][4]) q = i;
    snprintf(g, sizeof g, "{\"max_new_tokens\": 12, \"eos_token_id\": %d}", c->tokens[0][4]);
    j = gen_call(g, 200);
    gen = json_object_get(j, "generation");
    ck_assert_str_eq(json_string_value(json_object_get(gen, "finish_reason")), "stop");
    ck_assert_uint_eq(json_array_size(json_object_get(gen, "steps")), (size_t)q);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(gen, "stop"), "token_id")),
                     c->tokens[0][4]);
    json_decref(j);
    for (int i = 0; i < n_hf; i++) gg_free(&hf[i]);
}
END_TEST

/* The outputs are a forward over the final text: the same as a request
 * without generate on the idx the reply gives. */
START_TEST(outputs_over_final_text) {
    json_t *a = tapi_call(API_EP_MODEL_GPT2,
                          "{\"model\": \"tiny\", \"idx\": [5, 6, 7], \"return\": [\"idx\", \"logits\", "
                          "\"attn_weights\"], \"generate\": {\"max_new_tokens\": 5}}", &g_lim, 200);
    json_t *req = json_pack("{s:s,s:O,s:[s,s,s]}", "model", "tiny", "idx", json_object_get(a, "idx"),
                            "return", "idx", "logits", "attn_weights");
    char *body = json_dumps(req, JSON_COMPACT);
    json_t *b = tapi_call(API_EP_MODEL_GPT2, body, &g_lim, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(a, "idx")), 8);
    ck_assert(json_equal(json_object_get(a, "logits"), json_object_get(b, "logits")));
    ck_assert(json_equal(json_object_get(a, "attn_weights"), json_object_get(b, "attn_weights")));
    ck_assert(json_equal(json_object_get(a, "shape"), json_object_get(b, "shape")));
    json_decref(a), json_decref(b), json_decref(req);
    free(body);
}
END_TEST

START_TEST(errors) {
    static const struct { const char *body, *field; int status; } cases[] = {
        {"{\"model\": \"tiny\", \"idx\": [[1, 2], [3, 4]], \"generate\": {}}", "idx", 400},
        {"{\"model\": \"tiny\", \"idx\": [1], \"training\": true, \"generate\": {}}", "training", 400},
        {"{\"model\": \"tiny\", \"idx\": [1], \"output_format\": \"events\"}", "output_format", 400},
        {"{\"model\": \"tiny\", \"idx\": [1], \"generate\": {\"max_new_tokens\": 101}}",
         "generate.max_new_tokens", 413},
        {"{\"model\": \"tiny\", \"idx\": [1], \"generate\": {\"context_size\": 65}}",
         "generate.context_size", 400},
        {"{\"model\": \"tiny\", \"idx\": [1], \"generate\": {\"eos_token_id\": 257}}",
         "generate.eos_token_id", 400},
        {"{\"model\": \"tiny\", \"idx\": [1], \"generate\": 3}", "generate", 400},
        /* the look inside runs on a text as given (the captures are sized for it) */
        {"{\"model\": \"tiny\", \"idx\": [1], \"generate\": {}, \"logit_lens\": {\"k\": 2}}", "generate", 400},
        {"{\"model\": \"tiny\", \"idx\": [1], \"generate\": {}, \"return\": [\"blocks.0.attn.hook_z\"]}",
         "generate", 400},
    };
    g_lim.max_new_tokens = 100;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        tapi_expect_field(API_EP_MODEL_GPT2, cases[i].body, &g_lim, cases[i].status, cases[i].field);
    /* stop strings without a tokenizer */
    api_limits lim = g_lim;
    lim.n_tokenizers = 0;
    tapi_expect_field(API_EP_MODEL_GPT2, "{\"model\": \"tiny\", \"idx\": [1], \"generate\": {\"stop\": \"x\"}}",
                      &lim, 400, "generate.stop");
}
END_TEST

/* The memory budget's reservation holds the key/value cache (and the
 * records): a longer generation reserves more by the cache's growth. */
START_TEST(reserves_the_cache) {
    size_t r[2];
    for (int i = 0; i < 2; i++) {
        char body[256];
        snprintf(body, sizeof body, "{\"vocab_size\": 50, \"block_size\": 1024, \"n_layer\": 4, "
                 "\"n_head\": 4, \"n_embd\": 64, \"init\": {\"seed\": 1}, \"idx\": [1, 2], "
                 "\"generate\": {\"max_new_tokens\": %d}}", i ? 1000 : 10);
        r[i] = tapi_reserved(API_EP_MODEL_GPT2, body, &g_lim);
    }
    attn_lm_config cfg = {.vocab_size = 50, .context = 1024, .n_layer = 4, .n_head = 4, .width = 64};
    size_t c10, c1000;
    attn_error ae;
    ck_assert_int_eq(attn_lm_cache_bytes(&cfg, 1, 11, &c10, &ae), ATTN_OK);
    ck_assert_int_eq(attn_lm_cache_bytes(&cfg, 1, 1001, &c1000, &ae), ATTN_OK);
    ck_assert_msg(r[1] - r[0] >= c1000 - c10, "reserved %zu more for 990 more tokens; the cache grows %zu",
                  r[1] - r[0], c1000 - c10);
}
END_TEST

static Suite *request_suite(void) {
    openblas_set_num_threads(1);
    Suite *s = suite_create("generate_request");
    tcase_add_checked_fixture(gg_golden_tcase(s, golden_requests), setup, teardown);
    const TTest *rest[] = {events_equal_whole, checkpoint_completions, stop_and_eos,
                           outputs_over_final_text, errors, reserves_the_cache, NULL};
    tcase_add_checked_fixture(tcase_with(s, "requests", 30, rest), setup, teardown);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {request_suite}};
