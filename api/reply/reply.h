/* reply.h - writing replies (private to api/, prefix api__): tensors as
 * JSON text (nested, flat, base64), whole safetensors files, and gzip.
 *
 *   emit.c         one tensor as nested arrays, {"shape","data"} or base64
 *   respond.c      the 200 reply of the attention modules
 *   safetensors.c  a reply as one safetensors file
 *   gzip.c         gzip bodies in and replies out (libdeflate)
 */
#ifndef API_REPLY_H
#define API_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "api/base/base.h"

/* ==== Tensors out ========================================================= */

/* How a reply carries its tensors ("output_format"). */
typedef enum {
    API_FORMAT_NESTED,       /* nested arrays, as tensor.tolist() gives */
    API_FORMAT_FLAT,         /* {"shape":[...],"data":[...]} */
    API_FORMAT_BASE64,       /* {"shape":[...],"dtype":"float32","base64":"..."} */
    API_FORMAT_SAFETENSORS,  /* the whole reply is one safetensors file (safetensors.c) */
    API_FORMAT_PNG,          /* attn_weights as a PNG heat map (image.c) */
    API_FORMAT_SVG,          /* attn_weights as SVG panels with labels (svg.c) */
} api_format;

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

#endif
