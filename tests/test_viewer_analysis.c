/* test_viewer_analysis.c - the viewer's "What each head does" view
 * (server/static/analysis.js, /#heads) in a real browser (Debian's
 * Chromium, headless, driven by playwright-core through
 * tests/viewer/heads.mjs) against a server started with no flags:
 *
 *   - the view opens on the built-in demo model with its repeated text and
 *     draws a layers x heads grid for each score of the API document's
 *     analyses (the rollout aside), each cell the value the service gives
 *     for the page's own request (sent again here), the demo model's
 *     previous-byte head standing out;
 *   - a click on a cell opens that head's map: the service's attn_weights
 *     of that layer and head, rows summing to 1, the head marked in every
 *     grid;
 *   - the rollout's slider spans the layers and redraws the chosen one;
 *   - the ranking lists the heads by the service's importance, largest
 *     first;
 *   - the view hides in another mode and keeps its results;
 *   - no console error and no request to another host.
 * The screenshot stays in build/viewer/heads.png.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/check_main.h"
#include "support/server_harness.h"
#include "support/viewer_page.h"

static const json_t *at(const json_t *j, const char *key) {
    const json_t *v = json_object_get(j, key);
    ck_assert_msg(v != NULL, "report has no %s", key);
    return v;
}

/* The page's request of kind `kind` (the last one), sent again: the reply. */
static json_t *resend(const srvt_server *s, const json_t *sent, const char *kind) {
    const char *body = NULL;
    for (size_t i = 0; i < json_array_size(sent); i++) {
        const json_t *e = json_array_get(sent, i);
        if (strcmp(json_string_value(at(e, "kind")), kind) == 0) body = json_string_value(at(e, "body"));
    }
    ck_assert_msg(body != NULL, "the page sent no %s request", kind);
    srvt_reply rep;
    srvt_post(s, "/model", body, &rep);
    ck_assert_msg(rep.status == 200, "%s: status %ld %s", kind, (long)rep.status, rep.body);
    json_t *j = json_loads(rep.body, 0, NULL);
    ck_assert_ptr_nonnull(j);
    srvt_reply_free(&rep);
    return j;
}

static double value_at(const json_t *grid, int l, int h) {
    return json_number_value(json_array_get(json_array_get(grid, (size_t)l), (size_t)h));
}

/* Every cell holds the service's value for its score, layer and head. */
static void expect_cells(const json_t *first, const json_t *an, int *L, int *H, double *best_prev) {
    const json_t *cells = at(first, "cells");
    const json_t *prev = at(an, "previous_token");
    *L = (int)json_array_size(prev), *H = (int)json_array_size(json_array_get(prev, 0));
    size_t scores = json_object_size(an) - 1; /* every one but the rollout */
    ck_assert_uint_eq(json_array_size(at(first, "grids")), scores);
    ck_assert_uint_eq(json_array_size(cells), scores * (size_t)(*L) * (size_t)(*H));
    *best_prev = 0;
    for (size_t i = 0; i < json_array_size(cells); i++) {
        const json_t *c = json_array_get(cells, i);
        const char *score = json_string_value(json_array_get(c, 0));
        int l = (int)json_integer_value(json_array_get(c, 1)), h = (int)json_integer_value(json_array_get(c, 2));
        double shown = json_number_value(json_array_get(c, 3)), want = value_at(at(an, score), l, h);
        ck_assert_msg(shown == want, "%s layer %d head %d: page %.9g, service %.9g", score, l, h, shown, want);
        if (!strcmp(score, "previous_token") && want > *best_prev) *best_prev = want;
    }
}

/* The ranking: every head (up to 24 rows) by the service's importance. */
static void expect_rank(const json_t *rank, const json_t *imp, int L, int H) {
    size_t n = json_array_size(rank), want_n = (size_t)(L * H < 24 ? L * H : 24);
    ck_assert_uint_eq(n, want_n);
    double last = INFINITY;
    for (size_t i = 0; i < n; i++) {
        const json_t *r = json_array_get(rank, i);
        double v = value_at(imp, (int)json_integer_value(json_array_get(r, 0)), (int)json_integer_value(json_array_get(r, 1)));
        ck_assert_msg(v <= last, "rank %zu: %g after %g", i, v, last);
        last = v;
    }
    double top = -INFINITY; /* the first row is the largest of all */
    for (int l = 0; l < L; l++)
        for (int h = 0; h < H; h++) top = fmax(top, value_at(imp, l, h));
    const json_t *r0 = json_array_get(rank, 0);
    ck_assert(value_at(imp, (int)json_integer_value(json_array_get(r0, 0)), (int)json_integer_value(json_array_get(r0, 1))) == top);
}

/* The opened head's map is the service's attn_weights of that head. */
static void expect_opened(const srvt_server *s, const json_t *opened, const json_t *clicked) {
    const json_t *o = at(opened, "opened");
    ck_assert(json_equal(at(o, "layer"), json_array_get(clicked, 0)) && json_equal(at(o, "head"), json_array_get(clicked, 1)));
    ck_assert(json_is_true(at(opened, "head_canvas")));
    const json_t *on = at(opened, "on"); /* the head marked in every grid */
    ck_assert_uint_eq(json_array_size(on), json_array_size(at(opened, "grids")));
    for (size_t i = 0; i < json_array_size(on); i++) ck_assert(json_equal(json_array_get(on, i), clicked));
    json_t *rep = resend(s, at(opened, "sent"), "head");
    const json_t *want = at(at(rep, "attn_weights"), "data"), *got = at(o, "data");
    ck_assert_uint_eq(json_array_size(got), json_array_size(want));
    for (size_t i = 0; i < json_array_size(want); i++)
        ck_assert((float)json_number_value(json_array_get(got, i)) == (float)json_number_value(json_array_get(want, i)));
    const json_t *sums = at(o, "rowSums");
    for (size_t i = 0; i < json_array_size(sums); i++)
        ck_assert(fabs(json_number_value(json_array_get(sums, i)) - 1.0) < 1e-4);
    json_decref(rep);
}

START_TEST(test_viewer_heads) {
    char modules[600];
    vpage_prepare(modules, sizeof modules);
    srvt_server s = {0};
    ck_assert(srvt_start(&s, NULL, NULL) == 0);
    json_t *r = vpage_run(modules, "heads.mjs", s.base);
    const json_t *first = at(r, "first");
    ck_assert_msg(!json_is_true(at(first, "error")), "%s", json_string_value(at(first, "status")));
    ck_assert_str_eq(json_string_value(at(first, "model")), "shakespeare");
    ck_assert_ptr_nonnull(strstr(json_string_value(at(first, "text")), "ROMEO:"));
    ck_assert_uint_eq(json_array_size(at(first, "names")), 7); /* the document's analyses */
    json_t *rep = resend(&s, at(first, "sent"), "analysis");
    const json_t *an = at(rep, "analysis");
    ck_assert_uint_eq(json_object_size(an), 7);
    int L, H;
    double best_prev;
    expect_cells(first, an, &L, &H, &best_prev);
    ck_assert_msg(best_prev >= 0.3, "the demo model's previous-byte head scores %g", best_prev);
    expect_rank(at(first, "rank"), at(an, "importance"), L, H);
    ck_assert_int_eq(json_integer_value(at(first, "slider_max")), L - 1);
    ck_assert_int_eq(json_integer_value(at(first, "rollout_layer")), L - 1);
    ck_assert(json_is_true(at(first, "rollout_canvas")));
    expect_opened(&s, at(r, "opened"), at(r, "clicked"));
    ck_assert_int_eq(json_integer_value(at(at(r, "layer0"), "rollout_layer")), 0);
    ck_assert(!json_is_true(at(at(r, "hidden"), "visible")));
    const json_t *back = at(r, "back");
    ck_assert(json_is_true(at(back, "visible")));
    ck_assert_uint_eq(json_array_size(at(back, "cells")), json_array_size(at(first, "cells")));
    fprintf(stderr, "viewer: what each head does (shakespeare): %d x %d heads, previous-byte head %.3f, "
            "%zu requests\n", L, H, best_prev, json_array_size(at(back, "sent")));
    json_decref(rep);
    json_decref(r);
    srvt_stop(&s, 10);
    srvt_release(&s);
}
END_TEST

static Suite *heads_suite(void) {
    Suite *s = suite_create("viewer_analysis");
    const TTest *tests[] = {test_viewer_heads, NULL};
    tcase_with(s, "heads", 900, tests); /* the first run installs chromium and playwright-core */
    return s;
}

const test_program TEST_PROGRAM = {.suites = {heads_suite}};
