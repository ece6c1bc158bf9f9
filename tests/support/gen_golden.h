/* gen_golden.h - the generation goldens of tests/golden/generation/
 * (written by tests/golden/generate_generation.py): the book's and
 * nanoGPT's generate loops run by PyTorch 1.13 on models built from a seed,
 * and completions of the Hugging Face checkpoint tiny_hf.safetensors.
 */
#ifndef TESTS_SUPPORT_GEN_GOLDEN_H
#define TESTS_SUPPORT_GEN_GOLDEN_H

#include <check.h>
#include <jansson.h>
#include <stdint.h>

#include "api/api.h"
#include "core/lm.h"

#define GG_MAX_ROWS 2
#define GG_MAX_TOKENS 64
#define GG_TOP 5

typedef struct {
    char name[64];
    char loop[32];             /* book_simple, book_generate, nanogpt, book_top_p */
    attn_lm_config cfg;      /* the family's config (GPT2: F.act) */
    uint64_t init_seed;
    int B, T0;
    int32_t prompt[GG_MAX_ROWS][GG_MAX_TOKENS];
    const json_t *generate;    /* the loop's arguments: max_new_tokens, temperature, top_k,
                                  top_p, context_size, eos_token_id, seed (may be absent) */
    int n[GG_MAX_ROWS];        /* tokens written per row */
    int32_t tokens[GG_MAX_ROWS][GG_MAX_TOKENS];
    float logprobs[GG_MAX_ROWS][GG_MAX_TOKENS];
    int32_t top_id[GG_MAX_ROWS][GG_MAX_TOKENS][GG_TOP];
    float top_lp[GG_MAX_ROWS][GG_MAX_TOKENS][GG_TOP];
    float prompt_lp[GG_MAX_ROWS][GG_MAX_TOKENS]; /* tiny_hf only; [0] unused */
    int stopped;               /* the loop met eos_token_id */
    json_t *root;              /* owns `generate` */
} gg_case;

/* Every case of cases.json (max at most), in order; the caller frees each
 * with gg_free. Fails the running test when the file cannot be read. */
int gg_load_cases(gg_case *cases, int max);
/* How many cases cases.json has (for a loop test; no check runs: -1 when
 * it cannot be read). */
int gg_count_cases(void);
/* The completions of tiny_hf.json (its config into *cfg: GPT2, gelu_new). */
int gg_load_hf(gg_case *cases, int max, attn_lm_config *cfg);
void gg_free(gg_case *c);

/* The case's parameters: torch.manual_seed(init_seed); Model(config).
 * rng is left where PyTorch's generator is after the constructor. malloc'd. */
float *gg_params(const gg_case *c, attn_rng *rng);

/* In the test's process: tiny_hf.safetensors as model "tiny" into *models,
 * and a byte-level tokenizer with <|endoftext|> as "bytes" into *tok (the
 * server's --model and --tokenizer of these goldens). */
void gg_load_tiny(api_models **models, api_tokenizer *tok);
void gg_unload_tiny(api_models **models, api_tokenizer *tok);

/* The /model/gpt2 request of the case (config, init, idx, generate with
 * logprobs 5, plus extra's members), compact JSON, malloc'd. */
char *gg_request(const gg_case *c, const char *extra_json);

/* Adds to s the test case "golden" (60 s a test) with loop run once for
 * each case of cases.json (_i is the case's index; once when the file
 * cannot be read, so that the loop fails it); returns it for more tests. */
TCase *gg_golden_tcase(Suite *s, const TTest *loop);

#endif
