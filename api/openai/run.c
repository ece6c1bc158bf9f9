/* run.c - POST /v1/completions and /v1/chat/completions, the kind's steps
 * (pipeline.h): each prompt (the chat's: its rendered messages) is one
 * generation whose n rows are the choices, on the loaded model's
 * parameters as they are; the reply is OpenAI's object, or its chunks as
 * server-sent events with "stream": true. */
#include "api/openai/openai.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static int parse(api_job *j, const json_t *root, api_err *e) {
    oai_state *s = j->state;
    s->job = j;
    int chat = j->ep == API_EP_V1_CHAT_COMPLETIONS;
    if ((chat ? api__oai_chat_parse : api__oai_parse)(root, j->lim, &s->rq, e)) return -1;
    j->fmt = (api_fmt){.format = s->rq.stream ? API_FORMAT_EVENTS : API_FORMAT_NESTED};
    return 0;
}

static int plan(api_job *j, api_err *e) {
    oai_state *s = j->state;
    oai_rq *rq = &s->rq;
    size_t need = 0;
    double ops = 0;
    for (int p = 0; p < rq->n_prompts; p++) {
        oai_prompt *pr = &rq->prompt[p];
        if (api__gen_plan(&rq->model->cfg, rq->n, pr->T, &rq->opt, 0, 0, &pr->plan, e)) return -1;
        need += pr->plan.floats;
        ops += pr->plan.ops;
    }
    size_t text = (size_t)rq->n_prompts * rq->n * ((size_t)rq->opt.max_new_tokens + 1) *
                  (32 + 24 * (size_t)(rq->opt.logprobs + 1));
    api__job_sized(j, need + text / 4, SIZE_MAX, text / 10, "request", "its generations and reply");
    j->ops = ops;
    j->ops_field = "max_tokens";
    j->generates = 1;
    return 0;
}

static int prepare(api_job *j, api_err *e) {
    oai_state *s = j->state;
    (void)e;
    unsigned char r[12];
    if (getrandom(r, sizeof r, 0) != sizeof r)
        for (size_t i = 0; i < sizeof r; i++) r[i] = (unsigned char)(rand() ^ (int)time(NULL) >> (i % 8));
    int n = snprintf(s->id, sizeof s->id, s->rq.chat ? "chatcmpl-" : "cmpl-");
    for (size_t i = 0; i < sizeof r; i++) n += snprintf(s->id + n, sizeof s->id - (size_t)n, "%02x", r[i]);
    s->created = (long long)time(NULL);
    return 0;
}

/* The generator: "seed" before the first prompt; else a seed drawn. */
static void seed_rng(const oai_rq *rq, attn_rng *rng) {
    uint64_t seed = rq->opt.seed;
    if (!rq->opt.has_seed && getrandom(&seed, sizeof seed, 0) != sizeof seed)
        seed = (uint64_t)time(NULL) ^ (uint64_t)clock();
    attn_rng_seed(rng, seed);
}

static int compute(api_job *j, api_err *e) {
    oai_state *s = j->state;
    oai_rq *rq = &s->rq;
    attn_rng rng;
    seed_rng(rq, &rng);
    const api_limits *lim = j->lim;
    for (s->p = 0; s->p < rq->n_prompts; s->p++) {
        oai_prompt *pr = &rq->prompt[s->p];
        int32_t *rows = malloc((size_t)rq->n * (size_t)pr->T * sizeof *rows);
        if (rows == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the prompt");
        for (int b = 0; b < rq->n; b++) memcpy(rows + (size_t)b * pr->T, pr->ids, (size_t)pr->T * sizeof *rows);
        api_gen_in in = {.plan = &pr->plan, .opt = &rq->opt, .cfg = &rq->model->cfg,
                         .params = rq->model->params, .pool = lim ? lim->compute : NULL,
                         .prompt = rows, .rng = &rng, .bpe = rq->tok->bpe, .lim = lim,
                         .on_token = rq->chat ? api__oai_chat_on_token : api__oai_on_token, .ctx = s};
        int rc = rq->chat ? api__oai_chat_begin(s) : (api__oai_prompt_begin(s), 0);
        if (rc == 0) rc = api__gen_run(&in, &pr->out, &j->arrays, e) ? -1 : 0;
        free(rows);
        if (rc < 0) return -1;
        if (rc || pr->out.gone || (rq->stream && (rq->chat ? api__oai_chat_finish : api__oai_chunk_finish)(s)))
            return api__fail(e, API_E_OVERLOADED, NULL, "the client has gone: the generation stopped");
    }
    return 0;
}

static int contents(api_job *j, api_contents *c, api_err *e) {
    oai_state *s = j->state;
    c->module = NULL;
    api__oai_usage(s, &s->usage);
    if (s->rq.stream) { /* the chunks; the usage as one more with include_usage */
        if (s->rq.include_usage) {
            api__buf_printf(&s->events, "data: {\"id\":\"%s\",\"object\":\"%s\",\"created\":%lld,"
                            "\"model\":", s->id, s->rq.chat ? "chat.completion.chunk" : "text_completion",
                            s->created);
            api__buf_json_string(&s->events, s->rq.model->name);
            api__buf_printf(&s->events, ",\"choices\":[],\"usage\":%s}\n\n",
                            s->usage.data ? s->usage.data : "{}");
        }
        c->events = &s->events;
        c->events_end = "data: [DONE]\n\n";
        return s->events.failed || s->usage.failed
                   ? api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply") : 0;
    }
    (s->rq.chat ? api__oai_chat_choices : api__oai_choices)(s, &s->json);
    api__buf_json_string(&s->ident, s->id);
    api__buf_json_string(&s->model_json, s->rq.model->name);
    snprintf(s->created_text, sizeof s->created_text, "%lld", s->created);
    if (s->json.failed || s->ident.failed || s->usage.failed || s->model_json.failed)
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    const char *values[6] = {s->ident.data, s->rq.chat ? "\"chat.completion\"" : "\"text_completion\"",
                             s->created_text,
                             s->model_json.data, s->json.data, s->usage.data};
    static const char *const names[6] = {"id", "object", "created", "model", "choices", "usage"};
    for (int i = 0; i < 6; i++)
        s->items[i] = (api_item){.name = names[i], .kind = API_ITEM_JSON, .data = values[i]};
    c->item = s->items;
    c->n = 6;
    return 0;
}

static void release(api_job *j) {
    oai_state *s = j->state;
    api__oai_rq_free(&s->rq);
    api_buf *texts[] = {&s->events, &s->json, &s->usage, &s->ident, &s->model_json};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) api_buf_free(texts[i]);
}

API_KIND_DEFINE(api__openai_kind, oai_state, 1u << API_FORMAT_NESTED | 1u << API_FORMAT_EVENTS);
