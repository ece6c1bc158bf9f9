/* plan.c - what a look inside costs, known before anything is
 * allocated: the activations the request's run keeps (each (layer, hook)
 * once, shared by the cache, the lens and the patching sweep), the floats
 * held at once, the reply's values and the multiply-adds of the extra runs.
 *
 * Memory (floats) on top of the request's own run:
 *   the captures                          their attn_hook_dims counts
 *   patch: the corrupted run's activations  n_layer * B*T*C (hook_resid_pre of each
 *                                           block), as much for the site's
 *          K runs' inputs, sources, logits  (api__inside_sweep)
 *          each thread's run                its work space (one run per thread)
 *          the results                      n_layer * (H or T) * B + 2B
 *   lens:  a chunk of rows' logits         R * V, and R * C for the LayerNorm
 *          the top tokens                  2 (n_layer + 1) * B*T*k
 * Work (multiply-adds): the corrupted run is one forward; the sweep's run
 * at block l runs blocks l..n_layer-1 and the head on the last position;
 * the lens is (n_layer + 1) * B*T rows through the head.
 */
#include "api/inside/inside.h"

#include <stdint.h>
#include <stdlib.h>

/* The most floats of one chunk of logits (the sweep's, the lens's): 16 MiB. */
#define CHUNK_FLOATS ((size_t)1 << 22)

/* Runs that keep every thread of the pool busy, and the most rows one run
 * takes (its work space grows with them). */
#define RUNS_PER_THREAD 2
#define GROUP_ROWS 4096

int api__inside_sweep(const inside_rq *rq, const attn_lm_plan *p, int width, inside_sweep *s,
                      api_err *e) {
    const inside_site_info *site = api__inside_site(rq->site);
    int L = p->n_layer, X = site->per_head ? p->H : p->T;
    long runs = (long)RUNS_PER_THREAD * (width < 1 ? 1 : width);
    long G = ((long)X * L + runs - 1) / runs, cap = GROUP_ROWS / ((long)p->B * p->T);
    G = G > X ? X : G;
    G = G > cap ? cap : G;
    s->X = X;
    s->G = G < 1 ? 1 : (int)G;
    s->per_layer = (X + s->G - 1) / s->G;
    s->n_runs = L * s->per_layer;
    attn_error ae = {0};
    if (attn_lm_plan_make(&p->cfg, s->G * p->B, p->T, 0, &s->gp, &ae) != ATTN_OK) {
        api__from_attn(e, &ae, ATTN_MODULE_COUNT);
        return -1;
    }
    size_t rows = (size_t)s->G * (size_t)p->B;
    size_t site_w = (size_t)(site->per_head ? p->QD : p->C); /* the patch source's */
    s->run_floats = rows * (size_t)p->T * ((size_t)p->C + site_w) + rows * (size_t)p->V;
    size_t k = CHUNK_FLOATS / s->run_floats;
    if (k < (size_t)width) k = (size_t)width;
    if (k > (size_t)s->n_runs) k = (size_t)s->n_runs;
    s->K = k < 1 ? 1 : (int)k;
    return 0;
}

int api__inside_lens_rows(const attn_lm_plan *p) {
    size_t rows = (size_t)p->B * (size_t)p->T, r = CHUNK_FLOATS / (size_t)p->V;
    if (r > rows) r = rows;
    return r < 1 ? 1 : (int)r;
}

float *api__inside_capture(const inside_out *io, int layer, attn_hook hook) {
    for (int i = 0; i < io->n_caps; i++) {
        const attn_lm_capture *c = &io->caps[i];
        if (c->hook == hook && (!attn_hook_get(hook)->per_block || c->layer == layer))
            return c->dst;
    }
    return NULL;
}

/* Adds (layer, hook) to the captures unless it is there; its count. */
static size_t want(inside_out *io, const attn_lm_plan *p, int layer, attn_hook hook) {
    size_t count = 0;
    attn_hook_dims(p, hook, NULL, &count);
    for (int i = 0; i < io->n_caps; i++) {
        const attn_lm_capture *c = &io->caps[i];
        if (c->hook == hook && (!attn_hook_get(hook)->per_block || c->layer == layer)) return 0;
    }
    io->caps[io->n_caps] = (attn_lm_capture){.layer = layer, .hook = hook};
    io->cap_count[io->n_caps++] = count;
    return count;
}

/* The work space of one run of p (attn_lm_plan's total_elements without
 * the parameters and outputs). */
static double run_space(const attn_lm_plan *p) {
    return (double)p->total_elements - (double)p->n_params - (double)p->n_logits -
           (double)p->n_hidden - (double)p->n_attn - (double)p->n_dropout;
}

typedef struct {
    double need, reply, ops;
} costs;

static int patch_costs(const inside_rq *in, const attn_lm_plan *p, int width, inside_out *io,
                       costs *c, api_err *e) {
    inside_sweep sw;
    if (api__inside_sweep(in, p, width, &sw, e)) return -1;
    attn_hook hook = api__inside_site(in->site)->hook;
    int L = p->n_layer;
    double B = p->B, BTC = B * p->T * p->C, n = (double)L * sw.X;
    double block = attn_lm_block_ops(p, B * p->T, p->T);
    for (int l = 0; l < L; l++) c->need += (double)want(io, p, l, hook);
    /* the corrupted run's resid_pre (and site) of every block, K runs'
     * buffers, a work space per thread, the results */
    double BTW = B * p->T * (api__inside_site(in->site)->per_head ? p->QD : p->C);
    c->need += L * (BTC + (hook == ATTN_HOOK_RESID_PRE ? 0 : BTW)) + (double)sw.K * sw.run_floats +
               width * run_space(&sw.gp) + n * B + 2 * B;
    c->reply += n * B + 2 * B;
    /* the corrupted run, then runs of blocks l.. and the last position's
     * head (a group's padding counted too) */
    c->ops += p->ops;
    double items = (double)sw.per_layer * sw.G;
    for (int l = 0; l < L; l++) c->ops += items * (block * (L - l) + attn_lm_head_ops(p, B));
    return 0;
}

static void lens_costs(const inside_rq *in, const attn_lm_plan *p, inside_out *io, costs *c) {
    int L = p->n_layer;
    double rows = (double)p->B * p->T, R = api__inside_lens_rows(p), k = in->lens_k;
    for (int l = 0; l < L; l++) c->need += (double)want(io, p, l, ATTN_HOOK_RESID_PRE);
    c->need += (double)want(io, p, L - 1, attn_lm_block_output_hook(p));
    c->need += R * p->V + R * p->C + p->V + 2.0 * (L + 1) * rows * k;
    c->reply += 3.0 * (L + 1) * rows * k; /* ids, probabilities, tokens */
    c->ops += attn_lm_head_ops(p, (L + 1) * rows);
}

void api__inside_neuron_hooks(const attn_lm_plan *p, attn_hook hooks[4]) {
    int rot = attn_lm_has_hook(p, ATTN_HOOK_ROT_Q);
    hooks[0] = rot ? ATTN_HOOK_ROT_Q : ATTN_HOOK_Q;
    hooks[1] = rot ? ATTN_HOOK_ROT_K : ATTN_HOOK_K;
    hooks[2] = ATTN_HOOK_ATTN_SCORES;
    hooks[3] = ATTN_HOOK_PATTERN;
}

/* The neuron view's captures (one block's q, k, scores and pattern) and
 * its arrays. */
static void neuron_costs(const inside_rq *in, const attn_lm_plan *p, inside_out *io, costs *c) {
    attn_hook hooks[4];
    api__inside_neuron_hooks(p, hooks);
    for (int i = 0; i < 4; i++) c->need += (double)want(io, p, in->nv_layer, hooks[i]);
    double n = (double)p->D + 2.0 * p->T * p->D + 3.0 * p->T;
    c->need += n;
    c->reply += n;
}

/* Below 2^50: the caller adds a few of these without overflow. */
static size_t clamp(double x) { return x >= 0x1p50 ? (size_t)1 << 50 : (size_t)x; }

int api__inside_plan(const inside_rq *in, const attn_lm_plan *p, int width, inside_out *io,
                     inside_sizes *out, api_err *e) {
    *io = (inside_out){0};
    *out = (inside_sizes){0};
    int L = p->n_layer, most = in->n_hooks + (in->lens_k ? L + 1 : 0) + (in->patch ? L : 0) +
                               (in->neuron ? 4 : 0);
    if (api__inside_analysis_plan(in, p, width < 1 ? 1 : width, out, e)) return -1;
    if (most == 0) return 0;
    io->caps = calloc((size_t)most, sizeof *io->caps);
    io->cap_count = calloc((size_t)most, sizeof *io->cap_count);
    if (io->caps == NULL || io->cap_count == NULL)
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the captures");
    costs c = {0}, before;
    for (int i = 0; i < in->n_hooks; i++) {
        c.need += (double)want(io, p, in->hooks[i].layer, in->hooks[i].hook);
        size_t count = 0;
        attn_hook_dims(p, in->hooks[i].hook, NULL, &count);
        c.reply += (double)count;
    }
    double model = p->ops;
    before = c;
    if (in->patch && patch_costs(in, p, width < 1 ? 1 : width, io, &c, e)) return -1;
    double patch_ops = c.ops - before.ops;
    if (in->lens_k) lens_costs(in, p, io, &c);
    if (in->neuron) neuron_costs(in, p, io, &c);
    double lens_ops = c.ops - before.ops - patch_ops, analysis_ops = out->ops;
    double most_ops = patch_ops > lens_ops ? patch_ops : lens_ops;
    if (most_ops > model && most_ops > analysis_ops) out->ops_field = patch_ops > lens_ops ? "patch" : "logit_lens";
    out->need += clamp(c.need);
    out->reply_values += clamp(c.reply);
    out->ops += c.ops;
    return 0;
}

void api__inside_out_free(inside_out *io) {
    free(io->caps);
    free(io->cap_count);
    free(io->names);
    free(io->cache_items);
    api_buf_free(&io->lens_tokens);
    api_buf_free(&io->nv_json);
    *io = (inside_out){0};
}
