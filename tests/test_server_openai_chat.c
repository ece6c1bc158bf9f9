/* test_server_openai_chat.c - POST /v1/chat/completions driven by OpenAI's
 * official Node client, unchanged (tests/clients/openai_chat_client.mjs),
 * against the server of this build with a SmolLM2-shaped folder that has
 * tokenizer.json (tests/golden/families/smollm2_tokenizer_bf16, copied to a
 * temporary folder with SmolLM2's chat_template from tests/chat/templates
 * added to its tokenizer_config.json and a longer context):
 *
 *   - the prompt: npm @huggingface/jinja renders each conversation, the
 *     server's /tokenize reads that text into ids, and the chat's reply
 *     equals /v1/completions' on those ids (the same text, the same
 *     log-probabilities to the bit, usage.prompt_tokens the ids' count), so
 *     the server's rendering and tokenizing give those ids: greedy, and
 *     n = 2 sampled from one seed with top_p;
 *   - chat.completions.create streamed: the client's own stream reader puts
 *     together the same content, logprobs and finish_reason, each choice's
 *     first chunk {"role": "assistant", "content": ""}, and the usage;
 *   - logprobs.content in the chat shape: token, logprob, bytes (the
 *     token's UTF-8 bytes), top_logprobs (2, the first the chosen token's
 *     when greedy);
 *   - a model whose folder has no chat template is the client's 400
 *     (BadRequestError) saying so.
 */
#include <check.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/check_main.h"
#include "support/files.h"
#include "support/npm.h"
#include "support/procs.h"
#include "support/server_harness.h"
#include "support/tmpdir.h"

#define GOLDEN "tests/golden/families/smollm2_tokenizer_bf16"

static const char *const npm_specs[] = {"openai@6.49.0", "@huggingface/jinja@0.5.11", NULL};

/* The folder with the chat template: config.json with a longer context,
 * tokenizer_config.json with SmolLM2's chat_template, the weights and
 * tokenizer.json linked. */
static void make_folder(char *dir, size_t size) {
    char src[1024], dst[1200], tpl[1024];
    ttmp_path(dir, size, "smol");
    ck_assert(mkdir(dir, 0755) == 0);
    static const char *const linked[] = {"model.safetensors", "tokenizer.json"};
    char rel[1024], golden[PATH_MAX];
    ck_assert(realpath(tfile_path(rel, sizeof rel, GOLDEN), golden) != NULL); /* links need it whole */
    for (int i = 0; i < 2; i++) {
        snprintf(src, sizeof src, "%.900s/%s", golden, linked[i]);
        snprintf(dst, sizeof dst, "%s/%s", dir, linked[i]);
        ck_assert(symlink(src, dst) == 0);
    }
    json_error_t je;
    tfile_path(src, sizeof src, GOLDEN "/config.json");
    json_t *cfg = json_load_file(src, 0, &je);
    ck_assert(cfg && json_object_set_new(cfg, "max_position_embeddings", json_integer(256)) == 0);
    snprintf(dst, sizeof dst, "%s/config.json", dir);
    ck_assert(json_dump_file(cfg, dst, JSON_INDENT(1)) == 0);
    json_decref(cfg);
    size_t n = 0;
    char *t = tfile_read(tfile_path(tpl, sizeof tpl, "tests/chat/templates/smollm2.jinja"), &n);
    tfile_path(src, sizeof src, GOLDEN "/tokenizer_config.json");
    json_t *tc = json_load_file(src, 0, &je);
    ck_assert(t && tc && json_object_set_new(tc, "chat_template", json_stringn(t, n)) == 0);
    snprintf(dst, sizeof dst, "%s/tokenizer_config.json", dir);
    ck_assert(json_dump_file(tc, dst, JSON_INDENT(1)) == 0);
    json_decref(tc);
    free(t);
}

/* Runs the client against a server of this build; its report, parsed. */
static json_t *run_client(void) {
    char prefix[1024], dir[512], plain[1024], smol[1200], plainarg[1200];
    ck_assert_msg(npm_ensure("build/npm/openai-chat", npm_specs, prefix, sizeof prefix),
                  "npm could not install openai and @huggingface/jinja");
    ttmp_make();
    make_folder(dir, sizeof dir);
    snprintf(smol, sizeof smol, "--model=smol=%s", dir);
    snprintf(plainarg, sizeof plainarg, "--model=plain=%s", tfile_path(plain, sizeof plain, GOLDEN));
    const char *args[] = {smol, plainarg, NULL};
    srvt_server s;
    srvt_must_start(&s, args);
    char script[1024], cmd[4096];
    tfile_path(script, sizeof script, "tests/clients/openai_chat_client.mjs");
    snprintf(cmd, sizeof cmd, "OPENAI_DIR='%s/node_modules' timeout 120 node '%s' '%s' '%s'", prefix, script,
             s.base, dir);
    int status = 0;
    char *out = procs_capture(cmd, &status);
    ck_assert_msg(status == 0 && out, "the client failed (status %d): %s", status, out ? out : "");
    json_error_t je;
    json_t *r = json_loads(out, 0, &je);
    ck_assert_msg(r != NULL, "the client's report is not JSON (%s): %.500s", je.text, out);
    ck_assert_msg(json_object_get(r, "error") == NULL, "the client threw: %s",
                  json_string_value(json_object_get(r, "error")));
    free(out);
    srvt_must_stop(&s);
    return r;
}

static const json_t *at(const json_t *v, const char *path) {
    char key[64];
    while (v && *path) {
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof key, "%.*s", (int)n, path);
        v = json_is_array(v) ? json_array_get(v, (size_t)atoi(key)) : json_object_get(v, key);
        path += n + (path[n] == '.');
    }
    return v;
}

static const char *str(const json_t *v, const char *path) {
    const char *s = json_string_value(at(v, path));
    return s ? s : "(none)";
}

/* One chat logprobs entry: its bytes are the token's own when it is text,
 * top_logprobs has 2 entries with bytes. */
static void check_entry(const json_t *t, const char *what) {
    const json_t *bytes = json_object_get(t, "bytes"), *top = json_object_get(t, "top_logprobs");
    const char *tok = json_string_value(json_object_get(t, "token"));
    ck_assert_msg(tok && json_is_number(json_object_get(t, "logprob")) && json_is_array(bytes), "%s", what);
    if (strncmp(tok, "bytes:", 6) != 0) {
        ck_assert_uint_eq(json_array_size(bytes), strlen(tok));
        for (size_t i = 0; i < strlen(tok); i++)
            ck_assert_int_eq(json_integer_value(json_array_get(bytes, i)), (unsigned char)tok[i]);
    }
    ck_assert_msg(json_array_size(top) == 2, "%s: %zu top_logprobs", what, json_array_size(top));
    for (size_t i = 0; i < 2; i++) ck_assert(json_is_array(json_object_get(json_array_get(top, i), "bytes")));
}

/* Choice b of one ask: the chat's whole reply and its stream against the
 * completion on the rendered ids. */
static void check_choice(const json_t *k, int b, const char *what) {
    char p[64], q[64];
    const json_t *comp = at(k, "completion"), *chat = at(k, "chat"), *st = at(k, "stream");
    snprintf(p, sizeof p, "choices.%d.text", b);
    snprintf(q, sizeof q, "choices.%d.message.content", b);
    ck_assert_msg(strcmp(str(comp, p), str(chat, q)) == 0, "%s choice %d: chat \"%s\", completion \"%s\"", what, b,
                  str(chat, q), str(comp, p));
    snprintf(q, sizeof q, "choices.%d.content", b);
    ck_assert_msg(strcmp(str(comp, p), str(st, q)) == 0, "%s choice %d streamed: \"%s\"", what, b, str(st, q));
    snprintf(p, sizeof p, "choices.%d.logprobs.token_logprobs", b);
    snprintf(q, sizeof q, "choices.%d.logprobs.content", b);
    const json_t *want = at(comp, p), *got = at(chat, q);
    snprintf(q, sizeof q, "choices.%d.logprobs", b);
    const json_t *streamed = at(st, q);
    ck_assert_msg(json_array_size(want) > 0 && json_array_size(got) == json_array_size(want) &&
                      json_array_size(streamed) == json_array_size(want), "%s choice %d: logprobs", what, b);
    for (size_t i = 0; i < json_array_size(want); i++) {
        double w = json_number_value(json_array_get(want, i));
        ck_assert_msg(json_number_value(at(json_array_get(got, i), "logprob")) == w, "%s: logprob %zu", what, i);
        ck_assert(json_equal(json_array_get(got, i), json_array_get(streamed, i)));
        check_entry(json_array_get(got, i), what);
    }
    snprintf(p, sizeof p, "choices.%d.finish_reason", b);
    ck_assert_str_eq(str(comp, p), str(chat, p));
    ck_assert_str_eq(str(comp, p), str(st, p));
    snprintf(p, sizeof p, "choices.%d.roles", b);
    ck_assert_msg(json_array_size(at(st, p)) == 1 && strcmp(str(at(st, p), "0"), "assistant") == 0,
                  "%s: one role chunk", what);
    snprintf(p, sizeof p, "choices.%d.first.content", b);
    ck_assert_str_eq(str(st, p), "");
    snprintf(p, sizeof p, "choices.%d.message.role", b);
    ck_assert_str_eq(str(chat, p), "assistant");
}

START_TEST(official_client_chat) {
    json_t *r = run_client();
    const char *name;
    json_t *c;
    int cases = 0;
    json_object_foreach(json_object_get(r, "cases"), name, c) {
        size_t T = json_array_size(json_object_get(c, "ids"));
        ck_assert_msg(T > 8, "%s: %zu ids", name, T);
        static const char *const kinds[] = {"greedy", "sampled"};
        for (int k = 0; k < 2; k++) {
            const json_t *kk = json_object_get(c, kinds[k]);
            char what[96];
            snprintf(what, sizeof what, "%s %s", name, kinds[k]);
            ck_assert_str_eq(str(kk, "chat.object"), "chat.completion");
            ck_assert_int_eq(json_integer_value(at(kk, "chat.usage.prompt_tokens")), (json_int_t)T);
            ck_assert_msg(json_equal(at(kk, "chat.usage"), at(kk, "completion.usage")), "%s usage", what);
            ck_assert_msg(json_equal(at(kk, "chat.usage"), at(kk, "stream.usage")), "%s streamed usage", what);
            int n = (int)json_array_size(at(kk, "chat.choices"));
            ck_assert_int_eq(n, k ? 2 : 1);
            ck_assert_int_eq(json_array_size(at(kk, "stream.choices")), (size_t)n);
            for (int b = 0; b < n; b++) check_choice(kk, b, what);
        }
        cases++;
    }
    ck_assert_int_eq(cases, 4);
    /* greedy: the chosen token is the first of its top_logprobs */
    const json_t *e = at(r, "cases.one.greedy.chat.choices.0.logprobs.content.0");
    ck_assert_str_eq(str(e, "token"), str(e, "top_logprobs.0.token"));
    ck_assert_str_eq(str(r, "cases.parts.text") + strlen(str(r, "cases.parts.text")) -
                         strlen("<|im_start|>assistant\n"), "<|im_start|>assistant\n");
    ck_assert_int_eq(json_integer_value(at(r, "untemplated.status")), 400);
    ck_assert_str_eq(str(r, "untemplated.name"), "BadRequestError");
    ck_assert_msg(strstr(str(r, "untemplated.message"), "no chat template"), "%s", str(r, "untemplated.message"));
    printf("openai %s: chat.completions.create on 4 conversations rendered by @huggingface/jinja, whole and "
           "streamed, equal to /v1/completions on their ids\n", str(r, "version"));
    json_decref(r);
}
END_TEST

static Suite *openai_chat_suite(void) {
    const TTest *tests[] = {official_client_chat, NULL};
    return suite_with("openai_chat", "client", 600, tests, NULL, ttmp_remove);
}

const test_program TEST_PROGRAM = {.suites = {openai_chat_suite}};
