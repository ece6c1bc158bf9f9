/* openapi.h - the tables the OpenAPI document is made from (private to
 * api/): tables.c prints them as JSON, build/tools/api-tables writes that
 * out at build time, and gen.py turns it (with api/examples/) into the
 * document GET /openapi.json serves (embedded by doc.S). */
#ifndef API_OPENAPI_H
#define API_OPENAPI_H

/* The endpoint, module, output and error tables as JSON text; malloc'd,
 * NULL on failure. */
char *api__tables_json(void);

#endif
