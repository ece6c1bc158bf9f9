/* st_read.c - reads a safetensors file (the format Hugging Face ships
 * weights in):
 *
 *   8 bytes    N, little-endian u64
 *   N bytes    UTF-8 JSON {"name": {"dtype": "F32", "shape": [..],
 *              "data_offsets": [begin, end]}, ..., "__metadata__": {..}}
 *   the rest   the tensors' little-endian bytes; offsets are relative to
 *              the first byte after the header
 *
 * The file is mapped read-only and shared (MAP_SHARED: one copy in the page
 * cache whoever reads it), and everything the header says is checked
 * against the file before a pointer into the data is handed out, with the
 * rules of the Rust safetensors crate: known dtypes, sizes equal to
 * product(shape) x dtype size, tensors covering the data exactly. Every
 * count is overflow-checked: a header is untrusted input.
 */
#include "api/model/model.h"
#include "api/numbers/numbers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "st_read.c reads little-endian tensor bytes in place: a little-endian host is assumed"
#endif

int api__ckpt_fail(char *why, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (why && size) vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return -1;
}

/* Bytes per element of a safetensors dtype; 0 if unknown. */
static size_t dtype_size(const char *d) {
    static const struct {
        const char *name;
        size_t size;
    } t[] = {{"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
             {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
             {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(d, t[i].name) == 0) return t[i].size;
    return 0;
}

/* A JSON integer in [0, max]. */
static int get_size(const json_t *v, size_t max, size_t *out) {
    if (!json_is_integer(v) || json_integer_value(v) < 0) return -1;
    unsigned long long x = (unsigned long long)json_integer_value(v);
    if (x > max) return -1;
    *out = (size_t)x;
    return 0;
}

/* One header entry into t; data_len bytes follow the header. */
static int read_entry(const char *name, const json_t *v, size_t data_len, api_st_tensor *t,
                      char *why, size_t size) {
    if (!json_is_object(v))
        return api__ckpt_fail(why, size, "tensor \"%.64s\": its header entry is not an object", name);
    const char *key;
    const json_t *x;
    json_object_foreach((json_t *)v, key, x) {
        if (strcmp(key, "dtype") && strcmp(key, "shape") && strcmp(key, "data_offsets"))
            return api__ckpt_fail(why, size, "tensor \"%.64s\": unknown header key \"%.32s\"", name, key);
    }
    const json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
                 *off = json_object_get(v, "data_offsets");
    if (!json_is_string(dt) || !json_is_array(sh) || !json_is_array(off))
        return api__ckpt_fail(why, size, "tensor \"%.64s\": needs a dtype string, a shape array and a "
                               "data_offsets array", name);
    *t = (api_st_tensor){.name = name, .dtype = json_string_value(dt)};
    if ((t->elem_size = dtype_size(t->dtype)) == 0)
        return api__ckpt_fail(why, size, "tensor \"%.64s\": unknown dtype \"%.16s\"", name, t->dtype);
    size_t rank = json_array_size(sh);
    if (rank > API_ST_MAX_RANK)
        return api__ckpt_fail(why, size, "tensor \"%.64s\": rank %zu is over %d", name, rank, API_ST_MAX_RANK);
    t->rank = (int)rank;
    t->count = 1;
    for (size_t d = 0; d < rank; d++) {
        if (get_size(json_array_get(sh, d), SIZE_MAX, &t->shape[d]))
            return api__ckpt_fail(why, size, "tensor \"%.64s\": shape[%zu] is not a size", name, d);
        if (t->shape[d] && t->count > SIZE_MAX / t->shape[d])
            return api__ckpt_fail(why, size, "tensor \"%.64s\": its shape overflows", name);
        t->count *= t->shape[d];
    }
    if (json_array_size(off) != 2 || get_size(json_array_get(off, 0), SIZE_MAX, &t->begin) ||
        get_size(json_array_get(off, 1), SIZE_MAX, &t->end) || t->begin > t->end)
        return api__ckpt_fail(why, size, "tensor \"%.64s\": data_offsets must be [begin, end], two sizes "
                               "with begin <= end", name);
    if (t->end > data_len)
        return api__ckpt_fail(why, size,
                    "tensor \"%.64s\": data_offsets [%zu, %zu] run past the end of the data "
                    "(%zu bytes after the header): the file is truncated or its header is wrong",
                    name, t->begin, t->end, data_len);
    if (t->count > SIZE_MAX / t->elem_size || t->count * t->elem_size != t->end - t->begin)
        return api__ckpt_fail(why, size,
                    "tensor \"%.64s\": data_offsets [%zu, %zu] hold %zu bytes, its shape and "
                    "dtype %s need %zu x %zu", name, t->begin, t->end, t->end - t->begin, t->dtype,
                    t->count, t->elem_size);
    return 0;
}

static int by_offset(const void *a, const void *b) {
    const api_st_tensor *x = *(const api_st_tensor *const *)a, *y = *(const api_st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Sorted by offset, the tensors must tile [0, data_len) with no gap and no overlap. */
static int check_tiling(api_st_file *f, size_t data_len, char *why, size_t size) {
    const api_st_tensor **order = malloc((f->count ? f->count : 1) * sizeof *order);
    if (!order) return api__ckpt_fail(why, size, "out of memory");
    for (size_t i = 0; i < f->count; i++) order[i] = &f->tensors[i];
    qsort(order, f->count, sizeof *order, by_offset);
    size_t at = 0;
    int rc = 0;
    for (size_t i = 0; i < f->count && rc == 0; i++) {
        if (order[i]->begin < at)
            rc = api__ckpt_fail(why, size, "tensor \"%.64s\" at [%zu, %zu] overlaps \"%.64s\"",
                      order[i]->name, order[i]->begin, order[i]->end, order[i - 1]->name);
        else if (order[i]->begin > at)
            rc = api__ckpt_fail(why, size, "bytes [%zu, %zu) of the data belong to no tensor (before "
                                 "\"%.64s\")", at, order[i]->begin, order[i]->name);
        at = order[i]->end;
    }
    if (rc == 0 && at != data_len)
        rc = api__ckpt_fail(why, size, "the tensors end at byte %zu of the data, the file holds %zu", at,
                  data_len);
    free(order);
    return rc;
}

static int parse_header(api_st_file *f, const char *text, size_t len, size_t data_len, char *why,
                        size_t size) {
    json_error_t je;
    f->header = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!f->header)
        return api__ckpt_fail(why, size, "the header is not JSON: %.120s (line %d, column %d)", je.text,
                    je.line, je.column);
    if (!json_is_object(f->header)) return api__ckpt_fail(why, size, "the header is not a JSON object");
    size_t n = json_object_size(f->header);
    f->tensors = calloc(n ? n : 1, sizeof *f->tensors);
    if (!f->tensors) return api__ckpt_fail(why, size, "out of memory");
    const char *key;
    const json_t *v;
    json_object_foreach(f->header, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            if (!json_is_object(v)) return api__ckpt_fail(why, size, "__metadata__ is not an object");
            const char *k;
            const json_t *s;
            json_object_foreach((json_t *)v, k, s) {
                if (!json_is_string(s))
                    return api__ckpt_fail(why, size, "__metadata__.%.64s is not a string", k);
            }
            f->metadata = v;
            continue;
        }
        if (read_entry(key, v, data_len, &f->tensors[f->count], why, size)) return -1;
        f->count++;
    }
    return check_tiling(f, data_len, why, size);
}

/* Validates the file f->size bytes at b (see api__st_open); closes f on a
 * fault. */
static int validate(api_st_file *f, const uint8_t *b, char *why, size_t size) {
    uint64_t n = 0;
    for (int k = 7; k >= 0; k--) n = n << 8 | b[k];
    int rc;
    if (n > f->size - 8)
        rc = api__ckpt_fail(why, size, "the header length %llu runs past the end of the file (%zu bytes): "
                             "truncated, or not a safetensors file", (unsigned long long)n, f->size);
    else if (n > API_ST_MAX_HEADER)
        rc = api__ckpt_fail(why, size, "the header length %llu is over %zu bytes", (unsigned long long)n,
                  API_ST_MAX_HEADER);
    else
        rc = parse_header(f, (const char *)b + 8, (size_t)n, f->size - 8 - (size_t)n, why, size);
    if (rc) {
        api__st_close(f);
        return -1;
    }
    for (size_t i = 0; i < f->count; i++) f->tensors[i].data = b + 8 + n + f->tensors[i].begin;
    return 0;
}

int api__st_open(api_st_file *f, const char *path, char *why, size_t size) {
    *f = (api_st_file){0};
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO: no wait for a writer */
    if (fd < 0) return api__ckpt_fail(why, size, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return api__ckpt_fail(why, size, "not a regular file");
    }
    if (st.st_size < 8) {
        close(fd);
        return api__ckpt_fail(why, size, "%lld bytes: too short for a safetensors file (8-byte header "
                               "length first)", (long long)st.st_size);
    }
    f->size = (size_t)st.st_size;
    f->map = mmap(NULL, f->size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (f->map == MAP_FAILED) {
        f->map = NULL;
        return api__ckpt_fail(why, size, "cannot map: %s", strerror(errno));
    }
    return validate(f, f->map, why, size);
}

int api__st_open_mem(api_st_file *f, const void *data, size_t bytes, char *why, size_t size) {
    *f = (api_st_file){0};
    if (bytes < 8)
        return api__ckpt_fail(why, size, "%zu bytes: too short for a safetensors file", bytes);
    f->size = bytes;
    return validate(f, data, why, size);
}

const api_st_tensor *api__st_find(const api_st_file *f, const char *name) {
    for (size_t i = 0; i < f->count; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

/* t's dtype as core's: F32, F16 or BF16; -1 for any other. */
static int core_dtype(const api_st_tensor *t) {
    if (strcmp(t->dtype, "F32") == 0) return ATTN_DTYPE_F32;
    if (strcmp(t->dtype, "F16") == 0) return ATTN_DTYPE_F16;
    if (strcmp(t->dtype, "BF16") == 0) return ATTN_DTYPE_BF16;
    return -1;
}

int api__st_convert(const api_st_tensor *t, void *out, attn_dtype to, int transpose) {
    int from = core_dtype(t);
    if (from < 0 || t->rank > 2) return -1;
    if (!transpose || t->rank < 2) {
        attn_dtype_convert(to, out, (attn_dtype)from, t->data, t->count);
        return 0;
    }
    /* [rows][cols] into [cols][rows]: each row converted, then spread */
    size_t rows = t->shape[0], cols = t->shape[1], size = attn_dtype_size(to);
    unsigned char *row = malloc(cols * size + 1), *o = out;
    if (row == NULL) return -2;
    for (size_t r = 0; r < rows; r++) {
        attn_dtype_convert(to, row, (attn_dtype)from, t->data + r * cols * t->elem_size, cols);
        for (size_t c = 0; c < cols; c++) memcpy(o + (c * rows + r) * size, row + c * size, size);
    }
    free(row);
    return 0;
}

int api__st_equals(const api_st_tensor *t, const void *x, attn_dtype as) {
    enum { CHUNK = 4096 };
    int from = core_dtype(t);
    if (from < 0) return 0;
    size_t size = attn_dtype_size(as);
    unsigned char buf[CHUNK * 4];
    const unsigned char *want = x;
    for (size_t i = 0; i < t->count; i += CHUNK) {
        size_t n = t->count - i < CHUNK ? t->count - i : CHUNK;
        attn_dtype_convert(as, buf, (attn_dtype)from, t->data + i * t->elem_size, n);
        if (as != ATTN_DTYPE_F32) {
            if (memcmp(buf, want + i * size, n * size)) return 0;
            continue;
        }
        for (size_t k = 0; k < n; k++) { /* as floats: 0 equals -0, a NaN nothing */
            float a, b;
            memcpy(&a, buf + 4 * k, 4);
            memcpy(&b, want + (i + k) * 4, 4);
            if (a != b) return 0;
        }
    }
    return 1;
}

void api__st_close(api_st_file *f) {
    if (!f) return;
    if (f->map) munmap(f->map, f->size);
    json_decref(f->header);
    free(f->tensors);
    *f = (api_st_file){0};
}

/* ==== Several files: shards ============================================== */

const api_st_tensor *api__st_set_find(const api_st_set *s, const char *name) {
    for (int i = 0; i < s->count; i++) {
        const api_st_tensor *t = api__st_find(&s->file[i], name);
        if (t) return t;
    }
    return NULL;
}

void api__st_set_close(api_st_set *s) {
    for (int i = 0; i < s->count; i++) api__st_close(&s->file[i]);
    s->count = 0;
}
