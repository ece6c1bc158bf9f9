/* internal.h - private helpers shared by the files of core/ (prefix attn__). */
#ifndef ATTN_INTERNAL_H
#define ATTN_INTERNAL_H

#include "attention.h"

#include <stdarg.h>

/* Fills err (if not NULL) and returns code. printf-style message. */
int attn__fail(attn_error *err, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* a * b with overflow and ATTN_MAX_ELEMENTS checks; returns 0 on overflow. */
int attn__mul(size_t a, size_t b, size_t *out);

/* 1 if every value of x[0..n) is finite. */
int attn__all_finite(const float *x, size_t n);

/* Sets plan->param_count and plan->n_params (params.c). */
int attn__param_layout(const attn_config *cfg, attn_plan *plan, attn_error *err);

#endif
