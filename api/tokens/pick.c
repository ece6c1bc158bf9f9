/* pick.c - which loaded tokenizer a request means (tokens.h). */
#include "api/tokens/tokens.h"
#include "api/bpe/bpe.h"
#include "api/generate/generate.h"
#include "api/request/request.h"

#include <stdio.h>
#include <string.h>

/* The tokenizer named in "tokenizer" (--tokenizer's or a model folder's);
 * else the model's own; else the only one the server has. */
int api__tokens_pick(const json_t *root, const api_limits *lim, const api_model *model,
                     int required, const char *field, const api_tokenizer **out, api_err *e) {
    size_t n = api__tokenizer_count(lim);
    const json_t *v = api__field(root, "tokenizer");
    *out = NULL;
    if (v) return api__tokenizer_named(v, lim, out, e);
    if (model && model->bpe) *out = &model->tok;
    else if (n == 1) *out = api__tokenizer_at(lim, 0);
    if (*out || !required) return 0;
    if (n == 0)
        return api__fail(e, API_E_INVALID_ARGUMENT, field,
                         "%s needs a tokenizer and this server has none: start it with "
                         "--tokenizer NAME=DIR (GPT-2's vocab.json + merges.txt)", field);
    return api__fail(e, API_E_MISSING_FIELD, "tokenizer",
                     "%s needs a tokenizer: name one of the %zu loaded in \"tokenizer\"", field, n);
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
