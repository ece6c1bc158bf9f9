/* chat_reply.c - what /v1/chat/completions answers, as OpenAI's Chat
 * Completions API writes it:
 *
 *   {"id": "chatcmpl-...", "object": "chat.completion", "created": 1764000000,
 *    "model": "smollm2", "choices": [{"index": 0, "message": {"role": "assistant",
 *    "content": "..."}, "logprobs": {"content": [{"token": " the", "logprob": -1.2,
 *    "bytes": [32, 116, 104, 101], "top_logprobs": [{"token": " the", "logprob": -1.2,
 *    "bytes": [...]}, ...]}, ...]}, "finish_reason": "stop"}],
 *    "usage": {"prompt_tokens": 31, "completion_tokens": 12, "total_tokens": 43}}
 *
 * A stream ("object": "chat.completion.chunk") starts each choice with
 * {"delta": {"role": "assistant", "content": ""}}, then one chunk per written
 * token with its text as "delta": {"content": ...} (the part that can no
 * longer become a stop string or half a character, as /v1/completions
 * sends it) and its logprobs, then each choice's last chunk with the rest of
 * the text and its finish_reason; run.c adds the usage and "data: [DONE]". */
#include "api/openai/openai.h"

#include <string.h>

static void ident(const oai_state *s, api_buf *j) {
    api__buf_printf(j, "\"id\":\"%s\",\"object\":\"%s\",\"created\":%lld,\"model\":", s->id,
                    s->rq.stream ? "chat.completion.chunk" : "chat.completion", s->created);
    api__buf_json_string(j, s->rq.model->name);
}

/* "token", "logprob", "bytes" of one token. */
static void token_fields(api_buf *j, const api_bpe *bpe, int32_t id, float lp) {
    const char *b;
    size_t n;
    api__buf_puts(j, "\"token\":");
    api__oai_token_json(j, bpe, id);
    api__buf_puts(j, ",\"logprob\":");
    api__oai_number(j, lp);
    api__buf_puts(j, ",\"bytes\":[");
    api__gen_token_bytes(bpe, id, &b, &n);
    for (size_t i = 0; i < n; i++) api__buf_printf(j, "%s%u", i ? "," : "", (unsigned char)b[i]);
    api__buf_puts(j, "]");
}

/* {"content": [...]} of row b's written tokens [k0, k1), or null. */
static void logprobs_obj(api_buf *j, const oai_state *s, int b, int k0, int k1) {
    const api_gen_out *o = &s->rq.prompt[s->p].out;
    const api_bpe *bpe = s->rq.tok->bpe;
    if (s->rq.logprobs < 0) {
        api__buf_puts(j, "null");
        return;
    }
    int want = s->rq.logprobs < o->n_top ? s->rq.logprobs : o->n_top;
    api__buf_puts(j, "{\"content\":[");
    for (int k = k0; k < k1; k++) {
        size_t at = (size_t)b * o->N + (size_t)k;
        const attn_token_logprob *top = o->top + at * o->n_top;
        api__buf_puts(j, k > k0 ? ",{" : "{");
        token_fields(j, bpe, o->ids[at], o->logprobs[at]);
        api__buf_puts(j, ",\"top_logprobs\":[");
        for (int i = 0, shown = 0; i < want; i++) {
            int dup = 0;
            for (int m = 0; m < i; m++) dup |= top[m].id == top[i].id;
            if (dup) continue;
            api__buf_puts(j, shown++ ? ",{" : "{");
            token_fields(j, bpe, top[i].id, top[i].logprob);
            api__buf_puts(j, "}");
        }
        api__buf_puts(j, "]}");
    }
    api__buf_puts(j, "]}");
}

void api__oai_chat_choices(oai_state *s, api_buf *j) {
    const oai_rq *rq = &s->rq;
    const api_gen_out *o = &rq->prompt[0].out;
    s->p = 0;
    api__buf_puts(j, "[");
    for (int b = 0; b < rq->n; b++) {
        api_buf text = {0};
        api__gen_utf8(&text, o->bytes[b].data ? o->bytes[b].data : "", o->bytes[b].len);
        api__buf_printf(j, "%s{\"index\":%d,\"message\":{\"role\":\"assistant\",\"content\":", b ? "," : "", b);
        api__buf_json_stringn(j, text.data ? text.data : "", text.len);
        if (text.failed) j->failed = 1;
        api_buf_free(&text);
        api__buf_puts(j, "},\"logprobs\":");
        logprobs_obj(j, s, b, 0, o->n[b]);
        api__buf_printf(j, ",\"finish_reason\":\"%s\"}", api__gen_finish_name(o->finish[b]));
    }
    api__buf_puts(j, "]");
}

/* "data: {ident, "choices": [{"index": b, "delta": {...}, "logprobs": ...,
 * "finish_reason": ...}]}": delta is the members' JSON. */
static void chunk_open(oai_state *s, int b) {
    api__buf_puts(&s->events, "data: {");
    ident(s, &s->events);
    api__buf_printf(&s->events, ",\"choices\":[{\"index\":%d,\"delta\":{", b);
}

int api__oai_chat_begin(oai_state *s) {
    api__oai_prompt_begin(s);
    if (!s->rq.stream) return 0;
    for (int b = 0; b < s->rq.n; b++) {
        chunk_open(s, b);
        api__buf_puts(&s->events, "\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
                                  "\"finish_reason\":null}]}\n\n");
    }
    return api__oai_flush(s);
}

int api__oai_chat_on_token(void *ctx, const api_gen_out *o, int b, int k) {
    oai_state *s = ctx;
    (void)o;
    if (!s->rq.stream) return 0;
    chunk_open(s, b);
    api__buf_puts(&s->events, "\"content\":");
    api__oai_delta(s, b, &s->events);
    api__buf_puts(&s->events, "},\"logprobs\":");
    logprobs_obj(&s->events, s, b, k, k + 1);
    api__buf_puts(&s->events, ",\"finish_reason\":null}]}\n\n");
    return api__oai_flush(s);
}

int api__oai_chat_finish(oai_state *s) {
    const api_gen_out *o = &s->rq.prompt[s->p].out;
    for (int b = 0; b < s->rq.n; b++) {
        api_buf rest = {0};
        api__oai_delta(s, b, &rest);
        chunk_open(s, b);
        if (rest.len > 2) { /* more than "" */
            api__buf_puts(&s->events, "\"content\":");
            api__buf_put(&s->events, rest.data, rest.len);
        }
        if (rest.failed) s->events.failed = 1;
        api_buf_free(&rest);
        api__buf_printf(&s->events, "},\"logprobs\":null,\"finish_reason\":\"%s\"}]}\n\n",
                        api__gen_finish_name(o->finish[b]));
    }
    return api__oai_flush(s);
}
