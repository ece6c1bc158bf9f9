/* parts.c - the arrays a request allocates for its results, and replies
 * sent from them: a float32 safetensors reply leaves its tensors where the
 * computation wrote them (api_reply.parts), and the reply then owns those
 * arrays until it is freed. */
#include "api/reply/reply.h"

#include <stdlib.h>
#include <string.h>

void *api__arrays_take(api_arrays *a, size_t count, size_t size) {
    void *p = malloc(count ? count * size : 1);
    if (p == NULL || api__arrays_keep(a, p)) {
        a->failed = 1;
        return NULL;
    }
    api__huge_pages(p, count * size); /* the maps of long sequences */
    return p;
}

int api__arrays_keep(api_arrays *a, void *p) {
    if (p == NULL) return 0;
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 16;
        void **grown = realloc(a->p, (size_t)cap * sizeof *grown);
        if (grown == NULL) {
            free(p);
            a->failed = 1;
            return -1;
        }
        a->p = grown;
        a->cap = cap;
    }
    a->p[a->n++] = p;
    return 0;
}

void api__arrays_free(api_arrays *a) {
    for (int i = 0; i < a->n; i++) free(a->p[i]);
    free(a->p);
    *a = (api_arrays){0};
}

/* What a reply in parts owns: the parts and the arrays they point into. */
typedef struct {
    api_st_parts parts;
    api_arrays arrays;
} parts_owner;

int api__reply_adopt(api_reply *reply, api_arrays *a, const api_st_parts *parts) {
    parts_owner *o = malloc(sizeof *o);
    if (o == NULL) return -1;
    o->parts = *parts;
    o->arrays = *a;
    *a = (api_arrays){0};
    reply->parts = o->parts.part;
    reply->n_parts = o->parts.n;
    reply->parts_owner = o;
    return 0;
}

void api_reply_free(api_reply *reply) {
    api_buf_free(&reply->body);
    parts_owner *o = reply->parts_owner;
    if (o) {
        api__arrays_free(&o->arrays);
        free(o);
    }
    reply->parts = NULL;
    reply->n_parts = 0;
    reply->parts_owner = NULL;
}

size_t api_reply_length(const api_reply *reply) {
    size_t n = reply->body.len;
    for (int i = 0; i < reply->n_parts; i++) n += reply->parts[i].len;
    return n;
}

int api_reply_flatten(api_reply *reply) {
    if (reply->n_parts == 0) return 0;
    if (api__buf_reserve(&reply->body, api_reply_length(reply) - reply->body.len + 1)) return -1;
    for (int i = 0; i < reply->n_parts; i++)
        api__buf_put(&reply->body, reply->parts[i].data, reply->parts[i].len);
    api_buf body = reply->body;
    reply->body = (api_buf){0};
    api_reply_free(reply); /* the arrays */
    reply->body = body;
    return 0;
}
