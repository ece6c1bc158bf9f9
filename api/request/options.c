/* options.c - the reply formats' table (API_FORMAT_MAP in api.h, without
 * its writers, which handle.c takes) and the options every endpoint reads
 * the same way: output_format, dtype, precision, and where the parameters
 * come from. */
#include "api/request/request.h"

#include <stdio.h>
#include <string.h>

static const api_format_info formats[API_FORMAT_COUNT] = {
#define API_FORMAT_ROW(id, name, mime, flags, per_value, writer) \
    [API_FORMAT_##id] = {name, mime, flags, per_value},
    API_FORMAT_MAP(API_FORMAT_ROW)
#undef API_FORMAT_ROW
};

const api_format_info *api_format_get(api_format f) {
    if ((int)f < 0 || f >= API_FORMAT_COUNT) return NULL;
    return &formats[f];
}

/* output_format: one of the names of `allowed` (bits of api_format), in the
 * table's order; 0 when absent, -1 with e filled. */
static int read_format(const json_t *root, unsigned allowed, api_format *out, api_err *e) {
    const char *names[API_FORMAT_COUNT + 1];
    api_format ids[API_FORMAT_COUNT];
    int n = 0, k = 0;
    for (int f = 0; f < API_FORMAT_COUNT; f++)
        if (allowed & 1u << f) {
            ids[n] = (api_format)f;
            names[n++] = formats[f].name;
        }
    names[n] = NULL;
    int rc = api__field_choice(root, "output_format", names, &k, e);
    if (rc == 1) *out = ids[k];
    return rc;
}

/* The first format in allowed that the client's Accept does not rule out
 * (lim->refuse_formats) into *format; 406 naming those it writes when none. */
static int accepted(const api_limits *lim, unsigned allowed, api_format *format, api_err *e) {
    unsigned ok = allowed & ~lim->refuse_formats;
    for (int f = 0; f < API_FORMAT_COUNT; f++)
        if (ok & 1u << f) {
            *format = (api_format)f;
            return 0;
        }
    char list[256] = "";
    for (int f = 0, n = 0; f < API_FORMAT_COUNT; f++) {
        if (!(allowed & 1u << f)) continue;
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%s (%s)", n++ ? ", " : "", formats[f].name, formats[f].mime);
    }
    return api__fail(e, API_E_NOT_ACCEPTABLE, NULL, "the Accept header takes none of the formats this "
                     "endpoint writes: %s; accept one, or name it in output_format", list);
}

int api__options_read(const json_t *root, const api_limits *lim, unsigned allowed, api_fmt *f,
                      api_err *e) {
    static const char *const dtypes[] = {"float32", "float16", NULL};
    api_format format = API_FORMAT_NESTED;
    int half = 0;
    int preferred = lim ? lim->prefer_format - 1 : -1; /* the client's Accept */
    if (preferred >= 0 && preferred < API_FORMAT_COUNT && (allowed & 1u << preferred))
        format = (api_format)preferred;
    int named = read_format(root, allowed, &format, e);
    if (named < 0) return -1;
    if (!named && lim && (lim->refuse_formats & 1u << format) && accepted(lim, allowed, &format, e))
        return -1;
    if (api__field_choice(root, "dtype", dtypes, &half, e) < 0 ||
        api__field_int(root, "precision", 1, 9, &f->precision, e) < 0)
        return -1;
    f->format = format;
    f->flat = format == API_FORMAT_FLAT;
    f->half = half;
    f->pool = lim ? lim->compute : NULL; /* large tensors' text on several threads */
    if (half && !(formats[format].flags & API_FMT_HALF)) {
        char list[128] = "";
        for (int i = 0, n = 0; i < API_FORMAT_COUNT; i++) {
            if (!(formats[i].flags & API_FMT_HALF)) continue;
            size_t len = strlen(list);
            snprintf(list + len, sizeof list - len, "%s\"%s\"", n++ ? " or " : "", formats[i].name);
        }
        return api__fail(e, API_E_INVALID_ARGUMENT, "dtype",
                         "dtype float16 is for binary replies: set output_format to %s", list);
    }
    return 0;
}

int api__params_source(const json_t *root, const char *what, api_params_source *out, api_err *e) {
    *out = (api_params_source){0};
    const json_t *init = api__field(root, "init"), *sd = api__field(root, "state_dict");
    if (init && sd)
        return api__fail(e, API_E_INVALID_ARGUMENT, "state_dict",
                         "give either init or state_dict, not both");
    if (sd) {
        if (!json_is_object(sd))
            return api__field_wrong_type(e, "state_dict", sd, "an object of tensors (name: nested array)");
        out->state_dict = sd;
        return 0;
    }
    if (init == NULL)
        return api__fail(e, API_E_MISSING_FIELD, "init",
                         "the parameters are missing: give \"init\": {\"seed\": N} to construct "
                         "%s after torch.manual_seed(N), or \"state_dict\": {name: tensor} "
                         "with its own parameters",
                         what);
    if (!json_is_object(init)) return api__field_wrong_type(e, "init", init, "an object {\"seed\": N}");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)init, key, v) {
        if (strcmp(key, "seed") != 0) {
            char field[API_ECHO_MAX + 16], echo[API_ECHO_MAX + 4];
            snprintf(field, sizeof field, "init.%s", api__echo(echo, sizeof echo, key));
            return api__fail(e, API_E_UNKNOWN_FIELD, field, "unknown field \"%s\" (init takes \"seed\")",
                             field);
        }
    }
    v = api__field(init, "seed");
    if (v == NULL) return api__fail(e, API_E_MISSING_FIELD, "init.seed", "init needs a \"seed\"");
    if (!json_is_integer(v)) return api__field_wrong_type(e, "init.seed", v, "an integer");
    out->has_init = 1;
    out->seed = (uint64_t)json_integer_value(v); /* negative seeds wrap, as torch's */
    return 0;
}

int api__return_read(const json_t *root, const char *const *names, int n, unsigned *bits,
                     int *tokens_at, api_err *e) {
    return api__return_read_with(root, names, n, bits, tokens_at, NULL, NULL, e);
}

int api__return_read_with(const json_t *root, const char *const *names, int n, unsigned *bits,
                          int *tokens_at, int (*other)(void *, const char *, int, api_err *),
                          void *ctx, api_err *e) {
    const json_t *v = api__field(root, "return");
    if (v == NULL) return 0;
    if (!json_is_array(v)) return api__field_wrong_type(e, "return", v, "an array of strings");
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *s = json_array_get(v, i);
        char name[48];
        snprintf(name, sizeof name, "return[%zu]", i);
        if (!json_is_string(s)) return api__field_wrong_type(e, name, s, "a string");
        int took = other ? other(ctx, json_string_value(s), (int)i, e) : 0;
        if (took < 0) return -1;
        if (took) continue;
        int k = 0;
        while (k < n && strcmp(names[k], json_string_value(s)) != 0) k++;
        if (k == n) {
            char echo[API_ECHO_MAX + 4], list[512] = "";
            for (int o = 0; o < n; o++) {
                size_t len = strlen(list);
                snprintf(list + len, sizeof list - len, "%s%s", o ? ", " : "", names[o]);
            }
            return api__fail(e, API_E_INVALID_ARGUMENT, name, "%s \"%s\" is not an output; choose from %s",
                             name, api__echo(echo, sizeof echo, json_string_value(s)), list);
        }
        if (tokens_at && strcmp(names[k], "tokens") == 0 && *tokens_at < 0) *tokens_at = (int)i;
        *bits |= 1u << k;
    }
    return 1;
}
