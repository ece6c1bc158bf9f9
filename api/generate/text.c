/* text.c - what a generation's tokens say: their bytes, those bytes as
 * valid UTF-8 (a token may hold a piece of a character: GPT-2's byte-level
 * BPE splits "é" or an emoji over tokens), stop strings, and how much of a
 * growing text a stream may send without taking back a stop string or
 * half a character. */
#include "api/generate/generate.h"
#include "api/bpe/bpe.h"

#include <stdlib.h>
#include <string.h>

void api__gen_token_bytes(const api_bpe *bpe, int32_t id, const char **b, size_t *n) {
    if (bpe == NULL || api_bpe_token_bytes(bpe, id, b, n) != 0) {
        *b = "";
        *n = 0;
    }
}

void api__gen_utf8(api_buf *out, const char *b, size_t n) {
    if (n > (SIZE_MAX - 1) / 3 || api__buf_reserve(out, 3 * n + 1) != 0) {
        out->failed = 1;
        return;
    }
    out->len += api_bpe_utf8_text(b, n, out->data + out->len);
}

/* The length of the UTF-8 sequence that starts with byte c (1 for ASCII
 * and for bytes that cannot start one, which are errors of their own). */
static size_t seq_len(unsigned c) {
    return c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 1;
}

int api__gen_utf8_valid(const char *b, size_t n) {
    /* Unicode's table 3-7 of well-formed sequences (what the repair leaves
     * as it is), without allocating: a failed allocation must not make a
     * token's text look invalid */
    const unsigned char *s = (const unsigned char *)b;
    for (size_t i = 0, k; i < n; i += k) {
        unsigned c = s[i], lo = 0x80, hi = 0xBF; /* the second byte's range */
        k = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (k == 0 || n - i < k) return 0;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
        for (size_t j = 1; j < k; j++)
            if (s[i + j] < (j == 1 ? lo : 0x80) || s[i + j] > (j == 1 ? hi : 0xBF)) return 0;
    }
    return 1;
}

/* Where the last sequence of text[0..len) starts, if it is incomplete
 * (its lead byte announces more bytes than are left); else len. */
static size_t complete_end(const char *text, size_t len) {
    size_t back = 0;
    while (back < 3 && back < len && ((unsigned char)text[len - 1 - back] & 0xC0) == 0x80) back++;
    if (back == len) return len;
    size_t lead = len - 1 - back;
    size_t need = seq_len((unsigned char)text[lead]);
    return need > 1 && need > back + 1 ? lead : len;
}

/* 1 if text[at..len) is a proper prefix of stop string s. */
static int prefix_of(const char *text, size_t at, size_t len, const char *s, size_t n) {
    return len - at < n && memcmp(text + at, s, len - at) == 0;
}

size_t api__gen_safe_end(const char *text, size_t len, const api_gen_opts *o) {
    size_t end = len;
    for (int i = 0; i < o->n_stop; i++) {
        size_t n = o->stop_len[i], from = len >= n ? len - n + 1 : 0;
        for (size_t at = from; at < len; at++)
            if (at < end && prefix_of(text, at, len, o->stop[i], n)) {
                end = at; /* the earliest start that may still become s */
                break;
            }
    }
    return complete_end(text, end);
}

long api__gen_find_stop(const char *text, size_t len, size_t from, const api_gen_opts *o,
                        int *which) {
    long best = -1;
    for (int i = 0; i < o->n_stop; i++) {
        size_t n = o->stop_len[i];
        size_t at = from >= n - 1 ? from - (n - 1) : 0; /* a match may begin before `from` */
        for (; at + n <= len; at++)
            if (memcmp(text + at, o->stop[i], n) == 0) {
                if (best < 0 || (long)at < best) best = (long)at, *which = i;
                break;
            }
    }
    return best;
}
