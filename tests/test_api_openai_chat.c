/* test_api_openai_chat.c - POST /v1/chat/completions through api_handle, on
 * folders made from tests/golden/families/smollm2_tokenizer_bf16 (its
 * weights and tokenizer.json linked, a longer context) with chat templates
 * of their own:
 *
 *   - tokenizer_config.json's chat_template as a list (its "default") and
 *     special tokens as AddedToken objects; a config that is not an object
 *     refuses the folder;
 *   - chat_template.jinja wins over tokenizer_config.json's chat_template
 *     (as in transformers), chat_template_kwargs reach the template, text
 *     parts are joined with "\n": the prompt is the ids of the text written
 *     here by hand (/tokenize), shown by usage.prompt_tokens and by the
 *     reply, equal to /v1/completions' on those ids;
 *   - the folder's eos_token ends a reply (finish_reason "stop", nothing
 *     written), and so does an id of its generation_config.json's
 *     eos_token_id list; else max_completion_tokens ("length");
 *   - the reply validates against the OpenAPI document's schema; GET
 *     /models says where each template came from, or why it failed;
 *   - every allocation of a request failing in turn gives a 503, never a
 *     crash (the program is linked with tests/support/fail_alloc.c);
 *   - min_p and the penalties give the reply /v1/completions gives on the
 *     template's ids with them, and change it;
 *   - 400s, each naming its field: a model without a chat template or with
 *     one that does not compile (its error and line), raise_exception's
 *     message, messages missing, empty, with an unknown role or an image
 *     part, top_logprobs without logprobs, an unknown field, messages in
 *     chat_template_kwargs, max_completion_tokens or max_tokens past the
 *     context, penalties and min_p out of range, logit_bias not {}.
 */
#include <check.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "api/bpe/bpe.h"
#include "support/api_call.h"
#include "support/check_main.h"
#include "support/fail_alloc.h"
#include "support/files.h"
#include "support/jschema.h"
#include "support/openapi_doc.h"
#include "support/tmpdir.h"

#define GOLDEN "tests/golden/families/smollm2_tokenizer_bf16"

/* Raises unless the first message is the user's; writes kind when given. */
static const char strict_jinja[] =
    "{%- if messages[0]['role'] != 'user' %}{{ raise_exception('Conversations must start with a user "
    "message') }}{% endif %}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "{% if kind is defined %}[{{ kind }}]{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

static api_models *g_models;
static api_limits g_lim = {.max_elements = 100000000};

/* dir/name holding text. */
static void write_file(const char *dir, const char *name, const char *text) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert(f && fputs(text, f) >= 0 && fclose(f) == 0);
}

/* A folder NAME beside the others: the golden weights and tokenizer.json,
 * config.json with a context of 256, tokenizer_config.json with template
 * (NULL: none) and eos_token (NULL: the golden's), chat_template.jinja and
 * generation_config.json when given; loaded as model NAME. */
static void make_folder(const char *name, const char *template, const char *eos, const char *jinja,
                        const char *generation_config, char *dir, size_t size) {
    char rel[1024], golden[PATH_MAX], src[PATH_MAX + 64], dst[1200];
    ck_assert(realpath(tfile_path(rel, sizeof rel, GOLDEN), golden) != NULL);
    ck_assert(ttmp_path(dir, size, name) && mkdir(dir, 0755) == 0);
    static const char *const linked[] = {"model.safetensors", "tokenizer.json"};
    for (int i = 0; i < 2; i++) {
        snprintf(src, sizeof src, "%s/%s", golden, linked[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, linked[i]);
        ck_assert(symlink(src, dst) == 0);
    }
    json_error_t je;
    snprintf(src, sizeof src, "%s/config.json", golden);
    json_t *cfg = json_load_file(src, 0, &je);
    ck_assert(cfg && json_object_set_new(cfg, "max_position_embeddings", json_integer(256)) == 0);
    snprintf(dst, sizeof dst, "%s/config.json", dir);
    ck_assert(json_dump_file(cfg, dst, 0) == 0);
    json_decref(cfg);
    snprintf(src, sizeof src, "%s/tokenizer_config.json", golden);
    json_t *tc = json_load_file(src, 0, &je);
    ck_assert(tc != NULL);
    if (template) ck_assert(json_object_set_new(tc, "chat_template", json_string(template)) == 0);
    if (eos) ck_assert(json_object_set_new(tc, "eos_token", json_string(eos)) == 0);
    snprintf(dst, sizeof dst, "%s/tokenizer_config.json", dir);
    ck_assert(json_dump_file(tc, dst, 0) == 0);
    json_decref(tc);
    if (jinja) write_file(dir, "chat_template.jinja", jinja);
    if (generation_config) write_file(dir, "generation_config.json", generation_config);
}

/* Loads dir as model name: 0, or -1 with the fault in why. */
static int load(const char *name, const char *dir, char *why, size_t size) {
    char spec[1200];
    snprintf(spec, sizeof spec, "%s=%s", name, dir);
    int rc = api_models_load(&g_models, spec, why, size);
    g_lim.models = g_models;
    return rc;
}

static void add_folder(const char *name, const char *template, const char *eos, const char *jinja,
                       const char *generation_config) {
    char dir[1024], why[512];
    make_folder(name, template, eos, jinja, generation_config, dir, sizeof dir);
    ck_assert_msg(load(name, dir, why, sizeof why) == 0, "%s", why);
}

static char *smollm2_template(void) {
    size_t n;
    char *t = tfile_read_rel("tests/chat/templates/smollm2.jinja", &n);
    ck_assert(t != NULL);
    return t;
}

static void setup(void) {
    ttmp_make();
    char *smol = smollm2_template();
    add_folder("smol", smol, NULL, NULL, NULL);
    add_folder("strict", "{{ 'not this one' }}", NULL, strict_jinja, NULL);
    add_folder("broken", "{% for m in messages %}{{ m.content | no_such_filter }}{% endfor %}", NULL, NULL, NULL);
    add_folder("plain", NULL, NULL, NULL, NULL);
    free(smol);
}

static void teardown(void) {
    api_models_free(g_models);
    g_models = NULL;
    g_lim.models = NULL;
    ttmp_remove();
}

static json_t *chat(const char *body, int status) { return tapi_call(API_EP_V1_CHAT_COMPLETIONS, body, &g_lim, status); }

/* /tokenize of text with model's tokenizer. */
static json_t *ids_of(const char *model, const char *text) {
    char *body = tapi_body(json_pack("{s:s,s:s}", "model", model, "content", text), NULL);
    json_t *j = tapi_call(API_EP_TOKENIZE, body, &g_lim, 200);
    free(body);
    json_t *ids = json_incref(json_object_get(j, "tokens"));
    json_decref(j);
    return ids;
}

/* The chat of messages (with extra members) is the completion of the ids
 * of want: the same prompt length, text and log-probabilities. */
static void same_as_text(const char *model, const char *messages, const char *extra, const char *want) {
    json_t *ids = ids_of(model, want);
    char *body = tapi_body(json_pack("{s:s,s:o,s:i,s:i,s:i}", "model", model, "prompt", ids, "max_tokens", 4,
                                     "temperature", 0, "logprobs", 0), NULL);
    json_t *c = tapi_call(API_EP_V1_COMPLETIONS, body, &g_lim, 200);
    free(body);
    char more[1024];
    snprintf(more, sizeof more, "{\"messages\": %s, \"max_completion_tokens\": 4, \"temperature\": 0, "
             "\"logprobs\": true%s%s}", messages, extra ? ", " : "", extra ? extra : "");
    body = tapi_body(json_pack("{s:s}", "model", model), more);
    json_t *r = chat(body, 200);
    free(body);
    const json_t *cu = json_object_get(c, "usage"), *ru = json_object_get(r, "usage");
    ck_assert_msg(json_equal(cu, ru), "%s: prompt_tokens %lld, want %lld", want,
                  json_integer_value(json_object_get(ru, "prompt_tokens")),
                  json_integer_value(json_object_get(cu, "prompt_tokens")));
    const json_t *cc = json_array_get(json_object_get(c, "choices"), 0);
    const json_t *rc = json_array_get(json_object_get(r, "choices"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(cc, "text")),
                     json_string_value(json_object_get(json_object_get(rc, "message"), "content")));
    const json_t *lp = json_object_get(json_object_get(cc, "logprobs"), "token_logprobs");
    const json_t *content = json_object_get(json_object_get(rc, "logprobs"), "content");
    ck_assert_uint_eq(json_array_size(lp), json_array_size(content));
    for (size_t i = 0; i < json_array_size(lp); i++)
        ck_assert(json_number_value(json_array_get(lp, i)) ==
                  json_number_value(json_object_get(json_array_get(content, i), "logprob")));
    json_decref(c);
    json_decref(r);
}

#define SMOL_HI "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging " \
                "Face<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"

/* The reply of smol to "hi" with the sampling fields opts: chat's (its
 * content) and /v1/completions' on the ids of the template's text must be
 * the same text; it is returned (the caller frees it). */
static char *chat_reply(const char *opts) {
    json_t *ids = ids_of("smol", SMOL_HI);
    char *body = tapi_body(json_pack("{s:s,s:o,s:i}", "model", "smol", "prompt", ids, "max_tokens", 10), opts);
    json_t *c = tapi_call(API_EP_V1_COMPLETIONS, body, &g_lim, 200);
    free(body);
    char more[1024];
    snprintf(more, sizeof more, "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], "
             "\"max_completion_tokens\": 10, %s", opts + 1);
    body = tapi_body(json_pack("{s:s}", "model", "smol"), more);
    json_t *r = chat(body, 200);
    free(body);
    const char *text = json_string_value(json_object_get(json_array_get(json_object_get(c, "choices"), 0), "text"));
    const char *content = json_string_value(json_object_get(
        json_object_get(json_array_get(json_object_get(r, "choices"), 0), "message"), "content"));
    ck_assert_msg(text && content && strcmp(text, content) == 0, "%s: completion \"%s\", chat \"%s\"", opts,
                  text ? text : "", content ? content : "");
    char *out = strdup(text);
    json_decref(c);
    json_decref(r);
    return out;
}

/* min_p and the penalties reach the sampler as /v1/completions' do (whose
 * tokens test_api_openai checks against PyTorch), and change the reply. */
START_TEST(penalties_as_completions) {
    char *plain = chat_reply("{\"temperature\": 0}");
    char *pen = chat_reply("{\"temperature\": 0, \"repetition_penalty\": 2.0, \"frequency_penalty\": 1.5, "
                           "\"presence_penalty\": 1.0}");
    ck_assert_msg(strcmp(plain, pen) != 0, "the penalties changed nothing: \"%s\"", pen);
    char *drawn = chat_reply("{\"temperature\": 1.2, \"seed\": 11}");
    char *cut = chat_reply("{\"temperature\": 1.2, \"seed\": 11, \"min_p\": 0.5}");
    ck_assert_msg(strcmp(drawn, cut) != 0, "min_p changed nothing: \"%s\"", cut);
    free(plain), free(pen), free(drawn), free(cut);
}
END_TEST

START_TEST(prompt_is_the_template_text) {
    same_as_text("strict", "[{\"role\": \"user\", \"content\": \"hi\"}]", "\"chat_template_kwargs\": {\"kind\": \"x\"}",
                 "<|im_start|>user\nhi[x]<|im_end|>\n<|im_start|>assistant\n");
    same_as_text("strict", "[{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"a\"}, "
                 "{\"type\": \"text\", \"text\": \"b c\"}]}, {\"role\": \"assistant\", \"content\": \"ok\"}]", NULL,
                 "<|im_start|>user\na\nb c<|im_end|>\n<|im_start|>assistant\nok<|im_end|>\n<|im_start|>assistant\n");
    /* SmolLM2's own adds its default system message */
    same_as_text("smol", "[{\"role\": \"user\", \"content\": \"hi\"}]", NULL, SMOL_HI);
}
END_TEST

START_TEST(folder_forms) {
    /* tokenizer_config.json's chat_template as a list (its "default"), special
     * tokens as AddedToken objects */
    char dir[1024], why[512];
    make_folder("listed", NULL, NULL, NULL, NULL, dir, sizeof dir);
    write_file(dir, "tokenizer_config.json",
               "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"no\"}, {\"name\": \"default\", "
               "\"template\": \"{{ bos_token }}|{% for m in messages %}{{ m.content }}{% endfor %}|{{ eos_token }}\"}], "
               "\"bos_token\": {\"content\": \"<|im_start|>\", \"special\": true}, \"eos_token\": "
               "{\"content\": \"<|im_end|>\", \"lstrip\": false}}");
    ck_assert_msg(load("listed", dir, why, sizeof why) == 0, "%s", why);
    same_as_text("listed", "[{\"role\": \"user\", \"content\": \"hi there\"}]", NULL,
                 "<|im_start|>|hi there|<|im_end|>");
    /* a tokenizer_config.json that is not an object: the folder is refused */
    make_folder("bad_config", NULL, NULL, NULL, NULL, dir, sizeof dir);
    write_file(dir, "tokenizer_config.json", "[1, 2]");
    ck_assert_int_eq(load("bad_config", dir, why, sizeof why), -1);
    ck_assert_msg(strstr(why, "tokenizer_config.json") != NULL, "%s", why);
}
END_TEST

START_TEST(eos_token_ends_the_reply) {
    /* the first token greedy writes, then a folder whose eos_token it is */
    static const char body[] = "{\"model\": \"%s\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi there\"}], "
                               "\"max_completion_tokens\": 3, \"temperature\": 0, \"logprobs\": true}";
    char text[512];
    snprintf(text, sizeof text, body, "smol");
    json_t *r = chat(text, 200);
    const json_t *c = json_array_get(json_object_get(r, "choices"), 0);
    ck_assert_str_eq(json_string_value(json_object_get(c, "finish_reason")), "length");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "usage"), "completion_tokens")), 3);
    const char *first = json_string_value(json_object_get(
        json_array_get(json_object_get(json_object_get(c, "logprobs"), "content"), 0), "token"));
    ck_assert_msg(first && strspn(first, "0123456789abcdefghijklmnopqrstuvwxyz") == strlen(first),
                  "the first token \"%s\" has no plain spelling", first ? first : "");
    char rel[1024], why[256];
    api_bpe *tok = NULL;
    ck_assert(api_bpe_load(tfile_path(rel, sizeof rel, GOLDEN), &tok, why, sizeof why) == 0);
    int32_t id = api_bpe_token_id(tok, first, strlen(first)); /* the vocabulary's, as eos_token finds it */
    api_bpe_free(tok);
    ck_assert(id >= 0);
    char *smol = smollm2_template(), gen[128];
    add_folder("eos", smol, first, NULL, NULL);
    snprintf(gen, sizeof gen, "{\"eos_token_id\": [7, %d]}", (int)id);
    add_folder("gen_eos", smol, NULL, NULL, gen);
    free(smol);
    json_decref(r);
    static const char *const stopped[] = {"eos", "gen_eos"};
    for (int i = 0; i < 2; i++) {
        snprintf(text, sizeof text, body, stopped[i]);
        r = chat(text, 200);
        c = json_array_get(json_object_get(r, "choices"), 0);
        ck_assert_str_eq(json_string_value(json_object_get(c, "finish_reason")), "stop");
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(c, "message"), "content")), "");
        ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "usage"), "completion_tokens")), 0);
        json_decref(r);
    }
}
END_TEST

START_TEST(reply_matches_the_document) {
    json_t *doc = openapi_doc();
    const json_t *s = jschema_resolve(doc, "#/components/schemas/ChatCompletion");
    ck_assert(s != NULL);
    json_t *r = chat("{\"model\": \"smol\", \"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"n\": 2, "
                     "\"seed\": 3, \"max_tokens\": 5, \"logprobs\": true, \"top_logprobs\": 3}", 200);
    jschema_error err;
    ck_assert_msg(jschema_validate(doc, s, r, &err) == JSCHEMA_VALID, "%s: %s", err.path, err.message);
    ck_assert_uint_eq(json_array_size(json_object_get(r, "choices")), 2);
    ck_assert(strncmp(json_string_value(json_object_get(r, "id")), "chatcmpl-", 9) == 0);
    /* the schema is not a test that cannot fail */
    json_object_set_new(r, "object", json_string("text_completion"));
    ck_assert(jschema_validate(doc, s, r, NULL) == JSCHEMA_INVALID);
    json_decref(r);
    json_decref(doc);
}
END_TEST

/* Every allocation of a chat request fails in turn (as test_api_chaos):
 * each time a well-formed 503, never a 200 or a crash (nor, under make
 * asan, a leak). Whole with n = 2 and logprobs, and streamed (its seed
 * writes a token of 32 spaces, whose text once looked invalid when the
 * allocation of the UTF-8 check failed). */
START_TEST(each_allocation_fails) {
    static const char *const bodies[] = {
        "{\"model\": \"smol\", \"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, "
        "{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"hi\"}]}], \"max_tokens\": 3, "
        "\"n\": 2, \"seed\": 1, \"logprobs\": true, \"top_logprobs\": 2, \"stop\": [\"x\"]}",
        "{\"model\": \"strict\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 2, "
        "\"stream\": true, \"logprobs\": true, \"seed\": 6}"}; /* writes a token of 32 spaces */
    api_limits lim = g_lim;
    for (int i = 0; i < 2; i++) {
        api_reply reply;
        fail_alloc_count();
        int want = api_handle(API_EP_V1_CHAT_COMPLETIONS, bodies[i], strlen(bodies[i]), &lim, &reply);
        long total = fail_alloc_stop();
        api_reply_free(&reply);
        ck_assert_int_eq(want, 200);
        ck_assert_msg(total > 20, "request %d: %ld allocations", i, total);
        for (long k = 0; k < total; k++) {
            fail_alloc_at(k);
            int status = api_handle(API_EP_V1_CHAT_COMPLETIONS, bodies[i], strlen(bodies[i]), &lim, &reply);
            fail_alloc_stop();
            ck_assert_msg(status == 503, "request %d: status %d although allocation %ld of %ld failed: %.300s", i,
                          status, k, total, reply.body.data ? reply.body.data : "");
            api_reply_free(&reply);
        }
        printf("chat: request %d survived each of its %ld allocations failing\n", i, total);
    }
}
END_TEST

static void expect(const char *body, int status, const char *field, const char *words) {
    tapi_reply r = tapi_handle(API_EP_V1_CHAT_COMPLETIONS, body, &g_lim);
    const json_t *e = json_object_get(r.j, "error");
    ck_assert_msg(r.status == status, "%s: status %d: %s", body, r.status, r.text);
    ck_assert_msg(json_string_value(json_object_get(e, "field")) &&
                      strcmp(json_string_value(json_object_get(e, "field")), field) == 0,
                  "%s: %s", body, r.text);
    ck_assert_msg(!words || strstr(json_string_value(json_object_get(e, "message")), words), "%s: %s", body, r.text);
    tapi_reply_free(&r);
}

#define USER "\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]"

/* GET /models says where each model's template came from, or why it failed. */
static void check_listed(const json_t *models, const char *name, const char *source, const char *error) {
    const json_t *ms = json_object_get(models, "models");
    for (size_t i = 0; i < json_array_size(ms); i++) {
        const json_t *m = json_array_get(ms, i), *ct = json_object_get(m, "chat_template");
        if (strcmp(json_string_value(json_object_get(m, "name")), name) != 0) continue;
        if (source == NULL) {
            ck_assert_msg(json_is_null(ct), "%s has a chat template", name);
            return;
        }
        ck_assert_str_eq(json_string_value(json_object_get(ct, "source")), source);
        const char *got = json_string_value(json_object_get(ct, "error"));
        ck_assert_msg(error ? got && strstr(got, error) : json_is_null(json_object_get(ct, "error")), "%s: %s",
                      name, got ? got : "null");
        return;
    }
    ck_abort_msg("%s is not listed", name);
}

START_TEST(models_list_the_templates) {
    api_buf b = {0};
    ck_assert(api_models_json(&g_lim, &b) == 0);
    json_error_t je;
    json_t *j = json_loadb(b.data, b.len, 0, &je);
    ck_assert_msg(j != NULL, "%s", je.text);
    check_listed(j, "smol", "tokenizer_config.json's chat_template", NULL);
    check_listed(j, "strict", "chat_template.jinja", NULL);
    check_listed(j, "broken", "tokenizer_config.json's chat_template", "no_such_filter");
    check_listed(j, "plain", NULL, NULL);
    json_decref(j);
    api_buf_free(&b);
}
END_TEST

START_TEST(errors_name_their_field) {
    expect("{\"model\": \"plain\", " USER "}", 400, "model", "has no chat template");
    expect("{\"model\": \"broken\", " USER "}", 400, "model", "no_such_filter");
    expect("{\"model\": \"broken\", " USER "}", 400, "model", "line 1");
    expect("{\"model\": \"strict\", \"messages\": [{\"role\": \"system\", \"content\": \"x\"}]}", 400, "messages",
           "Conversations must start with a user message");
    expect("{\"model\": \"smol\"}", 400, "messages", NULL);
    expect("{\"model\": \"smol\", \"messages\": []}", 400, "messages", NULL);
    expect("{\"model\": \"smol\", \"messages\": [{\"role\": \"wizard\", \"content\": \"x\"}]}", 400,
           "messages[0].role", "wizard");
    expect("{\"model\": \"smol\", \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image_url\"}]}]}",
           400, "messages[0].content", "text");
    expect("{\"model\": \"smol\", " USER ", \"top_logprobs\": 2}", 400, "top_logprobs", "logprobs");
    expect("{\"model\": \"smol\", " USER ", \"echo\": true}", 400, "echo", NULL);
    expect("{\"model\": \"smol\", " USER ", \"chat_template_kwargs\": {\"messages\": []}}", 400,
           "chat_template_kwargs", NULL);
    expect("{\"model\": \"smol\", " USER ", \"max_completion_tokens\": 1000}", 400, "max_completion_tokens",
           "context");
    expect("{\"model\": \"smol\", " USER ", \"max_tokens\": 1000}", 400, "max_tokens", "context");
    expect("{\"model\": \"nope\", " USER "}", 404, "model", NULL);
    expect("{\"model\": \"smol\", " USER ", \"presence_penalty\": 2.5}", 400, "presence_penalty", "[-2, 2]");
    expect("{\"model\": \"smol\", " USER ", \"frequency_penalty\": -3}", 400, "frequency_penalty", "[-2, 2]");
    expect("{\"model\": \"smol\", " USER ", \"frequency_penalty\": true}", 400, "frequency_penalty", NULL);
    expect("{\"model\": \"smol\", " USER ", \"repetition_penalty\": 0}", 400, "repetition_penalty", "(0,");
    expect("{\"model\": \"smol\", " USER ", \"min_p\": 1.01}", 400, "min_p", "[0, 1]");
    expect("{\"model\": \"smol\", " USER ", \"logit_bias\": {\"1\": 5}}", 400, "logit_bias", NULL);
}
END_TEST

static Suite *chat_suite(void) {
    const TTest *tests[] = {prompt_is_the_template_text, folder_forms, eos_token_ends_the_reply, reply_matches_the_document,
                            errors_name_their_field, each_allocation_fails,
                            models_list_the_templates, penalties_as_completions, NULL};
    return suite_with("openai_chat", "chat", 60, tests, setup, teardown);
}

const test_program TEST_PROGRAM = {.suites = {chat_suite}};
