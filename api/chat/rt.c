/* rt.c - what every part of a render stands on: the arena (chunks that are
 * freed together, with a byte limit), errors, and the output buffer. */
#include "api/chat/jinja.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jinja_chunk {
    jinja_chunk *next;
    size_t used, cap;
    max_align_t data[]; /* cap bytes */
};

#define CHUNK_MIN ((size_t)64 << 10)
#define ALIGN (sizeof(max_align_t))

/* n rounded up to the alignment; 0 when that overflows. */
static size_t rounded(size_t n) {
    if (n == 0) n = 1;
    return n > SIZE_MAX / 2 ? 0 : (n + ALIGN - 1) / ALIGN * ALIGN;
}

/* The bytes a new chunk for n bytes takes; 0 when that would pass the limit
 * (the limit counts whole chunks: what the process really holds). */
static size_t chunk_bytes(const jinja_arena *a, size_t n) {
    size_t cap = n > CHUNK_MIN ? n : CHUNK_MIN;
    return cap > a->limit || a->used > a->limit - cap ? 0 : cap;
}

void *api__jinja_arena_alloc(jinja_arena *a, size_t n) {
    n = rounded(n);
    if (n == 0) return NULL;
    jinja_chunk *c = a->head;
    if (c == NULL || c->cap - c->used < n) {
        size_t cap = chunk_bytes(a, n);
        if (cap == 0) return NULL;
        c = malloc(sizeof *c + cap);
        if (c == NULL) return NULL;
        c->next = a->head;
        c->used = 0;
        c->cap = cap;
        a->head = c;
        a->used += cap;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

void api__jinja_arena_free(jinja_arena *a) {
    for (jinja_chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    a->head = NULL;
    a->used = 0;
}

static void set_error_v(api_chat_error *e, int code, int line, const char *fmt, va_list ap) {
    e->code = code;
    e->line = line;
    vsnprintf(e->message, sizeof e->message, fmt, ap);
}

void api__jinja_set_error(api_chat_error *e, int code, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    set_error_v(e, code, line, fmt, ap);
    va_end(ap);
}

/* Keeps the first error: the one that stopped the render. */
int api__jinja_fail(jinja_rt *rt, int code, const char *fmt, ...) {
    if (rt->err->code == 0) {
        va_list ap;
        va_start(ap, fmt);
        set_error_v(rt->err, code, rt->line, fmt, ap);
        va_end(ap);
    }
    return -1;
}

void *api__jinja_alloc(jinja_rt *rt, size_t n) {
    void *p = api__jinja_arena_alloc(&rt->arena, n);
    if (p == NULL) {
        if (rounded(n) == 0 || chunk_bytes(&rt->arena, rounded(n)) == 0)
            api__jinja_fail(rt, API_CHAT_ELIMIT, "the render needs more than %zu bytes of memory",
                            rt->arena.limit);
        else
            api__jinja_fail(rt, API_CHAT_ENOMEM, "out of memory");
    }
    return p;
}

/* Appends to b, which may grow to the render's memory limit. */
int api__jinja_add(jinja_rt *rt, jinja_buf *b, const char *s, size_t n) {
    size_t limit = rt->arena.limit;
    if (n > limit || b->n > limit - n)
        return api__jinja_fail(rt, API_CHAT_ELIMIT, "a string is longer than %zu bytes", limit);
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (p == NULL) return api__jinja_fail(rt, API_CHAT_ENOMEM, "out of memory");
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

/* b's text as a string value in the arena; b is emptied and freed. */
int api__jinja_take(jinja_rt *rt, jinja_buf *b, jinja_value *out) {
    char *p = api__jinja_alloc(rt, b->n + 1);
    if (p) {
        if (b->n) memcpy(p, b->p, b->n);
        p[b->n] = '\0';
        *out = JV_STR(p, b->n);
    }
    free(b->p);
    *b = (jinja_buf){0};
    return p ? 0 : -1;
}

/* The rendered text, which may grow to max_output. */
int api__jinja_emit(jinja_rt *rt, const char *s, size_t n) {
    if (n > rt->lim.max_output || rt->out.n > rt->lim.max_output - n)
        return api__jinja_fail(rt, API_CHAT_ELIMIT, "the output is longer than %zu bytes",
                               rt->lim.max_output);
    return api__jinja_add(rt, &rt->out, s, n);
}
