/* route.h - the paths the server answers and the methods each allows. */
#ifndef SRV_ROUTE_H
#define SRV_ROUTE_H

#include <stddef.h>

#include "api/api.h"

typedef enum {
    /* the compute routes come first, one per row of api.h's API_ENDPOINT_MAP */
#define SRV_R_API(id, method, path, kind) SRV_R_##id,
    API_ENDPOINT_MAP(SRV_R_API)
#undef SRV_R_API
    SRV_R_HEALTHZ, SRV_R_READYZ, SRV_R_METRICS, SRV_R_VERSION, SRV_R_MODELS, SRV_R_OPENAPI,
    SRV_R_V1_MODELS, /* GET /v1/models: OpenAI's list of the models */
    SRV_R_VIEWER,    /* GET /: the map viewer page */
    SRV_R_UNKNOWN,   /* any other path: 404 */
    SRV_R_COUNT
} srv_route;

/* The last compute route: r <= SRV_R_LAST_COMPUTE is an api endpoint. */
#define SRV_R_LAST_COMPUTE (SRV_R_HEALTHZ - 1)

/* The path of a request target: the target itself in origin form ("/x"),
 * the part from the first '/' after the authority in absolute form
 * ("http://host:8080/x", which RFC 9112 has a server accept; any case of
 * the scheme; "/" when nothing follows the authority). Points into target,
 * or at a static "/". */
const char *srv_route_path_of(const char *target);

/* The route of a path (query string already removed); SRV_R_UNKNOWN if none. */
srv_route srv_route_find(const char *path);
/* The path, or "other" for SRV_R_UNKNOWN: the endpoint label in /metrics. */
const char *srv_route_label(srv_route r);
/* Every path the server answers, by method, from the tables (api.h's
 * API_ENDPOINT_MAP and the server's own): "POST /attention/simple ...
 * /model/gpt2<sep>GET /healthz ... /". Writes at most size bytes (NUL
 * included); returns the length it needed, as snprintf. */
size_t srv_route_list(char *out, size_t size, const char *sep);
/* The value of the Allow header: "POST, OPTIONS" or "GET, HEAD, OPTIONS". */
const char *srv_route_allow(srv_route r);
/* 1 if the method is allowed on the route (OPTIONS always is). */
int srv_route_allows(srv_route r, const char *method);
/* 1 for the POST routes (/attention/..., /model/gpt2), with *ep set. */
int srv_route_endpoint(srv_route r, api_endpoint *ep);

#endif
