/* step.c - one step of a generation: a token chosen for every row from the
 * last position's logits (attn_sample, row after row: the draws of a
 * batch in PyTorch's order, torch.multinomial over [B][V]), and what a row
 * still writing keeps of it: the token, its log-probability and
 * alternatives, its attention rows, its bytes; the end-of-text id and the
 * stop strings end the row. */
#include "api/generate/loop.h"

#include <math.h>
#include <string.h>

int api__gen_all_done(const gen_loop *g) {
    for (int b = 0; b < g->p->B; b++)
        if (g->out->finish[b] == API_GEN_RUNNING) return 0;
    return 1;
}

/* The step's attention rows of row b, the selected layers and heads:
 * [Ls][Hs][t] from attn_rows [n_layer][B][H][t]. */
static void keep_rows(const gen_loop *g, int b, float *dst) {
    const api_gen_plan *p = g->p;
    int B = p->B, H = g->in->cfg->n_head;
    size_t t = (size_t)g->t;
    for (int i = 0; i < p->Ls; i++)
        for (int k = 0; k < p->Hs; k++) {
            int h = g->in->heads ? g->in->heads[k] : k;
            const float *src = g->attn_rows + (((size_t)g->in->layers[i] * B + b) * H + h) * t;
            memcpy(dst + ((size_t)i * p->Hs + k) * t, src, t * sizeof *dst);
        }
}

/* Row b writes token (chosen, top): its records, its bytes, and whether a
 * stop string or the length ends the row. */
static void write_token(gen_loop *g, int b, const attn_token_logprob *chosen,
                        const attn_token_logprob *top) {
    const api_gen_plan *p = g->p;
    api_gen_out *o = g->out;
    int k = o->n[b];
    size_t at = (size_t)b * p->N + (size_t)k;
    o->ids[at] = chosen->id;
    o->logprobs[at] = chosen->logprob;
    if (p->n_top) memcpy(o->top + at * p->n_top, top, (size_t)p->n_top * sizeof *top);
    if (p->rows_len) keep_rows(g, b, o->rows + at * (size_t)p->rows_len);
    o->rows_t[at] = g->t;
    const char *bytes;
    size_t n, from = o->bytes[b].len;
    api__gen_token_bytes(g->in->bpe, chosen->id, &bytes, &n);
    api__buf_put(&o->bytes[b], bytes, n);
    o->tok_end[at] = o->bytes[b].len;
    o->n[b] = k + 1;
    int which = -1;
    long cut = api__gen_find_stop(o->bytes[b].data, o->bytes[b].len, from, g->in->opt, &which);
    if (cut >= 0) {
        o->bytes[b].len = (size_t)cut;
        o->finish[b] = API_GEN_STOP;
        o->stop_which[b] = which;
    } else if (k + 1 == p->N) {
        o->finish[b] = API_GEN_LENGTH;
    }
}

static int is_eos(const api_gen_opts *o, int id) {
    int hit = id == o->eos_id;
    for (int i = 0; i < o->n_eos_more; i++) hit |= id == o->eos_more[i];
    return hit;
}

static void score(const float *x, int V, int32_t id, int n_top, float *lp, attn_token_logprob *top);

/* Row b's token from its logits after the penalties on its text so far;
 * the log-probabilities stay the model's own (of the raw logits). */
static int choose_penalized(gen_loop *g, int b, attn_token_logprob *chosen,
                            attn_token_logprob *top, attn_error *ae) {
    const api_gen_plan *p = g->p;
    const float *raw = g->logits + (size_t)b * p->V;
    const int32_t *text = g->out->text + (size_t)b * ((size_t)p->T0 + (size_t)p->N);
    memcpy(g->penalized, raw, (size_t)p->V * sizeof *raw);
    int rc = attn_penalize(&g->in->opt->penalties, g->penalized, p->V, text, g->len, p->T0,
                           g->counts, ae);
    if (rc == ATTN_OK)
        rc = attn_sample(&g->in->opt->sampler, g->penalized, p->V, g->in->rng, g->scratch,
                         g->scratch_size, chosen, NULL, 0, ae);
    if (rc == ATTN_OK) score(raw, p->V, chosen->id, p->n_top, &chosen->logprob, top);
    return rc;
}

/* Chooses row b's token; keeps it when the row still writes. 0, 1 (stop:
 * on_token said the client is gone), -1. */
static int choose(gen_loop *g, int b, attn_token_logprob *top, api_err *e) {
    const api_gen_in *in = g->in;
    const api_gen_plan *p = g->p;
    attn_token_logprob chosen;
    attn_error ae = {0};
    int rc = g->penalized ? choose_penalized(g, b, &chosen, top, &ae)
                          : attn_sample(&in->opt->sampler, g->logits + (size_t)b * p->V, p->V,
                                        in->rng, g->scratch, g->scratch_size, &chosen, top,
                                        p->n_top, &ae);
    if (rc != ATTN_OK) {
        api__from_attn(e, &ae, ATTN_MODULE_COUNT);
        return -1;
    }
    g->chosen[b] = chosen.id;
    api_gen_out *o = g->out;
    if (o->finish[b] != API_GEN_RUNNING) return 0; /* drawn as the batch's loop would, not kept */
    if (is_eos(in->opt, chosen.id)) {               /* the book's: break before appending it */
        o->finish[b] = API_GEN_STOP;
        return 0;
    }
    write_token(g, b, &chosen, top);
    if (o->bytes[b].failed) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot keep the text");
    if (in->on_token && in->on_token(in->ctx, o, b, o->n[b] - 1)) return 1;
    return 0;
}

int api__gen_step(gen_loop *g, api_err *e) {
    attn_token_logprob top[API_GEN_MAX_TOP];
    for (int b = 0; b < g->p->B; b++) {
        int rc = choose(g, b, top, e);
        if (rc) return rc;
    }
    return 0;
}

/* log_softmax(x)[id] in double, and the top alternatives (attn_sample's
 * greedy choice, which draws nothing). */
static void score(const float *x, int V, int32_t id, int n_top, float *lp, attn_token_logprob *top) {
    double m = -INFINITY, s = 0.0;
    for (int v = 0; v < V; v++) m = x[v] > m ? x[v] : m;
    for (int v = 0; v < V; v++) s += exp((double)x[v] - m);
    *lp = (float)((double)x[id] - m - log(s));
    attn_token_logprob best;
    attn_error ae;
    if (n_top && attn_sample(&ATTN_SAMPLER_GREEDY, x, V, NULL, NULL, 0, &best, top, n_top, &ae))
        memset(top, 0, (size_t)n_top * sizeof *top);
}

void api__gen_prompt_scores(gen_loop *g, const float *logits) {
    const api_gen_plan *p = g->p;
    api_gen_out *o = g->out;
    size_t stride = (size_t)p->T0 + (size_t)p->N;
    for (int b = 0; b < p->B; b++)
        for (int t = 1; t < p->T0; t++) {
            size_t at = (size_t)b * p->T0 + (size_t)t;
            const float *row = logits + ((size_t)b * (p->T0 - 1) + (size_t)(t - 1)) * p->V;
            score(row, p->V, o->text[b * stride + (size_t)t], p->n_top, &o->prompt_lp[at],
                  o->prompt_top + at * p->n_top);
        }
}
