/* test_viewer_generate.c - the viewer's generation view in a real browser
 * (Debian's Chromium, headless, driven by playwright-core through
 * tests/viewer/generate.mjs) against a server with the checkpoint
 * tiny_hf.safetensors and the byte-level tokenizer:
 *
 *   - the view opens at /#generate with the loaded model chosen, its sliders
 *     (temperature, top-k, top-p, seed, length) showing their values;
 *   - a sampled run writes the tokens the server's own whole reply writes
 *     for the same request (same ids, log-probabilities), each as a chip
 *     after the prompt's;
 *   - a click on a written token shows its alternatives with their
 *     probabilities (exp of the reply's log-probabilities, the written one
 *     marked) and what it attended to: one row per layer and head, one
 *     column per position, every pixel viridis at the reply's weight;
 *   - tokens arrive one by one (100 tokens of a seed-built model arrive over
 *     time, not at once), and Stop ends a generation early;
 *   - an error (token ids that are no numbers) dims the tokens left from the
 *     run before, and the next run undims them (issue 33);
 *   - three streams side by side (seeds 5, 6, 7): each pane writes the
 *     tokens of the server's whole reply for its seed alone, with its time
 *     to first token and tokens per second, and a line gives all of them
 *     together; greedy streams are said to write the same tokens; stopping
 *     one of three leaves the other two writing to the end;
 *   - no console error and no request to another host.
 * The screenshots stay in build/viewer/generate.png and generate_streams.png.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/maps/maps.h"
#include "support/check_main.h"
#include "support/server_harness.h"
#include "support/tiny_server.h"
#include "support/tmpdir.h"
#include "support/viewer_page.h"

static const json_t *at(const json_t *j, const char *key) {
    const json_t *v = json_object_get(j, key);
    ck_assert_msg(v != NULL, "report has no %s", key);
    return v;
}

/* viridis at the level the server's pictures use. */
static void viridis_of(float v, int rgb[3]) {
    int l = api__image_level(v, 1.0f, 1.0f, API_COLOR_UNIT);
    for (int c = 0; c < 3; c++) rgb[c] = api__viridis[l][c];
}

/* The sampled run against the server's whole reply to the page's request. */
static void check_sampled(const srvt_server *s, const json_t *run, const json_t *step3) {
    char *body = json_dumps(at(run, "request"), JSON_COMPACT);
    srvt_reply rep;
    srvt_post(s, "/model/gpt2", body, &rep);
    ck_assert_int_eq(rep.status, 200);
    json_t *whole = json_loads(rep.body, JSON_ALLOW_NUL, NULL);
    const json_t *steps = json_object_get(json_object_get(whole, "generation"), "steps");
    const json_t *seen = at(run, "steps");
    ck_assert_uint_eq(json_array_size(seen), 10);
    ck_assert_uint_eq(json_array_size(steps), 10);
    ck_assert_uint_eq(json_array_size(at(run, "gen_chips")), 10);
    ck_assert_uint_eq(json_array_size(at(run, "prompt_chips")), 5); /* H e l l o */
    for (size_t k = 0; k < 10; k++) {
        const json_t *a = json_array_get(seen, k), *b = json_array_get(steps, k);
        ck_assert_int_eq(json_integer_value(json_object_get(a, "id")), json_integer_value(json_object_get(b, "id")));
        ck_assert(json_number_value(json_object_get(a, "logprob")) == json_number_value(json_object_get(b, "logprob")));
    }
    /* step 3's alternatives: percentages of exp(logprob), the written one marked */
    const json_t *s3 = json_array_get(steps, 3), *top = json_object_get(s3, "top");
    const json_t *rows = at(step3, "alternatives");
    ck_assert_uint_eq(json_array_size(rows), json_array_size(top));
    for (size_t i = 0; i < json_array_size(top); i++) {
        double p = exp(json_number_value(json_object_get(json_array_get(top, i), "logprob"))) * 100;
        char want[32];
        snprintf(want, sizeof want, "%.1f%%", p);
        ck_assert_str_eq(json_string_value(json_array_get(json_array_get(rows, i), 0)), want);
        if (json_integer_value(json_object_get(json_array_get(top, i), "id")) == json_integer_value(json_object_get(s3, "id")))
            ck_assert_int_eq(json_integer_value(at(step3, "chosen_row")), (json_int_t)i);
    }
    /* its attention: [2 layers x 2 heads] rows x t columns of viridis */
    const json_t *A = json_object_get(s3, "attention"), *img = at(step3, "attn");
    int L = (int)json_array_size(A), H = (int)json_array_size(json_array_get(A, 0));
    int t = (int)json_array_size(json_array_get(json_array_get(A, 0), 0));
    ck_assert_int_eq(L * H, 4);
    ck_assert_int_eq(t, 5 + 3); /* position 8 chose it: positions 0 to 7 */
    ck_assert_int_eq(json_integer_value(at(img, "w")), t);
    ck_assert_int_eq(json_integer_value(at(img, "h")), L * H);
    for (int r = 0; r < L * H; r++)
        for (int j = 0; j < t; j++) {
            float v = (float)json_number_value(json_array_get(json_array_get(json_array_get(A, r / H), r % H), j));
            int want[3];
            viridis_of(v, want);
            const json_t *px = json_array_get(at(img, "px"), (size_t)(r * t + j));
            for (int c = 0; c < 3; c++)
                ck_assert_msg(json_integer_value(json_array_get(px, c)) == want[c], "pixel %d,%d", r, j);
        }
    json_decref(whole);
    srvt_reply_free(&rep);
    free(body);
}

/* Three streams side by side, seeds 5, 6, 7: each pane writes what the
 * server writes for its seed alone (a whole reply to a request built here,
 * not read from the page), and a line gives all of them together. */
static void check_streams(const srvt_server *s, const json_t *m) {
    ck_assert_msg(!json_is_true(at(m, "error")), "%s", json_string_value(at(m, "status")));
    ck_assert(json_is_true(at(m, "single_hidden")));
    const json_t *panes = at(m, "panes");
    ck_assert_uint_eq(json_array_size(panes), 3);
    const char *texts[3];
    for (size_t i = 0; i < 3; i++) {
        const json_t *p = json_array_get(panes, i);
        ck_assert_int_eq(json_integer_value(at(p, "seed")), 5 + (json_int_t)i);
        char body[300], title[40];
        snprintf(body, sizeof body, "{\"model\": \"tiny\", \"text\": \"Hello\", \"generate\": {\"max_new_tokens\": 10, "
                 "\"temperature\": 0.8, \"top_k\": 0, \"top_p\": 0.95, \"seed\": %d}}", 5 + (int)i);
        snprintf(title, sizeof title, "stream %d, seed %d", (int)i + 1, 5 + (int)i);
        ck_assert_msg(strstr(json_string_value(at(p, "title")), title) != NULL, "%s", json_string_value(at(p, "title")));
        srvt_reply rep;
        srvt_post(s, "/model/gpt2", body, &rep);
        ck_assert_int_eq(rep.status, 200);
        json_t *whole = json_loads(rep.body, JSON_ALLOW_NUL, NULL);
        const json_t *steps = json_object_get(json_object_get(whole, "generation"), "steps");
        const json_t *ids = at(p, "ids"), *chips = at(p, "gen_chips");
        ck_assert_uint_eq(json_array_size(steps), 10);
        ck_assert_uint_eq(json_array_size(ids), 10);
        ck_assert_uint_eq(json_array_size(chips), 10);
        ck_assert_uint_eq(json_array_size(at(p, "prompt_chips")), 5);
        char want[200] = "";
        for (size_t k = 0; k < 10; k++) {
            const json_t *b = json_array_get(steps, k);
            ck_assert_msg(json_integer_value(json_array_get(ids, k)) == json_integer_value(json_object_get(b, "id")),
                          "stream %zu step %zu", i, k);
            strncat(want, json_string_value(json_object_get(b, "text")), sizeof want - strlen(want) - 1);
        }
        ck_assert_str_eq(json_string_value(at(p, "text")), want);
        ck_assert_msg(strstr(json_string_value(at(p, "rate")), "tokens/s") && strstr(json_string_value(at(p, "rate")), "first token after"),
                      "%s", json_string_value(at(p, "rate")));
        texts[i] = json_string_value(at(p, "text"));
        json_decref(whole);
        srvt_reply_free(&rep);
    }
    ck_assert_msg(strcmp(texts[0], texts[1]) != 0 || strcmp(texts[1], texts[2]) != 0, "three seeds wrote one text");
    const char *agg = json_string_value(at(m, "aggregate"));
    ck_assert_msg(agg && strstr(agg, "all 3 streams: 30 tokens") && strstr(agg, "tokens/s together"), "aggregate: %s",
                  agg ? agg : "(none)");
}

START_TEST(generation_view) {
    char modules[600];
    vpage_prepare(modules, sizeof modules);
    srvt_server s;
    tiny_server_start(&s);
    json_t *r = vpage_run(modules, "generate.mjs", s.base);
    ck_assert(json_is_true(at(r, "visible")));
    ck_assert_str_eq(json_string_value(json_array_get(at(r, "models"), 1)), "tiny");
    const json_t *sliders = at(r, "slider_texts");
    ck_assert_str_eq(json_string_value(json_array_get(sliders, 0)), "0.8");
    ck_assert_str_eq(json_string_value(json_array_get(sliders, 1)), "off"); /* top-k 0 */
    ck_assert_str_eq(json_string_value(json_array_get(sliders, 3)), "5");
    check_sampled(&s, at(r, "sampled"), at(r, "step3"));
    ck_assert_msg(strstr(json_string_value(at(r, "tooltip")), "layer 0, head 0") != NULL, "tooltip: %s",
                  json_string_value(at(r, "tooltip")));
    /* 100 tokens arrive over time: the last long after the first */
    const json_t *lg = at(r, "long"), *arr = at(lg, "arrivals");
    ck_assert_int_eq(json_integer_value(at(lg, "steps")), 100);
    double first = json_number_value(json_array_get(arr, 0)), last = json_number_value(json_array_get(arr, 99));
    printf("generation view: 100 tokens from %.0f ms to %.0f ms after the click\n", first, last);
    ck_assert_msg(last - first > 20, "the tokens came at once (%.1f ms apart)", last - first);
    /* step 40's attention: a label per head's row, each row at least as tall as its label */
    const json_t *la = at(lg, "attn");
    ck_assert_int_eq(json_integer_value(at(la, "rows")), 16);
    ck_assert_int_ge(json_integer_value(at(la, "row_font")), 8);
    ck_assert_msg(json_integer_value(at(la, "row_height")) >= json_integer_value(at(la, "row_font")) + 2,
                  "row labels of %lld px on rows of %lld px over %lld positions",
                  json_integer_value(at(la, "row_font")), json_integer_value(at(la, "row_height")),
                  json_integer_value(at(la, "cols")));
    const json_t *stop = at(r, "stopped");
    ck_assert_int_lt(json_integer_value(at(stop, "steps")), 200);
    ck_assert_ptr_nonnull(strstr(json_string_value(at(stop, "status")), "stopped"));
    /* an error keeps the tokens before but dims them; the next run undims */
    const json_t *bad = at(r, "bad_ids"), *after = at(r, "after_bad");
    ck_assert_msg(json_is_true(at(bad, "error")), "token ids 15496 x: %s", json_string_value(at(bad, "status")));
    ck_assert_int_eq(json_integer_value(at(bad, "chips")), json_integer_value(at(stop, "steps")));
    ck_assert_str_eq(json_string_value(at(bad, "opacity")), "0.35");
    ck_assert_msg(!json_is_true(at(after, "error")), "%s", json_string_value(at(after, "status")));
    ck_assert_int_eq(json_integer_value(at(after, "chips")), 3);
    ck_assert_str_eq(json_string_value(at(after, "opacity")), "1");
    ck_assert_msg(strstr(json_string_value(at(r, "greedy_note")), "every stream writes the same tokens") != NULL,
                  "%s", json_string_value(at(r, "greedy_note")));
    check_streams(&s, at(r, "streams"));
    /* the second of three streams stopped early: the other two write their 200 */
    const json_t *one = at(r, "stop_one");
    ck_assert_int_eq(json_integer_value(at(json_array_get(one, 0), "steps")), 200);
    ck_assert_int_lt(json_integer_value(at(json_array_get(one, 1), "steps")), 200);
    ck_assert_ptr_nonnull(strstr(json_string_value(at(json_array_get(one, 1), "status")), "stopped"));
    ck_assert_int_eq(json_integer_value(at(json_array_get(one, 2), "steps")), 200);
    json_decref(r);
    srvt_must_stop(&s);
}
END_TEST

static Suite *viewer_generate_suite(void) {
    const TTest *tests[] = {generation_view, NULL};
    return suite_with("viewer_generate", "chromium", 600, tests, NULL, ttmp_remove);
}

const test_program TEST_PROGRAM = {.suites = {viewer_generate_suite}};
