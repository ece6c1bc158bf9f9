/* loop.c - the generation loop: the book's generate() with a key/value
 * cache.
 *
 * Each step needs the logits of the text's last position. While the text
 * fits the window (context_size) they come from one decode step of the
 * newest token against the cache; the first step prefills the prompt but
 * its last token, then decodes that one, so that every written token has
 * the attention rows of the position that chose it (a decode step's
 * attn_rows). Once the text is longer than the window, the window moves
 * with every token and no cached key stays valid: each step then prefills
 * the last context_size - 1 tokens again and decodes the newest, the book's
 * recomputation of idx[:, -context_size:].
 */
#include "api/generate/loop.h"

#include <stdlib.h>
#include <string.h>

static int from_attn(api_err *e, const attn_error *ae) {
    api__from_attn(e, ae, ATTN_MODULE_COUNT);
    return -1;
}

/* The records of out, in the request's arrays. */
static int alloc_out(const api_gen_plan *p, api_gen_out *o, api_arrays *a, api_err *e) {
    size_t B = (size_t)p->B, BN = B * (size_t)p->N, top = (size_t)p->n_top;
    *o = (api_gen_out){.B = p->B, .N = p->N, .n_top = p->n_top, .rows_len = p->rows_len,
                       .Ls = p->Ls, .Hs = p->Hs};
    o->text = api__arrays_take(a, B * ((size_t)p->T0 + (size_t)p->N), sizeof *o->text);
    o->ids = api__arrays_take(a, BN, sizeof *o->ids);
    o->logprobs = api__arrays_take(a, BN, sizeof *o->logprobs);
    o->top = api__arrays_take(a, BN * top, sizeof *o->top);
    o->rows = api__arrays_take(a, BN * (size_t)p->rows_len, sizeof *o->rows);
    o->rows_t = api__arrays_take(a, BN, sizeof *o->rows_t);
    o->n = api__arrays_take(a, B, sizeof *o->n);
    o->finish = api__arrays_take(a, B, sizeof *o->finish);
    o->stop_which = api__arrays_take(a, B, sizeof *o->stop_which);
    o->bytes = api__arrays_take(a, B, sizeof *o->bytes);
    o->tok_end = api__arrays_take(a, BN, sizeof *o->tok_end);
    o->prompt_lp = api__arrays_take(a, B * (size_t)p->T0, sizeof *o->prompt_lp);
    o->prompt_top = api__arrays_take(a, B * (size_t)p->T0 * top, sizeof *o->prompt_top);
    if (a->failed) {
        o->bytes = NULL; /* nothing of it to free */
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the generation");
    }
    for (size_t b = 0; b < B; b++) {
        o->n[b] = 0;
        o->finish[b] = API_GEN_RUNNING;
        o->stop_which[b] = -1;
        o->bytes[b] = (api_buf){0};
        o->prompt_lp[b * (size_t)p->T0] = 0.0f;
    }
    memset(o->prompt_top, 0, B * (size_t)p->T0 * top * sizeof *o->prompt_top);
    return 0;
}

void api__gen_out_free(api_gen_out *out) {
    for (int b = 0; out->bytes && b < out->B; b++) api_buf_free(&out->bytes[b]);
}

/* The loop's own memory: the cache, one step's outputs, a window, the
 * sampler's scratch (freed by release). */
static int alloc_loop(gen_loop *g, api_err *e) {
    const api_gen_plan *p = g->p;
    const attn_lm_config *c = g->in->cfg;
    attn_error ae = {0};
    if (attn_lm_cache_create(c, p->B, p->cap, &g->cache, &ae) != ATTN_OK) return from_attn(e, &ae);
    g->scratch_size = attn_sample_scratch_size(&g->in->opt->sampler, p->V);
    g->logits = malloc((size_t)p->B * p->V * sizeof *g->logits);
    g->attn_rows = malloc((size_t)c->n_layer * p->B * c->n_head * p->cap * sizeof *g->attn_rows + 4);
    g->window = malloc((size_t)p->B * p->ctx * sizeof *g->window);
    g->chosen = malloc((size_t)p->B * sizeof *g->chosen);
    g->scratch = g->scratch_size ? malloc(g->scratch_size) : NULL;
    if (!g->logits || !g->attn_rows || !g->window || !g->chosen || (g->scratch_size && !g->scratch))
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the generation");
    if (attn_penalties_on(&g->in->opt->penalties)) {
        g->penalized = malloc((size_t)p->V * sizeof *g->penalized);
        g->counts = calloc((size_t)p->V, sizeof *g->counts);
        if (!g->penalized || !g->counts)
            return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the penalties");
    }
    return 0;
}

static void release(gen_loop *g) {
    attn_lm_cache_free(g->cache);
    free(g->logits);
    free(g->attn_rows);
    free(g->window);
    free(g->chosen);
    free(g->scratch);
    free(g->penalized);
    free(g->counts);
}

/* tokens [from, to) of every row of the text, dense [B][to - from]. */
static const int32_t *cut(gen_loop *g, int from, int to) {
    size_t stride = (size_t)g->p->T0 + (size_t)g->p->N, w = (size_t)(to - from);
    if (g->p->B == 1) return g->out->text + from;
    for (int b = 0; b < g->p->B; b++)
        memcpy(g->window + b * w, g->out->text + b * stride + from, w * sizeof *g->window);
    return g->window;
}

/* The cache filled with the window's tokens but its last (positions
 * [start, n - 1) of the text); logits of every position with
 * prompt_logprobs on the first prefill. */
static int prefill(gen_loop *g, int start, int n, api_err *e) {
    attn_lm_cache_reset(g->cache, -1);
    if (n - 1 - start < 1) return 0;
    attn_lm_plan plan;
    attn_error ae = {0};
    if (attn_lm_plan_make(g->in->cfg, g->p->B, n - 1 - start, 0, &plan, &ae) != ATTN_OK)
        return from_attn(e, &ae);
    int scores = g->in->opt->prompt_logprobs && start == 0 && n == g->p->T0;
    float *all = scores ? malloc(plan.n_logits * sizeof *all) : NULL;
    if (scores && all == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the logits");
    attn_lm_outputs out = {.logits = all};
    int rc = attn_lm_prefill(&plan, g->in->params, cut(g, start, n - 1), g->cache, g->in->pool,
                               &out, &ae);
    if (rc == ATTN_OK && scores) api__gen_prompt_scores(g, all);
    free(all);
    return rc == ATTN_OK ? 0 : from_attn(e, &ae);
}

/* The logits of the text's last position (and its attention rows). */
static int feed(gen_loop *g, api_err *e) {
    int n = g->len, ctx = g->p->ctx;
    double t0 = api__now_ms();
    const api_limits *lim = g->in->lim;
    int batched = lim && lim->decode && !g->p->rows_len; /* rows: steps alone */
    if (!(n <= ctx && attn_lm_cache_length(g->cache, 0) == n - 1)) {
        if (lim && lim->away) lim->away(lim->gen_ctx); /* outside the batch */
        if (prefill(g, n > ctx ? n - ctx : 0, n, e)) return -1;
        g->out->ms_prefill += api__now_ms() - t0;
    }
    attn_lm_step_outputs so = {.logits = g->logits, .attn_rows = g->attn_rows};
    attn_error ae = {0};
    size_t stride = (size_t)g->p->T0 + (size_t)g->p->N;
    for (int b = 0; b < g->p->B; b++) g->chosen[b] = g->out->text[b * stride + (size_t)(n - 1)];
    if (!batched && lim && lim->away) lim->away(lim->gen_ctx);
    int rc = batched ? lim->decode(lim->gen_ctx, g->cache, g->in->params, g->chosen, g->logits,
                                   g->p->V, g->in->pool, &ae)
                     : attn_lm_decode(g->cache, g->in->params, g->chosen, g->in->pool, &so, &ae);
    if (rc != ATTN_OK) return from_attn(e, &ae);
    g->t = attn_lm_cache_length(g->cache, 0);
    return 0;
}

/* Every unfinished row ends with `why`. */
static void finish_all(gen_loop *g, api_gen_finish why) {
    for (int b = 0; b < g->p->B; b++)
        if (g->out->finish[b] == API_GEN_RUNNING) g->out->finish[b] = why;
}

/* The steps: feed, choose, ask the caller (its turn, the client, the
 * clock), append the choices. 0 or -1. */
static int steps(gen_loop *g, api_err *e) {
    const api_limits *lim = g->in->lim;
    size_t stride = (size_t)g->p->T0 + (size_t)g->p->N;
    for (;;) {
        double t0 = api__now_ms();
        int before = 0, after = 0, rc;
        for (int b = 0; b < g->p->B; b++) before += g->out->n[b];
        if (feed(g, e) || (rc = api__gen_step(g, e)) < 0) return -1;
        g->out->steps++;
        double ms = api__now_ms() - t0;
        g->out->ms_steps += ms;
        for (int b = 0; b < g->p->B; b++) after += g->out->n[b];
        if (rc == 0 && lim && lim->token) rc = lim->token(lim->gen_ctx, after - before, ms);
        if (rc == API_TOKEN_GONE) g->out->gone = 1; /* on_token's 1 too */
        if (rc == API_TOKEN_TIMEOUT) finish_all(g, API_GEN_TIMEOUT);
        if (g->out->gone || api__gen_all_done(g)) return 0;
        for (int b = 0; b < g->p->B; b++) g->out->text[b * stride + (size_t)g->len] = g->chosen[b];
        g->len++;
    }
}

int api__gen_run(const api_gen_in *in, api_gen_out *out, api_arrays *a, api_err *e) {
    const api_gen_plan *p = in->plan;
    gen_loop g = {.in = in, .p = p, .out = out, .len = p->T0};
    if (alloc_out(p, out, a, e)) return -1;
    size_t stride = (size_t)p->T0 + (size_t)p->N;
    for (int b = 0; b < p->B; b++)
        memcpy(out->text + b * stride, in->prompt + (size_t)b * p->T0, (size_t)p->T0 * sizeof *out->text);
    int rc = alloc_loop(&g, e);
    if (rc == 0 && p->N == 0) { /* nothing to write: the prompt's scores at most */
        finish_all(&g, API_GEN_LENGTH);
        double t0 = api__now_ms();
        rc = in->opt->prompt_logprobs ? prefill(&g, 0, p->T0, e) : 0;
        out->ms_prefill = api__now_ms() - t0;
    } else if (rc == 0) {
        rc = steps(&g, e);
    }
    release(&g);
    return rc;
}
