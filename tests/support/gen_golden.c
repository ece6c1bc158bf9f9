/* gen_golden.c - see gen_golden.h. */
#include "gen_golden.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_call.h"
#include "bpe_files.h"
#include "check_main.h"
#include "files.h"

static int get_int(const json_t *o, const char *k) { return (int)json_integer_value(json_object_get(o, k)); }

static void config_of(const json_t *c, const char *family, attn_lm_config *cfg) {
    const json_t *cf = json_object_get(c, "config");
    *cfg = (attn_lm_config){.vocab_size = get_int(cf, "vocab_size")};
    if (strcmp(family, "GPT2") == 0) {
        cfg->context = get_int(cf, "block_size");
        cfg->n_layer = get_int(cf, "n_layer");
        cfg->n_head = get_int(cf, "n_head");
        cfg->width = get_int(cf, "n_embd");
        cfg->dropout = json_number_value(json_object_get(cf, "dropout"));
        cfg->arch = ATTN_ARCH_GPT2;
        cfg->act = ATTN_ACT_GELU_ERF;
    } else {
        cfg->context = get_int(cf, "context_length");
        cfg->n_layer = get_int(cf, "n_layers");
        cfg->n_head = get_int(cf, "n_heads");
        cfg->width = get_int(cf, "emb_dim");
        cfg->dropout = json_number_value(json_object_get(cf, "drop_rate"));
        cfg->qkv_bias = json_is_true(json_object_get(cf, "qkv_bias"));
        cfg->arch = ATTN_ARCH_GPTMODEL;
    }
}

/* rows of ints [B][n] into dst; the row lengths into n (may be NULL). */
static int rows_int(const json_t *a, int32_t dst[][GG_MAX_TOKENS], int *n) {
    int B = (int)json_array_size(a);
    ck_assert_int_le(B, GG_MAX_ROWS);
    for (int b = 0; b < B; b++) {
        const json_t *row = json_array_get(a, (size_t)b);
        int m = (int)json_array_size(row);
        ck_assert_int_le(m, GG_MAX_TOKENS);
        for (int i = 0; i < m; i++) dst[b][i] = (int32_t)json_integer_value(json_array_get(row, (size_t)i));
        if (n) n[b] = m;
    }
    return B;
}

static void scores_of(const json_t *c, gg_case *g) {
    const json_t *lp = json_object_get(c, "logprobs"), *top = json_object_get(c, "top");
    const json_t *plp = json_object_get(c, "prompt_logprobs");
    for (int b = 0; b < g->B; b++)
        for (int k = 0; k < g->n[b]; k++) {
            g->logprobs[b][k] = (float)json_number_value(json_array_get(json_array_get(lp, b), k));
            const json_t *t = json_array_get(json_array_get(top, b), k);
            for (int i = 0; i < GG_TOP; i++) {
                g->top_id[b][k][i] = (int32_t)json_integer_value(json_array_get(json_array_get(t, i), 0));
                g->top_lp[b][k][i] = (float)json_number_value(json_array_get(json_array_get(t, i), 1));
            }
        }
    for (int b = 0; plp && b < g->B; b++)
        for (int t = 1; t < g->T0; t++)
            g->prompt_lp[b][t] = (float)json_number_value(json_array_get(json_array_get(plp, b), t));
}

static void case_of(json_t *root, const json_t *c, const char *family, gg_case *g) {
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", json_string_value(json_object_get(c, "name")));
    snprintf(g->loop, sizeof g->loop, "%s", json_string_value(json_object_get(c, "loop")));
    if (family) {
        config_of(c, family, &g->cfg);
        g->init_seed = (uint64_t)json_integer_value(json_object_get(c, "init_seed"));
    }
    int n0[GG_MAX_ROWS];
    g->B = rows_int(json_object_get(c, "prompt"), g->prompt, n0);
    g->T0 = n0[0];
    rows_int(json_object_get(c, "tokens"), g->tokens, g->n);
    g->generate = json_object_get(c, "generate");
    g->stopped = json_is_true(json_object_get(c, "stopped"));
    scores_of(c, g);
    g->root = json_incref(root);
}

static json_t *load(const char *rel) {
    char path[1024];
    tfile_path(path, sizeof path, rel);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    ck_assert_msg(j != NULL, "cannot read %s: %s", path, je.text);
    return j;
}

int gg_count_cases(void) {
    char path[1024];
    tfile_path(path, sizeof path, "tests/golden/generation/cases.json");
    json_t *j = json_load_file(path, 0, NULL);
    int n = j ? (int)json_array_size(j) : -1;
    json_decref(j);
    return n;
}

int gg_load_cases(gg_case *cases, int max) {
    json_t *root = load("tests/golden/generation/cases.json");
    int n = (int)json_array_size(root);
    ck_assert_int_le(n, max);
    for (int i = 0; i < n; i++) {
        const json_t *c = json_array_get(root, (size_t)i);
        case_of(root, c, json_string_value(json_object_get(c, "family")), &cases[i]);
    }
    json_decref(root);
    return n;
}

int gg_load_hf(gg_case *cases, int max, attn_lm_config *cfg) {
    json_t *root = load("tests/golden/generation/tiny_hf.json");
    const json_t *list = json_object_get(root, "completions");
    int n = (int)json_array_size(list);
    ck_assert_int_le(n, max);
    config_of(root, "GPT2", cfg);
    cfg->act = ATTN_ACT_GELU_TANH;
    for (int i = 0; i < n; i++) {
        case_of(root, json_array_get(list, (size_t)i), NULL, &cases[i]);
        cases[i].cfg = *cfg;
    }
    json_decref(root);
    return n;
}

void gg_free(gg_case *c) {
    json_decref(c->root);
    c->root = NULL;
}

float *gg_params(const gg_case *c, attn_rng *rng) {
    attn_lm_plan plan;
    attn_error err = {0};
    ck_assert_int_eq(attn_lm_plan_make(&c->cfg, 1, 1, 0, &plan, &err), ATTN_OK);
    float *params = malloc(plan.n_params * sizeof *params);
    ck_assert_ptr_nonnull(params);
    attn_rng_seed(rng, c->init_seed);
    ck_assert_int_eq(attn_lm_params_init(&plan, params, rng, &err), ATTN_OK);
    return params;
}

char *gg_request(const gg_case *c, const char *extra_json) {
    json_t *idx = json_array();
    for (int t = 0; t < c->T0; t++) json_array_append_new(idx, json_integer(c->prompt[0][t]));
    json_t *gen = json_deep_copy(c->generate);
    json_object_set_new(gen, "logprobs", json_integer(GG_TOP));
    json_t *r = json_pack("{s:i,s:i,s:i,s:i,s:i,s:f,s:{s:I},s:o,s:o}", "vocab_size", c->cfg.vocab_size,
                          "block_size", c->cfg.context, "n_layer", c->cfg.n_layer, "n_head",
                          c->cfg.n_head, "n_embd", c->cfg.width, "dropout", c->cfg.dropout, "init",
                          "seed", (json_int_t)c->init_seed, "idx", idx, "generate", gen);
    return tapi_body(r, extra_json);
}

void gg_load_tiny(api_models **models, api_tokenizer *tok) {
    char spec[1200], why[512];
    tfile_path(spec, sizeof spec, "tests/golden/generation/tiny_hf.safetensors");
    memmove(spec + 5, spec, strlen(spec) + 1);
    memcpy(spec, "tiny=", 5);
    ck_assert_msg(api_models_load(models, spec, why, sizeof why) == 0, "%s", why);
    static const char *const extra[] = {"<|endoftext|>", NULL};
    *tok = (api_tokenizer){.name = "bytes", .bpe = tbpe_load_bytes(extra)};
}

void gg_unload_tiny(api_models **models, api_tokenizer *tok) {
    api_models_free(*models);
    *models = NULL;
    api_bpe_free((api_bpe *)tok->bpe);
    tok->bpe = NULL;
}

TCase *gg_golden_tcase(Suite *s, const TTest *loop) {
    int n = gg_count_cases();
    TCase *tc = tcase_with(s, "golden", 60, NULL);
    tcase_add_loop_test(tc, loop, 0, n > 0 ? n : 1);
    return tc;
}
