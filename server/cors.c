/* cors.c - see cors.h. */
#include "cors.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* scheme "://" host [":" port], nothing else: the serialisation of an origin
 * (RFC 6454), which is what browsers send in Origin. */
static int is_origin(const char *s, size_t n) {
    const char *end = s + n, *p = s;
    if (p == end || !isalpha((unsigned char)*p)) return 0;
    while (p < end && (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')) p++;
    if (end - p < 4 || strncmp(p, "://", 3) != 0) return 0;
    p += 3;
    const char *host = p;
    if (p < end && *p == '[') {   /* IPv6 literal */
        while (p < end && *p != ']') p++;
        if (p == end) return 0;
        p++;
    } else {
        while (p < end && (isalnum((unsigned char)*p) || *p == '-' || *p == '.' || *p == '_')) p++;
    }
    if (p == host) return 0;
    if (p < end && *p == ':') {
        const char *port = ++p;
        long v = 0;
        while (p < end && isdigit((unsigned char)*p) && v <= 65535) v = v * 10 + (*p++ - '0');
        if (p == port || v > 65535) return 0;
    }
    return p == end;
}

int srv_cors_parse(srv_cors *c, const char *value, char *err, size_t err_size) {
    memset(c, 0, sizeof *c);
    const char *p = value;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == ',') p++;
        if (!*p) break;
        size_t n = strcspn(p, ",");
        while (n && (p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
        if (n == 1 && *p == '*') {
            c->any = 1;
        } else if (!is_origin(p, n) || n >= sizeof c->origin[0]) {
            snprintf(err, err_size, "'%.*s' is not an origin (scheme://host[:port], no path)",
                     (int)(n > 80 ? 80 : n), p);
            return -1;
        } else if (c->n == SRV_CORS_MAX) {
            snprintf(err, err_size, "more than %d origins", SRV_CORS_MAX);
            return -1;
        } else {
            memcpy(c->origin[c->n], p, n);
            c->origin[c->n][n] = '\0';
            c->n++;
        }
        p += n;
        while (*p && *p != ',') p++;
    }
    if (c->any && c->n) {
        snprintf(err, err_size, "'*' allows every origin: list origins or give '*' alone");
        return -1;
    }
    return 0;
}

int srv_cors_enabled(const srv_cors *c) { return c->any || c->n > 0; }

int srv_cors_varies(const srv_cors *c) { return !c->any && c->n > 0; }

const char *srv_cors_allow(const srv_cors *c, const char *origin) {
    if (c->any) return "*";
    if (!origin) return NULL;
    /* Scheme and host are case-insensitive; browsers send them in lower case. */
    for (int i = 0; i < c->n; i++)
        if (strcasecmp(origin, c->origin[i]) == 0) return origin;   /* echoed as sent */
    return NULL;
}
