/* request.c - a /v1/completions body into an oai_rq:
 *
 *   {"model": "gpt2", "prompt": "Every effort moves you", "max_tokens": 15,
 *    "temperature": 1.4, "top_k": 25, "seed": 123, "logprobs": 5, "n": 2,
 *    "stop": ["\n"], "echo": false, "stream": false}
 *
 * prompt: a string, an array of strings, an array of token ids, or an array
 * of such arrays (several prompts). presence_penalty and frequency_penalty
 * (OpenAI's), repetition_penalty and min_p (transformers', as vLLM and
 * llama.cpp take them) go to api__gen_read_penalties. Fields OpenAI defines
 * that change nothing at their neutral value (best_of equal to n,
 * logit_bias {}, suffix null, user) are taken; other values of them are
 * 400s. */
#include "api/openai/openai.h"
#include "api/bpe/bpe.h"
#include "api/request/request.h"
#include "api/tokens/tokens.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const fields[] = {
    "model", "prompt", "suffix", "max_tokens", "temperature", "top_p", "top_k", "n", "stream",
    "stream_options", "logprobs", "echo", "stop", "presence_penalty", "frequency_penalty",
    "best_of", "logit_bias", "user", "seed", "repetition_penalty", "min_p", NULL};

void api__oai_rq_free(oai_rq *rq) {
    for (int i = 0; i < rq->n_prompts; i++) {
        free(rq->prompt[i].ids);
        free(rq->prompt[i].text);
        api__gen_out_free(&rq->prompt[i].out);
    }
    rq->n_prompts = 0;
    api__gen_opts_free(&rq->opt);
}

static int read_model(const json_t *root, const api_limits *lim, oai_rq *rq, api_err *e) {
    const json_t *v = api__field(root, "model");
    if (v == NULL) return api__fail(e, API_E_MISSING_FIELD, "model", "model is required (GET /v1/models lists them)");
    if (!json_is_string(v)) return api__field_wrong_type(e, "model", v, "a string");
    rq->model = api__models_find(lim ? lim->models : NULL, json_string_value(v));
    if (rq->model) return 0;
    char echo[API_ECHO_MAX + 4], names[256];
    api__models_names(lim ? lim->models : NULL, names, sizeof names);
    return api__fail(e, API_E_NOT_FOUND, "model",
                     "the model \"%s\" does not exist (loaded: %s; --model NAME=FILE loads one)",
                     api__echo(echo, sizeof echo, json_string_value(v)), names);
}

/* One prompt from a string (tokenized) or an array of ids. */
static int add_prompt(oai_rq *rq, const json_t *v, const char *field, api_err *e) {
    if (rq->n_prompts == OAI_MAX_PROMPTS)
        return api__fail(e, API_E_INVALID_ARGUMENT, "prompt", "at most %d prompts", OAI_MAX_PROMPTS);
    oai_prompt *p = &rq->prompt[rq->n_prompts++];
    const api_bpe *bpe = rq->tok->bpe;
    size_t n = 0;
    if (json_is_string(v)) {
        int rc = api_bpe_encode(bpe, json_string_value(v), json_string_length(v), &p->ids, &n);
        if (rc) return api__fail(e, rc == API_BPE_ENOMEM ? API_E_OUT_OF_MEMORY : API_E_INVALID_ARGUMENT,
                                 field, "%s: %s", field, api_bpe_strerror(rc));
        p->text_len = json_string_length(v);
        p->text = strndup(json_string_value(v), p->text_len);
    } else {
        n = json_array_size(v);
        p->ids = malloc((n ? n : 1) * sizeof *p->ids);
        for (size_t i = 0; p->ids && i < n; i++) {
            const json_t *x = json_array_get(v, i);
            json_int_t id = json_is_integer(x) ? json_integer_value(x) : -1;
            if (id < 0 || id >= rq->model->cfg.vocab_size)
                return api__fail(e, API_E_INVALID_ARGUMENT, field,
                                 "%s[%zu] is not a token id in [0, %d)", field, i, rq->model->cfg.vocab_size);
            p->ids[i] = (int32_t)id;
        }
        api_buf bytes = {0}, t = {0};
        for (size_t i = 0; p->ids && i < n; i++) {
            const char *b;
            size_t k;
            api__gen_token_bytes(bpe, p->ids[i], &b, &k); /* "" for an id the tokenizer lacks */
            api__buf_put(&bytes, b, k);
        }
        api__gen_utf8(&t, bytes.data ? bytes.data : "", bytes.len);
        p->text = t.failed || bytes.failed ? NULL : t.data ? t.data : strdup("");
        p->text_len = t.len;
        if (p->text == NULL) api_buf_free(&t);
        api_buf_free(&bytes);
    }
    p->T = (int)n;
    /* before the allocation check: an empty text has no ids to allocate */
    if (n == 0)
        return api__fail(e, API_E_INVALID_ARGUMENT, field, "%s is empty: there is no token to "
                         "continue from", field);
    if (p->ids == NULL || p->text == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, field, "cannot allocate the prompt");
    if (n > (size_t)rq->model->cfg.context)
        return api__fail(e, API_E_INVALID_ARGUMENT, field,
                         "%s is %zu tokens, over the model's context of %d", field, n,
                         rq->model->cfg.context);
    return 0;
}

/* prompt: "text", ["text", ...], [id, ...] or [[id, ...], ...]. */
static int read_prompt(const json_t *root, oai_rq *rq, api_err *e) {
    const json_t *v = api__field(root, "prompt");
    if (v == NULL) return api__fail(e, API_E_MISSING_FIELD, "prompt", "prompt is required");
    if (json_is_string(v)) return add_prompt(rq, v, "prompt", e);
    if (!json_is_array(v) || json_array_size(v) == 0)
        return api__field_wrong_type(e, "prompt", v, "a string, strings, token ids or arrays of them");
    const json_t *first = json_array_get(v, 0);
    if (json_is_integer(first)) return add_prompt(rq, v, "prompt", e);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *x = json_array_get(v, i);
        char name[32];
        snprintf(name, sizeof name, "prompt[%zu]", i);
        if (!json_is_string(x) && !json_is_array(x))
            return api__field_wrong_type(e, name, x, "a string or an array of token ids");
        if (add_prompt(rq, x, name, e)) return -1;
    }
    return 0;
}

/* A field OpenAI defines that this server takes only at its neutral value. */
static int neutral(const json_t *root, const char *name, int n, api_err *e) {
    const json_t *v = api__field(root, name);
    if (v == NULL) return 0;
    int ok = 0;
    if (strcmp(name, "best_of") == 0) ok = json_is_integer(v) && json_integer_value(v) == n;
    else if (strcmp(name, "logit_bias") == 0) ok = json_is_object(v) && json_object_size(v) == 0;
    else if (strcmp(name, "suffix") == 0) ok = 0;
    if (ok) return 0;
    return api__fail(e, API_E_INVALID_ARGUMENT, name,
                     "%s is not supported here: leave it out (or at its default)", name);
}

/* n, echo, stream and stream_options, logprobs. */
static int read_shape(const json_t *root, oai_rq *rq, api_err *e) {
    rq->n = 1;
    rq->logprobs = -1;
    const json_t *so = api__field(root, "stream_options");
    if (api__field_int(root, "n", 1, OAI_MAX_N, &rq->n, e) < 0 ||
        api__field_bool(root, "echo", &rq->echo, e) < 0 ||
        api__field_bool(root, "stream", &rq->stream, e) < 0 ||
        api__field_int(root, "logprobs", 0, API_GEN_MAX_TOP, &rq->logprobs, e) < 0)
        return -1;
    if (so && !json_is_object(so)) return api__field_wrong_type(e, "stream_options", so, "an object");
    if (so && api__field_bool(so, "include_usage", &rq->include_usage, e) < 0) return -1;
    static const char *const others[] = {"best_of", "logit_bias", "suffix", NULL};
    for (int i = 0; others[i]; i++)
        if (neutral(root, others[i], rq->n, e)) return -1;
    return 0;
}

/* max_tokens, temperature (default 1, OpenAI's), top_p, top_k, seed. */
static int read_sampling(const json_t *root, const api_limits *lim, oai_rq *rq, api_err *e) {
    api_gen_opts *o = &rq->opt;
    double t = 1.0, p = 1.0;
    int k = 0;
    const json_t *tk = api__field(root, "top_k"), *seed = api__field(root, "seed");
    if (api__field_int(root, "max_tokens", 0, INT32_MAX, &o->max_new_tokens, e) < 0 ||
        api__field_number(root, "temperature", &t, e) < 0 || api__field_number(root, "top_p", &p, e) < 0)
        return -1;
    if (tk && !json_is_integer(tk)) return api__field_wrong_type(e, "top_k", tk, "an integer");
    if (tk && json_integer_value(tk) > 0) /* 0 or -1: off, as llama.cpp and vLLM take it */
        k = json_integer_value(tk) > INT32_MAX ? INT32_MAX : (int)json_integer_value(tk);
    if (!(t >= 0.0 && t <= 1e6))
        return api__fail(e, API_E_INVALID_ARGUMENT, "temperature", "temperature is %g: 0 to 2", t);
    if (!(p > 0.0 && p <= 1.0))
        return api__fail(e, API_E_INVALID_ARGUMENT, "top_p", "top_p is %g: in (0, 1]", p);
    o->sampler = (attn_sampler){.temperature = t, .top_k = k, .top_p = p};
    if (api__gen_read_penalties(root, "", o, e)) return -1;
    if (seed) {
        if (!json_is_integer(seed)) return api__field_wrong_type(e, "seed", seed, "an integer");
        o->has_seed = 1;
        o->seed = (uint64_t)json_integer_value(seed);
    }
    o->logprobs = rq->logprobs > 0 ? rq->logprobs : 0;
    o->prompt_logprobs = rq->echo && rq->logprobs >= 0;
    return api__gen_check_cap(o->max_new_tokens, lim ? lim->max_new_tokens : 0, "max_tokens", e);
}

static int read_stop(const json_t *root, oai_rq *rq, api_err *e) {
    const json_t *v = api__field(root, "stop");
    if (v == NULL) return 0;
    if (json_is_string(v)) return api__gen_add_stop(&rq->opt, json_string_value(v), json_string_length(v), "stop", e);
    if (!json_is_array(v)) return api__field_wrong_type(e, "stop", v, "a string or an array of strings");
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *x = json_array_get(v, i);
        char name[32];
        snprintf(name, sizeof name, "stop[%zu]", i);
        if (!json_is_string(x)) return api__field_wrong_type(e, name, x, "a string");
        if (api__gen_add_stop(&rq->opt, json_string_value(x), json_string_length(x), name, e)) return -1;
    }
    return 0;
}

/* The tokenizer's <|endoftext|>, where generation ends (GPT-2's 50256). */
static int eos_of(const api_bpe *bpe, int V) {
    static const char eot[] = "<|endoftext|>";
    size_t n = api_bpe_vocab_size(bpe);
    for (size_t id = n; id-- > 0;) {
        const char *b;
        size_t k;
        if (api_bpe_token_bytes(bpe, (int32_t)id, &b, &k) == 0 && k == sizeof eot - 1 &&
            memcmp(b, eot, k) == 0)
            return id < (size_t)V ? (int)id : -1;
    }
    return -1;
}

int api__oai_parse(const json_t *root, const api_limits *lim, oai_rq *rq, api_err *e) {
    api__gen_opts_init(&rq->opt);
    rq->opt.max_new_tokens = 16; /* OpenAI's default */
    const char *key = api__unknown_key(root, fields);
    if (key) {
        char echo[API_ECHO_MAX + 4];
        return api__fail(e, API_E_UNKNOWN_FIELD, api__echo(echo, sizeof echo, key),
                         "unrecognized request argument supplied: %s", echo);
    }
    if (read_model(root, lim, rq, e) ||
        api__tokenizer_pick(root, lim, rq->model, 1, "prompt", &rq->tok, e) ||
        read_prompt(root, rq, e) || read_shape(root, rq, e) || read_sampling(root, lim, rq, e) ||
        read_stop(root, rq, e))
        return -1;
    rq->opt.eos_id = eos_of(rq->tok->bpe, rq->model->cfg.vocab_size);
    for (int i = 0; i < rq->n_prompts; i++)
        if ((long)rq->prompt[i].T + rq->opt.max_new_tokens > rq->model->cfg.context)
            return api__fail(e, API_E_INVALID_ARGUMENT, "max_tokens",
                             "this model's maximum context length is %d tokens; the prompt has "
                             "%d and max_tokens asks %d more", rq->model->cfg.context,
                             rq->prompt[i].T, rq->opt.max_new_tokens);
    return 0;
}

/* ==== What chat.c shares (/v1/chat/completions) ==== */

int api__oai_read_model(const json_t *root, const api_limits *lim, const char *field, oai_rq *rq,
                        api_err *e) {
    if (read_model(root, lim, rq, e)) return -1;
    return api__tokenizer_pick(root, lim, rq->model, 1, field, &rq->tok, e);
}

int api__oai_read_options(const json_t *root, const api_limits *lim, oai_rq *rq, api_err *e) {
    if (neutral(root, "logit_bias", rq->n, e)) return -1;
    return read_sampling(root, lim, rq, e) || read_stop(root, rq, e) ? -1 : 0;
}

int api__oai_endoftext(const oai_rq *rq) { return eos_of(rq->tok->bpe, rq->model->cfg.vocab_size); }
