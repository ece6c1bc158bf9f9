/* api_requests.h - the requests a client of the API would copy: the JSON body
 * of every `curl ... localhost:8080/attention/X -d '{...}'` line of README.md
 * and every file of api/examples/ (tests/test_api_openapi.c validates them
 * against the OpenAPI document, tests/test_api_clients.c compiles them as
 * typed TypeScript).
 *
 *   api_request_list l;
 *   if (api_requests_load(&l, err, sizeof err) == 0) { ... api_requests_free(&l); }
 */
#ifndef TESTS_SUPPORT_API_REQUESTS_H
#define TESTS_SUPPORT_API_REQUESTS_H

#include <jansson.h>
#include <stddef.h>

typedef struct {
    char name[96];   /* "README.md:120", "docs/api.md:98", "api/examples/sdpa_gqa.json" */
    char path[64];   /* "/attention/multihead" */
    json_t *body;    /* the request, owned */
} api_example_request;

typedef struct {
    api_example_request *items;
    size_t count;
    size_t from_readme;   /* how many of them come from README.md and docs/ (the first ones) */
} api_request_list;

/* Reads README.md, then api/examples/ (sorted by name). Returns 0, or -1 with
 * the reason in err (a README curl line whose body is not JSON, an unreadable
 * file). */
int api_requests_load(api_request_list *l, char *err, size_t cap);

void api_requests_free(api_request_list *l);

#endif
