/* hf_map.c - the tables of a tokenizer.json pipeline: strings to ids (the
 * vocabulary) and the trie of the added tokens (hf.h). */
#include "hf.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(const char *k, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, then a final mix */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)k[i]) * 0x100000001b3ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

int api__map_init(api__map *m, size_t n, size_t key_bytes) {
    memset(m, 0, sizeof *m);
    size_t cap = 16;
    while (cap < 2 * n + 2) cap *= 2;
    m->slot = malloc(cap * sizeof *m->slot);
    m->e = malloc((n + 1) * sizeof *m->e);
    m->keys = malloc(key_bytes + 1);
    if (!m->slot || !m->e || !m->keys) return API_BPE_ENOMEM;
    for (size_t i = 0; i < cap; i++) m->slot[i] = -1;
    m->mask = cap - 1;
    m->cap = n + 1;
    m->key_cap = key_bytes + 1;
    return 0;
}

/* The slot of k: its entry's, or the free one where it would go. */
static size_t find(const api__map *m, const char *k, size_t n) {
    size_t i = (size_t)hash_bytes(k, n) & m->mask;
    for (;; i = (i + 1) & m->mask) {
        int32_t e = m->slot[i];
        if (e < 0) return i;
        if (m->e[e].len == n && memcmp(m->keys + m->e[e].off, k, n) == 0) return i;
    }
}

int api__map_put(api__map *m, const char *k, size_t n, int32_t id) {
    size_t i = find(m, k, n);
    if (m->slot[i] >= 0) {
        m->e[m->slot[i]].id = id;
        return 1;
    }
    if (m->n == m->cap || n > UINT32_MAX || m->key_cap - m->used < n) return API_BPE_ENOMEM;
    memcpy(m->keys + m->used, k, n);
    m->e[m->n] = (struct api__entry){m->used, (uint32_t)n, id};
    m->used += n;
    m->slot[i] = (int32_t)m->n++;
    return 0;
}

int32_t api__map_get(const api__map *m, const char *k, size_t n) {
    if (!m->slot) return -1;
    int32_t e = m->slot[find(m, k, n)];
    return e < 0 ? -1 : m->e[e].id;
}

void api__map_free(api__map *m) {
    free(m->slot);
    free(m->e);
    free(m->keys);
    memset(m, 0, sizeof *m);
}

/* ==== The trie ==== */

static size_t edge(const api__trie *tr, uint64_t key) {
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & tr->mask;
    while (tr->key[i] != UINT64_MAX && tr->key[i] != key) i = (i + 1) & tr->mask;
    return i;
}

/* Adds s (n bytes) as token k: walks or makes its nodes. */
static void trie_add(api__trie *tr, const char *s, size_t n, int32_t k) {
    size_t node = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t key = (uint64_t)node << 8 | (unsigned char)s[i];
        size_t e = edge(tr, key);
        if (tr->key[e] == UINT64_MAX) {
            tr->key[e] = key;
            tr->child[e] = (int32_t)tr->nodes;
            tr->term[tr->nodes++] = -1;
        }
        node = (size_t)tr->child[e];
    }
    if (tr->term[node] < 0) tr->term[node] = k; /* the same content twice: the first */
}

int api__trie_build(api__trie *tr, const char *const *s, const size_t *len, const int *use, size_t n) {
    memset(tr, 0, sizeof *tr);
    size_t total = 1;
    for (size_t i = 0; i < n; i++)
        if (use[i]) total += len[i];
    size_t cap = 16;
    while (cap < 2 * total) cap *= 2;
    tr->key = malloc(cap * sizeof *tr->key);
    tr->child = malloc(cap * sizeof *tr->child);
    tr->term = malloc(total * sizeof *tr->term);
    if (!tr->key || !tr->child || !tr->term) return API_BPE_ENOMEM;
    for (size_t i = 0; i < cap; i++) tr->key[i] = UINT64_MAX;
    tr->mask = cap - 1;
    tr->term[0] = -1;
    tr->nodes = 1;
    for (size_t i = 0; i < n; i++)
        if (use[i] && len[i] > 0) trie_add(tr, s[i], len[i], (int32_t)i);
    return 0;
}

int32_t api__trie_longest(const api__trie *tr, const char *s, size_t n, size_t *m) {
    int32_t best = -1;
    size_t node = 0;
    if (tr->nodes <= 1) return -1;
    for (size_t i = 0; i < n; i++) {
        size_t e = edge(tr, (uint64_t)node << 8 | (unsigned char)s[i]);
        if (tr->key[e] == UINT64_MAX) break;
        node = (size_t)tr->child[e];
        if (tr->term[node] >= 0) best = tr->term[node], *m = i + 1;
    }
    return best;
}

void api__trie_free(api__trie *tr) {
    free(tr->key);
    free(tr->child);
    free(tr->term);
    memset(tr, 0, sizeof *tr);
}
