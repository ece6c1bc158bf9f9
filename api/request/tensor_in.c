/* tensor_in.c - JSON tensors into contiguous float arrays.
 *
 * A tensor is a nested array ([[...], [...]], as tensor.tolist() gives) or
 * {"shape": [...], "data": [...]} (flat, row-major). The shape is read first
 * (from the first element of each level, or from "shape"), its product
 * checked against the caller's budget, then the values are copied, each
 * array's length checked against the shape: errors carry the path of the
 * offending element, "inputs[1][2]".
 */
#include "api/request/request.h"
#include "api/numbers/numbers.h"


#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void api__shape_str(char *out, size_t size, int rank, const int *shape) {
    size_t n = 0;
    n += (size_t)snprintf(out + n, size - n, "[");
    for (int d = 0; d < rank && n < size; d++)
        n += (size_t)snprintf(out + n, size - n, d ? ", %d" : "%d", shape[d]);
    if (n < size) snprintf(out + n, size - n, "]");
}

/* name[i0][i1]... for the first depth indices */
static void path(char *out, size_t size, const char *name, const int *idx, int depth) {
    size_t n = (size_t)snprintf(out, size, "%s", name);
    for (int d = 0; d < depth && n < size; d++)
        n += (size_t)snprintf(out + n, size - n, "[%d]", idx[d]);
}

static const char *type_name(const json_t *j) {
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: case JSON_REAL: return "a number";
    case JSON_TRUE: case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

static const char *expected(api_val_kind kind) {
    switch (kind) {
    case API_VAL_BOOL: return "a boolean or 0/1";
    case API_VAL_MASK: return "a boolean, a number or \"-inf\"";
    default: return "a number";
    }
}

typedef struct {
    const char *name;
    int rank;
    const int *shape;
    api_val_kind kind;
    float *dst;
    size_t at;
    int idx[API_MAX_RANK];
    int any_bool, any_number;
    api_err *e;
} filler;

static int bad_value(filler *f, int depth, const json_t *v, const char *why) {
    char p[192];
    path(p, sizeof p, f->name, f->idx, depth);
    if (why) return api__fail(f->e, API_E_NON_FINITE, p, "%s %s", p, why);
    if (json_is_array(v) || json_is_object(v))
        return api__fail(f->e, API_E_INVALID_SHAPE, p, "%s is %s, expected %s (%s has %d axes)",
                         p, type_name(v), expected(f->kind), f->name, f->rank);
    return api__fail(f->e, API_E_INVALID_TYPE, p, "%s is %s, expected %s", p, type_name(v),
                     expected(f->kind));
}

static int put_value(filler *f, int depth, const json_t *v) {
    float out;
    if (json_is_boolean(v) && f->kind != API_VAL_NUMBER) {
        out = json_is_true(v) ? 1.0f : 0.0f;
        f->any_bool = 1;
    } else if (json_is_number(v)) {
        double d = json_number_value(v);
        if (!API_FITS_FLOAT32(d)) return bad_value(f, depth, v, "is beyond the float32 range");
        out = (float)d;
        if (f->kind == API_VAL_BOOL && out != 0.0f && out != 1.0f) {
            char p[192];
            path(p, sizeof p, f->name, f->idx, depth);
            return api__fail(f->e, API_E_INVALID_ARGUMENT, p, "%s is %g, expected a boolean or 0/1",
                             p, d);
        }
        f->any_number = 1;
    } else if (f->kind == API_VAL_MASK &&
               (json_is_null(v) || (json_is_string(v) && (strcmp(json_string_value(v), "-inf") == 0 ||
                                                          strcmp(json_string_value(v), "-Infinity") == 0)))) {
        out = -INFINITY;
        f->any_number = 1;
    } else {
        return bad_value(f, depth, v, NULL);
    }
    f->dst[f->at++] = out;
    return 0;
}

/* nested: the array j at depth (its indices in f->idx[0..depth)) */
static int fill_nested(filler *f, const json_t *j, int depth) {
    char p[192];
    if (!json_is_array(j)) {
        path(p, sizeof p, f->name, f->idx, depth);
        return api__fail(f->e, API_E_INVALID_SHAPE, p, "%s is %s, expected an array of %d",
                         p, type_name(j), f->shape[depth]);
    }
    size_t n = json_array_size(j);
    if (n != (size_t)f->shape[depth]) {
        path(p, sizeof p, f->name, f->idx, depth);
        return api__fail(f->e, API_E_INVALID_SHAPE, p, "%s has %zu value%s, expected %d%s", p, n,
                         n == 1 ? "" : "s", f->shape[depth],
                         n ? "" : " (empty axes are not allowed)");
    }
    for (size_t i = 0; i < n; i++) {
        f->idx[depth] = (int)i;
        const json_t *v = json_array_get(j, i);
        int rc = depth + 1 < f->rank ? fill_nested(f, v, depth + 1) : put_value(f, depth + 1, v);
        if (rc) return rc;
    }
    return 0;
}

static void flat_path(char *out, size_t size, const char *name, int rank, const int *shape,
                      size_t i);

/* ---- binary tensors: {"shape", "dtype", "base64"} ------------------------------ */

typedef enum { DT_FLOAT32, DT_FLOAT16, DT_UINT8 } dtype;

typedef struct {
    dtype type;
    const char *text;   /* the base64 string, or NULL when numscan.c decoded it: */
    size_t len;
    const uint8_t *raw; /*   its bytes */
} binary;

static int is_binary(const json_t *j) { return json_is_object(j) && json_object_get(j, "base64"); }

/* Reads the shape (as a flat tensor's), the dtype and the base64 text. */
static int binary_header(const json_t *j, const char *name, int min_rank, int max_rank,
                         api_val_kind kind, int *shape, int *rank, binary *bin, api_err *e) {
    char p[192];
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)j, key, v) {
        if (strcmp(key, "shape") && strcmp(key, "dtype") && strcmp(key, "base64")) {
            char echo[API_ECHO_MAX + 4];
            snprintf(p, sizeof p, "%s.%s", name, api__echo(echo, sizeof echo, key));
            return api__fail(e, API_E_UNKNOWN_FIELD, p,
                             "%s: a binary tensor has only \"shape\", \"dtype\" and \"base64\"", p);
        }
    }
    const json_t *s = json_object_get(j, "shape"), *b = json_object_get(j, "base64"),
                 *d = json_object_get(j, "dtype");
    if (!json_is_array(s)) {
        snprintf(p, sizeof p, "%s.shape", name);
        return api__fail(e, s ? API_E_INVALID_TYPE : API_E_MISSING_FIELD, p,
                         "%s must be an array (a binary tensor is {\"shape\": [...], \"dtype\": "
                         "\"float32\", \"base64\": \"...\"})", p);
    }
    size_t r = json_array_size(s);
    if (r < (size_t)min_rank || r > (size_t)max_rank) {
        snprintf(p, sizeof p, "%s.shape", name);
        return api__fail(e, API_E_INVALID_SHAPE, p, "%s has %zu axes, expected %d to %d", p, r,
                         min_rank, max_rank);
    }
    for (size_t i = 0; i < r; i++) {
        const json_t *x = json_array_get(s, i);
        snprintf(p, sizeof p, "%s.shape[%zu]", name, i);
        if (!json_is_integer(x) || json_integer_value(x) < 1 || json_integer_value(x) > INT32_MAX)
            return api__fail(e, API_E_INVALID_SHAPE, p, "%s must be an integer from 1 to 2147483647",
                             p);
        shape[i] = (int)json_integer_value(x);
    }
    *rank = (int)r;
    const char *dt = d ? json_string_value(d) : "float32";
    int masks = kind != API_VAL_NUMBER;
    snprintf(p, sizeof p, "%s.dtype", name);
    if (dt && strcmp(dt, "float32") == 0) bin->type = DT_FLOAT32;
    else if (dt && strcmp(dt, "float16") == 0) bin->type = DT_FLOAT16;
    else if (dt && masks && (strcmp(dt, "uint8") == 0 || strcmp(dt, "bool") == 0)) bin->type = DT_UINT8;
    else
        return api__fail(e, d && !json_is_string(d) ? API_E_INVALID_TYPE : API_E_INVALID_ARGUMENT, p,
                         "%s must be \"float32\" or \"float16\"%s", p,
                         masks ? " (or \"uint8\" for a mask)" : "");
    snprintf(p, sizeof p, "%s.base64", name);
    const api_scanned *sc = api__scan_lookup(b);
    if (sc && sc->bytes) { /* decoded already (numscan.c) */
        *bin = (binary){.type = bin->type, .raw = sc->bytes, .len = sc->count};
        return 0;
    }
    if (!json_is_string(b) || sc)
        return api__fail(e, API_E_INVALID_TYPE, p, "%s must be a string of base64", p);
    bin->text = json_string_value(b);
    bin->len = json_string_length(b);
    bin->raw = NULL;
    return 0;
}

/* Decodes bin into f->dst (count values), checking the length and the values. */
static int binary_fill(filler *f, const binary *bin, size_t count) {
    char p[192], s[96];
    static const size_t item[] = {[DT_FLOAT32] = 4, [DT_FLOAT16] = 2, [DT_UINT8] = 1};
    static const char *const names[] = {[DT_FLOAT32] = "float32", [DT_FLOAT16] = "float16",
                                        [DT_UINT8] = "uint8"};
    snprintf(p, sizeof p, "%s.base64", f->name);
    size_t have = bin->raw ? bin->len : api__b64_decoded_size(bin->text, bin->len),
           want = count * item[bin->type];
    if (have == SIZE_MAX)
        return api__fail(f->e, API_E_INVALID_BASE64, p,
                         "%s is not base64: %zu characters cannot be a whole encoding", p, bin->len);
    if (have != want) {
        api__shape_str(s, sizeof s, f->rank, f->shape);
        return api__fail(f->e, API_E_INVALID_SHAPE, p,
                         "%s decodes to %zu bytes, shape %s of %s needs %zu", p, have, s,
                         names[bin->type], want);
    }
    /* The bytes go to the end of the float array and are widened from the
     * front: value i is written at 4i and its bytes lie at or after it. */
    uint8_t *raw = (uint8_t *)f->dst + (count * sizeof(float) - want);
    size_t bad = 0;
    if (bin->raw) memcpy(raw, bin->raw, want);
    else bad = api__b64_decode(bin->text, bin->len, raw);
    if (bad)
        return api__fail(f->e, API_E_INVALID_BASE64, p,
                         "%s is not base64: character %zu is not in the alphabet "
                         "(A-Z a-z 0-9 + /, '=' padding)", p, bad);
    for (size_t i = 0; i < count; i++) {
        const uint8_t *b = raw + i * item[bin->type];
        float v;
        if (bin->type == DT_FLOAT32) {
            uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
            memcpy(&v, &u, sizeof v);
        } else if (bin->type == DT_FLOAT16) {
            v = api__f16_to_f32((uint16_t)(b[0] | b[1] << 8));
        } else {
            v = (float)b[0];
        }
        f->dst[i] = v;
    }
    for (size_t i = 0; i < count; i++) {
        float v = f->dst[i];
        int ok = f->kind == API_VAL_BOOL || bin->type == DT_UINT8 ? v == 0.0f || v == 1.0f
                 : f->kind == API_VAL_MASK ? !isnan(v) && v != INFINITY
                                           : isfinite(v);
        if (ok) continue;
        flat_path(p, sizeof p, f->name, f->rank, f->shape, i);
        if (f->kind == API_VAL_BOOL || bin->type == DT_UINT8)
            return api__fail(f->e, API_E_INVALID_ARGUMENT, p, "%s is %g, expected 0 or 1", p, (double)v);
        return api__fail(f->e, API_E_NON_FINITE, p, "%s is %s", p,
                         isnan(v) ? "NaN" : "infinite (only -inf masks, in an additive attn_mask)");
    }
    if (bin->type == DT_UINT8) f->any_bool = 1;
    else f->any_number = 1;
    return 0;
}

/* Reads the shape of j into shape/rank. Flat tensors also give their data array. */
static int read_shape(const json_t *j, const char *name, int min_rank, int max_rank, int *shape,
                      int *rank, const json_t **data, api_err *e) {
    char p[192];
    *data = NULL;
    if (json_is_object(j)) {
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)j, key, v) {
            if (strcmp(key, "shape") != 0 && strcmp(key, "data") != 0) {
                char echo[API_ECHO_MAX + 4];
                snprintf(p, sizeof p, "%s.%s", name, api__echo(echo, sizeof echo, key));
                return api__fail(e, API_E_UNKNOWN_FIELD, p,
                                 "%s: a flat tensor has only \"shape\" and \"data\"", p);
            }
        }
        const json_t *s = json_object_get(j, "shape");
        *data = json_object_get(j, "data");
        if (!json_is_array(s) || !(json_is_array(*data) || api__scan_lookup(*data))) {
            snprintf(p, sizeof p, "%s.%s", name, json_is_array(s) ? "data" : "shape");
            return api__fail(e, json_is_array(s) || s == NULL ? API_E_MISSING_FIELD : API_E_INVALID_TYPE,
                             p, "%s must be an array (a flat tensor is {\"shape\": [...], "
                             "\"data\": [...]})", p);
        }
        size_t r = json_array_size(s);
        if (r < (size_t)min_rank || r > (size_t)max_rank) {
            snprintf(p, sizeof p, "%s.shape", name);
            return api__fail(e, API_E_INVALID_SHAPE, p, "%s has %zu axes, expected %d to %d", p,
                             r, min_rank, max_rank);
        }
        for (size_t d = 0; d < r; d++) {
            const json_t *v = json_array_get(s, d);
            snprintf(p, sizeof p, "%s.shape[%zu]", name, d);
            if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > INT32_MAX)
                return api__fail(e, API_E_INVALID_SHAPE, p,
                                 "%s must be an integer from 1 to 2147483647", p);
            shape[d] = (int)json_integer_value(v);
        }
        *rank = (int)r;
        return 0;
    }
    int r = 0, idx[API_MAX_RANK + 1] = {0};
    const json_t *cur = j;
    while (json_is_array(cur)) {
        path(p, sizeof p, name, idx, r);
        if (r == max_rank)
            return api__fail(e, API_E_INVALID_SHAPE, p, "%s has more than %d axes", name, max_rank);
        size_t n = json_array_size(cur);
        if (n == 0)
            return api__fail(e, API_E_INVALID_SHAPE, p, "%s is empty (empty axes are not allowed)", p);
        if (n > INT32_MAX)
            return api__fail(e, API_E_TOO_LARGE, p, "%s has too many values", p);
        shape[r++] = (int)n;
        cur = json_array_get(cur, 0);
    }
    if (r == 0)
        return api__fail(e, API_E_INVALID_TYPE, name,
                         "%s is %s, expected a nested array or {\"shape\", \"data\"}", name,
                         type_name(j));
    if (r < min_rank)
        return api__fail(e, API_E_INVALID_SHAPE, name, "%s has %d axes, expected %d to %d", name,
                         r, min_rank, max_rank);
    *rank = r;
    return 0;
}

/* ---- arrays read by numscan.c ---------------------------------------------- */

/* The element at flat index i of a tensor of the given shape, as a path. */
static void flat_path(char *out, size_t size, const char *name, int rank, const int *shape,
                      size_t i) {
    int idx[API_MAX_RANK];
    for (int d = rank - 1; d >= 0; d--) {
        idx[d] = (int)(i % (size_t)shape[d]);
        i /= (size_t)shape[d];
    }
    path(out, size, name, idx, rank);
}

/* The shape of a nested tensor that numscan.c read, checked as read_shape
 * checks a JSON array. */
static int scanned_shape(const api_scanned *sc, const char *name, int min_rank, int max_rank,
                         int *shape, int *rank, api_err *e) {
    char p[192];
    if (sc->rank > max_rank) {
        int idx[API_MAX_RANK] = {0};
        path(p, sizeof p, name, idx, max_rank);
        return api__fail(e, API_E_INVALID_SHAPE, p, "%s has more than %d axes", name, max_rank);
    }
    if (sc->rank < min_rank)
        return api__fail(e, API_E_INVALID_SHAPE, name, "%s has %d axes, expected %d to %d", name,
                         sc->rank, min_rank, max_rank);
    memcpy(shape, sc->shape, sizeof sc->shape);
    *rank = sc->rank;
    return 0;
}

/* Checks the values of a read array as put_value checks JSON numbers (they
 * are finite float32 already): a boolean tensor holds only 0 and 1. With
 * flat set, the array is the "data" of {"shape", "data"} and must be
 * one-dimensional with f's element count. */
static int check_scanned(filler *f, const api_scanned *sc, int flat, size_t count) {
    char p[192];
    const char *name = f->name;
    int rank = f->rank;
    const int *shape = f->shape;
    int flat_shape[1] = {(int)count};
    if (flat) {
        snprintf(p, sizeof p, "%s.data", f->name);
        size_t top = (size_t)sc->shape[0]; /* values of the outer array */
        if (top != count) {
            char s[96];
            api__shape_str(s, sizeof s, f->rank, f->shape);
            return api__fail(f->e, API_E_INVALID_SHAPE, p, "%s has %zu values, shape %s needs %zu", p,
                             top, s, count);
        }
        if (sc->rank != 1) {
            char q[200];
            snprintf(q, sizeof q, "%s[0]", p);
            return api__fail(f->e, API_E_INVALID_SHAPE, q, "%s is an array, expected %s (%s has 1 axes)",
                             q, expected(f->kind), p);
        }
        name = p;
        rank = 1;
        shape = flat_shape;
    }
    if (f->kind == API_VAL_BOOL) {
        for (size_t i = 0; i < sc->count; i++) {
            if (sc->data[i] == 0.0f || sc->data[i] == 1.0f) continue;
            char q[200];
            flat_path(q, sizeof q, name, rank, shape, i);
            return api__fail(f->e, API_E_INVALID_ARGUMENT, q, "%s is %g, expected a boolean or 0/1",
                             q, (double)sc->data[i]);
        }
    }
    f->any_number = 1;
    return 0;
}

static int fill(filler *f, const json_t *j, const json_t *data, size_t count) {
    const api_scanned *sc = api__scan_lookup(data ? data : j);
    if (sc) {
        if (check_scanned(f, sc, data != NULL, count)) return -1;
        memcpy(f->dst, sc->data, count * sizeof *f->dst);
        return 0;
    }
    if (data == NULL) return fill_nested(f, j, 0);
    char p[192];
    snprintf(p, sizeof p, "%s.data", f->name);
    if (json_array_size(data) != count) {
        char s[96];
        api__shape_str(s, sizeof s, f->rank, f->shape);
        return api__fail(f->e, API_E_INVALID_SHAPE, p, "%s has %zu values, shape %s needs %zu", p,
                         json_array_size(data), s, count);
    }
    filler g = *f;
    g.name = p;
    g.rank = 1;
    for (size_t i = 0; i < count; i++) {
        g.idx[0] = (int)i;
        if (put_value(&g, 1, json_array_get(data, i))) return -1;
    }
    f->any_bool = g.any_bool;
    f->any_number = g.any_number;
    return 0;
}

static size_t product(int rank, const int *shape, size_t cap) {
    size_t n = 1;
    for (int d = 0; d < rank; d++) {
        if ((size_t)shape[d] > cap / n) return cap + 1;
        n *= (size_t)shape[d];
    }
    return n;
}

int api__tensor_read(const json_t *j, const char *name, int min_rank, int max_rank,
                     api_val_kind kind, size_t *budget, api_tensor *t, api_err *e) {
    *t = (api_tensor){0};
    const json_t *data = NULL;
    api_scanned *sc = api__scan_lookup(j);
    binary bin;
    int bin_form = is_binary(j);
    if (bin_form ? binary_header(j, name, min_rank, max_rank, kind, t->shape, &t->rank, &bin, e)
        : sc     ? scanned_shape(sc, name, min_rank, max_rank, t->shape, &t->rank, e)
                 : read_shape(j, name, min_rank, max_rank, t->shape, &t->rank, &data, e))
        return -1;
    if (data) sc = api__scan_lookup(data);
    size_t n = product(t->rank, t->shape, *budget);
    if (n > *budget) {
        char s[96];
        api__shape_str(s, sizeof s, t->rank, t->shape);
        return api__fail(e, API_E_TOO_LARGE, name,
                         "%s of shape %s holds more values than this server accepts per request",
                         name, s);
    }
    filler f = {.name = name, .rank = t->rank, .shape = t->shape, .kind = kind, .e = e};
    int stolen = sc && sc->count == n && (data == NULL || sc->rank == 1);
    if (stolen) {
        /* the floats numscan.c read become the tensor's, no copy */
        if (check_scanned(&f, sc, data != NULL, n)) return -1;
        t->data = sc->data;
        sc->data = NULL;
    } else {
        t->data = malloc(n * sizeof *t->data);
        if (t->data == NULL)
            return api__fail(e, API_E_OUT_OF_MEMORY, name, "cannot allocate %zu values for %s", n,
                             name);
    }
    t->count = n;
    f.dst = t->data;
    if (!stolen && (bin_form ? binary_fill(&f, &bin, n) : fill(&f, j, data, n))) {
        api__tensor_free(t);
        return -1;
    }
    *budget -= n;
    t->any_bool = f.any_bool;
    t->all_binary = 1;
    for (size_t i = 0; i < n; i++)
        if (t->data[i] != 0.0f && t->data[i] != 1.0f) {
            t->all_binary = 0;
            break;
        }
    if (kind == API_VAL_MASK && f.any_bool && !t->all_binary) {
        api__tensor_free(t);
        return api__fail(e, API_E_INVALID_ARGUMENT, name,
                         "%s mixes booleans with other numbers: give a boolean mask (true = "
                         "masked out) or an additive float mask", name);
    }
    return 0;
}

int api__tensor_read_into(const json_t *j, const char *name, int rank, const int *shape,
                          float *dst, api_err *e) {
    int got[API_MAX_RANK], got_rank = 0;
    const json_t *data;
    char want[96], have[96];
    api__shape_str(want, sizeof want, rank, shape);
    const api_scanned *sc = api__scan_lookup(j);
    data = NULL;
    binary bin;
    int bin_form = is_binary(j);
    if (bin_form ? binary_header(j, name, 1, API_MAX_RANK, API_VAL_NUMBER, got, &got_rank, &bin, e)
        : sc     ? scanned_shape(sc, name, 1, API_MAX_RANK, got, &got_rank, e)
                 : read_shape(j, name, 1, API_MAX_RANK, got, &got_rank, &data, e)) {
        /* keep the specific message, add the expected shape */
        size_t n = strlen(e->message);
        snprintf(e->message + n, sizeof e->message - n, " (expected shape %s)", want);
        return -1;
    }
    int same = got_rank == rank;
    for (int d = 0; same && d < rank; d++) same = got[d] == shape[d];
    if (!same) {
        api__shape_str(have, sizeof have, got_rank, got);
        return api__fail(e, API_E_INVALID_SHAPE, name, "%s has shape %s, expected %s", name,
                         have, want);
    }
    filler f = {.name = name, .rank = rank, .shape = shape, .kind = API_VAL_NUMBER, .dst = dst, .e = e};
    size_t count = product(rank, shape, SIZE_MAX);
    if (bin_form ? binary_fill(&f, &bin, count) : fill(&f, j, data, count)) {
        size_t n = strlen(e->message);
        snprintf(e->message + n, sizeof e->message - n, " (expected shape %s)", want);
        return -1;
    }
    return 0;
}

void api__tensor_free(api_tensor *t) {
    if (t == NULL) return;
    free(t->data);
    *t = (api_tensor){0};
}
