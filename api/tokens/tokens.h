/* tokens.h - text to token ids and back (private to api/, prefix
 * api__tokens): POST /tokenize and POST /detokenize as llama.cpp's server
 * names them, and the one rule that picks a request's tokenizer for every
 * endpoint that reads or writes text.
 *
 *   pick.c    which tokenizer a request means; a token's piece as JSON
 *   run.c     the kind's steps (api__tokens_kind) for both endpoints
 */
#ifndef API_TOKENS_H
#define API_TOKENS_H

#include <jansson.h>

#include "api/base/base.h"
#include "api/model/model.h"

/* How many there are (api__tokenizer_at's, api/weights/). */
size_t api__tokenizer_count(const api_limits *lim);
/* The server's default: the first --tokenizer, else the first model's; NULL
 * when there is none. */
const api_tokenizer *api__tokenizer_default(const api_limits *lim);
/* The tokenizer a "tokenizer" field v names into *out, or a 400 naming the
 * field and listing those loaded. */
int api__tokenizer_named(const json_t *v, const api_limits *lim, const api_tokenizer **out,
                         api_err *e);
/* The one rule of every endpoint: "tokenizer" names one; else the model's
 * own (model may be NULL); else the server's default. *out NULL when the
 * server has none: with required, a 400 on field saying how to load one.
 * 0 or -1. */
int api__tokenizer_pick(const json_t *root, const api_limits *lim, const api_model *model,
                        int required, const char *field, const api_tokenizer **out, api_err *e);
/* The 400 on field when a request needs a tokenizer and has none. -1. */
int api__tokenizer_missing(const char *field, api_err *e);

/* A token's piece as llama.cpp's /tokenize with_pieces gives it: a JSON
 * string when its bytes are valid UTF-8, else the list of its bytes. */
void api__tokens_piece_json(api_buf *b, const api_bpe *bpe, int32_t id);

#endif
