/* bpe_split.c - GPT-2's pre-tokenizer pattern, matched by hand:
 *
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *
 * Every code point is in exactly one of four classes (letter, number, space,
 * other), which makes each alternative a run of one class, with an optional
 * leading U+0020 for three of them. */
#include "bpe_internal.h"

int api__bpe_class(uint32_t cp) {
    if (cp < 0x80) {
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return API__BPE_LETTER;
        if (cp >= '0' && cp <= '9') return API__BPE_NUMBER;
        if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return API__BPE_SPACE;
        return API__BPE_OTHER;
    }
    unsigned lo = 0, hi = api__bpe_n_ranges;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (cp < api__bpe_ranges[mid].lo) hi = mid;
        else if (cp > api__bpe_ranges[mid].hi) lo = mid + 1;
        else return (int)api__bpe_ranges[mid].cls;
    }
    return API__BPE_OTHER;
}

size_t api__bpe_utf8(const unsigned char *s, size_t len, uint32_t *cp) {
    unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t n;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) n = 2, v = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, v = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, v = c & 0x07, min = 0x10000;
    else return 0;
    if (len < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return n;
}

/* The class and byte length of the code point at pos; class -1 at the end. */
static int class_at(const char *text, size_t len, size_t pos, size_t *n) {
    if (pos >= len) {
        *n = 0;
        return -1;
    }
    uint32_t cp = 0;
    *n = api__bpe_utf8((const unsigned char *)text + pos, len - pos, &cp);
    if (*n == 0) *n = 1; /* the caller validated the text; never loop forever */
    return api__bpe_class(cp);
}

/* The end of the run of class cls that starts at pos. */
static size_t run_end(const char *text, size_t len, size_t pos, int cls) {
    size_t n;
    while (class_at(text, len, pos, &n) == cls) pos += n;
    return pos;
}

/* 's 't 're 've 'm 'll 'd at pos (case-sensitive, as GPT-2's pattern): the
 * length, or 0. */
static size_t contraction(const char *text, size_t len, size_t pos) {
    if (text[pos] != '\'' || pos + 1 >= len) return 0;
    char a = text[pos + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (pos + 2 >= len) return 0;
    char b = text[pos + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

size_t api__bpe_next_piece(const char *text, size_t len, size_t pos) {
    size_t c = contraction(text, len, pos);
    if (c) return c;
    size_t n;
    int cls = class_at(text, len, pos, &n);
    /* ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+': a space joins the run after it */
    size_t start = pos;
    if (text[pos] == ' ') {
        size_t n2;
        int next = class_at(text, len, pos + 1, &n2);
        if (next == API__BPE_LETTER || next == API__BPE_NUMBER || next == API__BPE_OTHER) {
            start = pos + 1;
            cls = next;
        }
    }
    if (cls != API__BPE_SPACE) return run_end(text, len, start, cls) - pos;
    /* '\s+(?!\S)': the whitespace run, less its last character when something
     * follows it; '\s+' (the whole run) when that leaves nothing */
    size_t end = run_end(text, len, pos, API__BPE_SPACE);
    if (end == len) return end - pos;
    size_t last = end - 1; /* back to the start of the run's last code point */
    while (last > pos && ((unsigned char)text[last] & 0xC0) == 0x80) last--;
    return last > pos ? last - pos : end - pos;
}
