/* route.c - path and method table, see route.h. */
#include "route.h"

#include <string.h>

static const char *const fixed_paths[] = {
    [SRV_R_HEALTHZ] = "/healthz", [SRV_R_READYZ] = "/readyz", [SRV_R_METRICS] = "/metrics",
    [SRV_R_VERSION] = "/version", [SRV_R_MODELS] = "/models", [SRV_R_OPENAPI] = "/openapi.json",
    [SRV_R_VIEWER] = "/",
};

static const char *const compute_paths[] = {
    "/attention/simple", "/attention/self", "/attention/causal",
    "/attention/multihead", "/attention/sdpa",
    "/model/gpt2",
};

srv_route srv_route_find(const char *path) {
    for (int r = SRV_R_SIMPLE; r <= SRV_R_LAST_COMPUTE; r++)
        if (strcmp(path, compute_paths[r]) == 0) return (srv_route)r;
    for (int r = SRV_R_HEALTHZ; r <= SRV_R_VIEWER; r++)
        if (strcmp(path, fixed_paths[r]) == 0) return (srv_route)r;
    return SRV_R_UNKNOWN;
}

const char *srv_route_label(srv_route r) {
    if (r <= SRV_R_LAST_COMPUTE) return compute_paths[r];
    if (r <= SRV_R_VIEWER) return fixed_paths[r];
    return "other";
}

const char *srv_route_allow(srv_route r) {
    return r <= SRV_R_LAST_COMPUTE ? "POST, OPTIONS" : "GET, HEAD, OPTIONS";
}

int srv_route_allows(srv_route r, const char *method) {
    if (strcmp(method, "OPTIONS") == 0) return 1;
    if (r <= SRV_R_LAST_COMPUTE) return strcmp(method, "POST") == 0;
    return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
}

int srv_route_endpoint(srv_route r, api_endpoint *ep) {
    if (r > SRV_R_LAST_COMPUTE) return 0;
    /* Keeps the api's own table authoritative for the path of each id. */
    if (api_endpoint_from_path(compute_paths[r], ep) != 0) return 0;
    return 1;
}
