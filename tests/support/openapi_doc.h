/* openapi_doc.h - the OpenAPI document that api/ serves (api_openapi_json),
 * parsed, for the tests that read it (tests/test_api_openapi*.c). */
#ifndef TESTS_SUPPORT_OPENAPI_DOC_H
#define TESTS_SUPPORT_OPENAPI_DOC_H

#include <jansson.h>

/* A new reference to the parsed document; fails the running check when it
 * is not JSON. */
json_t *openapi_doc(void);

#endif
