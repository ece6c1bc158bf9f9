/* choice.c - what /v1/completions answers, as OpenAI's Completions API
 * writes it:
 *
 *   {"id": "cmpl-...", "object": "text_completion", "created": 1764000000,
 *    "model": "gpt2", "choices": [{"text": " ...", "index": 0,
 *    "logprobs": {"tokens": [...], "token_logprobs": [...],
 *                 "top_logprobs": [{" the": -1.2, ...}, ...], "text_offset": [...]},
 *    "finish_reason": "length"}], "usage": {"prompt_tokens": 4,
 *    "completion_tokens": 16, "total_tokens": 20}}
 *
 * A stream sends the same as chunks ("data: {...}"): the echo of each
 * prompt (with echo), one chunk per written token, with the text that can
 * no longer become a stop string or half a character (so the chunks' texts
 * add up to the whole reply's), then each choice's last chunk with its
 * finish_reason, the usage (stream_options.include_usage), and
 * "data: [DONE]". A token whose bytes are not UTF-8 on their own is named
 * as OpenAI names it: "bytes:\xe2\x80". */
#include "api/openai/openai.h"
#include "api/numbers/numbers.h"

#include <stdio.h>
#include <string.h>

/* Code points in b[0..n): the bytes that are not continuation bytes. */
static size_t code_points(const char *b, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)b[i] & 0xC0) != 0x80;
    return c;
}

static void number(api_buf *j, float v) {
    char text[API_FLOAT_MAX + API_FLOAT_SLACK];
    int n = api__format_float(text, v, 0);
    if (n > 0) api__buf_put(j, text, (size_t)n);
    else api__buf_puts(j, "null");
}

/* A token as OpenAI names it in logprobs. */
static void tok_str(api_buf *j, const api_bpe *bpe, int32_t id) {
    const char *b;
    size_t n;
    api__gen_token_bytes(bpe, id, &b, &n);
    if (api__gen_utf8_valid(b, n)) {
        api_buf t = {0};
        api__buf_put(&t, b, n);
        api__buf_put(&t, "", 1); /* NUL after the text */
        api__buf_json_stringn(j, t.data ? t.data : "", t.data ? n : 0); /* t.failed says the rest */
        if (t.failed) j->failed = 1;
        api_buf_free(&t);
        return;
    }
    api__buf_puts(j, "\"bytes:");
    for (size_t i = 0; i < n; i++) api__buf_printf(j, "\\\\x%02x", (unsigned char)b[i]);
    api__buf_puts(j, "\"");
}

/* {"token": lp, ...}: the n most likely, and the chosen one if not among them;
 * the chosen one's value is lp wherever it stands (a prompt token's came
 * from another computation than its alternatives': one token, one value). */
static void top_obj(api_buf *j, const api_bpe *bpe, const attn_token_logprob *top, int n,
                    int32_t chosen, float lp) {
    int seen = 0;
    api__buf_puts(j, "{");
    for (int i = 0; i < n; i++) {
        int dup = 0;
        for (int k = 0; k < i; k++) dup |= top[k].id == top[i].id;
        if (dup) continue;
        if (i) api__buf_puts(j, ",");
        tok_str(j, bpe, top[i].id);
        api__buf_puts(j, ":");
        number(j, top[i].id == chosen ? lp : top[i].logprob);
        seen |= top[i].id == chosen;
    }
    if (!seen) {
        if (n) api__buf_puts(j, ",");
        tok_str(j, bpe, chosen);
        api__buf_puts(j, ":");
        number(j, lp);
    }
    api__buf_puts(j, "}");
}

/* Where row b's token k begins in its text, in code points: as written,
 * before a stop string cut the text, so that the tokens past its end (the
 * stop string's, kept in logprobs) go on from it rather than all standing
 * at its end. */
static size_t token_offset(const api_bpe *bpe, const api_gen_out *o, int b, int k) {
    const api_buf *bytes = &o->bytes[b];
    size_t row = (size_t)b * o->N, start = k ? o->tok_end[row + k - 1] : 0;
    if (start <= bytes->len) return code_points(bytes->data, start);
    size_t n = code_points(bytes->data, bytes->len);
    for (int i = 0; i < k; i++) { /* the bytes the cut took, token by token */
        size_t from = i ? o->tok_end[row + i - 1] : 0;
        if (o->tok_end[row + i] <= bytes->len) continue;
        const char *tb;
        size_t tn, skip = bytes->len > from ? bytes->len - from : 0;
        api__gen_token_bytes(bpe, o->ids[row + i], &tb, &tn);
        if (skip < tn) n += code_points(tb + skip, tn - skip);
    }
    return n;
}

/* The four arrays of logprobs, with the prompt's tokens first (echo), then
 * the written tokens [k0, k1) of row b; offsets counted from `base` code
 * points. */
typedef struct {
    const oai_state *s;
    const oai_prompt *p;
    int b, k0, k1, with_prompt;
} lp_span;

static void lp_arrays(api_buf *j, const lp_span *sp, int what) {
    const oai_prompt *p = sp->p;
    const api_gen_out *o = &p->out;
    const api_bpe *bpe = sp->s->rq.tok->bpe;
    int n_top = o->n_top;
    size_t base = sp->s->rq.echo ? code_points(p->text, p->text_len) : 0, pbytes = 0;
    int first = 1;
    for (int t = 0; sp->with_prompt && t < p->T; t++, first = 0) {
        if (!first) api__buf_puts(j, ",");
        const char *tb;
        size_t tn;
        api__gen_token_bytes(bpe, p->ids[t], &tb, &tn);
        size_t at = (size_t)sp->b * p->T + (size_t)t;
        if (what == 0) tok_str(j, bpe, p->ids[t]);
        else if (what == 1 && t == 0) api__buf_puts(j, "null"); /* nothing before the first */
        else if (what == 1) number(j, o->prompt_lp[at]);
        else if (what == 2 && t == 0) api__buf_puts(j, "null");
        else if (what == 2) top_obj(j, bpe, o->prompt_top + at * n_top, n_top, p->ids[t], o->prompt_lp[at]);
        else api__buf_printf(j, "%zu", code_points(p->text, pbytes < p->text_len ? pbytes : p->text_len));
        pbytes += tn;
    }
    for (int k = sp->k0; k < sp->k1; k++, first = 0) {
        if (!first) api__buf_puts(j, ",");
        size_t at = (size_t)sp->b * o->N + (size_t)k;
        if (what == 0) tok_str(j, bpe, o->ids[at]);
        else if (what == 1) number(j, o->logprobs[at]);
        else if (what == 2) top_obj(j, bpe, o->top + at * n_top, n_top, o->ids[at], o->logprobs[at]);
        else api__buf_printf(j, "%zu", base + token_offset(bpe, o, sp->b, k));
    }
}

static void logprobs_obj(api_buf *j, const lp_span *sp) {
    if (sp->s->rq.logprobs < 0) {
        api__buf_puts(j, "null");
        return;
    }
    static const char *const keys[] = {"{\"tokens\":[", "],\"token_logprobs\":[", "],\"top_logprobs\":[",
                                       "],\"text_offset\":["};
    for (int what = 0; what < 4; what++) {
        api__buf_puts(j, keys[what]);
        lp_arrays(j, sp, what);
    }
    api__buf_puts(j, "]}");
}

/* "id", "object", "created", "model" of every object. */
static void ident(const oai_state *s, api_buf *j) {
    api__buf_printf(j, "\"id\":\"%s\",\"object\":\"text_completion\",\"created\":%lld,\"model\":",
                    s->id, s->created);
    api__buf_json_string(j, s->rq.model->name);
}

/* Row b's text from byte `from` on, repaired (the whole text: from 0). */
static void text_from(api_buf *j, const api_buf *bytes, size_t from, size_t to) {
    api_buf t = {0};
    api__gen_utf8(&t, bytes->data ? bytes->data + from : "", to - from);
    api__buf_json_stringn(j, t.data ? t.data : "", t.len);
    if (t.failed) j->failed = 1;
    api_buf_free(&t);
}

/* OpenAI's "stop" and "length"; "timeout" when the server cut the text
 * short (--timeout, a drain, time spent waiting for memory), as
 * /model/gpt2 says it: "length" would tell the client its text is whole. */
static const char *finish_of(api_gen_finish f) {
    return f == API_GEN_TIMEOUT ? "timeout" : f == API_GEN_STOP ? "stop" : "length";
}

void api__oai_choices(oai_state *s, api_buf *j) {
    const oai_rq *rq = &s->rq;
    api__buf_puts(j, "[");
    for (int p = 0; p < rq->n_prompts; p++)
        for (int b = 0; b < rq->n; b++) {
            const api_gen_out *o = &rq->prompt[p].out;
            api__buf_printf(j, "%s{\"text\":", p || b ? "," : "");
            api_buf text = {0};
            if (rq->echo) api__buf_put(&text, rq->prompt[p].text, rq->prompt[p].text_len);
            api__gen_utf8(&text, o->bytes[b].data ? o->bytes[b].data : "", o->bytes[b].len);
            api__buf_json_stringn(j, text.data ? text.data : "", text.len);
            api_buf_free(&text);
            api__buf_printf(j, ",\"index\":%d,\"logprobs\":", p * rq->n + b);
            lp_span sp = {s, &rq->prompt[p], b, 0, o->n[b], rq->echo};
            logprobs_obj(j, &sp);
            api__buf_printf(j, ",\"finish_reason\":\"%s\"}", finish_of(o->finish[b]));
        }
    api__buf_puts(j, "]");
}

void api__oai_usage(const oai_state *s, api_buf *j) {
    long prompt = 0, done = 0;
    for (int p = 0; p < s->rq.n_prompts; p++) {
        prompt += s->rq.prompt[p].T;
        for (int b = 0; b < s->rq.n; b++) done += s->rq.prompt[p].out.n ? s->rq.prompt[p].out.n[b] : 0;
    }
    api__buf_printf(j, "{\"prompt_tokens\":%ld,\"completion_tokens\":%ld,\"total_tokens\":%ld}", prompt,
                    done, prompt + done);
}

/* "data: {ident, "choices": [{"text": ..., "index": i, "logprobs": ..., "finish_reason": ...}]}" */
static void chunk(oai_state *s, int b, const char *finish, void (*text)(oai_state *, int, api_buf *),
                  const lp_span *sp) {
    api_buf *j = &s->events;
    api__buf_puts(j, "data: {");
    ident(s, j);
    api__buf_puts(j, ",\"choices\":[{\"text\":");
    text(s, b, j);
    api__buf_printf(j, ",\"index\":%d,\"logprobs\":", s->p * s->rq.n + b);
    if (sp) logprobs_obj(j, sp);
    else api__buf_puts(j, "null");
    api__buf_puts(j, ",\"finish_reason\":");
    api__buf_puts(j, finish ? finish : "null");
    api__buf_puts(j, "}]}\n\n");
}

/* The text row b may send now (a finished row: all of it). */
static void delta(oai_state *s, int b, api_buf *j) {
    const api_gen_out *o = &s->rq.prompt[s->p].out;
    const api_buf *bytes = &o->bytes[b];
    size_t end = o->finish[b] == API_GEN_RUNNING
                     ? api__gen_safe_end(bytes->data, bytes->len, &s->rq.opt) : bytes->len;
    if (end < s->sent[b]) end = s->sent[b];
    text_from(j, bytes, s->sent[b], end);
    s->sent[b] = end;
}

static void echo_text(oai_state *s, int b, api_buf *j) {
    (void)b;
    api__buf_json_stringn(j, s->rq.prompt[s->p].text, s->rq.prompt[s->p].text_len);
}

void api__oai_prompt_begin(oai_state *s) {
    memset(s->sent, 0, sizeof s->sent);
    s->echoed = 0;
}

/* The prompt's text for each choice (echo), once its log-probabilities are
 * known: before the first written token, or the end. */
static void echo_once(oai_state *s) {
    if (s->echoed || !s->rq.echo) return;
    s->echoed = 1;
    for (int b = 0; b < s->rq.n; b++) {
        lp_span sp = {s, &s->rq.prompt[s->p], b, 0, 0, 1};
        chunk(s, b, NULL, echo_text, &sp);
    }
}

int api__oai_on_token(void *ctx, const api_gen_out *o, int b, int k) {
    oai_state *s = ctx;
    (void)o;
    if (!s->rq.stream) return 0;
    echo_once(s);
    lp_span sp = {s, &s->rq.prompt[s->p], b, k, k + 1, 0};
    chunk(s, b, NULL, delta, &sp);
    return api__oai_flush(s);
}

int api__oai_chunk_finish(oai_state *s) {
    const api_gen_out *o = &s->rq.prompt[s->p].out;
    echo_once(s);
    for (int b = 0; b < s->rq.n; b++) {
        char finish[16];
        snprintf(finish, sizeof finish, "\"%s\"", finish_of(o->finish[b]));
        chunk(s, b, finish, delta, NULL);
    }
    return api__oai_flush(s);
}

int api__oai_flush(oai_state *s) {
    const api_limits *lim = s->job->lim;
    if (lim == NULL || lim->events == NULL || s->events.len == 0 || s->events.failed) return 0;
    char *data = s->events.data;
    size_t len = s->events.len;
    s->events = (api_buf){0};
    if (lim->events(lim->gen_ctx, data, len) != 0) return 1;
    s->job->error_event = "data: "; /* a failure from now on: data: {"error": ...} */
    return 0;
}

/* ==== What chat_reply.c shares (/v1/chat/completions) ==== */

void api__oai_token_json(api_buf *j, const api_bpe *bpe, int32_t id) { tok_str(j, bpe, id); }
void api__oai_number(api_buf *j, float v) { number(j, v); }
void api__oai_delta(oai_state *s, int b, api_buf *j) { delta(s, b, j); }
