/* encoding.c - HTTP content codings, see encoding.h. */
#include "encoding.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int is_space(char c) { return c == ' ' || c == '\t'; }

/* The token s[0..n) trimmed, compared without case. */
static int token_is(const char *s, size_t n, const char *word) {
    while (n && is_space(*s)) s++, n--;
    while (n && is_space(s[n - 1])) n--;
    return n == strlen(word) && strncasecmp(s, word, n) == 0;
}

srv_coding srv_content_coding(const char *ce) {
    if (ce == NULL) return SRV_CODING_IDENTITY;
    size_t n = strlen(ce);
    if (token_is(ce, n, "") || token_is(ce, n, "identity")) return SRV_CODING_IDENTITY;
    if (token_is(ce, n, "gzip") || token_is(ce, n, "x-gzip")) return SRV_CODING_GZIP;
    return SRV_CODING_OTHER;
}

/* The q-value of one entry "coding;q=0.5" (1 when absent). */
static double q_value(const char *params, size_t n) {
    for (size_t i = 0; i + 1 < n; i++) {
        if ((params[i] == 'q' || params[i] == 'Q') && (i == 0 || params[i - 1] == ';' ||
                                                        is_space(params[i - 1]))) {
            size_t j = i + 1;
            while (j < n && is_space(params[j])) j++;
            if (j < n && params[j] == '=') return strtod(params + j + 1, NULL);
        }
    }
    return 1.0;
}

/* One entry of a comma-separated header list: its name, trimmed, and its q. */
typedef struct {
    const char *name;
    size_t len;
    double q;
} list_entry;

/* Reads the entry at *p and moves *p past it; 0 at the end of the list. */
static int next_entry(const char **p, list_entry *e) {
    if (**p == '\0') return 0;
    const char *end = strchr(*p, ',');
    size_t n = end ? (size_t)(end - *p) : strlen(*p);
    const char *semi = memchr(*p, ';', n);
    size_t name = semi ? (size_t)(semi - *p) : n;
    e->q = semi ? q_value(semi + 1, n - name - 1) : 1.0;
    e->name = *p;
    e->len = name;
    while (e->len && is_space(*e->name)) e->name++, e->len--;
    while (e->len && is_space(e->name[e->len - 1])) e->len--;
    *p += n + (end != NULL);
    return 1;
}

double srv_accept_q(const char *accept, const char *type) {
    if (accept == NULL) return -1;
    const char *slash = strchr(type, '/');
    size_t major = slash ? (size_t)(slash - type) : strlen(type);
    double exact = -1, range = -1, any = -1;
    list_entry e;
    for (const char *p = accept; next_entry(&p, &e);) {
        if (e.len == strlen(type) && strncasecmp(e.name, type, e.len) == 0) exact = e.q;
        else if (e.len == major + 2 && strncasecmp(e.name, type, major + 1) == 0 &&
                 e.name[major + 1] == '*')
            range = e.q;
        else if (e.len == 3 && strncmp(e.name, "*/*", 3) == 0) any = e.q;
    }
    return exact >= 0 ? exact : range >= 0 ? range : any;
}

int srv_accepts_gzip(const char *ae) {
    if (ae == NULL) return 0;
    double gzip = -1, star = -1; /* -1: not mentioned */
    list_entry e;
    for (const char *p = ae; next_entry(&p, &e);) {
        if (token_is(e.name, e.len, "gzip") || token_is(e.name, e.len, "x-gzip")) gzip = e.q;
        else if (token_is(e.name, e.len, "*")) star = e.q;
    }
    return gzip >= 0 ? gzip > 0 : star > 0;
}
