/* event.c - a written token as JSON, the same text in a whole reply's
 * "steps" and in the event a stream sends for it:
 *
 *   {"index": 0, "position": 4, "id": 11, "text": ",", "logprob": -2.1,
 *    "top": [{"id": 11, "text": ",", "logprob": -2.1}, ...],
 *    "attention": [[[0.5, 0.2, 0.2, 0.1]]]}
 *
 * position is where the token stands in the text (the prompt first);
 * "bytes" comes only for a token that is not valid UTF-8 on its own (a
 * piece of a character: its text then shows U+FFFD); "top" with logprobs;
 * "attention" [layers][heads][t] with attention: what the position that
 * chose the token (position - 1) attended to, positions position - t to
 * position - 1. */
#include "api/generate/generate.h"
#include "api/numbers/numbers.h"

static void number(api_buf *j, float v, int precision) {
    char text[API_FLOAT_MAX + API_FLOAT_SLACK];
    int n = api__format_float(text, v, precision);
    if (n > 0) api__buf_put(j, text, (size_t)n);
    else api__buf_puts(j, "null"); /* -inf: a token the filters ruled out */
}

void api__gen_token_text_json(api_buf *j, const api_bpe *bpe, int32_t id) {
    const char *b;
    size_t n;
    api__gen_token_bytes(bpe, id, &b, &n);
    api_buf text = {0};
    api__gen_utf8(&text, b, n);
    if (text.failed) j->failed = 1;
    else api__buf_json_stringn(j, text.data ? text.data : "", text.len);
    api_buf_free(&text);
}

static void bytes_json(api_buf *j, const api_bpe *bpe, int32_t id) {
    const char *b;
    size_t n;
    api__gen_token_bytes(bpe, id, &b, &n);
    if (api__gen_utf8_valid(b, n)) return;
    api__buf_puts(j, ",\"bytes\":[");
    for (size_t i = 0; i < n; i++) api__buf_printf(j, i ? ",%u" : "%u", (unsigned char)b[i]);
    api__buf_puts(j, "]");
}

static void top_json(api_buf *j, const attn_token_logprob *top, int n, const api_bpe *bpe,
                     int precision) {
    api__buf_puts(j, ",\"top\":[");
    for (int i = 0; i < n; i++) {
        api__buf_printf(j, "%s{\"id\":%d", i ? "," : "", (int)top[i].id);
        if (bpe) {
            api__buf_puts(j, ",\"text\":");
            api__gen_token_text_json(j, bpe, top[i].id);
        }
        api__buf_puts(j, ",\"logprob\":");
        number(j, top[i].logprob, precision);
        api__buf_puts(j, "}");
    }
    api__buf_puts(j, "]");
}

void api__gen_token_json(api_buf *j, const api_gen_out *g, const api_bpe *bpe, int b, int k,
                         int T0, int precision) {
    size_t at = (size_t)b * g->N + (size_t)k;
    int32_t id = g->ids[at];
    api__buf_printf(j, "{\"index\":%d,\"position\":%d,\"id\":%d", k, T0 + k, (int)id);
    if (bpe) {
        api__buf_puts(j, ",\"text\":");
        api__gen_token_text_json(j, bpe, id);
        bytes_json(j, bpe, id);
    }
    api__buf_puts(j, ",\"logprob\":");
    number(j, g->logprobs[at], precision);
    if (g->n_top) top_json(j, g->top + at * g->n_top, g->n_top, bpe, precision);
    if (g->rows_len) {
        int shape[3] = {g->Ls, g->Hs, g->rows_t[at]}, nonfinite = 0;
        api_fmt f = {.format = API_FORMAT_NESTED, .precision = precision};
        api__buf_puts(j, ",\"attention\":");
        api__emit_floats(j, g->rows + at * (size_t)g->rows_len, 3, shape, &f, &nonfinite);
    }
    api__buf_puts(j, "}");
}
