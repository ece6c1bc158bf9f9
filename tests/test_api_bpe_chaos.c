/* test_api_bpe_chaos.c - every allocation of the tokenizer fails in turn, as
 * tests/test_api_chaos.c does for the endpoints: loading a vocabulary or a
 * tokenizer.json, encoding, decoding, and a /model/gpt2 request with text. Each must give an
 * error code (or a well-formed 503 reply), never a crash or a success with
 * missing data; under `make asan` never a leak either.
 *
 * Linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc (Makefile),
 * which routes the calls of the static libraries through tests/support/fail_alloc.c.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/bpe/bpe.h"
#include "support/files.h"
#include "support/bpe_files.h"
#include "tests/support/check_main.h"
#include "tests/support/fail_alloc.h"
#include "tests/support/reply_check.h"


static char g_dir[1024];

/* What an operation found wrong while an allocation was armed to fail: Check's
 * own asserts allocate, so they wait until the wrappers are disarmed. */
static char g_wrong[512];

static void wrong(const char *what) {
    if (!g_wrong[0]) snprintf(g_wrong, sizeof g_wrong, "%s", what);
}

/* GPT-2's 256 byte symbols (ids 0 .. 255), then "ab" (256) and "Ġab" (257),
 * and the merges that make them, into $BUILD/bpe/chaos. */
static void write_small(void) {
    const char *build = getenv("BUILD");
    char rel[256], cmd[1400];
    snprintf(rel, sizeof rel, "%s/bpe/chaos", build && *build ? build : "build");
    if (rel[0] == '/') snprintf(g_dir, sizeof g_dir, "%s", rel);
    else tfile_path(g_dir, sizeof g_dir, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", g_dir);
    ck_assert_int_eq(system(cmd), 0);
    static const char *const extra[] = {"ab", "\xc4\xa0" "ab", NULL};
    json_t *v = tbpe_vocab(extra);
    char path[1100];
    snprintf(path, sizeof path, "%s/vocab.json", g_dir);
    ck_assert_int_eq(json_dump_file(v, path, 0), 0);
    json_decref(v);
    snprintf(path, sizeof path, "%s/merges.txt", g_dir);
    FILE *f = fopen(path, "w");
    ck_assert(f != NULL);
    fputs("#version: 0.2\na b\n\xc4\xa0 ab\n", f);
    ck_assert_int_eq(fclose(f), 0);
}

/* Runs op once counting, then once per allocation with that one failing;
 * op returns 0 on success and must return nonzero whenever one failed. */
static void each_fails(const char *what, int (*op)(void)) {
    g_wrong[0] = '\0';
    fail_alloc_count();
    int rc = op();
    long total = fail_alloc_stop();
    ck_assert_msg(rc == 0 && !g_wrong[0], "%s fails without a failing allocation: %s", what,
                  g_wrong);
    ck_assert_msg(total > 0, "%s made no allocation through the wrappers", what);
    for (long k = 0; k < total; k++) {
        fail_alloc_at(k);
        rc = op();
        fail_alloc_stop();
        ck_assert_msg(!g_wrong[0], "%s, allocation %ld failing: %s", what, k, g_wrong);
        ck_assert_msg(fail_alloc_reached(), "%s: allocation %ld of %ld was never made", what, k, total);
        ck_assert_msg(rc != 0, "%s succeeded although allocation %ld failed", what, k);
    }
    fprintf(stderr, "bpe chaos: %s survived each of its %ld allocations failing\n", what, total);
}

static int op_load(void) {
    api_bpe *t = NULL;
    char err[256];
    int rc = api_bpe_load(g_dir, &t, err, sizeof err);
    if ((rc == 0) != (t != NULL)) wrong("load's code and tokenizer disagree");
    if (rc != 0 && err[0] == '\0') wrong("load failed without a message");
    api_bpe_free(t);
    return rc;
}

static api_bpe *g_bpe;
static const char TEXT[] = "abab ab ab\xf0\x9f\x98\x80  x";

static int op_encode(void) {
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = api_bpe_encode(g_bpe, TEXT, strlen(TEXT), &ids, &n);
    if (rc == 0) {
        char *back;
        size_t len;
        rc = api_bpe_decode(g_bpe, ids, n, &back, &len);
        if (rc == 0) {
            if (len != strlen(TEXT) || memcmp(back, TEXT, len) != 0) wrong("decode is not the text");
            free(back);
        } else if (rc != API_BPE_ENOMEM) {
            wrong("decode failed with another code than ENOMEM");
        }
    } else if (rc != API_BPE_ENOMEM || ids != NULL || n != 0) {
        wrong("encode failed with another code than ENOMEM, or left tokens");
    }
    free(ids);
    return rc;
}

static int op_request(void) {
    /* no string of 14 or 30 bytes: jansson 2.14's lexer ignores a failed
     * allocation when it saves a string's closing quote into a full buffer
     * (16, 32 bytes with both quotes), then reads past the text and aborts
     * (load.c, lex_scan_string: assert(0)); the server would abort too */
    static const char body[] =
        "{\"vocab_size\":300,\"block_size\":16,\"n_layer\":1,\"n_head\":1,\"n_embd\":2,"
        "\"init\":{\"seed\":1},\"text\":\"abab ab\xf0\x9f\x98\x80\","
        "\"return\":[\"idx\",\"tokens\",\"next_token\",\"attn_weights\"]}";
    api_tokenizer tok = {"small", g_bpe};
    api_limits lim = {.max_elements = 1 << 20, .tokenizers = &tok, .n_tokenizers = 1};
    api_reply reply;
    int status = api_handle(API_EP_MODEL_GPT2, body, strlen(body), &lim, &reply);
    fail_alloc_pause(1); /* reply_check allocates */
    if (reply.body.data == NULL) {
        if (status != 503) wrong("no body and not 503");
    } else {
        char why[256];
        if (reply_check(&reply, why, sizeof why) != 0) wrong(why);
        if (status != 200 && status != 503) wrong(reply.body.data);
        if (status == 200 && !strstr(reply.body.data, "\"tokens\":[\"ab\",\"ab\"")) wrong(reply.body.data);
    }
    fail_alloc_pause(0);
    api_buf_free(&reply.body);
    return status == 200 ? 0 : -1;
}

START_TEST(test_load_survives) {
    write_small();
    each_fails("api_bpe_load", op_load);
}
END_TEST

START_TEST(test_encode_survives) {
    write_small();
    char err[256];
    ck_assert_msg(api_bpe_load(g_dir, &g_bpe, err, sizeof err) == 0, "%s", err);
    each_fails("api_bpe_encode + api_bpe_decode", op_encode);
    each_fails("POST /model/gpt2 with text", op_request);
    api_bpe_free(g_bpe);
}
END_TEST

/* Two small tokenizer.json files: SentencePiece-style (normalizer, byte
 * fallback, added tokens, template, decoder chain) and byte-level (a Split
 * regex, ignore_merges, Digits). */
static const char SP_JSON[] =
    "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true, \"normalized\": false},"
    " {\"id\": 1, \"content\": \"<s>\", \"special\": true, \"normalized\": false},"
    " {\"id\": 9, \"content\": \"<x>\", \"special\": false, \"lstrip\": true, \"rstrip\": true}],"
    " \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"\u2581\"},"
    " {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\u2581\"}, {\"type\": \"NFC\"}]},"
    " \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"\u2581\", \"prepend_scheme\": \"first\", \"split\": true},"
    " \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\"}},"
    " {\"Sequence\": {\"id\": \"A\"}}], \"special_tokens\": {\"<s>\": {\"ids\": [1]}}},"
    " \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": \"\u2581\"},"
    " \"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}, {\"type\": \"Strip\", \"content\": \" \","
    " \"start\": 1, \"stop\": 0}]}, \"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"fuse_unk\": true,"
    " \"byte_fallback\": true, \"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"<0xF0>\": 2, \"<0x9F>\": 3, \"<0x98>\": 4,"
    " \"<0x80>\": 5, \"\u2581\": 6, \"a\": 7, \"b\": 8, \"ab\": 10, \"\u2581ab\": 11}, \"merges\": [[\"a\", \"b\"], \"\u2581 ab\"]}}";
static const char BL_JSON[] =
    "{\"added_tokens\": [{\"id\": 260, \"content\": \"<|e|>\", \"special\": true, \"normalized\": false}],"
    " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\", \"individual_digits\": true},"
    " {\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\p{L}+| ?[^\\\\s\\\\p{L}]+|\\\\s+(?!\\\\S)|\\\\s+\"},"
    " \"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]},"
    " \"decoder\": {\"type\": \"ByteLevel\"}, \"model\": {\"type\": \"BPE\", \"ignore_merges\": true, \"vocab\": %s,"
    " \"merges\": [\"a b\", \"\u0120 ab\"]}}";

static char *g_json; /* the text op_load_json loads */

static int op_load_json(void) {
    api_bpe *t = NULL;
    char err[256];
    int rc = api_bpe_load_json_mem(g_json, strlen(g_json), NULL, 0, &t, err, sizeof err);
    if ((rc == 0) != (t != NULL)) wrong("load's code and tokenizer disagree");
    if (rc != 0 && err[0] == '\0') wrong("load failed without a message");
    api_bpe_free(t);
    return rc;
}

static const char JSON_TEXT[] = "ab ab<x> abab\xf0\x9f\x98\x80 <s>x 123 <|e|>";

static int op_encode_json(void) {
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = api_bpe_encode_ex(g_bpe, JSON_TEXT, strlen(JSON_TEXT), API_BPE_ADD_SPECIAL, &ids, &n);
    if (rc == 0) {
        char *back;
        size_t len;
        rc = api_bpe_decode_ex(g_bpe, ids, n, API_BPE_SKIP_SPECIAL, &back, &len);
        if (rc == 0) free(back);
        else if (rc != API_BPE_ENOMEM) wrong("decode failed with another code than ENOMEM");
    } else if (rc != API_BPE_ENOMEM || ids != NULL || n != 0) {
        wrong("encode failed with another code than ENOMEM, or left tokens");
    }
    free(ids);
    return rc;
}

/* The byte-level file: GPT-2's byte symbols, "ab" and "\u0120ab". */
static char *byte_level_json(void) {
    static const char *const extra[] = {"ab", "\xc4\xa0" "ab", NULL};
    json_t *v = tbpe_vocab(extra);
    char *vocab = json_dumps(v, JSON_COMPACT), *out = malloc(strlen(vocab) + sizeof BL_JSON);
    ck_assert(vocab && out);
    sprintf(out, BL_JSON, vocab);
    free(vocab);
    json_decref(v);
    return out;
}

START_TEST(test_tokenizer_json_survives) {
    char err[256];
    char *files[2] = {strdup(SP_JSON), byte_level_json()};
    for (int i = 0; i < 2; i++) {
        g_json = files[i];
        each_fails(i ? "api_bpe_load_json_mem (byte-level)" : "api_bpe_load_json_mem (SentencePiece-style)", op_load_json);
        ck_assert_msg(api_bpe_load_json_mem(g_json, strlen(g_json), NULL, 0, &g_bpe, err, sizeof err) == 0, "%s", err);
        each_fails(i ? "tokenizer.json encode + decode (byte-level)" : "tokenizer.json encode + decode (SentencePiece-style)",
                   op_encode_json);
        api_bpe_free(g_bpe);
        free(files[i]);
    }
}
END_TEST

static Suite *chaos_suite(void) {
    json_object_seed(1); /* jansson seeds its hash from /dev/urandom: allocations then differ */
    Suite *s = suite_create("api_bpe_chaos");
    const TTest *tests[] = {test_load_survives, test_encode_survives, test_tokenizer_json_survives, NULL};
    tcase_with(s, "allocations", 120, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {chaos_suite}};
