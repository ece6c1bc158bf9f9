/* fields.c - typed fields of a request object, with the error messages
 * every endpoint gives (see api_internal.h). */
#include "api/request/request.h"

#include <stdio.h>
#include <string.h>

const json_t *api__field(const json_t *root, const char *name) {
    const json_t *v = json_object_get(root, name);
    return json_is_null(v) ? NULL : v;
}

int api__field_wrong_type(api_err *e, const char *name, const json_t *v, const char *want) {
    static const char *const names[] = {"an object", "an array", "a string", "an integer",
                                        "a number", "true", "false", "null"};
    return api__fail(e, API_E_INVALID_TYPE, name, "%s must be %s, got %s", name, want,
                     names[json_typeof(v)]);
}

int api__field_int(const json_t *root, const char *name, long long min, long long max, int *out,
                   api_err *e) {
    const json_t *v = api__field(root, name);
    if (v == NULL) return 0;
    if (!json_is_integer(v)) return api__field_wrong_type(e, name, v, "an integer");
    long long x = json_integer_value(v);
    if (x < min || x > max)
        return api__fail(e, API_E_INVALID_ARGUMENT, name, "%s must be from %lld to %lld, got %lld",
                         name, min, max, x);
    *out = (int)x;
    return 1;
}

int api__field_required_int(const json_t *root, const char *name, long long min, long long max,
                            int *out, api_err *e) {
    int rc = api__field_int(root, name, min, max, out, e);
    if (rc == 0) return api__fail(e, API_E_MISSING_FIELD, name, "%s is required", name);
    return rc < 0 ? -1 : 0;
}

int api__field_bool(const json_t *root, const char *name, int *out, api_err *e) {
    const json_t *v = api__field(root, name);
    if (v == NULL) return 0;
    if (!json_is_boolean(v)) return api__field_wrong_type(e, name, v, "true or false");
    *out = json_is_true(v);
    return 1;
}

int api__field_number(const json_t *root, const char *name, double *out, api_err *e) {
    const json_t *v = api__field(root, name);
    if (v == NULL) return 0;
    if (!json_is_number(v)) return api__field_wrong_type(e, name, v, "a number");
    *out = json_number_value(v);
    return 1;
}

int api__field_choice(const json_t *root, const char *name, const char *const *choices, int *out,
                      api_err *e) {
    const json_t *v = api__field(root, name);
    if (v == NULL) return 0;
    if (!json_is_string(v)) return api__field_wrong_type(e, name, v, "a string");
    char list[256] = "";
    for (int i = 0; choices[i]; i++) {
        if (strcmp(json_string_value(v), choices[i]) == 0) {
            *out = i;
            return 1;
        }
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s\"%s\"", i ? ", " : "", choices[i]);
    }
    char echo[API_ECHO_MAX + 4];
    return api__fail(e, API_E_INVALID_ARGUMENT, name, "%s \"%s\" is not one of %s", name,
                     api__echo(echo, sizeof echo, json_string_value(v)), list);
}

const char *api__unknown_key(const json_t *root, const char *const *fields) {
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)root, key, v)
        if (!api__has_field(fields, key)) return key;
    return NULL;
}

int api__has_field(const char *const *fields, const char *field) {
    for (; fields && *fields; fields++)
        if (strcmp(*fields, field) == 0) return 1;
    return 0;
}
