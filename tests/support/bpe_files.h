/* bpe_files.h - small GPT-2 tokenizer files for the tests: the 256 byte
 * symbols of GPT-2's byte-level BPE and a few merged tokens. */
#ifndef TESTS_SUPPORT_BPE_FILES_H
#define TESTS_SUPPORT_BPE_FILES_H

#include <jansson.h>

/* vocab.json as a JSON object: GPT-2's 256 byte symbols with ids 0 .. 255,
 * the byte's own order, then the extra tokens (NULL-terminated, may be
 * NULL) from 256 on. The caller owns the reference. */
json_t *tbpe_vocab(const char *const extra[]);

#endif
