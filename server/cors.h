/* cors.h - which origins may read the replies (--cors-origin).
 *
 * The option is "" (no CORS headers), "*" (any origin, no credentials), or a
 * comma-separated list of origins ("https://a.example, http://localhost:5173").
 * With a list, a request whose Origin header is on it gets that origin back
 * in Access-Control-Allow-Origin; every reply says "Vary: Origin", since it
 * depends on that header (the Fetch standard's advice for caches).
 */
#ifndef SRV_CORS_H
#define SRV_CORS_H

#include <stddef.h>

#define SRV_CORS_MAX 32   /* origins in the list */

typedef struct {
    int any;                               /* "*" */
    int n;                                 /* origins in the list */
    char origin[SRV_CORS_MAX][256];        /* "scheme://host[:port]", as given */
} srv_cors;

/* Parses the option value. Returns 0, or -1 with what is wrong in err:
 * an entry that is not scheme://host[:port], "*" mixed with origins, or too
 * many entries. */
int srv_cors_parse(srv_cors *c, const char *value, char *err, size_t err_size);

/* 1 if replies carry CORS headers at all. */
int srv_cors_enabled(const srv_cors *c);

/* The Access-Control-Allow-Origin value for a request with this Origin
 * header (NULL when absent): "*", origin itself (the same pointer: browsers
 * compare it byte for byte), or NULL when it gets none. */
const char *srv_cors_allow(const srv_cors *c, const char *origin);

/* 1 when replies depend on the Origin header (a list, not "*"). */
int srv_cors_varies(const srv_cors *c);

#endif
