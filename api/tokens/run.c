/* run.c - POST /tokenize and POST /detokenize, as llama.cpp's server names
 * them (one kind, api__tokens_kind, for both endpoints):
 *
 *   POST /tokenize   {"content": "Hello, I am", "with_pieces": true}
 *     -> {"tokens": [{"id": 15496, "piece": "Hello"}, ...]}   ({"tokens": [15496, ...]}
 *        without with_pieces; a piece that is not valid UTF-8 on its own, a
 *        part of a character, comes as the list of its bytes)
 *   POST /detokenize {"tokens": [15496, 11, 314, 716]}  -> {"content": "Hello, I am"}
 *
 * "tokenizer" names a loaded tokenizer, "model" a loaded model (its
 * tokenizer); else the server's default (pick.c). add_special (false) puts
 * the folder's template around the text (BOS for Llama and Gemma; GPT-2's
 * adds nothing); parse_special (true) finds a tokenizer.json's special
 * tokens typed in the text, false reads them as text (vocab.json's
 * <|endoftext|> is always plain text, as in OpenAI's encoder.py). */
#include "api/tokens/tokens.h"
#include "api/bpe/bpe.h"
#include "api/generate/generate.h"
#include "api/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const api_tokenizer *tok;
    int detokenize, with_pieces;
    unsigned flags;         /* /tokenize: api_bpe_encode_ex's, from add_special and parse_special */
    char *content;          /* /tokenize: the text (copied: the tree is freed first) */
    size_t len;
    int32_t *ids;           /* /tokenize's result, or /detokenize's input */
    size_t n;
    api_buf out;
    api_item item;
} tokens_state;

static const char *const tokenize_fields[] = {"content", "with_pieces", "add_special",
                                              "parse_special", "model", "tokenizer", NULL};
static const char *const detokenize_fields[] = {"tokens", "model", "tokenizer", NULL};

static int check_fields(const json_t *root, const char *const *fields, const char *path, api_err *e) {
    const char *key = api__unknown_key(root, fields);
    if (key == NULL) return 0;
    char echo[API_ECHO_MAX + 4];
    api__echo(echo, sizeof echo, key);
    return api__fail(e, API_E_UNKNOWN_FIELD, echo, "unknown field \"%s\" for %s", echo, path);
}

/* "model": a loaded model, whose tokenizer it means. */
static int read_model(const json_t *root, const api_limits *lim, const api_model **m, api_err *e) {
    const json_t *v = api__field(root, "model");
    *m = NULL;
    if (v == NULL) return 0;
    if (!json_is_string(v)) return api__field_wrong_type(e, "model", v, "a string");
    *m = api__models_find(lim ? lim->models : NULL, json_string_value(v));
    if (*m) return 0;
    char echo[API_ECHO_MAX + 4], names[256];
    api__models_names(lim ? lim->models : NULL, names, sizeof names);
    return api__fail(e, API_E_INVALID_ARGUMENT, "model", "model \"%s\" is not loaded (loaded: %s)",
                     api__echo(echo, sizeof echo, json_string_value(v)), names);
}

static int read_ids(const json_t *root, tokens_state *s, api_err *e) {
    const json_t *v = api__field(root, "tokens");
    if (v == NULL) return api__fail(e, API_E_MISSING_FIELD, "tokens", "tokens is required: [id, ...]");
    if (!json_is_array(v)) return api__field_wrong_type(e, "tokens", v, "an array of token ids");
    s->n = json_array_size(v);
    s->ids = malloc((s->n ? s->n : 1) * sizeof *s->ids);
    if (s->ids == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, "tokens", "cannot allocate the tokens");
    size_t V = api_bpe_vocab_size(s->tok->bpe);
    for (size_t i = 0; i < s->n; i++) {
        const json_t *x = json_array_get(v, i);
        char name[48];
        snprintf(name, sizeof name, "tokens[%zu]", i);
        if (!json_is_integer(x)) return api__field_wrong_type(e, name, x, "an integer");
        json_int_t id = json_integer_value(x);
        if (id < 0 || (size_t)id >= V)
            return api__fail(e, API_E_INVALID_ARGUMENT, name, "%s is %lld: ids are in [0, %zu)", name,
                             (long long)id, V);
        s->ids[i] = (int32_t)id;
    }
    return 0;
}

static int parse(api_job *j, const json_t *root, api_err *e) {
    tokens_state *s = j->state;
    s->detokenize = j->ep == API_EP_DETOKENIZE;
    const char *path = s->detokenize ? "/detokenize" : "/tokenize";
    const api_model *m;
    if (check_fields(root, s->detokenize ? detokenize_fields : tokenize_fields, path, e) ||
        read_model(root, j->lim, &m, e) ||
        api__tokenizer_pick(root, j->lim, m, 1, s->detokenize ? "tokens" : "content", &s->tok, e))
        return -1;
    j->fmt = (api_fmt){.format = API_FORMAT_NESTED};
    if (s->detokenize) return read_ids(root, s, e);
    int pieces = 0, add_special = 0, parse_special = 1; /* llama.cpp's defaults */
    const json_t *c = api__field(root, "content");
    if (c == NULL) return api__fail(e, API_E_MISSING_FIELD, "content", "content is required: the text");
    if (!json_is_string(c)) return api__field_wrong_type(e, "content", c, "a string");
    if (api__field_bool(root, "with_pieces", &pieces, e) < 0 ||
        api__field_bool(root, "add_special", &add_special, e) < 0 ||
        api__field_bool(root, "parse_special", &parse_special, e) < 0)
        return -1;
    s->with_pieces = pieces;
    s->flags = (add_special ? API_BPE_ADD_SPECIAL : 0) | (parse_special ? 0 : API_BPE_SPECIAL_AS_TEXT);
    s->len = json_string_length(c);
    if ((s->content = malloc(s->len + 1)) == NULL)
        return api__fail(e, API_E_OUT_OF_MEMORY, "content", "cannot copy the text");
    memcpy(s->content, json_string_value(c), s->len + 1);
    return 0;
}

/* The text's bytes bound its tokens (a token has one byte at least) and the
 * reply (a piece as bytes is at most 4 characters a byte). */
static int plan(api_job *j, api_err *e) {
    tokens_state *s = j->state;
    (void)e;
    size_t n = s->detokenize ? s->n * 16 : s->len;
    api__job_sized(j, n * 8, n, n * 4, "request", "its tokens and their text");
    return 0;
}

static int prepare(api_job *j, api_err *e) {
    (void)j;
    (void)e;
    return 0;
}

static int compute(api_job *j, api_err *e) {
    tokens_state *s = j->state;
    const api_bpe *bpe = s->tok->bpe;
    if (s->detokenize) {
        char *bytes = NULL;
        size_t n = 0;
        int rc = api_bpe_decode(bpe, s->ids, s->n, &bytes, &n);
        if (rc == API_BPE_ENOMEM) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot decode");
        if (rc) return api__fail(e, API_E_INVALID_ARGUMENT, "tokens", "tokens: %s", api_bpe_strerror(rc));
        api_buf text = {0};
        api__gen_utf8(&text, bytes, n); /* a cut character: U+FFFD, as a browser shows it */
        api__buf_json_stringn(&s->out, text.data ? text.data : "", text.len);
        if (text.failed) s->out.failed = 1;
        api_buf_free(&text);
        free(bytes);
    } else {
        int rc = api_bpe_encode_ex(bpe, s->content, s->len, s->flags, &s->ids, &s->n);
        if (rc == API_BPE_ENOMEM) return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot tokenize");
        if (rc) return api__fail(e, API_E_INVALID_ARGUMENT, "content", "content: %s", api_bpe_strerror(rc));
        api__buf_puts(&s->out, "[");
        for (size_t i = 0; i < s->n; i++) {
            if (i) api__buf_puts(&s->out, ",");
            if (!s->with_pieces) {
                api__buf_printf(&s->out, "%d", (int)s->ids[i]);
                continue;
            }
            api__buf_printf(&s->out, "{\"id\":%d,\"piece\":", (int)s->ids[i]);
            api__tokens_piece_json(&s->out, bpe, s->ids[i]);
            api__buf_puts(&s->out, "}");
        }
        api__buf_puts(&s->out, "]");
    }
    return s->out.failed ? api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply") : 0;
}

static int contents(api_job *j, api_contents *c, api_err *e) {
    tokens_state *s = j->state;
    (void)e;
    s->item = (api_item){.name = s->detokenize ? "content" : "tokens", .kind = API_ITEM_JSON,
                         .data = s->out.data};
    c->module = NULL; /* llama.cpp's objects: no "module" */
    c->item = &s->item;
    c->n = 1;
    return 0;
}

static void release(api_job *j) {
    tokens_state *s = j->state;
    free(s->content);
    free(s->ids);
    api_buf_free(&s->out);
}

API_KIND_DEFINE(api__tokens_kind, tokens_state, 1u << API_FORMAT_NESTED);
