/* status.c - error codes, module names and small shared checks. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

const char *attn_status_name(int code) {
    switch (code) {
    case ATTN_OK: return "ok";
    case ATTN_ERR_ARG: return "invalid_argument";
    case ATTN_ERR_SHAPE: return "invalid_shape";
    case ATTN_ERR_RANGE: return "too_large";
    case ATTN_ERR_NONFINITE: return "non_finite";
    case ATTN_ERR_NOMEM: return "out_of_memory";
    default: return "unknown_error";
    }
}

static const char *const module_names[ATTN_MODULE_COUNT] = {
    [ATTN_SIMPLE] = "simple",
    [ATTN_SELF_V1] = "SelfAttention_v1",
    [ATTN_SELF_V2] = "SelfAttention_v2",
    [ATTN_CAUSAL] = "CausalAttention",
    [ATTN_MHA_WRAPPER] = "MultiHeadAttentionWrapper",
    [ATTN_MHA] = "MultiHeadAttention",
    [ATTN_GPT2] = "GPT2CausalSelfAttention",
    [ATTN_TORCH_MHA] = "torch.nn.MultiheadAttention",
    [ATTN_SDPA] = "scaled_dot_product_attention",
};

const char *attn_module_name(attn_module m) {
    if ((int)m < 0 || m >= ATTN_MODULE_COUNT) return NULL;
    return module_names[m];
}

int attn_module_from_name(const char *name, attn_module *out) {
    if (name == NULL || out == NULL) return ATTN_ERR_ARG;
    for (int m = 0; m < ATTN_MODULE_COUNT; m++) {
        if (strcmp(name, module_names[m]) == 0) {
            *out = (attn_module)m;
            return ATTN_OK;
        }
    }
    if (strcmp(name, "sdpa") == 0) {
        *out = ATTN_SDPA;
        return ATTN_OK;
    }
    return ATTN_ERR_ARG;
}

int attn__fail(attn_error *err, int code, const char *field, const char *fmt, ...) {
    if (err == NULL) return code;
    err->code = code;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}

int attn__mul(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > ATTN_MAX_ELEMENTS / a) return 0;
    *out = a * b;
    return 1;
}

int attn__all_finite(const float *x, size_t n) {
    /* An all-ones exponent is inf or NaN. Integer ops so the loop vectorises. */
    uint32_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        bad |= (u & 0x7f800000u) == 0x7f800000u;
    }
    return bad == 0;
}
