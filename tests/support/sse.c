/* sse.c - see sse.h. */
#include "sse.h"

#include <stdlib.h>
#include <string.h>

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* Appends a data line to *data ("a\nb" for two lines). */
static void add_data(char **data, const char *s, size_t n) {
    size_t old = *data ? strlen(*data) : 0;
    char *d = realloc(*data, old + n + 2);
    if (!d) return;
    if (*data) d[old++] = '\n';
    memcpy(d + old, s, n);
    d[old + n] = '\0';
    *data = d;
}

/* One line of a block: "field: value" (one space after the colon dropped). */
static void field(const char *line, size_t n, char **event, char **data) {
    const char *colon = memchr(line, ':', n);
    size_t k = colon ? (size_t)(colon - line) : n, v = colon ? k + 1 : n;
    if (v < n && line[v] == ' ') v++;
    if (k == 5 && memcmp(line, "event", 5) == 0) {
        free(*event);
        *event = dup_n(line + v, n - v);
    } else if (k == 4 && memcmp(line, "data", 4) == 0) {
        add_data(data, line + v, n - v);
    }
}

int sse_parse(const char *text, size_t len, sse_list *out) {
    memset(out, 0, sizeof *out);
    char *event = NULL, *data = NULL;
    size_t at = 0;
    while (at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        if (n == 0 && (event || data) && out->n < SSE_MAX_EVENTS) { /* a blank line ends a block */
            out->ev[out->n].event = event ? event : dup_n("message", 7);
            out->ev[out->n++].data = data ? data : dup_n("", 0);
            event = data = NULL;
        } else if (n > 0) {
            field(text + at, n, &event, &data);
        }
        at += n + 1;
    }
    out->complete = event == NULL && data == NULL && len >= 2 && text[len - 1] == '\n' &&
                    text[len - 2] == '\n';
    free(event);
    free(data);
    return out->n;
}

void sse_free(sse_list *l) {
    for (int i = 0; i < l->n; i++) {
        free(l->ev[i].event);
        free(l->ev[i].data);
    }
    l->n = 0;
}
