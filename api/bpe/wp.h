/* wp.h - what the WordPiece files of api/bpe/ share: the BERT classes of the
 * code points (bert_unicode.c, generated from the library), BertNormalizer
 * and the Lowercase and StripAccents normalizers (bert_norm.c), the
 * WordPiece model (wp_model.c) and vocab.txt folders (wp_vocab.c). Each
 * follows the Rust file of Hugging Face's `tokenizers` it names. */
#ifndef API_BPE_WP_H
#define API_BPE_WP_H

#include "hf.h"

/* ==== bert_unicode.c: the library's classes ==== */

enum {
    API__BERT_DROP = 1,  /* clean_text removes it */
    API__BERT_SPACE = 2, /* char::is_whitespace: clean_text's ' ', the split of the pre-tokenizers */
    API__BERT_PUNCT = 4, /* BertPreTokenizer's punctuation (ASCII or the crate's P*) */
    API__BERT_MARK = 8,  /* a nonspacing mark (BertNormalizer's strip_accents) */
    API__BERT_NFD = 16,  /* the library's NFD decomposes it */
    API__BERT_COMBINING = 32 /* a combining mark (Mn, Mc, Me): the StripAccents normalizer removes it */
};

typedef struct {
    uint32_t lo, hi; /* inclusive */
    uint32_t flags;  /* API__BERT_* */
} api__bert_range;

extern const api__bert_range api__bert_ranges[];
extern const unsigned api__bert_n_ranges;

/* The API__BERT_* flags of a code point (bert_norm.c). */
unsigned api__bert_class(uint32_t cp);

/* ==== bert_norm.c: normalizers/bert.rs, lowercase, strip_accents.rs ==== */

/* The steps of one normalizer, in the library's order. */
#define API__BN_CLEAN 1u   /* clean_text: controls removed, white space as ' ' */
#define API__BN_CHINESE 2u /* handle_chinese_chars: a space each side of a CJK ideograph */
#define API__BN_STRIP 4u   /* strip_accents: NFD, then the nonspacing marks removed */
#define API__BN_LOWER 8u   /* lowercase: char::to_lowercase of each character */
#define API__BN_MARKS 16u  /* the StripAccents normalizer: marks removed, no NFD first */

/* s[0 .. n) (valid UTF-8) through the steps of flags into *out (malloc'd);
 * its length, or API_BPE_ENOMEM. */
long api__bert_normalize(unsigned flags, const char *s, size_t n, char **out);

/* ==== wp_model.c: models/wordpiece ==== */

/* tokenizer.json's "model" of type WordPiece into t and h (the vocabulary,
 * unk_token, continuing_subword_prefix, max_input_chars_per_word). */
int api__wp_parse_model(api__hf *h, json_t *model, size_t n_ids, char *err, size_t err_size);

/* The WordPiece ids of one pre-token s[0 .. n): the longest token of the
 * vocabulary first, "##" before each one after the first; the whole word
 * as unk when a part has no token or when it has more characters than
 * max_input_chars_per_word. */
int api__wp_word(const api__hf *h, api__work *w, const char *s, size_t n, api__ids *out);

/* ==== wp_vocab.c: vocab.txt folders ==== */

/* vocab.txt (vocab_len bytes) with tokenizer_config.json and
 * special_tokens_map.json (NULL when absent) as the tokenizer.json that
 * transformers' BertConverter makes of them, into *root and *config (the
 * tokenizer_config.json to load beside it). Faults name the files. */
int api__wp_vocab_json(const char *vocab, size_t vocab_len, const char *config, size_t config_len,
                       const char *map, size_t map_len, json_t **root, json_t **config_out, char *err,
                       size_t err_size);

#endif
