/* gen.c - "generate" on POST /model/gpt2, see gen.h.
 *
 *   {"model": "gpt2", "text": "Every effort moves you",
 *    "generate": {"max_new_tokens": 15, "temperature": 1.4, "top_k": 25, "seed": 123}}
 *
 * The generator: "seed" seeds it right before the loop (torch.manual_seed,
 * as the book's chapter 5 does before generate()); without one, a model
 * built from init continues the generator its construction left (nanoGPT's
 * sample.py seeds once, before it builds the model), and any other model
 * draws a seed, which the reply gives. */
#include "api/model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

int api__model_gen_parse(const json_t *root, const api_limits *lim, model_rq *rq, api_err *e) {
    const json_t *v = api__field(root, "generate");
    if (v == NULL) return 0;
    if ((rq->gen = calloc(1, sizeof *rq->gen)) == NULL)
        return api__fail(e, API_E_OUT_OF_MEMORY, "generate", "cannot allocate the generation");
    struct model_gen *g = rq->gen;
    if (api__gen_parse(v, lim ? lim->max_new_tokens : 0, rq->tok != NULL, &g->opt, e)) return -1;
    if (rq->batched && rq->B > 1)
        return api__fail(e, API_E_INVALID_SHAPE, "idx",
                         "generate writes one text: give idx [T] (POST /v1/completions takes n "
                         "for several)");
    if (rq->training)
        return api__fail(e, API_E_INVALID_ARGUMENT, "training",
                         "generate runs the model in eval mode (model.eval(), as the book and "
                         "nanoGPT generate): leave training out");
    g->T0 = rq->T;
    /* the text of the tokens written: with a tokenizer of the request's, or
     * the default one when the request reads text or stops at strings */
    g->bpe = api__model_text_bpe(rq);
    if (g->bpe == NULL && rq->tok && g->opt.n_stop > 0) g->bpe = rq->tok->bpe;
    g->streaming = (api_format_get(rq->fmt.format)->flags & API_FMT_EVENTS) != 0;
    long total = (long)rq->T + g->opt.max_new_tokens;
    g->T_max = total < rq->cfg.context ? (int)total : rq->cfg.context;
    return 0;
}

void api__model_gen_free(model_rq *rq) {
    struct model_gen *g = rq->gen;
    if (g == NULL) return;
    api__gen_opts_free(&g->opt);
    api__gen_out_free(&g->out);
    api_buf *texts[] = {&g->events, &g->json};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) api_buf_free(texts[i]);
    free(g);
    rq->gen = NULL;
}

int api__model_gen_plan(model_rq *rq, api_job *j, api_err *e) {
    struct model_gen *g = rq->gen;
    int Hs = rq->sel.n_heads ? rq->sel.n_heads : rq->cfg.n_head;
    if (api__gen_plan(&rq->cfg, 1, g->T0, &g->opt, rq->n_layers, Hs, &g->plan, e)) return -1;
    j->need += g->plan.floats;
    j->ops += g->plan.ops;
    j->ops_field = "generate.max_new_tokens";
    j->work = SIZE_MAX; /* never answered on the I/O thread: it writes token after token */
    j->generates = 1;
    size_t steps_text = (size_t)g->plan.N * (64 + 32 * (size_t)g->plan.n_top + 12 * (size_t)g->plan.rows_len);
    j->reply_values += steps_text / 10;
    return 0;
}

/* The seed: given, or drawn when nothing else says where the draws come
 * from (reported in the reply). */
static void choose_seed(struct model_gen *g, attn_rng *rng, attn_rng *own) {
    g->seeded = g->opt.has_seed || rng == NULL;
    if (!g->seeded) return;
    g->seed = g->opt.seed;
    if (!g->opt.has_seed && getrandom(&g->seed, sizeof g->seed, 0) != sizeof g->seed)
        g->seed = (uint64_t)time(NULL) ^ (uint64_t)clock();
    if (!g->opt.has_seed) g->seed &= ((uint64_t)1 << 53) - 1; /* exact in any JSON reader */
    attn_rng_seed(own, g->seed);
}

/* rq->idx becomes the final text's last context tokens. */
static int final_window(model_rq *rq, struct model_gen *g, api_err *e) {
    int total = g->T0 + g->out.n[0], T = total < rq->cfg.context ? total : rq->cfg.context;
    int32_t *idx = malloc((size_t)T * sizeof *idx);
    if (idx == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the text");
    g->window_start = total - T;
    for (int t = 0; t < T; t++) {
        int at = g->window_start + t;
        idx[t] = at < g->T0 ? g->out.text[at] : g->out.ids[at - g->T0];
    }
    free(rq->idx);
    rq->idx = idx;
    rq->T = T;
    if (rq->sel.has_rows && rq->sel.row_stop > T) rq->sel.row_stop = T; /* checked against T_max */
    if (rq->sel.has_rows && rq->sel.row_start >= T) rq->sel.row_start = T - 1;
    return 0;
}

int api__model_gen_run(model_rq *rq, api_job *j, const void *params, attn_rng *rng, api_err *e) {
    struct model_gen *g = rq->gen;
    attn_rng own;
    choose_seed(g, rng, &own);
    g->job = j;
    const api_limits *lim = j->lim;
    api_gen_in in = {.plan = &g->plan, .opt = &g->opt, .cfg = &rq->cfg, .params = params,
                     .pool = lim ? lim->compute : NULL, .prompt = rq->idx,
                     .rng = g->seeded ? &own : rng, .bpe = g->bpe, .layers = rq->layers,
                     .heads = rq->sel.n_heads ? rq->sel.heads : NULL, .lim = lim,
                     .on_token = api__model_gen_on_token, .ctx = g};
    if (g->streaming && api__model_gen_start(g, rq))
        return api__fail(e, API_E_OVERLOADED, NULL, "the client has gone before the first token");
    if (api__gen_run(&in, &g->out, &j->arrays, e)) return -1;
    if (g->out.gone)
        return api__fail(e, API_E_OVERLOADED, NULL, "the client has gone: the generation stopped");
    return final_window(rq, g, e);
}

int api__model_gen_items(model_rq *rq, api_item *it, api_contents *c, api_err *e) {
    struct model_gen *g = rq->gen;
    api__model_gen_object(g, !g->streaming);
    if (g->json.failed || g->events.failed)
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    *it = (api_item){.name = "generation", .kind = API_ITEM_JSON, .data = g->json.data};
    if (g->streaming) {
        c->events = &g->events;
        c->last_event = "done";
    }
    return 0;
}
