/* bpe.h - the tokenizers of model folders (api/bpe/): text to token ids and
 * back, exactly as the reference implementations compute them.
 *
 * Three kinds, chosen by api_bpe_load from the files of a directory (the
 * steps each follows: docs/models.md, "The tokenizers of model folders"):
 *
 *  - tokenizer.json (preferred), with tokenizer_config.json when present:
 *    exactly Hugging Face's `tokenizers` (0.23; the tests compare with its
 *    Node binding), step by step: added tokens, normalizer, pre-tokenizer,
 *    model (BPE or WordPiece), post-processor (templates with type ids),
 *    decoder. A step it does not implement is refused at load
 *    (API_BPE_ENOTSUP naming it), never half followed. The file's "padding"
 *    is not followed (a caller pads), its "truncation" only when a caller
 *    passes it (api_bpe_file_truncation).
 *  - vocab.txt (BERT's WordPiece vocabulary) with tokenizer_config.json and
 *    special_tokens_map.json when present: the tokenizer.json transformers'
 *    BertConverter makes of them.
 *  - vocab.json + merges.txt (or encoder.json + vocab.bpe) of GPT-2: exactly
 *    OpenAI's encoder.py; <|endoftext|> is plain text.
 *
 * Special tokens: the template of the post-processor (or the one
 * transformers makes from tokenizer_config.json's add_bos_token and
 * add_eos_token) says which ids go around a text or each text of a pair,
 * with their type ids. api_bpe_encode never adds them; api_bpe_encode_ex
 * and api_bpe_encode_pair add them when asked.
 *
 * A loaded tokenizer is read-only: any number of threads may encode and
 * decode with it at once (each call has its own work area). Functions return
 * 0 or a negative API_BPE_E* code.
 */
#ifndef API_BPE_H
#define API_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "api/api.h" /* api_bpe, api_bpe_load, api_bpe_load_mem, api_bpe_free, api_bpe_vocab_size */

enum {
    API_BPE_OK = 0,
    API_BPE_ENOMEM = -1,  /* an allocation failed */
    API_BPE_EIO = -2,     /* a file could not be read */
    API_BPE_EFORMAT = -3, /* a file is not a tokenizer of a kind above */
    API_BPE_EUTF8 = -4,   /* the text is not valid UTF-8 */
    API_BPE_ERANGE = -5,  /* a token id outside the vocabulary */
    API_BPE_ETOOBIG = -6, /* a size over the limits below */
    API_BPE_ENOTSUP = -7  /* a tokenizer.json step not implemented; a pair, no pair template */
};

#define API_BPE_MAX_VOCAB (1u << 22)   /* tokens a vocabulary may hold */
#define API_BPE_MAX_TEXT ((size_t)1 << 30) /* bytes of text one call may take */

const char *api_bpe_strerror(int code); /* one line for a code */

/* A tokenizer from the bytes of tokenizer.json and, when config is not NULL,
 * of tokenizer_config.json (config_len bytes). As api_bpe_load. */
int api_bpe_load_json_mem(const char *json, size_t json_len, const char *config,
                          size_t config_len, api_bpe **out, char *err, size_t err_size);

/* What was loaded, for people (static): "tokenizer.json (byte-level BPE)",
 * "... (SentencePiece-style BPE)", "... (WordPiece)", "vocab.txt (WordPiece)",
 * "vocab.json + merges.txt (GPT-2 byte-level BPE)". */
const char *api_bpe_kind(const api_bpe *t);

/* ==== Encoding ==== */

/* Encodes len bytes of UTF-8 text: *ids (malloc'd, the caller frees; NULL
 * when *n is 0) gets *n token ids. tokenizer.json: the added tokens of the
 * file are found in the text (Hugging Face's encode(text,
 * add_special_tokens=False)); nothing is added around the text. */
int api_bpe_encode(const api_bpe *t, const char *text, size_t len, int32_t **ids, size_t *n);

/* Flags of api_bpe_encode_ex: the folder's template around the text (BOS,
 * ...: add_special_tokens=True); special added tokens not looked for in the
 * text (split_special_tokens: "<|im_start|>" typed by a user is text). */
#define API_BPE_ADD_SPECIAL 1u
#define API_BPE_SPECIAL_AS_TEXT 2u

/* api_bpe_encode with flags (0: the same). For vocab.json + merges.txt no
 * flag changes anything: it has no special tokens. */
int api_bpe_encode_ex(const api_bpe *t, const char *text, size_t len, unsigned flags,
                      int32_t **ids, size_t *n);

/* The ids the folder names as BOS, EOS, pad and mask (tokenizer_config.json's
 * bos_token ...; without it the BOS is the template's first special token,
 * no EOS, the pad tokenizer.json's padding.pad_id), or -1. */
int32_t api_bpe_bos_id(const api_bpe *t);
int32_t api_bpe_eos_id(const api_bpe *t);
int32_t api_bpe_pad_id(const api_bpe *t);
int32_t api_bpe_mask_id(const api_bpe *t);

/* 1 if id is an added token marked special (<|endoftext|>, <s>, ...), else 0. */
int api_bpe_is_special(const api_bpe *t, int32_t id);

/* The id of the token written as s (n bytes) in the files: an added token's
 * content, or a vocabulary entry (for vocab.json, GPT-2's byte symbols:
 * "Ġthe"); -1 if none. */
int32_t api_bpe_token_id(const api_bpe *t, const char *s, size_t n);

/* ==== Texts and pairs with type ids, truncated (encoders) ==== */

enum { API_BPE_LONGEST_FIRST, API_BPE_ONLY_FIRST, API_BPE_ONLY_SECOND }; /* truncation strategies */

/* How api_bpe_encode_pair encodes; all zero: no template, no limit. */
typedef struct {
    unsigned flags;    /* API_BPE_ADD_SPECIAL (the template), API_BPE_SPECIAL_AS_TEXT */
    size_t max_length; /* 0: no limit; else at most this many ids, the template's included */
    int strategy;      /* which text loses ids (API_BPE_LONGEST_FIRST: the longer one) */
    int from_left;     /* 1: a text loses its first ids, 0: its last */
} api_bpe_opts;

/* One text or pair as the library's Encoding; its arrays are one block. */
typedef struct {
    int32_t *ids, *type_ids; /* [n]; type ids as the template says (BERT: 1 for B [SEP]) */
    uint8_t *special;        /* [n] 1 for an id the template added (special_tokens_mask) */
    size_t n;
    size_t a_start, a_len;   /* text A's ids are ids[a_start .. a_start + a_len) */
    size_t b_start, b_len;   /* text B's (both 0 without B) */
    size_t removed;          /* ids the truncation took away */
} api_bpe_encoding;

/* Encodes text a (and b, when b is not NULL) as the library's encode(a, b, add_special_tokens)
 * with truncation set to o: each text alone (B's ids as A's would be), truncated as
 * truncate_encodings does (max_length less the template's ids; longest_first keeps the shorter
 * text whole if it can, else halves, the odd id to the text that is longer once 0.23's early exit
 * stopped each at max_length), then the template (the single one, or the pair one: API_BPE_ENOTSUP
 * when the file has none) with its type ids, which apply without ADD_SPECIAL too. Differences: a
 * max_length under the template's ids cuts both texts to nothing (the library panics); only_first
 * or only_second that cannot cut enough is API_BPE_ETOOBIG (the library's error); no overflowing
 * encodings (no stride). o NULL: all zero. *out zeroed on failure; api_bpe_encoding_free. */
int api_bpe_encode_pair(const api_bpe *t, const char *a, size_t a_len, const char *b, size_t b_len,
                        const api_bpe_opts *o, api_bpe_encoding *out);
void api_bpe_encoding_free(api_bpe_encoding *e); /* NULL or zeroed is fine */

/* n texts (b NULL) or pairs (b[i] NULL: text i alone) into out[0 .. n),
 * each as api_bpe_encode_pair; on a failure nothing is kept and *bad is
 * the text's index. Padding them to one length is the caller's. */
int api_bpe_encode_batch(const api_bpe *t, size_t n, const char *const *a, const size_t *a_len,
                         const char *const *b, const size_t *b_len, const api_bpe_opts *o,
                         api_bpe_encoding *out, size_t *bad);

/* The lengths the folder states, for the caller to choose: tokenizer.json's
 * "truncation" (the library's; MiniLM's 128): 1 and *o filled (ADD_SPECIAL
 * set), else 0; tokenizer_config.json's model_max_length (transformers'
 * truncation=True; 512), 0 when none or over 10^9. (sentence_bert_config's
 * max_seq_length is the model's to read.) */
int api_bpe_file_truncation(const api_bpe *t, api_bpe_opts *o);
size_t api_bpe_model_max_length(const api_bpe *t);

/* 1: the files give the template (tokenizer.json, vocab.txt); 0: vocab.json + merges.txt. */
int api_bpe_has_template(const api_bpe *t);

/* ==== Tokens as bytes and text ==== */

/* A token as the files write it (owned by t, not NUL-terminated): "##ing",
 * "[CLS]", "Ġthe", "▁the", "<0x41>" (convert_ids_to_tokens); for
 * vocab.json + merges.txt its bytes, as api_bpe_token_bytes. */
int api_bpe_token_name(const api_bpe *t, int32_t id, const char **s, size_t *len);

/* The longest token in bytes (api_bpe_token_bytes): a text of n tokens has
 * at most n times as many bytes, plus a decoder's replacement characters. */
size_t api_bpe_max_token_bytes(const api_bpe *t);

/* The bytes a token stands for in the middle of a text (owned by t, not NUL-terminated): for byte-
 * level BPE its bytes; for SentencePiece-style BPE its text with "▁" as a space and <0xNN> as that
 * byte; for WordPiece "##ing" as "ing", "the" as " the"; an added token's content. Concatenated,
 * they are the text the ids stand for, before the decoder's steps on the whole text (Strip of the
 * first space, U+FFFD for broken characters). */
int api_bpe_token_bytes(const api_bpe *t, int32_t id, const char **bytes, size_t *len);

/* A token as text for people: its bytes as UTF-8, each maximal part that is not valid UTF-8 on its
 * own (a piece of a character split over tokens) replaced by U+FFFD, as a WHATWG TextDecoder (and
 * tiktoken's decode with errors="replace") shows it. Writes at most 3 bytes per token byte plus a
 * NUL into out (out_size bytes); *len gets the length without the NUL. */
int api_bpe_token_text(const api_bpe *t, int32_t id, char *out, size_t out_size, size_t *len);

/* A token for people as encoding.tokens spells it for WordPiece ("##ing", "the"), else as
 * api_bpe_token_text (" the", not "Ġthe"); out as there (3 max_token_bytes + 1 suffices). */
int api_bpe_token_shown(const api_bpe *t, int32_t id, char *out, size_t out_size, size_t *len);

/* Bytes b[0..n) as text for people, as api_bpe_token_text shows a token's:
 * into out (3 n + 1 bytes), NUL-terminated; returns the length. */
size_t api_bpe_utf8_text(const char *b, size_t n, char *out);

/* ==== Decoding ==== */

/* Decodes n ids: *text (malloc'd, NUL-terminated, the caller frees) of *len bytes. tokenizer.json:
 * exactly Hugging Face's decode(ids, skip_special_tokens=False), always valid UTF-8. vocab.json +
 * merges.txt: the tokens' bytes concatenated, not necessarily valid UTF-8 when ids cut a
 * character. An id outside the vocabulary is API_BPE_ERANGE (Hugging Face skips it silently). */
int api_bpe_decode(const api_bpe *t, const int32_t *ids, size_t n, char **text, size_t *len);

#define API_BPE_SKIP_SPECIAL 1u /* leave out the special tokens (decode's skip_special_tokens) */

/* api_bpe_decode with flags (0: the same). */
int api_bpe_decode_ex(const api_bpe *t, const int32_t *ids, size_t n, unsigned flags, char **text,
                      size_t *len);

#endif
