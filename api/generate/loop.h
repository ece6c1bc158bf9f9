/* loop.h - the loop's state, shared by loop.c (feeding the model) and
 * step.c (choosing and keeping tokens); private to api/generate/. */
#ifndef API_GENERATE_LOOP_H
#define API_GENERATE_LOOP_H

#include "api/generate/generate.h"

typedef struct {
    const api_gen_in *in;
    const api_gen_plan *p;
    api_gen_out *out;
    attn_lm_cache *cache;
    float *logits;            /* [B][V] of the last position */
    float *attn_rows;         /* [n_layer][B][H][t] of the last step */
    int t;                    /* the positions the last step's query attended to */
    int len;                  /* the text's length, every row alike */
    int32_t *window;          /* [B][ctx]: a prefill's tokens, dense */
    int32_t *chosen;          /* [B] the step's choices (fed next, finished rows too) */
    void *scratch;            /* attn_sample's */
    size_t scratch_size;
    float *penalized;         /* [V] a row's logits after the penalties (NULL: none asked) */
    int32_t *counts;          /* [V] zeros, attn_penalize's */
} gen_loop;

/* One step's choices for every row, kept for the rows still writing (the
 * callbacks run for each written token). 0; 1 when on_token asked to stop
 * (the client is gone); -1 with e filled. */
int api__gen_step(gen_loop *g, api_err *e);
/* 1 when no row is still writing. */
int api__gen_all_done(const gen_loop *g);
/* The prompt's log-probabilities from the logits of its positions
 * [B][T0 - 1][V] (prompt_logprobs). */
void api__gen_prompt_scores(gen_loop *g, const float *logits);

#endif
