/* internal.h - private helpers shared by the files of core/ (prefix attn__). */
#ifndef ATTN_INTERNAL_H
#define ATTN_INTERNAL_H

#include "attention.h"

#include <math.h>
#include <stdarg.h>

/* Fills err (if not NULL) and returns code. printf-style message. */
int attn__fail(attn_error *err, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* a * b with overflow and ATTN_MAX_ELEMENTS checks; returns 0 on overflow. */
int attn__mul(size_t a, size_t b, size_t *out);

/* 53 random bits from two outputs, the first as the high word: PyTorch's
 * random64() masked as its double uniforms mask it (rng.c). */
uint64_t attn__rng_bits53(attn_rng *rng);

/* n outputs into out, the same as n calls of attn_rng_u32 (rng.c). */
void attn__rng_u32_fill(attn_rng *rng, uint32_t *out, size_t n);

/* at::exponential_distribution<double>(lambd) of those bits, rounded to
 * float as exponential_ stores it: u = bits / 2^53, -1 / lambd * log(1 - u)
 * in double with libm's log (transformation::exponential, CPU branch). */
static inline float attn__exponential_of(uint64_t bits53, double lambd) {
    double u = (double)bits53 * (1.0 / (double)(UINT64_C(1) << 53));
    return (float)(-1.0 / lambd * log(1.0 - u));
}

/* 1 if every value of x[0..n) is finite. */
int attn__all_finite(const float *x, size_t n);

/* Sets plan->param_count and plan->n_params (params.c). */
int attn__param_layout(const attn_config *cfg, attn_plan *plan, attn_error *err);

/* Typed views of a parameter buffer (llm.c's ParameterTensors): where each
 * tensor the forward pass reads starts, from the same layout attn_param_get
 * describes. A fused projection (GPT-2's c_attn, torch's in_proj_weight and
 * in_proj_bias) is seen as its three row blocks: query, key, value. NULL
 * where the module has no such tensor. */
typedef struct {
    const float *w_query, *w_key, *w_value; /* [out][in] as nn.Linear, or [in][out] if w_in_out */
    const float *b_query, *b_key, *b_value; /* [out] */
    const float *out_proj_w, *out_proj_b;   /* [out_width][ctx_width], [out_width] */
    int w_in_out;       /* SelfAttention_v1's raw [d_in][d_out] matrices */
    size_t head_stride; /* ATTN_MOD_HEAD_MODULES: head h's tensors are head 0's (the
                           pointers above) + h * head_stride floats; 0 otherwise */
} attn__param_views;

/* Fills v for a buffer of plan->n_params floats (all NULL if params is NULL). */
void attn__param_views_make(const attn_config *cfg, const attn_plan *plan, const float *params,
                            attn__param_views *v);

#endif
