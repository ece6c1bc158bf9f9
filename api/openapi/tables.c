/* tables.c - the tables the OpenAPI document is made from, as JSON:
 * endpoints and their modules, the fields of each module, the outputs
 * (API_OUTPUT_MAP) and the error codes (API_ERROR_MAP). `make` runs
 * build/tools/api-tables, which prints this, and api/openapi/gen.py turns it
 * (with api/examples/) into build/gen/openapi.json, the document served. */
#include "api/module/module.h"
#include "api/openapi/openapi.h"

#include <stdlib.h>
#include <string.h>

static json_t *strings(const char *const *s) {
    json_t *a = json_array();
    for (; s && *s; s++) json_array_append_new(a, json_string(*s));
    return a;
}

/* The modules (core's ATTN_MODULE_MAP) and their request fields. */
static json_t *modules_json(void) {
    json_t *mods = json_array();
    for (int m = 0; m < ATTN_MODULE_COUNT; m++) {
        const attn_module_info *info = attn_module_get((attn_module)m);
        const char *aliases[] = {info->alias, NULL};
        json_array_append_new(mods, json_pack("{s:s, s:o, s:o}", "name", info->name,
                                              "aliases", strings(aliases),
                                              "fields", strings(api__module_fields((attn_module)m))));
    }
    return mods;
}

/* Each endpoint: its path, its name (the path's last part) and its
 * modules, the first being the default. */
static json_t *endpoints_json(void) {
    json_t *eps = json_array();
    for (int e = 0; e < API_EP_COUNT; e++) {
        const char *path = api_endpoint_path((api_endpoint)e);
        attn_module mods[ATTN_MODULE_COUNT];
        int n = api__endpoint_modules((api_endpoint)e, mods);
        json_t *names = json_array();
        for (int i = 0; i < n; i++) json_array_append_new(names, json_string(attn_module_name(mods[i])));
        json_array_append_new(eps, json_pack("{s:s, s:s, s:o}", "name", strrchr(path, '/') + 1,
                                             "path", path, "modules", names));
    }
    return eps;
}

static json_t *outputs_json(void) {
    static const char *const elems[] = {[API_ELEM_F32] = "f32", [API_ELEM_U8] = "u8",
                                        [API_ELEM_JSON] = "json"};
    json_t *outs = json_array();
    for (int k = 0; k < API_OUT_COUNT; k++) {
        const api_output *o = &api__outputs[k];
        json_array_append_new(outs, json_pack("{s:s, s:s, s:b, s:s?}", "name", o->name,
                                              "element", elems[o->elem], "map", o->map,
                                              "description", o->doc));
    }
    return outs;
}

static json_t *errors_json(void) {
    json_t *errs = json_array();
    for (int i = 0; i < API_E_COUNT; i++) {
        const api_error_info *e = api_error_get((api_error)i);
        json_array_append_new(errs, json_pack("{s:s, s:i, s:s}", "code", e->code, "status", e->status,
                                              "description", e->description));
    }
    return errs;
}

char *api__tables_json(void) {
    json_t *t = json_pack("{s:o, s:o, s:o, s:o}", "endpoints", endpoints_json(), "modules",
                          modules_json(), "outputs", outputs_json(), "errors", errors_json());
    char *s = t ? json_dumps(t, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(t);
    return s;
}
