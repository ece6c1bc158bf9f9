#include "api/api_internal.h"
const char *api_openapi_json(void) { return "{}"; }
