/* tokens.h - text to token ids and back (private to api/, prefix
 * api__tokens): POST /tokenize and POST /detokenize as llama.cpp's server
 * names them, and the choice of a tokenizer that /v1/completions shares.
 *
 *   pick.c    which loaded tokenizer a request means
 *   run.c     the kind's steps (api__tokens_kind) for both endpoints
 */
#ifndef API_TOKENS_H
#define API_TOKENS_H

#include <jansson.h>

#include "api/base/base.h"
#include "api/model/model.h"

/* The tokenizer of a request: "tokenizer" names a loaded one; else the
 * model's (model may be NULL), which is the only one loaded; else the only
 * one loaded. *out NULL when none applies; with required, that is a 400
 * naming field ("the server has none", or "name one"). 0 or -1. */
int api__tokens_pick(const json_t *root, const api_limits *lim, const api_model *model,
                     int required, const char *field, const api_tokenizer **out, api_err *e);

/* A token's piece as llama.cpp's /tokenize with_pieces gives it: a JSON
 * string when its bytes are valid UTF-8, else the list of its bytes. */
void api__tokens_piece_json(api_buf *b, const api_bpe *bpe, int32_t id);

#endif
