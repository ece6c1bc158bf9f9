/* checkpoint.c - Hugging Face GPT-2 checkpoints (model.safetensors) loaded
 * once at start into core's GPT2, and the registry of loaded models that
 * POST /model/gpt2 ("model": NAME) and GET /models read.
 *
 * The layout is transformers' GPT2Model / GPT2LMHeadModel state_dict:
 *
 *   [transformer.]wte.weight [V][C]         [transformer.]wpe.weight [P][C]
 *   [transformer.]h.N.ln_1.weight/bias [C]  h.N.attn.c_attn.weight [C][3C]
 *   h.N.attn.c_attn.bias [3C]               h.N.attn.c_proj.weight [C][C], bias [C]
 *   h.N.ln_2.weight/bias [C]                h.N.mlp.c_fc.weight [C][4C], bias [4C]
 *   h.N.mlp.c_proj.weight [4C][C], bias [C] [transformer.]ln_f.weight/bias [C]
 *   lm_head.weight [V][C] (optional: tied to wte.weight, so it must equal it)
 *   h.N.attn.bias, h.N.attn.masked_bias (buffers of older files: ignored)
 *
 * Weights of GPT-2's Conv1D are stored [in][out]; core computes nn.Linear
 * with [out][in] weights (seed 003's GPT2), so each is transposed once, here,
 * into core's one parameter buffer, in attn_gpt2_param_get's order (with
 * core's own attn.bias tril buffers). F16 and BF16 become float32 in the same
 * pass. The buffer is made once at start and read by every worker thread
 * (one copy per process); the file's mapping is released after the copy.
 *
 * The config comes from the shapes: vocab_size and n_embd from wte,
 * block_size (n_positions) from wpe, n_layer from the h.N blocks. n_head is
 * not in any shape: it is the spec's ":heads=N" if given, else
 * __metadata__'s "n_head", else n_embd / 64 (GPT-2's head width: right for
 * gpt2, gpt2-medium, -large and -xl, which have 12, 16, 20 and 25 heads).
 * The activation is gelu_new (the tanh approximation); dropout is GPT-2's
 * 0.1 (resid_pdrop, embd_pdrop), used only by requests with "training".
 */
#include "api/model/model.h"
#include "api/model/model.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct api_models {
    api_model *items;
    int count;
};

#define MAX_LAYERS 100000

/* ==== Names =============================================================== */

static const char *const block_names[] = {
    "ln_1.weight",        "ln_1.bias",          "attn.c_attn.weight", "attn.c_attn.bias",
    "attn.c_proj.weight", "attn.c_proj.bias",   "ln_2.weight",        "ln_2.bias",
    "mlp.c_fc.weight",    "mlp.c_fc.bias",      "mlp.c_proj.weight",  "mlp.c_proj.bias",
    "attn.bias",          "attn.masked_bias",   NULL};

/* A decimal without sign or leading zero, up to MAX_LAYERS; its end in *end. */
static int layer_number(const char *s, const char **end) {
    if (!isdigit((unsigned char)*s) || (s[0] == '0' && isdigit((unsigned char)s[1]))) return -1;
    long n = 0;
    while (isdigit((unsigned char)*s) && n <= MAX_LAYERS) n = n * 10 + (*s++ - '0');
    *end = s;
    return n < MAX_LAYERS ? (int)n : -1;
}

/* Checks that every tensor of the file belongs to the layout; counts the
 * blocks (highest N + 1). */
static int check_names(const api_st_file *f, const char *prefix, int *n_layer, char *why,
                       size_t size) {
    size_t pl = strlen(prefix);
    *n_layer = 0;
    for (size_t i = 0; i < f->count; i++) {
        const char *name = f->tensors[i].name, *rest = name + pl;
        if (strcmp(name, "lm_head.weight") == 0) continue;
        int known = strncmp(name, prefix, pl) == 0;
        if (known && strncmp(rest, "h.", 2) == 0) {
            const char *end;
            int l = layer_number(rest + 2, &end);
            known = l >= 0 && *end == '.';
            for (int k = 0; known && block_names[k]; k++)
                if (strcmp(end + 1, block_names[k]) == 0) {
                    if (l + 1 > *n_layer) *n_layer = l + 1;
                    goto next;
                }
            known = 0;
        } else if (known) {
            known = !strcmp(rest, "wte.weight") || !strcmp(rest, "wpe.weight") ||
                    !strcmp(rest, "ln_f.weight") || !strcmp(rest, "ln_f.bias");
        }
        if (!known)
            return api__ckpt_fail(why, size, "tensor \"%.64s\" is not part of GPT-2's layout (wte, wpe, "
                                   "h.N.{ln_1,attn,ln_2,mlp}.*, ln_f, lm_head%s)",
                        name, pl ? ", with the prefix \"transformer.\"" : "");
    next:;
    }
    return 0;
}

/* The checkpoint's name of core's entry (seed 003 says mlp.fc, mlp.proj). */
static void hf_name(char *out, size_t size, const char *prefix, const char *core) {
    const char *fc = strstr(core, ".mlp.fc."), *proj = strstr(core, ".mlp.proj.");
    if (fc) snprintf(out, size, "%s%.*s.mlp.c_fc.%s", prefix, (int)(fc - core), core, fc + 8);
    else if (proj)
        snprintf(out, size, "%s%.*s.mlp.c_proj.%s", prefix, (int)(proj - core), core, proj + 10);
    else snprintf(out, size, "%s%s", prefix, core);
}

static void shape_text(char *out, size_t size, int rank, const size_t *shape) {
    size_t n = (size_t)snprintf(out, size, "[");
    for (int d = 0; d < rank && n < size; d++)
        n += (size_t)snprintf(out + n, size - n, d ? ", %zu" : "%zu", shape[d]);
    if (n < size) snprintf(out + n, size - n, "]");
}

/* After the parameters are filled: lm_head.weight, when the file has one
 * (GPT-2 ties it to wte.weight: a float tensor of its shape and values),
 * and every value finite, named as the file names it (c_fc, not core's
 * fc). Returns 0, or -1 with why filled. */
static int check_loaded(const api_st_file *f, const char *prefix, const attn_gpt2_plan *plan,
                        const api_st_tensor *wte, const float *params, char *why, size_t size) {
    const api_st_tensor *head = api__st_find(f, "lm_head.weight");
    char got[64], want[64];
    if (head && strcmp(head->dtype, "F32") && strcmp(head->dtype, "F16") && strcmp(head->dtype, "BF16"))
        return api__ckpt_fail(why, size, "lm_head.weight is %s: GPT-2 ties it to wte.weight, a "
                              "float tensor (leave it out or make it equal)", head->dtype);
    if (head && (head->rank != 2 || head->shape[0] != wte->shape[0] || head->shape[1] != wte->shape[1])) {
        shape_text(got, sizeof got, head->rank, head->shape);
        shape_text(want, sizeof want, wte->rank, wte->shape);
        return api__ckpt_fail(why, size, "lm_head.weight is %s, wte.weight %s: GPT-2 ties them (leave "
                              "it out or make it equal)", got, want);
    }
    if (head && !api__st_equals_f32(head, params))
        return api__ckpt_fail(why, size, "lm_head.weight differs from wte.weight: GPT-2 ties them "
                              "(leave it out or make it equal)");
    attn_error ae = {0};
    if (attn_gpt2_params_check(plan, params, &ae) == ATTN_OK) return 0;
    char name[96];
    const char *core = strncmp(ae.field, "state_dict.", 11) == 0 ? ae.field + 11 : ae.field;
    hf_name(name, sizeof name, prefix, core);
    if (ae.code == ATTN_ERR_NONFINITE)
        return api__ckpt_fail(why, size, "tensor %s holds NaN or infinity", name);
    return api__ckpt_fail(why, size, "tensor \"%s\": %s", name, ae.message);
}

/* ==== Loading ============================================================= */

/* n_head: the spec's, __metadata__'s, or n_embd / 64. */
static int pick_heads(const api_st_file *f, int spec_heads, int C, api_model *m, char *why,
                      size_t size) {
    if (spec_heads > 0) {
        m->cfg.n_head = spec_heads;
        m->n_head_from = "option";
        return 0;
    }
    const json_t *h = f->metadata ? json_object_get(f->metadata, "n_head") : NULL;
    if (h) {
        const char *s = json_string_value(h);
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || *end || v < 1 || v > C)
            return api__ckpt_fail(why, size, "__metadata__.n_head \"%.32s\" is not a head count in [1, %d]",
                        s, C);
        m->cfg.n_head = (int)v;
        m->n_head_from = "metadata";
        return 0;
    }
    if (C % 64)
        return api__ckpt_fail(why, size, "n_head is not in the file and n_embd %d is not a multiple of 64 "
                               "(GPT-2's head width): give it as NAME=FILE:heads=N", C);
    m->cfg.n_head = C / 64;
    m->n_head_from = "n_embd/64";
    return 0;
}

/* Copies every entry of core's state_dict from the file (transposing the
 * Conv1D weights), core's buffers filled as the module registers them. */
static int fill_params(const api_st_file *f, const char *prefix, const attn_gpt2_plan *plan,
                       api_model *m, char *why, size_t size) {
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_gpt2_param_get(plan, i, &p);
        if (p.buffer) {
            attn_param_buffer_fill(&p, m->params + p.offset);
            continue;
        }
        char name[ATTN_PARAM_NAME_MAX + 32], want[96], got[96];
        hf_name(name, sizeof name, prefix, p.name);
        const api_st_tensor *t = api__st_find(f, name);
        if (!t) return api__ckpt_fail(why, size, "tensor \"%s\" is missing", name);
        /* Conv1D: every rank-2 weight but the embeddings is [in][out] */
        int conv = p.rank == 2 && strcmp(p.name, "wte.weight") && strcmp(p.name, "wpe.weight");
        size_t shape[2] = {(size_t)p.shape[conv ? 1 : 0], (size_t)p.shape[conv ? 0 : 1]};
        int ok = t->rank == p.rank;
        for (int d = 0; ok && d < p.rank; d++) ok = t->shape[d] == shape[d];
        if (!ok) {
            shape_text(want, sizeof want, p.rank, shape);
            shape_text(got, sizeof got, t->rank, t->shape);
            return api__ckpt_fail(why, size, "tensor \"%s\" has shape %s, GPT-2 with n_embd %d needs %s%s",
                        name, got, plan->C, want, conv ? " (Conv1D: [in][out])" : "");
        }
        if (api__st_to_f32(t, m->params + p.offset, conv))
            return api__ckpt_fail(why, size, "tensor \"%s\" has dtype %s: weights must be F32, F16 or BF16",
                        name, t->dtype);
        if (!m->dtype[0]) snprintf(m->dtype, sizeof m->dtype, "%s", t->dtype);
        else if (strcmp(m->dtype, t->dtype)) snprintf(m->dtype, sizeof m->dtype, "mixed");
        m->n_weights += p.count;
    }
    return 0;
}

static int load_file(api_model *m, const char *path, int spec_heads, char *why, size_t size) {
    api_st_file f;
    char inner[400];
    if (api__st_open(&f, path, inner, sizeof inner)) return api__ckpt_fail(why, size, "%s", inner);
    int rc = -1;
    /* GPT2LMHeadModel's names start with "transformer." (but lm_head), GPT2Model's do not */
    const char *prefix = "";
    for (size_t i = 0; i < f.count; i++)
        if (strncmp(f.tensors[i].name, "transformer.", 12) == 0) prefix = "transformer.";
    const api_st_tensor *wte, *wpe;
    char name[64];
    snprintf(name, sizeof name, "%swte.weight", prefix);
    wte = api__st_find(&f, name);
    snprintf(name, sizeof name, "%swpe.weight", prefix);
    wpe = api__st_find(&f, name);
    int n_layer;
    if (prefix[0] && api__st_find(&f, "wte.weight")) {
        api__ckpt_fail(why, size, "both wte.weight and transformer.wte.weight: two models in one file?");
    } else if (check_names(&f, prefix, &n_layer, inner, sizeof inner)) {
        api__ckpt_fail(why, size, "%s", inner);
    } else if (!wte || wte->rank != 2 || wte->shape[0] < 1 || wte->shape[1] < 1 ||
               wte->shape[0] > INT32_MAX || wte->shape[1] > INT32_MAX) {
        api__ckpt_fail(why, size, wte ? "tensor \"%swte.weight\" must be [vocab_size][n_embd]"
                            : "tensor \"%swte.weight\" is missing", prefix);
    } else if (!wpe || wpe->rank != 2 || wpe->shape[1] != wte->shape[1] || wpe->shape[0] < 1 ||
               wpe->shape[0] > INT32_MAX) {
        api__ckpt_fail(why, size, wpe ? "tensor \"%swpe.weight\" must be [n_positions][n_embd] with "
                              "wte.weight's n_embd"
                            : "tensor \"%swpe.weight\" is missing", prefix);
    } else if (n_layer == 0) { /* it loaded as a GPT-2 of no layer */
        api__ckpt_fail(why, size, "no transformer block (%sh.0.*): not a GPT-2 checkpoint", prefix);
    } else {
        int C = (int)wte->shape[1];
        m->cfg = (attn_gpt2_config){.vocab_size = (int)wte->shape[0],
                                    .block_size = (int)wpe->shape[0], .n_layer = n_layer,
                                    .n_embd = C, .dropout = 0.1, .gelu = ATTN_GELU_TANH};
        m->prefixed = prefix[0] != '\0';
        attn_gpt2_plan plan;
        attn_error ae = {0};
        if (pick_heads(&f, spec_heads, C, m, inner, sizeof inner) == 0) {
            if (attn_gpt2_plan_make(&m->cfg, 1, 1, 0, &plan, &ae) != ATTN_OK) {
                api__ckpt_fail(inner, sizeof inner, "the config from its shapes is not a GPT-2 (%s)",
                     ae.message);
            } else if ((m->params = malloc(plan.n_params * sizeof *m->params)) == NULL) {
                api__ckpt_fail(inner, sizeof inner, "cannot allocate %zu bytes for its parameters",
                     plan.n_params * sizeof *m->params);
            } else if (fill_params(&f, prefix, &plan, m, inner, sizeof inner) == 0) {
                m->n_params = plan.n_params;
                m->has_lm_head = api__st_find(&f, "lm_head.weight") != NULL;
                rc = check_loaded(&f, prefix, &plan, wte, m->params, inner, sizeof inner);
            }
        }
        if (rc) api__ckpt_fail(why, size, "%s", inner);
    }
    api__st_close(&f);
    return rc;
}

/* NAME=FILE[:heads=N]; NAME of letters, digits, '.', '_', '-'. */
static int parse_spec(const char *spec, char *name, size_t name_size, char *path, size_t path_size,
                      int *heads, char *why, size_t size) {
    const char *eq = strchr(spec, '=');
    size_t nl = eq ? (size_t)(eq - spec) : 0;
    if (!eq || nl == 0 || nl >= name_size)
        return api__ckpt_fail(why, size, "expected NAME=FILE.safetensors[:heads=N] (NAME of 1 to %zu "
                               "characters)", name_size - 1);
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
    if (fl == 0 || fl >= path_size) return api__ckpt_fail(why, size, "FILE is empty or too long");
    memcpy(path, file, fl);
    path[fl] = '\0';
    return 0;
}

int api_models_load(api_models **models, const char *spec, char *why, size_t size) {
    char path[4096];
    api_model m = {0};
    int heads = 0;
    if (parse_spec(spec, m.name, sizeof m.name, path, sizeof path, &heads, why, size)) return -1;
    if (*models && api__models_find(*models, m.name))
        return api__ckpt_fail(why, size, "model \"%s\" is loaded already", m.name);
    char inner[512];
    if (load_file(&m, path, heads, inner, sizeof inner)) {
        free(m.params);
        return api__ckpt_fail(why, size, "%s: %s", path, inner);
    }
    const char *base = strrchr(path, '/');
    snprintf(m.file, sizeof m.file, "%.255s", base ? base + 1 : path);
    api_models *r = *models ? *models : calloc(1, sizeof *r);
    api_model *items = r ? realloc(r->items, ((size_t)r->count + 1) * sizeof *items) : NULL;
    if (!items) {
        if (!*models) free(r);
        free(m.params);
        return api__ckpt_fail(why, size, "out of memory");
    }
    items[r->count++] = m;
    r->items = items;
    *models = r;
    return 0;
}

void api_models_free(api_models *r) {
    if (!r) return;
    for (int i = 0; i < r->count; i++) free(r->items[i].params);
    free(r->items);
    free(r);
}

const api_model *api__models_find(const api_models *r, const char *name) {
    for (int i = 0; r && i < r->count; i++)
        if (strcmp(r->items[i].name, name) == 0) return &r->items[i];
    return NULL;
}

void api__models_names(const api_models *r, char *out, size_t size) {
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; r && i < r->count && n < size; i++)
        n += (size_t)snprintf(out + n, size - n, "%s\"%s\"", i ? ", " : "", r->items[i].name);
    if (!r || r->count == 0) snprintf(out, size, "none");
}

/* ==== GET /models ========================================================= */

int api_models_json(const api_models *r, api_buf *b) {
    api__buf_puts(b, "{\"models\":[");
    for (int i = 0; r && i < r->count; i++) {
        const api_model *m = &r->items[i];
        const attn_gpt2_config *c = &m->cfg;
        api__buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
        api__buf_json_string(b, m->name);
        api__buf_puts(b, ",\"file\":");
        api__buf_json_string(b, m->file);
        api__buf_printf(b,
                        ",\"module\":\"GPT2\",\"config\":{\"vocab_size\":%d,\"block_size\":%d,"
                        "\"n_layer\":%d,\"n_head\":%d,\"n_embd\":%d,\"dropout\":0.1,"
                        "\"activation\":\"gelu_new\"},\"n_head_from\":\"%s\",\"dtype\":\"%s\","
                        "\"parameters\":%zu,\"transformer_prefix\":%s,\"lm_head\":\"%s\"}",
                        c->vocab_size, c->block_size, c->n_layer, c->n_head, c->n_embd,
                        m->n_head_from, m->dtype, m->n_weights, m->prefixed ? "true" : "false",
                        m->has_lm_head ? "given, equal to wte.weight" : "tied to wte.weight");
    }
    api__buf_puts(b, "]}");
    return b->failed ? -1 : 0;
}
