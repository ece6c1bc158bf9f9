/* api-tables.c - build tool: prints api__tables_json() (the endpoint, module,
 * output and error tables) to stdout. `make` runs it and feeds the result to
 * api/openapi/gen.py, which writes the OpenAPI document the server embeds. */
#include <stdio.h>
#include <stdlib.h>

#include "api/openapi/openapi.h"

int main(void) {
    char *s = api__tables_json();
    if (s == NULL) {
        fprintf(stderr, "api-tables: out of memory\n");
        return 1;
    }
    int rc = puts(s) < 0 || fflush(stdout) != 0;
    free(s);
    return rc;
}
