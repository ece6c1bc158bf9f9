/* gen.h - "generate" on POST /model/gpt2 (private to api/model/, prefix
 * api__model_gen): the model writes max_new_tokens after the prompt (idx or
 * text) with api/generate/'s loop, then the request's outputs are computed
 * over the final text, as a request without "generate" computes them over
 * its idx. With output_format "events" (or Accept: text/event-stream) the
 * reply is server-sent events: "start" (the prompt), one "token" per
 * written token, then "done" with the whole reply but its steps.
 *
 *   gen.c      the request's side: parse, plan, run, the reply's item
 *   gen_io.c   the events and the "generation" object's text
 */
#ifndef API_MODEL_GEN_H
#define API_MODEL_GEN_H

#include "api/generate/generate.h"
#include "api/model/model.h"
#include "api/pipeline.h"

struct model_gen {
    api_gen_opts opt;
    api_gen_plan plan;
    api_gen_out out;
    int T0;                 /* the prompt's length */
    int T_max;              /* the final window's length at most: the forward's plan */
    int window_start;       /* where the final window (idx of the reply) starts in the text */
    int seeded;             /* 1: torch.manual_seed(seed) before the loop; 0: the generator
                               left by init (as nanoGPT's sample.py seeds once) */
    uint64_t seed;
    int streaming;          /* output_format events */
    const api_bpe *bpe;     /* the tokenizer, or NULL */
    api_job *job;           /* the request (its limits, its error event) while the loop runs */
    api_buf events;         /* events written and not handed over */
    api_buf json;           /* the "generation" item's text */
};

/* "generate" of root into rq->gen (allocated), after rq's other fields:
 * one row (idx [T] or text), eval mode, stop strings with a tokenizer.
 * Absent: rq->gen stays NULL. 0, or -1 with e filled. */
int api__model_gen_parse(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e);
void api__model_gen_free(model_rq *rq);

/* The generation's sizes: its own floats and work added to the job's, and
 * the final window's length, which the forward's plan is made for. */
int api__model_gen_plan(model_rq *rq, api_job *j, api_err *e);

/* Runs the loop on params (rng: the generator init left, or NULL), then
 * makes rq->idx the final window (rq->T its length). 0 or -1. */
int api__model_gen_run(model_rq *rq, api_job *j, const float *params, attn_rng *rng,
                       api_err *e);

/* The "generation" item (its steps in a JSON reply, in the events
 * otherwise) into it, and the events' parts of c. */
int api__model_gen_items(model_rq *rq, api_item *it, api_contents *c, api_err *e);

/* gen_io.c: the "start" event, a token's event (api_gen_in.on_token), the
 * "generation" object. */
int api__model_gen_start(struct model_gen *g, const model_rq *rq);
int api__model_gen_on_token(void *ctx, const api_gen_out *o, int b, int k);
void api__model_gen_object(struct model_gen *g, int with_steps);

#endif
