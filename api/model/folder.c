/* folder.c - a model folder as Hugging Face's save_pretrained leaves it
 * (--model NAME=DIR):
 *
 *   config.json        the config, which also says the family:
 *                      GPT-2: transformers' GPT2Config (vocab_size,
 *                        n_positions, n_embd, n_layer, n_head required;
 *                        activation_function gelu_new (default),
 *                        gelu_pytorch_tanh or gelu; layer_norm_epsilon 1e-5,
 *                        core's; resid_pdrop the dropout, 0.1 by default)
 *                      GPTModel: the book's GPT_CONFIG dict as
 *                        json.dump(GPT_CONFIG_124M, f) writes it (vocab_size,
 *                        context_length, emb_dim, n_heads, n_layers required;
 *                        drop_rate 0.1 and qkv_bias false by default)
 *                      its keys tell them apart ("model_type": "gpt2" or
 *                      "GPTModel" may say it outright); other keys are
 *                      ignored; every size is checked against the tensors
 *   model.safetensors  the weights; or model.safetensors.index.json with
 *                      the shards its weight_map names, each tensor in the
 *                      shard the map says and in no other
 *   vocab.json + merges.txt, or encoder.json + vocab.bpe
 *                      the tokenizer, optional: requests for this model then
 *                      take "text" without naming a tokenizer
 *
 * Anything missing or inconsistent is a fault naming the file.
 */
#include "api/model/model.h"

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

/* An integer key in [min, INT32_MAX]; absent: *out untouched, or a fault
 * when required. */
static int get_int(const json_t *cfg, const char *key, int min, int required, int *out, char *why,
                   size_t size) {
    const json_t *v = json_object_get(cfg, key);
    if (v == NULL && !required) return 0;
    if (v == NULL) return api__ckpt_fail(why, size, "config.json has no \"%s\"", key);
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > INT32_MAX)
        return api__ckpt_fail(why, size, "config.json's \"%s\" is not an integer >= %d", key, min);
    *out = (int)json_integer_value(v);
    return 0;
}

static int get_dropout(const json_t *cfg, const char *key, double *out, char *why, size_t size) {
    const json_t *v = json_object_get(cfg, key);
    if (v == NULL) return 0;
    if (!json_is_number(v) || !(json_number_value(v) >= 0 && json_number_value(v) <= 1))
        return api__ckpt_fail(why, size, "config.json's \"%s\" is not a number in [0, 1]", key);
    *out = json_number_value(v);
    return 0;
}

/* GPT2Config: its names, the activation and LayerNorm's epsilon. */
static int hf_config(const json_t *cfg, api_ckpt_hints *h, char *why, size_t size) {
    static const char *const names[API_MODEL_CONFIG_COLS] = {
        "vocab_size", "n_positions", "n_layer", "n_head", "n_embd", "resid_pdrop", NULL};
    attn_gpt2_config *c = &h->cfg;
    memcpy(h->names, names, sizeof names);
    *c = (attn_gpt2_config){.dropout = 0.1, .gelu = ATTN_GELU_TANH, .family = ATTN_FAMILY_GPT2};
    if (get_int(cfg, "vocab_size", 1, 1, &c->vocab_size, why, size) ||
        get_int(cfg, "n_positions", 1, 1, &c->block_size, why, size) ||
        get_int(cfg, "n_layer", 0, 1, &c->n_layer, why, size) ||
        get_int(cfg, "n_head", 1, 1, &c->n_head, why, size) ||
        get_int(cfg, "n_embd", 1, 1, &c->n_embd, why, size) ||
        get_dropout(cfg, "resid_pdrop", &c->dropout, why, size))
        return -1;
    const json_t *act = json_object_get(cfg, "activation_function"), *eps = json_object_get(cfg, "layer_norm_epsilon");
    const char *a = act ? json_string_value(act) : "gelu_new";
    if (a && (!strcmp(a, "gelu_new") || !strcmp(a, "gelu_pytorch_tanh"))) c->gelu = ATTN_GELU_TANH;
    else if (a && !strcmp(a, "gelu")) c->gelu = ATTN_GELU_ERF;
    else return api__ckpt_fail(why, size, "config.json's activation_function is not gelu_new, "
                               "gelu_pytorch_tanh or gelu");
    if (eps && !(json_is_number(eps) && fabs(json_number_value(eps) - 1e-5) <= 1e-12))
        return api__ckpt_fail(why, size, "config.json's layer_norm_epsilon is not 1e-5, the "
                              "LayerNorm's epsilon here");
    return 0;
}

/* The book's GPT_CONFIG dict, under core's family table's names. */
static int book_config(const json_t *cfg, api_ckpt_hints *h, char *why, size_t size) {
    const char **n = h->names;
    attn_gpt2_config *c = &h->cfg;
    api__model_config_names(attn_family_get(ATTN_FAMILY_GPTMODEL), n);
    *c = (attn_gpt2_config){.dropout = 0.1, .gelu = ATTN_GELU_TANH, .family = ATTN_FAMILY_GPTMODEL};
    if (get_int(cfg, n[0], 1, 1, &c->vocab_size, why, size) ||
        get_int(cfg, n[1], 1, 1, &c->block_size, why, size) ||
        get_int(cfg, n[2], 0, 1, &c->n_layer, why, size) ||
        get_int(cfg, n[3], 1, 1, &c->n_head, why, size) ||
        get_int(cfg, n[4], 1, 1, &c->n_embd, why, size) ||
        get_dropout(cfg, n[5], &c->dropout, why, size))
        return -1;
    const json_t *b = json_object_get(cfg, n[6]);
    if (b && !json_is_boolean(b)) return api__ckpt_fail(why, size, "config.json's \"%s\" is not true or false", n[6]);
    c->qkv_bias = json_is_true(b);
    return 0;
}

/* The family: "model_type" when given, else the book's names (a key
 * GPTModel has and GPT2 lacks, context_length or emb_dim, say). */
static int config_family(const json_t *cfg, attn_family *out, char *why, size_t size) {
    const json_t *type = json_object_get(cfg, "model_type");
    if (type) {
        const char *t = json_string_value(type);
        if (t && !strcmp(t, "gpt2")) *out = ATTN_FAMILY_GPT2;
        else if (t && attn_family_from_name(t, out) == ATTN_OK) return 0;
        else return api__ckpt_fail(why, size, "config.json's model_type is not \"gpt2\" or \"GPTModel\"");
        return 0;
    }
    const char *book[API_MODEL_CONFIG_COLS];
    api__model_config_names(attn_family_get(ATTN_FAMILY_GPTMODEL), book);
    *out = ATTN_FAMILY_GPT2;
    for (int i = 0; i < API_MODEL_CONFIG_COLS; i++)
        if (book[i] && api__model_config_field(ATTN_FAMILY_GPT2, book[i]) < 0 && json_object_get(cfg, book[i]))
            *out = ATTN_FAMILY_GPTMODEL;
    return 0;
}

int api__folder_config(const json_t *cfg, api_ckpt_hints *h, char *why, size_t size) {
    attn_family fam = ATTN_FAMILY_GPT2;
    int rc = !json_is_object(cfg) ? api__ckpt_fail(why, size, "not a JSON object")
             : config_family(cfg, &fam, why, size) ? -1
             : fam == ATTN_FAMILY_GPT2 ? hf_config(cfg, h, why, size)
                                       : book_config(cfg, h, why, size);
    if (rc) return -1;
    h->family_known = h->checked = 1;
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
    int any = 0;
    for (int p = 0; p < 2; p++) {
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
    size_t n = api_bpe_vocab_size(m->bpe);
    if (n > (size_t)m->cfg.vocab_size)
        return api__ckpt_fail(why, size, "%s: the tokenizer has %zu tokens, more than the model's "
                              "vocab_size %d", dir, n, m->cfg.vocab_size);
    return 0;
}
