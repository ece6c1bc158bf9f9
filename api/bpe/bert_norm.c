/* bert_norm.c - BertNormalizer (normalizers/bert.rs: clean_text, then
 * handle_chinese_chars, strip_accents, lowercase, in that order), the
 * Lowercase and StripAccents normalizers, on code points: the classes are
 * the library's own (bert_unicode.c), NFD's decompositions and combining
 * classes and the lowercase mapping utf8proc's (Unicode 15, as the library's
 * char::to_lowercase in tokenizers 0.13.3; 0.23.2 also lowercases the
 * letters Unicode 16 added). */
#include "wp.h"

#include <stdlib.h>
#include <utf8proc.h>

unsigned api__bert_class(uint32_t cp) {
    unsigned lo = 0, hi = api__bert_n_ranges;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (cp < api__bert_ranges[mid].lo) hi = mid;
        else if (cp > api__bert_ranges[mid].hi) lo = mid + 1;
        else return api__bert_ranges[mid].flags;
    }
    return 0;
}

/* The CJK ideographs of is_chinese_char (not U+2B820 .. U+2B91F). */
static int chinese(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* A growing list of code points; failed once an allocation failed. */
typedef struct {
    uint32_t *v;
    size_t n, cap;
    int failed;
} cps;

static void put(cps *l, uint32_t c) {
    if (l->failed) return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        uint32_t *g = realloc(l->v, cap * sizeof *g);
        if (!g) return (void)(l->failed = 1);
        l->v = g, l->cap = cap;
    }
    l->v[l->n++] = c;
}

/* NFD: the characters the library decomposes, decomposed, then every run of
 * marks in canonical order (a stable sort by combining class). */
static void nfd(const cps *in, cps *out) {
    for (size_t i = 0; i < in->n && !out->failed; i++) {
        utf8proc_int32_t d[32];
        int bound = 0;
        utf8proc_ssize_t k = 1;
        d[0] = (utf8proc_int32_t)in->v[i];
        if (api__bert_class(in->v[i]) & API__BERT_NFD)
            k = utf8proc_decompose_char(d[0], d, 32, UTF8PROC_DECOMPOSE, &bound);
        for (utf8proc_ssize_t j = 0; j < k && j < 32; j++) put(out, (uint32_t)d[j]);
    }
    for (size_t i = 1; i < out->n && !out->failed; i++) {
        for (size_t j = i; j > 0; j--) {
            int a = utf8proc_get_property((utf8proc_int32_t)out->v[j - 1])->combining_class;
            int b = utf8proc_get_property((utf8proc_int32_t)out->v[j])->combining_class;
            if (b == 0 || a <= b) break;
            uint32_t x = out->v[j - 1];
            out->v[j - 1] = out->v[j], out->v[j] = x;
        }
    }
}

/* One step over in into out (both emptied first is the caller's job). */
static void step(unsigned which, const cps *in, cps *out) {
    if (which == API__BN_STRIP) {
        nfd(in, out);
        size_t k = 0;
        for (size_t i = 0; i < out->n; i++)
            if (!(api__bert_class(out->v[i]) & API__BERT_MARK)) out->v[k++] = out->v[i];
        out->n = out->failed ? 0 : k;
        return;
    }
    for (size_t i = 0; i < in->n; i++) {
        uint32_t c = in->v[i];
        unsigned cls = api__bert_class(c);
        if (which == API__BN_CLEAN && !(cls & API__BERT_DROP)) put(out, cls & API__BERT_SPACE ? ' ' : c);
        else if (which == API__BN_CHINESE && chinese(c)) put(out, ' '), put(out, c), put(out, ' ');
        else if (which == API__BN_CHINESE) put(out, c);
        else if (which == API__BN_MARKS && !(cls & API__BERT_COMBINING)) put(out, c);
        else if (which == API__BN_LOWER && c == 0x130) put(out, 'i'), put(out, 0x307); /* İ: the one longer lowercase */
        else if (which == API__BN_LOWER) put(out, (uint32_t)utf8proc_tolower((utf8proc_int32_t)c));
    }
}

long api__bert_normalize(unsigned flags, const char *s, size_t n, char **out) {
    static const unsigned order[] = {API__BN_CLEAN, API__BN_CHINESE, API__BN_STRIP, API__BN_LOWER, API__BN_MARKS};
    cps a = {0}, b = {0};
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = api__bpe_utf8((const unsigned char *)s + i, n - i, &cp);
        put(&a, k ? cp : 0xFFFD);
        i += k ? k : 1;
    }
    for (int i = 0; i < 5 && !a.failed; i++) {
        if (!(flags & order[i])) continue;
        b.n = 0;
        step(order[i], &a, &b);
        cps t = a;
        a = b, b = t;
    }
    char *o = a.failed ? NULL : malloc(4 * a.n + 1);
    size_t len = 0;
    for (size_t i = 0; o && i < a.n; i++) len += api__utf8_put(o + len, a.v[i]);
    free(a.v);
    free(b.v);
    if (!o) return API_BPE_ENOMEM;
    o[len] = '\0';
    *out = o;
    return (long)len;
}
