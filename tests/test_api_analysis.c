/* test_api_analysis.c - "analysis" on POST /model (api/inside/analysis.c
 * over core's attn_lm_outputs.analysis):
 *
 *   every analysis of every file of tests/golden/analysis/ (PyTorch:
 *     TransformerLens's head detector, Abnar & Zuidema's rollout, ablated
 *     forwards with hooks; generate_analysis.py) through api_handle with the
 *     file's weights as a state_dict, [B][T] and [T] requests, within
 *     1e-4 + 1e-3 |want|, and importance beside "ablate"; the same for a
 *     decoder family's model folder (tests/golden/analysis/families/: one
 *     file for each folder of tests/golden/families/ - Llama, Mistral,
 *     Qwen 2 and 3, SmolLM2, Pythia, Gemma 3; grouped queries scored per
 *     query head, sliding windows - loaded as --model loads it, against
 *     families.py's forward);
 *   a model from a seed, a loaded checkpoint and the same weights as a
 *     state_dict give the same bytes; nested and flat agree; requests and
 *     replies valid for the OpenAPI document;
 *   the memory (one block's maps, not every block's) and the work (413
 *     naming analysis) planned; every refusal names its field.
 * Run from the repository root.
 */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "core/lm.h"
#include "tests/support/api_call.h"
#include "tests/support/check_main.h"
#include "tests/support/ckpt_files.h"
#include "tests/support/gpt2_files.h"
#include "tests/support/jschema.h"
#include "tests/support/openapi_doc.h"

#include <cblas.h> /* openblas_set_num_threads */

#define ATOL 1e-4
#define RTOL 1e-3
#define ALL "[\"entropy\",\"sink\",\"previous_token\",\"duplicate_token\",\"induction\",\"rollout\",\"importance\"]"
#define SMALL "\"vocab_size\":11,\"block_size\":8,\"n_layer\":2,\"n_head\":2,\"n_embd\":8,\"init\":{\"seed\":3}"

static gpt2_files g_files, g_families;

/* ==== A golden file ========================================================= */

typedef struct {
    char name[64];
    size_t n;
    float *data;
} tensor;

typedef struct {
    attn_lm_config cfg;
    int B, T;
    char ablate[128]; /* "1 0 mean; 2 1 zero" */
    char folder[256]; /* a decoder family's: its model folder */
    tensor t[32];
    int n;
} acase;

static const tensor *find(const acase *g, const char *name) {
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->t[i].name, name) == 0) return &g->t[i];
    return NULL;
}

static void acase_load(const char *path, acase *g) {
    *g = (acase){0};
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *line = NULL, key[64], dtype[8];
    size_t cap = 0, count;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = 0;
        if (sscanf(line, "tensor %63s %7s %zu", key, dtype, &count) == 3) {
            tensor *t = &g->t[g->n++];
            snprintf(t->name, sizeof t->name, "%s", key);
            t->n = count;
            t->data = malloc(count ? count * 4 : 4);
            ck_assert(t->data && fread(t->data, 4, count, f) == count && fgetc(f) == '\n');
            continue;
        }
        if (sscanf(line, "%63s", key) != 1) continue;
        const char *val = line + strlen(key) + (line[strlen(key)] ? 1 : 0);
        if (gpt2_config_key(&g->cfg, key, val)) continue;
        if (!strcmp(key, "B")) g->B = atoi(val);
        else if (!strcmp(key, "T")) g->T = atoi(val);
        else if (!strcmp(key, "ablate")) snprintf(g->ablate, sizeof g->ablate, "%s", val);
        else if (!strcmp(key, "folder")) snprintf(g->folder, sizeof g->folder, "%s", val);
    }
    free(line);
    fclose(f);
}

static void acase_free(acase *g) {
    for (int i = 0; i < g->n; i++) free(g->t[i].data);
}

/* The request's model: the config under the row's names, the state_dict
 * (core's entries and shapes over the file's parameters), idx [B][T] or,
 * for one row, [T]. */
static json_t *model_request(const acase *g, const attn_lm_plan *p) {
    json_t *r = json_object(), *sd = json_object();
    const attn_arch_hparam *hp;
    int n = attn_arch_hparams(g->cfg.arch, &hp);
    json_object_set_new(r, "module", json_string(attn_arch_name(g->cfg.arch)));
    for (int i = 0; i < n; i++) {
        if (hp[i].name == NULL) continue;
        double v = attn_lm_config_get(&g->cfg, hp[i].id);
        attn_hp_type type = attn_hparam_type(hp[i].id);
        json_object_set_new(r, hp[i].name, type == ATTN_HP_BOOL   ? json_boolean(v != 0.0)
                                           : type == ATTN_HP_REAL ? json_real(v)
                                           : type == ATTN_HP_ACT  ? json_string(attn_act_name((attn_act)v))
                                                                  : json_integer((json_int_t)v));
    }
    const float *params = find(g, "params")->data;
    for (int i = 0; i < p->param_count; i++) {
        attn_param e;
        ck_assert_int_eq(attn_lm_param_get(p, i, &e), ATTN_OK);
        json_t *data = json_array(), *shape = json_array();
        for (size_t k = 0; k < e.count; k++) json_array_append_new(data, json_real(params[e.offset + k]));
        for (int d = 0; d < e.rank; d++) json_array_append_new(shape, json_integer(e.shape[d]));
        json_object_set_new(sd, e.name, json_pack("{s:o, s:o}", "shape", shape, "data", data));
    }
    json_object_set_new(r, "state_dict", sd);
    const float *raw = find(g, "idx")->data;
    const int32_t *ids = (const int32_t *)raw;
    json_t *idx = json_array();
    for (int b = 0; b < g->B; b++) {
        json_t *row = g->B > 1 ? json_array() : idx;
        for (int t = 0; t < g->T; t++) json_array_append_new(row, json_integer(ids[b * g->T + t]));
        if (g->B > 1) json_array_append_new(idx, row);
    }
    json_object_set_new(r, "idx", idx);
    return r;
}

/* "1 0 mean; 2 1 zero" as the request's "ablate". */
static json_t *ablate_json(const char *text) {
    json_t *a = json_array();
    char method[8];
    int l, h, used;
    while (sscanf(text, " %d %d %7[a-z]%n", &l, &h, method, &used) == 3) {
        json_array_append_new(a, json_pack("{s:i, s:i, s:s}", "layer", l, "head", h, "method", method));
        text += used;
        while (*text == ';' || *text == ' ') text++;
    }
    return a;
}

/* Every number of a nested array, in order. */
static size_t flatten(const json_t *j, double *out, size_t n, size_t cap) {
    if (!json_is_array(j)) {
        ck_assert_uint_lt(n, cap);
        out[n] = json_number_value(j);
        return n + 1;
    }
    for (size_t i = 0; i < json_array_size(j); i++) n = flatten(json_array_get(j, i), out, n, cap);
    return n;
}

static void expect_tensor(const char *what, const json_t *got, const tensor *want) {
    ck_assert_msg(got != NULL && want != NULL, "%s missing", what);
    double *v = malloc((want->n + 1) * sizeof *v);
    size_t n = flatten(got, v, 0, want->n + 1);
    ck_assert_msg(n == want->n, "%s: %zu values, PyTorch %zu", what, n, want->n);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabs(v[i] - want->data[i]) <= ATOL + RTOL * fabs(want->data[i]),
                      "%s[%zu]: server %.9g, PyTorch %.9g", what, i, v[i], (double)want->data[i]);
    free(v);
}

/* ==== Against PyTorch ====================================================== */

START_TEST(golden_replies) {
    acase g;
    acase_load(g_files.paths[_i], &g);
    attn_lm_plan p;
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_plan_make(&g.cfg, g.B, g.T, 0, &p, &err), ATTN_OK);
    json_t *r = model_request(&g, &p);
    char *body = tapi_body(json_incref(r), "{\"analysis\":" ALL ",\"return\":[]}");
    json_t *j = tapi_call(API_EP_MODEL, body, NULL, 200);
    const json_t *an = json_object_get(j, "analysis");
    ck_assert_int_eq(json_object_size(an), ATTN_ANALYSIS_COUNT);
    for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++) {
        char name[64];
        const char *short_name = attn_analysis_get((attn_analysis)a)->name;
        snprintf(name, sizeof name, "analysis.%s", short_name);
        expect_tensor(name, json_object_get(an, short_name), find(&g, name));
    }
    /* the reply's order is the table's */
    const char *first;
    json_t *v;
    int k = 0;
    json_object_foreach((json_t *)an, first, v) {
        ck_assert_str_eq(first, attn_analysis_get((attn_analysis)k++)->name);
    }
    json_decref(j);
    free(body);
    /* importance beside ablate: every ablated run has the request's ablations too */
    json_t *extra = json_pack("{s:[s], s:[], s:o}", "analysis", "importance", "return", "ablate",
                              ablate_json(g.ablate));
    char *text = json_dumps(extra, JSON_COMPACT);
    body = tapi_body(r, text);
    j = tapi_call(API_EP_MODEL, body, NULL, 200);
    expect_tensor("importance_ablated", json_object_get(json_object_get(j, "analysis"), "importance"),
                  find(&g, "importance_ablated"));
    printf("%s: %d analyses and importance with ablate within tolerance\n", g_files.paths[_i],
           ATTN_ANALYSIS_COUNT);
    json_decref(j);
    json_decref(extra);
    free(text);
    free(body);
    acase_free(&g);
}
END_TEST

/* idx of a golden file as JSON: [[...], ...], or [...] for one row. */
static json_t *ids_json(const acase *g) {
    const int32_t *ids = (const int32_t *)find(g, "idx")->data;
    json_t *idx = json_array();
    for (int b = 0; b < g->B; b++) {
        json_t *row = g->B > 1 ? json_array() : idx;
        for (int t = 0; t < g->T; t++) json_array_append_new(row, json_integer(ids[b * g->T + t]));
        if (g->B > 1) json_array_append_new(idx, row);
    }
    return idx;
}

/* A decoder family's model folder loaded as --model loads it (grouped
 * queries, a sliding window): every analysis, and importance beside
 * ablate, against families.py's forward with hooks. */
START_TEST(golden_families) {
    acase g;
    acase_load(g_families.paths[_i], &g);
    api_models *models = NULL;
    char spec[400], why[512];
    snprintf(spec, sizeof spec, "fam=%s", g.folder);
    ck_assert_msg(api_models_load(&models, spec, why, sizeof why) == 0, "%s: %s", spec, why);
    for (int k = 0; k < 2; k++) {
        json_t *r = json_pack("{s:s, s:o, s:[], s:o}", "model", "fam", "idx", ids_json(&g), "return", "analysis",
                              k ? json_pack("[s]", "importance") : json_loads(ALL, 0, NULL));
        if (k) json_object_set_new(r, "ablate", ablate_json(g.ablate));
        char *body = tapi_body(r, NULL);
        json_t *j = ckf_call(models, body, 200);
        const json_t *an = json_object_get(j, "analysis");
        for (int a = 0; a < ATTN_ANALYSIS_COUNT && !k; a++) {
            char name[64];
            snprintf(name, sizeof name, "analysis.%s", attn_analysis_get((attn_analysis)a)->name);
            expect_tensor(name, json_object_get(an, attn_analysis_get((attn_analysis)a)->name), find(&g, name));
        }
        if (k) expect_tensor("importance_ablated", json_object_get(an, "importance"), find(&g, "importance_ablated"));
        json_decref(j);
        free(body);
    }
    printf("%s (%s): %d analyses and importance with ablate within tolerance\n", g_families.paths[_i], g.folder,
           ATTN_ANALYSIS_COUNT);
    api_models_free(models);
    acase_free(&g);
}
END_TEST

/* Every model folder of tests/golden/families/ (each decoder family) has
 * its analyses' file: a new family's folder without one fails here. */
START_TEST(files_exist) {
    ck_assert_msg(g_files.n >= 3, "expected the files of tests/golden/analysis (found %d)", g_files.n);
    DIR *d = opendir("tests/golden/families");
    ck_assert_ptr_nonnull(d);
    int folders = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[512];
        snprintf(path, sizeof path, "tests/golden/analysis/families/%s.gpt2", e->d_name);
        ck_assert_msg(access(path, R_OK) == 0, "%s missing: run tests/golden/generate_analysis.py", path);
        folders++;
    }
    closedir(d);
    ck_assert_int_ge(folders, 17);
    ck_assert_int_eq(g_families.n, folders);
}
END_TEST

/* ==== Every way of giving the model ======================================== */

static char *dump_analysis(const json_t *reply) {
    char *s = json_dumps(json_object_get(reply, "analysis"), JSON_COMPACT);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* A seed's model and its state_dict; a loaded checkpoint and its
 * state_dict: the same bytes each. */
START_TEST(every_source) {
    json_t *seed = tapi_call(API_EP_MODEL, "{" SMALL ",\"idx\":[[1,2,3,1,2,3],[4,4,5,6,4,4]],"
                             "\"analysis\":" ALL ",\"return\":[\"params\"]}", NULL, 200);
    json_t *r = json_pack("{s:i, s:i, s:i, s:i, s:i, s:O, s:[[i,i,i,i,i,i],[i,i,i,i,i,i]], s:o, s:[]}",
                          "vocab_size", 11, "block_size", 8, "n_layer", 2, "n_head", 2, "n_embd", 8,
                          "state_dict", json_object_get(seed, "params"), "idx", 1, 2, 3, 1, 2, 3, 4, 4,
                          5, 6, 4, 4, "analysis", json_loads(ALL, 0, NULL), "return");
    char *body = tapi_body(r, NULL);
    json_t *sd = tapi_call(API_EP_MODEL, body, NULL, 200);
    char *a = dump_analysis(seed), *b = dump_analysis(sd);
    ck_assert_str_eq(a, b);
    free(a), free(b), free(body);
    json_decref(seed), json_decref(sd);

    api_models *models = NULL;
    ckf_load_golden(&models, "tiny", "tiny_f32.safetensors", "");
    json_t *loaded = ckf_call(models, "{\"model\":\"tiny\",\"idx\":[3,1,4,1,5,3,1],\"analysis\":" ALL
                              ",\"return\":[\"params\"]}", 200);
    r = json_deep_copy(json_object_get(loaded, "config"));
    json_object_set(r, "state_dict", json_object_get(loaded, "params"));
    body = tapi_body(r, "{\"idx\":[3,1,4,1,5,3,1],\"analysis\":" ALL ",\"return\":[]}");
    sd = tapi_call(API_EP_MODEL, body, NULL, 200);
    a = dump_analysis(loaded), b = dump_analysis(sd);
    ck_assert_str_eq(a, b);
    ck_assert_int_eq(json_object_size(json_object_get(loaded, "analysis")), ATTN_ANALYSIS_COUNT);
    free(a), free(b), free(body);
    json_decref(loaded), json_decref(sd);
    api_models_free(models);
}
END_TEST

/* nested and flat hold the same numbers; requests and replies (nested,
 * flat, base64; [T] and [B][T]) are valid for the OpenAPI document. */
START_TEST(formats_and_document) {
    json_t *doc = openapi_doc();
    const json_t *rq = json_object_get(json_object_get(json_object_get(json_object_get(json_object_get(
        json_object_get(json_object_get(doc, "components"), "requestBodies"), "Gpt2Request"), "content"),
        "application/json"), "schema"), "properties");
    const json_t *en = json_object_get(json_object_get(json_object_get(rq, "analysis"), "items"), "enum");
    ck_assert_int_eq(json_array_size(en), ATTN_ANALYSIS_COUNT);
    for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++)
        ck_assert_str_eq(json_string_value(json_array_get(en, (size_t)a)),
                         attn_analysis_get((attn_analysis)a)->name);
    const json_t *rq_schema = json_object_get(json_object_get(json_object_get(json_object_get(
        json_object_get(json_object_get(doc, "components"), "requestBodies"), "Gpt2Request"), "content"),
        "application/json"), "schema");
    const json_t *rep_schema = json_object_get(json_object_get(json_object_get(json_object_get(
        json_object_get(json_object_get(json_object_get(json_object_get(doc, "paths"), "/model"), "post"),
        "responses"), "200"), "content"), "application/json"), "schema");
    ck_assert(rq_schema && rep_schema);
    const char *formats[] = {"nested", "flat", "base64"}, *idx[] = {"[1,2,3,1,2]", "[[1,2,1],[3,3,3]]"};
    for (int i = 0; i < 2; i++)
        for (int f = 0; f < 3; f++) {
            char body[512];
            snprintf(body, sizeof body, "{" SMALL ",\"idx\":%s,\"analysis\":" ALL ",\"output_format\":\"%s\"}",
                     idx[i], formats[f]);
            json_t *req = json_loads(body, 0, NULL), *rep = tapi_call(API_EP_MODEL, body, NULL, 200);
            jschema_error e;
            ck_assert_msg(jschema_validate(doc, rq_schema, req, &e) == JSCHEMA_VALID, "request: %s at %s",
                          e.message, e.path);
            ck_assert_msg(jschema_validate(doc, rep_schema, rep, &e) == JSCHEMA_VALID, "reply %s: %s at %s",
                          formats[f], e.message, e.path);
            if (f == 1) { /* flat: data in the nested reply's order */
                snprintf(body, sizeof body, "{" SMALL ",\"idx\":%s,\"analysis\":" ALL "}", idx[i]);
                json_t *nested = tapi_call(API_EP_MODEL, body, NULL, 200);
                const char *name;
                json_t *t;
                json_object_foreach(json_object_get(rep, "analysis"), name, t) {
                    double v[200];
                    size_t n = flatten(json_object_get(json_object_get(nested, "analysis"), name), v, 0, 200);
                    const json_t *data = json_object_get(t, "data");
                    ck_assert_uint_eq(n, json_array_size(data));
                    for (size_t k = 0; k < n; k++) ck_assert(v[k] == json_number_value(json_array_get(data, k)));
                }
                json_decref(nested);
            }
            json_decref(req), json_decref(rep);
        }
    json_decref(doc);
}
END_TEST

/* ==== What is held, what it costs ========================================== */

static size_t reserved_for(const char *fields) {
    char body[512];
    snprintf(body, sizeof body, "{\"vocab_size\":11,\"block_size\":64,\"n_layer\":4,\"n_head\":2,"
             "\"n_embd\":8,\"init\":{\"seed\":3},\"idx\":[%s],%s}",
             "1,2,3,4,5,6,7,8,9,10,1,2,3,4,5,6,7,8,9,10,1,2,3,4,5,6,7,8,9,10,1,2", fields);
    return tapi_reserved(API_EP_MODEL, body, NULL);
}

/* A head score holds one block's maps at a time (H T^2), not every block's
 * (n_layer H T^2 with attn_weights); the reply holds n_layer H numbers. */
START_TEST(only_one_block_held) {
    size_t none = reserved_for("\"return\":[\"next_token\"]");
    size_t sink = reserved_for("\"return\":[\"next_token\"],\"analysis\":[\"sink\"]");
    size_t maps = reserved_for("\"return\":[\"attn_weights\"]");
    size_t block = 2 * 32 * 32 * sizeof(float);
    ck_assert_uint_ge(sink - none, block);
    ck_assert_uint_lt(sink - none, 2 * block);
    ck_assert_uint_gt(maps - none, 4 * block);
}
END_TEST

/* importance's runs count against --max-work, named "analysis". */
START_TEST(work_is_counted) {
    api_limits lim = {.max_elements = 100000000, .max_work = 20000};
    json_decref(tapi_call(API_EP_MODEL, "{" SMALL ",\"idx\":[1,2,3,4]}", &lim, 200));
    tapi_expect_field(API_EP_MODEL, "{" SMALL ",\"idx\":[1,2,3,4],\"analysis\":[\"importance\"]}", &lim,
                      413, "analysis");
}
END_TEST

START_TEST(refusals) {
    static const struct {
        const char *fields, *code, *field;
    } bad[] = {
        {"\"idx\":[1,2],\"analysis\":\"entropy\"", "invalid_type", "analysis"},
        {"\"idx\":[1,2],\"analysis\":[\"entropy\",\"heads\"]", "invalid_argument", "analysis[1]"},
        {"\"idx\":[1,2],\"analysis\":[3]", "invalid_type", "analysis[0]"},
        {"\"idx\":[1,2],\"analysis\":[\"importance\"],\"training\":true", "invalid_argument", "analysis"},
        {"\"idx\":[4],\"analysis\":[\"importance\"]", "invalid_argument", "analysis"},
        {"\"idx\":[1,2],\"analysis\":[\"sink\"],\"generate\":{\"max_new_tokens\":2}", "invalid_argument",
         "generate"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char body[512];
        snprintf(body, sizeof body, "{" SMALL ",%s}", bad[i].fields);
        json_t *j = tapi_call(API_EP_MODEL, body, NULL, 400);
        const json_t *err = json_object_get(j, "error");
        ck_assert_msg(strcmp(json_string_value(json_object_get(err, "code")), bad[i].code) == 0 &&
                      strcmp(json_string_value(json_object_get(err, "field")), bad[i].field) == 0,
                      "%s: %s on %s (%s)", bad[i].fields, json_string_value(json_object_get(err, "code")),
                      json_string_value(json_object_get(err, "field")),
                      json_string_value(json_object_get(err, "message")));
        json_decref(j);
    }
    /* the message lists the names; a map analysis in training mode is fine */
    json_t *j = tapi_call(API_EP_MODEL, "{" SMALL ",\"idx\":[1],\"analysis\":[\"x\"]}", NULL, 400);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_object_get(j, "error"), "message")),
                                 "entropy, sink, previous_token, duplicate_token, induction, rollout, importance"));
    json_decref(j);
    json_decref(tapi_call(API_EP_MODEL, "{" SMALL ",\"idx\":[1,2],\"training\":true,\"analysis\":[\"rollout\"]}",
                          NULL, 200));
}
END_TEST

/* ==== The suite ============================================================ */

static Suite *suite(void) {
    openblas_set_num_threads(1);
    const char *dirs[] = {"tests/golden/analysis"}, *fam_dirs[] = {"tests/golden/analysis/families"};
    gpt2_files_list(&g_files, dirs, 1);
    gpt2_files_list(&g_families, fam_dirs, 1);
    Suite *s = suite_create("api_analysis");
    const TTest *tests[] = {files_exist, every_source, formats_and_document, only_one_block_held,
                            work_is_counted, refusals, NULL};
    TCase *tc = tcase_with(s, "analysis", 30, tests);
    if (g_files.n > 0) tcase_add_loop_test(tc, golden_replies, 0, g_files.n);
    if (g_families.n > 0) tcase_add_loop_test(tc, golden_families, 0, g_families.n);
    return s;
}

static void free_files(void) {
    gpt2_files_free(&g_files);
    gpt2_files_free(&g_families);
}

const test_program TEST_PROGRAM = {.suites = {suite}, .after = free_files};
