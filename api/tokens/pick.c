/* pick.c - the tokenizer a request means: the one rule for every endpoint
 * that reads or writes text (/tokenize, /detokenize, POST /model's "text"
 * and its inside fields, /v1/completions):
 *
 *   1. "tokenizer": NAME, any of GET /models' "tokenizers";
 *   2. else the request's model's own (a loaded folder's tokenizer files);
 *   3. else the server's default: the first --tokenizer, or without one the
 *      first loaded model's (the demo model's on a plain server).
 *
 * GET /models names the default ("default_tokenizer"). With no tokenizer at
 * all a request that needs one is a 400 that says how to start the server
 * with one; a name that is not loaded is a 400 that lists those loaded.
 * Also a token's piece as JSON (/tokenize's with_pieces).
 */
#include "api/tokens/tokens.h"
#include "api/bpe/bpe.h"
#include "api/generate/generate.h"
#include "api/request/request.h"

#include <stdio.h>
#include <string.h>

size_t api__tokenizer_count(const api_limits *lim) {
    size_t n = 0;
    while (api__tokenizer_at(lim, n)) n++;
    return n;
}

const api_tokenizer *api__tokenizer_default(const api_limits *lim) {
    return api__tokenizer_at(lim, 0);
}

/* "\"a\", \"b\"" of every loaded tokenizer's name, or "none". */
static void names(const api_limits *lim, char *out, size_t size) {
    size_t n = api__tokenizer_count(lim), k = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && k < size; i++)
        k += (size_t)snprintf(out + k, size - k, "%s\"%s\"", i ? ", " : "",
                              api__tokenizer_at(lim, i)->name);
    if (n == 0) snprintf(out, size, "none");
}

int api__tokenizer_named(const json_t *v, const api_limits *lim, const api_tokenizer **out,
                         api_err *e) {
    if (!json_is_string(v)) return api__field_wrong_type(e, "tokenizer", v, "a string");
    size_t n = api__tokenizer_count(lim);
    for (size_t i = 0; i < n; i++)
        if (strcmp(api__tokenizer_at(lim, i)->name, json_string_value(v)) == 0) {
            *out = api__tokenizer_at(lim, i);
            return 0;
        }
    char echo[API_ECHO_MAX + 4], list[256];
    names(lim, list, sizeof list);
    return api__fail(e, API_E_INVALID_ARGUMENT, "tokenizer",
                     "tokenizer \"%s\" is not loaded; this server has %s",
                     api__echo(echo, sizeof echo, json_string_value(v)),
                     n ? list : "none (start it with --tokenizer NAME=DIR, or --model NAME=DIR of "
                                "a folder with its tokenizer files)");
}

/* Only reached when the server has none: the rule's step 3 finds one else. */
int api__tokenizer_missing(const char *field, api_err *e) {
    return api__fail(e, API_E_INVALID_ARGUMENT, field,
                     "%s needs a tokenizer and this server has none: start it with "
                     "--tokenizer NAME=DIR (a folder with tokenizer.json, or vocab.json + "
                     "merges.txt), or --model NAME=DIR of a folder that has them; or give ids",
                     field);
}

int api__tokenizer_pick(const json_t *root, const api_limits *lim, const api_model *model,
                        int required, const char *field, const api_tokenizer **out, api_err *e) {
    const json_t *v = api__field(root, "tokenizer");
    *out = NULL;
    if (v) return api__tokenizer_named(v, lim, out, e);
    if (model && model->bpe) *out = &model->tok;
    else *out = api__tokenizer_default(lim);
    if (*out || !required) return 0;
    return api__tokenizer_missing(field, e);
}

void api__tokens_piece_json(api_buf *b, const api_bpe *bpe, int32_t id) {
    const char *s;
    size_t n;
    api__gen_token_bytes(bpe, id, &s, &n);
    if (api__gen_utf8_valid(s, n)) {
        api__buf_json_stringn(b, s, n);
        return;
    }
    api__buf_puts(b, "[");
    for (size_t i = 0; i < n; i++) api__buf_printf(b, i ? ",%u" : "%u", (unsigned char)s[i]);
    api__buf_puts(b, "]");
}
