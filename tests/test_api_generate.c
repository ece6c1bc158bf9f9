/* test_api_generate.c - the generation loop (api/generate/) against
 * PyTorch: the book's chapter-4 generate_text_simple and chapter-5
 * generate, nanoGPT's generate, and the book's loop with Hugging Face's
 * top-p, run by PyTorch 1.13 on models built from a seed in both families
 * (tests/golden/generation/cases.json, tests/golden/generate_generation.py).
 *
 * What must hold for every case: the same tokens, token for token (greedy
 * and sampled: torch.multinomial's exponential draws from the same
 * torch.manual_seed, or the generator the constructor left, as nanoGPT's
 * sample.py), the same stop (the book's eos_id), the context crop of
 * idx[:, -context_size:]; each token's log-probability (log_softmax of the
 * raw logits) within 1e-4 of PyTorch's, and the top five alternatives' ids
 * and log-probabilities (ids compared where PyTorch's log-probabilities are
 * more than 1e-4 apart). Also the book's 124M model (chapter 5's
 * GPT_CONFIG_124M, context 256) writing chapter 5's 15 tokens after "Every
 * effort moves you" with top_k 25, temperature 1.4 and seed 123; and the
 * texts and stop strings of text.c.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/generate/generate.h"
#include "support/check_main.h"
#include "support/gen_golden.h"

#include <cblas.h>

#define LP_TOL 1e-4
#define MAX_CASES 16

static gg_case g_cases[MAX_CASES];
static int g_n;

/* The goldens, read in the test's own process (fork mode). */
static void load(void) {
    if (g_n == 0) g_n = gg_load_cases(g_cases, MAX_CASES);
}

/* The case's loop arguments as api_gen_opts (the JSON's own names are the
 * "generate" object's: the parser reads them). */
static void opts_of(const gg_case *c, api_gen_opts *o) {
    api_err e = {0};
    json_t *g = json_deep_copy(c->generate);
    json_object_set_new(g, "logprobs", json_integer(GG_TOP));
    ck_assert_msg(api__gen_parse(g, 0, 0, o, &e) == 0, "%s: %s", c->name, e.message);
    json_decref(g);
}

/* Runs case c through api__gen_run (attention rows of every layer and head
 * when rows). */
static void run_case(const gg_case *c, int rows, api_gen_out *out, api_arrays *a) {
    attn_rng rng;
    float *params = gg_params(c, &rng);
    api_gen_opts o;
    opts_of(c, &o);
    o.attention = rows;
    if (o.has_seed) attn_rng_seed(&rng, o.seed);
    api_gen_plan plan;
    api_err e = {0};
    int layers[16];
    for (int l = 0; l < c->cfg.n_layer; l++) layers[l] = l;
    ck_assert_int_eq(api__gen_plan(&c->cfg, c->B, c->T0, &o, c->cfg.n_layer, c->cfg.n_head, &plan, &e), 0);
    int32_t prompt[GG_MAX_ROWS * GG_MAX_TOKENS];
    for (int b = 0; b < c->B; b++) memcpy(prompt + b * c->T0, c->prompt[b], (size_t)c->T0 * 4);
    attn_pool *pool = attn_pool_create(2);
    api_gen_in in = {.plan = &plan, .opt = &o, .cfg = &c->cfg, .params = params, .pool = pool,
                     .prompt = prompt, .rng = &rng, .layers = layers};
    ck_assert_msg(api__gen_run(&in, out, a, &e) == 0, "%s: %s", c->name, e.message);
    attn_pool_destroy(pool);
    api__gen_opts_free(&o);
    free(params);
}

static void compare(const gg_case *c, const api_gen_out *out) {
    double worst = 0;
    for (int b = 0; b < c->B; b++) {
        ck_assert_msg(out->n[b] == c->n[b], "%s row %d: %d tokens, PyTorch %d", c->name, b, out->n[b], c->n[b]);
        ck_assert_int_eq(out->finish[b], c->stopped ? API_GEN_STOP : API_GEN_LENGTH);
        for (int k = 0; k < c->n[b]; k++) {
            size_t at = (size_t)b * out->N + (size_t)k;
            ck_assert_msg(out->ids[at] == c->tokens[b][k], "%s row %d token %d: %d, PyTorch %d",
                          c->name, b, k, out->ids[at], c->tokens[b][k]);
            double d = fabs(out->logprobs[at] - c->logprobs[b][k]);
            worst = fmax(worst, d);
            ck_assert_msg(d <= LP_TOL, "%s token %d: log-probability %.7g, PyTorch %.7g", c->name, k,
                          out->logprobs[at], c->logprobs[b][k]);
            for (int i = 0; i < GG_TOP; i++) {
                const attn_token_logprob *t = &out->top[at * GG_TOP + i];
                ck_assert(fabs(t->logprob - c->top_lp[b][k][i]) <= LP_TOL);
                int tied = (i > 0 && c->top_lp[b][k][i - 1] - c->top_lp[b][k][i] <= LP_TOL) ||
                           (i + 1 < GG_TOP && c->top_lp[b][k][i] - c->top_lp[b][k][i + 1] <= LP_TOL);
                ck_assert_msg(tied || t->id == c->top_id[b][k][i], "%s token %d top %d", c->name, k, i);
            }
        }
    }
    printf("%-24s %d x %d tokens as PyTorch's, log-probabilities within %.2g\n", c->name, c->B,
           c->n[0], worst);
}

START_TEST(golden_loops) {
    load();
    const gg_case *c = &g_cases[_i];
    if (c->cfg.vocab_size > 1000) return; /* the 124M case has its own test */
    api_arrays a = {0};
    api_gen_out out;
    run_case(c, _i % 2, &out, &a);
    compare(c, &out);
    api__gen_out_free(&out);
    api__arrays_free(&a);
}
END_TEST

/* Chapter 5 on the 124M model: about 5 s (the construction is 163M draws). */
START_TEST(book_124m) {
    load();
    for (int i = 0; i < g_n; i++) {
        if (strcmp(g_cases[i].name, "book_124m_ch05") != 0) continue;
        api_arrays a = {0};
        api_gen_out out;
        run_case(&g_cases[i], 0, &out, &a);
        compare(&g_cases[i], &out);
        api__gen_out_free(&out);
        api__arrays_free(&a);
        return;
    }
    ck_abort_msg("cases.json has no book_124m_ch05");
}
END_TEST

/* Each token's attention rows are the last row of a whole forward's maps
 * over the window that chose it (within 1e-5), before and after the crop. */
START_TEST(attention_rows) {
    load();
    const gg_case *c = &g_cases[0]; /* gpt2_simple_crop: 5 + 30 tokens, window 24 */
    api_arrays a = {0};
    api_gen_out out;
    run_case(c, 1, &out, &a);
    attn_rng rng;
    float *params = gg_params(c, &rng);
    int L = c->cfg.n_layer, H = c->cfg.n_head, ctx = c->cfg.context;
    float *maps = malloc((size_t)L * H * ctx * ctx * 4);
    double worst = 0;
    for (int k = 0; k < out.n[0]; k++) {
        int n = c->T0 + k, start = n > ctx ? n - ctx : 0, T = n - start;
        attn_lm_plan plan;
        attn_error err = {0};
        ck_assert_int_eq(attn_lm_plan_make(&c->cfg, 1, T, 0, &plan, &err), ATTN_OK);
        attn_lm_outputs o = {.attn_weights = maps};
        ck_assert_int_eq(attn_lm_forward(&plan, params, out.text + start, NULL, NULL, &o, &err), ATTN_OK);
        ck_assert_int_eq(out.rows_t[k], T);
        const float *got = out.rows + (size_t)k * out.rows_len;
        for (int lh = 0; lh < L * H; lh++)
            for (int j = 0; j < T; j++)
                worst = fmax(worst, fabs(got[lh * T + j] - maps[((size_t)lh * T + (T - 1)) * T + j]));
    }
    ck_assert_msg(worst <= 1e-5, "attention rows off by %g", worst);
    free(maps);
    free(params);
    api__gen_out_free(&out);
    api__arrays_free(&a);
}
END_TEST

/* ==== Texts =============================================================== */

static api_gen_opts stops(const char *a, const char *b) {
    api_gen_opts o;
    api__gen_opts_init(&o);
    api_err e;
    if (a) ck_assert_int_eq(api__gen_add_stop(&o, a, strlen(a), "stop", &e), 0);
    if (b) ck_assert_int_eq(api__gen_add_stop(&o, b, strlen(b), "stop", &e), 0);
    return o;
}

START_TEST(utf8_and_stops) {
    api_buf t = {0};
    api__gen_utf8(&t, "a\xe2\x82", 3); /* a piece of the euro sign */
    ck_assert_str_eq(t.data, "a\xef\xbf\xbd");
    api_buf_free(&t);
    ck_assert(api__gen_utf8_valid("\xe2\x82\xac", 3));
    ck_assert(!api__gen_utf8_valid("\xe2\x82", 2));
    api_gen_opts o = stops("\n\n", "END");
    /* the part that may become a stop string is held back, and half a character */
    ck_assert_uint_eq(api__gen_safe_end("hello\n", 6, &o), 5);
    ck_assert_uint_eq(api__gen_safe_end("hello EN", 8, &o), 6);
    ck_assert_uint_eq(api__gen_safe_end("hello E!", 8, &o), 8);
    ck_assert_uint_eq(api__gen_safe_end("ab\xe2\x82", 4, &o), 2);
    ck_assert_uint_eq(api__gen_safe_end("ab\xe2\x82\xac", 5, &o), 5);
    int which = -1;
    ck_assert_int_eq(api__gen_find_stop("one\n\ntwo", 8, 4, &o, &which), 3);
    ck_assert_int_eq(which, 0);
    ck_assert_int_eq(api__gen_find_stop("xxENDyEND", 9, 8, &o, &which), 6); /* from the newest bytes */
    ck_assert_int_eq(api__gen_find_stop("abc", 3, 0, &o, &which), -1);
    api__gen_opts_free(&o);
}
END_TEST

/* The options' errors name generate.<field>. */
START_TEST(option_errors) {
    static const struct { const char *json, *field; int max_new; } cases[] = {
        {"{\"temperature\": -1}", "generate.temperature", 0},
        {"{\"top_p\": 0}", "generate.top_p", 0},
        {"{\"top_k\": \"x\"}", "generate.top_k", 0},
        {"{\"max_new_tokens\": 5000}", "generate.max_new_tokens", 1024},
        {"{\"stop\": [1]}", "generate.stop[0]", 0},
        {"{\"stop\": \"\"}", "generate.stop", 0},
        {"{\"logprobs\": 21}", "generate.logprobs", 0},
        {"{\"bogus\": 1}", "generate.bogus", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *g = json_loads(cases[i].json, 0, NULL);
        api_gen_opts o;
        api_err e = {0};
        ck_assert_int_eq(api__gen_parse(g, cases[i].max_new, 1, &o, &e), -1);
        ck_assert_msg(strcmp(e.field, cases[i].field) == 0, "%s: field %s", cases[i].json, e.field);
        api__gen_opts_free(&o);
        json_decref(g);
    }
}
END_TEST

static Suite *loop_suite(void) {
    openblas_set_num_threads(1);
    Suite *s = suite_create("generate");
    tcase_add_test(gg_golden_tcase(s, golden_loops), attention_rows);
    const TTest *big[] = {book_124m, NULL};
    tcase_with(s, "book_124m", 120, big);
    const TTest *text[] = {utf8_and_stops, option_errors, NULL};
    tcase_with(s, "text", 0, text);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {loop_suite}};
