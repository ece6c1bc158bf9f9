/* test_api_openai.c - POST /v1/completions, GET /v1/models, POST /tokenize
 * and /detokenize through api_handle, on the Hugging Face checkpoint
 * tiny_hf.safetensors with the byte-level tokenizer (256 byte symbols and
 * <|endoftext|>), against PyTorch's completions of it
 * (tests/golden/generation/tiny_hf.json):
 *
 *   - greedy, sampled (n = 2 rows from one seed; top_p; top_k as llama.cpp
 *     takes it), with min_p and the repetition, frequency and presence
 *     penalties (greedy and sampled): each choice's text and tokens, token_logprobs within 1e-4,
 *     top_logprobs, text_offset, finish_reason, usage;
 *   - echo with logprobs: the prompt's own log-probabilities (the first
 *     null), each token's one value in token_logprobs and top_logprobs;
 *   - stream: the chunks' texts add up to the whole reply's text, their
 *     logprobs to its logprobs, each choice ends with its finish_reason,
 *     then the usage (include_usage) and data: [DONE]; with a stop string
 *     the part that may become it is held back and never sent, and the
 *     text_offset of the tokens past the text's end go on from it;
 *   - a generation cut short by the server (api_limits.token says
 *     timeout) ends with finish_reason "timeout", whole and streamed;
 *   - OpenAI's errors (unknown argument, no such model as a 404, context
 *     exceeded, an empty prompt a 400), llama.cpp's /tokenize pieces (bytes for a piece of a
 *     character) and /detokenize.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static gg_case g_hf[8];
static int g_n;
static api_models *g_models;
static api_tokenizer g_tok;
static api_limits g_lim = {.max_elements = 100000000};

static void setup(void) {
    attn_lm_config cfg;
    g_n = gg_load_hf(g_hf, 8, &cfg);
    gg_load_tiny(&g_models, &g_tok);
    g_lim.models = g_models;
    g_lim.tokenizers = &g_tok;
    g_lim.n_tokenizers = 1;
}

static void teardown(void) {
    for (int i = 0; i < g_n; i++) gg_free(&g_hf[i]);
    gg_unload_tiny(&g_models, &g_tok);
}

static const gg_case *hf(const char *name) {
    for (int i = 0; i < g_n; i++)
        if (strcmp(g_hf[i].name, name) == 0) return &g_hf[i];
    ck_abort_msg("no golden %s", name);
    return NULL;
}

/* The text of written ids as the reply shows it (U+FFFD for a piece of a
 * character), into out. */
static void text_of(const int32_t *ids, int n, char *out) {
    char bytes[GG_MAX_TOKENS + 1];
    for (int k = 0; k < n; k++) bytes[k] = (char)ids[k];
    api_bpe_utf8_text(bytes, (size_t)n, out);
}

/* The request of golden c as /v1/completions (prompt as text; as ids when
 * its bytes are not ASCII: the byte-level tokenizer's id of a byte is the
 * byte). */
static char *completion_body(const gg_case *c, const char *extra) {
    char prompt[GG_MAX_TOKENS + 1] = {0};
    json_t *ids = json_array();
    int ascii = 1;
    for (int t = 0; t < c->T0; t++) {
        prompt[t] = (char)c->prompt[0][t];
        ascii &= c->prompt[0][t] < 0x80;
        json_array_append_new(ids, json_integer(c->prompt[0][t]));
    }
    json_t *text = ascii ? json_string(prompt) : json_incref(ids);
    json_decref(ids);
    const json_t *g = c->generate;
    json_t *r = json_pack("{s:s,s:o,s:O,s:O,s:i,s:i}", "model", "tiny", "prompt", text, "max_tokens",
                          json_object_get(g, "max_new_tokens"), "temperature",
                          json_object_get(g, "temperature"), "n", c->B, "logprobs", 5);
    static const char *const copy[] = {"top_p", "top_k", "seed", "min_p", "repetition_penalty",
                                       "frequency_penalty", "presence_penalty", NULL};
    for (int i = 0; copy[i]; i++)
        if (json_object_get(g, copy[i])) json_object_set(r, copy[i], json_object_get(g, copy[i]));
    return tapi_body(r, extra);
}

/* Choice b of a reply against row b of golden c. */
static void check_choice(const gg_case *c, const json_t *ch, int b) {
    char want[4 * GG_MAX_TOKENS];
    text_of(c->tokens[b], c->n[b], want);
    ck_assert_str_eq(json_string_value(json_object_get(ch, "text")), want);
    ck_assert_int_eq(json_integer_value(json_object_get(ch, "index")), b);
    ck_assert_str_eq(json_string_value(json_object_get(ch, "finish_reason")), "length");
    const json_t *lp = json_object_get(ch, "logprobs");
    const json_t *tl = json_object_get(lp, "token_logprobs"), *top = json_object_get(lp, "top_logprobs");
    ck_assert_uint_eq(json_array_size(tl), (size_t)c->n[b]);
    ck_assert_uint_eq(json_array_size(json_object_get(lp, "tokens")), (size_t)c->n[b]);
    for (int k = 0; k < c->n[b]; k++) {
        double got = json_number_value(json_array_get(tl, (size_t)k));
        ck_assert_msg(fabs(got - c->logprobs[b][k]) <= LP_TOL, "%s choice %d token %d: %g, PyTorch %g",
                      c->name, b, k, got, c->logprobs[b][k]);
        size_t m = json_object_size(json_array_get(top, (size_t)k));
        ck_assert(m >= 5 && m <= 6);
        int before = 0; /* one byte a token: the characters before it */
        for (int i = 0; i < k; i++) before += (c->tokens[b][i] & 0xC0) != 0x80;
        ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(lp, "text_offset"), (size_t)k)),
                         before);
    }
}

START_TEST(completions_as_pytorch) {
    setup();
    static const char *const names[] = {"hf_greedy", "hf_sampled_n2", "hf_topk_seed",
                                        "hf_penalties_greedy", "hf_penalties_n2", "hf_freq_prompt"};
    for (size_t i = 0; i < 6; i++) {
        const gg_case *c = hf(names[i]);
        char *body = completion_body(c, NULL);
        json_t *j = tapi_call(API_EP_V1_COMPLETIONS, body, &g_lim, 200);
        ck_assert_str_eq(json_string_value(json_object_get(j, "object")), "text_completion");
        ck_assert_str_eq(json_string_value(json_object_get(j, "model")), "tiny");
        ck_assert(strncmp(json_string_value(json_object_get(j, "id")), "cmpl-", 5) == 0);
        ck_assert_ptr_null(json_object_get(j, "module"));
        const json_t *choices = json_object_get(j, "choices");
        ck_assert_uint_eq(json_array_size(choices), (size_t)c->B);
        for (int b = 0; b < c->B; b++) check_choice(c, json_array_get(choices, (size_t)b), b);
        const json_t *u = json_object_get(j, "usage");
        ck_assert_int_eq(json_integer_value(json_object_get(u, "prompt_tokens")), c->T0);
        ck_assert_int_eq(json_integer_value(json_object_get(u, "completion_tokens")), c->B * c->n[0]);
        json_decref(j);
        free(body);
    }
    teardown();
}
END_TEST

/* Each token (the first, null, aside) has one log-probability in the reply:
 * its value in top_logprobs (where it always is: the chosen one is added)
 * is the one in token_logprobs. Returns how many were compared. */
static int one_value_per_token(const json_t *lp) {
    const json_t *tokens = json_object_get(lp, "tokens"), *top = json_object_get(lp, "top_logprobs"),
                 *tl = json_object_get(lp, "token_logprobs");
    int compared = 0;
    for (size_t t = 0; t < json_array_size(tokens); t++) {
        if (json_is_null(json_array_get(tl, t))) continue;
        const json_t *alt = json_object_get(json_array_get(top, t), json_string_value(json_array_get(tokens, t)));
        ck_assert_msg(alt != NULL, "token %zu is not among its top_logprobs", t);
        ck_assert_msg(json_real_value(alt) == json_real_value(json_array_get(tl, t)),
                      "token %zu: %.9g in token_logprobs, %.9g in top_logprobs", t,
                      json_real_value(json_array_get(tl, t)), json_real_value(alt));
        compared++;
    }
    return compared;
}

START_TEST(echo_logprobs) {
    setup();
    const gg_case *c = hf("hf_greedy");
    char *body = completion_body(c, "{\"echo\": true, \"max_tokens\": 3}");
    json_t *j = tapi_call(API_EP_V1_COMPLETIONS, body, &g_lim, 200);
    const json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
    const char *text = json_string_value(json_object_get(ch, "text"));
    ck_assert(strncmp(text, "Hello", 5) == 0);
    const json_t *lp = json_object_get(ch, "logprobs"), *tl = json_object_get(lp, "token_logprobs");
    ck_assert_uint_eq(json_array_size(tl), (size_t)c->T0 + 3);
    ck_assert(json_is_null(json_array_get(tl, 0)));
    ck_assert(json_is_null(json_array_get(json_object_get(lp, "top_logprobs"), 0)));
    for (int t = 1; t < c->T0; t++)
        ck_assert_msg(fabs(json_number_value(json_array_get(tl, (size_t)t)) - c->prompt_lp[0][t]) <= LP_TOL,
                      "prompt token %d", t);
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(lp, "text_offset"), (size_t)c->T0)), 5);
    ck_assert_int_eq(one_value_per_token(lp), c->T0 - 1 + 3);
    json_decref(j);
    free(body);
    teardown();
}
END_TEST

/* api_handle's whole body (a stream's events when no callback takes them). */
static char *raw(api_endpoint ep, const char *body, int *status, const char **type) {
    api_reply r;
    *status = api_handle(ep, body, strlen(body), &g_lim, &r);
    *type = r.content_type;
    char *t = strndup(r.body.data ? r.body.data : "", r.body.len);
    api_reply_free(&r);
    return t;
}

/* The chunks of a stream put together: per choice its text, its
 * token_logprobs, its finish_reason (from its last chunk), and the usage. */
typedef struct {
    char text[4][512];
    json_t *lps[4];
    char finish[4][16];
    json_t *usage;
} assembled;

static void assemble(const char *sse, assembled *a) {
    static sse_list ev;
    memset(a, 0, sizeof *a);
    sse_parse(sse, strlen(sse), &ev);
    ck_assert(ev.complete && ev.n >= 2);
    ck_assert_str_eq(ev.ev[ev.n - 1].data, "[DONE]");
    for (int i = 0; i < 4; i++) a->lps[i] = json_array();
    for (int e = 0; e < ev.n - 1; e++) {
        ck_assert_str_eq(ev.ev[e].event, "message"); /* data-only events, as OpenAI sends */
        json_t *j = json_loads(ev.ev[e].data, 0, NULL);
        ck_assert_ptr_nonnull(j);
        ck_assert_str_eq(json_string_value(json_object_get(j, "object")), "text_completion");
        if (json_object_get(j, "usage")) a->usage = json_incref(json_object_get(j, "usage"));
        const json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
        if (ch) {
            int i = (int)json_integer_value(json_object_get(ch, "index"));
            ck_assert(i >= 0 && i < 4);
            ck_assert_msg(a->finish[i][0] == 0, "a chunk after choice %d's last", i);
            strcat(a->text[i], json_string_value(json_object_get(ch, "text")));
            json_t *tl = json_object_get(json_object_get(ch, "logprobs"), "token_logprobs");
            if (tl) json_array_extend(a->lps[i], tl);
            const json_t *f = json_object_get(ch, "finish_reason");
            if (json_is_string(f)) snprintf(a->finish[i], sizeof a->finish[i], "%s", json_string_value(f));
        }
        json_decref(j);
    }
    sse_free(&ev);
}

static void assembled_free(assembled *a) {
    for (int i = 0; i < 4; i++) json_decref(a->lps[i]);
    json_decref(a->usage);
}

/* A stream says what the whole reply says. */
static void stream_equals_whole(const char *whole_body, const char *stream_body, int n) {
    json_t *w = tapi_call(API_EP_V1_COMPLETIONS, whole_body, &g_lim, 200);
    int st;
    const char *type;
    char *sse = raw(API_EP_V1_COMPLETIONS, stream_body, &st, &type);
    ck_assert_int_eq(st, 200);
    ck_assert_str_eq(type, "text/event-stream");
    assembled a;
    assemble(sse, &a);
    for (int i = 0; i < n; i++) {
        const json_t *ch = json_array_get(json_object_get(w, "choices"), (size_t)i);
        ck_assert_str_eq(a.text[i], json_string_value(json_object_get(ch, "text")));
        ck_assert_str_eq(a.finish[i], json_string_value(json_object_get(ch, "finish_reason")));
        const json_t *lp = json_object_get(json_object_get(ch, "logprobs"), "token_logprobs");
        if (lp) ck_assert(json_equal(a.lps[i], lp));
    }
    ck_assert(json_equal(a.usage, json_object_get(w, "usage")));
    assembled_free(&a);
    json_decref(w);
    free(sse);
}

START_TEST(stream_equals) {
    setup();
    const gg_case *c = hf("hf_sampled_n2");
    char *a = completion_body(c, "{\"stream\": false}");
    char *b = completion_body(c, "{\"stream\": true, \"stream_options\": {\"include_usage\": true}}");
    stream_equals_whole(a, b, 2);
    free(a), free(b);
    /* a stop string (the greedy text holds "9l" at bytes 8 and 9): the text is
     * cut before it, and no chunk sends its "9" while it may still become it */
    const gg_case *g = hf("hf_greedy");
    ck_assert_int_eq(g->tokens[0][8], '9');
    ck_assert_int_eq(g->tokens[0][9], 'l');
    a = completion_body(g, "{\"stop\": [\"zz\", \"9l\"], \"echo\": true, \"stream\": false}");
    b = completion_body(g, "{\"stop\": [\"zz\", \"9l\"], \"echo\": true, \"stream\": true, "
                        "\"stream_options\": {\"include_usage\": true}}");
    json_t *w = tapi_call(API_EP_V1_COMPLETIONS, a, &g_lim, 200);
    const json_t *ch = json_array_get(json_object_get(w, "choices"), 0);
    char want[64] = "Hello";
    text_of(g->tokens[0], 8, want + 5);
    ck_assert_str_eq(json_string_value(json_object_get(ch, "text")), want);
    ck_assert_str_eq(json_string_value(json_object_get(ch, "finish_reason")), "stop");
    ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(ch, "logprobs"), "tokens")), 5 + 10);
    /* the offsets go on past the text's end ("9" at 13, "l" at 14), as if it went on */
    const json_t *off = json_object_get(json_object_get(ch, "logprobs"), "text_offset");
    for (int k = 0; k < 10; k++)
        ck_assert_msg(json_integer_value(json_array_get(off, (size_t)(5 + k))) == 5 + k,
                      "token %d of the text at %lld, not %d", k,
                      json_integer_value(json_array_get(off, (size_t)(5 + k))), 5 + k);
    json_decref(w);
    stream_equals_whole(a, b, 1);
    free(a), free(b);
    teardown();
}
END_TEST

/* The same on the demo model (models/shakespeare/), whose prompt tokens got
 * two values each before (a double log_softmax in token_logprobs, the
 * sampler's float one in top_logprobs). */
START_TEST(one_logprob_per_token) {
    api_models *m = NULL;
    char path[600], spec[700], why[512];
    snprintf(spec, sizeof spec, "shakespeare=%s", tfile_path(path, sizeof path, "models/shakespeare"));
    ck_assert_msg(api_models_load(&m, spec, why, sizeof why) == 0, "%s", why);
    api_limits lim = {.max_elements = 100000000, .models = m};
    json_t *j = tapi_call(API_EP_V1_COMPLETIONS, "{\"model\": \"shakespeare\", \"prompt\": \"ROMEO:\\n"
                          "But soft, what light through yonder window breaks?\", \"max_tokens\": 8, "
                          "\"logprobs\": 3, \"echo\": true, \"seed\": 1}", &lim, 200);
    const json_t *lp = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "logprobs");
    ck_assert_int_eq(one_value_per_token(lp), 57 - 1 + 8); /* 57 bytes, a token each */
    json_decref(j);
    api_models_free(m);
}
END_TEST

/* api_limits.token: the server's word after each step; TIMEOUT after two. */
static int steps_seen;
static int out_of_time_after_two(void *ctx, int n, double ms) {
    (void)ctx, (void)n, (void)ms;
    return ++steps_seen >= 2 ? API_TOKEN_TIMEOUT : API_TOKEN_GO;
}

/* A text the server cut short says so: finish_reason "timeout", not
 * "length", in the whole reply and in the stream's last chunk. */
START_TEST(cut_short_says_timeout) {
    setup();
    api_limits lim = g_lim;
    lim.token = out_of_time_after_two;
    /* greedy: hf_greedy's text, which writes no <|endoftext|> in its first tokens */
    const char *bodies[2] = {"{\"model\": \"tiny\", \"prompt\": \"Hello\", \"max_tokens\": 8, \"temperature\": 0}",
                             "{\"model\": \"tiny\", \"prompt\": \"Hello\", \"max_tokens\": 8, \"temperature\": 0, "
                             "\"stream\": true}"};
    steps_seen = 0;
    json_t *j = tapi_call(API_EP_V1_COMPLETIONS, bodies[0], &lim, 200);
    const json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(ch, "finish_reason")), "timeout");
    ck_assert_int_lt(json_integer_value(json_object_get(json_object_get(j, "usage"), "completion_tokens")), 8);
    json_decref(j);
    steps_seen = 0;
    api_reply r;
    ck_assert_int_eq(api_handle(API_EP_V1_COMPLETIONS, bodies[1], strlen(bodies[1]), &lim, &r), 200);
    char *sse = strndup(r.body.data, r.body.len);
    api_reply_free(&r);
    assembled a;
    assemble(sse, &a);
    ck_assert_str_eq(a.finish[0], "timeout");
    assembled_free(&a);
    free(sse);
    teardown();
}
END_TEST

START_TEST(errors) {
    setup();
    static const struct { const char *body, *field; int status; } cases[] = {
        {"{\"model\": \"tiny\", \"prompt\": \"a\", \"frobnicate\": 1}", "frobnicate", 400},
        {"{\"model\": \"nope\", \"prompt\": \"a\"}", "model", 404},
        {"{\"prompt\": \"a\"}", "model", 400},
        {"{\"model\": \"tiny\"}", "prompt", 400},
        {"{\"model\": \"tiny\", \"prompt\": \"a\", \"max_tokens\": 64}", "max_tokens", 400},
        {"{\"model\": \"tiny\", \"prompt\": \"a\", \"presence_penalty\": 2.5}", "presence_penalty", 400},
        {"{\"model\": \"tiny\", \"prompt\": \"a\", \"presence_penalty\": \"high\"}", "presence_penalty", 400},
        {"{\"model\": \"tiny\", \"prompt\": \"a\", \"frequency_penalty\": -2.01}", "frequency_penalty", 400},
        {"{\"model\": \"tiny\", \"prompt\": \"a\", \"repetition_penalty\": 0}", "repetition_penalty", 400},
        {"{\"model\": \"tiny\", \"prompt\": \"a\", \"repetition_penalty\": -1.2}", "repetition_penalty", 400},
        {"{\"model\": \"tiny\", \"prompt\": \"a\", \"min_p\": 1.5}", "min_p", 400},
        {"{\"model\": \"tiny\", \"prompt\": \"a\", \"min_p\": -0.1}", "min_p", 400},
        {"{\"model\": \"tiny\", \"prompt\": \"a\", \"best_of\": 3}", "best_of", 400},
        {"{\"model\": \"tiny\", \"prompt\": \"a\", \"n\": 0}", "n", 400},
        {"{\"model\": \"tiny\", \"prompt\": [300]}", "prompt", 400},
        {"{\"model\": \"tiny\", \"prompt\": \"a\", \"top_p\": 0}", "top_p", 400},
        {"{\"model\": \"tiny\", \"prompt\": \"a\", \"stop\": [\"a\", \"b\", \"c\", \"d\", \"e\"]}", "stop[4]", 400},
        {"{\"model\": \"tiny\", \"prompt\": \"\"}", "prompt", 400},
        {"{\"model\": \"tiny\", \"prompt\": [\"\"]}", "prompt[0]", 400},
        {"{\"model\": \"tiny\", \"prompt\": [\"a\", \"\"]}", "prompt[1]", 400},
        {"{\"model\": \"tiny\", \"prompt\": [[]]}", "prompt[0]", 400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *j = tapi_call(API_EP_V1_COMPLETIONS, cases[i].body, &g_lim, cases[i].status);
        const char *f = json_string_value(json_object_get(json_object_get(j, "error"), "field"));
        ck_assert_msg(f && strcmp(f, cases[i].field) == 0, "%s: field %s", cases[i].body, f ? f : "null");
        ck_assert_ptr_nonnull(json_string_value(json_object_get(json_object_get(j, "error"), "message")));
        json_decref(j);
    }
    /* accepted at their neutral values (null: absent); top_k -1 and 0 are off */
    json_t *j = tapi_call(API_EP_V1_COMPLETIONS, "{\"model\": \"tiny\", \"prompt\": [1, 2], \"max_tokens\": 2, "
                          "\"presence_penalty\": 0, \"frequency_penalty\": 0, \"best_of\": 1, \"logit_bias\": {}, "
                          "\"user\": \"u\", \"suffix\": null, \"top_k\": -1, \"logprobs\": null, "
                          "\"repetition_penalty\": null, \"min_p\": 0}", &g_lim, 200);
    ck_assert(json_is_null(json_object_get(json_array_get(json_object_get(j, "choices"), 0), "logprobs")));
    json_decref(j);
    teardown();
}
END_TEST

START_TEST(tokenize_detokenize) {
    setup();
    json_t *j = tapi_call(API_EP_TOKENIZE, "{\"content\": \"h\\u00e9\"}", &g_lim, 200);
    ck_assert_uint_eq(json_array_size(json_object_get(j, "tokens")), 3); /* h, 0xC3, 0xA9 */
    ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(j, "tokens"), 1)), 0xC3);
    json_decref(j);
    j = tapi_call(API_EP_TOKENIZE, "{\"content\": \"h\\u00e9\", \"with_pieces\": true, \"add_special\": false}",
                  &g_lim, 200);
    const json_t *t = json_object_get(j, "tokens");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(t, 0), "piece")), "h");
    const json_t *piece = json_object_get(json_array_get(t, 1), "piece"); /* half of é: its bytes */
    ck_assert(json_is_array(piece) && json_array_size(piece) == 1);
    ck_assert_int_eq(json_integer_value(json_array_get(piece, 0)), 0xC3);
    json_decref(j);
    j = tapi_call(API_EP_DETOKENIZE, "{\"tokens\": [104, 195, 169]}", &g_lim, 200);
    ck_assert_str_eq(json_string_value(json_object_get(j, "content")), "h\xc3\xa9");
    json_decref(j);
    j = tapi_call(API_EP_DETOKENIZE, "{\"tokens\": [104, 195]}", &g_lim, 200);
    ck_assert_str_eq(json_string_value(json_object_get(j, "content")), "h\xef\xbf\xbd");
    json_decref(j);
    j = tapi_call(API_EP_DETOKENIZE, "{\"tokens\": [104, 999]}", &g_lim, 400);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "field")), "tokens[1]");
    json_decref(j);
    j = tapi_call(API_EP_TOKENIZE, "{\"content\": \"x\", \"model\": \"tiny\", \"bogus\": 1}", &g_lim, 400);
    json_decref(j);
    api_limits none = {.max_elements = 1000};
    j = tapi_call(API_EP_TOKENIZE, "{\"content\": \"x\"}", &none, 400);
    json_decref(j);
    /* GET /v1/models */
    api_buf b = {0};
    ck_assert_int_eq(api_openai_models_json(g_models, 1764000000, &b), 0);
    j = json_loads(b.data, 0, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(j, "object")), "list");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(j, "data"), 0), "id")), "tiny");
    json_decref(j);
    api_buf_free(&b);
    teardown();
}
END_TEST

static Suite *openai_suite(void) {
    openblas_set_num_threads(1);
    Suite *s = suite_create("openai");
    const TTest *tests[] = {completions_as_pytorch, echo_logprobs, one_logprob_per_token, stream_equals,
                            cut_short_says_timeout,
                            errors, tokenize_detokenize, NULL};
    tcase_with(s, "completions", 30, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {openai_suite}};
