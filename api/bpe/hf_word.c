/* hf_word.c - the BPE model on one pre-token, as models/bpe/model.rs
 * (merge_word: each character's token, else its <0xNN> bytes, else unk,
 * fused when fuse_unk; ignore_merges: a pre-token in the vocabulary is that
 * token) and word.rs (merge_all: the pair of lowest rank first, the leftmost
 * of equal ranks, pairs made by a merge queued at once). */
#include "wp.h"

#include <stdlib.h>
#include <string.h>

typedef struct api__heapent ent;

static int before(ent a, ent b) {
    return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos);
}

static void heap_push(api__work *w, ent e) {
    size_t i = w->nheap++;
    while (i > 0 && before(e, w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = e;
}

static ent heap_pop(api__work *w) {
    ent top = w->heap[0], last = w->heap[--w->nheap];
    size_t i = 0, n = w->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && before(w->heap[c + 1], w->heap[c])) c++;
        if (!before(w->heap[c], last)) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n) w->heap[i] = last;
    return top;
}

/* Queues the pair that starts at symbol i, when it merges. */
static void queue_pair(const api_bpe *t, api__work *w, int32_t i) {
    int32_t j = w->sym[i].next, rank, merged;
    if (j >= 0 && api__bpe_merge_get(t, w->sym[i].c, w->sym[j].c, &rank, &merged))
        heap_push(w, (ent){rank, i, merged});
}

/* Word::merge_all on w->sym[0 .. n). */
static void merge_all(const api_bpe *t, api__work *w, size_t n) {
    w->nheap = 0;
    for (size_t i = 0; i + 1 < n; i++) queue_pair(t, w, (int32_t)i);
    while (w->nheap) {
        ent top = heap_pop(w);
        struct api__sym *s = &w->sym[top.pos];
        int32_t rank, merged;
        if (s->len == 0 || s->next < 0) continue;
        struct api__sym *r = &w->sym[s->next];
        if (!api__bpe_merge_get(t, s->c, r->c, &rank, &merged) || merged != top.id) continue;
        s->c = top.id;
        s->len += r->len;
        s->next = r->next;
        r->len = 0;
        if (s->next >= 0) w->sym[s->next].prev = top.pos;
        if (s->prev >= 0) queue_pair(t, w, s->prev);
        queue_pair(t, w, top.pos);
    }
}

static void add(api__work *w, size_t *n, int32_t c, int32_t len) {
    w->sym[*n] = (struct api__sym){c, (int32_t)*n - 1, -1, len};
    if (*n > 0) w->sym[*n - 1].next = (int32_t)*n;
    (*n)++;
}

/* The unit at s[i]: a byte of a byte-level word, else a character; its
 * token (-1 if none) and its length. */
static int32_t unit(const api_bpe *t, const char *s, size_t n, size_t i, size_t *len) {
    const api__hf *h = t->hf;
    unsigned char c = (unsigned char)s[i];
    if (h->byte_level) return *len = 1, t->byte_id[c];
    if (c < 0x80) return *len = 1, h->ascii[c];
    uint32_t cp;
    *len = api__bpe_utf8((const unsigned char *)s + i, n - i, &cp);
    if (*len == 0) *len = 1;
    return api__map_get(&h->vocab, s + i, *len);
}

/* The <0xNN> tokens of a unit's bytes as the model writes it (a byte
 * symbol's UTF-8 in a byte-level word); 0 if one is missing. */
static int fallback(const api_bpe *t, api__work *w, size_t *n, const char *u, size_t len) {
    if (t->hf->byte_level) len = t->hf->sym_len[(unsigned char)u[0]], u = t->hf->sym[(unsigned char)u[0]];
    for (size_t k = 0; k < len; k++)
        if (t->hf->fallback[(unsigned char)u[k]] < 0) return 0;
    for (size_t k = 0; k < len; k++) add(w, n, t->hf->fallback[(unsigned char)u[k]], 1);
    return 1;
}

/* merge_word: the symbols of s[0 .. n) into w->sym; their count. */
static size_t symbols(const api_bpe *t, api__work *w, const char *s, size_t n) {
    const api__hf *h = t->hf;
    size_t count = 0;
    int32_t unk_len = 0; /* a pending unk of that many bytes */
    for (size_t i = 0, len; i < n; i += len) {
        int32_t id = unit(t, s, n, i, &len);
        if (id >= 0) {
            if (unk_len) add(w, &count, h->unk, unk_len), unk_len = 0;
            add(w, &count, id, (int32_t)len);
        } else if (h->byte_fallback && fallback(t, w, &count, s + i, len)) {
            continue;
        } else if (h->unk >= 0) {
            if (unk_len && !h->fuse_unk) add(w, &count, h->unk, unk_len), unk_len = 0;
            unk_len += (int32_t)len;
        }
    }
    if (unk_len) add(w, &count, h->unk, unk_len);
    return count;
}

/* ignore_merges: the token of the whole word, -1 if none, -2 when out of memory. */
static int32_t whole(const api_bpe *t, api__work *w, const char *s, size_t n) {
    if (!t->hf->byte_level) return api__map_get(&t->hf->vocab, s, n);
    if (w->wcap < 2 * n) {
        char *g = realloc(w->word, 2 * n);
        if (!g) return -2;
        w->word = g, w->wcap = 2 * n;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];
        memcpy(w->word + o, t->hf->sym[b], t->hf->sym_len[b]);
        o += t->hf->sym_len[b];
    }
    return api__map_get(&t->hf->vocab, w->word, o);
}

int api__hf_word(const api_bpe *t, api__work *w, const char *s, size_t n, api__ids *out) {
    if (t->hf->wordpiece) return api__wp_word(t->hf, w, s, n, out);
    if (t->hf->ignore_merges) {
        int32_t id = whole(t, w, s, n);
        if (id == -2) return API_BPE_ENOMEM;
        if (id >= 0) return api__ids_push(out, id);
    }
    size_t need = 4 * n + 1; /* a unit gives at most 4 fallback bytes */
    if (w->scap < need) {
        struct api__sym *g = realloc(w->sym, need * sizeof *g);
        ent *hp = realloc(w->heap, 3 * need * sizeof *hp);
        if (g) w->sym = g;
        if (hp) w->heap = hp;
        if (!g || !hp) return API_BPE_ENOMEM;
        w->scap = need;
    }
    size_t count = symbols(t, w, s, n);
    merge_all(t, w, count);
    int rc = 0;
    for (int32_t i = count ? 0 : -1; i >= 0 && rc == 0; i = w->sym[i].next) rc = api__ids_push(out, w->sym[i].c);
    return rc;
}
