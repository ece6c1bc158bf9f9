/* route.c - path and method table, see route.h: the compute routes are
 * api.h's endpoint table, the others the server's own. */
#include "route.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const fixed_paths[] = {
    [SRV_R_HEALTHZ] = "/healthz", [SRV_R_READYZ] = "/readyz", [SRV_R_METRICS] = "/metrics",
    [SRV_R_VERSION] = "/version", [SRV_R_MODELS] = "/models", [SRV_R_OPENAPI] = "/openapi.json",
    [SRV_R_V1_MODELS] = "/v1/models", [SRV_R_VIEWER] = "/",
};

const char *srv_route_path_of(const char *target) {
    size_t scheme = strncasecmp(target, "http://", 7) == 0    ? 7
                    : strncasecmp(target, "https://", 8) == 0 ? 8
                                                              : 0;
    if (scheme == 0) return target;
    const char *end = target + scheme + strcspn(target + scheme, "/?"); /* the authority's */
    return *end == '/' ? end : "/";
}

srv_route srv_route_find(const char *path) {
    api_endpoint ep;
    if (api_endpoint_from_path(path, &ep) == 0) return (srv_route)ep; /* in the same order */
    for (int r = SRV_R_HEALTHZ; r <= SRV_R_VIEWER; r++)
        if (strcmp(path, fixed_paths[r]) == 0) return (srv_route)r;
    return SRV_R_UNKNOWN;
}

const char *srv_route_label(srv_route r) {
    if (r <= SRV_R_LAST_COMPUTE) return api_endpoint_path((api_endpoint)r);
    if (r <= SRV_R_VIEWER) return fixed_paths[r];
    return "other";
}

/* The method of a route: its endpoint's, GET for the server's own. */
static const char *route_method(int r) {
    return r <= SRV_R_LAST_COMPUTE ? api_endpoint_get((api_endpoint)r)->method : "GET";
}

size_t srv_route_list(char *out, size_t size, const char *sep) {
    size_t n = 0;
    out[0] = '\0';
    for (int r = 0; r <= SRV_R_VIEWER; r++) {
        int first = 1; /* a method's paths follow its first route */
        for (int k = 0; k < r && first; k++) first = strcmp(route_method(k), route_method(r)) != 0;
        if (!first) continue;
        n += (size_t)snprintf(out + n, n < size ? size - n : 0, "%s%s", n ? sep : "", route_method(r));
        for (int k = r; k <= SRV_R_VIEWER; k++)
            if (strcmp(route_method(k), route_method(r)) == 0)
                n += (size_t)snprintf(out + n, n < size ? size - n : 0, " %s", srv_route_label((srv_route)k));
    }
    return n;
}

const char *srv_route_allow(srv_route r) {
    return r <= SRV_R_LAST_COMPUTE ? "POST, OPTIONS" : "GET, HEAD, OPTIONS";
}

int srv_route_allows(srv_route r, const char *method) {
    if (strcmp(method, "OPTIONS") == 0) return 1;
    if (r <= SRV_R_LAST_COMPUTE) return strcmp(method, api_endpoint_get((api_endpoint)r)->method) == 0;
    return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
}

int srv_route_endpoint(srv_route r, api_endpoint *ep) {
    if (r > SRV_R_LAST_COMPUTE) return 0;
    *ep = (api_endpoint)r; /* the compute routes are API_ENDPOINT_MAP's rows, in order */
    return 1;
}
