/* buf.c - the growing reply buffer, JSON string escaping, huge pages for
 * large arrays, and the clock of the reply's timings. */
#include "api/base/base.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

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

size_t api__utf8_put(char *out, uint32_t cp) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
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

double api__now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
