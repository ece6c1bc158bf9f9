/* hparams.c - a model's configuration by its architecture's row (core's
 * attn_arch_hparams): the names of its hyperparameters, and the config as
 * the JSON object replies and GET /models give (the row's request names,
 * in its order). */
#include "api/base/base.h"
#include "api/weights/weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* rope_scaling as Hugging Face writes it: null, or the object. */
static void rope_json(char *out, size_t size, const attn_lm_config *c) {
    char f[4][32];
    double v[4] = {c->rope_factor, c->rope_low_freq_factor, c->rope_high_freq_factor,
                   c->rope_original_context};
    for (int i = 0; i < 4; i++) shortest(f[i], sizeof f[i], v[i]);
    if (c->rope_type == ATTN_ROPE_LINEAR)
        snprintf(out, size, "{\"rope_type\":\"linear\",\"factor\":%s}", f[0]);
    else if (c->rope_type == ATTN_ROPE_LLAMA3)
        snprintf(out, size, "{\"rope_type\":\"llama3\",\"factor\":%s,\"low_freq_factor\":%s,"
                 "\"high_freq_factor\":%s,\"original_max_position_embeddings\":%s}", f[0], f[1], f[2],
                 f[3]);
    else
        snprintf(out, size, "null");
}

/* The sizes whose 0 means "derived" (from the width and heads), shown null
 * as a config.json leaves them out. */
static int zero_is_none(attn_hparam id) {
    return id == ATTN_HP_KV_HEADS || id == ATTN_HP_HEAD_DIM || id == ATTN_HP_FFN ||
           id == ATTN_HP_SLIDING_WINDOW;
}

void api__config_json(api_buf *b, const attn_lm_config *c) {
    const attn_arch_hparam *hp;
    int n = attn_arch_hparams(c->arch, &hp), first = 1;
    api__buf_puts(b, "{");
    for (int i = 0; i < n; i++) {
        /* not a request's field; the pattern list is global_every's other spelling */
        if (!hp[i].name || attn_hparam_type(hp[i].id) == ATTN_HP_PATTERN) continue;
        double v = attn_lm_config_get(c, hp[i].id);
        char text[256];
        switch (attn_hparam_type(hp[i].id)) {
        case ATTN_HP_ROPE: rope_json(text, sizeof text, c); break;
        case ATTN_HP_INT:
            if (v == 0.0 && zero_is_none(hp[i].id)) snprintf(text, sizeof text, "null");
            else snprintf(text, sizeof text, "%d", (int)v);
            break;
        case ATTN_HP_BOOL: case ATTN_HP_PART: snprintf(text, sizeof text, "%s", v != 0.0 ? "true" : "false"); break;
        case ATTN_HP_ACT: snprintf(text, sizeof text, "\"%s\"", attn_act_name((attn_act)(int)v)); break;
        default: shortest(text, sizeof text, v); break;
        }
        api__buf_printf(b, "%s\"%s\":%s", first ? "" : ",", hp[i].name, text);
        first = 0;
    }
    api__buf_puts(b, "}");
}

/* A number member of a rope_scaling object into *out; absent keeps it. */
static int rope_number(const json_t *v, const char *key, double *out, char *why, size_t size) {
    const json_t *x = json_object_get(v, key);
    if (x == NULL || json_is_null(x)) return 0;
    if (!json_is_number(x)) return api__ckpt_fail(why, size, "rope_scaling.%s is not a number", key);
    *out = json_number_value(x);
    return 0;
}

int api__rope_scaling_read(const json_t *v, attn_lm_config *c, char *why, size_t size) {
    c->rope_type = ATTN_ROPE_DEFAULT;
    if (v == NULL || json_is_null(v)) return 0;
    if (!json_is_object(v)) return api__ckpt_fail(why, size, "rope_scaling is not an object or null");
    const char *type = json_string_value(json_object_get(v, "rope_type"));
    if (type == NULL) type = json_string_value(json_object_get(v, "type"));
    if (type == NULL || strcmp(type, "default") == 0) return 0;
    if (strcmp(type, "linear") == 0) c->rope_type = ATTN_ROPE_LINEAR;
    else if (strcmp(type, "llama3") == 0) c->rope_type = ATTN_ROPE_LLAMA3;
    else
        return api__ckpt_fail(why, size, "rope_scaling's type \"%.32s\" is not run here (default, "
                              "linear and llama3 are)", type);
    return rope_number(v, "factor", &c->rope_factor, why, size) ||
                   rope_number(v, "low_freq_factor", &c->rope_low_freq_factor, why, size) ||
                   rope_number(v, "high_freq_factor", &c->rope_high_freq_factor, why, size) ||
                   rope_number(v, "original_max_position_embeddings", &c->rope_original_context,
                               why, size)
               ? -1
               : 0;
}

int api__layer_types_read(const json_t *v, attn_lm_config *c, char *why, size_t size) {
    size_t n = json_array_size(v);
    if (!json_is_array(v)) return api__ckpt_fail(why, size, "layer_types is not a list");
    if (n > ATTN_LM_LIST_LAYERS)
        return api__ckpt_fail(why, size, "layer_types names %zu layers, more than the %d a list "
                              "may (give sliding_window_pattern)", n, ATTN_LM_LIST_LAYERS);
    memset(c->local_layers, 0, sizeof c->local_layers);
    for (size_t i = 0; i < n; i++) {
        const char *t = json_string_value(json_array_get(v, i));
        int full = t && strcmp(t, "full_attention") == 0;
        if (!full && !(t && strcmp(t, "sliding_attention") == 0))
            return api__ckpt_fail(why, size, "layer_types[%zu] is not \"sliding_attention\" or "
                                  "\"full_attention\"", i);
        if (!full) c->local_layers[i / 8] |= (unsigned char)(1u << (i % 8));
    }
    c->layer_list = 1;
    return 0;
}
