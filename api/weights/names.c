/* names.c - a checkpoint's tensor names against core's state_dict, as
 * transformers' from_pretrained matches them:
 *
 *   the base model's prefix   a BertModel (sentence-transformers) checkpoint
 *                             holds "embeddings.word_embeddings.weight" where
 *                             BertForMaskedLM says "bert.embeddings...."
 *                             (base_model_prefix, taken off or added)
 *   gamma and beta            old checkpoints' LayerNorm.gamma / .beta are
 *                             .weight / .bias (_fix_key's renaming)
 *   names the row ignores     buffers (embeddings.position_ids), heads it
 *                             does not run (BertForPreTraining's
 *                             cls.seq_relationship), a tied bias saved twice
 *   parts                     the MLM head and the pooler are there when the
 *                             file holds their tensors
 */
#include "api/weights/weights.h"

#include <stdio.h>
#include <string.h>

/* name with its last ".weight" / ".bias" spelled ".gamma" / ".beta" (or
 * back, to = 0) into out; 0 when name has no such ending. */
static int respell(const char *name, int to_old, char *out, size_t size) {
    static const char *const pairs[2][2] = {{".weight", ".gamma"}, {".bias", ".beta"}};
    size_t n = strlen(name);
    for (int i = 0; i < 2; i++) {
        const char *from = pairs[i][to_old ? 0 : 1], *to = pairs[i][to_old ? 1 : 0];
        size_t k = strlen(from);
        if (n > k && strcmp(name + n - k, from) == 0) {
            snprintf(out, size, "%.*s%s", (int)(n - k), name, to);
            return 1;
        }
    }
    return 0;
}

/* The tensor of set called name, or its old LayerNorm spelling. */
static const api_st_tensor *find_spelled(const api_st_set *set, const char *name) {
    char old[2 * ATTN_PARAM_NAME_MAX];
    const api_st_tensor *t = api__st_set_find(set, name);
    if (!t && respell(name, 1, old, sizeof old) && strstr(name, "LayerNorm.")) t = api__st_set_find(set, old);
    return t;
}

const api_st_tensor *api__ckpt_find(const api_st_set *set, const attn_lm_plan *plan, const char *name) {
    const char *base = attn_lm_base_prefix(plan);
    const api_st_tensor *t = find_spelled(set, name);
    size_t nb = base ? strlen(base) : 0;
    if (!t && base && strncmp(name, base, nb) == 0) t = find_spelled(set, name + nb);
    return t;
}

/* 1 if name is an entry of plan's state_dict. */
static int is_entry(const attn_lm_plan *plan, const char *name) {
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_lm_param_get(plan, i, &p);
        if (strcmp(p.name, name) == 0) return 1;
    }
    return 0;
}

/* An entry, the tied head, or an ignored name, as spelled or with the base
 * prefix added. */
static int known(const attn_lm_plan *plan, const char *name) {
    const char *base = attn_lm_base_prefix(plan), *tied = attn_lm_tied_head_name(plan);
    char full[2 * ATTN_PARAM_NAME_MAX + 16];
    snprintf(full, sizeof full, "%s%s", base ? base : "", name);
    return is_entry(plan, name) || (base && is_entry(plan, full)) || (tied && strcmp(tied, name) == 0) ||
           attn_lm_ignored_name(plan, name);
}

int api__ckpt_belongs(const attn_lm_plan *plan, const char *name) {
    char now[2 * ATTN_PARAM_NAME_MAX];
    if (known(plan, name)) return 1;
    return strstr(name, "LayerNorm.") && respell(name, 0, now, sizeof now) && known(plan, now);
}

/* The first entry of `with` that `without` lacks: a tensor of the part. */
static int part_entry(const attn_lm_plan *with, const attn_lm_plan *without, attn_param *out) {
    for (int i = 0; i < with->param_count; i++) {
        attn_lm_param_get(with, i, out);
        if (!is_entry(without, out->name)) return 1;
    }
    return 0;
}

void api__ckpt_parts(const api_st_set *set, attn_lm_config *cfg) {
    const attn_arch_hparam *hp;
    int n = attn_arch_hparams(cfg->arch, &hp);
    for (int i = 0; i < n; i++) {
        if (attn_hparam_type(hp[i].id) != ATTN_HP_PART) continue;
        attn_lm_config on = *cfg, off = *cfg;
        attn_lm_plan with, without;
        attn_param e;
        attn_lm_config_set(&on, hp[i].id, 1);
        attn_lm_config_set(&off, hp[i].id, 0);
        if (attn_lm_plan_make(&on, 1, 1, 0, &with, NULL) != ATTN_OK ||
            attn_lm_plan_make(&off, 1, 1, 0, &without, NULL) != ATTN_OK || !part_entry(&with, &without, &e))
            continue;
        attn_lm_config_set(cfg, hp[i].id, api__ckpt_find(set, &with, e.name) != NULL);
    }
}
