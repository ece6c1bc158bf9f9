/* test_viewer.c - the viewer page at GET / in a real browser (Debian's
 * Chromium, headless, driven by playwright-core from npm through
 * tests/viewer/viewer.mjs), and the route itself (ETag, 304, no-cache).
 *
 * The page must load with no console error and no request to another host;
 * show the seed MultiHeadAttention example first as 2 heads x 6 x 6 cells
 * whose colours are viridis at the service's own weights (computed here with
 * api_handle); show a cell's value on hover; draw T x T lines per head in
 * the head view and the five stages; download a PNG, an SVG and JSON that
 * decode; draw a GPT-2 layer at T = 1,024 with 12 heads with the first map
 * within 1 s of the reply; and handle top-k with query rows on it. The
 * screenshots stay in build/viewer/ (viewer-values.png is docs/viewer.png).
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_internal.h"
#include "support/check_main.h"
#include "support/files.h"
#include "support/procs.h"
#include "support/server_harness.h"

#define CHROMIUM "/usr/bin/chromium"
#define PLAYWRIGHT "playwright-core@1.65.1"

/* The seed example's attn_weights as the service computes them: [2][6][6]. */
static void seed_weights(float w[2][6][6]) {
    char path[512];
    tfile_path(path, sizeof path, "api/examples/multihead_seed.json");
    json_t *req = json_load_file(path, 0, NULL);
    ck_assert_ptr_nonnull(req);
    json_object_set_new(req, "output_format", json_string("flat"));
    json_object_set_new(req, "return", json_pack("[s]", "attn_weights"));
    char *text = json_dumps(req, JSON_COMPACT);
    api_reply rep;
    ck_assert_int_eq(api_handle(API_EP_MULTIHEAD, text, strlen(text), NULL, &rep), 200);
    json_t *j = json_loadb(rep.body.data, rep.body.len, 0, NULL);
    const json_t *data = json_object_get(json_object_get(j, "attn_weights"), "data");
    ck_assert_uint_eq(json_array_size(data), 72);
    for (int i = 0; i < 72; i++) (&w[0][0][0])[i] = (float)json_number_value(json_array_get(data, (size_t)i));
    json_decref(j);
    api_buf_free(&rep.body);
    free(text);
    json_decref(req);
}

/* Installs playwright-core under build/npm once; returns its node_modules. */
static int ensure_playwright(char *dir, size_t size) {
    char root[512];
    tfile_path(root, sizeof root, "build/npm");
    snprintf(dir, size, "%s/node_modules", root);
    char pkg[700];
    snprintf(pkg, sizeof pkg, "%.600s/playwright-core/package.json", dir);
    if (access(pkg, R_OK) == 0) return 1;
    if (!procs_ensure_package("/usr/bin/npm", "npm")) return 0;
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "mkdir -p %s && npm install --prefix %s --no-audit --no-fund --no-save "
             PLAYWRIGHT " >&2", root, root);
    fprintf(stderr, "viewer: installing %s from npm\n", PLAYWRIGHT);
    return system(cmd) == 0 && access(pkg, R_OK) == 0;
}

static const json_t *at(const json_t *j, const char *key) {
    const json_t *v = json_object_get(j, key);
    ck_assert_msg(v != NULL, "report has no %s", key);
    return v;
}

/* python3 tests/maps/<script> file: its output. */
static char *python(const char *script, const char *file) {
    char path[512], cmd[1200];
    tfile_path(path, sizeof path, script);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s", path, file);
    int st;
    char *out = procs_capture(cmd, &st);
    ck_assert_msg(out && st == 0, "%s %s failed: %s", script, file, out ? out : "");
    return out;
}

START_TEST(test_viewer_in_chromium) {
    ck_assert_msg(procs_ensure_package(CHROMIUM, "chromium"), "could not install chromium");
    ck_assert_msg(procs_ensure_package("/usr/bin/node", "nodejs"), "could not install nodejs");
    char modules[600];
    ck_assert_msg(ensure_playwright(modules, sizeof modules), "could not install " PLAYWRIGHT);
    float w[2][6][6];
    seed_weights(w);

    srvt_server s = {0};
    ck_assert(srvt_start(&s, NULL, NULL) == 0);
    char outdir[512], script[512], cmd[2400];
    tfile_path(outdir, sizeof outdir, "build/viewer");
    mkdir(outdir, 0755);
    tfile_path(script, sizeof script, "tests/viewer/viewer.mjs");
    snprintf(cmd, sizeof cmd, "PLAYWRIGHT_DIR=%s node %s %s %s", modules, script, s.base, outdir);
    int st;
    char *out = procs_capture(cmd, &st);
    srvt_stop(&s, 10);
    srvt_release(&s);
    ck_assert_msg(out && st == 0, "viewer.mjs failed (%d): %s", st, out ? out : "");
    json_error_t je;
    json_t *r = json_loads(out, 0, &je);
    ck_assert_msg(r != NULL, "report is not JSON: %s", out);
    ck_assert_msg(json_object_get(r, "exception") == NULL, "the page script failed: %s",
                  json_string_value(json_object_get(r, "exception")));

    /* no console error, nothing from another host */
    ck_assert_msg(json_array_size(at(r, "console_errors")) == 0, "console errors: %s",
                  json_dumps(at(r, "console_errors"), 0));
    ck_assert_msg(json_array_size(at(r, "foreign_requests")) == 0, "requests to other hosts: %s",
                  json_dumps(at(r, "foreign_requests"), 0));
    ck_assert_int_gt(json_integer_value(at(r, "requests")), 1);

    /* the seed example first, 2 heads x 6 x 6 in the service's colours */
    ck_assert_msg(strstr(json_string_value(at(r, "example")), "multihead_seed") != NULL, "first example %s",
                  json_string_value(at(r, "example")));
    ck_assert_str_eq(json_string_value(at(r, "tokens")), "Your journey starts with one step");
    const json_t *maps = at(r, "maps");
    ck_assert_uint_eq(json_array_size(maps), 2);
    int cells = 0;
    for (size_t h = 0; h < 2; h++) {
        const json_t *m = json_array_get(maps, h);
        ck_assert_int_eq(json_integer_value(at(m, "rows")), 6);
        ck_assert_int_eq(json_integer_value(at(m, "cols")), 6);
        char title[32];
        snprintf(title, sizeof title, "batch 0, head %zu", h);
        ck_assert_str_eq(json_string_value(at(m, "title")), title);
        const json_t *cs = at(m, "cells");
        ck_assert_uint_eq(json_array_size(cs), 36);
        for (size_t c = 0; c < 36; c++) {
            const json_t *e = json_array_get(cs, c);
            int i = (int)json_integer_value(json_array_get(e, 0)), j = (int)json_integer_value(json_array_get(e, 1));
            const uint8_t *rgb = api__viridis[api__image_level(w[h][i][j], 0, 0, API_COLOR_UNIT)];
            for (int k = 0; k < 3; k++)
                ck_assert_msg(json_integer_value(json_array_get(e, (size_t)(2 + k))) == rgb[k],
                              "head %zu cell (%d,%d) of weight %.9g: page (%lld,%lld,%lld), viridis "
                              "(%d,%d,%d)", h, i, j, (double)w[h][i][j],
                              json_integer_value(json_array_get(e, 2)), json_integer_value(json_array_get(e, 3)),
                              json_integer_value(json_array_get(e, 4)), rgb[0], rgb[1], rgb[2]);
            cells++;
        }
    }
    ck_assert_int_eq(cells, 72);

    /* hover: head 1, query 3 ("with"), key 2 ("starts") shows the service's number */
    const char *tip = json_string_value(at(at(r, "hover"), "text"));
    ck_assert_msg(strstr(tip, "head 1") && strstr(tip, "with") && strstr(tip, "starts"), "tooltip %s", tip);
    ck_assert_msg(strtof(strrchr(tip, ':') + 1, NULL) == w[1][3][2], "tooltip %s, weight %.9g", tip,
                  (double)w[1][3][2]);

    /* head view: T x T lines per head, labels on both sides; the five stages */
    const json_t *hv = at(r, "headview");
    ck_assert_uint_eq(json_array_size(hv), 2);
    ck_assert_int_eq(json_integer_value(json_array_get(hv, 0)), 36);
    ck_assert_int_eq(json_integer_value(json_array_get(hv, 1)), 36);
    ck_assert_int_eq(json_integer_value(at(r, "headview_labels")), 12);
    ck_assert_uint_eq(json_array_size(at(r, "stages")), 5);

    /* downloads */
    char file[600];
    snprintf(file, sizeof file, "%s/download.png", outdir);
    char *png = python("tests/maps/png_pixels.py", file);
    int width = 0, height = 0, used = 0;
    ck_assert_int_eq(sscanf(png, "%d %d%n", &width, &height, &used), 2);
    ck_assert_int_eq(width, 2 * 6 * 32 + 4); /* the default cell for 6 x 6: 32 pixels */
    ck_assert_int_eq(height, 6 * 32);
    const uint8_t *c00 = api__viridis[api__image_level(w[0][2][1], 0, 0, API_COLOR_UNIT)];
    char want[7];
    snprintf(want, sizeof want, "%02x%02x%02x", c00[0], c00[1], c00[2]);
    ck_assert(strncmp(png + used + 1 + ((size_t)(2 * 32 + 16) * width + 32 + 16) * 6, want, 6) == 0);
    free(png);
    snprintf(file, sizeof file, "%s/download.svg", outdir);
    char *svg = python("tests/maps/svg_summary.py", file);
    json_t *sv = json_loads(svg, 0, NULL);
    ck_assert_ptr_nonnull(sv);
    ck_assert_uint_eq(json_array_size(at(sv, "panels")), 2);
    json_decref(sv);
    free(svg);
    snprintf(file, sizeof file, "%s/download.json", outdir);
    json_t *dj = json_load_file(file, 0, NULL);
    ck_assert_ptr_nonnull(dj);
    ck_assert_ptr_nonnull(json_object_get(dj, "attn_weights"));
    ck_assert_ptr_nonnull(json_object_get(dj, "context"));
    json_decref(dj);

    /* every example draws its maps, head view and stages */
    const json_t *exs = at(r, "examples");
    ck_assert_uint_ge(json_array_size(exs), 10);
    for (size_t i = 0; i < json_array_size(exs); i++) {
        const json_t *e = json_array_get(exs, i);
        ck_assert_msg(json_is_null(at(e, "error")), "example %s: %s", json_string_value(at(e, "name")),
                      json_string_value(at(e, "error")));
        ck_assert_msg(json_integer_value(at(e, "panels")) >= 1 && json_integer_value(at(e, "lines")) >= 1 &&
                      json_integer_value(at(e, "stages")) == 5, "example %s: %lld panels, %lld lines, "
                      "%lld stages", json_string_value(at(e, "name")), json_integer_value(at(e, "panels")),
                      json_integer_value(at(e, "lines")), json_integer_value(at(e, "stages")));
    }

    /* T = 1,024, 12 heads: every head drawn, the first within 1 s of the reply */
    const json_t *big = at(r, "big");
    fprintf(stderr, "viewer: GPT-2 layer T=1024, 12 heads: reply %.0f ms (%lld bytes), first map %.0f ms "
            "after it, all 12 %.0f ms\n", json_number_value(at(big, "request_ms")),
            json_integer_value(at(big, "reply_bytes")), json_number_value(at(big, "first_map_ms")),
            json_number_value(at(big, "all_maps_ms")));
    ck_assert_int_eq(json_integer_value(at(big, "panels")), 12);
    ck_assert_str_eq(json_string_value(at(at(big, "first"), "rows")), "1024");
    ck_assert_msg(json_number_value(at(big, "first_map_ms")) < 1000.0, "first map after %.0f ms",
                  json_number_value(at(big, "first_map_ms")));
    /* with top-k 8, heads 0 and 5, query rows 0..63 */
    const json_t *tk = at(r, "big_topk");
    ck_assert_uint_eq(json_array_size(at(tk, "panels")), 2);
    ck_assert_str_eq(json_string_value(json_array_get(at(tk, "panels"), 1)), "head 5");
    ck_assert_uint_eq(json_array_size(at(tk, "lines")), 2);
    int links = 0; /* causal: query i has i + 1 keys, padding draws no line */
    for (int i = 0; i < 64; i++) links += i + 1 < 8 ? i + 1 : 8;
    ck_assert_int_eq(json_integer_value(json_array_get(at(tk, "lines"), 0)), links);
    ck_assert_int_eq(json_integer_value(json_array_get(at(tk, "lines"), 1)), links);
    json_decref(r);
    free(out);
}
END_TEST

/* GET / : the page, its ETag, 304 when the client has it, HEAD. */
START_TEST(test_viewer_route) {
    srvt_server s = {0};
    ck_assert(srvt_start(&s, NULL, NULL) == 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "curl -s -D - -o /dev/null %s/", s.base);
    char *head = procs_capture(cmd, NULL);
    ck_assert_ptr_nonnull(strstr(head, "200 OK"));
    ck_assert_ptr_nonnull(strcasestr(head, "content-type: text/html; charset=utf-8"));
    ck_assert_ptr_nonnull(strcasestr(head, "cache-control: no-cache"));
    char *etag = strcasestr(head, "etag: ");
    ck_assert_ptr_nonnull(etag);
    etag += 6;
    etag[strcspn(etag, "\r\n")] = '\0';
    snprintf(cmd, sizeof cmd, "curl -s -o /dev/null -w '%%{http_code}' -H 'If-None-Match: %s' %s/", etag, s.base);
    char *code = procs_capture(cmd, NULL);
    ck_assert_str_eq(code, "304");
    free(code);
    snprintf(cmd, sizeof cmd, "curl -s %s/", s.base);
    char *page = procs_capture(cmd, NULL);
    ck_assert_ptr_nonnull(strstr(page, "<!doctype html>"));
    ck_assert_msg(strstr(page, "http://") == NULL || strstr(page, "http://www.w3.org/2000/svg"),
                  "the page names another host");
    ck_assert_ptr_null(strstr(page, "https://"));
    /* Accept: image/png makes a compute reply a PNG */
    char ex[512];
    tfile_path(ex, sizeof ex, "api/examples/multihead_seed.json");
    snprintf(cmd, sizeof cmd, "curl -s -o /dev/null -w '%%{http_code} %%{content_type}' -H 'Accept: image/png' "
             "--data-binary @%s %s/attention/multihead", ex, s.base);
    char *img = procs_capture(cmd, NULL);
    ck_assert_str_eq(img, "200 image/png");
    snprintf(cmd, sizeof cmd, "curl -s -o /dev/null -w '%%{content_type}' -H 'Accept: image/svg+xml, "
             "application/json;q=0.5' --data-binary @%s %s/attention/multihead", ex, s.base);
    char *svg = procs_capture(cmd, NULL);
    ck_assert_str_eq(svg, "image/svg+xml");
    snprintf(cmd, sizeof cmd, "curl -s -o /dev/null -w '%%{content_type}' -H 'Accept: */*' "
             "--data-binary @%s %s/attention/multihead", ex, s.base);
    char *any = procs_capture(cmd, NULL);
    ck_assert_str_eq(any, "application/json");
    free(any);
    free(svg);
    free(img);
    free(page);
    free(head);
    srvt_stop(&s, 10);
    srvt_release(&s);
}
END_TEST

static Suite *viewer_suite(void) {
    Suite *s = suite_create("viewer");
    const TTest *tests[] = {test_viewer_route, test_viewer_in_chromium, NULL};
    tcase_with(s, "viewer", 900, tests); /* the first run installs chromium and playwright-core */
    return s;
}

const test_program TEST_PROGRAM = {.suites = {viewer_suite}};
