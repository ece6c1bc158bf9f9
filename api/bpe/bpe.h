/* bpe.h - the tokenizers of model folders (api/bpe/): text to token ids and
 * back, exactly as the reference implementations compute them.
 *
 * Two kinds, chosen by api_bpe_load from the files of a directory:
 *
 *  - tokenizer.json (Hugging Face's format, preferred when present), with
 *    tokenizer_config.json beside it when there is one: encodes and decodes
 *    as Hugging Face's `tokenizers` library does (its Rust code is the
 *    reference; the tests compare with its Node binding). The pipeline of
 *    the file is followed step by step: added tokens found in the text first
 *    (lstrip, rstrip, single_word and normalized as the file says), then the
 *    normalizer (Prepend, Replace, NFC/NFD/NFKC/NFKD, Sequence), the
 *    pre-tokenizer (ByteLevel, Split with a string or an Oniguruma regex as
 *    the library runs it, Metaspace, Digits, Sequence), the BPE model
 *    (merges "a b" or ["a", "b"], byte_fallback <0xNN> tokens, unk_token and
 *    fuse_unk, ignore_merges), the post-processor (TemplateProcessing, ByteLevel,
 *    Sequence) and the decoder (ByteLevel, Replace, ByteFallback, Fuse,
 *    Strip, Metaspace, Sequence). This covers the files of GPT-2, SmolLM2,
 *    Qwen2.5, Qwen3, Llama 3.x, Llama 2, TinyLlama, Mistral, Gemma 3 and
 *    Pythia. A file that asks for anything else (another model type, a
 *    WordPiece decoder, dropout, ...) is refused at load with
 *    API_BPE_ENOTSUP naming it, never half followed. Not followed: the
 *    file's "truncation" and "padding" (a server limits lengths itself) and
 *    transformers' clean_up_tokenization_spaces (a lossy rewrite of decoded
 *    text that transformers 5 no longer applies by default).
 *
 *  - vocab.json + merges.txt (or OpenAI's encoder.json + vocab.bpe) of
 *    GPT-2: exactly what OpenAI's encoder.py (and tiktoken's r50k_base)
 *    computes, with GPT-2's pattern matched by hand (split.c, the Unicode
 *    classes of unicode.c, generated from Oniguruma's: the same pieces as a
 *    tokenizer.json's ByteLevel pre-tokenizer); special tokens such as
 *    <|endoftext|> are plain text, as in encoder.py.
 *
 * Special tokens. The BOS a folder adds: tokenizer.json's post_processor
 * (TemplateProcessing) says which ids go before and after the text; where
 * transformers replaces that template from tokenizer_config.json
 * (tokenizer_class LlamaTokenizer, GemmaTokenizer or CodeLlamaTokenizer,
 * whose add_bos_token defaults to true and add_eos_token to false; or any
 * class whose config sets add_bos_token or add_eos_token), the template is
 * [bos_token if add_bos_token] text [eos_token if add_eos_token] instead.
 * api_bpe_encode never adds them; api_bpe_encode_ex adds them when asked.
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
    API_BPE_ENOTSUP = -7  /* a tokenizer.json step this library does not implement */
};

#define API_BPE_MAX_VOCAB (1u << 22)   /* tokens a vocabulary may hold */
#define API_BPE_MAX_TEXT ((size_t)1 << 30) /* bytes of text one call may take */

/* One line for a code. */
const char *api_bpe_strerror(int code);

/* A tokenizer from the bytes of tokenizer.json and, when config is not NULL,
 * of tokenizer_config.json (config_len bytes). As api_bpe_load. */
int api_bpe_load_json_mem(const char *json, size_t json_len, const char *config,
                          size_t config_len, api_bpe **out, char *err, size_t err_size);

/* What was loaded, for people: "tokenizer.json (byte-level BPE)",
 * "tokenizer.json (SentencePiece-style BPE)" or "vocab.json + merges.txt
 * (GPT-2 byte-level BPE)". Static text. */
const char *api_bpe_kind(const api_bpe *t);

/* ==== Encoding ==== */

/* Encodes len bytes of UTF-8 text: *ids (malloc'd, the caller frees; NULL
 * when *n is 0) gets *n token ids. tokenizer.json: the added tokens of the
 * file are found in the text (Hugging Face's encode(text,
 * add_special_tokens=False)); nothing is added around the text. */
int api_bpe_encode(const api_bpe *t, const char *text, size_t len, int32_t **ids, size_t *n);

/* Flags of api_bpe_encode_ex. */
#define API_BPE_ADD_SPECIAL 1u     /* the folder's template around the text (BOS, ...):
                                      encode(text, add_special_tokens=True) */
#define API_BPE_SPECIAL_AS_TEXT 2u /* added tokens marked special are not looked
                                      for in the text (transformers' split_special_tokens):
                                      "<|im_start|>" typed by a user is text */

/* api_bpe_encode with flags (0: the same). For vocab.json + merges.txt no
 * flag changes anything: it has no special tokens. */
int api_bpe_encode_ex(const api_bpe *t, const char *text, size_t len, unsigned flags,
                      int32_t **ids, size_t *n);

/* The ids the folder names as beginning and end of sequence
 * (tokenizer_config.json's bos_token and eos_token; without that file the
 * BOS is the template's first special token, and there is no EOS), or -1. */
int32_t api_bpe_bos_id(const api_bpe *t);
int32_t api_bpe_eos_id(const api_bpe *t);

/* 1 if id is an added token marked special (<|endoftext|>, <s>, ...), else 0
 * (also for ids outside the vocabulary). */
int api_bpe_is_special(const api_bpe *t, int32_t id);

/* The id of the token written as s (n bytes) in the files: an added token's
 * content, or a vocabulary entry (for vocab.json, GPT-2's byte symbols:
 * "Ġthe"); -1 if none. */
int32_t api_bpe_token_id(const api_bpe *t, const char *s, size_t n);

/* ==== Tokens as bytes and text ==== */

/* The longest token in bytes (api_bpe_token_bytes): a text of n tokens has
 * at most n times as many bytes, plus a decoder's replacement characters. */
size_t api_bpe_max_token_bytes(const api_bpe *t);

/* The bytes a token stands for in the middle of a text (owned by t, not
 * NUL-terminated): for byte-level BPE its bytes; for SentencePiece-style
 * BPE its text with "▁" as a space and <0xNN> as that byte; an added token's
 * content. Concatenated, they are the text the ids stand for, before the
 * decoder's steps on the whole text (Strip of the first space, U+FFFD for
 * broken characters). */
int api_bpe_token_bytes(const api_bpe *t, int32_t id, const char **bytes, size_t *len);

/* A token as text for people: its bytes as UTF-8, each maximal part that is
 * not valid UTF-8 on its own (a piece of a character split over tokens)
 * replaced by U+FFFD, as a WHATWG TextDecoder (and tiktoken's decode with
 * errors="replace") shows it. Writes at most 3 bytes per token byte plus a
 * NUL into out (out_size bytes); *len gets the length without the NUL. */
int api_bpe_token_text(const api_bpe *t, int32_t id, char *out, size_t out_size, size_t *len);

/* Bytes b[0..n) as text for people, as api_bpe_token_text shows a token's:
 * into out (3 n + 1 bytes), NUL-terminated; returns the length. */
size_t api_bpe_utf8_text(const char *b, size_t n, char *out);

/* ==== Decoding ==== */

/* Decodes n ids: *text (malloc'd, NUL-terminated, the caller frees) of *len
 * bytes. tokenizer.json: exactly Hugging Face's decode(ids,
 * skip_special_tokens=False), always valid UTF-8. vocab.json + merges.txt:
 * the tokens' bytes concatenated, not necessarily valid UTF-8 when ids cut
 * a character. An id outside the vocabulary is API_BPE_ERANGE (Hugging Face
 * skips it silently). */
int api_bpe_decode(const api_bpe *t, const int32_t *ids, size_t n, char **text, size_t *len);

#define API_BPE_SKIP_SPECIAL 1u /* leave out the special tokens (decode's skip_special_tokens) */

/* api_bpe_decode with flags (0: the same). */
int api_bpe_decode_ex(const api_bpe *t, const int32_t *ids, size_t n, unsigned flags, char **text,
                      size_t *len);

#endif
