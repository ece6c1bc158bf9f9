/* jschema.h - a small JSON Schema (2020-12) validator on jansson, for the
 * subset the OpenAPI document of api/ uses (tests/test_api_openapi_replies.c).
 *
 *   jschema_error err;
 *   int rc = jschema_validate(doc, schema, instance, &err);
 *   if (rc == JSCHEMA_INVALID) printf("%s: %s\n", err.path, err.message);
 *
 * Keywords understood: type (a name or an array of names), enum, const,
 * properties, required, additionalProperties, items, prefixItems, minItems,
 * maxItems, minimum, maximum, oneOf, anyOf, allOf, and $ref to a JSON
 * pointer inside the document ("#/components/schemas/Tensor"). Boolean
 * schemas (true, false) are accepted. Descriptive keywords are ignored:
 * description, title, example, examples, format, deprecated, default,
 * $comment, externalDocs. Any other keyword is a schema error
 * (JSCHEMA_SCHEMA_ERROR), so the validator never passes what it does not
 * understand.
 *
 * Numbers compare by value: 1 and 1.0 are equal, and 2.0 is an integer.
 */
#ifndef TESTS_JSCHEMA_H
#define TESTS_JSCHEMA_H

#include <jansson.h>

enum {
    JSCHEMA_VALID = 0,
    JSCHEMA_INVALID = 1,        /* the instance violates the schema */
    JSCHEMA_SCHEMA_ERROR = -1,  /* unknown keyword, dangling $ref, malformed schema */
};

typedef struct {
    char path[512];         /* JSON path of the first violation: "$.context[1][2]" */
    char schema_path[512];  /* where in the schema: "#/components/schemas/Shape/required" */
    char message[512];
} jschema_error;

/* Validates instance against schema. doc is the document "#/..." references
 * resolve in (NULL: schema itself). err may be NULL. Returns JSCHEMA_VALID,
 * JSCHEMA_INVALID with the first violation in err, or JSCHEMA_SCHEMA_ERROR
 * with the fault in err (path: where the instance was, schema_path: the
 * offending schema location). */
int jschema_validate(const json_t *doc, const json_t *schema, const json_t *instance,
                     jschema_error *err);

/* Walks a schema (not following $ref, which is only resolved) and reports the
 * first unknown keyword, malformed keyword value or dangling $ref, without an
 * instance. Returns JSCHEMA_VALID or JSCHEMA_SCHEMA_ERROR. */
int jschema_check(const json_t *doc, const json_t *schema, jschema_error *err);

/* Resolves "#/a/b~1c" in doc (NULL if absent or not a local pointer). */
const json_t *jschema_resolve(const json_t *doc, const char *ref);

#endif
