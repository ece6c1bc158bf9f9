/* hf_encode.c - a text through a tokenizer.json pipeline
 * (TokenizerImpl::encode_single_sequence): the added tokens found in it
 * (AddedVocabulary::find_matches), each piece between them normalized,
 * the added tokens marked normalized found in that, the rest
 * pre-tokenized and given to the model. The template is encode.c's. */
#include "hf.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t start, stop; /* the split of the added token, its spaces stripped */
    int32_t id;
} hit;

static int ends_word(const char *s, size_t n) {
    if (n == 0) return 0;
    size_t j = n - 1;
    while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
    uint32_t cp;
    return api__bpe_utf8((const unsigned char *)s + j, n - j, &cp) && api__is_word(cp);
}

static int starts_word(const char *s, size_t n) {
    uint32_t cp;
    return n > 0 && api__bpe_utf8((const unsigned char *)s, n, &cp) && api__is_word(cp);
}

/* Where the white space that ends s[0 .. n) begins. */
static size_t space_before(const char *s, size_t n) {
    size_t i = n;
    while (i > 0) {
        size_t j = i - 1;
        while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
        uint32_t cp;
        if (!api__bpe_utf8((const unsigned char *)s + j, i - j, &cp) || !api__is_space(cp)) break;
        i = j;
    }
    return i;
}

/* The length of the white space that starts s[0 .. n). */
static size_t space_after(const char *s, size_t n) {
    size_t i = 0, k;
    uint32_t cp;
    while (i < n && (k = api__bpe_utf8((const unsigned char *)s + i, n - i, &cp)) && api__is_space(cp)) i += k;
    return i;
}

/* The next added token of tr in s[*pos .. n) the flags and its own flags
 * accept: leftmost, then longest; a refused match is passed over whole, as
 * the library's automaton does. from: the end of the last split. */
static int next_added(const api__hf *h, const api__trie *tr, unsigned flags, const char *s, size_t n,
                      size_t *pos, size_t from, hit *out) {
    for (size_t p = *pos; p < n;) {
        size_t m = 0;
        int32_t k = api__trie_longest(tr, s + p, n - p, &m);
        if (k < 0) {
            p++;
            continue;
        }
        const api__added *a = &h->added[k];
        size_t start = p, stop = p + m;
        p = stop;
        if ((flags & API_BPE_SPECIAL_AS_TEXT) && a->special) continue;
        if (a->single_word && (ends_word(s, start) || starts_word(s + stop, n - stop))) continue;
        if (a->lstrip) start = space_before(s, start) > from ? space_before(s, start) : from;
        if (a->rstrip) stop += space_after(s + stop, n - stop);
        *pos = p;
        *out = (hit){start, stop, a->id};
        return 1;
    }
    *pos = n;
    return 0;
}

/* Pre-tokenizer and model on s[0 .. n). */
static int model_part(const api_bpe *t, api__work *w, api__ids *out, const char *s, size_t n, int at_start) {
    int rc = api__hf_pretokenize(t->hf, w, s, n, at_start);
    for (size_t i = 0; rc == 0 && i < w->np; i++) {
        rc = api__hf_word(t, w, w->arena + w->p[i].off, w->p[i].len, out);
        if (rc == 0 && w->ends) rc = api__ids_push(w->ends, (int32_t)out->n);
    }
    return rc;
}

/* The text s[0 .. n) cut at the added tokens of tr: each part between them
 * to the next stage (normalized: the model; else normalize first). */
static int cut_added(const api_bpe *t, api__work *w, api__ids *out, const char *s, size_t n,
                     int at_start, unsigned flags, int normalized);

static int piece(const api_bpe *t, api__work *w, api__ids *out, const char *s, size_t n, int at_start,
                 unsigned flags) {
    if (t->hf->n_norm == 0) return cut_added(t, w, out, s, n, at_start, flags, 1);
    char *b = NULL;
    long m = api__hf_normalize(t->hf, s, n, &b);
    if (m < 0) return (int)m;
    int rc = cut_added(t, w, out, b, (size_t)m, at_start, flags, 1);
    free(b);
    return rc;
}

static int cut_added(const api_bpe *t, api__work *w, api__ids *out, const char *s, size_t n,
                     int at_start, unsigned flags, int normalized) {
    const api__hf *h = t->hf;
    size_t pos = 0, from = 0;
    hit a;
    int rc = 0;
    while (rc == 0 && next_added(h, normalized ? &h->normed : &h->raw, flags, s, n, &pos, from, &a)) {
        if (a.start > from)
            rc = normalized ? model_part(t, w, out, s + from, a.start - from, at_start && from == 0)
                            : piece(t, w, out, s + from, a.start - from, from == 0, flags);
        if (rc == 0) rc = api__ids_push(out, a.id);
        if (rc == 0 && w->ends) rc = api__ids_push(w->ends, ~(int32_t)out->n);
        from = a.stop;
    }
    if (rc == 0 && from < n)
        rc = normalized ? model_part(t, w, out, s + from, n - from, at_start && from == 0)
                        : piece(t, w, out, s + from, n - from, from == 0, flags);
    return rc;
}

int api__hf_encode(const api_bpe *t, const char *text, size_t len, unsigned flags, int32_t **ids, size_t *n,
                   api__ids *ends) {
    api__ids out = {0};
    api__work w = {.ends = ends};
    int rc = cut_added(t, &w, &out, text, len, 1, flags, 0);
    api__work_free(&w);
    if (rc || out.n == 0) {
        free(out.v);
        return rc;
    }
    *ids = out.v;
    *n = out.n;
    return 0;
}
