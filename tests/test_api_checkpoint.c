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
#include "tests/support/tmpdir.h"

#include <cblas.h> /* openblas_set_num_threads */

/* Loads golden checkpoint name as model name; returns the reference. */
static json_t *load_golden(api_models **models, const char *name) {
    json_t *ref = ckf_golden_ref(name);
    ckf_load_golden(models, name, json_string_value(json_object_get(ref, "file")),
                    json_string_value(json_object_get(ref, "spec_suffix")));
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
    json_t *ref = ckf_golden_ref(name);
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
    ckf_expect_logits(reply, ref, name, 100);
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
    ck_assert_str_eq(b.data, "{\"models\":[],\"tokenizers\":[],\"default_tokenizer\":null}");
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

/* One change to the golden tiny_f32's header. */
typedef struct {
    const char *file;          /* the variant's name in the test's directory */
    const char *name, *key;    /* the tensor (or __metadata__) and its key; key NULL: the tensor goes */
    const char *value;         /* the key's new value as JSON; NULL deletes the key */
    const char *rename;        /* or the tensor's new name */
    int recompute;             /* data_offsets laid out again (ckf_variant) */
    const char *refused;       /* what the loader's reason says (NULL: it loads) */
} header_case;

static void edit(json_t *hdr, void *p) {
    const header_case *c = p;
    json_t *t = json_object_get(hdr, c->name);
    if (c->rename) {
        json_object_set(hdr, c->rename, t);
        json_object_del(hdr, c->name);
    } else if (!c->key) {
        json_object_del(hdr, c->name);
    } else if (c->value) {
        json_t *v = json_loads(c->value, JSON_DECODE_ANY, NULL);
        ck_assert_msg(v != NULL, "%s: not JSON: %s", c->file, c->value);
        json_object_set_new(t, c->key, v);
    } else {
        json_object_del(t, c->key);
    }
}

/* Writes case c's variant into p; refused as it says. */
static void header_variant(char *p, size_t size, const header_case *c) {
    char src[512];
    ck_assert_int_eq(ckf_variant(ckf_golden(src, sizeof src, "tiny_f32.safetensors"),
                                 ttmp_path(p, size, c->file), edit, (void *)c, c->recompute), 0);
    if (c->refused) expect_file_refused(p, c->refused);
}

#define BIG40 "1099511627776" /* 1 << 40 */
static const header_case header_cases[] = {
    /* the header lies about offsets: a size that disagrees with the shape, an
     * overlap, a range past the data */
    {"lie.safetensors", "transformer.wpe.weight", "data_offsets", "[7808, 9852]", NULL, 0,
     "\"transformer.wpe.weight\": data_offsets [7808, 9852] hold 2044 bytes"},
    {"overlap.safetensors", "transformer.wpe.weight", "data_offsets", "[0, 2048]", NULL, 0, "overlaps"},
    {"range.safetensors", "transformer.ln_f.bias", "data_offsets", "[1, 2, 3]", NULL, 0,
     "data_offsets must be [begin, end]"},
    {"beyond.safetensors", "transformer.ln_f.bias", "data_offsets", "[" BIG40 ", 1099511627904]", NULL, 0,
     "run past the end of the data"},
    {"nooffsets.safetensors", "transformer.ln_f.bias", "data_offsets", NULL, NULL, 0,
     "needs a dtype string, a shape array and a data_offsets array"},
    /* wrong shapes: c_attn as nn.Linear [3C][C] instead of Conv1D [C][3C]; a
     * LayerNorm of the wrong width; wpe narrower than wte */
    {"shape.safetensors", "transformer.h.1.attn.c_attn.weight", "shape", "[96, 32]", NULL, 1,
     "tensor \"transformer.h.1.attn.c_attn.weight\" has shape [96, 32], "
     "GPT-2 with n_embd 32 needs [32, 96] (Conv1D: [in][out])"},
    {"shape2.safetensors", "transformer.ln_f.bias", "shape", "[2, 16]", NULL, 1,
     "\"transformer.ln_f.bias\" has shape [2, 16]"},
    {"shape3.safetensors", "transformer.wpe.weight", "shape", "[32, 16]", NULL, 1,
     "transformer.wpe.weight\" must be [n_positions][n_embd]"},
    {"overflow.safetensors", "transformer.ln_f.bias", "shape", "[4611686018427387904, 8]", NULL, 1,
     "its shape overflows"}, /* 1 << 62 */
    /* missing tensors */
    {"missing.safetensors", "transformer.h.1.mlp.c_fc.bias", NULL, NULL, NULL, 1,
     "tensor \"transformer.h.1.mlp.c_fc.bias\" is missing"},
    {"nowte.safetensors", "transformer.wte.weight", NULL, NULL, NULL, 1,
     "tensor \"transformer.wte.weight\" is missing"},
    {"nowpe.safetensors", "transformer.wpe.weight", NULL, NULL, NULL, 1,
     "tensor \"transformer.wpe.weight\" is missing"},
    /* dtypes: one the format does not know, one it knows that is no float */
    {"dtype.safetensors", "transformer.ln_f.weight", "dtype", "\"F33\"", NULL, 1, "unknown dtype \"F33\""},
    {"int.safetensors", "transformer.ln_f.weight", "dtype", "\"I32\"", NULL, 1,
     "has dtype I32: weights must be F32, F16 or BF16"},
    {"f64.safetensors", "transformer.ln_f.weight", "dtype", "\"F64\"", NULL, 1,
     "need 32 x 8"}, /* 128 bytes cannot hold 32 F64 */
    /* names and header keys outside the layout */
    {"name.safetensors", "transformer.h.0.ln_1.bias", NULL, NULL, "transformer.h.0.ln_3.bias", 0,
     "tensor \"transformer.h.0.ln_3.bias\" is not part of GPT-2's layout"},
    {"key.safetensors", "transformer.ln_f.bias", "strides", "[1]", NULL, 0, "unknown header key \"strides\""},
    {"meta.safetensors", "__metadata__", "n_head", "4", NULL, 0, "__metadata__.n_head is not a string"},
    /* n_head: not in the file and n_embd 32 is no multiple of 64; a bad one */
    {"noheads.safetensors", "__metadata__", NULL, NULL, NULL, 0, "give it as NAME=FILE:heads=N"},
    {"badheads.safetensors", "__metadata__", "n_head", "\"four\"", NULL, 0,
     "__metadata__.n_head \"four\" is not a head count"},
};

/* The golden file cut short or made longer: keep bytes of it (from_end:
 * its length plus keep), zeros past its end. */
static const struct {
    const char *file;
    long keep;
    int from_end;
    const char *refused[2];
} cut_cases[] = {
    /* truncated: in the data, in the header, before the length */
    {"cut.safetensors", -100, 1, {"run past the end of the data", "truncated"}},
    {"cut_header.safetensors", 60, 0, {"runs past the end of the file", NULL}},
    {"short.safetensors", 5, 0, {"too short", NULL}},
    /* bytes after the last tensor */
    {"long.safetensors", 4, 1, {"the tensors end at byte", NULL}},
};

/* Headers that are no safetensors header, and data of zeros. */
static const struct {
    const char *file, *header;
    size_t data_len;
    const char *refused;
} raw_cases[] = {
    {"json.safetensors", "{\"a\": [", 0, "the header is not JSON"},
    {"array.safetensors", "[1, 2]", 0, "the header is not a JSON object"},
    {"dup.safetensors", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "duplicate object key"},
    {"gap.safetensors", "{\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[4,8]}}", 8,
     "bytes [0, 4) of the data belong to no tensor"},
    {"neg.safetensors", "{\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[-1,1],\"data_offsets\":[0,4]}}", 4,
     "shape[0] is not a size"},
    {"empty.safetensors", "{}", 0, "tensor \"wte.weight\" is missing"},
};

/* Values: lm_head untied, NaN. */
static const struct {
    const char *file, *tensor;
    size_t i;
    float v;
    const char *refused;
} value_cases[] = {
    {"head.safetensors", "lm_head.weight", 5, 1.5f, "lm_head.weight differs from wte.weight"},
    {"nan.safetensors", "transformer.h.0.attn.c_proj.weight", 3, NAN,
     "h.0.attn.c_proj.weight holds NaN or infinity"},
};

static void expect_loads(const char *spec) {
    api_models *models = NULL;
    char why[768];
    ck_assert_msg(api_models_load(&models, spec, why, sizeof why) == 0, "%s", why);
    api_models_free(models);
}

/* The golden file's bytes changed: cut, longer, values patched. */
static void broken_bytes(void) {
    char src[512], p[256];
    size_t len;
    char *good = tfile_read(ckf_golden(src, sizeof src, "tiny_f32.safetensors"), &len);
    ck_assert_ptr_nonnull(good);
    char *longer = calloc(1, len + 8);
    ck_assert_ptr_nonnull(longer);
    memcpy(longer, good, len);
    for (size_t i = 0; i < sizeof cut_cases / sizeof cut_cases[0]; i++) {
        size_t n = (size_t)((cut_cases[i].from_end ? (long)len : 0) + cut_cases[i].keep);
        ck_assert_int_eq(ckf_write(ttmp_path(p, sizeof p, cut_cases[i].file), longer, n), 0);
        for (int k = 0; k < 2 && cut_cases[i].refused[k]; k++) expect_file_refused(p, cut_cases[i].refused[k]);
    }
    ck_assert_int_eq(ckf_write(ttmp_path(p, sizeof p, "huge.safetensors"),
                               "\xff\xff\xff\xff\xff\xff\xff\x7f{}", 10), 0);
    expect_file_refused(p, "runs past the end of the file");
    for (size_t i = 0; i < sizeof value_cases / sizeof value_cases[0]; i++) {
        ck_assert_int_eq(ckf_write(ttmp_path(p, sizeof p, value_cases[i].file), good, len), 0);
        ck_assert_int_eq(ckf_patch_f32(p, value_cases[i].tensor, value_cases[i].i, value_cases[i].v), 0);
        expect_file_refused(p, value_cases[i].refused);
    }
    free(longer);
    free(good);
}

START_TEST(broken_files) {
    char p[256], spec[300];
    /* the copy itself loads (the variants below differ by one thing) */
    header_variant(p, sizeof p, &(header_case){"same.safetensors", "none", NULL, NULL, NULL, 1, NULL});
    snprintf(spec, sizeof spec, "same=%s", p);
    expect_loads(spec);
    broken_bytes();
    for (size_t i = 0; i < sizeof header_cases / sizeof header_cases[0]; i++)
        header_variant(p, sizeof p, &header_cases[i]);
    /* without n_head in the file, :heads= gives it */
    ttmp_path(p, sizeof p, "noheads.safetensors");
    snprintf(spec, sizeof spec, "m=%s:heads=4", p);
    expect_loads(spec);
    snprintf(spec, sizeof spec, "m=%s:heads=5", p);
    ckf_expect_refused(spec, "n_embd must be divisible by n_head");
    static const char zeros[8];
    for (size_t i = 0; i < sizeof raw_cases / sizeof raw_cases[0]; i++) {
        ck_assert_int_eq(ckf_write_raw(ttmp_path(p, sizeof p, raw_cases[i].file), raw_cases[i].header,
                                       raw_cases[i].data_len ? zeros : NULL, raw_cases[i].data_len), 0);
        expect_file_refused(p, raw_cases[i].refused);
    }
    expect_file_refused("/nonexistent/model.safetensors", "cannot open");
    expect_file_refused(ttmp_dir(), "config.json: missing"); /* a folder without its config */
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
    const TTest *tests[] = {round_trip, request_errors, broken_files, specs, NULL};
    return suite_with("api_checkpoint", "checkpoint", 30, tests, ttmp_make, ttmp_remove);
}

const test_program TEST_PROGRAM = {.suites = {checkpoint_suite}};
