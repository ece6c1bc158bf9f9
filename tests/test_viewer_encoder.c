/* test_viewer_encoder.c - the model view on an encoder (server/static/
 * encoder.js) in a real browser (Debian's Chromium, headless, driven by
 * playwright-core through tests/viewer/encoder.mjs) against a server started
 * with nothing but --model NAME=DIR of two BERT folders made here from the
 * golden BERT (tests/golden/encoders/bert_mlm_pairs_f32, with a WordPiece
 * vocab.txt): "bert" as it is (2 layers x 4 heads) and "bert512", its
 * weights repeated into 12 layers of 8 heads with 512 positions.
 *
 *   - the tab names the family (BertForMaskedLM) from the page's start,
 *     the pair and fill-mask inputs show, the maps are two-way;
 *   - a sentence pair: B's tokens marked from the service's
 *     sentence_b_start, the open head the service's map, and the filter
 *     A->B / B->A its block of queries and keys;
 *   - the neuron view of a clicked head and a chosen query: q, k, q x k,
 *     q.k, scores and weights are the service's for the page's request sent
 *     again, and the canvas's pixels are their colours;
 *   - the fill-mask box shows the service's top 3 of each [MASK];
 *   - 512 tokens through 12 x 8 heads ask for one head at a time (not 100 MB
 *     of maps): the head picked is the service's, and the time from the pick
 *     to the drawn map is printed.
 * Screenshots stay in build/viewer/encoder-*.png.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/check_main.h"
#include "support/ckpt_files.h"
#include "support/files.h"
#include "support/server_harness.h"
#include "support/tmpdir.h"
#include "support/viewer_page.h"

#define GOLDEN "tests/golden/encoders/bert_mlm_pairs_f32"

static const json_t *at(const json_t *j, const char *key) {
    const json_t *v = json_object_get(j, key);
    ck_assert_msg(v != NULL, "report has no %s", key);
    return v;
}

static double num(const json_t *a, size_t i) { return json_number_value(json_array_get(a, i)); }

/* A WordPiece vocab.txt of 120 rows for the golden BERT (as test_api_encoders.c's). */
static void write_vocab(const char *dir) {
    static const char *const words[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the",
                                        "cat", "sat", "it", "was", "tired", ".", "##s"};
    char path[700];
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 120; i++) i < 13 ? fprintf(f, "%s\n", words[i]) : fprintf(f, "w%d\n", i);
    fclose(f);
}

/* Appends tensor name (float32, shape) with bytes to the header and data. */
static void add_tensor(json_t *hdr, char **data, size_t *len, const char *name, json_t *shape, const void *bytes,
                       size_t n) {
    *data = realloc(*data, *len + n);
    ck_assert_ptr_nonnull(*data);
    memcpy(*data + *len, bytes, n);
    json_object_set_new(hdr, name, json_pack("{s:s, s:o, s:[I, I]}", "dtype", "F32", "shape", shape, "data_offsets",
                                             (json_int_t)*len, (json_int_t)(*len + n)));
    *len += n;
}

/* The golden's weights as 12 layers (layer l is golden layer l % 2) with 512
 * positions (row r is golden row r % 40): a model of the golden's width whose
 * maps at T = 512 are 12 x 8 x 512 x 512. */
static void write_bert512(const char *dir) {
    size_t size = 0;
    char *file = tfile_read_rel(GOLDEN "/model.safetensors", &size), path[700];
    ck_assert_ptr_nonnull(file);
    uint64_t n = 0;
    memcpy(&n, file, 8);
    json_t *in = json_loadb(file + 8, (size_t)n, 0, NULL), *hdr = json_object();
    ck_assert_ptr_nonnull(in);
    const char *name, *base = file + 8 + n;
    json_t *e;
    char *data = NULL;
    size_t len = 0;
    json_object_foreach(in, name, e) {
        const char *dtype = json_string_value(json_object_get(e, "dtype"));
        if (!dtype || strcmp(dtype, "F32") != 0) continue; /* __metadata__, position_ids */
        const json_t *off = json_object_get(e, "data_offsets");
        const char *bytes = base + json_integer_value(json_array_get(off, 0));
        size_t nb = (size_t)(json_integer_value(json_array_get(off, 1)) - json_integer_value(json_array_get(off, 0)));
        json_t *shape = json_deep_copy(json_object_get(e, "shape"));
        int layer;
        char rest[200], out[256];
        if (sscanf(name, "bert.encoder.layer.%d.%199s", &layer, rest) == 2) {
            for (int l = layer; l < 12; l += 2) {
                snprintf(out, sizeof out, "bert.encoder.layer.%d.%s", l, rest);
                add_tensor(hdr, &data, &len, out, json_deep_copy(shape), bytes, nb);
            }
            json_decref(shape);
        } else if (strstr(name, "position_embeddings")) {
            size_t row = nb / 40, rows = 512;
            char *pos = malloc(rows * row);
            for (size_t r = 0; r < rows; r++) memcpy(pos + r * row, bytes + (r % 40) * row, row);
            json_decref(shape);
            add_tensor(hdr, &data, &len, name, json_pack("[i, I]", 512, (json_int_t)(row / 4)), pos, rows * row);
            free(pos);
        } else
            add_tensor(hdr, &data, &len, name, shape, bytes, nb);
    }
    char *text = json_dumps(hdr, JSON_COMPACT);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    ck_assert_int_eq(ckf_write_raw(path, text, data, len), 0);
    json_t *cfg = json_load_file(tfile_path(path, sizeof path, GOLDEN "/config.json"), 0, NULL);
    ck_assert_ptr_nonnull(cfg);
    json_object_set_new(cfg, "max_position_embeddings", json_integer(512));
    json_object_set_new(cfg, "num_hidden_layers", json_integer(12));
    json_object_set_new(cfg, "num_attention_heads", json_integer(8));
    snprintf(path, sizeof path, "%s/config.json", dir);
    ck_assert_int_eq(json_dump_file(cfg, path, 0), 0);
    write_vocab(dir);
    free(text), free(data), free(file);
    json_decref(cfg), json_decref(hdr), json_decref(in);
}

/* The golden folder as it is, with the vocab.txt. */
static void write_bert(const char *dir) {
    static const char *const files[] = {"config.json", "model.safetensors"};
    char src[600], dst[700], rel[200];
    for (int i = 0; i < 2; i++) {
        snprintf(rel, sizeof rel, GOLDEN "/%s", files[i]);
        char repo[600];
        ck_assert_ptr_nonnull(realpath(tfile_path(repo, sizeof repo, rel), src));
        snprintf(dst, sizeof dst, "%s/%s", dir, files[i]);
        ck_assert_int_eq(symlink(src, dst), 0);
    }
    write_vocab(dir);
}

/* The page's request sent again (body edited by set, a JSON object merged
 * in): the parsed 200 reply. */
static json_t *resend(const srvt_server *s, const json_t *req, const char *set) {
    json_t *body = json_deep_copy(req), *extra = json_loads(set, 0, NULL);
    ck_assert_ptr_nonnull(extra);
    json_object_update(body, extra);
    char *text = json_dumps(body, JSON_COMPACT);
    srvt_reply rep;
    srvt_post(s, "/model", text, &rep);
    ck_assert_msg(rep.status == 200, "status %ld %s for %s", (long)rep.status, rep.body, text);
    json_t *j = json_loads(rep.body, 0, NULL);
    ck_assert_ptr_nonnull(j);
    srvt_reply_free(&rep), free(text), json_decref(body), json_decref(extra);
    return j;
}

/* The shown block (rows r0.., keys c0.., R x C) of head p of a flat [L][1][H][T][T] map. */
static void expect_block(const json_t *shown, const json_t *flat, int p, int T) {
    const json_t *vals = at(shown, "values"), *data = at(flat, "data");
    int R = (int)json_integer_value(at(shown, "R")), C = (int)json_integer_value(at(shown, "C"));
    int r0 = (int)json_integer_value(at(shown, "r0")), c0 = (int)json_integer_value(at(shown, "c0"));
    ck_assert_uint_eq(json_array_size(vals), (size_t)(R * C));
    for (int i = 0; i < R; i++)
        for (int j = 0; j < C; j++) {
            float want = (float)num(data, (size_t)((p * T + r0 + i) * T + c0 + j));
            ck_assert_msg((float)num(vals, (size_t)(i * C + j)) == want, "head %d (%d, %d): page %g, service %g", p,
                          r0 + i, c0 + j, num(vals, (size_t)(i * C + j)), (double)want);
        }
}

/* The pair: its tokens and B marked, the open head, the two filters. */
static void check_pair(const srvt_server *s, const json_t *r) {
    const json_t *pair = at(r, "pair");
    ck_assert(!json_is_true(at(pair, "error")));
    json_t *rep = resend(s, at(pair, "req"), "{\"output_format\": \"flat\", \"return\": [\"attn_weights\", \"tokens\"]}");
    int T = (int)json_array_size(json_array_get(at(rep, "tokens"), 0));
    int b = (int)json_integer_value(json_array_get(at(rep, "sentence_b_start"), 0));
    ck_assert_int_eq(T, 11); ck_assert_int_eq(b, 7 - 1);
    ck_assert_int_eq(json_integer_value(at(pair, "b_start")), b);
    const json_t *sentb = at(pair, "sentb"), *flat = at(rep, "attn_weights");
    ck_assert_uint_eq(json_array_size(sentb), (size_t)T);
    for (int i = 0; i < T; i++) ck_assert(json_is_true(json_array_get(sentb, (size_t)i)) == (i >= b));
    ck_assert_uint_eq(json_array_size(at(pair, "filters")), 5);
    ck_assert(json_is_true(at(pair, "pairbar_visible")));
    expect_block(pair, flat, 0, T);
    double above = 0; /* two-way: queries weigh later keys too */
    for (int i = 0; i < T; i++)
        for (int j = i + 1; j < T; j++) above += num(at(pair, "values"), (size_t)(i * T + j));
    ck_assert_msg(above > 0.5, "the weights above the diagonal sum to %g", above);
    const json_t *ab = at(r, "ab"), *ba = at(r, "ba");
    ck_assert_int_eq(json_integer_value(at(ab, "R")), b); ck_assert_int_eq(json_integer_value(at(ab, "C")), T - b);
    ck_assert_int_eq(json_integer_value(at(ab, "c0")), b);
    ck_assert_int_eq(json_integer_value(at(ba, "R")), T - b); ck_assert_int_eq(json_integer_value(at(ba, "C")), b);
    expect_block(ab, flat, 0, T);
    expect_block(ba, flat, 0, T);
    const json_t *clicked = at(at(r, "clicked"), "open"); /* layer 1, head 2: panel 1 * 4 + 2 */
    ck_assert_int_eq(json_integer_value(at(clicked, "p")), 6);
    expect_block(at(r, "clicked"), flat, 6, T);
    json_decref(rep);
}

/* The colour the page gives v on -max..max (encoder.js's neuronColour). */
static void colour(double v, double max, int rgb[3]) {
    double t = max > 0 ? fmax(-1, fmin(1, v / max)) : 0;
    int g = (int)lround(255 * (1 - fabs(t)));
    rgb[0] = t >= 0 ? 255 : g, rgb[1] = g, rgb[2] = t >= 0 ? g : 255;
}

static double max_abs(const json_t *a, double m) {
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *v = json_array_get(a, i);
        m = json_is_array(v) ? max_abs(v, m) : fmax(m, fabs(json_number_value(v)));
    }
    return m;
}

/* The neuron view: the service's numbers for the page's request, and the
 * canvas's pixels their colours. */
static void check_neuron(const srvt_server *s, const json_t *nv) {
    ck_assert_msg(json_object_get(nv, "view") != NULL, "no neuron view: %s", json_dumps(nv, 0));
    json_t *rep = resend(s, at(nv, "req"), "{}");
    const json_t *want = at(rep, "neuron_view"), *got = at(nv, "view");
    static const char *const keys[] = {"layer", "head", "query", "q", "k", "q_times_k", "dot", "scores", "weights"};
    for (int i = 0; i < 9; i++) ck_assert_msg(json_equal(at(want, keys[i]), at(got, keys[i])), "neuron %s", keys[i]);
    ck_assert_int_eq(json_integer_value(at(want, "layer")), 1); ck_assert_int_eq(json_integer_value(at(want, "head")), 2);
    ck_assert_int_eq(json_integer_value(at(want, "query")), 3);
    double sk = max_abs(at(want, "k"), max_abs(at(want, "q"), 0)), sp = max_abs(at(want, "q_times_k"), 0);
    const json_t *cells = at(nv, "cells");
    ck_assert_uint_gt(json_array_size(cells), 20);
    for (size_t i = 0; i < json_array_size(cells); i++) {
        const json_t *c = json_array_get(cells, i), *rgb = at(c, "rgb");
        const char *part = json_string_value(at(c, "part"));
        long long jj = json_integer_value(at(c, "j"));
        size_t j = (size_t)(jj < 0 ? 0 : jj), d = (size_t)json_integer_value(at(c, "d"));
        double v = !strcmp(part, "q") ? num(at(want, "q"), d) : num(json_array_get(at(want, part), j), d);
        int exp[3];
        colour(v, !strcmp(part, "q_times_k") ? sp : sk, exp);
        for (int k = 0; k < 3; k++)
            ck_assert_msg((int)json_integer_value(json_array_get(rgb, (size_t)k)) == exp[k],
                          "%s key %lld dim %zu (%g): pixel %d, want %d", part, jj, d, v,
                          (int)json_integer_value(json_array_get(rgb, (size_t)k)), exp[k]);
    }
    json_decref(rep);
}

/* The fill-mask box: the service's top 3 of each [MASK], in order. */
static void check_fill(const srvt_server *s, const json_t *fill) {
    ck_assert_msg(json_is_null(at(fill, "error")), "fill-mask: %s", json_string_value(at(fill, "error")));
    json_t *rep = resend(s, at(fill, "req"), "{}");
    const json_t *masks = at(rep, "fill_mask"), *rows = at(fill, "rows");
    ck_assert_uint_eq(json_array_size(masks), 2);
    ck_assert_uint_eq(json_array_size(rows), 6);
    for (size_t m = 0; m < 2; m++)
        for (size_t k = 0; k < 3; k++) {
            const json_t *row = json_array_get(rows, m * 3 + k), *want = json_array_get(masks, m);
            ck_assert_int_eq(json_integer_value(json_array_get(row, 0)), json_integer_value(json_array_get(at(want, "ids"), k)));
            ck_assert((float)num(row, 1) == (float)num(at(want, "probs"), k));
        }
    json_decref(rep);
}

/* 512 tokens: one head asked for, the head picked the service's. */
static void check_long(const srvt_server *s, const json_t *r) {
    const json_t *lg = at(r, "long"), *pk = at(r, "picked");
    ck_assert(json_is_true(at(lg, "one_head")));
    ck_assert_int_eq(json_integer_value(at(lg, "T")), 512);
    ck_assert_int_eq(json_integer_value(at(lg, "thumbs")), 1);
    ck_assert_uint_eq(json_array_size(at(at(lg, "req"), "heads")), 1);
    const json_t *req = at(pk, "req");
    ck_assert_int_eq(json_integer_value(json_array_get(at(req, "layers"), 0)), 7);
    ck_assert_int_eq(json_integer_value(json_array_get(at(req, "heads"), 0)), 5);
    ck_assert_int_eq(json_integer_value(at(at(pk, "open"), "layer")), 7);
    ck_assert_int_eq(json_integer_value(at(pk, "R")), 512); ck_assert_int_eq(json_integer_value(at(pk, "C")), 512);
    json_t *rep = resend(s, req, "{\"output_format\": \"flat\", \"return\": [\"attn_weights\"]}");
    const json_t *data = at(at(rep, "attn_weights"), "data"), *row = at(pk, "row100");
    ck_assert_uint_eq(json_array_size(data), 512 * 512);
    ck_assert_uint_eq(json_array_size(row), 512);
    for (size_t j = 0; j < 512; j++) ck_assert((float)num(row, j) == (float)num(data, 100 * 512 + j));
    /* the neuron view of the head picked came with its map (one forward pass), read from the safetensors reply */
    const json_t *nv = at(at(r, "picked_neuron"), "view"), *asked = at(req, "neuron_view");
    ck_assert_int_eq(json_integer_value(at(nv, "layer")), 7); ck_assert_int_eq(json_integer_value(at(nv, "head")), 5);
    ck_assert_uint_eq(json_array_size(at(nv, "k")), 512);
    ck_assert_msg(json_equal(at(at(r, "picked_neuron"), "req"), req), "the neuron view was asked for apart from the map");
    json_t *nrep = resend(s, req, "{\"output_format\": \"flat\", \"return\": [\"idx\"]}");
    const json_t *want = at(nrep, "neuron_view");
    ck_assert(json_equal(at(asked, "query"), at(want, "query")));
    static const char *const rows[] = {"q", "dot", "scores", "weights"};
    for (int k = 0; k < 4; k++)
        for (size_t i = 0; i < json_array_size(at(want, rows[k])); i++)
            ck_assert_msg((float)num(at(nv, rows[k]), i) == (float)num(at(want, rows[k]), i), "%s[%zu]", rows[k], i);
    for (size_t d = 0; d < json_array_size(at(want, "q")); d++)
        ck_assert((float)num(json_array_get(at(nv, "k"), 511), d) == (float)num(json_array_get(at(want, "k"), 511), d));
    json_decref(nrep);
    const json_t *t = at(pk, "timings");
    fprintf(stderr, "viewer: encoder T = 512, 12 x 8 heads, one head at a time: the head picked drawn %.0f ms after "
            "the pick (request %.0f ms, reply %.2f MB)\n", json_number_value(at(t, "pick_ms")),
            json_number_value(at(t, "request_ms")), json_number_value(at(t, "reply_bytes")) / 1e6);
    json_decref(rep);
}

START_TEST(test_viewer_encoder) {
    char modules[600], d1[600], d2[600], m1[700], m2[700];
    vpage_prepare(modules, sizeof modules);
    ttmp_make();
    ttmp_path(d1, sizeof d1, "bert"), ttmp_path(d2, sizeof d2, "bert512");
    ck_assert_int_eq(mkdir(d1, 0755), 0); ck_assert_int_eq(mkdir(d2, 0755), 0);
    write_bert(d1);
    write_bert512(d2);
    snprintf(m1, sizeof m1, "bert=%s", d1), snprintf(m2, sizeof m2, "bert512=%s", d2);
    const char *args[] = {"--model", m1, "--model", m2, NULL};
    srvt_server s = {0};
    ck_assert_msg(srvt_start(&s, args, NULL) == 0, "cannot start %s --model %s --model %s", srvt_binary(), m1, m2);
    json_t *r = vpage_run(modules, "encoder.mjs", s.base);
    const json_t *opened = at(r, "opened");
    ck_assert_msg(!json_is_true(at(opened, "error")), "%s", json_string_value(at(opened, "status")));
    ck_assert_str_eq(json_string_value(at(r, "tab_at_start")), "Model view: BertForMaskedLM");
    ck_assert_str_eq(json_string_value(at(opened, "tab")), "Model view: BertForMaskedLM");
    ck_assert(json_is_true(at(opened, "pair_visible")) && json_is_true(at(opened, "fill_visible")));
    check_pair(&s, r);
    check_neuron(&s, at(r, "neuron"));
    check_fill(&s, at(r, "fill"));
    check_long(&s, r);
    json_decref(r);
    srvt_stop(&s, 10);
    srvt_release(&s);
    ttmp_remove();
}
END_TEST

static Suite *encoder_suite(void) {
    Suite *s = suite_create("viewer_encoder");
    const TTest *tests[] = {test_viewer_encoder, NULL};
    tcase_with(s, "encoder", 900, tests); /* the first run installs chromium and playwright-core */
    return s;
}

const test_program TEST_PROGRAM = {.suites = {encoder_suite}};
