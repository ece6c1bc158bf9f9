/* gen_io.c - what a /model/gpt2 generation says: its events, and the
 * reply's "generation" object:
 *
 *   {"prompt_tokens": 4, "completion_tokens": 15, "finish_reason": "length",
 *    "stop": null, "seed": 123, "window_start": 0, "text": " ...",
 *    "ms": {"prefill": 3.1, "steps": 120.4, "per_token": 8.0},
 *    "steps": [{"index": 0, "position": 4, "id": 11, ...}, ...]}
 *
 * A stream sends "event: start" ({"idx", "tokens"} of the prompt), one
 * "event: token" per step object, then "event: done" with the reply's
 * object, whose "generation" has everything but "steps": the events and a
 * whole reply say the same, one writer each (api__gen_token_json). */
#include "api/model/model.h"
#include "api/numbers/numbers.h"

#include <string.h>

/* Hands the events written so far to the caller (api_limits.events), when
 * it takes them as they come: 0, or 1 when the client has gone. */
static int flush(struct model_gen *g) {
    const api_limits *lim = g->job->lim;
    if (lim == NULL || lim->events == NULL || g->events.len == 0 || g->events.failed) return 0;
    char *data = g->events.data;
    size_t len = g->events.len;
    g->events = (api_buf){0};
    if (lim->events(lim->gen_ctx, data, len) != 0) return 1;
    g->job->error_event = "event: error\ndata: "; /* from now on a failure is an event too */
    return 0;
}

int api__model_gen_start(struct model_gen *g, const model_rq *rq) {
    api_buf *b = &g->events;
    api__buf_puts(b, "event: start\ndata: {\"idx\":[");
    for (int t = 0; t < rq->T; t++) api__buf_printf(b, t ? ",%d" : "%d", (int)rq->idx[t]);
    api__buf_puts(b, "]");
    if (g->bpe) {
        api__buf_puts(b, ",\"tokens\":[");
        for (int t = 0; t < rq->T; t++) {
            if (t) api__buf_puts(b, ",");
            api__gen_token_text_json(b, g->bpe, rq->idx[t]);
        }
        api__buf_puts(b, "]");
    }
    api__buf_puts(b, "}\n\n");
    return flush(g); /* a client gone already: the loop stops at its first token */
}

int api__model_gen_on_token(void *ctx, const api_gen_out *o, int b, int k) {
    struct model_gen *g = ctx;
    if (!g->streaming) return 0; /* the steps are written with the reply */
    api__buf_puts(&g->events, "event: token\ndata: ");
    api__gen_token_json(&g->events, o, g->bpe, b, k, g->T0, g->job->fmt.precision);
    api__buf_puts(&g->events, "\n\n");
    return flush(g);
}

static void number(api_buf *j, double v) {
    char text[API_FLOAT_MAX + API_FLOAT_SLACK];
    int n = api__format_float(text, (float)v, 6);
    api__buf_put(j, n > 0 ? text : "0", n > 0 ? (size_t)n : 1);
}

/* "stop": the stop string that ended the text, {"token_id": eos}, or null. */
static void stop_json(api_buf *j, const struct model_gen *g) {
    const api_gen_out *o = &g->out;
    if (o->finish[0] != API_GEN_STOP) {
        api__buf_puts(j, "null");
    } else if (o->stop_which[0] >= 0) {
        int w = o->stop_which[0];
        api__buf_json_stringn(j, g->opt.stop[w], g->opt.stop_len[w]);
    } else {
        api__buf_printf(j, "{\"token_id\":%d}", g->opt.eos_id);
    }
}

void api__model_gen_object(struct model_gen *g, int with_steps) {
    const api_gen_out *o = &g->out;
    api_buf *j = &g->json;
    api__buf_printf(j, "{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"finish_reason\":\"%s\",\"stop\":",
                    g->T0, o->n[0], api__gen_finish_name(o->finish[0]));
    stop_json(j, g);
    if (g->seeded) api__buf_printf(j, ",\"seed\":%llu", (unsigned long long)g->seed);
    else api__buf_puts(j, ",\"seed\":null");
    api__buf_printf(j, ",\"window_start\":%d", g->window_start);
    if (g->bpe) {
        api__buf_puts(j, ",\"text\":");
        api_buf text = {0};
        api__gen_utf8(&text, o->bytes[0].data ? o->bytes[0].data : "", o->bytes[0].len);
        api__buf_json_stringn(j, text.data ? text.data : "", text.len);
        if (text.failed) j->failed = 1;
        api_buf_free(&text);
    }
    api__buf_puts(j, ",\"ms\":{\"prefill\":");
    number(j, o->ms_prefill);
    api__buf_puts(j, ",\"steps\":");
    number(j, o->ms_steps);
    api__buf_puts(j, ",\"per_token\":");
    number(j, o->n[0] ? o->ms_steps / o->n[0] : 0.0);
    api__buf_puts(j, "}");
    if (with_steps) {
        api__buf_puts(j, ",\"steps\":[");
        for (int k = 0; k < o->n[0]; k++) {
            if (k) api__buf_puts(j, ",");
            api__gen_token_json(j, o, g->bpe, 0, k, g->T0, g->job ? g->job->fmt.precision : 0);
        }
        api__buf_puts(j, "]");
    }
    api__buf_puts(j, "}");
}
