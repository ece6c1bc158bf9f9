/* openapi_doc.c - see openapi_doc.h. */
#include "openapi_doc.h"

#include <check.h>

#include "api/api.h"

json_t *openapi_doc(void) {
    json_error_t je;
    json_t *doc = json_loads(api_openapi_json(), 0, &je);
    ck_assert_msg(doc != NULL, "the embedded document is not JSON: %s (line %d)", je.text, je.line);
    return doc;
}
