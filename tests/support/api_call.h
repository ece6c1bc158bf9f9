/* api_call.h - one api_handle call as the tests make it: the body parsed as
 * JSON (a reply that is not JSON fails the test), the status checked.
 *
 *   json_t *j = tapi_call(API_EP_SELF, body, NULL, 200);   default limits
 *   ... json_decref(j);
 */
#ifndef TESTS_SUPPORT_API_CALL_H
#define TESTS_SUPPORT_API_CALL_H

#include <jansson.h>

#include "api/api.h"

typedef struct {
    int status;
    json_t *j;      /* the parsed reply, owned */
    char *text;     /* the reply's text, owned */
} tapi_reply;

/* api_handle(ep, body) with lim (NULL: max_elements 100,000,000 and nothing
 * else): the status and the parsed reply. */
tapi_reply tapi_handle(api_endpoint ep, const char *body, const api_limits *lim);
void tapi_reply_free(tapi_reply *r);

/* The same, the status checked against want_status; the parsed reply. */
json_t *tapi_call(api_endpoint ep, const char *body, const api_limits *lim, int want_status);

/* A request body made of r (taken) with extra_json's members (NULL: none)
 * set over its own: compact JSON text, malloc'd. */
char *tapi_body(json_t *r, const char *extra_json);

/* The bytes the request asked the memory budget for (api_limits.reserve;
 * its last call): api_handle(ep, body) with lim (NULL: the defaults) and a
 * reserve callback that records and allows, the status checked to be 200. */
size_t tapi_reserved(api_endpoint ep, const char *body, const api_limits *lim);

/* api_handle(ep, body) with lim (NULL: the defaults) must answer status
 * with an error whose "field" is field. */
void tapi_expect_field(api_endpoint ep, const char *body, const api_limits *lim, int status, const char *field);

#endif
