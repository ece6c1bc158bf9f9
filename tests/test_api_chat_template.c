/* test_api_chat_template.c - chat templates (api/chat/chat.h) against npm
 * @huggingface/jinja, the Jinja that transformers.js renders a chat_template
 * with, and against bad templates and hostile inputs.
 *
 * The reference: tests/chat/reference.js renders the same template with the
 * same context in Node (@huggingface/jinja pinned below, installed once into
 * build/npm/chat/); every case must give the same bytes, or fail on both
 * sides, with raise_exception's message when the template raised. The cases:
 *   - the chat_template of SmolLM2, Qwen2.5, Qwen3, Llama 3.2 and Gemma 3
 *     (tests/chat/templates/) with each conversation of
 *     tests/chat/conversations.json, add_generation_prompt false and true;
 *   - the same templates with random conversations made here;
 *   - tests/chat/features.jsonl: small templates, one feature of the subset
 *     each, bad ones among them.
 * strftime_now reads a fixed clock on both sides (TZ=UTC). When the npm
 * registry cannot be reached those tests fail and say so.
 *
 * The rest needs no npm: hand-written prompts, compile errors and their
 * lines, every limit (nesting, loops, output, memory, value depth) as a
 * clear error, renders from several threads, and every allocation failing
 * in turn (linked with --wrap=malloc,calloc,realloc: tests/support/fail_alloc.h). */
#include <check.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/chat/chat.h"
#include "support/check_main.h"
#include "support/fail_alloc.h"
#include "support/files.h"
#include "support/npm.h"
#include "support/procs.h"

static const char *const npm_packages[] = {"@huggingface/jinja@0.5.11", NULL};
static const char *const families[] = {"smollm2", "qwen2.5", "qwen3", "llama3.2", "gemma3"};
#define N_FAMILIES 5
#define NOW 1732665600 /* 2024-11-27 00:00:00 UTC: strftime_now's clock on both sides */

/* ==== Small helpers ==== */

static char *family_source(const char *name, size_t *len) {
    char rel[256];
    snprintf(rel, sizeof rel, "tests/chat/templates/%s.jinja", name);
    char *src = tfile_read_rel(rel, len);
    ck_assert_msg(src != NULL, "cannot read %s", rel);
    return src;
}

static api_chat_template *compile_ok(const char *src, size_t len) {
    api_chat_template *t;
    api_chat_error e;
    int rc = api__chat_compile(src, len, &t, &e);
    ck_assert_msg(rc == 0, "compile: %s (line %d, code %d)", e.message, e.line, rc);
    return t;
}

static json_t *parse_json(const char *text) {
    json_error_t je;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &je);
    ck_assert_msg(j != NULL, "bad JSON in the test: %s: %s", je.text, text);
    return j;
}

static api_chat_limits clock_limits(void) {
    api_chat_limits lim;
    api__chat_limits_default(&lim);
    lim.now = NOW;
    return lim;
}

/* Renders src with context (JSON text); returns the code, *out the text. */
static int render_text(const char *src, const char *context, const api_chat_limits *lim, char **out,
                       api_chat_error *e) {
    api_chat_template *t;
    *out = NULL;
    int rc = api__chat_compile(src, strlen(src), &t, e);
    if (rc != 0) return rc;
    json_t *ctx = parse_json(context);
    size_t len;
    rc = api__chat_render(t, ctx, lim, out, &len, e);
    json_decref(ctx);
    api__chat_free(t);
    return rc;
}

/* ==== The reference ==== */

static char g_npm[1024];

static void need_npm(void) {
    ck_assert_msg(npm_ensure("build/npm/chat", npm_packages, g_npm, sizeof g_npm),
                  "npm could not install %s into build/npm/chat (npm.c said why above)", npm_packages[0]);
}

/* Cases for one run of the reference: template sources, and per case the
 * template's index, the context and a name for messages. */
typedef struct {
    json_t *sources, *cases;
} batch;

static batch batch_new(void) { return (batch){json_array(), json_array()}; }

static size_t batch_template(batch *b, const char *src, size_t len) {
    json_array_append_new(b->sources, json_stringn(src, len));
    return json_array_size(b->sources) - 1;
}

/* Takes context's reference. */
static void batch_case(batch *b, size_t t, json_t *context, const char *name) {
    json_t *c = json_pack("{s:I, s:o, s:I, s:s}", "t", (json_int_t)t, "context", context, "now", (json_int_t)NOW,
                          "name", name);
    ck_assert(c != NULL);
    json_array_append_new(b->cases, c);
}

/* The file the reference reads: $BUILD/chat/NAME.jsonl (absolute). */
static void write_cases(const batch *b, const char *name, char *path, size_t cap) {
    const char *build = getenv("BUILD");
    char rel[512], cmd[1400];
    snprintf(rel, sizeof rel, "%s/chat", build && *build ? build : "build");
    if (rel[0] == '/') snprintf(path, cap, "%s", rel);
    else tfile_path(path, cap, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
    ck_assert_msg(system(cmd) == 0, "cannot create %s", path);
    size_t n = strlen(path);
    snprintf(path + n, cap - n, "/%s.jsonl", name);
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    char *line = json_dumps(b->sources, JSON_COMPACT | JSON_ENSURE_ASCII);
    fprintf(f, "%s\n", line);
    free(line);
    for (size_t i = 0; i < json_array_size(b->cases); i++) {
        json_t *c = json_array_get(b->cases, i);
        json_t *out = json_pack("{s:O, s:O, s:O}", "t", json_object_get(c, "t"), "context",
                                json_object_get(c, "context"), "now", json_object_get(c, "now"));
        line = json_dumps(out, JSON_COMPACT | JSON_ENSURE_ASCII);
        fprintf(f, "%s\n", line);
        free(line);
        json_decref(out);
    }
    ck_assert_int_eq(fclose(f), 0);
}

/* The reference's answers, one JSON object a case. */
static json_t *run_reference(const batch *b, const char *name) {
    need_npm();
    char path[1200], script[1024], cmd[4000];
    write_cases(b, name, path, sizeof path);
    tfile_path(script, sizeof script, "tests/chat/reference.js");
    snprintf(cmd, sizeof cmd, "TZ=UTC NODE_PATH='%s/node_modules' timeout 120 /usr/bin/node '%s' '%s'", g_npm,
             script, path);
    int st;
    char *out = procs_capture(cmd, &st);
    ck_assert_msg(out != NULL && st == 0, "%s failed (wait status %d): %.1000s", cmd, st, out ? out : "");
    json_t *answers = json_array();
    for (char *line = out, *end; *line; line = end + 1) {
        end = strchr(line, '\n');
        ck_assert_msg(end != NULL, "the reference's output ends without a newline");
        *end = '\0';
        json_array_append_new(answers, parse_json(line));
    }
    free(out);
    ck_assert_msg(json_array_size(answers) == json_array_size(b->cases), "%zu answers for %zu cases",
                  json_array_size(answers), json_array_size(b->cases));
    return answers;
}

/* Where a and b first differ, for the message. */
static void describe(char *msg, size_t cap, const char *name, const char *got, size_t got_n, const char *want,
                     size_t want_n) {
    size_t i = 0;
    while (i < got_n && i < want_n && got[i] == want[i]) i++;
    size_t from = i > 40 ? i - 40 : 0;
    json_t *g = json_stringn(got + from, (got_n - from) > 80 ? 80 : got_n - from);
    json_t *w = json_stringn(want + from, (want_n - from) > 80 ? 80 : want_n - from);
    char *gs = json_dumps(g, JSON_ENCODE_ANY), *ws = json_dumps(w, JSON_ENCODE_ANY);
    snprintf(msg, cap, "%s: differs at byte %zu of %zu (reference %zu): here %s, reference %s", name, i, got_n,
             want_n, gs ? gs : "?", ws ? ws : "?");
    free(gs);
    free(ws);
    json_decref(g);
    json_decref(w);
}

typedef struct {
    size_t cases, rendered, raised, failed, wrong;
} tally;

/* One case against its answer; 0 when they agree, else a message in msg. */
static int check_case(const char *src, size_t src_n, api_chat_template *t, int compile_rc, const api_chat_error *ce,
                      json_t *c, json_t *answer, tally *tl, char *msg, size_t cap) {
    const char *name = json_string_value(json_object_get(c, "name"));
    const json_t *text = json_object_get(answer, "text");
    const char *error = json_string_value(json_object_get(answer, "error"));
    api_chat_limits lim = clock_limits();
    api_chat_error e = *ce;
    char *out = NULL;
    size_t n = 0;
    int rc = compile_rc ? compile_rc : api__chat_render(t, json_object_get(c, "context"), &lim, &out, &n, &e);
    int ok = 1;
    if (text) {
        if (rc != 0) snprintf(msg, cap, "%s: failed here (%s) but rendered there", name, e.message), ok = 0;
        else if (n != json_string_length(text) || memcmp(out, json_string_value(text), n) != 0)
            describe(msg, cap, name, out, n, json_string_value(text), json_string_length(text)), ok = 0;
        tl->rendered += ok;
    } else {
        /* A message the template spells out is raise_exception's; and when
         * this side raised, the reference's message is the same. */
        int raised = rc == API_CHAT_ERAISE || (error && *error && memmem(src, src_n, error, strlen(error)));
        if (rc == 0) snprintf(msg, cap, "%s: rendered here but failed there (%s)", name, error), ok = 0;
        else if (raised && (rc != API_CHAT_ERAISE || strncmp(e.message, error, sizeof e.message - 1) != 0))
            snprintf(msg, cap, "%s: here code %d \"%s\", there \"%s\"", name, rc, e.message, error), ok = 0;
        tl->raised += ok && raised;
        tl->failed += ok && !raised;
    }
    free(out);
    tl->cases++;
    return ok ? 0 : -1;
}

/* Every case of b here and in the reference; fails on any difference
 * (printing the first ten). */
static tally compare(batch *b, const char *name) {
    json_t *answers = run_reference(b, name);
    size_t nt = json_array_size(b->sources);
    api_chat_template **t = calloc(nt, sizeof *t);
    api_chat_error *ce = calloc(nt, sizeof *ce);
    int *crc = calloc(nt, sizeof *crc);
    ck_assert(t && ce && crc);
    for (size_t i = 0; i < nt; i++) {
        const json_t *s = json_array_get(b->sources, i);
        crc[i] = api__chat_compile(json_string_value(s), json_string_length(s), &t[i], &ce[i]);
    }
    tally tl = {0};
    char msg[1024];
    for (size_t i = 0; i < json_array_size(b->cases); i++) {
        json_t *c = json_array_get(b->cases, i);
        size_t k = (size_t)json_integer_value(json_object_get(c, "t"));
        const json_t *s = json_array_get(b->sources, k);
        if (check_case(json_string_value(s), json_string_length(s), t[k], crc[k], &ce[k], c,
                       json_array_get(answers, i), &tl, msg, sizeof msg) != 0 && tl.wrong++ < 10)
            fprintf(stderr, "chat: %s\n", msg);
    }
    for (size_t i = 0; i < nt; i++) api__chat_free(t[i]);
    free(t);
    free(ce);
    free(crc);
    json_decref(answers);
    fprintf(stderr, "chat %s: %zu cases, %zu rendered the same, %zu raised the same message, %zu failed on both "
                    "sides, %zu differ\n", name, tl.cases, tl.rendered, tl.raised, tl.failed, tl.wrong);
    ck_assert_msg(tl.wrong == 0, "%zu of %zu cases differ from @huggingface/jinja (see above)", tl.wrong, tl.cases);
    return tl;
}

/* ==== The five families against the reference ==== */

START_TEST(test_families_match_reference) {
    char *text = tfile_read_rel("tests/chat/conversations.json", NULL);
    ck_assert(text != NULL);
    json_t *convs = parse_json(text);
    free(text);
    batch b = batch_new();
    for (int f = 0; f < N_FAMILIES; f++) {
        size_t len;
        char *src = family_source(families[f], &len);
        size_t t = batch_template(&b, src, len);
        free(src);
        for (size_t i = 0; i < json_array_size(convs); i++) {
            json_t *conv = json_array_get(convs, i);
            for (int agp = 0; agp < 2; agp++) {
                json_t *ctx = json_deep_copy(json_object_get(conv, "context"));
                json_object_set_new(ctx, "add_generation_prompt", json_boolean(agp));
                if (!json_object_get(ctx, "bos_token")) json_object_set_new(ctx, "bos_token", json_string("<s>"));
                if (!json_object_get(ctx, "eos_token")) json_object_set_new(ctx, "eos_token", json_string("</s>"));
                char name[256];
                snprintf(name, sizeof name, "%s, %s, add_generation_prompt %s", families[f],
                         json_string_value(json_object_get(conv, "name")), agp ? "true" : "false");
                batch_case(&b, t, ctx, name);
            }
        }
    }
    tally tl = compare(&b, "families");
    ck_assert_uint_eq(tl.cases, N_FAMILIES * 2 * json_array_size(convs));
    ck_assert_uint_ge(tl.rendered, tl.cases * 8 / 10);
    ck_assert_uint_ge(tl.raised, 10); /* Gemma's alternation and content type, Llama's tool calls */
    json_decref(b.sources);
    json_decref(b.cases);
    json_decref(convs);
}
END_TEST

/* A random conversation: roles mostly alternating, some tool turns, pieces
 * of text that meet every whitespace and special-token edge. */
static json_t *random_conversation(unsigned *seed) {
    static const char *const pieces[] = {"Hello",
                                         " ",
                                         "  ",
                                         "\n",
                                         "\n\n",
                                         "\t",
                                         "world",
                                         "é",
                                         "日本",
                                         "😀",
                                         "👍🏽",
                                         "\xc2\xa0",
                                         "\xe2\x80\xa8",
                                         "\xef\xbb\xbf",
                                         "<think>",
                                         "</think>",
                                         "<tool_response>",
                                         "</tool_response>",
                                         "<|im_end|>",
                                         "{{ x }}",
                                         "{%",
                                         "%}",
                                         "\\",
                                         "\"",
                                         "'",
                                         "?",
                                         "0",
                                         "-1",
                                         "true",
                                         "<start_of_turn>",
                                         "\r\n",
                                         "\xe3\x80\x80",
                                         "a\xcc\x81"};
    const size_t np = sizeof pieces / sizeof pieces[0];
    json_t *msgs = json_array(), *ctx = json_object();
    int turns = (int)(rand_r(seed) % 7), user = 1;
    if (rand_r(seed) % 3 == 0)
        json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", "system", "content", "Be kind."));
    for (int i = 0; i < turns; i++) {
        char text[512] = "";
        for (int k = (int)(rand_r(seed) % 6); k > 0; k--) strcat(text, pieces[rand_r(seed) % np]);
        const char *role = rand_r(seed) % 10 == 0 ? "tool" : user ? "user" : "assistant";
        json_t *m = json_pack("{s:s, s:s}", "role", role, "content", text);
        if (!user && rand_r(seed) % 6 == 0)
            json_object_set_new(m, "tool_calls", json_pack("[{s:{s:s, s:{s:s}}}]", "function", "name", "get_weather",
                                                           "arguments", "city", text));
        if (!user && rand_r(seed) % 8 == 0) json_object_set_new(m, "reasoning_content", json_string(text));
        json_array_append_new(msgs, m);
        if (rand_r(seed) % 8 != 0) user = !user;
    }
    json_object_set_new(ctx, "messages", msgs);
    json_object_set_new(ctx, "add_generation_prompt", json_boolean(rand_r(seed) % 2));
    json_object_set_new(ctx, "bos_token", json_string("<bos>"));
    json_object_set_new(ctx, "eos_token", json_string("<eos>"));
    if (rand_r(seed) % 3 == 0) json_object_set_new(ctx, "enable_thinking", json_boolean(rand_r(seed) % 2));
    if (rand_r(seed) % 5 == 0)
        json_object_set_new(ctx, "tools", json_pack("[{s:s, s:{s:s, s:{s:s}}}]", "type", "function", "function", "name",
                                                    "get_weather", "parameters", "type", "object"));
    return ctx;
}

START_TEST(test_random_conversations_match_reference) {
    batch b = batch_new();
    size_t t[N_FAMILIES];
    for (int f = 0; f < N_FAMILIES; f++) {
        size_t len;
        char *src = family_source(families[f], &len);
        t[f] = batch_template(&b, src, len);
        free(src);
    }
    unsigned seed = 20261127;
    for (int i = 0; i < 160; i++) {
        json_t *ctx = random_conversation(&seed);
        for (int f = 0; f < N_FAMILIES; f++) {
            char name[128];
            snprintf(name, sizeof name, "%s, random conversation %d", families[f], i);
            batch_case(&b, t[f], json_deep_copy(ctx), name);
        }
        json_decref(ctx);
    }
    tally tl = compare(&b, "random");
    ck_assert_uint_eq(tl.cases, 160 * N_FAMILIES);
    ck_assert_uint_ge(tl.rendered, tl.cases / 2);
    json_decref(b.sources);
    json_decref(b.cases);
}
END_TEST

START_TEST(test_features_match_reference) {
    char *text = tfile_read_rel("tests/chat/features.jsonl", NULL);
    ck_assert(text != NULL);
    batch b = batch_new();
    for (char *line = text, *end; *line; line = end + 1) {
        end = strchr(line, '\n');
        ck_assert(end != NULL);
        *end = '\0';
        json_t *f = parse_json(line);
        const json_t *src = json_object_get(f, "template");
        size_t t = batch_template(&b, json_string_value(src), json_string_length(src));
        batch_case(&b, t, json_incref(json_object_get(f, "context")), json_string_value(json_object_get(f, "name")));
        json_decref(f);
    }
    free(text);
    tally tl = compare(&b, "features");
    ck_assert_uint_ge(tl.cases, 80);
    ck_assert_uint_ge(tl.failed + tl.raised, 20); /* the bad ones fail on both sides */
    json_decref(b.sources);
    json_decref(b.cases);
}
END_TEST

/* Random text and statements with every whitespace control, and the
 * whitespace characters between them. */
static void random_piece(char *s, size_t cap, unsigned *seed, int depth) {
    static const char *const texts[] = {"a", "b c", " ", "  ", "\n", "\n\n", "\t", " \n ", "\r\n", "\xc2\xa0",
                                        "\xe2\x80\xa8", "\xe3\x80\x80", "\xc3\xa9", "x\n  ", "\n    ", "}", "%", "-"};
    static const char *const exprs[] = {" x ", "x", " 'v' ", " y|trim ", " loop.index if loop else 0 "};
    const char *l = rand_r(seed) % 2 ? "{%" : "{%-", *r = rand_r(seed) % 2 ? "%}" : "-%}";
    size_t n = strlen(s);
    int k = (int)(rand_r(seed) % 8), kids = depth < 2 ? (int)(rand_r(seed) % 3) : 0;
    if (k < 3 || depth >= 2) {
        snprintf(s + n, cap - n, "%s", texts[rand_r(seed) % (sizeof texts / sizeof texts[0])]);
    } else if (k == 3) {
        snprintf(s + n, cap - n, "%s%s%s", rand_r(seed) % 2 ? "{{" : "{{-", exprs[rand_r(seed) % 5],
                 rand_r(seed) % 2 ? "}}" : "-}}");
    } else if (k == 4) {
        static const char *const notes[] = {" c ", "", "-", " %} "};
        snprintf(s + n, cap - n, "%s%s%s", rand_r(seed) % 2 ? "{#" : "{#-", notes[rand_r(seed) % 4],
                 rand_r(seed) % 2 ? "#}" : "-#}");
    } else if (k == 5) {
        snprintf(s + n, cap - n, "%s set y = ' p ' %s", l, r);
    } else {
        int loop = k == 7;
        snprintf(s + n, cap - n, "%s %s %s", l, loop ? "for i in [1, 2]" : "if x", r);
        for (int i = 0; i < kids; i++) random_piece(s, cap, seed, depth + 1);
        n = strlen(s);
        snprintf(s + n, cap - n, "%s %s %s", rand_r(seed) % 2 ? "{%" : "{%-", loop ? "endfor" : "endif",
                 rand_r(seed) % 2 ? "%}" : "-%}");
    }
}

START_TEST(test_random_templates_match_reference) {
    batch b = batch_new();
    unsigned seed = 271;
    for (int i = 0; i < 1500; i++) {
        char src[4096] = "", name[64];
        for (int k = 1 + (int)(rand_r(&seed) % 8); k > 0; k--) random_piece(src, sizeof src, &seed, 0);
        size_t t = batch_template(&b, src, strlen(src));
        snprintf(name, sizeof name, "random template %d", i);
        batch_case(&b, t, json_pack("{s:s, s:s}", "x", "X", "y", " Y "), name);
    }
    tally tl = compare(&b, "templates");
    ck_assert_uint_ge(tl.rendered, 1200);
    json_decref(b.sources);
    json_decref(b.cases);
}
END_TEST

/* ==== Without the reference ==== */

/* What the families' model cards show, written out by hand. */
START_TEST(test_known_prompts) {
    static const struct {
        const char *family, *context, *want;
    } cases[] = {
        {"smollm2", "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"add_generation_prompt\": true}",
         "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
         "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
        {"qwen2.5", "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"add_generation_prompt\": true}",
         "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
         "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
        {"qwen3", "{\"messages\": [{\"role\": \"user\", \"content\": \"Hi\"}], \"add_generation_prompt\": true, "
                  "\"enable_thinking\": false}",
         "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
        {"llama3.2", "{\"messages\": [{\"role\": \"user\", \"content\": \" Hi \"}], \"add_generation_prompt\": true, "
                     "\"bos_token\": \"<|begin_of_text|>\"}",
         "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
         "Today Date: 27 Nov 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
         "<|start_header_id|>assistant<|end_header_id|>\n\n"},
        {"gemma3", "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", "
                   "\"content\": \"Hi\"}], \"add_generation_prompt\": true, \"bos_token\": \"<bos>\"}",
         "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n"},
    };
    api_chat_limits lim = clock_limits();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        char *src = family_source(cases[i].family, &len), *out;
        api_chat_error e;
        int rc = render_text(src, cases[i].context, &lim, &out, &e);
        ck_assert_msg(rc == 0, "%s: %s", cases[i].family, e.message);
        ck_assert_msg(strcmp(out, cases[i].want) == 0, "%s:\n%s\nwanted\n%s", cases[i].family, out, cases[i].want);
        free(out);
        free(src);
    }
}
END_TEST

/* The fenced block after "```kind\n", from *from on (advanced past it). */
static char *fenced(const char **from, const char *kind) {
    char open[32];
    snprintf(open, sizeof open, "```%s\n", kind);
    const char *start = strstr(*from, open);
    ck_assert_msg(start != NULL, "docs/chat-templates.md has no ```%s block", kind);
    start += strlen(open);
    const char *end = strstr(start, "```");
    ck_assert(end != NULL);
    *from = end + 3;
    return strndup(start, (size_t)(end - start));
}

/* docs/chat-templates.md's example renders as the page shows. */
START_TEST(test_doc_example) {
    char *doc = tfile_read_rel("docs/chat-templates.md", NULL);
    ck_assert(doc != NULL);
    const char *at = doc;
    char *src = fenced(&at, "jinja"), *context = fenced(&at, "json"), *want = fenced(&at, "text");
    char *out;
    api_chat_error e;
    ck_assert_msg(render_text(src, context, NULL, &out, &e) == 0, "%s", e.message);
    ck_assert_msg(strcmp(out, want) == 0, "the page shows\n%s\nthe template renders\n%s", want, out);
    free(out);
    free(src);
    free(context);
    free(want);
    free(doc);
}
END_TEST

/* Bad templates: the code, and the line the error names. */
START_TEST(test_compile_errors) {
    static const struct {
        const char *src;
        int code, line;
    } cases[] = {
        {"{% if x %}\nabc", API_CHAT_ESYNTAX, 2},
        {"a\nb\n{% endif %}", API_CHAT_ESYNTAX, 3},
        {"{% if a %}\n{% if b %}\n{% endfor %}", API_CHAT_ESYNTAX, 3},
        {"x\n{{ 'abc }}", API_CHAT_ESYNTAX, 2},
        {"{{ 1 +\n}}", API_CHAT_ESYNTAX, 2},
        {"{{ }}", API_CHAT_ESYNTAX, 1},
        {"{% for x messages %}{% endfor %}", API_CHAT_ESYNTAX, 1},
        {"{% frobnicate %}", API_CHAT_ESYNTAX, 1},
        {"{{ '\\q' }}", API_CHAT_ESYNTAX, 1},
        {"{{ '\\ud800' }}", API_CHAT_ESYNTAX, 1},
        {"{# open", API_CHAT_ESYNTAX, 1},
        {"{{ a[] }}", API_CHAT_ESYNTAX, 1},
        {"{{ a[1:2:3:4] }}", API_CHAT_ESYNTAX, 1},
        {"{{ f(a=1, 2) }}", API_CHAT_ESYNTAX, 1},
        {"{% set 1 = 2 %}", API_CHAT_ESYNTAX, 1},
        {"{% raw %}never closed", API_CHAT_ESYNTAX, 1},
        {"\xff\xfe", API_CHAT_ESYNTAX, 0},
        {"{{ x|sort }}", API_CHAT_EUNSUPPORTED, 1},
        {"\n\n{{ x|frobnicate }}", API_CHAT_EUNSUPPORTED, 3},
        {"{{ x is divisibleby }}", API_CHAT_EUNSUPPORTED, 1},
        {"{{ x|default }}", API_CHAT_EUNSUPPORTED, 1},
        {"{{ x|upper() }}", API_CHAT_EUNSUPPORTED, 1},
        {"{{ x|selectattr(y) }}", API_CHAT_EUNSUPPORTED, 1},
        {"{{ x|selectattr('a', 'frob', 'b') }}", API_CHAT_EUNSUPPORTED, 1},
        {"{% macro m() %}x{% endmacro %}", API_CHAT_EUNSUPPORTED, 1},
        {"{% set x %}a{% endset %}", API_CHAT_EUNSUPPORTED, 1},
        {"{% for x in y %}{% break %}{% endfor %}", API_CHAT_EUNSUPPORTED, 1},
        {"{{ f(*args) }}", API_CHAT_EUNSUPPORTED, 1},
        {"{% include 'x' %}", API_CHAT_EUNSUPPORTED, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        api_chat_template *t = (api_chat_template *)&t;
        api_chat_error e;
        int rc = api__chat_compile(cases[i].src, strlen(cases[i].src), &t, &e);
        ck_assert_msg(rc == cases[i].code && e.code == rc, "%s: code %d (%s), wanted %d", cases[i].src, rc, e.message,
                      cases[i].code);
        ck_assert_msg(e.line == cases[i].line, "%s: line %d, wanted %d (%s)", cases[i].src, e.line, cases[i].line,
                      e.message);
        ck_assert_msg(t == NULL && e.message[0] != '\0', "%s: no template and a message", cases[i].src);
    }
}
END_TEST

/* Errors while rendering: raise_exception's message, the line, the codes. */
START_TEST(test_render_errors) {
    static const struct {
        const char *src, *context;
        int code, line;
        const char *message;
    } cases[] = {
        {"{{ raise_exception('Roles must alternate') }}", "{}", API_CHAT_ERAISE, 1, "Roles must alternate"},
        {"a\n{% if x %}\n  {{ raise_exception('at ' ~ x) }}\n{% endif %}", "{\"x\": 3}", API_CHAT_ERAISE, 3, "at 3"},
        {"a\nb\n{{ x + 1 }}", "{}", API_CHAT_ERENDER, 3, NULL},
        {"{{ 'a' ~ none }}", "{}", API_CHAT_ERENDER, 1, NULL},
        {"{{ x|tojson(sort_keys=true) }}", "{\"x\": {}}", API_CHAT_EUNSUPPORTED, 1, NULL},
        {"{{ x|map('upper') }}", "{\"x\": []}", API_CHAT_EUNSUPPORTED, 1, NULL},
        {"{{ range }}", "{\"range\": 1}", API_CHAT_EARG, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out;
        api_chat_error e;
        int rc = render_text(cases[i].src, cases[i].context, NULL, &out, &e);
        ck_assert_msg(rc == cases[i].code && out == NULL, "%s: code %d (%s), wanted %d", cases[i].src, rc, e.message,
                      cases[i].code);
        ck_assert_msg(e.line == cases[i].line, "%s: line %d, wanted %d", cases[i].src, e.line, cases[i].line);
        if (cases[i].message) ck_assert_str_eq(e.message, cases[i].message);
    }
    api_chat_template *t = compile_ok("x", 1);
    json_t *list = json_array();
    char *out;
    size_t n;
    api_chat_error e;
    ck_assert_int_eq(api__chat_render(t, list, NULL, &out, &n, &e), API_CHAT_EARG);
    ck_assert_int_eq(api__chat_render(NULL, list, NULL, &out, &n, &e), API_CHAT_EARG);
    api_chat_limits bad;
    api__chat_limits_default(&bad);
    bad.max_depth = 0;
    json_t *obj = json_object();
    ck_assert_int_eq(api__chat_render(t, obj, &bad, &out, &n, &e), API_CHAT_EARG);
    ck_assert_int_eq(api__chat_render(t, obj, NULL, &out, &n, &e), 0);
    ck_assert(n == 1 && strcmp(out, "x") == 0);
    free(out);
    json_decref(list);
    json_decref(obj);
    api__chat_free(t);
    api__chat_free(NULL);
    ck_assert_str_eq(api__chat_strerror(API_CHAT_ERAISE), "the template raised an exception");
}
END_TEST

/* {% raw %}, which @huggingface/jinja lacks: Jinja's meaning. */
START_TEST(test_raw_blocks) {
    static const char *const cases[][2] = {
        {"{% raw %}{{ x }}{% if %}{% endraw %}!", "{{ x }}{% if %}!"},
        {"a {%- raw -%}  b  {%- endraw -%} c", "abc"},
        {"{% raw %}{% endraw %}{{ 1 }}", "1"},
        {"{% raw %}\nline\n{% endraw %}\nafter", "line\nafter"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out;
        api_chat_error e;
        ck_assert_msg(render_text(cases[i][0], "{}", NULL, &out, &e) == 0, "%s: %s", cases[i][0], e.message);
        ck_assert_msg(strcmp(out, cases[i][1]) == 0, "%s gave \"%s\", wanted \"%s\"", cases[i][0], out, cases[i][1]);
        free(out);
    }
}
END_TEST

/* ==== Limits ==== */

/* prefix, middle n times, inner, middle2 n times, suffix. */
static char *repeat(const char *prefix, const char *middle, size_t n, const char *inner, const char *middle2,
                    const char *suffix) {
    size_t len = strlen(prefix) + n * (strlen(middle) + strlen(middle2)) + strlen(inner) + strlen(suffix) + 1;
    char *s = malloc(len), *p = s;
    ck_assert(s != NULL);
    p += sprintf(p, "%s", prefix);
    for (size_t i = 0; i < n; i++) p += sprintf(p, "%s", middle);
    p += sprintf(p, "%s", inner);
    for (size_t i = 0; i < n; i++) p += sprintf(p, "%s", middle2);
    sprintf(p, "%s", suffix);
    return s;
}

/* Hostile templates stop at compile time with ELIMIT, not with the stack. */
START_TEST(test_nesting_limits) {
    static const char *const cases[][5] = {
        {"{{ ", "(", "1", ")", " }}"},
        {"{{ ", "[", "", "]", " }}"},
        {"{{ ", "not ", "1", "", " }}"},
        {"{{ ", "- ", "1", "", " }}"},
        {"{{ 1", " + 1", "", "", " }}"},
        {"{{ 'x'", "|trim", "", "", " }}"},
        {"{{ a", ".b", "", "", " }}"},
        {"{{ f", "()", "", "", " }}"},
        {"{{ a", "[0]", "", "", " }}"},
        {"{{ ", "{'a': ", "1", "}", " }}"},
        {"{{ ", "1 if 1 else ", "1", "", " }}"},
        {"{{ x", " is defined", "", "", " }}"},
        {"", "{% if 1 %}", "x", "{% endif %}", ""},
        {"", "{% for x in y %}", "x", "{% endfor %}", ""},
        {"{% if 0 %}", "{% elif 0 %}", "", "", "{% endif %}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (size_t n = 1000; n <= 20000; n *= 20) {
            char *src = repeat(cases[i][0], cases[i][1], n, cases[i][2], cases[i][3], cases[i][4]);
            api_chat_template *t;
            api_chat_error e;
            int rc = api__chat_compile(src, strlen(src), &t, &e);
            ck_assert_msg(rc == API_CHAT_ELIMIT, "%s x %zu: code %d (%s)", cases[i][1], n, rc, e.message);
            ck_assert_msg(strstr(e.message, "nests deeper") != NULL, "%s", e.message);
            free(src);
        }
    }
    /* Long but flat is fine: 20000 statements one after another. */
    char *flat = repeat("", "{% if 1 %}x{% endif %}", 20000, "", "", "");
    char *out;
    api_chat_error e;
    ck_assert_int_eq(render_text(flat, "{}", NULL, &out, &e), 0);
    ck_assert_uint_eq(strlen(out), 20000);
    free(out);
    free(flat);
}
END_TEST

/* Loops, output, memory and value depth: each its own ELIMIT. */
START_TEST(test_render_limits) {
    static const struct {
        const char *src, *context, *says;
    } cases[] = {
        {"{{ range(1000000000)|length }}", "{}", "range()"},
        {"{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", "{}", "loops run"},
        {"{% for i in range(90000) %}{{ 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' }}{% "
         "endfor %}",
         "{}", "output"},
        {"{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
         "{% endfor %}{{ ns.s|length }}",
         "{}", "than"},
        {"{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}", "{}", "nests deeper"},
        {"{% set ns = namespace() %}{% set ns.me = [ns] %}{{ ns|tojson }}", "{}", "nests deeper"},
        {"{% for m in messages %}{% for n in messages %}{{ 1 }}{% endfor %}{% endfor %}",
         "{\"messages\": "
         "[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"
         "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"
         "0,0,0,0,0,"
         "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"
         "0,0,0,0,0,"
         "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"
         "0,0,0,0,0,"
         "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"
         "0,0,0,0,0,"
         "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"
         "0,0,0,0,0,"
         "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"
         "0,0,0,0,0,"
         "0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"
         "0,0,0,0,0]}",
         "loops run"},
    };
    api_chat_limits lim;
    api__chat_limits_default(&lim);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out;
        api_chat_error e;
        int rc = render_text(cases[i].src, cases[i].context, &lim, &out, &e);
        ck_assert_msg(rc == API_CHAT_ELIMIT && out == NULL, "%.60s: code %d (%s)", cases[i].src, rc, e.message);
        ck_assert_msg(strstr(e.message, cases[i].says) != NULL, "%.60s: %s", cases[i].src, e.message);
    }
    /* The same renders pass under raised limits where they are finite. */
    lim.max_iterations = 2000000;
    char *out;
    api_chat_error e;
    ck_assert_int_eq(render_text(cases[1].src, "{}", &lim, &out, &e), 0);
    free(out);
    lim.max_output = (size_t)8 << 20;
    ck_assert_int_eq(render_text(cases[2].src, "{}", &lim, &out, &e), 0);
    ck_assert_uint_eq(strlen(out), 90000 * 66);
    free(out);
}
END_TEST

/* Context values deeper than max_depth, and templates over the size limit. */
START_TEST(test_input_limits) {
    json_t *deep = json_array(), *ctx = json_object();
    for (int i = 0; i < 5000; i++) {
        json_t *outer = json_array();
        json_array_append_new(outer, deep);
        deep = outer;
    }
    json_object_set_new(ctx, "x", deep);
    api_chat_template *t = compile_ok("{{ x }}", 7);
    char *out;
    size_t n;
    api_chat_error e;
    ck_assert_int_eq(api__chat_render(t, ctx, NULL, &out, &n, &e), API_CHAT_ELIMIT);
    ck_assert_msg(strstr(e.message, "context nests deeper") != NULL, "%s", e.message);
    api__chat_free(t);
    json_decref(ctx);

    size_t big = API_CHAT_MAX_TEMPLATE + 1;
    char *src = malloc(big);
    memset(src, 'x', big);
    ck_assert_int_eq(api__chat_compile(src, big, &t, &e), API_CHAT_ELIMIT);
    t = compile_ok(src, big - 1); /* the largest accepted */
    json_t *obj = json_object();
    ck_assert_int_eq(api__chat_render(t, obj, NULL, &out, &n, &e), 0);
    ck_assert_uint_eq(n, big - 1);
    free(out);
    api__chat_free(t);
    json_decref(obj);
    free(src);
}
END_TEST

/* Random token soup: every template compiles or fails with a code and a
 * message, every compiled one renders or fails likewise (and under make
 * asan nothing is read out of bounds or leaked). */
START_TEST(test_random_templates) {
    static const char *const parts[] = {
        "{{", "}}", "{%", "%}", "{#", "#}", "{{-", "-}}", "{%-", "-%}", " ", "\n", "if ", "elif ", "else", "endif",
        "for ", " in ", "endfor", "set ", "=", "x", "messages", "m", "loop.index", "ns", "namespace(a=1)", "ns.a",
        "(", ")", "[", "]", "{", "}", ",", ":", ".", "|", "'s'", "\"t\"", "'\\n'", "0", "1", "-1", "2.5", "+", "-",
        "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">", "and", "or", "not ", " is ", "defined", "none",
        "string", "trim", "length", "tojson", "join(',')", "items", "first", "upper", "default('d')", "[::-1]",
        "[1:]", ".role", ".content", "raise_exception('r')", "range(3)", "selectattr('role')", "map(attribute='x')",
        "split()", "strip()", "startswith('a')", "replace('a','b')", "é", "😀", "\\", "'", "raw", "endraw"};
    const size_t np = sizeof parts / sizeof parts[0];
    json_t *ctx = parse_json("{\"messages\": [{\"role\": \"user\", \"content\": \" hi \"}, {\"role\": \"assistant\", "
                             "\"content\": \"yo\"}], \"x\": [1, \"a\", {\"k\": null}], \"m\": {\"a\": 1}}");
    unsigned seed = 1127;
    int compiled = 0, rendered = 0;
    for (int i = 0; i < 20000; i++) {
        char src[1024] = "";
        if (i % 2) strcat(src, "{{ "); /* half of them one expression */
        for (int k = (int)(rand_r(&seed) % 24); k > 0; k--) strcat(src, parts[rand_r(&seed) % np]);
        if (i % 2) strcat(src, " }}");
        api_chat_template *t;
        api_chat_error e;
        int rc = api__chat_compile(src, strlen(src), &t, &e);
        ck_assert_msg(rc == 0 || (rc < 0 && rc == e.code && e.message[0]), "%s: code %d", src, rc);
        if (rc != 0) continue;
        compiled++;
        char *out;
        size_t n;
        rc = api__chat_render(t, ctx, NULL, &out, &n, &e);
        ck_assert_msg(rc == 0 || (rc < 0 && rc == e.code && out == NULL), "%s: code %d", src, rc);
        ck_assert_msg(rc != 0 || strlen(out) <= n, "%s", src);
        rendered += rc == 0;
        free(out);
        api__chat_free(t);
    }
    fprintf(stderr, "chat: 20000 random templates, %d compiled, %d rendered\n", compiled, rendered);
    ck_assert_int_ge(compiled, 2000);
    ck_assert_int_ge(rendered, 1000);
    json_decref(ctx);
}
END_TEST

/* ==== Threads, allocation failures ==== */

static const char *const tools_conversation =
    "{\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": "
    "\"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}}}], \"messages\": [{\"role\": \"system\", "
    "\"content\": \"Use tools.\"}, {\"role\": \"user\", \"content\": \"Oslo?\"}, {\"role\": \"assistant\", "
    "\"content\": "
    "\"<think>\\nweather\\n</think>\\n\\nChecking.\", \"tool_calls\": [{\"function\": {\"name\": \"get_weather\", "
    "\"arguments\": {\"city\": \"Oslo\"}}}]}, {\"role\": \"user\", \"content\": \"Thanks é 😀\"}], "
    "\"add_generation_prompt\": true, \"enable_thinking\": false}";

typedef struct {
    const api_chat_template *t;
    const json_t *ctx;
    const char *want;
    int same;
} job;

static void *render_many(void *arg) {
    job *j = arg;
    api_chat_limits lim = clock_limits();
    for (int i = 0; i < 200; i++) {
        char *out;
        size_t n;
        api_chat_error e;
        if (api__chat_render(j->t, j->ctx, &lim, &out, &n, &e) == 0 && strcmp(out, j->want) == 0) j->same++;
        free(out);
    }
    return NULL;
}

/* One compiled template rendered by four threads at once. */
START_TEST(test_threads) {
    size_t len;
    char *src = family_source("qwen3", &len), *want;
    api_chat_template *t = compile_ok(src, len);
    json_t *ctx = parse_json(tools_conversation);
    api_chat_limits lim = clock_limits();
    api_chat_error e;
    ck_assert_int_eq(api__chat_render(t, ctx, &lim, &want, &len, &e), 0);
    pthread_t th[4];
    job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (job){t, ctx, want, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, render_many, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(jobs[i].same, 200);
    }
    free(want);
    json_decref(ctx);
    api__chat_free(t);
    free(src);
}
END_TEST

/* Every allocation of a compile and a render fails in turn: each must end
 * in API_CHAT_ENOMEM with nothing returned (and, under make asan, nothing
 * leaked), and the runs that reach no armed allocation give the text. */
START_TEST(test_allocation_failures) {
    for (int f = 0; f < N_FAMILIES; f++) {
        size_t len, n;
        char *src = family_source(families[f], &len), *want, *out;
        json_t *ctx = parse_json(tools_conversation);
        api_chat_limits lim = clock_limits();
        api_chat_error e;
        api_chat_template *t = compile_ok(src, len);
        ck_assert_int_eq(api__chat_render(t, ctx, &lim, &want, &n, &e), 0);
        api__chat_free(t);
        long k = 0, failures = 0;
        for (;; k++) {
            fail_alloc_at(k);
            int rc = api__chat_compile(src, len, &t, &e);
            out = NULL;
            if (rc == 0) rc = api__chat_render(t, ctx, &lim, &out, &n, &e);
            int reached = fail_alloc_reached();
            fail_alloc_stop();
            api__chat_free(t);
            t = NULL;
            if (!reached) {
                ck_assert_msg(rc == 0 && strcmp(out, want) == 0, "%s: no failure, yet code %d", families[f], rc);
                free(out);
                break;
            }
            ck_assert_msg(rc == API_CHAT_ENOMEM && out == NULL, "%s: allocation %ld failed, code %d (%s)",
                          families[f], k, rc, e.message);
            failures++;
        }
        ck_assert_int_ge(failures, 10);
        free(want);
        free(src);
        json_decref(ctx);
    }
}
END_TEST

/* ==== The program ==== */

static Suite *reference_suite(void) {
    const TTest *tests[] = {test_families_match_reference, test_random_conversations_match_reference,
                            test_features_match_reference, test_random_templates_match_reference, NULL};
    return suite_with("chat_reference", "reference", 300, tests, NULL, NULL);
}

static Suite *alone_suite(void) {
    setenv("TZ", "UTC", 1); /* strftime_now's local time, here and in Node */
    tzset();
    const TTest *tests[] = {test_known_prompts,    test_doc_example,    test_compile_errors,      test_render_errors,
                            test_raw_blocks,       test_nesting_limits, test_render_limits,       test_input_limits,
                            test_random_templates, test_threads,        test_allocation_failures, NULL};
    return suite_with("chat", "alone", 120, tests, NULL, NULL);
}

const test_program TEST_PROGRAM = {.suites = {alone_suite, reference_suite}};
