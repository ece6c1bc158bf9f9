/* config.c - a whole model's family ("module": GPT2 or GPTModel) and its
 * configuration under the family's own names, which are the columns of
 * core's ATTN_FAMILY_MAP (vocab_size, block_size, n_layer, ... for seed
 * 003's GPT2; vocab_size, context_length, n_layers, ... for the book's
 * GPTModel): read from a request, written into a reply and GET /models.
 *
 *   GPT2      GPTConfig: vocab_size, block_size required; n_layer, n_head,
 *             n_embd, dropout default to the dataclass's 12, 12, 768, 0.1;
 *             plus "activation" (gelu, gelu_new), which only GPT2 takes
 *             (core's plan gives GPTModel the book's tanh GELU whatever
 *             cfg.gelu says)
 *   GPTModel  the GPT_CONFIG dict: vocab_size, context_length required;
 *             n_layers, n_heads, emb_dim, drop_rate, qkv_bias default to
 *             GPT_CONFIG_124M's 12, 12, 768, 0.1, false
 */
#include "api/model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The columns in ATTN_FAMILY_MAP's order. */
enum { COL_VOCAB, COL_CONTEXT, COL_LAYERS, COL_HEADS, COL_WIDTH, COL_DROPOUT, COL_QKV_BIAS };

void api__model_config_names(const attn_family_info *f, const char *out[API_MODEL_CONFIG_COLS]) {
    const char *cols[API_MODEL_CONFIG_COLS] = {f->vocab_name,  f->context_name, f->layers_name,
                                               f->heads_name,  f->width_name,   f->dropout_name,
                                               f->qkv_bias_name};
    memcpy(out, cols, sizeof cols);
}

int api__model_takes_activation(attn_family f) { return f == ATTN_FAMILY_GPT2; }

int api__model_config_field(attn_family fam, const char *key) {
    const char *names[API_MODEL_CONFIG_COLS];
    api__model_config_names(attn_family_get(fam), names);
    for (int i = 0; i < API_MODEL_CONFIG_COLS; i++)
        if (names[i] && strcmp(names[i], key) == 0) return i;
    return api__model_takes_activation(fam) && strcmp(key, "activation") == 0 ? API_MODEL_CONFIG_COLS
                                                                            : -1;
}

/* "module": the family's class name; absent: GPT2 (seed 003's, the
 * endpoint's first model). */
int api__model_family_read(const json_t *root, attn_family *out, api_err *e) {
    const char *names[ATTN_FAMILY_COUNT + 1];
    for (int f = 0; f < ATTN_FAMILY_COUNT; f++) names[f] = attn_family_get((attn_family)f)->name;
    names[ATTN_FAMILY_COUNT] = NULL;
    int i = ATTN_FAMILY_GPT2;
    if (api__field_choice(root, "module", names, &i, e) < 0) return -1;
    *out = (attn_family)i;
    return 0;
}

/* The dropout column: a number in [0, 1]. */
static int read_dropout(const json_t *root, const char *name, double *out, api_err *e) {
    int rc = api__field_number(root, name, out, e);
    if (rc > 0 && !(*out >= 0.0 && *out <= 1.0))
        return api__fail(e, API_E_INVALID_ARGUMENT, name, "%s must be in [0, 1], got %g", name, *out);
    return rc < 0 ? -1 : 0;
}

int api__model_config_read(const json_t *root, attn_family fam, attn_gpt2_config *c, api_err *e) {
    const char *n[API_MODEL_CONFIG_COLS];
    api__model_config_names(attn_family_get(fam), n);
    *c = (attn_gpt2_config){.n_layer = 12, .n_head = 12, .n_embd = 768, .dropout = 0.1,
                            .family = fam};
    static const char *const acts[] = {"gelu", "gelu_new", NULL};
    int act = 0;
    if (api__field_required_int(root, n[COL_VOCAB], 1, INT32_MAX, &c->vocab_size, e) ||
        api__field_required_int(root, n[COL_CONTEXT], 1, INT32_MAX, &c->block_size, e) ||
        api__field_int(root, n[COL_LAYERS], 0, INT32_MAX, &c->n_layer, e) < 0 ||
        api__field_int(root, n[COL_HEADS], 1, INT32_MAX, &c->n_head, e) < 0 ||
        api__field_int(root, n[COL_WIDTH], 1, INT32_MAX, &c->n_embd, e) < 0 ||
        read_dropout(root, n[COL_DROPOUT], &c->dropout, e) ||
        (n[COL_QKV_BIAS] && api__field_bool(root, n[COL_QKV_BIAS], &c->qkv_bias, e) < 0) ||
        (api__model_takes_activation(fam) && api__field_choice(root, "activation", acts, &act, e) < 0))
        return -1;
    c->gelu = act ? ATTN_GELU_TANH : ATTN_GELU_ERF;
    if (c->n_embd % c->n_head != 0)
        return api__fail(e, API_E_INVALID_SHAPE, n[COL_HEADS],
                         "%s must be divisible by %s (%s %d, %s %d)", n[COL_WIDTH], n[COL_HEADS],
                         n[COL_WIDTH], c->n_embd, n[COL_HEADS], c->n_head);
    return 0;
}

/* The shortest of 15 or 17 digits that reads back (0.1, not 0.10000000000000001). */
static void shortest(char *out, size_t size, double x) {
    snprintf(out, size, "%.15g", x);
    if (strtod(out, NULL) != x) snprintf(out, size, "%.17g", x);
}

void api__model_config_json(api_buf *b, const attn_gpt2_config *c) {
    const attn_family_info *f = attn_family_get(c->family);
    const char *n[API_MODEL_CONFIG_COLS];
    api__model_config_names(f, n);
    const int ints[] = {c->vocab_size, c->block_size, c->n_layer, c->n_head, c->n_embd};
    api__buf_puts(b, "{");
    for (int i = COL_VOCAB; i <= COL_WIDTH; i++) api__buf_printf(b, "%s\"%s\":%d", i ? "," : "", n[i], ints[i]);
    char drop[32];
    shortest(drop, sizeof drop, c->dropout);
    api__buf_printf(b, ",\"%s\":%s", n[COL_DROPOUT], drop);
    if (n[COL_QKV_BIAS]) api__buf_printf(b, ",\"%s\":%s", n[COL_QKV_BIAS], c->qkv_bias ? "true" : "false");
    if (api__model_takes_activation(c->family))
        api__buf_printf(b, ",\"activation\":\"%s\"", c->gelu == ATTN_GELU_TANH ? "gelu_new" : "gelu");
    api__buf_puts(b, "}");
}

/* A config field of another family than fam: "block_size is GPT2's name;
 * GPTModel says context_length". 1 with e filled, or 0. */
int api__model_config_other(attn_family fam, const char *key, api_err *e) {
    const char *mine[API_MODEL_CONFIG_COLS];
    api__model_config_names(attn_family_get(fam), mine);
    for (int f = 0; f < ATTN_FAMILY_COUNT; f++) {
        int col = f == (int)fam ? -1 : api__model_config_field((attn_family)f, key);
        if (col < 0) continue;
        const char *own = attn_family_get(fam)->name, *other = attn_family_get((attn_family)f)->name;
        if (col < API_MODEL_CONFIG_COLS && mine[col])
            api__fail(e, API_E_UNKNOWN_FIELD, key, "%s is %s's name: %s calls it %s", key, other,
                      own, mine[col]);
        else
            api__fail(e, API_E_UNKNOWN_FIELD, key, "%s is an option of %s; %s has none", key, other,
                      own);
        return 1;
    }
    return 0;
}
