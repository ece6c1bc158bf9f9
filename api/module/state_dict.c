/* state_dict.c - "state_dict" (PyTorch names to nested arrays, as
 * {k: v.tolist() for k, v in m.state_dict().items()} gives) into the
 * parameter buffer laid out by attn_param_get. Every parameter is required;
 * buffers ("mask", "bias", "heads.0.mask") may be left out (core fills
 * them), and are checked by core against what the module registers when
 * given. */
#include "api/module/module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void expected_names(char *out, size_t size, const attn_config *cfg, const attn_plan *plan) {
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < plan->param_count && n + 1 < size; i++) {
        attn_param p;
        attn_param_get(cfg, plan, i, &p);
        char shape[64];
        api__shape_str(shape, sizeof shape, p.rank, p.shape);
        int w = snprintf(out + n, size - n, "%s%s %s%s", i ? ", " : "", p.name, shape,
                         p.buffer ? " (buffer, optional)" : "");
        if (w < 0) break;
        n += (size_t)w;
    }
    if (n >= size && size > 4) memcpy(out + size - 4, "...", 4);
}

int api__state_dict_read(const json_t *sd, const attn_config *cfg, const attn_plan *plan,
                         float *params, api_err *e) {
    const char *m = attn_module_name(cfg->module);
    /* extra entries first: a misspelt name also shows up as a missing one */
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)sd, key, v) {
        int found = 0;
        for (int i = 0; i < plan->param_count && !found; i++) {
            attn_param p;
            attn_param_get(cfg, plan, i, &p);
            found = strcmp(p.name, key) == 0;
        }
        if (!found) {
            char echo[API_ECHO_MAX + 4], field[API_ECHO_MAX + 16], want[320];
            snprintf(field, sizeof field, "state_dict.%s", api__echo(echo, sizeof echo, key));
            expected_names(want, sizeof want, cfg, plan);
            return api__fail(e, API_E_INVALID_ARGUMENT, field,
                             "%s has no parameter \"%s\"; its state_dict holds: %s", m, echo,
                             plan->param_count ? want : "nothing");
        }
    }
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_param_get(cfg, plan, i, &p);
        char field[ATTN_PARAM_NAME_MAX + 16], shape[64];
        snprintf(field, sizeof field, "state_dict.%s", p.name);
        v = json_object_get(sd, p.name);
        if (v == NULL && p.buffer) {
            attn_param_buffer_fill(&p, params + p.offset); /* as the module registers it */
            continue;
        }
        api__shape_str(shape, sizeof shape, p.rank, p.shape);
        if (v == NULL)
            return api__fail(e, API_E_MISSING_FIELD, field,
                             "state_dict has no \"%s\": %s needs it with shape %s", p.name, m, shape);
        if (api__tensor_read_into(v, field, p.rank, p.shape, params + p.offset, e)) return -1;
    }
    attn_error ae = {0};
    if (attn_params_check(cfg, plan, params, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, cfg->module);
        return -1;
    }
    return 0;
}
