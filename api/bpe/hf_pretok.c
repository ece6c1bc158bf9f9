/* hf_pretok.c - the normalizer (the files of normalizers/) and the pre-tokenizer
 * (those of pre_tokenizers/, NormalizedString::split's behaviours) of a
 * tokenizer.json pipeline, on one piece of text between added tokens. */
#include "wp.h"

#include <stdlib.h>
#include <string.h>

/* ==== Normalizer ==== */

/* s[0 .. n) with every occurrence of st's pattern replaced by its content;
 * *s replaced. Returns the new length or -1. */
static long replace_all(const api__step *st, char **s, size_t n) {
    api__span *m = NULL;
    size_t cap = 0, count = 0;
    if (st->re) {
        long c = api__re_find(st->re, *s, n, &m, &cap);
        if (c < 0) return -1;
        count = (size_t)c;
    } else {
        for (const char *p = *s; (p = memmem(p, (size_t)(*s + n - p), st->a, st->na)); p += st->na) {
            if (count == cap) {
                api__span *g = realloc(m, (cap = cap ? 2 * cap : 16) * sizeof *g);
                if (!g) return free(m), -1;
                m = g;
            }
            m[count++] = (api__span){(size_t)(p - *s), (size_t)(p - *s) + st->na};
        }
    }
    size_t out_len = n;
    for (size_t i = 0; i < count; i++) out_len += st->nb - (m[i].e - m[i].s);
    char *out = count ? malloc(out_len + 1) : NULL;
    if (count && !out) return free(m), -1;
    size_t o = 0, prev = 0;
    for (size_t i = 0; i < count; i++) {
        memcpy(out + o, *s + prev, m[i].s - prev), o += m[i].s - prev;
        memcpy(out + o, st->b, st->nb), o += st->nb;
        prev = m[i].e;
    }
    if (count) {
        memcpy(out + o, *s + prev, n - prev);
        free(*s);
        *s = out;
    }
    free(m);
    return (long)out_len;
}

long api__hf_normalize(const api__hf *h, const char *s, size_t n, char **out) {
    char *b = malloc(n + 1);
    if (!b) return API_BPE_ENOMEM;
    memcpy(b, s, n);
    long len = (long)n;
    for (size_t i = 0; i < h->n_norm && len >= 0; i++) {
        const api__step *st = &h->norm[i];
        if (st->type == API__N_PREPEND && len > 0) {
            char *g = malloc((size_t)len + st->na + 1);
            if (g) memcpy(g, st->a, st->na), memcpy(g + st->na, b, (size_t)len);
            free(b);
            b = g;
            len = g ? len + (long)st->na : -1;
        } else if (st->type == API__N_REPLACE) {
            len = replace_all(st, &b, (size_t)len);
        } else if (st->type == API__N_BERT && len > 0) {
            char *g = NULL;
            len = api__bert_normalize(st->flags, b, (size_t)len, &g);
            free(b);
            b = g;
        } else if (st->type != API__N_PREPEND && len > 0) {
            char *g = NULL;
            len = api__unicode_form(st->type, b, (size_t)len, &g);
            free(b);
            b = g;
        }
    }
    if (len < 0) return free(b), API_BPE_ENOMEM;
    *out = b;
    return len;
}

/* ==== Pieces ==== */

static int reserve(api__work *w, size_t extra) {
    if (w->cap - w->used >= extra) return 0;
    size_t cap = 2 * (w->used + extra) + 256;
    char *g = realloc(w->arena, cap);
    if (!g) return API_BPE_ENOMEM;
    w->arena = g;
    w->cap = cap;
    return 0;
}

static int emit(api__work *w, size_t off, size_t len, int at_start) {
    if (len == 0) return 0; /* the library drops empty splits */
    if (w->nq == w->qcap) {
        size_t cap = w->qcap ? 2 * w->qcap : 64;
        struct api__piece *g = realloc(w->q, cap * sizeof *g);
        if (!g) return API_BPE_ENOMEM;
        w->q = g;
        w->qcap = cap;
    }
    w->q[w->nq++] = (struct api__piece){off, len, at_start};
    return 0;
}

typedef struct {
    size_t s, e;
    int match;
} seg;

/* The parts of sg[0 .. n) after a behaviour (NormalizedString::split) into
 * out; their count. Contiguous and MergedWithPrevious join a part to the one
 * before it, MergedWithNext to the one after it (walking backwards). */
static size_t behave(const seg *sg, size_t n, int behavior, seg *out) {
    size_t k = 0;
    int prev = 0;
    for (size_t j = 0; j < n; j++) {
        size_t i = behavior == API__MERGED_NEXT ? n - 1 - j : j;
        int m = sg[i].match, join = k > 0 && (behavior == API__CONTIGUOUS ? m == prev
                                             : behavior == API__MERGED_PREV || behavior == API__MERGED_NEXT
                                                 ? m && !prev
                                                 : 0);
        if (join && behavior == API__MERGED_NEXT) out[k - 1].s = sg[i].s;
        else if (join) out[k - 1].e = sg[i].e;
        else out[k++] = (seg){sg[i].s, sg[i].e, behavior == API__REMOVED && m};
        prev = m;
    }
    for (size_t i = 0; behavior == API__MERGED_NEXT && i < k / 2; i++) {
        seg x = out[i];
        out[i] = out[k - 1 - i], out[k - 1 - i] = x;
    }
    return k;
}

/* Emits the parts of piece p cut at the matches m[0 .. k) by behavior. */
static int cut(api__work *w, struct api__piece p, const api__span *m, size_t k, int behavior, int invert) {
    seg *sg = malloc((4 * k + 2) * sizeof *sg), *out = sg ? sg + 2 * k + 1 : NULL;
    size_t n = 0, prev = 0;
    if (!sg) return API_BPE_ENOMEM;
    for (size_t i = 0; i < k; i++) {
        if (m[i].s > prev) sg[n++] = (seg){prev, m[i].s, invert};
        sg[n++] = (seg){m[i].s, m[i].e, !invert};
        prev = m[i].e;
    }
    if (prev < p.len || n == 0) sg[n++] = (seg){prev, p.len, invert};
    size_t parts = behave(sg, n, behavior, out);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < parts; i++)
        if (!out[i].match) rc = emit(w, p.off + out[i].s, out[i].e - out[i].s, p.at_start && out[i].s == 0);
    free(sg);
    return rc;
}

/* The characters of s[0 .. n) of st's class (digits.rs, metaspace.rs,
 * whitespace.rs's WhitespaceSplit, punctuation.rs), one span each, into w->m. */
static long char_matches(api__work *w, const char *s, size_t n, const api__step *st) {
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        size_t len = api__bpe_utf8((const unsigned char *)s + i, n - i, &cp);
        if (len == 0) len = 1;
        int hit = st->type == API__P_DIGITS   ? api__is_numeric(cp)
                  : st->type == API__P_WSPLIT ? (api__bert_class(cp) & API__BERT_SPACE) != 0
                  : st->type == API__P_PUNCT  ? (api__bert_class(cp) & API__BERT_PUNCT) != 0
                                              : cp == st->ch;
        if (hit) {
            if (k == w->mcap) {
                size_t cap = w->mcap ? 2 * w->mcap : 64;
                api__span *g = realloc(w->m, cap * sizeof *g);
                if (!g) return -1;
                w->m = g, w->mcap = cap;
            }
            w->m[k++] = (api__span){i, i + len};
        }
        i += len;
    }
    return (long)k;
}

/* Metaspace: a new piece with ' ' as the replacement, prepended as the
 * scheme says; *p becomes it. */
static int metaspace_text(api__work *w, const api__step *st, struct api__piece *p) {
    size_t spaces = 0;
    for (size_t i = 0; i < p->len; i++) spaces += w->arena[p->off + i] == ' ';
    if (reserve(w, p->len + (spaces + 1) * st->na)) return API_BPE_ENOMEM;
    const char *src = w->arena + p->off;
    char *dst = w->arena + w->used;
    size_t o = 0;
    int starts = p->len >= st->na && memcmp(src, st->a, st->na) == 0;
    starts |= p->len > 0 && src[0] == ' '; /* it will: spaces become the replacement first */
    if (!starts && (st->prepend == API__ALWAYS || (st->prepend == API__FIRST && p->at_start)))
        memcpy(dst, st->a, st->na), o += st->na;
    for (size_t i = 0; i < p->len; i++) {
        if (src[i] == ' ') memcpy(dst + o, st->a, st->na), o += st->na;
        else dst[o++] = src[i];
    }
    *p = (struct api__piece){w->used, o, p->at_start};
    w->used += o;
    return 0;
}

/* One pre-tokenizer step on piece p: its parts into w->q. */
static int pre_step(const api__hf *h, api__work *w, const api__step *st, struct api__piece p) {
    long k = 0;
    if (st->type == API__P_BYTELEVEL && st->prefix_space && w->arena[p.off] != ' ') {
        if (reserve(w, p.len + 1)) return API_BPE_ENOMEM;
        w->arena[w->used] = ' ';
        memcpy(w->arena + w->used + 1, w->arena + p.off, p.len);
        p = (struct api__piece){w->used, p.len + 1, p.at_start};
        w->used += p.len;
    }
    if (st->type == API__P_METASPACE && metaspace_text(w, st, &p)) return API_BPE_ENOMEM;
    if (st->type == API__P_SPLIT) k = api__re_find(st->re, w->arena + p.off, p.len, &w->m, &w->mcap);
    else if (st->type == API__P_BYTELEVEL && st->use_regex)
        k = api__re_find(h->gpt2_re, w->arena + p.off, p.len, &w->m, &w->mcap);
    else if (st->type == API__P_DIGITS || (st->type == API__P_METASPACE && st->split) ||
             st->type == API__P_WSPLIT || st->type == API__P_PUNCT)
        k = char_matches(w, w->arena + p.off, p.len, st);
    else
        return emit(w, p.off, p.len, p.at_start);
    if (k < 0) return API_BPE_ENOMEM;
    int behavior = st->type == API__P_SPLIT || st->type == API__P_PUNCT ? st->behavior
                   : st->type == API__P_WSPLIT                          ? API__REMOVED
                   : st->type == API__P_METASPACE                       ? API__MERGED_NEXT
                   : st->type == API__P_DIGITS && !st->split ? API__CONTIGUOUS
                                                             : API__ISOLATED;
    return cut(w, p, w->m, (size_t)k, behavior, st->type == API__P_SPLIT && st->invert);
}

int api__hf_pretokenize(const api__hf *h, api__work *w, const char *s, size_t n, int at_start) {
    w->used = w->np = w->nq = 0;
    if (reserve(w, n + 1)) return API_BPE_ENOMEM;
    memcpy(w->arena, s, n);
    w->used = n;
    int rc = emit(w, 0, n, at_start);
    for (size_t i = 0; rc == 0 && i < h->n_pre; i++) {
        struct api__piece *t = w->p;
        size_t tn = w->nq, tcap = w->pcap;
        w->p = w->q, w->np = tn, w->pcap = w->qcap; /* the pieces so far become the input */
        w->q = t, w->qcap = tcap, w->nq = 0;
        for (size_t j = 0; rc == 0 && j < w->np; j++) rc = pre_step(h, w, &h->pre[i], w->p[j]);
    }
    /* the result is in w->q: hand it over as w->p */
    struct api__piece *t = w->p;
    size_t tcap = w->pcap;
    w->p = w->q, w->np = w->nq, w->pcap = w->qcap;
    w->q = t, w->qcap = tcap, w->nq = 0;
    return rc;
}

void api__work_free(api__work *w) {
    free(w->arena);
    free(w->p);
    free(w->q);
    free(w->m);
    free(w->sym);
    free(w->heap);
    free(w->word);
}
