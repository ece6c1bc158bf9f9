/* hf_lookup.c - a tokenizer.json's ids by the strings of the file (added
 * tokens first, then the model's vocabulary: TokenizerImpl::token_to_id) and
 * the kind of each id. For vocab.json + merges.txt, the ids of GPT-2's byte
 * symbols. */
#include "hf.h"

#include <stdlib.h>
#include <string.h>

int api__hf_exists(const api_bpe *t, int32_t id) {
    return id >= 0 && (size_t)id < t->n_vocab && (t->hf->flags[id] & API__T_EXISTS);
}

int api__hf_is_special(const api_bpe *t, int32_t id) {
    return (t->hf->flags[id] & API__T_SPECIAL) != 0;
}

/* vocab.json + merges.txt: s in byte symbols ("Ġthe") to bytes, then the
 * token of those bytes. */
static int32_t gpt2_token_id(const api_bpe *t, const char *s, size_t n) {
    uint32_t sym[256];
    int16_t inverse[324];
    api__bpe_byte_symbols(sym, inverse);
    char *b = malloc(n + 1);
    size_t m = 0;
    if (!b) return -1;
    for (size_t p = 0; p < n;) {
        uint32_t cp;
        size_t k = api__bpe_utf8((const unsigned char *)s + p, n - p, &cp);
        if (k == 0 || cp >= 324 || inverse[cp] < 0) return free(b), -1;
        b[m++] = (char)inverse[cp];
        p += k;
    }
    int32_t found = -1;
    for (size_t id = 0; id < t->n_vocab && found < 0; id++)
        if (t->off[id + 1] - t->off[id] == m && memcmp(t->bytes + t->off[id], b, m) == 0) found = (int32_t)id;
    free(b);
    return found;
}

int32_t api__hf_token_id(const api_bpe *t, const char *s, size_t n) {
    if (!t->hf) return gpt2_token_id(t, s, n);
    const api__hf *h = t->hf;
    for (size_t i = 0; i < h->n_added; i++)
        if (h->added[i].len == n && memcmp(h->added[i].content, s, n) == 0) return h->added[i].id;
    return api__map_get(&h->vocab, s, n);
}
