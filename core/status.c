/* status.c - error codes, the module table and small shared checks. */
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
    case ATTN_ERR_CANCELLED: return "cancelled";
    default: return "unknown_error";
    }
}

/* ==== The module table ==================================================== */

static const attn_module_info modules[ATTN_MODULE_COUNT] = {
#define XX(id, ...) {ATTN_##id, __VA_ARGS__},
    ATTN_MODULE_MAP(XX)
#undef XX
};

const attn_module_info *attn_module_get(attn_module m) {
    if ((int)m < 0 || m >= ATTN_MODULE_COUNT) return NULL;
    return &modules[m];
}

int attn_module_has(attn_module m, unsigned flags) {
    const attn_module_info *info = attn_module_get(m);
    return info != NULL && (info->flags & flags) == flags;
}

const char *attn_module_name(attn_module m) {
    const attn_module_info *info = attn_module_get(m);
    return info ? info->name : NULL;
}

int attn_module_from_name(const char *name, attn_module *out) {
    if (name == NULL || out == NULL) return ATTN_ERR_ARG;
    for (int m = 0; m < ATTN_MODULE_COUNT; m++) {
        const attn_module_info *info = &modules[m];
        if (strcmp(name, info->name) == 0 || (info->alias && strcmp(name, info->alias) == 0)) {
            *out = info->module;
            return ATTN_OK;
        }
    }
    return ATTN_ERR_ARG;
}

int attn_modules_on_endpoint(const char *endpoint, attn_module mods[ATTN_MODULE_COUNT]) {
    int n = 0;
    if (endpoint == NULL || mods == NULL) return 0;
    /* the default first, then the others in table order */
    for (int pass = 0; pass < 2; pass++)
        for (int m = 0; m < ATTN_MODULE_COUNT; m++) {
            int is_default = (modules[m].flags & ATTN_MOD_DEFAULT) != 0;
            if (is_default == (pass == 0) && strcmp(modules[m].endpoint, endpoint) == 0)
                mods[n++] = modules[m].module;
        }
    return n;
}

/* ==== Shared helpers ====================================================== */

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
