/* registry.c - models loaded once at start (--model NAME=DIR or
 * NAME=FILE.safetensors[:heads=N]) and the registry that POST /model
 * ("model": NAME) and GET /models read.
 *
 *   NAME=DIR     a Hugging Face folder (folder.c): config.json, the weights
 *                (model.safetensors or the shards of its index), the
 *                tokenizer files beside them, a sentence-transformers
 *                folder's pooling (pooling.c)
 *   NAME=FILE    one safetensors file; ":heads=N" sets the heads no shape says
 *
 * The architecture is the folder's config.json's, or for a file its
 * names' (the first row of API_WEIGHTS_MAP whose probe tensor it holds:
 * tok_emb.weight is the book's GPTModel, book.c; anything else is read as
 * Hugging Face's GPT-2, gpt2.c). Every loader ends in one buffer in core's
 * layout, its weight matrices held as --weights-dtype says (api.h:
 * api_weights_mode), made once and read by every worker thread (one copy
 * per process); the files' mappings are released after the copy.
 */
#include "api/weights/weights.h"
#include "api/base/base.h"
#include "api/chat/chat.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

struct api_models {
    api_model *items;
    int count;
};

/* ==== Loading ============================================================= */

/* NAME=PATH[:heads=N]; NAME of letters, digits, '.', '_', '-'. */
static int parse_spec(const char *spec, char *name, size_t name_size, char *path, size_t path_size,
                      int *heads, char *why, size_t size) {
    const char *eq = strchr(spec, '=');
    size_t nl = eq ? (size_t)(eq - spec) : 0;
    if (!eq || nl == 0 || nl >= name_size)
        return api__ckpt_fail(why, size, "expected NAME=DIR or NAME=FILE.safetensors[:heads=N] (NAME "
                              "of 1 to %zu characters)", name_size - 1);
    for (size_t i = 0; i < nl; i++)
        if (!isalnum((unsigned char)spec[i]) && !strchr("._-", spec[i]))
            return api__ckpt_fail(why, size, "NAME may hold letters, digits, '.', '_' and '-' only");
    memcpy(name, spec, nl);
    name[nl] = '\0';
    const char *file = eq + 1, *suffix = strstr(file, ":heads=");
    size_t fl = strlen(file);
    *heads = 0;
    if (suffix) {
        char *end;
        long h = strtol(suffix + 7, &end, 10);
        if (end == suffix + 7 || *end || h < 1 || h > INT32_MAX)
            return api__ckpt_fail(why, size, "\":heads=\" must end the spec with a positive integer");
        *heads = (int)h;
        fl = (size_t)(suffix - file);
    }
    if (fl == 0 || fl >= path_size) return api__ckpt_fail(why, size, "the path is empty or too long");
    memcpy(path, file, fl);
    path[fl] = '\0';
    return 0;
}

/* The base name of path (without trailing slashes) into out. */
static void base_name(char *out, size_t size, const char *path) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/') b--;
    snprintf(out, size, "%.*s", (int)(n - b), path + b);
}

/* The architectures' loaders (API_WEIGHTS_MAP). */
typedef int (*loader_fn)(const api_st_set *set, const api_ckpt_hints *h, api_model *m, char *why,
                         size_t size);
static const struct {
    attn_arch arch;
    loader_fn load;
    const char *probe;
} loaders[] = {
#define XX(arch, fn, probe) {ATTN_ARCH_##arch, fn, probe},
    API_WEIGHTS_MAP(XX)
#undef XX
};
#define N_LOADERS (sizeof loaders / sizeof loaders[0])

/* The loader of arch: its row's, or the generic one (the row's own names). */
static loader_fn loader_of(attn_arch arch) {
    for (size_t i = 0; i < N_LOADERS; i++)
        if (loaders[i].arch == arch) return loaders[i].load;
    return api__ckpt_generic_load;
}

/* A single file's loader: the first whose probe the file holds (NULL: any). */
static loader_fn loader_probed(const api_st_set *set) {
    for (size_t i = 0; i < N_LOADERS; i++)
        if (!loaders[i].probe || api__st_set_find(set, loaders[i].probe)) return loaders[i].load;
    return NULL;
}

/* The loader for h's architecture: a fault naming it when none reads its files. */
static int load_set(const api_st_set *set, const api_ckpt_hints *h, api_model *m, char *why,
                    size_t size) {
    loader_fn load = h->arch_known ? loader_of(h->cfg.arch) : loader_probed(set);
    if (load == NULL)
        return api__ckpt_fail(why, size, "%s checkpoints are not read here yet",
                              attn_arch_name(h->cfg.arch));
    return load(set, h, m, why, size);
}

/* One safetensors file, its architecture told by its names. */
static int load_file(api_model *m, const char *path, int heads, api_weights_mode mode, char *why,
                     size_t size) {
    api_st_set set = {0};
    char inner[512];
    if (api__st_open(&set.file[0], path, inner, sizeof inner))
        return api__ckpt_fail(why, size, "%s: %s", path, inner);
    set.count = m->shards = 1;
    base_name(m->file, sizeof m->file, path);
    api_ckpt_hints h = {.n_head = heads, .n_head_from = "option", .mode = mode};
    int rc = load_set(&set, &h, m, inner, sizeof inner);
    api__st_set_close(&set);
    return rc ? api__ckpt_fail(why, size, "%s: %s", path, inner) : 0;
}

/* A folder: config.json, the weights (one file or shards), the tokenizer. */
static int load_folder(api_model *m, const char *dir, api_weights_mode mode, char *why,
                       size_t size) {
    api_st_set set = {0};
    api_ckpt_hints h = {0};
    char inner[512];
    base_name(m->folder, sizeof m->folder, dir);
    if (api__folder_open(dir, &h, &set, m, why, size)) return -1;
    h.mode = mode;
    int rc = load_set(&set, &h, m, inner, sizeof inner);
    api__st_set_close(&set);
    if (rc) return api__ckpt_fail(why, size, "%s/%s: %s", dir, m->file, inner);
    if (api__folder_tokenizer(dir, m, why, size) || api__folder_pooling(dir, m, why, size)) return -1;
    return api__chat_folder_load(dir, &m->chat, why, size);
}

static void model_free(api_model *m) {
    free(m->params);
    api_bpe_free(m->bpe);
    api__chat_folder_free(m->chat);
}

/* m appended to the registry (created when NULL); the tokenizers' names
 * point at their models' own, wherever the array moved. */
static int add(api_models **models, const api_model *m, char *why, size_t size) {
    api_models *r = *models ? *models : calloc(1, sizeof *r);
    api_model *items = r ? realloc(r->items, ((size_t)r->count + 1) * sizeof *items) : NULL;
    if (!items) {
        if (!*models) free(r);
        return api__ckpt_fail(why, size, "out of memory");
    }
    items[r->count++] = *m;
    r->items = items;
    for (int i = 0; i < r->count; i++) items[i].tok.name = items[i].name;
    *models = r;
    return 0;
}

int api_weights_mode_parse(const char *s, api_weights_mode *out) {
    static const char *const names[] = {"keep", "f32", "bf16"};
    for (int i = 0; s && i < 3; i++)
        if (strcasecmp(s, names[i]) == 0) {
            *out = (api_weights_mode)i;
            return 0;
        }
    return -1;
}

int api_models_load(api_models **models, const char *spec, char *why, size_t size) {
    return api_models_load_as(models, spec, API_WEIGHTS_KEEP, why, size);
}

int api_models_load_as(api_models **models, const char *spec, api_weights_mode mode, char *why,
                       size_t size) {
    char path[4096];
    api_model m = {0};
    int heads = 0;
    if (parse_spec(spec, m.name, sizeof m.name, path, sizeof path, &heads, why, size)) return -1;
    if (*models && api__models_find(*models, m.name))
        return api__ckpt_fail(why, size, "model \"%s\" is loaded already", m.name);
    struct stat st;
    int dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    int rc = dir && heads ? api__ckpt_fail(why, size, "%s is a folder: its config.json gives n_head "
                                           "(\":heads=\" is for a single file)", path)
             : dir        ? load_folder(&m, path, mode, why, size)
                          : load_file(&m, path, heads, mode, why, size);
    m.tok.bpe = m.bpe;
    if (rc == 0) rc = add(models, &m, why, size);
    if (rc) model_free(&m);
    return rc;
}

/* The weights and the config from memory into m (the tokenizer aside). */
static int load_mem_weights(api_model *m, const api_model_files *f, char *why, size_t size) {
    api_ckpt_hints h = {0};
    json_error_t je;
    json_t *cfg = json_loadb(f->config, f->config_len, 0, &je);
    if (!cfg) return api__ckpt_fail(why, size, "config.json: line %d column %d: %s", je.line, je.column, je.text);
    char inner[512];
    int rc = api__folder_config(cfg, &h, inner, sizeof inner);
    json_decref(cfg);
    if (rc) return api__ckpt_fail(why, size, "config.json: %s", inner);
    h.mode = f->mode;
    api_st_set set = {0};
    if (api__st_open_mem(&set.file[0], f->weights, f->weights_len, inner, sizeof inner))
        return api__ckpt_fail(why, size, "model.safetensors: %s", inner);
    set.count = m->shards = 1;
    rc = load_set(&set, &h, m, inner, sizeof inner);
    api__st_set_close(&set);
    return rc ? api__ckpt_fail(why, size, "model.safetensors: %s", inner) : 0;
}

int api_models_load_mem(api_models **models, const api_model_files *f, char *why, size_t size) {
    api_model m = {.builtin = 1};
    char inner[600];
    snprintf(m.name, sizeof m.name, "%s", f->name);
    snprintf(m.folder, sizeof m.folder, "%s", f->folder);
    snprintf(m.file, sizeof m.file, "model.safetensors");
    int rc = *models && api__models_find(*models, m.name)
                 ? api__ckpt_fail(inner, sizeof inner, "a model of that name is loaded already")
                 : load_mem_weights(&m, f, inner, sizeof inner);
    if (rc == 0 && api_bpe_load_mem(f->vocab, f->vocab_len, f->merges, f->merges_len, &m.bpe, inner,
                                    sizeof inner) != 0)
        rc = -1;
    if (rc == 0 && api_bpe_vocab_size(m.bpe) > (size_t)m.cfg.vocab_size)
        rc = api__ckpt_fail(inner, sizeof inner, "the tokenizer has %zu tokens, more than vocab_size %d",
                            api_bpe_vocab_size(m.bpe), m.cfg.vocab_size);
    m.tok.bpe = m.bpe;
    if (rc == 0) rc = add(models, &m, inner, sizeof inner);
    if (rc) {
        model_free(&m);
        return api__ckpt_fail(why, size, "%s (built in, from %s): %s", f->name, f->folder, inner);
    }
    return 0;
}

void api_models_free(api_models *r) {
    if (!r) return;
    for (int i = 0; i < r->count; i++) model_free(&r->items[i]);
    free(r->items);
    free(r);
}

const api_model *api__models_find(const api_models *r, const char *name) {
    for (int i = 0; r && i < r->count; i++)
        if (strcmp(r->items[i].name, name) == 0) return &r->items[i];
    return NULL;
}

const api_tokenizer *api__models_tokenizer(const api_models *r, int i) {
    for (int k = 0; r && k < r->count; k++)
        if (r->items[k].bpe && i-- == 0) return &r->items[k].tok;
    return NULL;
}

const api_tokenizer *api__tokenizer_at(const api_limits *lim, size_t i) {
    size_t n = lim ? lim->n_tokenizers : 0;
    if (i < n) return &lim->tokenizers[i];
    return lim ? api__models_tokenizer(lim->models, (int)(i - n)) : NULL;
}

void api__models_names(const api_models *r, char *out, size_t size) {
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; r && i < r->count && n < size; i++)
        n += (size_t)snprintf(out + n, size - n, "%s\"%s\"", i ? ", " : "", r->items[i].name);
    if (!r || r->count == 0) snprintf(out, size, "none");
}

/* ==== GET /models ========================================================= */

/* The head: tied to the token embedding (given again, or not), or its own. */
static void head_text(char *out, size_t size, const api_model *m) {
    attn_lm_plan p;
    attn_param emb, last;
    if (attn_lm_plan_make(&m->cfg, 1, 1, 0, &p, NULL) != ATTN_OK) {
        snprintf(out, size, "?");
        return;
    }
    attn_lm_param_get(&p, 0, &emb);
    attn_lm_param_get(&p, p.param_count - 1, &last);
    if (!p.tied) snprintf(out, size, "%s, untied", last.name);
    else snprintf(out, size, "%s %s", m->has_lm_head ? "given, equal to" : "tied to", emb.name);
}

static void model_json(api_buf *b, const api_model *m) {
    api__buf_puts(b, "{\"name\":");
    api__buf_json_string(b, m->name);
    api__buf_puts(b, ",\"file\":");
    api__buf_json_string(b, m->file);
    api__buf_puts(b, ",\"folder\":");
    if (m->folder[0]) api__buf_json_string(b, m->folder);
    else api__buf_puts(b, "null");
    api__buf_printf(b, ",\"shards\":%d,\"module\":\"%s\",\"architecture\":\"%s\",\"config\":",
                    m->shards, attn_arch_name(m->cfg.arch), attn_arch_what(m->cfg.arch));
    api__config_json(b, &m->cfg);
    char head[2 * ATTN_PARAM_NAME_MAX + 32];
    head_text(head, sizeof head, m);
    api__buf_printf(b, ",\"n_head_from\":\"%s\",\"dtype\":\"%s\",\"weights_dtype\":\"%s\","
                    "\"weights_lossy\":%s,\"weights_bytes\":%zu,\"parameters\":%zu,"
                    "\"transformer_prefix\":%s,\"lm_head\":\"%s\",\"tokenizer\":",
                    m->n_head_from, m->dtype, attn_dtype_name(m->cfg.weights_dtype),
                    m->lossy ? "true" : "false", m->param_bytes, m->n_weights,
                    m->prefixed ? "true" : "false", head);
    if (m->bpe) api__buf_printf(b, "{\"name\":\"%s\",\"tokens\":%zu}", m->name, api_bpe_vocab_size(m->bpe));
    else api__buf_puts(b, "null");
    api__buf_printf(b, ",\"builtin\":%s,\"chat_template\":", m->builtin ? "true" : "false");
    if (m->chat) { /* where it came from; its compile error when it did not compile */
        api__buf_puts(b, "{\"source\":");
        api__buf_json_string(b, m->chat->source);
        api__buf_puts(b, ",\"error\":");
        if (m->chat->t) api__buf_puts(b, "null");
        else api__buf_json_string(b, m->chat->error);
        api__buf_puts(b, "}}");
    } else {
        api__buf_puts(b, "null}");
    }
}

int api_models_json(const api_limits *lim, api_buf *b) {
    const api_models *r = lim ? lim->models : NULL;
    api__buf_puts(b, "{\"models\":[");
    for (int i = 0; r && i < r->count; i++) {
        if (i) api__buf_puts(b, ",");
        model_json(b, &r->items[i]);
    }
    api__buf_puts(b, "],\"tokenizers\":[");
    const api_tokenizer *t;
    for (size_t i = 0; (t = api__tokenizer_at(lim, i)) != NULL; i++) {
        api__buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
        api__buf_json_string(b, t->name);
        api__buf_printf(b, ",\"tokens\":%zu}", api_bpe_vocab_size(t->bpe));
    }
    api__buf_puts(b, "],\"default_tokenizer\":");
    if ((t = api__tokenizer_at(lim, 0)) != NULL) api__buf_json_string(b, t->name);
    else api__buf_puts(b, "null");
    api__buf_puts(b, "}");
    return b->failed ? -1 : 0;
}

const api_model *api__models_at(const api_models *r, int i) {
    return r && i >= 0 && i < r->count ? &r->items[i] : NULL;
}
