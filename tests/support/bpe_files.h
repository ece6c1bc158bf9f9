/* bpe_files.h - small GPT-2 tokenizer files for the tests: the 256 byte
 * symbols of GPT-2's byte-level BPE and a few merged tokens. */
#ifndef TESTS_SUPPORT_BPE_FILES_H
#define TESTS_SUPPORT_BPE_FILES_H

#include <jansson.h>

#include "api/api.h"

/* vocab.json as a JSON object: GPT-2's 256 byte symbols with ids 0 .. 255,
 * the byte's own order, then the extra tokens (NULL-terminated, may be
 * NULL) from 256 on. The caller owns the reference. */
json_t *tbpe_vocab(const char *const extra[]);

/* Writes dir/vocab.json (tbpe_vocab(extra)) and an empty dir/merges.txt:
 * a byte-level tokenizer whose ids are the bytes (plus the extras). 1 on
 * success. dir must exist. */
int tbpe_write_dir(const char *dir, const char *const extra[]);

/* That tokenizer loaded by api_bpe_load, through a temporary folder that is
 * removed again. Fails the running test when it cannot. The caller frees it
 * with api_bpe_free. */
api_bpe *tbpe_load_bytes(const char *const extra[]);

#endif
