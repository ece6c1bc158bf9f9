/* pooling.c - a sentence-transformers folder (all-MiniLM-L6-v2's layout):
 *
 *   modules.json               [{"idx", "name", "path", "type"}]: the
 *                              Transformer (the model of the folder), then
 *                              sentence_transformers.models.Pooling (its
 *                              path's config.json), and optionally
 *                              sentence_transformers.models.Normalize
 *   <path>/config.json         word_embedding_dimension and the
 *                              pooling_mode_* flags (Pooling's arguments)
 *   sentence_bert_config.json  max_seq_length: the most tokens it embeds
 *
 * A folder without modules.json pools by the mean over the tokens, not
 * normalised (what sentence-transformers builds for a plain transformers
 * model). A module this server does not run (Dense, a second Pooling, ...)
 * is a fault naming it, since the embeddings would not be the model's.
 */
#include "api/weights/weights.h"

#include <stdio.h>
#include <string.h>

#define PATH_MAX_LEN 4400

static const struct {
    const char *key;
    unsigned mode;
} modes[] = {
    {"pooling_mode_cls_token", ATTN_POOL_CLS},       {"pooling_mode_max_tokens", ATTN_POOL_MAX},
    {"pooling_mode_mean_tokens", ATTN_POOL_MEAN},    {"pooling_mode_mean_sqrt_len_tokens", ATTN_POOL_MEAN_SQRT},
    {"pooling_mode_weightedmean_tokens", ATTN_POOL_WEIGHTED}, {"pooling_mode_lasttoken", ATTN_POOL_LAST},
};

static json_t *load(const char *dir, const char *file, char *why, size_t size) {
    char path[2 * PATH_MAX_LEN];
    json_error_t je;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    json_t *v = json_load_file(path, 0, &je);
    if (v == NULL) api__ckpt_fail(why, size, "%s: line %d column %d: %s", path, je.line, je.column, je.text);
    return v;
}

/* Pooling's config.json (in path) into m->pooling.modes. */
static int read_modes(const char *dir, const char *path, api_model *m, char *why, size_t size) {
    char file[PATH_MAX_LEN];
    snprintf(file, sizeof file, "%s/config.json", path);
    json_t *c = load(dir, file, why, size);
    if (c == NULL) return -1;
    const json_t *dim = json_object_get(c, "word_embedding_dimension");
    int rc = 0;
    if (dim && json_integer_value(dim) != m->cfg.width)
        rc = api__ckpt_fail(why, size, "%s/%s: word_embedding_dimension %lld is not the model's "
                            "width %d", dir, file, (long long)json_integer_value(dim), m->cfg.width);
    for (size_t i = 0; rc == 0 && i < sizeof modes / sizeof modes[0]; i++)
        if (json_is_true(json_object_get(c, modes[i].key))) m->pooling.modes |= modes[i].mode;
    if (rc == 0 && m->pooling.modes == 0)
        rc = api__ckpt_fail(why, size, "%s/%s: no pooling_mode_* is true", dir, file);
    json_decref(c);
    return rc;
}

/* One module of modules.json: the Transformer, Pooling or Normalize. */
static int read_module(const char *dir, const json_t *mod, int *pooled, api_model *m, char *why,
                       size_t size) {
    const char *type = json_string_value(json_object_get(mod, "type"));
    const char *path = json_string_value(json_object_get(mod, "path"));
    const char *dot = type ? strrchr(type, '.') : NULL, *name = dot ? dot + 1 : type ? type : "?";
    if (strcmp(name, "Transformer") == 0) return 0;
    if (strcmp(name, "Normalize") == 0) {
        m->pooling.normalize = 1;
        return 0;
    }
    if (strcmp(name, "Pooling") == 0 && !*pooled && path && *path && !strstr(path, "..")) {
        *pooled = 1;
        return read_modes(dir, path, m, why, size);
    }
    const char *label = json_string_value(json_object_get(mod, "name"));
    return api__ckpt_fail(why, size, "%s/modules.json: module \"%.64s\" (%.96s) is not one this "
                          "server runs (Transformer, one Pooling, Normalize)", dir,
                          label ? label : "?", type ? type : "no type");
}

int api__folder_pooling(const char *dir, api_model *m, char *why, size_t size) {
    char path[PATH_MAX_LEN];
    FILE *f;
    m->pooling = (attn_lm_pooling){.modes = ATTN_POOL_MEAN};
    snprintf(path, sizeof path, "%s/modules.json", dir);
    if ((f = fopen(path, "r")) == NULL) return 0;
    fclose(f);
    json_t *mods = load(dir, "modules.json", why, size);
    if (mods == NULL) return -1;
    int rc = json_is_array(mods) ? 0 : api__ckpt_fail(why, size, "%s: not a list of modules", path);
    int pooled = 0;
    m->pooling.modes = 0;
    for (size_t i = 0; rc == 0 && i < json_array_size(mods); i++)
        rc = read_module(dir, json_array_get(mods, i), &pooled, m, why, size);
    if (rc == 0 && !pooled) rc = api__ckpt_fail(why, size, "%s: no Pooling module", path);
    json_decref(mods);
    snprintf(path, sizeof path, "%s/sentence_bert_config.json", dir);
    if (rc == 0 && (f = fopen(path, "r")) != NULL) {
        fclose(f);
        json_t *sb = load(dir, "sentence_bert_config.json", why, size);
        json_int_t most = json_integer_value(json_object_get(sb, "max_seq_length"));
        if (sb == NULL) rc = -1;
        else if (most > 0 && most <= INT32_MAX) m->max_tokens = (int)most;
        json_decref(sb);
    }
    return rc;
}
