/* route.h - the paths the server answers and the methods each allows. */
#ifndef SRV_ROUTE_H
#define SRV_ROUTE_H

#include "api/api.h"

typedef enum {
    /* the compute routes (POST) come first, in api_endpoint order */
    SRV_R_SIMPLE, SRV_R_SELF, SRV_R_CAUSAL, SRV_R_MULTIHEAD, SRV_R_SDPA, SRV_R_MODEL_GPT2,
    SRV_R_HEALTHZ, SRV_R_READYZ, SRV_R_METRICS, SRV_R_VERSION, SRV_R_MODELS, SRV_R_OPENAPI,
    SRV_R_VIEWER,    /* GET /: the map viewer page */
    SRV_R_UNKNOWN,   /* any other path: 404 */
    SRV_R_COUNT
} srv_route;

/* The last compute route: r <= SRV_R_LAST_COMPUTE is a POST route. */
#define SRV_R_LAST_COMPUTE SRV_R_MODEL_GPT2

/* The route of a path (query string already removed); SRV_R_UNKNOWN if none. */
srv_route srv_route_find(const char *path);
/* The path, or "other" for SRV_R_UNKNOWN: the endpoint label in /metrics. */
const char *srv_route_label(srv_route r);
/* The value of the Allow header: "POST, OPTIONS" or "GET, HEAD, OPTIONS". */
const char *srv_route_allow(srv_route r);
/* 1 if the method is allowed on the route (OPTIONS always is). */
int srv_route_allows(srv_route r, const char *method);
/* 1 for the POST routes (/attention/..., /model/gpt2), with *ep set. */
int srv_route_endpoint(srv_route r, api_endpoint *ep);

#endif
