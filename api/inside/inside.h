/* inside.h - the look inside a whole model's run, on POST /model (private
 * to api/inside/, prefix api__inside_): TransformerLens's hook names in
 * "return" (the reply's "cache"), "ablate", "patch" (activation patching)
 * and "logit_lens", over core's attn_lm_run, attn_lm_run_many and
 * attn_lm_logit_lens (core/lm.h, "Inside the model"), for any architecture.
 *
 *   parse.c  the fields into an inside_rq
 *   plan.c   what the request's own run captures, its sizes and work
 *   run.c    the captures and ablations of that run; the logit lens
 *   patch.c  the patching sweep: the corrupted run, then one run per layer
 *            and head (or position) from that layer on
 *   items.c  the reply's "cache", "patch" and "logit_lens" groups
 *   analysis.c  "analysis": core's analyses of the run, its group
 *   neuron.c "neuron_view": q, k, q*k, scores, weights (BertViz's neuron view)
 *
 * The model kind (api/model/run.c) calls these at its plan, compute,
 * contents and release; nothing here calls back into it.
 */
#ifndef API_INSIDE_H
#define API_INSIDE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/reply/reply.h"
#include "api/request/request.h"
#include "core/lm.h"

/* The sites "patch" takes: XX(ID, name, hook, per_head). A per-head site
 * patches one head's hook_z at every position; the others one position of
 * a [B][T][C] activation, every batch row. */
#define INSIDE_SITE_MAP(XX)                                                                        \
    XX(ATTN_HEAD, "attn_head", ATTN_HOOK_Z, 1)                                                     \
    XX(RESID_PRE, "resid_pre", ATTN_HOOK_RESID_PRE, 0)                                             \
    XX(ATTN_OUT, "attn_out", ATTN_HOOK_ATTN_OUT, 0)                                                \
    XX(MLP_OUT, "mlp_out", ATTN_HOOK_MLP_OUT, 0)                                                   \
    XX(RESID_MID, "resid_mid", ATTN_HOOK_RESID_MID, 0)                                             \
    XX(RESID_POST, "resid_post", ATTN_HOOK_RESID_POST, 0)

typedef enum {
#define INSIDE_SITE_ID(id, name, hook, per_head) INSIDE_SITE_##id,
    INSIDE_SITE_MAP(INSIDE_SITE_ID)
#undef INSIDE_SITE_ID
    INSIDE_SITE_COUNT
} inside_site;

typedef struct { const char *name; attn_hook hook; int per_head; } inside_site_info;

/* The row of s (s in range). */
const inside_site_info *api__inside_site(inside_site s);

/* One activation: hook of block `layer` (0 for ln_final). */
typedef struct {
    int layer;
    attn_hook hook;
} inside_hook;

/* What the request asks to see inside (parse). */
typedef struct {
    inside_hook *hooks;        /* "return"'s hook names, forward order, each once */
    int n_hooks, cap_hooks;
    attn_lm_ablate *ablate;    /* "ablate" (n_ablate), by layer (same-layer order kept) */
    int n_ablate;
    int patch;                 /* "patch" was given */
    int32_t *corrupted;        /* [B][T] its corrupted_idx (or corrupted_text's ids) */
    inside_site site;
    int32_t diff[2];           /* logit_diff: logit[diff[0]] - logit[diff[1]] */
    int lens_k;                /* logit_lens.k; 0: no lens */
    int neuron, nv_layer, nv_head, nv_query, nv_batch; /* "neuron_view" was given: where */
    unsigned analyses;         /* "analysis": bits 1u << attn_analysis */
} inside_rq;

/* The plan's sizes (floats) and work (multiply-adds) on top of the run's. */
typedef struct {
    size_t need;               /* floats held at once, reply values' text excluded */
    size_t reply_values;       /* values the reply gains */
    double ops;
    const char *ops_field;     /* "patch" or "logit_lens" when they weigh most; else NULL */
} inside_sizes;

/* What the request's run and the sweeps produce (plan, compute, contents). */
typedef struct {
    attn_lm_capture *caps;   /* the request's run keeps these, each (layer, hook) once */
    size_t *cap_count;         /* [n_caps] floats of each */
    int n_caps;
    float *corr_resid;         /* patch: [n_layer][B][T][C] the corrupted run's hook_resid_pre */
    float *result;             /* patch: [B][n_layer][H or T] */
    float *clean, *corrupted;  /* patch: [B] the logit differences of the two runs */
    int32_t *lens_ids;         /* logit lens: [n_layer + 1][B][T][k] */
    float *lens_probs;         /*   and their probabilities */
    char (*names)[48];         /* the cache's names, [n_hooks] */
    api_item *cache_items;     /* [n_hooks] */
    api_item patch_items[3], lens_items[3];
    float *analysis[ATTN_ANALYSIS_COUNT];   /* the analyses asked ([B][L][H] or [B][L][T][T]) */
    api_item analysis_items[ATTN_ANALYSIS_COUNT];
    api_buf lens_tokens;       /* JSON text of the lens's tokens */
    float *nv;                 /* neuron view: q [D], k and q*k [T][D], dot, scores, weights [T] */
    api_item nv_items[14];
    api_buf nv_json;           /* its JSON values (layer, head, ...), NUL-separated */
} inside_out;

/* ==== parse.c ============================================================= */
/* What the fields are read against, and what they ask (in: the hooks of
 * "return" come in already, the rest is added). */
typedef struct {
    attn_lm_config cfg;        /* the model's */
    int batched, B, T, training; /* the request's ids ([T] or [B][T]) and mode */
    const api_tokenizer *tok;  /* for texts; may be NULL */
    const uint8_t *mask;       /* [B][T] the padding (1 a token), or NULL */
    unsigned text_flags;       /* api_bpe_encode_ex's, as the request's text was read */
    inside_rq in;
} inside_ctx;

/* "ablate", "patch" and "logit_lens" of root into ctx->in after the rest, the hooks in
 * forward order. 0, or -1 with e (ctx->in holds what was read: api__inside_rq_free). */
int api__inside_parse(const json_t *root, const api_limits *lim, inside_ctx *ctx, api_err *e);

/* A name of "return" (index at) that may be a hook ("blocks.3.attn.hook_z",
 * "blocks.*.hook_resid_pre", "ln_final.hook_normalized") of p's model: 1 when it was
 * one (kept in in), 0 when not hook-like (the caller tries its outputs), -1 with e
 * filled (a hook-like name not of this model's, a layer out of range). */
int api__inside_return_name(inside_rq *in, const attn_lm_plan *p, const char *name, int at,
                            api_err *e);
/* Puts the hooks in forward order, each once. 0, or -1 (memory). */
int api__inside_hooks_sort(inside_rq *in, api_err *e);
void api__inside_rq_free(inside_rq *in);

/* ==== plan.c ======================================================= */
/* The captures of the request's run (io->caps, zeroed first; dst not yet set), every
 * size; width: the pool's threads. 0, or -1 with e (memory, a lens without blocks). */
int api__inside_plan(const inside_rq *in, const attn_lm_plan *p, int width, inside_out *io,
                     inside_sizes *out, api_err *e);
/* How a patching sweep is cut (patch.c runs it, plan sizes it): X items per layer
 * (heads or positions); G of them share a run of G * B rows, each row block with its own
 * item patched (busy cores); K runs held at once (inputs, sources, logits: run_floats). */
typedef struct {
    int X, G, per_layer, n_runs, K;
    attn_lm_plan gp;         /* a run's plan: batch G * B */
    size_t run_floats;
} inside_sweep;

/* The cut of rq's sweep on plan p for a pool of width threads. 0, or -1
 * with e filled (a batch of G * B beyond core's sizes). */
int api__inside_sweep(const inside_rq *rq, const attn_lm_plan *p, int width, inside_sweep *s,
                      api_err *e);
/* Rows of the lens pushed through the head at once. */
int api__inside_lens_rows(const attn_lm_plan *p);
/* The capture of (layer, hook) in io, or NULL. */
float *api__inside_capture(const inside_out *io, int layer, attn_hook hook);
void api__inside_out_free(inside_out *io);

/* ==== run.c ======================================================== */
/* The request's run's inputs: its captures (allocated in a) and
 * ablations; and its outputs' analyses. in->idx and in->pool are the caller's. */
int api__inside_inputs(const inside_rq *rq, const attn_lm_plan *p, inside_out *io, api_arrays *a,
                       attn_lm_inputs *in, attn_lm_outputs *out, api_err *e);
/* After the request's run: the patching sweep and the logit lens, as asked.
 * logits: that run's, [B][T][V] or [B][V] (last_only). */
int api__inside_after(const inside_rq *rq, const attn_lm_plan *p, const void *weights,
                      const float *logits, int last_only, attn_pool *pool, inside_out *io,
                      api_arrays *a, api_err *e);

/* ==== patch.c: the sweep of rq->patch (api__inside_after calls it) ==== */
int api__inside_patch(const inside_rq *rq, const attn_lm_plan *p, const void *weights,
                      const float *logits, int last_only, attn_pool *pool, inside_out *io,
                      api_arrays *a, api_err *e);

/* ==== analysis.c =================================================== */
/* "analysis" of root into ctx->in.analyses; its sizes, work and field into
 * out; its arrays (in a) into io and out's; its reply group. */
int api__inside_analysis_parse(const json_t *root, inside_ctx *ctx, api_err *e);
int api__inside_analysis_plan(const inside_rq *in, const attn_lm_plan *p, int width,
                              inside_sizes *out, api_err *e);
int api__inside_analysis_outputs(const inside_rq *in, const attn_lm_plan *p, inside_out *io,
                                 api_arrays *a, attn_lm_outputs *out, api_err *e);
void api__inside_analysis_group(const inside_rq *in, const attn_lm_plan *p, int batched,
                                inside_out *io, api_item *g);

/* ==== neuron.c ===================================================== */
/* "neuron_view" into ctx->in; the hooks it reads (q, k: hook_rot_q/k where the
 * model has them; scores, pattern); after the run its arrays; its item. */
int api__inside_neuron_parse(const json_t *root, inside_ctx *ctx, api_err *e);
void api__inside_neuron_hooks(const attn_lm_plan *p, attn_hook hooks[4]);
int api__inside_neuron_run(const inside_rq *rq, const attn_lm_plan *p, const uint8_t *mask,
                           inside_out *io, api_arrays *a, api_err *e);
int api__inside_neuron_item(const inside_rq *rq, const attn_lm_plan *p, inside_out *io, api_item *g,
                            api_err *e);

/* ==== items.c ====================================================== */
/* The "cache", "patch", "logit_lens", "analysis" and "neuron_view" items (as asked)
 * into items (room for 5); tok (may be NULL) names the lens's tokens; batched: the
 * request's ids were [B][T] (else no batch axis). The count, or -1 with e filled. */
int api__inside_items(const inside_rq *rq, const attn_lm_plan *p, int batched,
                      const api_bpe *tok, inside_out *io, api_item *items, api_err *e);

#endif
