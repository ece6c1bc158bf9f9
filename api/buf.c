/* buf.c - the growing reply buffer, JSON string escaping, the error table
 * (API_ERROR_MAP in api.h) and error bodies. */
#include "api/api_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE ((uintptr_t)2 << 20)

void api__huge_pages(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
    if (p == NULL || bytes < (size_t)32 << 20) return;
    uintptr_t from = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    uintptr_t to = ((uintptr_t)p + bytes) & ~(HUGE_PAGE - 1);
    if (to > from) madvise((void *)from, to - from, MADV_HUGEPAGE); /* advice: failure is harmless */
#else
    (void)p, (void)bytes;
#endif
}

void api_buf_free(api_buf *b) {
    if (b == NULL) return;
    free(b->data);
    *b = (api_buf){0};
}

int api__buf_reserve(api_buf *b, size_t extra) {
    if (b->failed) return -1;
    if (b->drain && b->len && b->len >= b->drain_at) { /* hand the text over, start anew */
        char *data = b->data;
        size_t len = b->len;
        b->data = NULL;
        b->len = b->cap = 0;
        if (b->drain(b->drain_ctx, data, len) != 0) {
            b->failed = 1;
            return -1;
        }
    }
    if (b->cap - b->len > extra) return 0; /* keeps room for a NUL */
    size_t need = b->len + extra + 1;
    if (need < extra) {
        b->failed = 1;
        return -1;
    }
    size_t cap = b->cap ? b->cap : b->drain ? b->drain_at + b->drain_at / 4 : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (p == NULL) {
        b->failed = 1;
        return -1;
    }
    api__huge_pages(p, cap);
    b->data = p;
    b->cap = cap;
    return 0;
}

void api__buf_put(api_buf *b, const char *s, size_t n) {
    if (api__buf_reserve(b, n)) return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void api__buf_puts(api_buf *b, const char *s) { api__buf_put(b, s, strlen(s)); }

void api__buf_printf(api_buf *b, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        api__buf_put(b, small, (size_t)n);
        return;
    }
    if (api__buf_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Length of the valid UTF-8 sequence at p (1 to 4), or 0 if the bytes there
 * are not one: stray continuation, overlong form, surrogate, past U+10FFFF,
 * or cut short. */
static int utf8_length(const unsigned char *p) {
    unsigned c = p[0];
    int n;
    unsigned min, cp;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) n = 2, min = 0x80, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef) n = 3, min = 0x800, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4) n = 4, min = 0x10000, cp = c & 0x07;
    else return 0;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;   /* also stops at the NUL */
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

/* Always valid JSON and valid UTF-8, whatever s holds: bytes that are not
 * UTF-8 (jansson's error text quotes the byte it choked on; a message cut at
 * its buffer's end may split a character) become U+FFFD. */
void api__buf_json_string(api_buf *b, const char *s) {
    if (s == NULL) {
        api__buf_put(b, "null", 4);
        return;
    }
    api__buf_json_stringn(b, s, strlen(s));
}

void api__buf_json_stringn(api_buf *b, const char *s, size_t n) {
    if (api__buf_reserve(b, n * 6 + 2)) return;
    char *o = b->data + b->len;
    *o++ = '"';
    for (const unsigned char *p = (const unsigned char *)s, *end = p + n; p < end;) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
            p++;
        } else if (c < 0x20 || c == 0x7f) {
            static const char hex[] = "0123456789abcdef";
            switch (c) {
            case '\n': *o++ = '\\'; *o++ = 'n'; break;
            case '\t': *o++ = '\\'; *o++ = 't'; break;
            case '\r': *o++ = '\\'; *o++ = 'r'; break;
            default:
                memcpy(o, "\\u00", 4);
                o[4] = hex[c >> 4];
                o[5] = hex[c & 15];
                o += 6;
            }
            p++;
        } else {
            int k = utf8_length(p);
            if (k == 0) {
                memcpy(o, "\\ufffd", 6);   /* one byte in, six out: within the reserve */
                o += 6;
                p++;
            } else {
                memcpy(o, p, (size_t)k);
                o += k;
                p += k;
            }
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->data);
    b->data[b->len] = '\0';
}

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
    e->code = code;
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
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
    default: code = API_E_INTERNAL_ERROR; break;
    }
    api__fail(e, code, rename_field(ae->field, m), "%s", ae->message);
}
