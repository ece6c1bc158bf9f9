/* test_api_checkpoint.c - Hugging Face GPT-2 checkpoints (api/checkpoint.c,
 * api/st_read.c): the golden checkpoints of tests/golden/ckpt/ (written by
 * PyTorch, F32, BF16 and F16, with and without the "transformer." prefix)
 * load and give PyTorch's logits through POST /model/gpt2 {"model": NAME};
 * every broken file is refused with a message naming the problem; requests
 * naming a model get 400s naming the field. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "tests/support/check_main.h"
#include "support/api_call.h"
#include "tests/support/ckpt_files.h"
#include "tests/support/files.h"

#include <cblas.h> /* openblas_set_num_threads */

static char tmpdir[64];

static void setup(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ckpt-test-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static char *tmp(char *out, size_t size, const char *name) {
    snprintf(out, size, "%s/%s", tmpdir, name);
    return out;
}

static json_t *golden_ref(const char *name) {
    char rel[64], path[512];
    snprintf(rel, sizeof rel, "%s.json", name);
    json_error_t je;
    json_t *j = json_load_file(ckf_golden(path, sizeof path, rel), 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", path, je.text);
    return j;
}

/* Loads golden checkpoint name as model name; returns the reference. */
static json_t *load_golden(api_models **models, const char *name) {
    json_t *ref = golden_ref(name);
    char path[512], spec[640], why[512];
    ckf_golden(path, sizeof path, json_string_value(json_object_get(ref, "file")));
    snprintf(spec, sizeof spec, "%s=%s%s", name, path,
             json_string_value(json_object_get(ref, "spec_suffix")));
    ck_assert_msg(api_models_load(models, spec, why, sizeof why) == 0, "%s: %s", spec, why);
    return ref;
}


static void expect_error(const api_models *models, const char *body, const char *code,
                         const char *field, const char *text) {
    json_t *j = ckf_call(models, body, 400);
    json_t *e = json_object_get(j, "error");
    ck_assert_str_eq(json_string_value(json_object_get(e, "code")), code);
    ck_assert_msg(json_is_string(json_object_get(e, "field")) &&
                      strcmp(json_string_value(json_object_get(e, "field")), field) == 0,
                  "field of %s: %s", body, json_dumps(e, 0));
    const char *msg = json_string_value(json_object_get(e, "message"));
    ck_assert_msg(strstr(msg, text) != NULL, "message \"%s\" lacks \"%s\"", msg, text);
    json_decref(j);
}

/* ==== Round trip: PyTorch writes, the server loads, logits agree ========== */

static void check_logits(const api_models *models, const char *name) {
    json_t *ref = golden_ref(name);
    json_t *rq = json_pack("{s:s, s:O, s:[s], s:s}", "model", name, "idx",
                           json_object_get(ref, "idx"), "return", "logits", "output_format", "flat");
    char *body = json_dumps(rq, 0);
    json_t *reply = ckf_call(models, body, 200);
    ck_assert_str_eq(json_string_value(json_object_get(reply, "model")), name);
    json_t *cfg = json_object_get(reply, "config"), *want_cfg = json_object_get(ref, "config");
    const char *key;
    json_t *v;
    json_object_foreach(want_cfg, key, v) {
        ck_assert_msg(json_equal(json_object_get(cfg, key), v), "%s: config.%s", name, key);
    }
    ck_assert_str_eq(json_string_value(json_object_get(cfg, "activation")), "gelu_new");
    json_t *got = json_object_get(json_object_get(reply, "logits"), "data");
    json_t *want = json_object_get(ref, "logits");
    ck_assert_uint_eq(json_array_size(got), json_array_size(want));
    ck_assert_uint_gt(json_array_size(want), 100);
    double worst = 0;
    for (size_t i = 0; i < json_array_size(want); i++) {
        double a = json_number_value(json_array_get(got, i));
        double b = json_number_value(json_array_get(want, i));
        double excess = fabs(a - b) - (1e-4 + 1e-3 * fabs(b));
        ck_assert_msg(excess <= 0, "%s: logits[%zu] %.9g, PyTorch %.9g", name, i, a, b);
        if (fabs(a - b) > worst) worst = fabs(a - b);
    }
    printf("%s: %zu logits within 1e-4 + 1e-3 rel of PyTorch (largest difference %.3g)\n", name,
           json_array_size(want), worst);
    free(body);
    json_decref(rq);
    json_decref(reply);
    json_decref(ref);
}

START_TEST(round_trip) {
    api_models *models = NULL;
    const char *names[] = {"tiny_f32", "tiny_bf16", "tiny_f16"};
    for (int i = 0; i < 3; i++) json_decref(load_golden(&models, names[i]));
    for (int i = 0; i < 3; i++) check_logits(models, names[i]);

    /* GET /models */
    api_buf b = {0};
    ck_assert_int_eq(api_models_json(&(api_limits){.models = models}, &b), 0);
    json_t *list = json_loads(b.data, 0, NULL);
    api_buf_free(&b);
    json_t *m = json_object_get(list, "models");
    ck_assert_uint_eq(json_array_size(m), 3);
    json_t *f32 = json_array_get(m, 0), *bf16 = json_array_get(m, 1), *f16 = json_array_get(m, 2);
    ck_assert_str_eq(json_string_value(json_object_get(f32, "name")), "tiny_f32");
    ck_assert_str_eq(json_string_value(json_object_get(f32, "file")), "tiny_f32.safetensors");
    ck_assert_str_eq(json_string_value(json_object_get(f32, "n_head_from")), "metadata");
    ck_assert(json_is_true(json_object_get(f32, "transformer_prefix")));
    ck_assert_str_eq(json_string_value(json_object_get(bf16, "n_head_from")), "n_embd/64");
    ck_assert_str_eq(json_string_value(json_object_get(bf16, "dtype")), "BF16");
    ck_assert_str_eq(json_string_value(json_object_get(f16, "n_head_from")), "option");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(f16, "config"), "n_head")), 4);
    /* parameters: what the file holds, lm_head and buffers excluded */
    ck_assert_int_eq(json_integer_value(json_object_get(f16, "parameters")),
                     40 * 24 + 8 * 24 + 3 * (12 * 24 * 24 + 13 * 24) + 2 * 24);
    json_decref(list);
    b = (api_buf){0};
    ck_assert_int_eq(api_models_json(NULL, &b), 0);
    ck_assert_str_eq(b.data, "{\"models\":[],\"tokenizers\":[]}");
    api_buf_free(&b);

    /* the model's maps and next_token, batch axis dropped for [T] */
    json_t *r = ckf_call(models, "{\"model\":\"tiny_f16\",\"idx\":[1,2,3],\"return\":[\"attn_weights\","
                             "\"next_token\",\"hidden_states\"]}", 200);
    ck_assert_uint_eq(json_array_size(json_object_get(r, "attn_weights")), 3);
    ck_assert_uint_eq(json_array_size(json_array_get(json_object_get(r, "attn_weights"), 0)), 4);
    ck_assert(json_is_integer(json_object_get(r, "next_token")));
    json_decref(r);
    api_models_free(models);
}
END_TEST

/* ==== Requests ============================================================ */

START_TEST(request_errors) {
    api_models *models = NULL;
    json_decref(load_golden(&models, "tiny_f32"));
    expect_error(models, "{\"model\":\"gpt3\",\"idx\":[1]}", "invalid_argument", "model",
                 "model \"gpt3\" is not loaded (loaded: \"tiny_f32\"");
    expect_error(NULL, "{\"model\":\"gpt2\",\"idx\":[1]}", "invalid_argument", "model",
                 "loaded: none");
    expect_error(models, "{\"model\":7,\"idx\":[1]}", "invalid_type", "model", "string");
    expect_error(models, "{\"model\":\"tiny_f32\",\"n_layer\":2,\"idx\":[1]}", "invalid_argument",
                 "n_layer", "leave n_layer out");
    expect_error(models, "{\"model\":\"tiny_f32\",\"init\":{\"seed\":1},\"idx\":[1]}",
                 "invalid_argument", "init", "brings its config and parameters");
    expect_error(models, "{\"model\":\"tiny_f32\",\"state_dict\":{},\"idx\":[1]}",
                 "invalid_argument", "state_dict", "leave state_dict out");
    expect_error(models, "{\"model\":\"tiny_f32\",\"idx\":[[1,61]]}", "invalid_argument",
                 "idx[0][1]", "vocab_size 61");
    expect_error(models, "{\"model\":\"tiny_f32\",\"idx\":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}",
                 "invalid_shape", "idx", "block_size 16");
    expect_error(models, "{\"model\":\"tiny_f32\"}", "missing_field", "idx", "idx is required");
    /* training uses GPT-2's dropout 0.1 at seed 003's places, reproducibly */
    json_t *a = ckf_call(models, "{\"model\":\"tiny_f32\",\"idx\":[1,2],\"training\":true,"
                             "\"dropout_seed\":5,\"return\":[\"logits\"]}", 200);
    json_t *b = ckf_call(models, "{\"model\":\"tiny_f32\",\"idx\":[1,2],\"training\":true,"
                             "\"dropout_seed\":5,\"return\":[\"logits\"]}", 200);
    json_t *c = ckf_call(models, "{\"model\":\"tiny_f32\",\"idx\":[1,2],\"return\":[\"logits\"]}", 200);
    ck_assert(json_equal(json_object_get(a, "logits"), json_object_get(b, "logits")));
    ck_assert(!json_equal(json_object_get(a, "logits"), json_object_get(c, "logits")));
    json_decref(a);
    json_decref(b);
    json_decref(c);
    api_models_free(models);
}
END_TEST

/* ==== Broken files ======================================================== */


static void expect_file_refused(const char *path, const char *text) {
    char spec[600];
    snprintf(spec, sizeof spec, "m=%s", path);
    ckf_expect_refused(spec, text);
}

typedef struct {
    const char *name, *key;
    json_t *value; /* stolen; NULL deletes the key (or the tensor when key is NULL) */
    const char *rename;
} edit_arg;

static void edit(json_t *hdr, void *p) {
    const edit_arg *a = p;
    json_t *t = json_object_get(hdr, a->name);
    if (a->rename) {
        json_object_set(hdr, a->rename, t);
        json_object_del(hdr, a->name);
    } else if (!a->key) {
        json_object_del(hdr, a->name);
    } else if (a->value) {
        json_object_set_new(t, a->key, a->value);
    } else {
        json_object_del(t, a->key);
    }
}

static void variant(const char *out, edit_arg a, int recompute) {
    char src[512];
    ck_assert_int_eq(ckf_variant(ckf_golden(src, sizeof src, "tiny_f32.safetensors"), out, edit,
                                 &a, recompute), 0);
}

START_TEST(broken_files) {
    char src[512], p[256];
    size_t len;
    char *good = tfile_read(ckf_golden(src, sizeof src, "tiny_f32.safetensors"), &len);
    ck_assert_ptr_nonnull(good);

    /* the copy itself loads (the variants below differ by one thing) */
    variant(tmp(p, sizeof p, "same.safetensors"), (edit_arg){"none", NULL, NULL, NULL}, 1);
    api_models *models = NULL;
    char spec[300], why[768];
    snprintf(spec, sizeof spec, "same=%s", p);
    ck_assert_msg(api_models_load(&models, spec, why, sizeof why) == 0, "%s", why);
    api_models_free(models);

    /* truncated: in the data, in the header, before the length */
    ck_assert_int_eq(ckf_write(tmp(p, sizeof p, "cut.safetensors"), good, len - 100), 0);
    expect_file_refused(p, "run past the end of the data");
    expect_file_refused(p, "truncated");
    ck_assert_int_eq(ckf_write(tmp(p, sizeof p, "cut_header.safetensors"), good, 60), 0);
    expect_file_refused(p, "runs past the end of the file");
    ck_assert_int_eq(ckf_write(tmp(p, sizeof p, "short.safetensors"), good, 5), 0);
    expect_file_refused(p, "too short");
    ck_assert_int_eq(ckf_write(tmp(p, sizeof p, "huge.safetensors"),
                               "\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10), 0);
    expect_file_refused(p, "runs past the end of the file");
    /* bytes after the last tensor */
    char *longer = malloc(len + 4);
    memcpy(longer, good, len);
    memset(longer + len, 0, 4);
    ck_assert_int_eq(ckf_write(tmp(p, sizeof p, "long.safetensors"), longer, len + 4), 0);
    expect_file_refused(p, "the tensors end at byte");
    free(longer);

    /* the header lies about offsets: a size that disagrees with the shape, an
     * overlap, a range past the data */
    variant(tmp(p, sizeof p, "lie.safetensors"),
            (edit_arg){"transformer.wpe.weight", "data_offsets", json_pack("[ii]", 7808, 9852), NULL}, 0);
    expect_file_refused(p, "\"transformer.wpe.weight\": data_offsets [7808, 9852] hold 2044 bytes");
    variant(tmp(p, sizeof p, "overlap.safetensors"),
            (edit_arg){"transformer.wpe.weight", "data_offsets", json_pack("[ii]", 0, 2048), NULL}, 0);
    expect_file_refused(p, "overlaps");
    variant(tmp(p, sizeof p, "range.safetensors"),
            (edit_arg){"transformer.ln_f.bias", "data_offsets",
                       json_pack("[IIi]", (json_int_t)1, (json_int_t)2, 3), NULL}, 0);
    expect_file_refused(p, "data_offsets must be [begin, end]");
    variant(tmp(p, sizeof p, "beyond.safetensors"),
            (edit_arg){"transformer.ln_f.bias", "data_offsets",
                       json_pack("[II]", (json_int_t)1 << 40, ((json_int_t)1 << 40) + 128), NULL}, 0);
    expect_file_refused(p, "run past the end of the data");
    variant(tmp(p, sizeof p, "nooffsets.safetensors"),
            (edit_arg){"transformer.ln_f.bias", "data_offsets", NULL, NULL}, 0);
    expect_file_refused(p, "needs a dtype string, a shape array and a data_offsets array");

    /* wrong shapes: c_attn as nn.Linear [3C][C] instead of Conv1D [C][3C]; a
     * LayerNorm of the wrong width; wpe narrower than wte */
    variant(tmp(p, sizeof p, "shape.safetensors"),
            (edit_arg){"transformer.h.1.attn.c_attn.weight", "shape", json_pack("[ii]", 96, 32), NULL}, 1);
    expect_file_refused(p, "tensor \"transformer.h.1.attn.c_attn.weight\" has shape [96, 32], "
                           "GPT-2 with n_embd 32 needs [32, 96] (Conv1D: [in][out])");
    variant(tmp(p, sizeof p, "shape2.safetensors"),
            (edit_arg){"transformer.ln_f.bias", "shape", json_pack("[ii]", 2, 16), NULL}, 1);
    expect_file_refused(p, "\"transformer.ln_f.bias\" has shape [2, 16]");
    variant(tmp(p, sizeof p, "shape3.safetensors"),
            (edit_arg){"transformer.wpe.weight", "shape", json_pack("[ii]", 32, 16), NULL}, 1);
    expect_file_refused(p, "transformer.wpe.weight\" must be [n_positions][n_embd]");
    variant(tmp(p, sizeof p, "overflow.safetensors"),
            (edit_arg){"transformer.ln_f.bias", "shape",
                       json_pack("[II]", (json_int_t)1 << 62, (json_int_t)8), NULL}, 1);
    expect_file_refused(p, "its shape overflows");

    /* missing tensors */
    variant(tmp(p, sizeof p, "missing.safetensors"),
            (edit_arg){"transformer.h.1.mlp.c_fc.bias", NULL, NULL, NULL}, 1);
    expect_file_refused(p, "tensor \"transformer.h.1.mlp.c_fc.bias\" is missing");
    variant(tmp(p, sizeof p, "nowte.safetensors"),
            (edit_arg){"transformer.wte.weight", NULL, NULL, NULL}, 1);
    expect_file_refused(p, "tensor \"transformer.wte.weight\" is missing");
    variant(tmp(p, sizeof p, "nowpe.safetensors"),
            (edit_arg){"transformer.wpe.weight", NULL, NULL, NULL}, 1);
    expect_file_refused(p, "tensor \"transformer.wpe.weight\" is missing");

    /* dtypes: one the format does not know, one it knows that is no float */
    variant(tmp(p, sizeof p, "dtype.safetensors"),
            (edit_arg){"transformer.ln_f.weight", "dtype", json_string("F33"), NULL}, 1);
    expect_file_refused(p, "unknown dtype \"F33\"");
    variant(tmp(p, sizeof p, "int.safetensors"),
            (edit_arg){"transformer.ln_f.weight", "dtype", json_string("I32"), NULL}, 1);
    expect_file_refused(p, "has dtype I32: weights must be F32, F16 or BF16");
    variant(tmp(p, sizeof p, "f64.safetensors"),
            (edit_arg){"transformer.ln_f.weight", "dtype", json_string("F64"), NULL}, 1);
    expect_file_refused(p, "need 32 x 8"); /* 128 bytes cannot hold 32 F64 */

    /* names and header keys outside the layout */
    variant(tmp(p, sizeof p, "name.safetensors"),
            (edit_arg){"transformer.h.0.ln_1.bias", NULL, NULL, "transformer.h.0.ln_3.bias"}, 0);
    expect_file_refused(p, "tensor \"transformer.h.0.ln_3.bias\" is not part of GPT-2's layout");
    variant(tmp(p, sizeof p, "key.safetensors"),
            (edit_arg){"transformer.ln_f.bias", "strides", json_pack("[i]", 1), NULL}, 0);
    expect_file_refused(p, "unknown header key \"strides\"");
    variant(tmp(p, sizeof p, "meta.safetensors"),
            (edit_arg){"__metadata__", "n_head", json_integer(4), NULL}, 0);
    expect_file_refused(p, "__metadata__.n_head is not a string");

    /* n_head: not in the file and n_embd 32 is no multiple of 64; a bad one */
    variant(tmp(p, sizeof p, "noheads.safetensors"), (edit_arg){"__metadata__", NULL, NULL, NULL}, 0);
    expect_file_refused(p, "give it as NAME=FILE:heads=N");
    snprintf(spec, sizeof spec, "m=%s:heads=4", p);
    models = NULL;
    ck_assert_msg(api_models_load(&models, spec, why, sizeof why) == 0, "%s", why);
    api_models_free(models);
    snprintf(spec, sizeof spec, "m=%s:heads=5", p);
    ckf_expect_refused(spec, "n_embd must be divisible by n_head");
    variant(tmp(p, sizeof p, "badheads.safetensors"),
            (edit_arg){"__metadata__", "n_head", json_string("four"), NULL}, 0);
    expect_file_refused(p, "__metadata__.n_head \"four\" is not a head count");

    /* values: lm_head untied, NaN */
    ck_assert_int_eq(ckf_write(tmp(p, sizeof p, "head.safetensors"), good, len), 0);
    ck_assert_int_eq(ckf_patch_f32(p, "lm_head.weight", 5, 1.5f), 0);
    expect_file_refused(p, "lm_head.weight differs from wte.weight");
    ck_assert_int_eq(ckf_write(tmp(p, sizeof p, "nan.safetensors"), good, len), 0);
    ck_assert_int_eq(ckf_patch_f32(p, "transformer.h.0.attn.c_proj.weight", 3, NAN), 0);
    expect_file_refused(p, "h.0.attn.c_proj.weight holds NaN or infinity");

    /* headers that are no safetensors header */
    ck_assert_int_eq(ckf_write_raw(tmp(p, sizeof p, "json.safetensors"), "{\"a\": [", NULL, 0), 0);
    expect_file_refused(p, "the header is not JSON");
    ck_assert_int_eq(ckf_write_raw(tmp(p, sizeof p, "array.safetensors"), "[1, 2]", NULL, 0), 0);
    expect_file_refused(p, "the header is not a JSON object");
    ck_assert_int_eq(ckf_write_raw(tmp(p, sizeof p, "dup.safetensors"),
                                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                                   "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
                                   "\0\0\0\0", 4), 0);
    expect_file_refused(p, "duplicate object key");
    ck_assert_int_eq(ckf_write_raw(tmp(p, sizeof p, "gap.safetensors"),
                                   "{\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[4,8]}}",
                                   "\0\0\0\0\0\0\0\0", 8), 0);
    expect_file_refused(p, "bytes [0, 4) of the data belong to no tensor");
    ck_assert_int_eq(ckf_write_raw(tmp(p, sizeof p, "neg.safetensors"),
                                   "{\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[-1,1],\"data_offsets\":[0,4]}}",
                                   "\0\0\0\0", 4), 0);
    expect_file_refused(p, "shape[0] is not a size");
    ck_assert_int_eq(ckf_write_raw(tmp(p, sizeof p, "empty.safetensors"), "{}", NULL, 0), 0);
    expect_file_refused(p, "tensor \"wte.weight\" is missing");
    expect_file_refused("/nonexistent/model.safetensors", "cannot open");
    expect_file_refused(tmpdir, "config.json: missing"); /* a folder without its config */
    free(good);
}
END_TEST

START_TEST(specs) {
    char path[512], spec[700], why[768];
    ckf_golden(path, sizeof path, "tiny_f32.safetensors");
    ckf_expect_refused(path, "expected NAME=DIR or NAME=FILE.safetensors");
    snprintf(spec, sizeof spec, "=%s", path);
    ckf_expect_refused(spec, "expected NAME=DIR or NAME=FILE.safetensors");
    snprintf(spec, sizeof spec, "a b=%s", path);
    ckf_expect_refused(spec, "NAME may hold letters, digits");
    ckf_expect_refused("a=", "the path is empty");
    snprintf(spec, sizeof spec, "a=%s:heads=x", path);
    ckf_expect_refused(spec, "\":heads=\" must end the spec with a positive integer");
    snprintf(spec, sizeof spec, "a=%s:heads=0", path);
    ckf_expect_refused(spec, "\":heads=\" must end the spec with a positive integer");
    api_models *models = NULL;
    snprintf(spec, sizeof spec, "gpt2-tiny_1.0=%s", path);
    ck_assert_msg(api_models_load(&models, spec, why, sizeof why) == 0, "%s", why);
    ck_assert_int_eq(api_models_load(&models, spec, why, sizeof why), -1);
    ck_assert_msg(strstr(why, "model \"gpt2-tiny_1.0\" is loaded already"), "%s", why);
    api_models_free(models);
    api_models_free(NULL);
}
END_TEST

static Suite *checkpoint_suite(void) {
    /* Bits depend on OpenBLAS's thread count: one thread, as the server runs it. */
    openblas_set_num_threads(1);
    Suite *s = suite_create("api_checkpoint");
    const TTest *tests[] = {round_trip, request_errors, broken_files, specs, NULL};
    TCase *tc = tcase_with(s, "checkpoint", 30, tests);
    tcase_add_checked_fixture(tc, setup, teardown);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {checkpoint_suite}};
