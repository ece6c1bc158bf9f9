/* ckpt_files.c - see ckpt_files.h. */
#include "ckpt_files.h"
#include "api_call.h"
#include "files.h"

#include <check.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ckf_write(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

int ckf_write_raw(const char *path, const char *header, const void *data, size_t data_len) {
    size_t n = strlen(header), padded = (n + 7) / 8 * 8;
    uint8_t *b = malloc(8 + padded + data_len + 1);
    if (!b) return -1;
    for (int k = 0; k < 8; k++) b[k] = (uint8_t)((uint64_t)padded >> (8 * k));
    memcpy(b + 8, header, n);
    memset(b + 8 + n, ' ', padded - n);
    if (data_len) memcpy(b + 8 + padded, data, data_len);
    int rc = ckf_write(path, b, 8 + padded + data_len);
    free(b);
    return rc;
}

/* The header and data of a well-formed file. */
static json_t *open_file(const char *path, char **file, size_t *len_out, const uint8_t **data) {
    size_t len = 0;
    *file = tfile_read(path, &len);
    *len_out = len;
    if (!*file || len < 8) return NULL;
    uint64_t n = 0;
    for (int k = 7; k >= 0; k--) n = n << 8 | (uint8_t)(*file)[k];
    *data = (const uint8_t *)*file + 8 + n;
    return json_loadb(*file + 8, (size_t)n, 0, NULL);
}

int ckf_variant(const char *src, const char *dst, void (*edit)(json_t *, void *), void *arg,
                int recompute) {
    char *file;
    const uint8_t *data;
    size_t len;
    json_t *orig = open_file(src, &file, &len, &data);
    if (!orig) {
        free(file);
        return -1;
    }
    json_t *hdr = json_deep_copy(orig);
    if (edit) edit(hdr, arg);
    size_t data_len = 0;
    const char *key;
    json_t *v;
    json_object_foreach(orig, key, v) {
        json_t *off = json_object_get(v, "data_offsets");
        size_t end = off ? (size_t)json_integer_value(json_array_get(off, 1)) : 0;
        if (end > data_len) data_len = end;
    }
    uint8_t *out = malloc(data_len + 1);
    size_t at = 0;
    if (recompute) {
        /* in the original's order of offsets: every tensor still in the header */
        for (size_t pos = 0; pos < data_len;) {
            const char *next = NULL;
            size_t b = 0, e = 0;
            json_object_foreach(orig, key, v) {
                json_t *off = json_object_get(v, "data_offsets");
                if (off && (size_t)json_integer_value(json_array_get(off, 0)) == pos &&
                    (size_t)json_integer_value(json_array_get(off, 1)) > pos) {
                    next = key;
                    b = pos;
                    e = (size_t)json_integer_value(json_array_get(off, 1));
                }
            }
            if (!next) break;
            json_t *nv = json_object_get(hdr, next);
            if (nv) {
                memcpy(out + at, data + b, e - b);
                json_object_set_new(nv, "data_offsets",
                                    json_pack("[II]", (json_int_t)at, (json_int_t)(at + e - b)));
                at += e - b;
            }
            pos = e;
        }
        /* zero-size tensors keep [at, at] */
        json_object_foreach(hdr, key, v) {
            json_t *off = json_object_get(v, "data_offsets");
            if (off && json_integer_value(json_array_get(off, 0)) ==
                           json_integer_value(json_array_get(off, 1)) &&
                json_object_get(orig, key))
                json_object_set_new(v, "data_offsets",
                                    json_pack("[II]", (json_int_t)at, (json_int_t)at));
        }
    } else {
        memcpy(out, data, data_len);
        at = data_len;
    }
    char *text = json_dumps(hdr, JSON_COMPACT | JSON_PRESERVE_ORDER);
    int rc = text ? ckf_write_raw(dst, text, out, at) : -1;
    free(text);
    free(out);
    json_decref(hdr);
    json_decref(orig);
    free(file);
    return rc;
}

int ckf_patch_f32(const char *path, const char *name, size_t i, float v) {
    char *file;
    const uint8_t *data;
    size_t len;
    json_t *hdr = open_file(path, &file, &len, &data);
    json_t *off = hdr ? json_object_get(json_object_get(hdr, name), "data_offsets") : NULL;
    int rc = -1;
    if (off) {
        size_t at = (size_t)(data - (const uint8_t *)file) +
                    (size_t)json_integer_value(json_array_get(off, 0)) + 4 * i;
        memcpy(file + at, &v, 4);
        rc = ckf_write(path, file, len);
    }
    json_decref(hdr);
    free(file);
    return rc;
}

/* ==== Random models ======================================================= */

typedef struct {
    json_t *hdr;
    float *data;
    size_t n, cap;
    unsigned state;
    int zeros;      /* no data kept: every value 0, a hole in the file */
} builder;

static float rnd(builder *b, float scale) {
    b->state = b->state * 1664525u + 1013904223u;
    return scale * ((float)(b->state >> 8) / 16777216.0f - 0.5f);
}

static int add(builder *b, const char *name, int d0, int d1, float base, float scale) {
    size_t n = (size_t)d0 * (size_t)(d1 ? d1 : 1);
    if (!b->zeros && b->n + n > b->cap) {
        size_t cap = (b->n + n) * 2;
        float *d = realloc(b->data, cap * sizeof *d);
        if (!d) return -1;
        b->data = d, b->cap = cap;
    }
    for (size_t i = 0; !b->zeros && i < n; i++) b->data[b->n + i] = base + rnd(b, scale);
    json_t *shape = d1 ? json_pack("[ii]", d0, d1) : json_pack("[i]", d0);
    json_object_set_new(b->hdr, name,
                        json_pack("{s:s, s:o, s:[II]}", "dtype", "F32", "shape", shape,
                                  "data_offsets", (json_int_t)(4 * b->n),
                                  (json_int_t)(4 * (b->n + n))));
    b->n += n;
    return 0;
}

static int write_model(const char *path, int V, int P, int L, int C, int H, unsigned seed, int zeros) {
    builder b = {.hdr = json_object(), .state = seed, .zeros = zeros};
    char heads[16];
    snprintf(heads, sizeof heads, "%d", H);
    json_object_set_new(b.hdr, "__metadata__", json_pack("{s:s, s:s}", "format", "pt", "n_head", heads));
    /* one call per statement: the order of the calls is the order of the data */
    int rc = add(&b, "wte.weight", V, C, 0, 1);
    rc |= add(&b, "wpe.weight", P, C, 0, 1);
    const struct {
        const char *suffix;
        int d0, d1; /* in multiples of C (0: none) */
        float base, scale;
    } block[] = {{"ln_1.weight", 1, 0, 1, 0.2f},        {"ln_1.bias", 1, 0, 0, 0.2f},
                 {"attn.c_attn.weight", 1, 3, 0, 0.4f}, {"attn.c_attn.bias", 3, 0, 0, 0.2f},
                 {"attn.c_proj.weight", 1, 1, 0, 0.4f}, {"attn.c_proj.bias", 1, 0, 0, 0.2f},
                 {"ln_2.weight", 1, 0, 1, 0.2f},        {"ln_2.bias", 1, 0, 0, 0.2f},
                 {"mlp.c_fc.weight", 1, 4, 0, 0.4f},    {"mlp.c_fc.bias", 4, 0, 0, 0.2f},
                 {"mlp.c_proj.weight", 4, 1, 0, 0.2f},  {"mlp.c_proj.bias", 1, 0, 0, 0.2f}};
    for (int l = 0; l < L; l++)
        for (size_t k = 0; k < sizeof block / sizeof block[0]; k++) {
            char n[64];
            snprintf(n, sizeof n, "h.%d.%s", l, block[k].suffix);
            rc |= add(&b, n, block[k].d0 * C, block[k].d1 * C, block[k].base, block[k].scale);
        }
    rc |= add(&b, "ln_f.weight", C, 0, 1, 0.2f);
    rc |= add(&b, "ln_f.bias", C, 0, 0, 0.2f);
    char *text = rc ? NULL : json_dumps(b.hdr, JSON_COMPACT | JSON_PRESERVE_ORDER);
    rc = text ? ckf_write_raw(path, text, b.data, zeros ? 0 : b.n * sizeof *b.data) : -1;
    if (rc == 0 && zeros) /* the data as a hole: the file's length, nothing written */
        rc = truncate(path, (off_t)(8 + (strlen(text) + 7) / 8 * 8 + b.n * sizeof(float)));
    free(text);
    free(b.data);
    json_decref(b.hdr);
    return rc;
}

int ckf_write_random(const char *path, int V, int P, int L, int C, int H, unsigned seed) {
    return write_model(path, V, P, L, C, H, seed, 0);
}

int ckf_write_zeros(const char *path, int V, int P, int L, int C, int H) {
    return write_model(path, V, P, L, C, H, 0, 1);
}

char *ckf_golden(char *out, size_t size, const char *rel) {
    char r[256];
    snprintf(r, sizeof r, "tests/golden/ckpt/%s", rel);
    return tfile_path(out, size, r);
}

void ckf_expect_refused(const char *spec, const char *text) {
    api_models *models = NULL;
    char why[768];
    ck_assert_msg(api_models_load(&models, spec, why, sizeof why) == -1, "%s was loaded", spec);
    ck_assert_ptr_null(models);
    ck_assert_msg(strstr(why, text) != NULL, "%s: \"%s\" lacks \"%s\"", spec, why, text);
}

json_t *ckf_call(const api_models *models, const char *body, int want_status) {
    api_limits lim = {.max_elements = 50000000, .models = models};
    return tapi_call(API_EP_MODEL_GPT2, body, &lim, want_status);
}

json_t *ckf_golden_ref(const char *name) {
    char rel[128], path[512];
    snprintf(rel, sizeof rel, "%s.json", name);
    json_error_t je;
    json_t *j = json_load_file(ckf_golden(path, sizeof path, rel), 0, &je);
    ck_assert_msg(j != NULL, "%s: %s", path, je.text);
    return j;
}

void ckf_load_golden(api_models **models, const char *name, const char *rel, const char *suffix) {
    char path[512], spec[700], why[768];
    ckf_golden(path, sizeof path, rel);
    snprintf(spec, sizeof spec, "%s=%s%s", name, path, suffix);
    ck_assert_msg(api_models_load(models, spec, why, sizeof why) == 0, "%s: %s", spec, why);
}

void ckf_expect_logits(const json_t *reply, const json_t *ref, const char *name, size_t min_count) {
    json_t *got = json_object_get(json_object_get(reply, "logits"), "data");
    json_t *want = json_object_get(ref, "logits");
    ck_assert_uint_eq(json_array_size(got), json_array_size(want));
    ck_assert_uint_gt(json_array_size(want), min_count);
    double worst = 0;
    for (size_t i = 0; i < json_array_size(want); i++) {
        double a = json_number_value(json_array_get(got, i)), b = json_number_value(json_array_get(want, i));
        ck_assert_msg(fabs(a - b) <= 1e-4 + 1e-3 * fabs(b), "%s: logits[%zu] %.9g, PyTorch %.9g", name,
                      i, a, b);
        if (fabs(a - b) > worst) worst = fabs(a - b);
    }
    printf("%s: %zu logits within 1e-4 + 1e-3 rel of PyTorch (largest difference %.3g)\n", name,
           json_array_size(want), worst);
}
