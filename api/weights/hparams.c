/* hparams.c - a model's configuration by its architecture's row (core's
 * attn_arch_hparams): the names of its hyperparameters, and the config as
 * the JSON object replies and GET /models give (the row's request names,
 * in its order). */
#include "api/base/base.h"
#include "api/weights/weights.h"

#include <stdio.h>
#include <stdlib.h>

static const attn_arch_hparam *find(attn_arch arch, attn_hparam id) {
    const attn_arch_hparam *hp;
    int n = attn_arch_hparams(arch, &hp);
    for (int i = 0; i < n; i++)
        if (hp[i].id == id) return &hp[i];
    return NULL;
}

const char *api__hparam_name(attn_arch arch, attn_hparam id) {
    const attn_arch_hparam *hp = find(arch, id);
    return hp && hp->name ? hp->name : attn_hparam_field(id);
}

const char *api__hparam_config_name(attn_arch arch, attn_hparam id) {
    const attn_arch_hparam *hp = find(arch, id);
    return hp && hp->config_name ? hp->config_name : api__hparam_name(arch, id);
}

/* The shortest of 15 or 17 digits that reads back (0.1, not 0.10000000000000001). */
static void shortest(char *out, size_t size, double x) {
    snprintf(out, size, "%.15g", x);
    if (strtod(out, NULL) != x) snprintf(out, size, "%.17g", x);
}

void api__config_json(api_buf *b, const attn_lm_config *c) {
    const attn_arch_hparam *hp;
    int n = attn_arch_hparams(c->arch, &hp), first = 1;
    api__buf_puts(b, "{");
    for (int i = 0; i < n; i++) {
        if (!hp[i].name) continue; /* not a request's field */
        double v = attn_lm_config_get(c, hp[i].id);
        char text[40];
        switch (attn_hparam_type(hp[i].id)) {
        case ATTN_HP_INT: snprintf(text, sizeof text, "%d", (int)v); break;
        case ATTN_HP_BOOL: snprintf(text, sizeof text, "%s", v != 0.0 ? "true" : "false"); break;
        case ATTN_HP_ACT: snprintf(text, sizeof text, "\"%s\"", attn_act_name((attn_act)(int)v)); break;
        default: shortest(text, sizeof text, v); break;
        }
        api__buf_printf(b, "%s\"%s\":%s", first ? "" : ",", hp[i].name, text);
        first = 0;
    }
    api__buf_puts(b, "}");
}
