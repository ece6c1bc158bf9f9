/* test_api_chaos.c - every allocation of a request fails in turn.
 *
 * Like jansson's test_chaos: for each request, count the allocations one
 * api_handle call makes, then run it again once per allocation with that
 * one failing. The allocations are those of api/ and core/ (this program is
 * linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc, which routes
 * the calls of the static libraries through tests/support/fail_alloc.c), jansson's
 * included (api/ gives jansson an allocator of its own). Each call must still give a well-formed
 * reply: an error with its JSON body (503 out_of_memory), or, when even the
 * error body cannot be had, status 503 and no body, which the server answers
 * with its static out-of-memory reply. Never a 200, never a crash; under
 * `make asan` never a leak either.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "tests/support/check_main.h"
#include "tests/support/fail_alloc.h"
#include "tests/support/reply_check.h"


typedef struct {
    api_endpoint ep;
    const char *body;
} request;

#define X6 "[[0.43,0.15,0.89],[0.55,0.87,0.66],[0.57,0.85,0.64],[0.22,0.58,0.33],[0.77,0.25,0.10],[0.05,0.80,0.55]]"
#define EVERY "\"return\":[\"context\",\"attn_weights\",\"attn_scores\",\"masked_scores\",\"mask\"," \
              "\"dropout_mask\",\"queries\",\"keys\",\"values\",\"context_heads\",\"params\",\"tokens\",\"timing\"]"

static const request requests[] = {
    {API_EP_SIMPLE, "{\"inputs\":" X6 ",\"tokens\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]," EVERY "}"},
    {API_EP_SELF, "{\"module\":\"SelfAttention_v1\",\"d_out\":2,\"init\":{\"seed\":123},\"inputs\":" X6 "}"},
    {API_EP_CAUSAL, "{\"d_out\":2,\"dropout\":0.5,\"training\":true,\"init\":{\"seed\":789},"
                    "\"key_padding_mask\":[false,false,false,false,true,true],\"inputs\":" X6 "," EVERY "}"},
    {API_EP_MULTIHEAD, "{\"d_out\":2,\"num_heads\":2,\"init\":{\"seed\":123},\"inputs\":[" X6 "," X6 "],"
                       "\"attn_mask\":[[0,1,1,1,1,1],[0,0,1,1,1,1],[0,0,0,1,1,1],[0,0,0,0,1,1],"
                       "[0,0,0,0,0,1],[0,0,0,0,0,0]],\"output_format\":\"flat\"," EVERY "}"},
    {API_EP_MULTIHEAD, "{\"module\":\"torch.nn.MultiheadAttention\",\"embed_dim\":2,\"num_heads\":1,"
                       "\"state_dict\":{\"in_proj_weight\":[[1,0],[0,1],[1,1],[0,1],[1,0],[1,1]],"
                       "\"in_proj_bias\":[0,0,0,0,0,0],\"out_proj.weight\":[[1,0],[0,1]],"
                       "\"out_proj.bias\":[0,0]},\"inputs\":[[1,2],[3,4],[5,6]],"
                       "\"attn_mask\":[[0,\"-inf\",\"-inf\"],[0,0,\"-inf\"],[0,0,0]]}"},
    {API_EP_SDPA, "{\"query\":[[[1,0],[0,1]],[[1,1],[0,1]]],\"key\":[[[1,0],[0,1],[1,1]]],"
                  "\"value\":[[[1,2],[3,4],[5,6]]],\"causal\":true," EVERY "}"},
    /* binary tensors in, base64 (float16) and safetensors out */
    {API_EP_MULTIHEAD, "{\"d_out\":2,\"num_heads\":2,\"init\":{\"seed\":123},\"inputs\":{\"shape\":[2,3],"
                       "\"base64\":\"9ijcPpqZGT4K12M/zcwMP1K4Xj/D9Sg/\"},\"output_format\":\"base64\","
                       "\"dtype\":\"float16\"," EVERY "}"},
    {API_EP_SELF, "{\"module\":\"SelfAttention_v1\",\"d_out\":1,\"inputs\":" X6 ",\"tokens\":[\"a\",\"b\","
                  "\"c\",\"d\",\"e\",\"f\"],\"state_dict\":{\"W_query\":{\"shape\":[3,1],\"dtype\":\"float16\","
                  "\"base64\":\"ADwAQABC\"},\"W_key\":[[1],[2],[3]],\"W_value\":[[1],[2],[3]]},"
                  "\"output_format\":\"safetensors\"," EVERY "}"},
    /* selection, averaging and top-k (api/maps.c, api/topk.c); images */
    {API_EP_MULTIHEAD, "{\"d_out\":4,\"num_heads\":2,\"init\":{\"seed\":123},\"inputs\":" X6 ","
                       "\"heads\":[1,0],\"query_rows\":[1,5],\"top_k\":3,\"average_attn_weights\":true,"
                       "\"return\":[\"attn_weights\",\"attn_scores\",\"mask\"]}"},
    {API_EP_MULTIHEAD, "{\"d_out\":4,\"num_heads\":2,\"init\":{\"seed\":123},\"inputs\":" X6 ","
                       "\"top_k\":2,\"output_format\":\"safetensors\"}"},
    {API_EP_MULTIHEAD, "{\"d_out\":4,\"num_heads\":2,\"init\":{\"seed\":123},\"inputs\":" X6 ","
                       "\"heads\":[1],\"output_format\":\"svg\",\"tokens\":[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\"]}"},
    {API_EP_MULTIHEAD, "{\"d_out\":4,\"num_heads\":2,\"init\":{\"seed\":123},\"inputs\":" X6 ","
                       "\"query_rows\":[2,6],\"output_format\":\"png\",\"color_scale\":\"row\"}"},
    {API_EP_SELF, "{\"d_out\":2,\"init\":{\"seed\":1},\"inputs\":[[1,2],[3]]}"},   /* a 400 */
    {API_EP_SELF, "{\"d_out\":2,"},                                                 /* bad JSON */
    {API_EP_MODEL_GPT2, "{\"vocab_size\":7,\"block_size\":4,\"n_layer\":2,\"n_head\":2,\"n_embd\":4,"
                        "\"init\":{\"seed\":1},\"training\":true,\"idx\":[[1,2,3],[4,5,6]],\"return\":"
                        "[\"idx\",\"logits\",\"next_token\",\"attn_weights\",\"hidden_states\",\"timing\"]}"},
    {API_EP_MODEL_GPT2, "{\"vocab_size\":2,\"block_size\":2,\"n_layer\":0,\"n_head\":1,\"n_embd\":1,"
                        "\"state_dict\":{\"wte.weight\":[[1],[2]],\"wpe.weight\":[[0],[1]],"
                        "\"ln_f.weight\":[1],\"ln_f.bias\":[0]},\"idx\":[1]}"},
    {API_EP_MODEL_GPT2, "{\"vocab_size\":7,\"block_size\":4,\"n_layer\":2,\"n_head\":2,\"n_embd\":4,"
                        "\"init\":{\"seed\":1},\"idx\":[[1,2,3],[4,5,6]],\"heads\":[1],\"query_rows\":[1,3],"
                        "\"top_k\":2,\"output_format\":\"safetensors\",\"return\":"
                        "[\"idx\",\"logits\",\"next_token\",\"attn_weights\",\"hidden_states\",\"timing\"]}"},
    {API_EP_MODEL_GPT2, "{\"vocab_size\":7,\"block_size\":4,\"n_layer\":2,\"n_head\":2,\"n_embd\":4,"
                        "\"init\":{\"seed\":1},\"idx\":[1,2,3],\"heads\":[0],\"output_format\":\"base64\","
                        "\"return\":[\"attn_weights\"]}"},
    /* generation (api/generate/): sampled past block_size (16 tokens, the default), alternatives,
     * attention rows, the outputs over the final text; then as events. (Not "max_new_tokens":
     * jansson 2.14 writes out of bounds when an allocation fails while it reads a key of 14
     * bytes in a nested object, {"a":{"abcdefghijklmn":1}}, whatever the endpoint.) */
    {API_EP_MODEL_GPT2, "{\"vocab_size\":7,\"block_size\":4,\"n_layer\":2,\"n_head\":2,\"n_embd\":4,"
                        "\"init\":{\"seed\":1},\"idx\":[1,2],\"heads\":[1],\"generate\":{"
                        "\"temperature\":0.9,\"top_k\":3,\"top_p\":0.9,\"seed\":5,\"logprobs\":2,"
                        "\"attention\":true},\"return\":[\"idx\",\"attn_weights\",\"timing\"]}"},
    {API_EP_MODEL_GPT2, "{\"vocab_size\":7,\"block_size\":8,\"n_layer\":1,\"n_head\":1,\"n_embd\":2,"
                        "\"init\":{\"seed\":1},\"idx\":[1],\"output_format\":\"events\","
                        "\"generate\":{\"logprobs\":1,\"attention\":true,\"stop\":null}}"},
    /* inside the model: hooks, an ablation, a patching sweep, the lens (api/model/inside*.c);
     * no string of 14 or 30 bytes (jansson 2.14, see test_api_bpe_chaos.c) */
    {API_EP_MODEL_GPT2, "{\"vocab_size\":7,\"block_size\":4,\"n_layer\":2,\"n_head\":2,\"n_embd\":4,"
                        "\"init\":{\"seed\":1},\"idx\":[[1,2,3],[4,5,6]],\"return\":[\"blocks.*.attn.hook_z\","
                        "\"blocks.1.attn.hook_pattern\",\"ln_final.hook_normalized\"],\"ablate\":[{\"layer\":1,"
                        "\"head\":0,\"method\":\"mean\"}],\"patch\":{\"corrupted_idx\":[[1,2,4],[4,5,1]],"
                        "\"site\":\"attn_out\",\"logit_diff\":[2,3]},\"logit_lens\":{\"k\":2},"
                        "\"output_format\":\"safetensors\"}"},
    /* the analyses of a run (api/inside/analysis.c, core/lm/analysis.c, importance.c) */
    {API_EP_MODEL, "{\"vocab_size\":7,\"block_size\":4,\"n_layer\":2,\"n_head\":2,\"n_embd\":4,"
                   "\"init\":{\"seed\":1},\"idx\":[[1,2,1],[4,5,6]],\"ablate\":[{\"layer\":0,\"head\":1}],"
                   "\"analysis\":[\"entropy\",\"sink\",\"duplicate_token\",\"induction\",\"rollout\","
                   "\"importance\"],\"return\":[\"next_token\"]}"},
};
#define N_REQUESTS (int)(sizeof requests / sizeof requests[0])

/* As the server runs it: safetensors replies in parts (zero_copy). */
static int run(const request *rq, api_reply *reply) {
    api_limits lim = {.max_elements = 1 << 20, .zero_copy = 1};
    return api_handle(rq->ep, rq->body, strlen(rq->body), &lim, reply);
}

START_TEST(each_allocation_fails) {
    const request *rq = &requests[_i];
    api_reply reply;
    fail_alloc_count();
    int want = run(rq, &reply);
    long total = fail_alloc_stop();
    api_reply_free(&reply);
    ck_assert_msg(total > 0, "request %d made no allocation through the wrappers", _i);

    for (long k = 0; k < total; k++) {
        fail_alloc_at(k);
        int status = run(rq, &reply);
        fail_alloc_stop();
        ck_assert_msg(fail_alloc_reached(), "request %d: allocation %ld of %ld was never made", _i, k, total);
        if (reply.body.data == NULL) {
            ck_assert_msg(status == 503, "request %d, allocation %ld failed: status %d and no body",
                          _i, k, status);
        } else {
            char why[256];
            ck_assert_msg(reply_check(&reply, why, sizeof why) == 0, "request %d, allocation %ld: %s",
                          _i, k, why);
            /* A failed allocation is never a success, and turns an error
             * into out_of_memory or leaves it as it was. */
            ck_assert_msg(status != 200, "request %d: 200 although allocation %ld failed", _i, k);
            ck_assert_msg(status == 503 || status == want, "request %d, allocation %ld: status %d: %s",
                          _i, k, status, reply.body.data);
        }
        api_reply_free(&reply);
    }
    fprintf(stderr, "chaos: request %d (status %d) survived each of its %ld allocations failing\n",
            _i, want, total);
}
END_TEST

static Suite *chaos_suite(void) {
    json_object_seed(1);
    Suite *s = suite_create("api_chaos");
    TCase *tc = tcase_with(s, "allocations", 120, NULL);
    tcase_add_loop_test(tc, each_allocation_fails, 0, N_REQUESTS);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {chaos_suite}};
