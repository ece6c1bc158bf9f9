/* config.c - a whole model's architecture ("module") and its config under
 * the architecture's own names: the request-name column of its row in core
 * (attn_arch_hparams: vocab_size, block_size, n_layer, ... for seed 003's
 * GPT2; vocab_size, context_length, n_layers, ... for the book's GPTModel),
 * read from a request with the row's defaults (a default of NAN: required).
 * The reply's "config" is api/weights/'s api__config_json. */
#include "api/model/model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* "module": an architecture's class name; absent: the table's first row
 * (seed 003's GPT2, the endpoint's first model). */
int api__model_arch_read(const json_t *root, attn_arch *out, api_err *e) {
    const char *names[ATTN_ARCH_COUNT + 1];
    for (int a = 0; a < ATTN_ARCH_COUNT; a++) names[a] = attn_arch_name((attn_arch)a);
    names[ATTN_ARCH_COUNT] = NULL;
    int i = 0; /* the table's first row */
    if (api__field_choice(root, "module", names, &i, e) < 0) return -1;
    *out = (attn_arch)i;
    return 0;
}

/* The row's hyperparameter called key in requests, or NULL. */
static const attn_arch_hparam *hparam(attn_arch arch, const char *key) {
    const attn_arch_hparam *hp;
    int n = attn_arch_hparams(arch, &hp);
    for (int i = 0; i < n; i++)
        if (hp[i].name && strcmp(hp[i].name, key) == 0) return &hp[i];
    return NULL;
}

int api__model_config_field(attn_arch arch, const char *key) { return hparam(arch, key) != NULL; }

/* One field of the row (absent: its default, or missing_field when it has none). */
static int read_one(const json_t *root, const attn_arch_hparam *hp, attn_lm_config *c, api_err *e) {
    const char *n = hp->name;
    int i = 0, rc;
    double d = 0.0;
    switch (attn_hparam_type(hp->id)) {
    case ATTN_HP_INT:
        if (isnan(hp->def)) /* required */
            return api__field_required_int(root, n, hp->min, INT32_MAX, &i, e) ? -1
                                                                             : attn_lm_config_set(c, hp->id, i);
        rc = api__field_int(root, n, hp->min, INT32_MAX, &i, e);
        return rc < 0 ? -1 : rc > 0 ? attn_lm_config_set(c, hp->id, i) : 0;
    case ATTN_HP_BOOL: case ATTN_HP_PART:
        rc = api__field_bool(root, n, &i, e);
        return rc < 0 ? -1 : rc > 0 ? attn_lm_config_set(c, hp->id, i) : 0;
    case ATTN_HP_ROPE: case ATTN_HP_PATTERN: {
        const json_t *v = api__field(root, n);
        char why[200];
        if (v == NULL) return 0;
        rc = attn_hparam_type(hp->id) == ATTN_HP_ROPE ? api__rope_scaling_read(v, c, why, sizeof why)
                                                       : api__layer_types_read(v, c, why, sizeof why);
        return rc ? api__fail(e, API_E_INVALID_ARGUMENT, n, "%s", why) : 0;
    }
    case ATTN_HP_ACT: {
        attn_act act;
        rc = api__field_choice(root, n, hp->choices, &i, e);
        if (rc <= 0) return rc;
        return attn_act_from_name(hp->choices[i], &act) ? -1 : attn_lm_config_set(c, hp->id, act);
    }
    default:
        rc = api__field_number(root, n, &d, e);
        if (rc > 0 && hp->id == ATTN_HP_DROPOUT && !(d >= 0.0 && d <= 1.0))
            return api__fail(e, API_E_INVALID_ARGUMENT, n, "%s must be in [0, 1], got %g", n, d);
        return rc < 0 ? -1 : rc > 0 ? attn_lm_config_set(c, hp->id, d) : 0;
    }
}

int api__model_config_read(const json_t *root, attn_arch arch, attn_lm_config *c, api_err *e) {
    attn_lm_config_defaults(arch, c);
    const attn_arch_hparam *hp;
    int n = attn_arch_hparams(arch, &hp);
    for (int i = 0; i < n; i++)
        if (hp[i].name && read_one(root, &hp[i], c, e)) return -1;
    const char *width = api__hparam_name(arch, ATTN_HP_WIDTH), *heads = api__hparam_name(arch, ATTN_HP_HEADS);
    if (c->head_dim == 0 && c->width % c->n_head != 0)
        return api__fail(e, API_E_INVALID_SHAPE, heads, "%s must be divisible by %s (%s %d, %s %d)",
                         width, heads, width, c->width, heads, c->n_head);
    return 0;
}

/* A config field of another architecture than arch: "block_size is GPT2's
 * name; GPTModel says context_length". 1 with e filled, or 0. */
int api__model_config_other(attn_arch arch, const char *key, api_err *e) {
    for (int a = 0; a < ATTN_ARCH_COUNT; a++) {
        const attn_arch_hparam *theirs = a == (int)arch ? NULL : hparam((attn_arch)a, key), *mine;
        if (theirs == NULL) continue;
        const char *own = attn_arch_name(arch), *other = attn_arch_name((attn_arch)a);
        mine = NULL;
        const attn_arch_hparam *hp;
        int n = attn_arch_hparams(arch, &hp);
        for (int i = 0; i < n && !mine; i++)
            if (hp[i].id == theirs->id && hp[i].name) mine = &hp[i];
        if (mine)
            api__fail(e, API_E_UNKNOWN_FIELD, key, "%s is %s's name: %s calls it %s", key, other,
                      own, mine->name);
        else
            api__fail(e, API_E_UNKNOWN_FIELD, key, "%s is an option of %s; %s has none", key, other,
                      own);
        return 1;
    }
    return 0;
}
