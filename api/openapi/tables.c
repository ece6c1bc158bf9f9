/* tables.c - the tables the OpenAPI document is made from, as JSON: the
 * endpoints (API_ENDPOINT_MAP) with their kinds, formats and modules, the
 * fields of each module, the outputs (API_OUTPUT_MAP), the error codes
 * (API_ERROR_MAP), the reply formats (API_FORMAT_MAP), the whole models'
 * architectures (ATTN_ARCH_MAP) with their hyperparameters, and their hook
 * points (ATTN_HOOK_MAP) and patching sites (INSIDE_SITE_MAP). `make` runs
 * build/tools/api-tables, which prints this, and api/openapi/gen.py turns it
 * (with api/examples/) into build/gen/openapi.json, the document served. */
#include "api/model/model.h"
#include "api/module/module.h"
#include "api/openapi/openapi.h"
#include "api/pipeline.h"

#include <math.h>
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

/* The formats a kind writes, as their names. */
static json_t *format_names(unsigned formats) {
    json_t *a = json_array();
    for (int f = 0; f < API_FORMAT_COUNT; f++)
        if (formats & 1u << f) json_array_append_new(a, json_string(api_format_get((api_format)f)->name));
    return a;
}

/* Each endpoint: its path, its name (the path's last part), its kind, the
 * formats it writes and its modules (the attention kind's), the first being
 * the default. */
static json_t *endpoints_json(void) {
    static const char *const kind_names[API_KIND_COUNT] = {
        [API_KIND_MODULE] = "module", [API_KIND_MODEL] = "model", [API_KIND_OPENAI] = "openai",
        [API_KIND_EMBED] = "embeddings",
        [API_KIND_TOKENS] = "tokens"};
    json_t *eps = json_array();
    for (int e = 0; e < API_EP_COUNT; e++) {
        const api_endpoint_info *info = api_endpoint_get((api_endpoint)e);
        attn_module mods[ATTN_MODULE_COUNT];
        int n = info->kind == API_KIND_MODULE ? api__endpoint_modules((api_endpoint)e, mods) : 0;
        json_t *names = json_array();
        for (int i = 0; i < n; i++) json_array_append_new(names, json_string(attn_module_name(mods[i])));
        json_array_append_new(eps, json_pack("{s:s, s:s, s:s, s:s, s:o, s:o}", "name",
                                             strrchr(info->path, '/') + 1, "path", info->path,
                                             "method", info->method, "kind", kind_names[info->kind],
                                             "formats", format_names(api__kind_get(info->kind)->formats),
                                             "modules", names));
    }
    return eps;
}

/* The reply formats: name, MIME type, and whether the reply is JSON. */
static json_t *formats_json(void) {
    json_t *a = json_array();
    for (int f = 0; f < API_FORMAT_COUNT; f++) {
        const api_format_info *i = api_format_get((api_format)f);
        json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:b}", "name", i->name, "mime", i->mime,
                                           "json", (i->flags & API_FMT_JSON) != 0, "image",
                                           (i->flags & API_FMT_IMAGE) != 0));
    }
    return a;
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

/* The whole models' architectures (core's ATTN_ARCH_MAP): the class name,
 * its constructor's call, what it is, and its hyperparameters under its
 * request names (type, default or required, choices). */
static json_t *hparams_json(attn_arch a) {
    static const char *const types[] = {[ATTN_HP_INT] = "integer", [ATTN_HP_REAL] = "number",
                                        [ATTN_HP_BOOL] = "boolean", [ATTN_HP_ACT] = "activation",
                                        [ATTN_HP_ROPE] = "rope_scaling",
                                        [ATTN_HP_PATTERN] = "layer_types",
                                        [ATTN_HP_PART] = "boolean"};
    const attn_arch_hparam *hp;
    int n = attn_arch_hparams(a, &hp);
    json_t *list = json_array();
    for (int i = 0; i < n; i++) {
        if (!hp[i].name) continue; /* not a request's field */
        attn_hp_type t = attn_hparam_type(hp[i].id);
        json_t *def = isnan(hp[i].def) || t == ATTN_HP_ROPE || t == ATTN_HP_PATTERN ? json_null()
                      : t == ATTN_HP_INT ? json_integer((json_int_t)hp[i].def)
                      : t == ATTN_HP_BOOL || t == ATTN_HP_PART ? json_boolean(hp[i].def != 0.0)
                      : t == ATTN_HP_ACT ? json_string(attn_act_name((attn_act)(int)hp[i].def))
                                         : json_real(hp[i].def);
        json_t *choices = json_array();
        for (int c = 0; hp[i].choices && hp[i].choices[c]; c++)
            json_array_append_new(choices, json_string(hp[i].choices[c]));
        json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:o, s:i, s:o, s:s}", "name", hp[i].name,
                                              "field", attn_hparam_field(hp[i].id), "type", types[t],
                                              "default", def, "minimum", hp[i].min, "choices", choices,
                                              "what", attn_hparam_what(hp[i].id)));
    }
    return list;
}

static json_t *architectures_json(void) {
    json_t *a = json_array();
    for (int k = 0; k < ATTN_ARCH_COUNT; k++)
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:o}", "name", attn_arch_name((attn_arch)k),
                                           "ctor", attn_arch_ctor((attn_arch)k), "what",
                                           attn_arch_what((attn_arch)k), "hparams",
                                           hparams_json((attn_arch)k)));
    return a;
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

/* The hook points of a whole model (core's ATTN_HOOK_MAP), the sites
 * "patch" takes (INSIDE_SITE_MAP) and the analyses (ATTN_ANALYSIS_MAP). */
static json_t *inside_json(void) {
    static const char *const shapes[] = {"[B][T][C]", "[B][T][H][D]", "[B][H][T][T]", "[B][T][F]",
                                         "[B][T][Hkv][D]"};
    json_t *hooks = json_array(), *sites = json_array();
    for (int h = 0; h < ATTN_HOOK_COUNT; h++) {
        const attn_hook_info *i = attn_hook_get((attn_hook)h);
        json_array_append_new(hooks, json_pack("{s:s, s:b, s:s, s:s}", "name", i->name, "per_block",
                                               i->per_block, "shape", shapes[i->shape], "what", i->what));
    }
    for (int s = 0; s < INSIDE_SITE_COUNT; s++) {
        const inside_site_info *i = api__inside_site((inside_site)s);
        json_array_append_new(sites, json_pack("{s:s, s:s, s:b}", "name", i->name, "hook",
                                               attn_hook_get(i->hook)->name, "per_head", i->per_head));
    }
    json_t *analyses = json_array();
    for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++) {
        const attn_analysis_info *i = attn_analysis_get((attn_analysis)a);
        json_array_append_new(analyses, json_pack("{s:s, s:s, s:b, s:s}", "name", i->name, "shape",
                                                  i->shape == ATTN_ANALYSIS_SHAPE_MAPS
                                                      ? "[B][n_layer][T][T]" : "[B][n_layer][n_head]",
                                                  "from_maps", i->from_maps, "what", i->what));
    }
    return json_pack("{s:o, s:o, s:o}", "hooks", hooks, "sites", sites, "analyses", analyses);
}

char *api__tables_json(void) {
    json_t *t = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "endpoints", endpoints_json(), "modules",
                          modules_json(), "outputs", outputs_json(), "errors", errors_json(),
                          "formats", formats_json(), "architectures", architectures_json(),
                          "inside", inside_json());
    char *s = t ? json_dumps(t, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(t);
    return s;
}
