/* bpe_internal.h - what api/bpe.c, api/bpe_split.c and the generated
 * api/bpe_unicode.c share. */
#ifndef API_BPE_INTERNAL_H
#define API_BPE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

enum { API__BPE_OTHER = 0, API__BPE_LETTER, API__BPE_NUMBER, API__BPE_SPACE };

typedef struct {
    uint32_t lo, hi; /* inclusive */
    uint32_t cls;    /* API__BPE_LETTER, _NUMBER or _SPACE */
} api__bpe_range;

extern const api__bpe_range api__bpe_ranges[];
extern const unsigned api__bpe_n_ranges;

/* The class of a code point: API__BPE_OTHER when in no range. */
int api__bpe_class(uint32_t cp);

/* Decodes one UTF-8 character of s[0 .. len) (len >= 1): its code point and
 * byte count; 0 if the bytes there are not valid UTF-8 (overlong, surrogate,
 * beyond U+10FFFF, cut short). */
size_t api__bpe_utf8(const unsigned char *s, size_t len, uint32_t *cp);

/* The length in bytes of the pre-token that starts at text[pos] (pos < len;
 * text valid UTF-8): GPT-2's pattern, first alternative that matches, each
 * greedy. */
size_t api__bpe_next_piece(const char *text, size_t len, size_t pos);

#endif
