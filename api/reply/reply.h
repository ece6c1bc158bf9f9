/* reply.h - writing replies (private to api/, prefix api__).
 *
 * Every endpoint's kind says what its reply holds as a list of items
 * (api_contents: named tensors, groups of them, JSON values, the timing),
 * and the row of the requested format in API_FORMAT_MAP writes that list:
 *
 *   emit.c         one tensor as nested arrays, {"shape","data"} or base64
 *   json.c         a reply as one JSON object (nested, flat, base64)
 *   safetensors.c  a reply as one safetensors file
 *   events.c       a reply as server-sent events (a generation's)
 *   parts.c        the arrays a reply may be sent from (api_reply.parts)
 *   gzip.c         gzip bodies in and replies out (libdeflate)
 *
 * The images (png, svg) are written by api/maps/ from the same list.
 */
#ifndef API_REPLY_H
#define API_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "api/base/base.h"

/* ==== Tensors out ========================================================= */

typedef struct {
    int precision;  /* 0 = round-trip */
    int flat;       /* {"shape":[...],"data":[...]} instead of nested arrays */
    api_format format;
    int half;       /* "dtype": "float16" (binary formats only) */
    struct attn_pool *pool; /* threads that may share the text of a large tensor; NULL = one */
} api_fmt;

/* Writes a [shape] tensor. -inf is written as null (masked scores); any other
 * non-finite value marks the buffer failed with *nonfinite set. */
void api__emit_floats(api_buf *b, const float *x, int rank, const int *shape, const api_fmt *f,
                      int *nonfinite);
/* Writes a [shape] tensor of 0/1 bytes as integers. */
void api__emit_bytes(api_buf *b, const uint8_t *x, int rank, const int *shape, const api_fmt *f);
/* Writes a [shape] tensor of int32 (top-k indices); binary formats as "int32". */
void api__emit_ints(api_buf *b, const int32_t *x, int rank, const int *shape, const api_fmt *f);
/* The little-endian bytes of n floats (float32, or float16 with half) at out;
 * returns how many were written (4n or 2n). */
size_t api__float_bytes(uint8_t *out, const float *x, size_t n, int half);
/* 1 if one of x[0..n) is NaN or +inf, which a reply cannot carry (-inf is a
 * masked score). */
int api__has_nan_or_inf(const float *x, size_t n);
/* 1 when a finite value of x[0..n) would round to infinity as float16
 * (|v| >= 65520): a float16 reply refuses it (400 non_finite) as every other
 * path refuses a value it cannot carry, instead of sending inf. */
int api__beyond_half(const float *x, size_t n);

/* ==== What a reply holds =================================================== */

typedef enum {
    API_ITEM_F32,    /* a float tensor */
    API_ITEM_U8,     /* a 0/1 byte tensor (a mask) */
    API_ITEM_I32,    /* an int32 tensor (token ids) */
    API_ITEM_JSON,   /* JSON text: a value of a JSON reply, a string of a
                        safetensors file's __metadata__ */
    API_ITEM_GROUP,  /* named tensors: an object in JSON, "<name>.<child>" tensors in
                        safetensors (a state_dict); a JSON child is a value of the
                        object, a "<name>.<child>" string of the safetensors metadata */
    API_ITEM_TIMING, /* {"parse_ms", "compute_ms", "serialise_ms"}, made when written */
} api_item_kind;

/* Axes a reply tensor may have ([layers][B][H][rows][cols] and one spare). */
#define API_ITEM_RANK 6

typedef struct api_item {
    const char *name;           /* the reply's key; the safetensors name */
    api_item_kind kind;
    int plain;                  /* JSON replies write it as nested arrays whatever the
                                   format (token ids) */
    int rank;
    int shape[API_ITEM_RANK];   /* a tensor whose first axis is 0 is written [] in JSON */
    const void *data;           /* the tensor, row-major; JSON: NUL-terminated text */
    const int32_t *indices;     /* top-k: data are the values, these their keys; JSON
                                   {"indices", "values"}, safetensors "<name>.indices" (I32)
                                   and "<name>.values" */
    const struct api_item *items; /* GROUP: its tensors */
    int n_items;
} api_item;

struct api_image;

/* A reply's contents, in the order a JSON reply gives them. */
typedef struct {
    const char *module;         /* the reply's "module" (also the safetensors metadata's) */
    const api_item *item;
    int n;
    api_fmt fmt;
    const struct api_image *image; /* what a picture format draws; NULL: no picture */
    double ms_parse, ms_compute;   /* for API_ITEM_TIMING */
    double t_serialise;            /* when writing began (api__now_ms) */
    /* API_FORMAT_EVENTS: the events written before the last and not handed
     * over yet (NULL: none); the name of the last, whose data is the JSON
     * object of the items (NULL: no such event); the text after it (NULL:
     * none). */
    const api_buf *events;
    const char *last_event;
    const char *events_end;
} api_contents;

/* The most tensors a safetensors reply leaves in place (api_st_parts);
 * one with more is copied into the body. */
#define API_ST_MAX_ENTRIES 120
_Static_assert(API_ST_MAX_ENTRIES <= API_REPLY_MAX_PARTS, "a reply's parts are its tensors");

/* Where a safetensors reply may leave its tensors' bytes in place (float32
 * on a little-endian machine: the file's bytes are the arrays' own): the
 * body then ends after the header, and the data is parts[0..n) (api_reply.parts). */
typedef struct {
    api_part part[API_ST_MAX_ENTRIES];
    int n;
} api_st_parts;

/* The writers of API_FORMAT_MAP's rows: c into b (whose first reservation is
 * made). parts: where the tensors may stay (API_FMT_PARTS formats; NULL: copy
 * them). 0, or -1 with e filled (allocation; NaN or +inf, which no reply
 * carries: an internal error). */
int api__write_json(api_buf *b, const api_contents *c, api_st_parts *parts, api_err *e);
int api__write_safetensors(api_buf *b, const api_contents *c, api_st_parts *parts, api_err *e);
/* Server-sent events (events.c): c->events, then the last event, whose
 * data is api__write_json's object on one line, then c->events_end. */
int api__write_events(api_buf *b, const api_contents *c, api_st_parts *parts, api_err *e);

/* 1 if a float of c is NaN or +inf: the reply would be an error (checked
 * before a reply is streamed). */
int api__contents_nonfinite(const api_contents *c);
/* The elements of an item's tensor (1 for rank 0). */
size_t api__item_count(const api_item *it);

/* ==== Arrays a reply is sent from (parts.c) ================================ */

/* Every array a request allocates for its results: freed with the request,
 * or handed to the reply when a safetensors reply is sent from them. */
typedef struct {
    void **p;
    int n, cap;
    int failed;             /* sticky: an allocation failed */
} api_arrays;

/* A new array of count elements of size bytes (1 element when count is 0),
 * kept in a; NULL (and a->failed) when memory runs out. Arrays of 32 MiB
 * and more ask for huge pages. */
void *api__arrays_take(api_arrays *a, size_t count, size_t size);
/* Keeps p (malloc'd, or NULL) in a, to be freed with it; -1 if a cannot grow
 * (p is then freed). */
int api__arrays_keep(api_arrays *a, void *p);
void api__arrays_free(api_arrays *a);
/* Moves the arrays of a and the parts into the reply (its parts, freed by
 * api_reply_free); a is then empty. 0, or -1 when memory runs out (nothing
 * moved). */
int api__reply_adopt(api_reply *reply, api_arrays *a, const api_st_parts *parts);

#endif
