/* folder.c - a model folder as Hugging Face's save_pretrained leaves it
 * (--model NAME=DIR):
 *
 *   config.json        the config, which also says the architecture: its
 *                      "model_type" or "architectures" class (a name of a
 *                      row of core's ATTN_ARCH_MAP: "gpt2", "GPTModel"), or
 *                      else the row whose config.json names it has most of
 *                      (the book's json.dump(GPT_CONFIG_124M, f)); then each
 *                      hyperparameter of that row under its config.json
 *                      name (GPT-2: GPT2Config's vocab_size, n_positions,
 *                      n_embd, n_layer, n_head, activation_function,
 *                      layer_norm_epsilon, resid_pdrop), with the row's
 *                      config.json defaults; other keys are ignored; every
 *                      size is checked against the tensors
 *   model.safetensors  the weights; or model.safetensors.index.json with
 *                      the shards its weight_map names, each tensor in the
 *                      shard the map says and in no other
 *   vocab.json + merges.txt, or encoder.json + vocab.bpe
 *                      the tokenizer, optional: requests for this model then
 *                      take "text" without naming a tokenizer
 *
 * Anything missing or inconsistent is a fault naming the file.
 */
#include "api/weights/weights.h"
#include "api/bpe/bpe.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PATH_MAX_LEN 4400

/* dir/file: 0 not there, 2 a regular file, 1 something else (a device, a
 * FIFO, through a symlink too), which its reader then calls not a regular
 * file rather than this calling it missing. */
static int exists(const char *dir, const char *file) {
    char path[PATH_MAX_LEN];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return stat(path, &st) != 0 ? 0 : S_ISREG(st.st_mode) ? 2 : 1;
}

/* ==== config.json ========================================================= */

/* 1 when class cls is one of model_type type's classes: Hugging Face names
 * them after it ("BertModel", "DistilBertForMaskedLM" of "distilbert"). */
static int class_of_type(const char *cls, const char *type) {
    for (; *type; type++) {
        if (*type == '_' || *type == '-') continue;
        if (tolower((unsigned char)*cls++) != tolower((unsigned char)*type)) return 0;
    }
    return 1;
}

/* The architecture: "model_type", but "architectures"[0] when a row answers
 * to it and it is that model_type's class (BertModel, not bert's row
 * BertForMaskedLM); else the row whose config.json names the file has the
 * most of (the book's json.dump(GPT_CONFIG_124M) has no model_type). */
static int config_arch(const json_t *cfg, attn_arch *out, char *why, size_t size) {
    const char *type = json_string_value(json_object_get(cfg, "model_type"));
    const char *cls = json_string_value(json_array_get(json_object_get(cfg, "architectures"), 0));
    attn_arch own;
    if (cls && type && attn_arch_from_name(type, &own) == ATTN_OK && class_of_type(cls, type) &&
        attn_arch_from_name(cls, out) == ATTN_OK)
        return 0;
    if (json_object_get(cfg, "model_type") || cls) {
        if (type ? attn_arch_from_name(type, out) == ATTN_OK
                 : attn_arch_from_name(cls, out) == ATTN_OK)
            return 0;
        char runs[256] = "";
        for (int a = 0; a < ATTN_ARCH_COUNT; a++) {
            const char *const *al = attn_arch_aliases((attn_arch)a);
            size_t k = strlen(runs);
            snprintf(runs + k, sizeof runs - k, "%s%s", a ? ", " : "", al[0] ? al[0] : attn_arch_name((attn_arch)a));
        }
        return api__ckpt_fail(why, size, "config.json's %s is not one this server runs: \"%.64s\" "
                              "(it runs %s)", type || !cls ? "model_type" : "architectures[0]",
                              type ? type : cls ? cls : "?", runs);
    }
    int best = -1;
    for (int a = 0; a < ATTN_ARCH_COUNT; a++) {
        const attn_arch_hparam *hp;
        int n = attn_arch_hparams((attn_arch)a, &hp), have = 0;
        for (int i = 0; i < n; i++) have += hp[i].config_name && json_object_get(cfg, hp[i].config_name);
        if (have > best) best = have, *out = (attn_arch)a;
    }
    return 0;
}

/* "a, b or c" of a NULL-terminated list. */
static void or_list(char *out, size_t size, const char *const *names) {
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; names[i] && n < size; i++)
        n += (size_t)snprintf(out + n, size - n, "%s%s", i == 0 ? "" : names[i + 1] ? ", " : " or ",
                              names[i]);
}

/* One hyperparameter under its config.json name into c (absent: its
 * config.json default, or a fault when it has none). */
static int read_hparam(const json_t *cfg, const attn_arch_hparam *hp, attn_lm_config *c, char *why,
                       size_t size) {
    const char *key = hp->config_name;
    const json_t *v = json_object_get(cfg, key);
    attn_hp_type type = attn_hparam_type(hp->id);
    if (type == ATTN_HP_ROPE) return api__rope_scaling_read(v, c, why, size);
    if (type == ATTN_HP_PATTERN) return v && !json_is_null(v) ? api__layer_types_read(v, c, why, size) : 0;
    if (v && json_is_null(v) && type == ATTN_HP_INT && hp->min == 0) /* null: none (0) */
        return attn_lm_config_set(c, hp->id, 0);
    if (v && json_is_null(v)) v = NULL; /* null: as absent */
    if (v == NULL && isnan(hp->config_def)) return api__ckpt_fail(why, size, "config.json has no \"%s\"", key);
    if (v == NULL) return 0;
    attn_act act;
    switch (type) {
    case ATTN_HP_INT:
        if (!json_is_integer(v) || json_integer_value(v) < hp->min || json_integer_value(v) > INT32_MAX)
            return api__ckpt_fail(why, size, "config.json's \"%s\" is not an integer >= %d", key, hp->min);
        return attn_lm_config_set(c, hp->id, (double)json_integer_value(v));
    case ATTN_HP_BOOL: case ATTN_HP_PART:
        if (!json_is_boolean(v)) return api__ckpt_fail(why, size, "config.json's \"%s\" is not true or false", key);
        return attn_lm_config_set(c, hp->id, json_is_true(v));
    case ATTN_HP_ACT: {
        const char *a = json_string_value(v);
        int ok = 0;
        for (int i = 0; a && hp->choices && hp->choices[i]; i++) ok |= strcmp(a, hp->choices[i]) == 0;
        char list[128];
        or_list(list, sizeof list, hp->choices);
        if (!ok || attn_act_from_name(a, &act) != ATTN_OK)
            return api__ckpt_fail(why, size, "config.json's %s is not %s", key, list);
        return attn_lm_config_set(c, hp->id, (double)act);
    }
    default:
        if (!json_is_number(v) || (hp->id == ATTN_HP_DROPOUT && !(json_number_value(v) >= 0 &&
                                                                   json_number_value(v) <= 1)))
            return api__ckpt_fail(why, size, "config.json's \"%s\" is not a number%s", key,
                                  hp->id == ATTN_HP_DROPOUT ? " in [0, 1]" : "");
        return attn_lm_config_set(c, hp->id, json_number_value(v));
    }
}

/* The keys the row does not run must be absent, null, false or 0. */
static int check_off(const json_t *cfg, attn_arch arch, char *why, size_t size) {
    for (const char *const *k = attn_arch_config_off(arch); *k; k++) {
        const json_t *v = json_object_get(cfg, *k);
        if (v && !json_is_null(v) && !json_is_false(v) && !(json_is_number(v) && json_number_value(v) == 0))
            return api__ckpt_fail(why, size, "%s is set: %s runs only without it (null, false "
                                  "or 0); it is not computed here", *k, attn_arch_name(arch));
    }
    return 0;
}

int api__folder_config(const json_t *cfg, api_ckpt_hints *h, char *why, size_t size) {
    attn_arch arch = (attn_arch)0;
    if (!json_is_object(cfg)) return api__ckpt_fail(why, size, "not a JSON object");
    if (config_arch(cfg, &arch, why, size) || check_off(cfg, arch, why, size)) return -1;
    attn_lm_config_json_defaults(arch, &h->cfg);
    const attn_arch_hparam *hp;
    int n = attn_arch_hparams(arch, &hp);
    for (int i = 0; i < n; i++)
        if (hp[i].config_name && read_hparam(cfg, &hp[i], &h->cfg, why, size)) return -1;
    h->arch_known = h->checked = 1;
    h->n_head = h->cfg.n_head;
    h->n_head_from = "config.json";
    return 0;
}

static int read_config(const char *dir, api_ckpt_hints *h, char *why, size_t size) {
    char path[PATH_MAX_LEN], inner[300];
    snprintf(path, sizeof path, "%s/config.json", dir);
    int there = exists(dir, "config.json");
    if (!there)
        return api__ckpt_fail(why, size, "%s: missing (a model folder has config.json beside its "
                              "weights)", path);
    if (there != 2) /* a FIFO would hold the start, a device never end */
        return api__ckpt_fail(why, size, "%s: not a regular file", path);
    json_error_t je;
    json_t *cfg = json_load_file(path, 0, &je);
    if (!cfg) return api__ckpt_fail(why, size, "%s: line %d column %d: %s", path, je.line, je.column, je.text);
    int rc = api__folder_config(cfg, h, inner, sizeof inner);
    json_decref(cfg);
    return rc ? api__ckpt_fail(why, size, "%s: %s", path, inner) : 0;
}

/* ==== The weights: one file, or shards ===================================== */

/* A shard's name: a plain file name in the folder. */
static int plain_name(const char *s) {
    return s && *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

/* The index of shard file, opening it as the next one when new. */
static int shard_of(const char *dir, const char *file, api_st_set *set, const char **files,
                    char *why, size_t size) {
    for (int i = 0; i < set->count; i++)
        if (!strcmp(files[i], file)) return i;
    if (!plain_name(file))
        return api__ckpt_fail(why, size, "weight_map names \"%.64s\", not a file of the folder", file);
    if (set->count == API_ST_MAX_SHARDS)
        return api__ckpt_fail(why, size, "more than %d shards", API_ST_MAX_SHARDS);
    char path[PATH_MAX_LEN], inner[400];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (api__st_open(&set->file[set->count], path, inner, sizeof inner))
        return api__ckpt_fail(why, size, "%s: %s", file, inner);
    files[set->count] = file;
    return set->count++;
}

/* Every tensor of every shard is in the map, under that shard. */
static int check_map(const json_t *map, const api_st_set *set, const char **files, char *why,
                     size_t size) {
    for (int f = 0; f < set->count; f++)
        for (size_t i = 0; i < set->file[f].count; i++) {
            const char *name = set->file[f].tensors[i].name;
            const char *at = json_string_value(json_object_get(map, name));
            if (!at || strcmp(at, files[f]))
                return api__ckpt_fail(why, size, "%s holds \"%.64s\", which weight_map puts %s%s", files[f],
                                      name, at ? "in " : "nowhere", at ? at : "");
        }
    return 0;
}

/* model.safetensors.index.json: {"weight_map": {tensor: shard}}. */
static int open_shards(const char *dir, api_st_set *set, char *why, size_t size) {
    char path[PATH_MAX_LEN], inner[600];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    json_error_t je;
    /* a tensor named twice would be named once, silently (jansson keeps the last) */
    json_t *index = json_load_file(path, JSON_REJECT_DUPLICATES, &je), *map = json_object_get(index, "weight_map");
    const char *files[API_ST_MAX_SHARDS], *key;
    json_t *v;
    int rc = index ? 0 : api__ckpt_fail(inner, sizeof inner, "line %d column %d: %s", je.line, je.column, je.text);
    if (rc == 0 && (!json_is_object(map) || json_object_size(map) == 0))
        rc = api__ckpt_fail(inner, sizeof inner, "no \"weight_map\" object of tensor names and files");
    json_object_foreach(map, key, v) {
        if (rc) break;
        int f = json_is_string(v) ? shard_of(dir, json_string_value(v), set, files, inner, sizeof inner)
                                  : api__ckpt_fail(inner, sizeof inner, "weight_map.%.64s is not a file name", key);
        if (f < 0) rc = -1;
        else if (!api__st_find(&set->file[f], key))
            rc = api__ckpt_fail(inner, sizeof inner, "weight_map puts \"%.64s\" in %s, which does not hold it",
                                key, files[f]);
    }
    if (rc == 0) rc = check_map(map, set, files, inner, sizeof inner);
    if (rc) api__ckpt_fail(why, size, "%s: %s", path, inner);
    json_decref(index);
    return rc;
}

int api__folder_open(const char *dir, api_ckpt_hints *h, api_st_set *set, api_model *m, char *why,
                     size_t size) {
    char path[PATH_MAX_LEN], inner[600];
    if (read_config(dir, h, why, size)) return -1;
    if (exists(dir, "model.safetensors")) {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        snprintf(m->file, sizeof m->file, "model.safetensors");
        if (api__st_open(&set->file[0], path, inner, sizeof inner))
            return api__ckpt_fail(why, size, "%s: %s", path, inner);
        set->count = m->shards = 1;
        return 0;
    }
    if (!exists(dir, "model.safetensors.index.json"))
        return api__ckpt_fail(why, size, "%s: no model.safetensors or model.safetensors.index.json%s",
                              dir, exists(dir, "pytorch_model.bin")
                                       ? " (only pytorch_model.bin: save the model with "
                                         "safe_serialization=True, or convert it with safetensors)"
                                       : "");
    snprintf(m->file, sizeof m->file, "model.safetensors.index.json");
    if (exists(dir, "model.safetensors.index.json") != 2)
        return api__ckpt_fail(why, size, "%s/model.safetensors.index.json: not a regular file", dir);
    int rc = open_shards(dir, set, why, size);
    m->shards = set->count;
    if (rc) api__st_set_close(set);
    return rc;
}

/* ==== The tokenizer ======================================================= */

int api__folder_tokenizer(const char *dir, api_model *m, char *why, size_t size) {
    static const char *const pairs[2][2] = {{"vocab.json", "merges.txt"}, {"encoder.json", "vocab.bpe"}};
    /* api_bpe_load prefers tokenizer.json, then BERT's WordPiece vocab.txt */
    int json = exists(dir, "tokenizer.json") != 0 || exists(dir, "vocab.txt") != 0, any = json;
    for (int p = 0; p < 2 && !json; p++) {
        int a = exists(dir, pairs[p][0]) != 0, b = exists(dir, pairs[p][1]) != 0;
        if (a != b)
            return api__ckpt_fail(why, size, "%s/%s: missing beside %s (the tokenizer takes both)", dir,
                                  pairs[p][a ? 1 : 0], pairs[p][a ? 0 : 1]);
        any |= a;
    }
    if (!any) return 0;
    char inner[512];
    if (api_bpe_load(dir, &m->bpe, inner, sizeof inner) != 0)
        return api__ckpt_fail(why, size, "%s", inner);
    /* Special tokens past the model's rows are allowed (Gemma 3's tokenizer
     * has <image_soft_token> at 262144, one past its text model's
     * vocab_size): a request whose text holds one is refused then. */
    size_t n = api_bpe_vocab_size(m->bpe);
    for (size_t id = (size_t)m->cfg.vocab_size; id < n; id++)
        if (!api_bpe_is_special(m->bpe, (int32_t)id))
            return api__ckpt_fail(why, size, "%s: the tokenizer has %zu tokens, more than the "
                                  "model's vocab_size %d (token %zu is not a special token)",
                                  dir, n, m->cfg.vocab_size, id);
    return 0;
}
