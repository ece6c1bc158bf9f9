/* test_api_maps.c - selection ("heads", "query_rows"), head averaging over the
 * selected heads and "top_k" against the same slices and sorts of the full
 * maps, for every example of api/examples/ (every module), with boolean
 * masks, key padding and dropout; top-k in every output format; the PNG
 * decoded by another decoder (python3's zlib, tests/maps/png_pixels.py) and
 * compared cell by cell with viridis; the SVG parsed as XML
 * (tests/maps/svg_summary.py); and the 400s of bad selections.
 */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/model/model.h"
#include "api/module/module.h"
#include "api/numbers/numbers.h"
#include "tests/support/files.h"
#include "tests/support/jschema.h"
#include "tests/support/check_main.h"

static const char *const MAPS[] = {"attn_scores", "masked_scores", "attn_weights", "mask",
                                   "dropout_mask"};
#define N_MAPS 5

/* ==== Requests ============================================================= */

typedef struct {
    int status;
    json_t *body;         /* the parsed reply (JSON formats) */
    api_buf raw;          /* the bytes */
    const char *type;
} reply;

static void reply_free(reply *r) {
    json_decref(r->body);
    api_buf_free(&r->raw);
}

static reply run(api_endpoint ep, const json_t *req, const api_limits *lim) {
    char *text = json_dumps(req, JSON_COMPACT);
    ck_assert_ptr_nonnull(text);
    api_reply rep;
    api_handle(ep, text, strlen(text), lim, &rep);
    free(text);
    reply r = {.status = rep.status, .raw = rep.body, .type = rep.content_type};
    if (strcmp(rep.content_type, "application/json") == 0) {
        json_error_t je;
        r.body = json_loadb(rep.body.data, rep.body.len, 0, &je);
        ck_assert_msg(r.body != NULL, "reply is not JSON: %s", je.text);
    }
    return r;
}

/* A float tensor of a flat reply ({"shape","data"}); null is -inf. */
typedef struct {
    int rank, shape[API_MAX_RANK];
    size_t n;
    float *x;
} tens;

static tens flat(const json_t *t) {
    tens o = {0};
    const json_t *shape = json_object_get(t, "shape"), *data = json_object_get(t, "data");
    ck_assert_msg(shape && data, "not a flat tensor");
    o.rank = (int)json_array_size(shape);
    o.n = 1;
    for (int d = 0; d < o.rank; d++) {
        o.shape[d] = (int)json_integer_value(json_array_get(shape, (size_t)d));
        o.n *= (size_t)o.shape[d];
    }
    ck_assert_uint_eq(o.n, json_array_size(data));
    o.x = malloc((o.n ? o.n : 1) * sizeof(float));
    for (size_t i = 0; i < o.n; i++) {
        const json_t *v = json_array_get(data, i);
        o.x[i] = json_is_null(v) ? -INFINITY : (float)json_number_value(v);
    }
    return o;
}

static api_endpoint endpoint_of(const char *file) {
    static const char *const prefixes[] = {"simple", "self", "causal", "multihead", "sdpa"};
    for (int i = 0; i < 5; i++)
        if (strncmp(file, prefixes[i], strlen(prefixes[i])) == 0) {
            char path[64];
            snprintf(path, sizeof path, "/attention/%s", prefixes[i]);
            api_endpoint ep;
            ck_assert_int_eq(api_endpoint_from_path(path, &ep), 0);
            return ep;
        }
    ck_abort_msg("no endpoint for %s", file);
    return API_EP_SIMPLE;
}

/* Every example of api/examples/ as (file name, endpoint, request). */
typedef struct {
    char name[64];
    api_endpoint ep;
    json_t *req;
} example;

static int load_examples(example *out, int max) {
    char dir[512];
    tfile_path(dir, sizeof dir, "api/examples");
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        json_error_t je;
        out[n].req = json_load_file(path, 0, &je);
        ck_assert_msg(out[n].req != NULL, "%s: %s", path, je.text);
        snprintf(out[n].name, sizeof out[n].name, "%.60s", e->d_name);
        out[n].ep = endpoint_of(e->d_name);
        n++;
    }
    closedir(d);
    ck_assert_int_ge(n, 10);
    return n;
}

static void free_examples(example *ex, int n) {
    for (int i = 0; i < n; i++) json_decref(ex[i].req);
}

/* ==== The expected slices and sorts ======================================== */

/* What the test knows of one request's full maps. */
typedef struct {
    const char *name;
    int batched, multi;   /* the reply has a batch axis; the module keeps a head axis */
    int L, S, H;
    int gpt2;
    tens map[N_MAPS];
    tens mask;            /* [B][L][S] as floats, from the "mask" output */
} full_maps;

static int head_axis(const tens *t, int batched) { return t->rank - batched == 3; }

/* The entries of b, h, row i of a full tensor. */
static const float *row_of(const tens *t, int batched, int b, int h, int i) {
    int hs = head_axis(t, batched) ? t->shape[batched] : 1;
    int rows = t->shape[t->rank - 2], cols = t->shape[t->rank - 1];
    return t->x + (((size_t)b * hs + (size_t)h) * rows + (size_t)i) * cols;
}

typedef struct {
    float v;
    int j;
} entry;

static int by_value_then_index(const void *a, const void *b) {
    const entry *x = a, *y = b;
    if (x->v != y->v) return x->v > y->v ? -1 : 1;
    return x->j - y->j;
}

/* The expected top-k of one row: every unmasked entry sorted, then cut. */
static void expect_topk(const float *row, int cols, const float *mask, int k, float *v, int *idx) {
    entry *e = malloc((size_t)cols * sizeof *e);
    int m = 0;
    for (int j = 0; j < cols; j++)
        if (!(mask && mask[j] != 0.0f) && row[j] != -INFINITY) e[m++] = (entry){row[j], j};
    qsort(e, (size_t)m, sizeof *e, by_value_then_index);
    for (int i = 0; i < k; i++) {
        v[i] = i < m ? e[i].v : 0.0f;
        idx[i] = i < m ? e[i].j : -1;
    }
    free(e);
}

static void same_float(float a, float b, const char *what) {
    ck_assert_msg(a == b || (isinf(a) && isinf(b) && a == b), "%s: got %.9g, expected %.9g", what,
                  (double)a, (double)b);
}

/* A selected or top-k reply of one map against the full one. heads: the
 * selected heads (n 0 = all); r0, r1: rows; avg: mean over the heads. */
static void check_map(const full_maps *f, int m, const json_t *got, const int *heads, int nh,
                      int r0, int r1, int k, int avg) {
    const tens *full = &f->map[m];
    int batched = f->batched, headed = head_axis(full, batched);
    int B = batched ? full->shape[0] : 1, cols = full->shape[full->rank - 1];
    int all[64];
    if (!headed || nh == 0) {
        nh = headed ? full->shape[batched] : 1;
        for (int i = 0; i < nh; i++) all[i] = i;
        heads = all;
    }
    int width = k ? k : cols;
    tens v = flat(k ? json_object_get(got, "values") : got);
    tens ix = {0};
    if (k) ix = flat(json_object_get(got, "indices"));
    size_t want = (size_t)B * (size_t)(avg ? 1 : nh) * (size_t)(r1 - r0) * (size_t)width;
    ck_assert_msg(v.n == want, "%s %s: %zu values, expected %zu", f->name, MAPS[m], v.n, want);
    ck_assert_int_eq(v.shape[v.rank - 1], width);
    ck_assert_int_eq(v.shape[v.rank - 2], r1 - r0);
    /* masked entries: the mask's for [L][S] maps, not GPT-2's output dropout */
    int use_mask = cols == f->S && !(f->gpt2 && m == 4);
    float *rowbuf = malloc((size_t)cols * sizeof(float)), *ev = malloc((size_t)width * sizeof(float));
    int *ei = malloc((size_t)width * sizeof(int));
    size_t o = 0;
    char what[160];
    for (int b = 0; b < B; b++)
        for (int hi = 0; hi < (avg ? 1 : nh); hi++)
            for (int i = r0; i < r1; i++) {
                if (avg) {
                    for (int j = 0; j < cols; j++) rowbuf[j] = 0.0f;
                    for (int a = 0; a < nh; a++) {
                        const float *r = row_of(full, batched, b, heads[a], i);
                        for (int j = 0; j < cols; j++) rowbuf[j] += r[j];
                    }
                    for (int j = 0; j < cols; j++) rowbuf[j] /= (float)nh;
                } else {
                    memcpy(rowbuf, row_of(full, batched, b, heads[hi], i), (size_t)cols * sizeof(float));
                }
                const float *mk = use_mask ? f->mask.x + ((size_t)b * f->L + (size_t)i) * f->S : NULL;
                if (k) expect_topk(rowbuf, cols, mk, k, ev, ei);
                for (int j = 0; j < width; j++, o++) {
                    snprintf(what, sizeof what, "%s %s b%d head#%d row %d col %d", f->name, MAPS[m],
                             b, hi, i, j);
                    if (k) {
                        ck_assert_msg((int)ix.x[o] == ei[j], "%s: index %d, expected %d", what,
                                      (int)ix.x[o], ei[j]);
                        same_float(v.x[o], ev[j], what);
                    } else {
                        same_float(v.x[o], rowbuf[j], what);
                    }
                }
            }
    free(rowbuf);
    free(ev);
    free(ei);
    free(v.x);
    free(ix.x);
}

/* Runs req with every map returned in flat form and fills f. */
static int full_run(api_endpoint ep, json_t *req, full_maps *f) {
    json_t *ret = json_array();
    for (int m = 0; m < N_MAPS; m++) json_array_append_new(ret, json_string(MAPS[m]));
    json_object_set_new(req, "return", ret);
    json_object_set_new(req, "output_format", json_string("flat"));
    json_object_del(req, "precision"); /* ties only where the floats tie */
    reply r = run(ep, req, NULL);
    if (r.status != 200) {
        reply_free(&r);
        return -1;
    }
    const json_t *shape = json_object_get(r.body, "shape");
    f->L = (int)json_integer_value(json_object_get(shape, "tokens"));
    f->S = (int)json_integer_value(json_object_get(shape, "kv_tokens"));
    f->H = (int)json_integer_value(json_object_get(shape, "num_heads"));
    f->gpt2 = strcmp(json_string_value(json_object_get(r.body, "module")), "GPT2CausalSelfAttention") == 0;
    for (int m = 0; m < N_MAPS; m++) f->map[m] = flat(json_object_get(r.body, MAPS[m]));
    f->mask = f->map[3];
    f->batched = f->mask.rank == 3;
    reply_free(&r);
    return 0;
}

static void full_free(full_maps *f) {
    for (int m = 0; m < N_MAPS; m++) free(f->map[m].x);
}

static json_t *int_array(const int *x, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(x[i]));
    return a;
}

/* One request variant: the full maps, then selections and top-k against them. */
static int check_variant(const char *name, api_endpoint ep, const json_t *base) {
    full_maps f = {.name = name};
    json_t *req = json_deep_copy(base);
    if (full_run(ep, req, &f)) {
        json_decref(req);
        return 0;
    }
    int heads[2] = {f.H - 1, 0}, nh = f.H > 1 ? 2 : 1;
    int rows[2] = {f.L / 2, f.L};
    struct {
        int sel_heads, sel_rows, k, avg;
    } cases[] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {1, 1, 0, 0}, {0, 0, 3, 0}, {0, 0, f.S + 2, 0},
                 {1, 1, 2, 0},  {1, 0, 0, 1}, {1, 1, 2, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        json_t *q = json_deep_copy(req);
        if (cases[c].sel_heads) json_object_set_new(q, "heads", int_array(heads, nh));
        if (cases[c].sel_rows) json_object_set_new(q, "query_rows", int_array(rows, 2));
        if (cases[c].k) json_object_set_new(q, "top_k", json_integer(cases[c].k));
        int avg = cases[c].avg && f.map[2].rank - f.batched == 3; /* multi-head weights */
        if (cases[c].avg) json_object_set_new(q, "average_attn_weights", json_true());
        reply r = run(ep, q, NULL);
        ck_assert_msg(r.status == 200, "%s case %zu: %d %.300s", name, c, r.status, r.raw.data);
        for (int m = 0; m < N_MAPS; m++)
            check_map(&f, m, json_object_get(r.body, MAPS[m]), cases[c].sel_heads ? heads : NULL,
                      cases[c].sel_heads ? nh : 0, cases[c].sel_rows ? rows[0] : 0,
                      cases[c].sel_rows ? rows[1] : f.L, cases[c].k, avg && m == 2);
        reply_free(&r);
        json_decref(q);
    }
    json_decref(req);
    full_free(&f);
    return 1;
}

START_TEST(test_selection_and_topk_every_module) {
    example ex[32];
    int n = load_examples(ex, 32), checked = 0;
    for (int i = 0; i < n; i++) {
        char name[128];
        ck_assert_msg(check_variant(ex[i].name, ex[i].ep, ex[i].req), "%s fails", ex[i].name);
        checked++;
        /* dropout (modules that take training, dropout and dropout_seed) */
        json_t *v = json_deep_copy(ex[i].req);
        json_object_set_new(v, "dropout", json_real(0.4));
        json_object_set_new(v, "training", json_true());
        json_object_set_new(v, "dropout_seed", json_integer(7));
        snprintf(name, sizeof name, "%.60s+dropout", ex[i].name);
        checked += check_variant(name, ex[i].ep, v);
        json_decref(v);
        /* a boolean mask (some rows wholly masked) and key padding */
        full_maps f = {0};
        json_t *probe = json_deep_copy(ex[i].req);
        if (full_run(ex[i].ep, probe, &f) == 0) {
            json_t *mask = json_array(), *pad = json_array();
            for (int a = 0; a < f.L; a++) {
                json_t *row = json_array();
                for (int b = 0; b < f.S; b++)
                    json_array_append_new(row, json_boolean(a == 1 || (a + b) % 3 == 0));
                json_array_append_new(mask, row);
            }
            for (int b = 0; b < f.S; b++) json_array_append_new(pad, json_integer(b == f.S - 1));
            v = json_deep_copy(ex[i].req);
            json_object_set_new(v, "attn_mask", mask);
            snprintf(name, sizeof name, "%.60s+attn_mask", ex[i].name);
            checked += check_variant(name, ex[i].ep, v);
            json_object_del(v, "attn_mask");
            json_object_set_new(v, "key_padding_mask", pad);
            snprintf(name, sizeof name, "%.60s+key_padding_mask", ex[i].name);
            checked += check_variant(name, ex[i].ep, v);
            json_decref(v);
            full_free(&f);
        }
        json_decref(probe);
    }
    fprintf(stderr, "maps: %d requests' maps sliced and sorted (%d examples)\n", checked, n);
    ck_assert_int_ge(checked, 3 * n);
    free_examples(ex, n);
}
END_TEST

/* ==== Formats ============================================================== */

static json_t *seed_request(void) {
    char path[512];
    tfile_path(path, sizeof path, "api/examples/multihead_seed.json");
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    ck_assert_ptr_nonnull(j);
    return j;
}

static uint64_t le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* top_k in base64 and safetensors carries the nested reply's numbers. */
START_TEST(test_topk_binary_formats) {
    json_t *req = seed_request();
    json_object_set_new(req, "top_k", json_integer(4));
    json_object_set_new(req, "heads", json_pack("[i]", 1));
    json_object_set_new(req, "return", json_pack("[s,s]", "attn_weights", "masked_scores"));
    reply nested = run(API_EP_MULTIHEAD, req, NULL);
    ck_assert_int_eq(nested.status, 200);
    const json_t *w = json_object_get(nested.body, "attn_weights");
    /* [1][1][6][4] */
    const json_t *idx0 = json_array_get(json_array_get(json_object_get(w, "indices"), 0), 0);
    const json_t *val0 = json_array_get(json_array_get(json_object_get(w, "values"), 0), 0);
    ck_assert_uint_eq(json_array_size(idx0), 6);

    json_object_set_new(req, "output_format", json_string("base64"));
    reply b64 = run(API_EP_MULTIHEAD, req, NULL);
    ck_assert_int_eq(b64.status, 200);
    const json_t *bi = json_object_get(json_object_get(b64.body, "attn_weights"), "indices");
    ck_assert_str_eq(json_string_value(json_object_get(bi, "dtype")), "int32");

    json_object_set_new(req, "output_format", json_string("safetensors"));
    reply st = run(API_EP_MULTIHEAD, req, NULL);
    ck_assert_int_eq(st.status, 200);
    ck_assert_str_eq(st.type, "application/octet-stream");
    const uint8_t *p = (const uint8_t *)st.raw.data;
    size_t hlen = le(p, 8);
    json_t *h = json_loadb((const char *)p + 8, hlen, 0, NULL);
    ck_assert_ptr_nonnull(h);
    const uint8_t *data = p + 8 + hlen;
    const json_t *ti = json_object_get(h, "attn_weights.indices");
    const json_t *tv = json_object_get(h, "attn_weights.values");
    ck_assert_ptr_nonnull(ti);
    ck_assert_ptr_nonnull(tv);
    ck_assert_str_eq(json_string_value(json_object_get(ti, "dtype")), "I32");
    ck_assert_str_eq(json_string_value(json_object_get(tv, "dtype")), "F32");
    size_t oi = (size_t)json_integer_value(json_array_get(json_object_get(ti, "data_offsets"), 0));
    size_t ov = (size_t)json_integer_value(json_array_get(json_object_get(tv, "data_offsets"), 0));
    ck_assert_uint_eq(oi % 4, 0);
    ck_assert_uint_eq(ov % 4, 0);
    ck_assert_uint_eq((8 + hlen) % 8, 0);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 4; j++) {
            int32_t got = (int32_t)le(data + oi + 4 * (size_t)(i * 4 + j), 4);
            ck_assert_int_eq(got, json_integer_value(json_array_get(json_array_get(idx0, (size_t)i), (size_t)j)));
            uint32_t bits = (uint32_t)le(data + ov + 4 * (size_t)(i * 4 + j), 4);
            float f;
            memcpy(&f, &bits, 4);
            same_float(f, (float)json_number_value(json_array_get(json_array_get(val0, (size_t)i), (size_t)j)),
                       "safetensors value");
        }
    /* the nested and base64 replies are what the document says */
    json_t *doc = json_loads(api_openapi_json(), 0, NULL);
    const json_t *schema = jschema_resolve(doc, "#/components/schemas/AttentionResponse");
    jschema_error je;
    ck_assert_msg(jschema_validate(doc, schema, nested.body, &je) == JSCHEMA_VALID, "nested: %s at %s",
                  je.message, je.path);
    ck_assert_msg(jschema_validate(doc, schema, b64.body, &je) == JSCHEMA_VALID, "base64: %s at %s",
                  je.message, je.path);
    json_decref(doc);
    /* the causal row 0 has one unmasked key: padding after it */
    ck_assert_int_eq(json_integer_value(json_array_get(json_array_get(idx0, 0), 1)), -1);
    json_decref(h);
    reply_free(&nested);
    reply_free(&b64);
    reply_free(&st);
    json_decref(req);
}
END_TEST

/* ==== Images ================================================================ */

/* Runs a python3 script of tests/maps/ on in (bytes) and returns its stdout. */
static char *python(const char *script, const char *args, const void *in, size_t n) {
    char tmp[] = "/tmp/attn-maps-XXXXXX";
    int fd = mkstemp(tmp);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, in, n), (ssize_t)n);
    close(fd);
    char path[512], cmd[1400];
    tfile_path(path, sizeof path, script);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s %s", path, tmp, args);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    size_t got;
    while ((got = fread(out + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (len + 1 == cap) out = realloc(out, cap *= 2);
    }
    out[len] = '\0';
    ck_assert_int_eq(pclose(p), 0);
    unlink(tmp);
    return out;
}

/* The colour-map level of a weight: round(255 v) of v clamped (or scaled). */
static int level(float v, float d) {
    double x = d > 0 ? (double)v / d : 0;
    x = x < 0 ? 0 : x > 1 ? 1 : x;
    return (int)floor(x * 255 + 0.5);
}

static const char *const SEED_TOKENS[] = {"Your", "journey", "starts", "with", "one", "step"};

/* 1 if the glyph of ch is drawn at (x, y) in ink and the rest of its box is
 * white (up: turned to read upward from its bottom left at (x, y)). */
static int glyph_at(const char *hex, int width, int x, int y, char ch, int up) {
    const uint8_t *g = api__font5x7[api__font_index((unsigned char)ch)];
    for (int col = 0; col < API_FONT_W; col++)
        for (int r = 0; r < API_FONT_H; r++) {
            int px = up ? x + r : x + col, py = up ? y - col : y + r;
            int white = strncmp(hex + ((size_t)py * width + px) * 6, "ffffff", 6) == 0;
            if ((g[col] >> r & 1) == white) return 0;
        }
    return 1;
}

/* The PNG's text and colour bar: the title's first letter, each row's
 * label (its last letter, right-aligned to the cells), each key's label
 * (its first letter, reading upward), the bar's 256 levels and its ends. */
static void check_png_text(const char *hex, int width, const api_png_frame *f, int c, int rows,
                           int row0, const char *scale) {
    ck_assert_msg(glyph_at(hex, width, 4, 5, 'M', 0), "the title does not start with MultiHeadAttention");
    for (int i = 0; f->labels && i < rows; i++) {
        const char *t = SEED_TOKENS[row0 + i];
        int y = f->y0 + i * c + (c - API_FONT_H) / 2, x = f->x0 - 3 - API_FONT_ADVANCE;
        ck_assert_msg(glyph_at(hex, width, x, y, t[strlen(t) - 1], 0), "row %d's label %s", i, t);
    }
    for (int j = 0; f->labels && j < 6; j++)
        ck_assert_msg(glyph_at(hex, width, f->x0 + j * c + (c - API_FONT_H) / 2, f->y0 - 4, SEED_TOKENS[j][0], 1),
                      "key %d's label %s", j, SEED_TOKENS[j]);
    for (int k = 0; k < 256; k++) {
        char want[7];
        snprintf(want, sizeof want, "%02x%02x%02x", api__viridis[k][0], api__viridis[k][1], api__viridis[k][2]);
        ck_assert_msg(strncmp(hex + ((size_t)(f->bar_y + 5) * width + 4 + k) * 6, want, 6) == 0, "bar level %d", k);
    }
    int text_y = f->bar_y + 13;
    ck_assert(glyph_at(hex, width, 4, text_y, '0', 0));
    const char *top = !scale ? "1" : !strcmp(scale, "row") ? "row max" : "map max";
    ck_assert_msg(glyph_at(hex, width, 4 + 257 - (int)strlen(top) * API_FONT_ADVANCE, text_y, top[0], 0),
                  "the bar's top says %s", top);
}

/* The PNG of the seed example (heads, rows, colour scales) against the nested weights. */
static void check_png(const char *scale, int cell, int sel_rows, int avg) {
    json_t *req = seed_request();
    json_object_set_new(req, "return", json_pack("[s]", "attn_weights"));
    json_object_set_new(req, "output_format", json_string("flat"));
    if (sel_rows) json_object_set_new(req, "query_rows", json_pack("[i,i]", 2, 5));
    if (avg) json_object_set_new(req, "average_attn_weights", json_true());
    reply r = run(API_EP_MULTIHEAD, req, NULL);
    ck_assert_int_eq(r.status, 200);
    tens w = flat(json_object_get(r.body, "attn_weights"));
    int rows = w.shape[w.rank - 2], cols = w.shape[w.rank - 1];
    int panels = (int)(w.n / ((size_t)rows * cols));

    json_object_set_new(req, "output_format", json_string("png"));
    if (scale) json_object_set_new(req, "color_scale", json_string(scale));
    if (cell) json_object_set_new(req, "cell", json_integer(cell));
    reply png = run(API_EP_MULTIHEAD, req, NULL);
    ck_assert_int_eq(png.status, 200);
    ck_assert_str_eq(png.type, "image/png");
    char *out = python("tests/maps/png_pixels.py", "", png.raw.data, png.raw.len);
    int width, height, used;
    ck_assert_int_eq(sscanf(out, "%d %d%n", &width, &height, &used), 2);
    /* the stated layout: ceil(sqrt(n)) columns, 4 pixels apart, each panel
     * framed by its title and labels, the title line above, the colour bar below */
    int c = cell ? cell : (512 / (rows > cols ? rows : cols) > 32 ? 32 : 512 / (rows > cols ? rows : cols));
    int gc = 1;
    while (gc * gc < panels) gc++;
    api_image im = {.map = {.B = 1, .H = avg ? 0 : 2, .rows = rows, .cols = cols}, .labels = SEED_TOKENS,
                    .n_labels = 6, .row0 = sel_rows ? 2 : 0, .color = API_COLOR_UNIT};
    api_image_layout lay;
    api_png_frame f;
    api__image_layout(&im.map, c, &lay);
    api__png_frame(&im, &lay, &f);
    ck_assert_int_eq(lay.cell, c);
    ck_assert_int_eq(lay.grid_cols, gc);
    ck_assert_int_eq(width, f.width);
    ck_assert_int_eq(height, f.height);
    ck_assert_int_eq(f.labels, c >= 8);
    const char *hex = out + used + 1;
    ck_assert_uint_eq(strlen(hex), (size_t)width * height * 6 + 1);
    int cells = 0;
    for (int p = 0; p < panels; p++) {
        const float *pw = w.x + (size_t)p * rows * cols;
        float pmax = 0;
        for (int e = 0; e < rows * cols; e++) pmax = pw[e] > pmax ? pw[e] : pmax;
        for (int i = 0; i < rows; i++) {
            float rmax = 0;
            for (int j = 0; j < cols; j++) rmax = pw[i * cols + j] > rmax ? pw[i * cols + j] : rmax;
            for (int j = 0; j < cols; j++) {
                float d = scale && !strcmp(scale, "row") ? rmax : scale && !strcmp(scale, "max") ? pmax : 1;
                const uint8_t *rgb = api__viridis[level(pw[i * cols + j], d)];
                char want[7];
                snprintf(want, sizeof want, "%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
                /* every pixel of the cell */
                for (int dy = 0; dy < c; dy++)
                    for (int dx = 0; dx < c; dx++) {
                        int x = f.x0 + (p % gc) * f.step_x + j * c + dx;
                        int y = f.y0 + (p / gc) * f.step_y + i * c + dy;
                        ck_assert_msg(strncmp(hex + ((size_t)y * width + x) * 6, want, 6) == 0,
                                      "panel %d cell (%d,%d) pixel (%d,%d): %.6s, expected %s "
                                      "for %g", p, i, j, x, y, hex + ((size_t)y * width + x) * 6,
                                      want, (double)pw[i * cols + j]);
                    }
                cells++;
            }
        }
    }
    check_png_text(hex, width, &f, c, rows, sel_rows ? 2 : 0, scale);
    ck_assert_int_eq(cells, (int)w.n);
    free(out);
    free(w.x);
    reply_free(&r);
    reply_free(&png);
    json_decref(req);
}

START_TEST(test_png_cells) {
    /* the colour table is matplotlib's viridis at its ends and middle */
    static const uint8_t ends[3][3] = {{68, 1, 84}, {33, 145, 140}, {253, 231, 37}};
    ck_assert_int_eq(memcmp(api__viridis[0], ends[0], 3), 0);
    ck_assert_int_eq(memcmp(api__viridis[128], ends[1], 3), 0);
    ck_assert_int_eq(memcmp(api__viridis[255], ends[2], 3), 0);
    check_png(NULL, 0, 0, 0);
    check_png("row", 5, 1, 0);
    check_png("max", 3, 0, 1);
}
END_TEST

START_TEST(test_png_from_accept) {
    json_t *req = seed_request();
    api_limits lim = {.prefer_format = 1 + API_FORMAT_PNG};
    reply r = run(API_EP_MULTIHEAD, req, &lim);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.type, "image/png");
    ck_assert_int_eq(memcmp(r.raw.data, "\x89PNG\r\n\x1a\n", 8), 0);
    reply_free(&r);
    lim.prefer_format = 1 + API_FORMAT_SVG;
    r = run(API_EP_MULTIHEAD, req, &lim);
    ck_assert_str_eq(r.type, "image/svg+xml");
    reply_free(&r);
    /* a named output_format wins over Accept */
    json_object_set_new(req, "output_format", json_string("flat"));
    r = run(API_EP_MULTIHEAD, req, &lim);
    ck_assert_str_eq(r.type, "application/json");
    reply_free(&r);
    json_decref(req);
}
END_TEST

START_TEST(test_svg_labels) {
    json_t *req = seed_request();
    json_object_set_new(req, "output_format", json_string("svg"));
    json_object_set_new(req, "tokens", json_pack("[s,s,s,s,s,s]", "Your", "jour<ney>", "starts",
                                                 "wi\xEF\xBF\xBFth\x01", "one & only", "step"));
    json_object_set_new(req, "query_rows", json_pack("[i,i]", 1, 4));
    reply r = run(API_EP_MULTIHEAD, req, NULL);
    ck_assert_int_eq(r.status, 200);
    ck_assert_str_eq(r.type, "image/svg+xml");
    char *out = python("tests/maps/svg_summary.py", "", r.raw.data, r.raw.len);
    json_t *s = json_loads(out, 0, NULL);
    ck_assert_msg(s != NULL, "svg_summary: %s", out);
    const json_t *panels = json_object_get(s, "panels");
    ck_assert_uint_eq(json_array_size(panels), 2);
    for (size_t p = 0; p < 2; p++) {
        const json_t *pn = json_array_get(panels, p);
        char want[32];
        snprintf(want, sizeof want, "batch 0, head %zu", p);
        ck_assert_str_eq(json_string_value(json_object_get(pn, "title")), want);
        const json_t *q = json_object_get(pn, "qlabels"), *k = json_object_get(pn, "klabels");
        ck_assert_uint_eq(json_array_size(q), 3);
        ck_assert_uint_eq(json_array_size(k), 6);
        ck_assert_str_eq(json_string_value(json_array_get(q, 0)), "jour<ney>");
        ck_assert_str_eq(json_string_value(json_array_get(q, 2)), "wi?th?"); /* not XML characters */
        ck_assert_str_eq(json_string_value(json_array_get(k, 4)), "one & only");
        ck_assert_int_eq(json_integer_value(json_object_get(pn, "cells")), 18);
    }
    /* a cell's <title>: the weight of head 0, query 1 ("jour<ney>"), key 0 */
    json_object_set_new(req, "output_format", json_string("nested"));
    reply n = run(API_EP_MULTIHEAD, req, NULL);
    double w = json_number_value(json_array_get(json_array_get(json_array_get(json_array_get(
        json_object_get(n.body, "attn_weights"), 0), 0), 0), 0));
    const char *t = json_string_value(json_object_get(s, "first_title"));
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(strstr(t, "jour<ney>") && strstr(t, "Your"), "title %s", t);
    ck_assert_msg(strtof(strrchr(t, ':') + 1, NULL) == (float)w, "title %s, weight %.9g", t, w);
    reply_free(&n);
    json_decref(s);
    free(out);
    reply_free(&r);
    json_decref(req);
}
END_TEST

/* ==== Errors ================================================================ */

static void expect_error(const char *patch, int status, const char *code, const char *field) {
    json_t *req = seed_request();
    json_t *p = json_loads(patch, 0, NULL);
    ck_assert_msg(p != NULL, "bad patch %s", patch);
    json_object_update(req, p);
    reply r = run(API_EP_MULTIHEAD, req, NULL);
    ck_assert_msg(r.status == status, "%s: %d %s", patch, r.status, r.raw.data);
    const json_t *e = json_object_get(r.body, "error");
    ck_assert_str_eq(json_string_value(json_object_get(e, "code")), code);
    ck_assert_msg(strcmp(json_string_value(json_object_get(e, "field")), field) == 0,
                  "%s: field %s, expected %s", patch, json_string_value(json_object_get(e, "field")), field);
    reply_free(&r);
    json_decref(p);
    json_decref(req);
}

START_TEST(test_bad_selections) {
    expect_error("{\"heads\": [2]}", 400, "invalid_argument", "heads[0]");
    expect_error("{\"heads\": [0, 1, -1]}", 400, "invalid_argument", "heads[2]");
    expect_error("{\"heads\": [1, 1]}", 400, "invalid_argument", "heads[1]");
    expect_error("{\"heads\": []}", 400, "invalid_argument", "heads");
    expect_error("{\"heads\": 1}", 400, "invalid_type", "heads");
    expect_error("{\"heads\": [\"0\"]}", 400, "invalid_type", "heads[0]");
    expect_error("{\"query_rows\": [3, 3]}", 400, "invalid_argument", "query_rows");
    expect_error("{\"query_rows\": [0, 7]}", 400, "invalid_argument", "query_rows");
    expect_error("{\"query_rows\": [4, 2]}", 400, "invalid_argument", "query_rows");
    expect_error("{\"query_rows\": [1]}", 400, "invalid_type", "query_rows");
    expect_error("{\"query_rows\": [-1, 2]}", 400, "invalid_argument", "query_rows");
    expect_error("{\"top_k\": 0}", 400, "invalid_argument", "top_k");
    expect_error("{\"top_k\": 1.5}", 400, "invalid_type", "top_k");
    expect_error("{\"output_format\": \"png\", \"top_k\": 2}", 400, "invalid_argument", "top_k");
    expect_error("{\"output_format\": \"png\", \"return\": [\"context\"]}", 400, "invalid_argument",
                 "output_format");
    expect_error("{\"output_format\": \"png\", \"cell\": 65}", 400, "invalid_argument", "cell");
    expect_error("{\"color_scale\": \"log\"}", 400, "invalid_argument", "color_scale");
}
END_TEST

/* ==== Timing at T = 1,024 ===================================================== */

static json_t *gpt2_layer(int T) {
    json_t *x = json_array();
    uint32_t s = 1;
    for (int t = 0; t < T; t++) {
        json_t *row = json_array();
        for (int d = 0; d < 768; d++) {
            s = s * 1664525u + 1013904223u;
            json_array_append_new(row, json_real((double)(s >> 8) / 16777216.0 - 0.5));
        }
        json_array_append_new(x, row);
    }
    return json_pack("{s:s,s:i,s:i,s:{s:i},s:o}", "module", "GPT2CausalSelfAttention", "n_embd", 768,
                     "n_head", 12, "init", "seed", 1, "inputs", x);
}

START_TEST(test_large_topk_and_png_time) {
    json_t *req = gpt2_layer(1024);
    json_object_set_new(req, "return", json_pack("[s]", "attn_weights"));
    json_object_set_new(req, "top_k", json_integer(8));
    api_limits lim = {.max_elements = (size_t)1 << 28};
    double t0 = api__now_ms();
    reply r = run(API_EP_MULTIHEAD, req, &lim);
    double t1 = api__now_ms();
    ck_assert_msg(r.status == 200, "%d %.300s", r.status, r.raw.data);
    reply_free(&r);
    json_object_del(req, "top_k");
    json_object_set_new(req, "output_format", json_string("png"));
    r = run(API_EP_MULTIHEAD, req, &lim);
    double t2 = api__now_ms();
    ck_assert_int_eq(r.status, 200);
    fprintf(stderr, "maps: GPT-2 layer T=1024, 12 heads: top_k 8 reply %.0f ms, PNG (%zu bytes) %.0f ms\n",
            t1 - t0, r.raw.len, t2 - t1);
    reply_free(&r);
    json_decref(req);
}
END_TEST

static Suite *maps_suite(void) {
    Suite *s = suite_create("api_maps");
    const TTest *tests[] = {test_selection_and_topk_every_module,
                            test_topk_binary_formats,
                            test_png_cells,
                            test_png_from_accept,
                            test_svg_labels,
                            test_bad_selections,
                            test_large_topk_and_png_time, NULL};
    tcase_with(s, "maps", 120, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {maps_suite}};
