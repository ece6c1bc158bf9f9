/* cache.c - the key/value cache object: its size, one allocation for the
 * keys, the values, every sequence's length and a step's work space, and
 * the stores of a prefill or a step. */
#include "core/lm/lm.h"

#include <stdlib.h>
#include <string.h>

/* The keys and values, and a step's work space for `seqs` rows, in floats,
 * overflow-checked. */
static int cache_floats(const attn_lm_plan *p, int seqs, int capacity, size_t *kv, size_t *work) {
    size_t one;
    *kv = *work = 0;
    if (!attn__mul((size_t)p->n_layer, (size_t)seqs, &one) ||
        !attn__mul(one, (size_t)capacity, &one) || !attn__mul(one, (size_t)p->KVD, &one) ||
        !attn__mul(one, 2, kv))
        return 0;
    size_t scores; /* the largest part of a step's work space */
    if (!attn__mul((size_t)seqs * (size_t)p->H, (size_t)capacity, &scores)) return 0;
    *work = attn__step_work_floats(p, seqs, capacity);
    return *kv <= ATTN_MAX_ELEMENTS - *work;
}

static int cache_plan(const attn_lm_config *cfg, int seqs, int capacity, attn_lm_plan *p,
                      size_t *kv, size_t *work, attn_error *err) {
    if (cfg == NULL) return attn__fail(err, ATTN_ERR_ARG, "", "config must not be NULL");
    int rc = attn_lm_plan_make(cfg, seqs, 1, 0, p, err);
    if (rc) return rc;
    if (p->spec.bidirectional) /* every token's keys change with each new token */
        return attn__fail(err, ATTN_ERR_ARG, "cache", "%s is an encoder (two-way attention): it "
                          "has no cache of keys and values to decode with", attn_arch_name(cfg->arch));
    const char *context = attn__hparam_name(attn__arch_get(cfg->arch), ATTN_HP_CONTEXT);
    if (capacity < 1 || capacity > p->cfg.context)
        return attn__fail(err, ATTN_ERR_SHAPE, "capacity",
                          "the cache's capacity must be in [1, %s %d], got %d", context,
                          p->cfg.context, capacity);
    if (!cache_floats(p, seqs, capacity, kv, work))
        return attn__fail(err, ATTN_ERR_RANGE, "capacity", "the cache would exceed %zu elements",
                          (size_t)ATTN_MAX_ELEMENTS);
    return ATTN_OK;
}

static size_t cache_size(int seqs, size_t kv, size_t work) {
    return sizeof(attn_lm_cache) + 2 * (size_t)seqs * sizeof(int) + 128 + (kv + work) * sizeof(float);
}

int attn_lm_cache_bytes(const attn_lm_config *cfg, int seqs, int capacity, size_t *bytes,
                        attn_error *err) {
    attn_lm_plan p;
    size_t kv = 0, work = 0;
    int rc = cache_plan(cfg, seqs, capacity, &p, &kv, &work, err);
    if (rc) return rc;
    if (bytes) *bytes = cache_size(seqs, kv, work);
    return ATTN_OK;
}

int attn_lm_cache_create(const attn_lm_config *cfg, int seqs, int capacity,
                         attn_lm_cache **cache, attn_error *err) {
    if (cache == NULL) return attn__fail(err, ATTN_ERR_ARG, "cache", "cache must not be NULL");
    *cache = NULL;
    attn_lm_plan p;
    size_t kv = 0, work = 0;
    int rc = cache_plan(cfg, seqs, capacity, &p, &kv, &work, err);
    if (rc) return rc;
    size_t bytes = cache_size(seqs, kv, work);
    attn_lm_cache *c = malloc(bytes);
    if (c == NULL)
        return attn__fail(err, ATTN_ERR_NOMEM, "cache", "cannot allocate %zu bytes for the cache",
                          bytes);
    *c = (attn_lm_cache){.plan = p, .seqs = seqs, .capacity = capacity};
    c->length = (int *)(c + 1), c->next_pos = c->length + seqs;
    uintptr_t at = ((uintptr_t)(c->next_pos + seqs) + 63) & ~(uintptr_t)63;
    c->k = (float *)at, c->v = c->k + kv / 2, c->work = c->v + kv / 2;
    memset(c->length, 0, 2 * (size_t)seqs * sizeof(int));
    *cache = c;
    return ATTN_OK;
}

void attn_lm_cache_free(attn_lm_cache *cache) { free(cache); }

int attn_lm_cache_length(const attn_lm_cache *cache, int seq) {
    return cache && seq >= 0 && seq < cache->seqs ? cache->length[seq] : 0;
}

int attn_lm_cache_capacity(const attn_lm_cache *cache) { return cache ? cache->capacity : 0; }

int attn_lm_cache_seqs(const attn_lm_cache *cache) { return cache ? cache->seqs : 0; }

size_t attn_lm_cache_size(const attn_lm_cache *cache) {
    size_t bytes = 0;
    if (cache) attn_lm_cache_bytes(&cache->plan.cfg, cache->seqs, cache->capacity, &bytes, NULL);
    return bytes;
}

void attn_lm_cache_reset(attn_lm_cache *cache, int seq) {
    for (int s = 0; cache && s < cache->seqs; s++)
        if (seq < 0 || s == seq) cache->length[s] = cache->next_pos[s] = 0;
}

int attn_lm_cache_truncate(attn_lm_cache *cache, int seq, int length, attn_error *err) {
    if (cache == NULL || seq < 0 || seq >= cache->seqs)
        return attn__fail(err, ATTN_ERR_ARG, "seq", "seq must be in [0, %d), got %d",
                          cache ? cache->seqs : 0, seq);
    if (length < 0 || length > cache->length[seq])
        return attn__fail(err, ATTN_ERR_ARG, "length", "length must be in [0, %d], got %d",
                          cache->length[seq], length);
    cache->next_pos[seq] -= cache->length[seq] - length;
    cache->length[seq] = length;
    return ATTN_OK;
}

float *attn__cache_at(const attn_lm_cache *c, int which, int l, int s, int h) {
    const attn_lm_plan *p = &c->plan;
    size_t head = ((size_t)l * (size_t)c->seqs + (size_t)s) * (size_t)p->Hkv + (size_t)h;
    return (which ? c->v : c->k) + head * (size_t)c->capacity * (size_t)p->D;
}

void attn__cache_store(const attn__run *r, int l) {
    const attn_lm_plan *p = r->p;
    size_t W = (size_t)p->QD + 2 * (size_t)p->KVD, D = (size_t)p->D;
    for (int i = 0; i < r->rows; i++) {
        int seq = r->step ? r->seq[i] : i / p->T, slot = r->step ? r->slot[i] : i % p->T;
        const float *row = r->qkv + (size_t)i * W + (size_t)p->QD;
        for (int h = 0; h < p->Hkv; h++)
            for (int which = 0; which < 2; which++)
                memcpy(attn__cache_at(r->step && r->row_cache ? r->row_cache[i] : r->cache, which, l, seq, h) + (size_t)slot * D,
                       row + (size_t)which * (size_t)p->KVD + (size_t)h * D, D * sizeof(float));
    }
}

int attn__cache_accepts(const attn_lm_cache *c, const attn_lm_plan *plan, attn_error *err) {
    if (plan->training)
        return attn__fail(err, ATTN_ERR_ARG, "training",
                          "a cache is filled in eval mode only (dropout would change the keys)");
    int same = c->plan.cfg.arch == plan->cfg.arch;
    for (int h = 0; same && h < ATTN_HP_COUNT; h++) /* dropout plays no part in eval mode */
        same = h == ATTN_HP_DROPOUT || attn_lm_config_get(&c->plan.cfg, (attn_hparam)h) ==
               attn_lm_config_get(&plan->cfg, (attn_hparam)h);
    if (!same) return attn__fail(err, ATTN_ERR_ARG, "cache", "the cache was made for another model");
    if (plan->B > c->seqs)
        return attn__fail(err, ATTN_ERR_SHAPE, "cache", "the cache holds %d sequences, not %d",
                          c->seqs, plan->B);
    if (plan->T > c->capacity)
        return attn__fail(err, ATTN_ERR_SHAPE, "cache", "%d tokens exceed the cache's capacity %d",
                          plan->T, c->capacity);
    return ATTN_OK;
}
