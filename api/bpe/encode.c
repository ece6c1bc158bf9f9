/* encode.c - the encoding functions of bpe.h: each text alone through the
 * code of its kind (hf_encode.c, gpt2_encode.c), the texts truncated as
 * utils/truncation.rs's truncate_encodings does, then the template of the
 * post-processor (hf_config.c; tokenizer/mod.rs's post_process) with its
 * special tokens and type ids. */
#include "hf.h"

#include <stdlib.h>
#include <string.h>

/* vocab.json + merges.txt: no special tokens, A then B with type id 1. */
static const api__tpl_item plain[2][2] = {{{API__TPL_A, 0}, {0, 0}}, {{API__TPL_A, 0}, {API__TPL_B, 1}}};

/* The template of one text (pair 0) or of a pair; its length, 0 when the
 * file has no pair template. */
static size_t template_of(const api_bpe *t, int pair, const api__tpl_item **items) {
    if (!t->hf) return *items = plain[pair], (size_t)pair + 1;
    *items = t->hf->tpl[pair];
    return t->hf->n_tpl[pair];
}

/* One text alone (valid UTF-8, under the limit) through its kind's code;
 * where its splits end into *ends (tokenizer.json only). */
static int encode_text(const api_bpe *t, const char *text, size_t len, unsigned flags, int32_t **ids, size_t *n,
                       api__ids *ends) {
    *ids = NULL;
    *n = 0;
    if (len > API_BPE_MAX_TEXT) return API_BPE_ETOOBIG;
    for (size_t p = 0; p < len;) {
        uint32_t cp;
        size_t k = api__bpe_utf8((const unsigned char *)text + p, len - p, &cp);
        if (k == 0) return API_BPE_EUTF8;
        p += k;
    }
    if (t->hf) return api__hf_encode(t, text, len, flags & API_BPE_SPECIAL_AS_TEXT, ids, n, ends);
    if (len == 0) return 0;
    return api__gpt2_encode(t, text, len, ids, n);
}

/* The ids of a text of n that the model gives when truncation is set
 * (tokenizers 0.23's early exit, pre_tokenizer.rs' tokenize_with_limit): it
 * stops at the first split that is not an added token and brings the ids to
 * max (counting from the end when from_left), so whole splits stay, at least
 * max ids when the text has them. truncate_encodings then sees these
 * lengths, which decide which text of a pair is the longer (0.13 to 0.22
 * saw the whole texts: a pair of two texts over max_length can differ). */
static size_t early_exit(const api__ids *ends, size_t n, size_t max, int from_left) {
    size_t total = 0;
    for (size_t k = 0; k < ends->n; k++) {
        size_t i = from_left ? ends->n - 1 - k : k;
        int32_t e = ends->v[i], p = i > 0 ? ends->v[i - 1] : 0;
        total += (size_t)(e < 0 ? ~e : e) - (size_t)(p < 0 ? ~p : p);
        if (e >= 0 && total >= max) return total;
    }
    return n;
}

/* truncate_encodings: how many of the *na ids of A and *nb of B (a pair:
 * pair 1) stay when at most limit may. */
static int truncate(size_t *na, size_t *nb, int pair, size_t limit, int strategy) {
    if (limit == 0) { /* everything goes, whatever the strategy */
        *na = *nb = 0;
        return 0;
    }
    if (*na + *nb <= limit) return 0;
    size_t remove = *na + *nb - limit;
    if (strategy == API_BPE_LONGEST_FIRST && !pair) {
        *na = limit;
        return 0;
    }
    if (strategy == API_BPE_LONGEST_FIRST) { /* the shorter kept whole if it can be; else halves, the odd one to B */
        size_t n1 = *na < *nb ? *na : *nb, n2;
        n2 = n1 > limit ? n1 : (n1 > limit - n1 ? n1 : limit - n1);
        if (n1 + n2 > limit) n1 = limit / 2, n2 = n1 + limit % 2;
        size_t keep_a = *na <= *nb ? n1 : n2, keep_b = *na <= *nb ? n2 : n1;
        if (keep_a < *na) *na = keep_a;
        if (keep_b < *nb) *nb = keep_b;
        return 0;
    }
    size_t *target = strategy == API_BPE_ONLY_FIRST ? na : pair ? nb : NULL;
    if (!target || *target <= remove) return API_BPE_ETOOBIG; /* the library's errors */
    *target -= remove;
    return 0;
}

/* The template's items with A's ka ids (of na, the first ones dropped
 * when from_left) and B's into *out. */
static int assemble(const api__tpl_item *tpl, size_t nt, int add, const int32_t *ia, size_t na, size_t ka,
                    const int32_t *ib, size_t nb, size_t kb, int from_left, api_bpe_encoding *out) {
    size_t n = 0;
    for (size_t i = 0; i < nt; i++) n += tpl[i].id == API__TPL_A ? ka : tpl[i].id == API__TPL_B ? kb : (size_t)add;
    char *block = malloc(9 * n + 1); /* ids, type ids, special */
    if (!block) return API_BPE_ENOMEM;
    out->ids = (int32_t *)block;
    out->type_ids = (int32_t *)block + n;
    out->special = (uint8_t *)(block + 8 * n);
    for (size_t i = 0; i < nt; i++) {
        int32_t id = tpl[i].id;
        const int32_t *src = id == API__TPL_A ? ia + (from_left ? na - ka : 0) : ib + (from_left ? nb - kb : 0);
        size_t k = id == API__TPL_A ? ka : id == API__TPL_B ? kb : (size_t)add;
        if (id == API__TPL_A) out->a_start = out->n, out->a_len = k;
        if (id == API__TPL_B) out->b_start = out->n, out->b_len = k;
        for (size_t j = 0; j < k; j++, out->n++) {
            out->ids[out->n] = id >= 0 ? id : src[j];
            out->type_ids[out->n] = tpl[i].type_id;
            out->special[out->n] = id >= 0;
        }
    }
    out->removed = (na - ka) + (nb - kb);
    return 0;
}

int api_bpe_encode_pair(const api_bpe *t, const char *a, size_t a_len, const char *b, size_t b_len,
                        const api_bpe_opts *o, api_bpe_encoding *out) {
    static const api_bpe_opts none = {0};
    const api__tpl_item *tpl;
    int pair = b != NULL, add = o && (o->flags & API_BPE_ADD_SPECIAL);
    memset(out, 0, sizeof *out);
    if (!o) o = &none;
    size_t nt = template_of(t, pair, &tpl), na = 0, nb = 0, added = 0;
    if (nt == 0 && pair) return API_BPE_ENOTSUP;
    int32_t *ia = NULL, *ib = NULL;
    api__ids ea = {0}, eb = {0};
    int rc = encode_text(t, a, a_len, o->flags, &ia, &na, &ea);
    if (rc == 0 && pair) rc = encode_text(t, b, b_len, o->flags, &ib, &nb, &eb);
    for (size_t i = 0; add && i < nt; i++) added += tpl[i].id >= 0;
    size_t ka = na, kb = nb;
    if (o->max_length && o->strategy != API_BPE_ONLY_SECOND) ka = early_exit(&ea, na, o->max_length, o->from_left);
    if (o->max_length && pair) kb = early_exit(&eb, nb, o->max_length, o->from_left);
    free(ea.v);
    free(eb.v);
    if (rc == 0 && o->max_length)
        rc = truncate(&ka, &kb, pair, o->max_length > added ? o->max_length - added : 0, o->strategy);
    if (rc == 0) rc = assemble(tpl, nt, add, ia, na, ka, ib, nb, kb, o->from_left, out);
    free(ia);
    free(ib);
    return rc;
}

void api_bpe_encoding_free(api_bpe_encoding *e) {
    if (!e) return;
    free(e->ids);
    memset(e, 0, sizeof *e);
}

int api_bpe_encode_batch(const api_bpe *t, size_t n, const char *const *a, const size_t *a_len,
                         const char *const *b, const size_t *b_len, const api_bpe_opts *o,
                         api_bpe_encoding *out, size_t *bad) {
    for (size_t i = 0; i < n; i++) {
        int with_b = b && b[i];
        int rc = api_bpe_encode_pair(t, a[i], a_len[i], with_b ? b[i] : NULL, with_b ? b_len[i] : 0, o, &out[i]);
        if (rc) {
            for (size_t j = 0; j < i; j++) api_bpe_encoding_free(&out[j]);
            *bad = i;
            return rc;
        }
    }
    return 0;
}

int api_bpe_encode_ex(const api_bpe *t, const char *text, size_t len, unsigned flags, int32_t **ids, size_t *n) {
    if (!(flags & API_BPE_ADD_SPECIAL)) return encode_text(t, text, len, flags, ids, n, NULL);
    api_bpe_opts o = {.flags = flags};
    api_bpe_encoding e;
    *ids = NULL;
    *n = 0;
    int rc = api_bpe_encode_pair(t, text, len, NULL, 0, &o, &e);
    if (rc || e.n == 0) return api_bpe_encoding_free(&e), rc;
    *ids = e.ids; /* the type ids and mask after them go with it */
    *n = e.n;
    return 0;
}

int api_bpe_encode(const api_bpe *t, const char *text, size_t len, int32_t **ids, size_t *n) {
    return api_bpe_encode_ex(t, text, len, 0, ids, n);
}
