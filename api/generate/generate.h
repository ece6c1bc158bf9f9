/* generate.h - a model writes text, token by token (private to api/, prefix
 * api__gen): the options of a request's "generate" object, the loop that
 * writes tokens with core's key/value cache and sampler, and the texts of
 * the tokens it wrote.
 *
 *   options.c  "generate": {...} (and the limits on it) into api_gen_opts
 *   plan.c     the sizes of a generation: its records, its cache, its work
 *   loop.c     the loop: prefill, decode, sample, stop, crop (the book's
 *              idx[:, -context_size:])
 *   step.c     one step's choices: sampling every row, what a row keeps,
 *              stop strings and the end-of-text id
 *   text.c     token bytes as text: UTF-8 repaired as a browser shows it,
 *              stop strings, the part of a text that is safe to send
 *   event.c    a written token as JSON (the native events and the reply's
 *              steps, one writer for both)
 *
 * The loop is the book's generate() (Raschka, ch. 5) with a cache: each
 * step chooses one token per row from the last position's logits (greedy,
 * or top-k, temperature, top-p and torch.multinomial's exponential draws on
 * the generator, attn_sample), then feeds it; once the text is longer than
 * the window (context_size) every step recomputes the last context_size
 * positions, as the book's loop does.
 */
#ifndef API_GENERATE_H
#define API_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/reply/reply.h"
#include "core/lm.h"

/* Most alternatives per token ("logprobs": N; OpenAI takes up to 5). */
#define API_GEN_MAX_TOP 20
/* Most stop strings, and the longest (OpenAI: up to 4). */
#define API_GEN_MAX_STOP 4
#define API_GEN_MAX_STOP_BYTES 256
/* Most end-of-text ids besides eos_id. */
#define API_GEN_MAX_EOS 8

/* How a row of a generation ended. */
typedef enum {
    API_GEN_RUNNING = 0,
    API_GEN_LENGTH,   /* max_new_tokens written */
    API_GEN_STOP,     /* a stop string, or the end-of-text id */
    API_GEN_TIMEOUT,  /* the request ran out of time (api_limits.token) */
} api_gen_finish;

/* "length", "stop", "timeout"; NULL while running. */
const char *api__gen_finish_name(api_gen_finish f);

/* What a "generate" object asks. */
typedef struct {
    int max_new_tokens;       /* tokens to write at most (>= 0) */
    attn_sampler sampler;     /* temperature, top_k, top_p, min_p */
    attn_penalties penalties; /* repetition, frequency, presence (before the sampler) */
    int has_seed;             /* "seed": torch.manual_seed(seed) right before the loop */
    uint64_t seed;
    int context_size;         /* the book's crop: idx[:, -context_size:] (0: block_size) */
    int logprobs;             /* alternatives per written token, 0..API_GEN_MAX_TOP */
    int eos_id;               /* end-of-text id that stops a row unwritten (-1: none) */
    int n_eos_more;           /* more ids that stop a row as eos_id does (a chat model's
                                 generation_config.json: Gemma 3's <end_of_turn>) */
    int eos_more[API_GEN_MAX_EOS];
    int n_stop;               /* stop strings (copied: the request tree is freed first) */
    char *stop[API_GEN_MAX_STOP];
    size_t stop_len[API_GEN_MAX_STOP];
    int attention;            /* each token's attention rows, for the selected layers and heads */
    int prompt_logprobs;      /* the prompt's own tokens' log-probabilities (OpenAI's echo) */
} api_gen_opts;

/* Defaults: 16 tokens, greedy, no seed, no stop. */
void api__gen_opts_init(api_gen_opts *o);
void api__gen_opts_free(api_gen_opts *o);

/* Reads the object g ("generate": {max_new_tokens, temperature, top_k,
 * top_p, seed, stop, eos_token_id, context_size, logprobs, attention}) into
 * o. Field names in errors are "generate.<name>". max_new (0: no cap) is the
 * server's --max-new-tokens: more is a 413 naming generate.max_new_tokens.
 * Stop strings need a tokenizer (has_tokenizer). 0, or -1 with e filled. */
int api__gen_parse(const json_t *g, int max_new, int has_tokenizer, api_gen_opts *o, api_err *e);

/* obj's min_p and penalties (absent or null: off) into o, for every
 * endpoint; errors name prefix ("generate." or "") + the field: a 400 out of
 * range (min_p [0, 1], repetition_penalty > 0, the others [-2, 2]). */
int api__gen_read_penalties(const json_t *obj, const char *prefix, api_gen_opts *o, api_err *e);

/* One stop string into o (n bytes of s, 1..API_GEN_MAX_STOP_BYTES), for the
 * readers of both endpoints; field names it in errors. */
int api__gen_add_stop(api_gen_opts *o, const char *s, size_t n, const char *field, api_err *e);
/* A --max-new-tokens cap on a requested count: the 413 naming field. */
int api__gen_check_cap(int n, int max_new, const char *field, api_err *e);

/* ==== Sizes ================================================================ */

/* Everything a generation allocates, from its options and shapes. */
typedef struct {
    int B, T0, N;             /* rows, prompt length, tokens each may write */
    int V, n_top;
    int ctx;                  /* the window: context_size, or block_size */
    int cap;                  /* the cache's positions: min(ctx, T0 + N - 1), at least 1 */
    int Ls, Hs;               /* layers and heads of the attention rows kept (0: none) */
    int rows_len;             /* floats of one token's rows at most: Ls * Hs * ctx */
    size_t cache_bytes;       /* attn_lm_cache_bytes */
    size_t floats;            /* every float (and id) the loop holds, cache included */
    double ops;               /* multiply-adds: the prefill, each step, the crops */
} api_gen_plan;

/* Sizes a generation of max_new_tokens after a prompt of T0 tokens in B
 * rows, keeping Ls x Hs attention rows per token when o->attention.
 * Errors name field: a prompt over the window, an overflow. */
int api__gen_plan(const attn_lm_config *cfg, int B, int T0, const api_gen_opts *o, int Ls,
                  int Hs, api_gen_plan *p, api_err *e);

/* ==== The loop ============================================================= */

struct api_gen_out;

/* What the loop reads. */
typedef struct {
    const api_gen_plan *plan;
    const api_gen_opts *opt;
    const attn_lm_config *cfg;
    const void *params;       /* the model's buffer (attn_lm_param_get's layout) */
    attn_pool *pool;
    const int32_t *prompt;    /* [B][T0] */
    attn_rng *rng;            /* the generator the draws come from */
    const api_bpe *bpe;       /* token bytes, for texts and stop strings; may be NULL */
    const int *layers;        /* the layers of the attention rows (Ls of them) */
    const int *heads;         /* their heads (Hs of them; NULL: 0 .. Hs - 1) */
    const api_limits *lim;    /* lim->token after each step (may be NULL) */
    /* Called for each written token (row b, its index k among the row's),
     * in order; a nonzero return stops the generation: the client is gone. */
    int (*on_token)(void *ctx, const struct api_gen_out *g, int b, int k);
    void *ctx;
} api_gen_in;

/* What the loop wrote, in arrays of the request (api_arrays). Row b's
 * token k is at [b * N + k]. */
typedef struct api_gen_out {
    int B, N, n_top, rows_len, Ls, Hs;
    int32_t *text;            /* [B][T0 + N]: the prompt, then every token fed (the
                                 window is cut from it) */
    int32_t *ids;             /* [B][N] the tokens written */
    float *logprobs;          /* [B][N] their log-probabilities (log_softmax of the raw logits) */
    attn_token_logprob *top;  /* [B][N][n_top] the most likely at each step */
    float *rows;              /* [B][N][rows_len]: token k's attention, [Ls][Hs][t] */
    int *rows_t;              /* [B][N]: t, the positions it attended to */
    int *n;                   /* [B] tokens written */
    api_gen_finish *finish;   /* [B] */
    int *stop_which;          /* [B] the stop string that ended the row; -1: eos or none */
    api_buf *bytes;           /* [B] the written tokens' bytes, cut before a stop string */
    size_t *tok_end;          /* [B][N] each token's end in bytes (before the cut) */
    float *prompt_lp;         /* [B][T0] prompt_logprobs: the prompt tokens' (0 for the first) */
    attn_token_logprob *prompt_top; /* [B][T0][n_top] */
    int gone;                 /* stopped because the client went away */
    int steps;                /* steps run */
    double ms_prefill, ms_steps;
} api_gen_out;

/* Runs the generation: arrays of out in a, the cache and scratch freed
 * before it returns. 0 (out filled, every row finished), or -1 with e
 * filled (memory, core's errors). */
int api__gen_run(const api_gen_in *in, api_gen_out *out, api_arrays *a, api_err *e);
/* Frees the bytes buffers of out (the arrays are a's). */
void api__gen_out_free(api_gen_out *out);

/* ==== Texts (text.c) ======================================================= */

/* The bytes of token id ("" when the tokenizer does not have it). */
void api__gen_token_bytes(const api_bpe *bpe, int32_t id, const char **b, size_t *n);
/* Appends b[0..n) to out as valid UTF-8: each maximal invalid part
 * U+FFFD, as WHATWG's decoder (and a browser) shows it; an incomplete
 * sequence at the end too. */
void api__gen_utf8(api_buf *out, const char *b, size_t n);
/* 1 if b[0..n) is valid UTF-8 as it is. */
int api__gen_utf8_valid(const char *b, size_t n);
/* The end of the text a stream may send now: len, less a trailing part that
 * may still become a stop string, less an incomplete UTF-8 sequence. */
size_t api__gen_safe_end(const char *text, size_t len, const api_gen_opts *o);
/* The first stop string in text[from..len) (from is where the newest token
 * may have completed one): its start, *which its index; -1 when none. */
long api__gen_find_stop(const char *text, size_t len, size_t from, const api_gen_opts *o,
                        int *which);

/* ==== Events (event.c) ===================================================== */

/* Token k of row b as a JSON object: {"index", "id", "text", "bytes" (when
 * not UTF-8 alone), "logprob", "top" (with logprobs), "position",
 * "attention" ([Ls][Hs][t] with attention)}. */
void api__gen_token_json(api_buf *j, const api_gen_out *g, const api_bpe *bpe, int b, int k,
                         int T0, int precision);
/* A token's text for people into j as a JSON string (U+FFFD for a piece of
 * a character). */
void api__gen_token_text_json(api_buf *j, const api_bpe *bpe, int32_t id);

#endif
