/* golden.c - the golden-file loader and comparisons of golden.h (jansson). */
#include "tests/support/golden.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const golden_output_names[GOLDEN_OUT_COUNT] = {
    "context", "context_heads", "queries", "keys", "values", "scores",
    "masked_scores", "mask", "weights", "weights_avg", "dropout_mask",
};

const char *golden_dir(void) {
    const char *d = getenv("GOLDEN_DIR");
    return d && *d ? d : "tests/golden";
}

static int failf(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int failf(char *why, size_t len, const char *fmt, ...) {
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ---- tensors ------------------------------------------------------------ */

static void tensor_free(golden_tensor *t) {
    free(t->data);
    free(t->bytes);
    *t = (golden_tensor){0};
}

/* Reads {"shape": [...], "data": [...]} into t; bytes too when as_bytes. */
static int read_tensor(json_t *obj, const char *what, golden_tensor *t, int as_bytes, char *why,
                       size_t len) {
    *t = (golden_tensor){0};
    json_t *shape = json_object_get(obj, "shape"), *data = json_object_get(obj, "data");
    if (!json_is_array(shape) || !json_is_array(data))
        return failf(why, len, "%s: shape and data must be arrays", what);
    size_t rank = json_array_size(shape);
    if (rank > 4) return failf(why, len, "%s: rank %zu > 4", what, rank);
    t->rank = (int)rank;
    size_t count = 1;
    for (size_t d = 0; d < rank; d++) {
        json_t *s = json_array_get(shape, d);
        if (!json_is_integer(s) || json_integer_value(s) < 0)
            return failf(why, len, "%s: bad shape", what);
        t->shape[d] = (int)json_integer_value(s);
        count *= (size_t)t->shape[d];
    }
    if (json_array_size(data) != count)
        return failf(why, len, "%s: %zu values for a shape of %zu", what, json_array_size(data), count);
    t->count = count;
    t->data = malloc((count ? count : 1) * sizeof *t->data);
    if (as_bytes) t->bytes = malloc(count ? count : 1);
    if (!t->data || (as_bytes && !t->bytes)) {
        tensor_free(t);
        return failf(why, len, "%s: out of memory", what);
    }
    for (size_t i = 0; i < count; i++) {
        json_t *v = json_array_get(data, i);
        if (json_is_null(v)) {
            t->data[i] = -INFINITY;
        } else if (json_is_number(v)) {
            t->data[i] = (float)json_number_value(v);
        } else {
            tensor_free(t);
            return failf(why, len, "%s[%zu]: not a number", what, i);
        }
        if (as_bytes) t->bytes[i] = t->data[i] != 0.0f;
    }
    t->present = 1;
    return 0;
}

static int opt_tensor(json_t *parent, const char *key, golden_tensor *t, int as_bytes, char *why,
                      size_t len) {
    json_t *obj = json_object_get(parent, key);
    if (obj == NULL || json_is_null(obj)) {
        *t = (golden_tensor){0};
        return 0;
    }
    return read_tensor(obj, key, t, as_bytes, why, len);
}

/* ---- config ------------------------------------------------------------- */

static int get_int(json_t *cfg, const char *key, int *out, char *why, size_t len) {
    json_t *v = json_object_get(cfg, key);
    if (!json_is_integer(v)) return failf(why, len, "config.%s: not an integer", key);
    *out = (int)json_integer_value(v);
    return 0;
}

static int read_config(json_t *c, golden_case *gc, char *why, size_t len) {
    attn_config *cfg = &gc->cfg;
    *cfg = (attn_config){0};
    if (!json_is_object(c)) return failf(why, len, "config: not an object");
    if (attn_module_from_name(gc->module_name, &cfg->module) != ATTN_OK)
        return failf(why, len, "module \"%s\" unknown to core", gc->module_name);
    struct { const char *key; int *dst; } ints[] = {
        {"batch", &cfg->batch}, {"tokens", &cfg->tokens}, {"d_in", &cfg->d_in},
        {"d_out", &cfg->d_out}, {"num_heads", &cfg->num_heads}, {"kv_tokens", &cfg->kv_tokens},
        {"kv_heads", &cfg->kv_heads}, {"kdim", &cfg->kdim}, {"vdim", &cfg->vdim},
        {"context_length", &cfg->context_length}, {"bias", &cfg->bias}, {"causal", &cfg->causal},
        {"training", &cfg->training},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (get_int(c, ints[i].key, ints[i].dst, why, len)) return -1;
    const char *norm = json_string_value(json_object_get(c, "normalization"));
    const char *meth = json_string_value(json_object_get(c, "mask_method"));
    if (!norm || !meth) return failf(why, len, "config: normalization and mask_method are strings");
    if (strcmp(norm, "softmax") == 0) cfg->normalization = ATTN_NORM_SOFTMAX;
    else if (strcmp(norm, "sum") == 0) cfg->normalization = ATTN_NORM_SUM;
    else return failf(why, len, "config.normalization \"%s\" unknown", norm);
    if (strcmp(meth, "neg_inf") == 0) cfg->mask_method = ATTN_MASK_NEG_INF;
    else if (strcmp(meth, "renorm") == 0) cfg->mask_method = ATTN_MASK_RENORM;
    else return failf(why, len, "config.mask_method \"%s\" unknown", meth);
    json_t *scale = json_object_get(c, "scale");
    if (json_is_number(scale)) {
        cfg->has_scale = 1;
        cfg->scale = (float)json_number_value(scale);
    } else if (scale && !json_is_null(scale)) {
        return failf(why, len, "config.scale: number or null");
    }
    json_t *p = json_object_get(c, "dropout");
    if (!json_is_number(p)) return failf(why, len, "config.dropout: not a number");
    cfg->dropout = json_number_value(p);
    json_t *seed = json_object_get(c, "seed"), *dseed = json_object_get(c, "dropout_seed");
    if (json_is_integer(seed)) {
        gc->has_seed = 1;
        gc->seed = (uint64_t)json_integer_value(seed);
    }
    if (json_is_integer(dseed)) {
        cfg->has_dropout_seed = 1;
        cfg->dropout_seed = (uint64_t)json_integer_value(dseed);
    }
    return 0;
}

/* ---- case ---------------------------------------------------------------- */

void golden_free(golden_case *gc) {
    if (gc == NULL) return;
    golden_tensor *ts[] = {&gc->x, &gc->x_key, &gc->x_value, &gc->query, &gc->key, &gc->value,
                           &gc->attn_mask_bool, &gc->attn_mask_add, &gc->key_padding_mask};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) tensor_free(ts[i]);
    for (int i = 0; i < gc->n_params; i++) tensor_free(&gc->params[i].t);
    free(gc->params);
    free(gc->params_flat);
    for (int i = 0; i < GOLDEN_OUT_COUNT; i++) tensor_free(&gc->out[i]);
    memset(gc, 0, sizeof *gc);
}

static int load_params(json_t *arr, golden_case *gc, char *why, size_t len) {
    if (!json_is_array(arr)) return failf(why, len, "params: not an array");
    size_t n = json_array_size(arr);
    gc->params = calloc(n ? n : 1, sizeof *gc->params);
    if (!gc->params) return failf(why, len, "params: out of memory");
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *p = json_array_get(arr, i);
        const char *name = json_string_value(json_object_get(p, "name"));
        if (!name) return failf(why, len, "params[%zu]: no name", i);
        golden_param *gp = &gc->params[i];
        snprintf(gp->name, sizeof gp->name, "%s", name);
        gp->is_buffer = json_is_true(json_object_get(p, "buffer"));
        gc->n_params = (int)i + 1;
        if (read_tensor(p, name, &gp->t, 0, why, len)) return -1;
        total += gp->t.count;
    }
    gc->params_flat = malloc((total ? total : 1) * sizeof(float));
    if (!gc->params_flat) return failf(why, len, "params: out of memory");
    gc->n_params_flat = total;
    size_t off = 0;
    for (int i = 0; i < gc->n_params; i++) {
        memcpy(gc->params_flat + off, gc->params[i].t.data, gc->params[i].t.count * sizeof(float));
        off += gc->params[i].t.count;
    }
    return 0;
}

static int load_case(json_t *root, golden_case *gc, char *why, size_t len) {
    if (!json_is_object(root)) return failf(why, len, "not a JSON object");
    const char *name = json_string_value(json_object_get(root, "name"));
    const char *module = json_string_value(json_object_get(root, "module"));
    if (!name || !module) return failf(why, len, "name and module are required");
    snprintf(gc->name, sizeof gc->name, "%s", name);
    snprintf(gc->module_name, sizeof gc->module_name, "%s", module);
    if (read_config(json_object_get(root, "config"), gc, why, len)) return -1;

    json_t *in = json_object_get(root, "inputs");
    if (!json_is_object(in)) return failf(why, len, "inputs: not an object");
    if (opt_tensor(in, "x", &gc->x, 0, why, len) || opt_tensor(in, "x_key", &gc->x_key, 0, why, len) ||
        opt_tensor(in, "x_value", &gc->x_value, 0, why, len) ||
        opt_tensor(in, "query", &gc->query, 0, why, len) || opt_tensor(in, "key", &gc->key, 0, why, len) ||
        opt_tensor(in, "value", &gc->value, 0, why, len) ||
        opt_tensor(in, "attn_mask_bool", &gc->attn_mask_bool, 1, why, len) ||
        opt_tensor(in, "attn_mask_add", &gc->attn_mask_add, 0, why, len) ||
        opt_tensor(in, "key_padding_mask", &gc->key_padding_mask, 1, why, len))
        return -1;
    gc->in = (attn_inputs){
        .x = gc->x.data, .x_key = gc->x_key.data, .x_value = gc->x_value.data,
        .query = gc->query.data, .key = gc->key.data, .value = gc->value.data,
        .attn_mask_bool = gc->attn_mask_bool.bytes, .attn_mask_add = gc->attn_mask_add.data,
        .key_padding_mask = gc->key_padding_mask.bytes,
    };
    if (gc->attn_mask_bool.present && gc->attn_mask_add.present &&
        gc->attn_mask_bool.rank != gc->attn_mask_add.rank)
        return failf(why, len, "attn_mask_bool and attn_mask_add must have the same rank "
                     "(attn_inputs has one attn_mask_batched flag)");
    gc->in.attn_mask_batched = (gc->attn_mask_bool.present && gc->attn_mask_bool.rank == 3) ||
                               (gc->attn_mask_add.present && gc->attn_mask_add.rank == 3);

    if (load_params(json_object_get(root, "params"), gc, why, len)) return -1;

    json_t *out = json_object_get(root, "outputs");
    if (!json_is_object(out)) return failf(why, len, "outputs: not an object");
    for (int i = 0; i < GOLDEN_OUT_COUNT; i++) {
        json_t *t = json_object_get(out, golden_output_names[i]);
        if (!t) return failf(why, len, "outputs.%s is missing", golden_output_names[i]);
        if (read_tensor(t, golden_output_names[i], &gc->out[i], i == GOLDEN_MASK, why, len)) return -1;
    }
    return 0;
}

int golden_load(const char *path, golden_case *gc, char *why, size_t why_len) {
    memset(gc, 0, sizeof *gc);
    snprintf(gc->path, sizeof gc->path, "%s", path);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root)
        return failf(why, why_len, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
    char inner[200] = "";
    int rc = load_case(root, gc, inner, sizeof inner);
    json_decref(root);
    if (rc) {
        golden_free(gc);
        return failf(why, why_len, "%s: %s", path, inner);
    }
    return 0;
}

/* ---- listing --------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The "module" of a file without loading its tensors in full: jansson
 * parses the whole file anyway, they are small. */
static int file_module(const char *path, char *module, size_t len) {
    json_t *root = json_load_file(path, 0, NULL);
    if (!root) return -1;
    const char *m = json_string_value(json_object_get(root, "module"));
    snprintf(module, len, "%s", m ? m : "");
    json_decref(root);
    return 0;
}

int golden_list(const char *const *modules, char ***paths) {
    *paths = NULL;
    const char *dir = golden_dir();
    DIR *d = opendir(dir);
    if (!d) return -1;
    char **list = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".json") != 0) continue;
        char path[1024], module[64];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (file_module(path, module, sizeof module)) continue;
        int wanted = modules == NULL;
        for (const char *const *m = modules; m && *m; m++) wanted |= strcmp(*m, module) == 0;
        if (!wanted) continue;
        if (n == cap) {
            int ncap = cap ? 2 * cap : 16;
            char **nl = realloc(list, (size_t)ncap * sizeof *nl);
            if (!nl) break;
            list = nl;
            cap = ncap;
        }
        list[n] = strdup(path);
        if (list[n]) n++;
    }
    closedir(d);
    if (n) qsort(list, (size_t)n, sizeof *list, cmp_str);
    *paths = list;
    return n;
}

void golden_list_free(char **paths, int n) {
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

/* ---- comparisons ------------------------------------------------------------- */

long golden_compare(const char *what, const float *got, const float *want, size_t n, char *msg,
                    size_t msg_len) {
    for (size_t i = 0; i < n; i++) {
        float a = got[i], b = want[i];
        int ok;
        if (isinf(b) || isinf(a))
            ok = a == b;
        else
            ok = !isnan(a) && !isnan(b) &&
                 fabs((double)a - (double)b) <= GOLDEN_ATOL + GOLDEN_RTOL * fabs((double)b);
        if (!ok) {
            if (msg && msg_len)
                snprintf(msg, msg_len, "%s[%zu]: got %.9g, want %.9g (|diff| %.3g, tolerance %.3g)",
                         what, i, (double)a, (double)b, fabs((double)a - (double)b),
                         GOLDEN_ATOL + GOLDEN_RTOL * fabs((double)b));
            return (long)i;
        }
    }
    return -1;
}

long golden_compare_bytes(const char *what, const uint8_t *got, const uint8_t *want, size_t n,
                          char *msg, size_t msg_len) {
    for (size_t i = 0; i < n; i++)
        if ((got[i] != 0) != (want[i] != 0)) {
            if (msg && msg_len)
                snprintf(msg, msg_len, "%s[%zu]: got %d, want %d", what, i, got[i], want[i]);
            return (long)i;
        }
    return -1;
}

static int64_t ordered(float f) {
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i < 0 ? (int64_t)INT32_MIN - (int64_t)i : (int64_t)i;
}

uint32_t golden_max_ulp(const float *a, const float *b, size_t n) {
    uint64_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t d = ordered(a[i]) - ordered(b[i]);
        uint64_t ad = (uint64_t)(d < 0 ? -d : d);
        if (ad > worst) worst = ad;
    }
    return worst > UINT32_MAX ? UINT32_MAX : (uint32_t)worst;
}

/* ---- output buffers ----------------------------------------------------------- */

size_t golden_output_count(const attn_plan *p, int which) {
    switch (which) {
    case GOLDEN_CONTEXT: return p->n_context;
    case GOLDEN_CONTEXT_HEADS: return p->n_context_heads;
    case GOLDEN_QUERIES: return p->n_queries;
    case GOLDEN_KEYS: return p->n_keys;
    case GOLDEN_VALUES: return p->n_values;
    case GOLDEN_SCORES: case GOLDEN_MASKED_SCORES: case GOLDEN_WEIGHTS: return p->n_scores;
    case GOLDEN_MASK: return p->n_mask;
    case GOLDEN_WEIGHTS_AVG: return p->n_avg;
    case GOLDEN_DROPOUT_MASK: return p->n_dropout;
    default: return 0;
    }
}

int golden_buffers_alloc(const attn_plan *p, golden_buffers *b) {
    memset(b, 0, sizeof *b);
    int ok = 1;
    for (int i = 0; i < GOLDEN_OUT_COUNT; i++) {
        size_t n = golden_output_count(p, i);
        if (i == GOLDEN_MASK) {
            b->mask = calloc(n ? n : 1, 1);
            ok = ok && b->mask;
        } else {
            b->f[i] = calloc(n ? n : 1, sizeof(float));
            ok = ok && b->f[i];
        }
    }
    if (!ok) {
        golden_buffers_free(b);
        return -1;
    }
    b->out = (attn_outputs){
        .context = b->f[GOLDEN_CONTEXT], .context_heads = b->f[GOLDEN_CONTEXT_HEADS],
        .queries = b->f[GOLDEN_QUERIES], .keys = b->f[GOLDEN_KEYS], .values = b->f[GOLDEN_VALUES],
        .scores = b->f[GOLDEN_SCORES], .masked_scores = b->f[GOLDEN_MASKED_SCORES],
        .mask = b->mask, .weights = b->f[GOLDEN_WEIGHTS], .weights_avg = b->f[GOLDEN_WEIGHTS_AVG],
        .dropout_mask = b->f[GOLDEN_DROPOUT_MASK],
    };
    return 0;
}

void golden_buffers_free(golden_buffers *b) {
    if (b == NULL) return;
    for (int i = 0; i < GOLDEN_OUT_COUNT; i++) free(b->f[i]);
    free(b->mask);
    memset(b, 0, sizeof *b);
}
