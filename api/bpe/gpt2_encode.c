/* gpt2_encode.c - GPT-2's encoding as OpenAI's encoder.py computes it: the
 * pre-tokenizer pattern by hand (split.c), each piece's bytes merged by rank,
 * every occurrence of the best pair before the pairs those merges made. */
#include "bpe_internal.h"

#include <stdlib.h>

typedef struct {
    int32_t rank, pos;
} heap_entry;

/* The work area of one call, sized for the longest piece (m bytes). */
typedef struct {
    int32_t *sym, *prev, *next, *pending;
    heap_entry *heap;
    size_t n_heap, n_pending;
} work;

static int entry_less(heap_entry a, heap_entry b) {
    return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos);
}

static void heap_push(work *w, heap_entry e) {
    size_t i = w->n_heap++;
    while (i > 0 && entry_less(e, w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = e;
}

static heap_entry heap_pop(work *w) {
    heap_entry top = w->heap[0], last = w->heap[--w->n_heap];
    size_t i = 0, n = w->n_heap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && entry_less(w->heap[c + 1], w->heap[c])) c++;
        if (!entry_less(w->heap[c], last)) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n) w->heap[i] = last;
    return top;
}

/* Pushes the pair that starts at node i, when it merges. */
static void push_pair(const api_bpe *t, work *w, int32_t i) {
    int32_t j = w->next[i], rank, merged;
    if (j >= 0 && api__bpe_merge_get(t, w->sym[i], w->sym[j], &rank, &merged))
        heap_push(w, (heap_entry){rank, i});
}

/* BPE of one piece of m bytes, as encoder.py's bpe(): merge every occurrence
 * of the lowest-ranked pair, left to right, and again, until none merges.
 * Pairs made by merges of one rank enter the heap only after every occurrence
 * of that rank is merged (pending), so the order is encoder.py's for any
 * merges file. Appends the tokens to ids[*n]. */
static void bpe_piece(const api_bpe *t, work *w, const unsigned char *p, size_t m, int32_t *ids,
                      size_t *n) {
    if (m == 1) {
        ids[(*n)++] = t->byte_id[p[0]];
        return;
    }
    for (size_t i = 0; i < m; i++) {
        w->sym[i] = t->byte_id[p[i]];
        w->prev[i] = (int32_t)i - 1;
        w->next[i] = i + 1 < m ? (int32_t)i + 1 : -1;
    }
    w->n_heap = w->n_pending = 0;
    for (size_t i = 0; i + 1 < m; i++) push_pair(t, w, (int32_t)i);
    int32_t current = -1;
    for (;;) {
        if (w->n_pending && (w->n_heap == 0 || w->heap[0].rank != current)) {
            for (size_t k = 0; k < w->n_pending; k++)
                if (w->sym[w->pending[k]] >= 0) push_pair(t, w, w->pending[k]);
            w->n_pending = 0;
        }
        if (w->n_heap == 0) break;
        heap_entry e = heap_pop(w);
        int32_t i = e.pos, j = w->next[i], rank, merged;
        if (w->sym[i] < 0 || j < 0 || !api__bpe_merge_get(t, w->sym[i], w->sym[j], &rank, &merged) ||
            rank != e.rank)
            continue; /* stale: a merge changed this pair */
        current = rank;
        w->sym[i] = merged;
        w->sym[j] = -1;
        int32_t k = w->next[j];
        w->next[i] = k;
        if (k >= 0) w->prev[k] = i;
        if (w->prev[i] >= 0) w->pending[w->n_pending++] = w->prev[i];
        w->pending[w->n_pending++] = i;
    }
    for (int32_t i = 0; i >= 0; i = w->next[i]) ids[(*n)++] = w->sym[i];
}

int api__gpt2_encode(const api_bpe *t, const char *text, size_t len, int32_t **ids, size_t *n) {
    /* valid UTF-8, and the longest piece */
    for (size_t p = 0; p < len;) {
        uint32_t cp;
        size_t k = api__bpe_utf8((const unsigned char *)text + p, len - p, &cp);
        if (k == 0) return API_BPE_EUTF8;
        p += k;
    }
    size_t longest = 0;
    for (size_t p = 0; p < len;) {
        size_t m = api__bpe_next_piece(text, len, p);
        if (m > longest) longest = m;
        p += m;
    }
    work w = {0};
    int32_t *out = malloc(len * sizeof *out);
    w.sym = malloc(longest * sizeof *w.sym);
    w.prev = malloc(longest * sizeof *w.prev);
    w.next = malloc(longest * sizeof *w.next);
    w.pending = malloc(2 * longest * sizeof *w.pending);
    w.heap = malloc(3 * longest * sizeof *w.heap);
    int rc = 0;
    if (!out || !w.sym || !w.prev || !w.next || !w.pending || !w.heap) {
        rc = API_BPE_ENOMEM;
    } else {
        for (size_t p = 0; p < len;) {
            size_t m = api__bpe_next_piece(text, len, p);
            bpe_piece(t, &w, (const unsigned char *)text + p, m, out, n);
            p += m;
        }
    }
    free(w.sym);
    free(w.prev);
    free(w.next);
    free(w.pending);
    free(w.heap);
    if (rc) {
        free(out);
        *n = 0;
        return rc;
    }
    *ids = out;
    return 0;
}
