/* endpoints.c - paths, the modules of each endpoint and the request fields
 * of each module. These tables are the whole request vocabulary: the parser
 * rejects any other top-level field, and a test checks that the OpenAPI
 * document lists every one of them. */
#include "api/api_internal.h"

#include <string.h>

static const char *const paths[API_EP_COUNT] = {
    [API_EP_SIMPLE] = "/attention/simple",
    [API_EP_SELF] = "/attention/self",
    [API_EP_CAUSAL] = "/attention/causal",
    [API_EP_MULTIHEAD] = "/attention/multihead",
    [API_EP_SDPA] = "/attention/sdpa",
};

const char *api_endpoint_path(api_endpoint ep) {
    if ((int)ep < 0 || ep >= API_EP_COUNT) return NULL;
    return paths[ep];
}

int api_endpoint_from_path(const char *path, api_endpoint *ep) {
    if (path == NULL) return -1;
    for (int i = 0; i < API_EP_COUNT; i++) {
        if (strcmp(path, paths[i]) == 0) {
            if (ep) *ep = (api_endpoint)i;
            return 0;
        }
    }
    return -1;
}

static const attn_module simple_mods[] = {ATTN_SIMPLE};
static const attn_module self_mods[] = {ATTN_SELF_V2, ATTN_SELF_V1};
static const attn_module causal_mods[] = {ATTN_CAUSAL};
static const attn_module multihead_mods[] = {ATTN_MHA, ATTN_MHA_WRAPPER, ATTN_GPT2, ATTN_TORCH_MHA};
static const attn_module sdpa_mods[] = {ATTN_SDPA};

int api__endpoint_modules(api_endpoint ep, const attn_module **mods) {
    switch (ep) {
    case API_EP_SIMPLE: *mods = simple_mods; return 1;
    case API_EP_SELF: *mods = self_mods; return 2;
    case API_EP_CAUSAL: *mods = causal_mods; return 1;
    case API_EP_MULTIHEAD: *mods = multihead_mods; return 4;
    case API_EP_SDPA: *mods = sdpa_mods; return 1;
    default: *mods = NULL; return 0;
    }
}

/* Every module: the module, the labels, what to return and how. */
#define COMMON "module", "tokens", "return", "precision", "output_format"
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

const char *const *api__module_fields(attn_module m) {
    switch (m) {
    case ATTN_SIMPLE: return f_simple;
    case ATTN_SELF_V1: return f_v1;
    case ATTN_SELF_V2: return f_v2;
    case ATTN_CAUSAL: return f_causal;
    case ATTN_MHA_WRAPPER: case ATTN_MHA: return f_heads;
    case ATTN_GPT2: return f_gpt2;
    case ATTN_TORCH_MHA: return f_torch;
    case ATTN_SDPA: return f_sdpa;
    default: return NULL;
    }
}

int api__has_field(const char *const *fields, const char *field) {
    for (; fields && *fields; fields++)
        if (strcmp(*fields, field) == 0) return 1;
    return 0;
}
