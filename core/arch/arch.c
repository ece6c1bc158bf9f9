/* arch.c - the table of architectures (ATTN_ARCH_MAP), their names, and
 * hyperparameters read and written by their ids (ATTN_LM_HPARAM_MAP): what
 * lets code outside core/arch/ handle any architecture's config without
 * knowing which it is. */
#include "core/arch/arch.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

static const attn__arch *const rows[ATTN_ARCH_COUNT] = {
#define ATTN_XX(id, sym) [ATTN_ARCH_##id] = &attn__arch_##sym,
    ATTN_ARCH_MAP(ATTN_XX)
#undef ATTN_XX
};

const attn__arch *attn__arch_get(attn_arch a) {
    return (unsigned)a < ATTN_ARCH_COUNT ? rows[a] : NULL;
}

const char *attn_arch_name(attn_arch a) {
    const attn__arch *r = attn__arch_get(a);
    return r ? r->name : NULL;
}

const char *const *attn_arch_aliases(attn_arch a) {
    static const char *const none[] = {NULL};
    const attn__arch *r = attn__arch_get(a);
    return r && r->aliases ? r->aliases : none;
}

const char *const *attn_arch_config_off(attn_arch a) {
    static const char *const none[] = {NULL};
    const attn__arch *r = attn__arch_get(a);
    return r && r->config_off ? r->config_off : none;
}

const char *attn_arch_what(attn_arch a) {
    const attn__arch *r = attn__arch_get(a);
    return r ? r->what : NULL;
}

const char *attn_arch_ctor(attn_arch a) {
    const attn__arch *r = attn__arch_get(a);
    return r ? r->ctor : NULL;
}

int attn_arch_from_name(const char *name, attn_arch *out) {
    for (int a = 0; name && a < ATTN_ARCH_COUNT; a++) {
        int hit = strcmp(rows[a]->name, name) == 0;
        for (const char *const *al = attn_arch_aliases((attn_arch)a); !hit && *al; al++)
            hit = strcmp(*al, name) == 0;
        if (hit) {
            if (out) *out = (attn_arch)a;
            return ATTN_OK;
        }
    }
    return ATTN_ERR_ARG;
}

int attn_arch_hparams(attn_arch a, const attn_arch_hparam **list) {
    const attn__arch *r = attn__arch_get(a);
    if (list) *list = r ? r->hparams : NULL;
    return r ? r->n_hparams : 0;
}

const char *attn__hparam_name(const attn__arch *a, attn_hparam h) {
    for (int i = 0; i < a->n_hparams; i++)
        if (a->hparams[i].id == h) return a->hparams[i].name;
    return NULL;
}

/* ==== Activations ========================================================= */

static const struct {
    const char *name;
    attn_act act;
} act_names[] = {
    {"gelu", ATTN_ACT_GELU_ERF},        {"gelu_new", ATTN_ACT_GELU_TANH},
    {"gelu_pytorch_tanh", ATTN_ACT_GELU_TANH}, {"silu", ATTN_ACT_SILU},
    {"swish", ATTN_ACT_SILU},           {"relu", ATTN_ACT_RELU},
};

const char *attn_act_name(attn_act a) {
    for (size_t i = 0; i < sizeof act_names / sizeof act_names[0]; i++)
        if (act_names[i].act == a) return act_names[i].name;
    return NULL;
}

int attn_act_from_name(const char *name, attn_act *out) {
    for (size_t i = 0; name && i < sizeof act_names / sizeof act_names[0]; i++)
        if (strcmp(act_names[i].name, name) == 0) {
            if (out) *out = act_names[i].act;
            return ATTN_OK;
        }
    return ATTN_ERR_ARG;
}

/* ==== Hyperparameters by id ================================================ */

static const struct {
    attn_hp_type type;
    size_t offset;
    const char *field, *what;
} hparams[ATTN_HP_COUNT] = {
#define ATTN_XX(id, f, type, what)                                                                 \
    [ATTN_HP_##id] = {ATTN_HP_##type, offsetof(attn_lm_config, f), #f, what},
    ATTN_LM_HPARAM_MAP(ATTN_XX)
#undef ATTN_XX
};

attn_hp_type attn_hparam_type(attn_hparam h) {
    return (unsigned)h < ATTN_HP_COUNT ? hparams[h].type : ATTN_HP_INT;
}

const char *attn_hparam_field(attn_hparam h) {
    return (unsigned)h < ATTN_HP_COUNT ? hparams[h].field : NULL;
}

const char *attn_hparam_what(attn_hparam h) {
    return (unsigned)h < ATTN_HP_COUNT ? hparams[h].what : NULL;
}

double attn_lm_config_get(const attn_lm_config *c, attn_hparam h) {
    if ((unsigned)h >= ATTN_HP_COUNT) return 0.0;
    const char *at = (const char *)c + hparams[h].offset;
    double d;
    int i;
    attn_act a;
    switch (hparams[h].type) {
    case ATTN_HP_REAL: memcpy(&d, at, sizeof d); return d;
    case ATTN_HP_ACT: memcpy(&a, at, sizeof a); return (double)a;
    default: memcpy(&i, at, sizeof i); return (double)i;
    }
}

int attn_lm_config_set(attn_lm_config *c, attn_hparam h, double v) {
    if ((unsigned)h >= ATTN_HP_COUNT) return ATTN_ERR_ARG;
    char *at = (char *)c + hparams[h].offset;
    attn_hp_type t = hparams[h].type;
    if (t == ATTN_HP_REAL) {
        memcpy(at, &v, sizeof v);
        return ATTN_OK;
    }
    double most = t == ATTN_HP_BOOL || t == ATTN_HP_PART ? 1.0 : t == ATTN_HP_ACT ? ATTN_ACT_COUNT - 1.0
                  : t == ATTN_HP_ROPE ? (double)ATTN_ROPE_LLAMA3 : INT32_MAX;
    if (!(v == floor(v) && v >= (t == ATTN_HP_INT ? (double)INT32_MIN : 0.0) && v <= most))
        return ATTN_ERR_ARG;
    if (t == ATTN_HP_ACT) {
        attn_act a = (attn_act)(int)v;
        memcpy(at, &a, sizeof a);
    } else {
        int i = (int)v;
        memcpy(at, &i, sizeof i);
    }
    return ATTN_OK;
}

static void defaults(attn_arch a, attn_lm_config *c, int config_json) {
    *c = (attn_lm_config){.arch = a};
    const attn__arch *r = attn__arch_get(a);
    for (int i = 0; r && i < r->n_hparams; i++) {
        const attn_arch_hparam *hp = &r->hparams[i];
        double v = config_json ? hp->config_def : hp->def;
        /* NAN: required, left 0; a pattern list is another spelling of a
         * field its row gives a default of */
        if (!isnan(v) && attn_hparam_type(hp->id) != ATTN_HP_PATTERN) attn_lm_config_set(c, hp->id, v);
    }
}

void attn_lm_config_defaults(attn_arch a, attn_lm_config *c) { defaults(a, c, 0); }

void attn_lm_config_json_defaults(attn_arch a, attn_lm_config *c) { defaults(a, c, 1); }
