/* openai.h - OpenAI's completions API (private to api/, prefix api__oai):
 * POST /v1/completions as the legacy Completions API defines it, so that
 * OpenAI's own clients, and applications written for them, run against a
 * model loaded here (--model NAME=FILE with its tokenizer).
 *
 *   request.c  the request's fields into an oai_rq (unknown ones are 400s,
 *              as OpenAI's own "Unrecognized request argument")
 *   run.c      the kind's steps (api__openai_kind): one generation of n rows
 *              per prompt (api/generate/), then the reply
 *   choice.c   a choice, its logprobs object, and the stream's chunks
 *   models.c   GET /v1/models
 *   chat.c     POST /v1/chat/completions' body: the messages rendered with
 *              the model folder's chat template (api/chat/), tokenized
 *   chat_reply.c  its reply: "message" or "delta" chunks, logprobs.content
 *   embed.c    POST /v1/embeddings (OpenAI's Embeddings API), a kind of its own
 *
 * Sampling is the book's generate() with Hugging Face's top-p (and top_k as
 * llama.cpp and vLLM take it): "seed" is torch.manual_seed before the first
 * prompt's loop, n choices are the rows of one batch (torch.multinomial's
 * draws over [n][V], row after row). Log-probabilities are the model's own,
 * log_softmax of the raw logits, before temperature and filters.
 */
#ifndef API_OPENAI_H
#define API_OPENAI_H

#include "api/generate/generate.h"
#include "api/model/model.h"
#include "api/pipeline.h"

#define OAI_MAX_PROMPTS 16
#define OAI_MAX_N 16

/* One prompt: its ids and its text (for echo). */
typedef struct {
    int32_t *ids;
    int T;
    char *text;                 /* NUL-terminated; the given string, or the ids' text */
    size_t text_len;
    api_gen_plan plan;
    api_gen_out out;
} oai_prompt;

typedef struct {
    const api_model *model;
    const api_tokenizer *tok;
    api_gen_opts opt;           /* max_tokens, temperature, top_p, top_k, seed, stop, logprobs */
    int n;                      /* choices per prompt */
    int echo, stream, include_usage;
    int chat;                   /* /v1/chat/completions: one prompt, the rendered messages */
    int logprobs;               /* -1: none; else the alternatives per token */
    oai_prompt prompt[OAI_MAX_PROMPTS];
    int n_prompts;
} oai_rq;

/* Reads a /v1/completions body. 0, or -1 with e filled; oai_rq_free either way. */
int api__oai_parse(const json_t *root, const api_limits *lim, oai_rq *rq, api_err *e);
void api__oai_rq_free(oai_rq *rq);
/* Reads a /v1/chat/completions body (chat.c). As api__oai_parse. */
int api__oai_chat_parse(const json_t *root, const api_limits *lim, oai_rq *rq, api_err *e);
/* request.c, for chat.c: "model" and its tokenizer (errors on field); the
 * sampling fields and "stop" (max_tokens, temperature, top_p, top_k, seed,
 * min_p and the penalties, logit_bias at its neutral value), after rq->logprobs;
 * the <|endoftext|> id of the tokenizer, or -1. */
int api__oai_read_model(const json_t *root, const api_limits *lim, const char *field, oai_rq *rq,
                        api_err *e);
int api__oai_read_options(const json_t *root, const api_limits *lim, oai_rq *rq, api_err *e);
int api__oai_endoftext(const oai_rq *rq);

/* The state of one request while it runs. */
typedef struct {
    oai_rq rq;
    api_job *job;
    char id[48];                /* "cmpl-" and 24 hex digits */
    long long created;          /* Unix seconds */
    int p;                      /* the prompt being written */
    size_t sent[OAI_MAX_N];     /* bytes of each choice's text sent (stream) */
    int echoed;                 /* the prompt's chunk is written (stream with echo) */
    api_buf events;             /* chunks not handed over */
    api_buf json;               /* "choices" of a whole reply */
    api_buf usage, ident;       /* "usage"; "id" as JSON */
    api_buf model_json;         /* "model" as JSON */
    char created_text[24];
    api_item items[8];
} oai_state;

/* choice.c: a whole reply's "choices" array; the stream's chunks (a new
 * prompt, a written token as api_gen_in.on_token, the last of each choice;
 * the echo of the prompt comes first); "usage". */
void api__oai_choices(oai_state *s, api_buf *j);
void api__oai_prompt_begin(oai_state *s);
int api__oai_on_token(void *ctx, const api_gen_out *o, int b, int k);
int api__oai_chunk_finish(oai_state *s);
void api__oai_usage(const oai_state *s, api_buf *j);
/* The chunks written so far to the client (api_limits.events): 0, or 1
 * when it has gone. */
int api__oai_flush(oai_state *s);
/* choice.c, for chat_reply.c: a token as OpenAI names it (a JSON string),
 * a log-probability, and the text row b may send now (JSON string). */
void api__oai_token_json(api_buf *j, const api_bpe *bpe, int32_t id);
void api__oai_number(api_buf *j, float v);
void api__oai_delta(oai_state *s, int b, api_buf *j);

/* chat_reply.c: the same for /v1/chat/completions: "choices" with each
 * "message"; the stream's first chunks (role "assistant"), a token's, the
 * last of each choice. The begin and finish return 1 when the client has
 * gone. */
void api__oai_chat_choices(oai_state *s, api_buf *j);
int api__oai_chat_begin(oai_state *s);
int api__oai_chat_on_token(void *ctx, const api_gen_out *o, int b, int k);
int api__oai_chat_finish(oai_state *s);

#endif
