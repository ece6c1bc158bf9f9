/* wp_vocab.c - a vocab.txt folder as the tokenizer.json transformers makes
 * of it: BertTokenizer's files and defaults (tokenization_bert.py:
 * load_vocab, do_lower_case, tokenize_chinese_chars, strip_accents,
 * do_basic_tokenize, the five special tokens; special_tokens_map.json over
 * tokenizer_config.json) through convert_slow_tokenizer.py's BertConverter
 * (BertNormalizer, BertPreTokenizer, WordPiece, the [CLS] / [SEP]
 * template, the WordPiece decoder). hf_load.c then loads that tree. */
#include "wp.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define fail api__bpe_fail

/* The classes whose slow tokenizer is a BertTokenizer converted by BertConverter. */
static const char *const classes[] = {"BertTokenizer", "DistilBertTokenizer", "ElectraTokenizer",
                                      "MobileBertTokenizer", "SqueezeBertTokenizer", "LayoutLMTokenizer"};

/* The special tokens, their config keys and BertTokenizer's defaults. */
static const char *const keys[5] = {"unk_token", "sep_token", "pad_token", "cls_token", "mask_token"};
static const char *const defaults[5] = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};
enum { UNK, SEP, PAD, CLS, MASK };

static int utf8(const char *s, size_t n) {
    uint32_t cp;
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = api__bpe_utf8((const unsigned char *)s + i, n - i, &cp)) || cp == 0) return 0;
    return 1;
}

/* load_vocab: a token a line (Python's universal newlines: \n, \r\n, \r),
 * each line's index its id, a token written twice keeps its later id. */
static int read_vocab(json_t *vocab, const char *s, size_t n, char *err, size_t err_size) {
    size_t line = 0;
    for (size_t i = 0; i < n; line++) {
        size_t e = i;
        while (e < n && s[e] != '\n' && s[e] != '\r') e++;
        if (!utf8(s + i, e - i)) return fail(err, err_size, API_BPE_EFORMAT, "vocab.txt: line %zu is not UTF-8 text", line + 1);
        if (line >= API_BPE_MAX_VOCAB) return fail(err, err_size, API_BPE_ETOOBIG, "vocab.txt: over %u lines", API_BPE_MAX_VOCAB);
        char *key = strndup(s + i, e - i);
        int rc = key ? json_object_set_new(vocab, key, json_integer((json_int_t)line)) : -1;
        free(key);
        if (rc) return API_BPE_ENOMEM;
        i = e < n && s[e] == '\r' && e + 1 < n && s[e + 1] == '\n' ? e + 2 : e + 1;
    }
    return json_object_size(vocab) ? 0 : fail(err, err_size, API_BPE_EFORMAT, "vocab.txt: no tokens");
}

/* A special token as the files name it: special_tokens_map.json's, else
 * tokenizer_config.json's, else the default; a string or an AddedToken's
 * {"content": ...}. */
static json_t *special(json_t *config, json_t *map, int k) {
    json_t *v = json_object_get(map, keys[k]);
    if (!json_is_string(v) && !json_is_string(json_object_get(v, "content"))) v = json_object_get(config, keys[k]);
    if (!json_is_string(v) && !json_is_string(json_object_get(v, "content"))) v = NULL;
    return v;
}

static const char *content(json_t *v, int k) {
    return v ? json_string_value(json_is_object(v) ? json_object_get(v, "content") : v) : defaults[k];
}

static int flag(json_t *v, const char *key, int dflt) {
    json_t *f = json_object_get(v, key);
    return json_is_boolean(f) ? json_is_true(f) : dflt;
}

/* The added tokens into list: tokenizer_config.json's added_tokens_decoder
 * when it has one, else the special tokens found in the vocabulary. */
static int added_tokens(json_t *list, json_t *vocab, json_t *config, json_t *map, char *err, size_t err_size) {
    json_t *decoder = json_object_get(config, "added_tokens_decoder"), *v;
    const char *key;
    json_object_foreach(decoder, key, v) {
        char *end;
        long long id = strtoll(key, &end, 10);
        if (*end || id < 0 || !json_is_string(json_object_get(v, "content")))
            return fail(err, err_size, API_BPE_EFORMAT, "tokenizer_config.json: added_tokens_decoder \"%.20s\"", key);
        json_t *a = json_pack("{s:I, s:O, s:b, s:b, s:b, s:b, s:b}", "id", (json_int_t)id, "content",
                              json_object_get(v, "content"), "single_word", flag(v, "single_word", 0), "lstrip",
                              flag(v, "lstrip", 0), "rstrip", flag(v, "rstrip", 0), "normalized", flag(v, "normalized", 0),
                              "special", flag(v, "special", 0));
        if (!a || json_array_append_new(list, a)) return API_BPE_ENOMEM;
    }
    for (int k = 0; !decoder && k < 5; k++) {
        json_t *s = special(config, map, k), *id = json_object_get(vocab, content(s, k));
        int seen = 0;
        for (size_t i = 0; id && i < json_array_size(list); i++)
            seen |= json_equal(json_object_get(json_array_get(list, i), "id"), id);
        if (!id || seen) continue;
        json_t *a = json_pack("{s:O, s:s, s:b, s:b, s:b, s:b, s:b}", "id", id, "content", content(s, k), "single_word",
                              flag(s, "single_word", 0), "lstrip", flag(s, "lstrip", 0), "rstrip", flag(s, "rstrip", 0),
                              "normalized", flag(s, "normalized", 0), "special", 1);
        if (!a || json_array_append_new(list, a)) return API_BPE_ENOMEM;
    }
    return 0;
}

/* BertConverter's normalizer: do_basic_tokenize false turns off all three
 * of BertTokenizer's options. */
static json_t *normalizer(json_t *config) {
    int basic = flag(config, "do_basic_tokenize", 1);
    json_t *sa = json_object_get(config, "strip_accents");
    return json_pack("{s:s, s:b, s:b, s:o, s:b}", "type", "BertNormalizer", "clean_text", 1, "handle_chinese_chars",
                     basic && flag(config, "tokenize_chinese_chars", 1), "strip_accents",
                     !basic ? json_false() : json_is_boolean(sa) ? json_boolean(json_is_true(sa)) : json_null(),
                     "lowercase", basic && flag(config, "do_lower_case", 1));
}

/* "{cls}:0 $A:0 {sep}:0" and "{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1". */
static json_t *template(const char *cls, json_t *cls_id, const char *sep, json_t *sep_id) {
    return json_pack("{s:s, s:[{s:{s:s, s:i}}, {s:{s:s, s:i}}, {s:{s:s, s:i}}],"
                     " s:[{s:{s:s, s:i}}, {s:{s:s, s:i}}, {s:{s:s, s:i}}, {s:{s:s, s:i}}, {s:{s:s, s:i}}],"
                     " s:{s:{s:s, s:[O], s:[s]}, s:{s:s, s:[O], s:[s]}}}",
                     "type", "TemplateProcessing", "single", "SpecialToken", "id", cls, "type_id", 0, "Sequence", "id", "A",
                     "type_id", 0, "SpecialToken", "id", sep, "type_id", 0, "pair", "SpecialToken", "id", cls, "type_id", 0,
                     "Sequence", "id", "A", "type_id", 0, "SpecialToken", "id", sep, "type_id", 0, "Sequence", "id", "B",
                     "type_id", 1, "SpecialToken", "id", sep, "type_id", 1, "special_tokens", cls, "id", cls, "ids", cls_id,
                     "tokens", cls, sep, "id", sep, "ids", sep_id, "tokens", sep);
}

/* The tokenizer.json of vocab (a JSON object of ids) and the options. */
static int tree(json_t *vocab, json_t *config, json_t *map, json_t **root, char *err, size_t err_size) {
    const char *unk = content(special(config, map, UNK), UNK), *cls = content(special(config, map, CLS), CLS),
               *sep = content(special(config, map, SEP), SEP);
    json_t *cls_id = json_object_get(vocab, cls), *sep_id = json_object_get(vocab, sep);
    const char *missing = !json_object_get(vocab, unk) ? unk : !cls_id ? cls : !sep_id ? sep : NULL;
    if (missing) return fail(err, err_size, API_BPE_EFORMAT, "vocab.txt: no line is %.40s", missing);
    json_t *list = json_array();
    int rc = list ? added_tokens(list, vocab, config, map, err, err_size) : API_BPE_ENOMEM;
    *root = rc ? NULL : json_pack("{s:s, s:n, s:n, s:O, s:o, s:{s:s}, s:o, s:{s:s, s:s, s:b}, s:{s:s, s:s, s:s, s:i, s:O}}",
                                  "version", "1.0", "truncation", "padding", "added_tokens", list, "normalizer",
                                  normalizer(config), "pre_tokenizer", "type", "BertPreTokenizer", "post_processor",
                                  template(cls, cls_id, sep, sep_id), "decoder", "type", "WordPiece", "prefix", "##",
                                  "cleanup", 1, "model", "type", "WordPiece", "unk_token", unk,
                                  "continuing_subword_prefix", "##", "max_input_chars_per_word", 100, "vocab", vocab);
    json_decref(list);
    return rc ? rc : *root ? 0 : API_BPE_ENOMEM;
}

static int parse(const char *s, size_t n, const char *name, json_t **out, char *err, size_t err_size) {
    json_error_t je;
    *out = NULL;
    if (!s) return 0;
    *out = json_loadb(s, n, JSON_DECODE_INT_AS_REAL, &je); /* model_max_length 1e30 fits no integer */
    if (!*out) return fail(err, err_size, API_BPE_EFORMAT, "%s:%d:%d: %s", name, je.line, je.column, je.text);
    if (!json_is_object(*out)) return fail(err, err_size, API_BPE_EFORMAT, "%s: not a JSON object", name);
    return 0;
}

/* A tokenizer_class that is not a BertTokenizer's: its name, else NULL. */
static const char *other_class(json_t *config) {
    const char *cls = json_string_value(json_object_get(config, "tokenizer_class"));
    for (size_t i = 0; cls && i < sizeof classes / sizeof classes[0]; i++) {
        size_t n = strlen(classes[i]);
        if (strncmp(cls, classes[i], n) == 0 && (cls[n] == '\0' || strcmp(cls + n, "Fast") == 0)) return NULL;
    }
    return cls;
}

int api__wp_vocab_json(const char *vocab, size_t vocab_len, const char *config, size_t config_len, const char *map,
                       size_t map_len, json_t **root, json_t **config_out, char *err, size_t err_size) {
    json_t *cfg = NULL, *sm = NULL, *v = json_object();
    *root = *config_out = NULL;
    int rc = v ? 0 : API_BPE_ENOMEM;
    if (rc == 0) rc = parse(config, config_len, "tokenizer_config.json", &cfg, err, err_size);
    if (rc == 0) rc = parse(map, map_len, "special_tokens_map.json", &sm, err, err_size);
    if (rc == 0 && other_class(cfg))
        rc = fail(err, err_size, API_BPE_ENOTSUP, "tokenizer_config.json: a vocab.txt of %.40s (BertTokenizer's kind is "
                  "implemented here)", other_class(cfg));
    if (rc == 0) rc = read_vocab(v, vocab, vocab_len, err, err_size);
    if (rc == 0) rc = tree(v, cfg, sm, root, err, err_size);
    json_t *out = rc ? NULL : cfg ? json_deep_copy(cfg) : json_object();
    for (int k = 0; out && k < 5; k++) /* the tokens as named, for the pad and mask ids */
        if (json_object_set_new(out, keys[k], json_string(content(special(cfg, sm, k), k)))) json_decref(out), out = NULL;
    if (rc == 0 && !out) rc = API_BPE_ENOMEM;
    if (rc) json_decref(*root), *root = NULL;
    *config_out = out;
    json_decref(cfg);
    json_decref(sm);
    json_decref(v);
    return rc;
}
