/* fields.c - the modules of each endpoint (from the endpoint column of
 * core's ATTN_MODULE_MAP) and the request fields of each module. These
 * tables are the whole request vocabulary of the attention endpoints: the
 * parser rejects any other top-level field, and a test checks that the
 * OpenAPI document lists every one of them. */
#include "api/module/module.h"

#include <string.h>

int api__endpoint_modules(api_endpoint ep, attn_module mods[ATTN_MODULE_COUNT]) {
    const char *path = api_endpoint_path(ep);
    return path ? attn_modules_on_endpoint(path, mods) : 0;
}

/* Every module: the module, the labels, what to return and how. */
#define COMMON "module", "tokens", "return", "precision", "output_format", "dtype", "heads", \
               "query_rows", "top_k", "cell", "color_scale"
/* Masks and scores, for every module. */
#define MASKING "causal", "scale", "attn_mask", "key_padding_mask", "mask_method", \
                "average_attn_weights"
/* Modules with parameters and dropout. */
#define TRAINABLE "inputs", "init", "state_dict", "training", "dropout_seed"

static const char *const f_simple[] = {COMMON, MASKING, "inputs", "normalization", NULL};
static const char *const f_v1[] = {COMMON, MASKING, TRAINABLE, "d_in", "d_out", NULL};
static const char *const f_v2[] = {COMMON, MASKING, TRAINABLE, "d_in", "d_out", "qkv_bias", NULL};
static const char *const f_causal[] = {COMMON, MASKING, TRAINABLE, "d_in", "d_out",
                                       "context_length", "dropout", "qkv_bias", NULL};
static const char *const f_heads[] = {COMMON, MASKING, TRAINABLE, "d_in", "d_out",
                                      "context_length", "dropout", "num_heads", "qkv_bias", NULL};
static const char *const f_gpt2[] = {COMMON, MASKING, TRAINABLE, "n_embd", "n_head",
                                     "block_size", "dropout", NULL};
static const char *const f_torch[] = {COMMON, MASKING, TRAINABLE, "embed_dim", "num_heads",
                                      "dropout", "bias", "kdim", "vdim", "key", "value", NULL};
static const char *const f_sdpa[] = {COMMON, MASKING, "query", "key", "value", "dropout",
                                     "dropout_seed", NULL};

/* Adding a module: its list here (the constructor names of its row in
 * core/attention.h, plus its inputs). */
static const char *const *const module_fields[ATTN_MODULE_COUNT] = {
    [ATTN_SIMPLE] = f_simple,
    [ATTN_SELF_V1] = f_v1,
    [ATTN_SELF_V2] = f_v2,
    [ATTN_CAUSAL] = f_causal,
    [ATTN_MHA_WRAPPER] = f_heads,
    [ATTN_MHA] = f_heads,
    [ATTN_GPT2] = f_gpt2,
    [ATTN_TORCH_MHA] = f_torch,
    [ATTN_SDPA] = f_sdpa,
};

const char *const *api__module_fields(attn_module m) {
    if ((int)m < 0 || m >= ATTN_MODULE_COUNT) return NULL;
    return module_fields[m];
}
