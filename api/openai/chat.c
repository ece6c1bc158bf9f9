/* chat.c - a /v1/chat/completions body into an oai_rq:
 *
 *   {"model": "smollm2", "messages": [{"role": "system", "content": "Be brief."},
 *    {"role": "user", "content": "What is attention?"}], "max_completion_tokens": 40,
 *    "temperature": 0.7, "top_p": 0.9, "seed": 1, "n": 2, "stop": ["\n\n"],
 *    "logprobs": true, "top_logprobs": 3, "stream": true}
 *
 * The messages are rendered with the model folder's chat template (its
 * tokenizer_config.json or chat_template.jinja, api/chat/) as transformers'
 * apply_chat_template renders them: {messages, add_generation_prompt: true,
 * bos_token, eos_token, unk_token, pad_token} and chat_template_kwargs
 * (vLLM's: {"enable_thinking": false} for Qwen3). The text is then tokenized
 * without adding the folder's special tokens again (the template writes
 * them): apply_chat_template(tokenize=True) does the same. A message's
 * content is a string, null, or OpenAI's parts [{"type": "text", "text":
 * ...}] joined with "\n" (as vLLM joins them); other fields of a message
 * (name, tool_calls, tool_call_id) reach the template as they are. Without
 * max_tokens or max_completion_tokens the reply may run to the context. A
 * reply ends at the folder's eos_token (else <|endoftext|>) and at the ids
 * of its generation_config.json's eos_token_id. */
#include "api/openai/openai.h"
#include "api/bpe/bpe.h"
#include "api/chat/chat.h"
#include "api/request/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const fields[] = {
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "n",
    "stream", "stream_options", "logprobs", "top_logprobs", "stop", "seed", "presence_penalty",
    "frequency_penalty", "logit_bias", "user", "chat_template_kwargs", "repetition_penalty",
    "min_p", NULL};

static const char *const roles[] = {"system", "developer", "user", "assistant", "tool", NULL};

/* content's parts [{"type": "text", "text": ...}, ...] as one string. */
static json_t *joined_parts(const json_t *parts, const char *field, api_err *e) {
    api_buf b = {0};
    for (size_t i = 0; i < json_array_size(parts); i++) {
        const json_t *p = json_array_get(parts, i), *type = json_object_get(p, "type");
        const json_t *text = json_object_get(p, "text");
        if (!json_is_string(type) || strcmp(json_string_value(type), "text") != 0 || !json_is_string(text)) {
            api_buf_free(&b);
            api__fail(e, API_E_INVALID_ARGUMENT, field,
                      "%s[%zu] is not a text part ({\"type\": \"text\", \"text\": \"...\"}): this "
                      "server reads text only", field, i);
            return NULL;
        }
        if (i) api__buf_puts(&b, "\n");
        api__buf_put(&b, json_string_value(text), json_string_length(text));
    }
    json_t *s = b.failed ? NULL : json_stringn(b.data ? b.data : "", b.len);
    api_buf_free(&b);
    if (s == NULL) api__fail(e, API_E_OUT_OF_MEMORY, field, "cannot allocate the messages");
    return s;
}

/* messages[i] checked, and copied with its content as a string. */
static json_t *message(const json_t *m, size_t i, api_err *e) {
    char name[48], field[64];
    snprintf(name, sizeof name, "messages[%zu]", i);
    if (!json_is_object(m)) return api__field_wrong_type(e, name, m, "an object ({\"role\", \"content\"})"), NULL;
    const json_t *role = json_object_get(m, "role"), *content = json_object_get(m, "content");
    snprintf(field, sizeof field, "%s.role", name);
    if (!json_is_string(role)) return api__field_wrong_type(e, field, role, "a string"), NULL;
    int known = 0;
    for (int r = 0; roles[r]; r++) known |= strcmp(roles[r], json_string_value(role)) == 0;
    char echo[API_ECHO_MAX + 4];
    if (!known) {
        api__fail(e, API_E_INVALID_ARGUMENT, field, "%s is \"%s\": system, developer, user, assistant or tool",
                  field, api__echo(echo, sizeof echo, json_string_value(role)));
        return NULL;
    }
    snprintf(field, sizeof field, "%s.content", name);
    if (content && !json_is_string(content) && !json_is_null(content) && !json_is_array(content))
        return api__field_wrong_type(e, field, content, "a string, null or an array of text parts"), NULL;
    json_t *text = NULL;
    if (json_is_array(content) && (text = joined_parts(content, field, e)) == NULL) return NULL;
    json_t *copy = json_object(); /* not json_copy: it drops members it fails to set */
    const char *key;
    json_t *v;
    int failed = copy == NULL;
    json_object_foreach((json_t *)m, key, v) failed = failed || json_object_set(copy, key, v) != 0;
    if (!failed && (text == NULL || json_object_set_new(copy, "content", text) == 0)) return copy;
    if (failed) json_decref(text);
    json_decref(copy);
    api__fail(e, API_E_OUT_OF_MEMORY, "messages", "cannot allocate the messages");
    return NULL;
}

/* The template's variables: the messages, add_generation_prompt, the
 * folder's special tokens, chat_template_kwargs. NULL with e filled. */
static json_t *context(const json_t *root, const api_chat_folder *f, api_err *e) {
    const json_t *ms = api__field(root, "messages"), *kw = api__field(root, "chat_template_kwargs");
    if (ms == NULL) return api__fail(e, API_E_MISSING_FIELD, "messages", "messages is required"), NULL;
    if (!json_is_array(ms) || json_array_size(ms) == 0)
        return api__field_wrong_type(e, "messages", ms, "a non-empty array of messages"), NULL;
    if (kw && !json_is_object(kw)) return api__field_wrong_type(e, "chat_template_kwargs", kw, "an object"), NULL;
    json_t *c = json_object(), *list = json_array();
    if (c == NULL || list == NULL || json_object_set_new(c, "messages", list)) goto oom;
    for (size_t i = 0; i < json_array_size(ms); i++) {
        json_t *m = message(json_array_get(ms, i), i, e);
        if (m == NULL) goto fail;
        if (json_array_append_new(list, m)) goto oom;
    }
    if (json_object_update(c, f->tokens) || json_object_set_new(c, "add_generation_prompt", json_true()))
        goto oom;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)kw, key, v) {
        if (strcmp(key, "messages") == 0)
            return json_decref(c), api__fail(e, API_E_INVALID_ARGUMENT, "chat_template_kwargs",
                                             "chat_template_kwargs may not set messages"), NULL;
        if (json_object_set(c, key, v)) goto oom;
    }
    return c;
oom:
    api__fail(e, API_E_OUT_OF_MEMORY, "messages", "cannot allocate the messages");
fail:
    if (c == NULL) json_decref(list);
    json_decref(c);
    return NULL;
}

/* A render's failure as a 400 (or 503 for memory). */
static int render_failed(const oai_rq *rq, const api_chat_error *ce, api_err *e) {
    if (ce->code == API_CHAT_ENOMEM) return api__fail(e, API_E_OUT_OF_MEMORY, "messages", "cannot render the messages");
    if (ce->code == API_CHAT_EARG)
        return api__fail(e, API_E_INVALID_ARGUMENT, "chat_template_kwargs", "chat_template_kwargs: %s", ce->message);
    if (ce->code == API_CHAT_ERAISE)
        return api__fail(e, API_E_INVALID_ARGUMENT, "messages", "the chat template of model \"%s\" refused "
                         "the messages: %s", rq->model->name, ce->message);
    return api__fail(e, API_E_INVALID_ARGUMENT, "messages", "the chat template of model \"%s\" failed "
                     "(line %d): %s", rq->model->name, ce->line, ce->message);
}

/* The messages rendered and tokenized into rq's one prompt. */
static int read_messages(const json_t *root, oai_rq *rq, api_err *e) {
    const api_chat_folder *f = rq->model->chat;
    if (f == NULL || f->t == NULL)
        return api__fail(e, API_E_INVALID_ARGUMENT, "model", "the model \"%s\" has no chat template, so "
                         "it cannot take messages%s%s (a folder's tokenizer_config.json chat_template, or "
                         "chat_template.jinja, gives one); POST /v1/completions takes a prompt",
                         rq->model->name, f ? ": its template does not compile: " : "", f ? f->error : "");
    json_t *c = context(root, f, e);
    if (c == NULL) return -1;
    oai_prompt *p = &rq->prompt[rq->n_prompts++];
    api_chat_error ce;
    int rc = api__chat_render(f->t, c, NULL, &p->text, &p->text_len, &ce);
    json_decref(c);
    if (rc) return render_failed(rq, &ce, e);
    size_t n = 0;
    rc = api_bpe_encode_ex(rq->tok->bpe, p->text, p->text_len, 0, &p->ids, &n);
    if (rc) return api__fail(e, rc == API_BPE_ENOMEM ? API_E_OUT_OF_MEMORY : API_E_INVALID_ARGUMENT, "messages",
                             "the rendered messages: %s", api_bpe_strerror(rc));
    p->T = (int)(n < (size_t)INT32_MAX ? n : INT32_MAX);
    for (size_t i = 0; i < n; i++)
        if (p->ids[i] >= rq->model->cfg.vocab_size)
            return api__fail(e, API_E_INVALID_ARGUMENT, "messages", "the rendered messages hold token %d, "
                             "past the model's vocab_size %d", p->ids[i], rq->model->cfg.vocab_size);
    if (n == 0) return api__fail(e, API_E_INVALID_ARGUMENT, "messages", "the rendered messages hold no token");
    if (n >= (size_t)rq->model->cfg.context)
        return api__fail(e, API_E_INVALID_ARGUMENT, "messages", "this model's maximum context length is %d "
                         "tokens; the messages are %zu", rq->model->cfg.context, n);
    return 0;
}

/* n, stream and stream_options, logprobs (a boolean) and top_logprobs. */
static int read_shape(const json_t *root, oai_rq *rq, api_err *e) {
    int lp = 0, top = 0;
    rq->n = 1;
    const json_t *so = api__field(root, "stream_options");
    int has_top = api__field_int(root, "top_logprobs", 0, API_GEN_MAX_TOP, &top, e);
    if (api__field_int(root, "n", 1, OAI_MAX_N, &rq->n, e) < 0 ||
        api__field_bool(root, "stream", &rq->stream, e) < 0 || api__field_bool(root, "logprobs", &lp, e) < 0 ||
        has_top < 0)
        return -1;
    if (has_top && !lp)
        return api__fail(e, API_E_INVALID_ARGUMENT, "top_logprobs", "top_logprobs needs \"logprobs\": true");
    rq->logprobs = lp ? top : -1;
    if (so && !json_is_object(so)) return api__field_wrong_type(e, "stream_options", so, "an object");
    if (so && api__field_bool(so, "include_usage", &rq->include_usage, e) < 0) return -1;
    return 0;
}

/* max_completion_tokens (OpenAI's name now), or max_tokens; neither: up to
 * the context (and --max-new-tokens). */
static int read_length(const json_t *root, const api_limits *lim, oai_rq *rq, api_err *e) {
    int room = rq->model->cfg.context - rq->prompt[0].T, cap = lim ? lim->max_new_tokens : 0;
    rq->opt.max_new_tokens = cap > 0 && cap < room ? cap : room;
    if (api__oai_read_options(root, lim, rq, e)) return -1;
    int got = api__field_int(root, "max_completion_tokens", 0, INT32_MAX, &rq->opt.max_new_tokens, e);
    if (got < 0 || (got && api__gen_check_cap(rq->opt.max_new_tokens, cap, "max_completion_tokens", e))) return -1;
    if ((long)rq->prompt[0].T + rq->opt.max_new_tokens > rq->model->cfg.context)
        return api__fail(e, API_E_INVALID_ARGUMENT, got ? "max_completion_tokens" : "max_tokens",
                         "this model's maximum context length is %d tokens; the messages are %d and %s "
                         "asks %d more", rq->model->cfg.context, rq->prompt[0].T,
                         got ? "max_completion_tokens" : "max_tokens", rq->opt.max_new_tokens);
    return 0;
}

int api__oai_chat_parse(const json_t *root, const api_limits *lim, oai_rq *rq, api_err *e) {
    api__gen_opts_init(&rq->opt);
    rq->chat = 1;
    const char *key = api__unknown_key(root, fields);
    if (key) {
        char echo[API_ECHO_MAX + 4];
        return api__fail(e, API_E_UNKNOWN_FIELD, api__echo(echo, sizeof echo, key),
                         "unrecognized request argument supplied: %s", echo);
    }
    if (api__oai_read_model(root, lim, "messages", rq, e) || read_messages(root, rq, e) ||
        read_shape(root, rq, e) || read_length(root, lim, rq, e))
        return -1;
    /* the folder's eos_token ends a reply (<|im_end|>, <|eot_id|>); else <|endoftext|> */
    int32_t eos = api_bpe_eos_id(rq->tok->bpe);
    rq->opt.eos_id = eos >= 0 && eos < rq->model->cfg.vocab_size ? eos : api__oai_endoftext(rq);
    const api_chat_folder *f = rq->model->chat; /* and generation_config.json's */
    for (int i = 0; i < f->n_eos && rq->opt.n_eos_more < API_GEN_MAX_EOS; i++)
        if (f->eos[i] < rq->model->cfg.vocab_size && f->eos[i] != rq->opt.eos_id)
            rq->opt.eos_more[rq->opt.n_eos_more++] = f->eos[i];
    return 0;
}
