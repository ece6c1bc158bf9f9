/* endpoints.c - the endpoint table (API_ENDPOINT_MAP in api.h). */
#include "api/pipeline.h"

#include <string.h>

static const api_endpoint_info endpoints[API_EP_COUNT] = {
#define API_EP_ROW(id, method, path, kind) [API_EP_##id] = {method, path, API_KIND_##kind},
    API_ENDPOINT_MAP(API_EP_ROW)
#undef API_EP_ROW
};

const api_endpoint_info *api_endpoint_get(api_endpoint ep) {
    if ((int)ep < 0 || ep >= API_EP_COUNT) return NULL;
    return &endpoints[ep];
}

const char *api_endpoint_path(api_endpoint ep) {
    const api_endpoint_info *e = api_endpoint_get(ep);
    return e ? e->path : NULL;
}

int api_endpoint_from_path(const char *path, api_endpoint *ep) {
    if (path == NULL) return -1;
    for (int i = 0; i < API_EP_COUNT; i++) {
        if (strcmp(path, endpoints[i].path) == 0) {
            if (ep) *ep = (api_endpoint)i;
            return 0;
        }
    }
    return -1;
}
