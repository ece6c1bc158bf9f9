/* errors.c - the error table (API_ERROR_MAP in api.h), error bodies,
 * api__fail, user text echoed safely, and core's status codes mapped to the
 * table's rows. */
#include "api/base/base.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const api_error_info errors[API_E_COUNT] = {
#define API_E_ROW(id, status, code, description) [API_E_##id] = {status, code, description},
    API_ERROR_MAP(API_E_ROW)
#undef API_E_ROW
};

const api_error_info *api_error_get(api_error err) {
    if ((int)err < 0 || err >= API_E_COUNT) return NULL;
    return &errors[err];
}

int api_error_body(api_buf *buf, int status, const char *code, const char *message,
                   const char *field) {
    if (buf == NULL) return -1;
    *buf = (api_buf){0};
    api__buf_printf(buf, "{\"error\":{\"status\":%d,\"code\":", status);
    api__buf_json_string(buf, code ? code : "error");
    api__buf_puts(buf, ",\"message\":");
    api__buf_json_string(buf, message ? message : "");
    api__buf_puts(buf, ",\"field\":");
    api__buf_json_string(buf, field && *field ? field : NULL);
    api__buf_puts(buf, "}}\n");
    return buf->failed ? -1 : 0;
}

int api_error_reply(api_buf *buf, api_error err, const char *message, const char *field) {
    const api_error_info *i = api_error_get(err);
    if (i == NULL) i = api_error_get(API_E_INTERNAL_ERROR);
    return api_error_body(buf, i->status, i->code, message, field);
}

int api__fail(api_err *e, api_error code, const char *field, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    e->code = code;
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    return -1;
}

char *api__echo(char *dst, size_t size, const char *src) {
    size_t max = size - 4 < API_ECHO_MAX ? size - 4 : API_ECHO_MAX;
    size_t i = 0, n = strlen(src);
    for (; i < n && i < max; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    if (i < n) {
        /* Cut before a UTF-8 continuation so the text stays valid UTF-8. */
        while (i > 0 && ((unsigned char)src[i] & 0xc0) == 0x80) i--;
        memcpy(dst + i, "...", 3);
        i += 3;
    }
    dst[i] = '\0';
    return dst;
}

/* core's field names, in the request's words: the module's row names its
 * constructor arguments (core/attention.h ATTN_MODULE_MAP). */
static const char *rename_field(const char *f, attn_module m) {
    const attn_module_info *mod = attn_module_get(m);
    if (mod == NULL) return f;
    int given = (mod->flags & ATTN_MOD_QKV_INPUTS) != 0; /* Q, K, V given: no x */
    if (strcmp(f, "tokens") == 0 || strcmp(f, "batch") == 0 || strcmp(f, "inputs") == 0)
        return given ? "query" : "inputs";
    if (strcmp(f, "d_in") == 0 && mod->in_name) return mod->in_name;
    if (strcmp(f, "num_heads") == 0 && mod->heads_name) return mod->heads_name;
    if (strcmp(f, "context_length") == 0 && mod->context_name) return mod->context_name;
    if (strcmp(f, "kv_tokens") == 0 && (given || (mod->flags & ATTN_MOD_CROSS))) return "key";
    if (given && strcmp(f, "kv_heads") == 0) return "key";
    if (given && strcmp(f, "vdim") == 0) return "value";
    return f;
}

void api__from_attn(api_err *e, const attn_error *ae, attn_module m) {
    api_error code;
    switch (ae->code) {
    case ATTN_ERR_ARG: code = API_E_INVALID_ARGUMENT; break;
    case ATTN_ERR_SHAPE: code = API_E_INVALID_SHAPE; break;
    case ATTN_ERR_RANGE: code = API_E_TOO_LARGE; break;
    case ATTN_ERR_NONFINITE: code = API_E_NON_FINITE; break;
    case ATTN_ERR_NOMEM: code = API_E_OUT_OF_MEMORY; break;
    /* the caller's check stopped the computation (attn_cancel_set): the
     * server does so when it must end (its client gone, the reply unread) */
    case ATTN_ERR_CANCELLED: code = API_E_DRAINING; break;
    default: code = API_E_INTERNAL_ERROR; break;
    }
    api__fail(e, code, rename_field(ae->field, m), "%s", ae->message);
}
