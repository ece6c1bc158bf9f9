/* bpe.h - GPT-2's byte-level BPE tokenizer (api/bpe.c): the vocabulary and
 * merges of a directory, text to token ids and back.
 *
 * Exactly what OpenAI's encoder.py (and tiktoken's r50k_base) computes: the
 * pre-tokenizer pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (matched by hand, api/bpe_split.c, with the Unicode classes of
 * api/bpe_unicode.c), each piece's UTF-8 bytes mapped to GPT-2's byte
 * symbols, then merged by rank. Special tokens (<|endoftext|>) are plain text
 * to encode, as in encoder.py.
 *
 * A loaded tokenizer is read-only: any number of threads may encode and
 * decode with it at once (each call has its own work area). Functions return
 * 0 or a negative API_BPE_E* code.
 */
#ifndef API_BPE_H
#define API_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "api/api.h" /* api_bpe, api_bpe_load, api_bpe_free, api_bpe_vocab_size */

enum {
    API_BPE_OK = 0,
    API_BPE_ENOMEM = -1,  /* an allocation failed */
    API_BPE_EIO = -2,     /* a file could not be read */
    API_BPE_EFORMAT = -3, /* a file is not a GPT-2 vocabulary or merges list */
    API_BPE_EUTF8 = -4,   /* the text is not valid UTF-8 */
    API_BPE_ERANGE = -5,  /* a token id outside the vocabulary */
    API_BPE_ETOOBIG = -6  /* a size over the limits below */
};

#define API_BPE_MAX_VOCAB (1u << 22)   /* tokens a vocabulary may hold */
#define API_BPE_MAX_TEXT ((size_t)1 << 30) /* bytes of text one call may take */

/* One line for a code. */
const char *api_bpe_strerror(int code);

/* The longest token in bytes: a text of n tokens has at most n times as many
 * bytes. */
size_t api_bpe_max_token_bytes(const api_bpe *t);

/* Encodes len bytes of UTF-8 text: *ids (malloc'd, the caller frees; NULL
 * when *n is 0) gets *n token ids. */
int api_bpe_encode(const api_bpe *t, const char *text, size_t len, int32_t **ids, size_t *n);

/* The raw bytes a token stands for (owned by t, not NUL-terminated). */
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

/* Decodes n ids to their bytes, concatenated: *text (malloc'd, NUL-terminated,
 * the caller frees) of *len bytes; not necessarily valid UTF-8 when ids cut a
 * character. */
int api_bpe_decode(const api_bpe *t, const int32_t *ids, size_t n, char **text, size_t *len);

#endif
