/* cache.c - the key/value cache object: its size, one allocation for the
 * keys, the values and a step's work space, and the prefill's stores. */
#include "cache.h"

#include <stdlib.h>
#include <string.h>

/* The step's work space and the keys and values, in floats, overflow-checked. */
static int cache_floats(const attn_gpt2_plan *p, int capacity, size_t *kv, size_t *work) {
    size_t B = (size_t)p->B, C = (size_t)p->C, one;
    if (!attn__mul((size_t)p->n_layer, B, &one) || !attn__mul(one, (size_t)capacity, &one) ||
        !attn__mul(one, C, &one) || !attn__mul(one, 2, kv))
        return 0;
    /* x h z a (4C), qkv (3C), m (4C) per row, then [B][H][capacity] scores */
    size_t rows = B * 11 * C, scores;
    if (!attn__mul(B * (size_t)p->H, (size_t)capacity, &scores)) return 0;
    *work = rows + scores;
    return *kv <= ATTN_MAX_ELEMENTS - *work;
}

static int cache_plan(const attn_gpt2_config *cfg, int batch, int capacity, attn_gpt2_plan *p,
                      size_t *kv, size_t *work, attn_error *err) {
    if (cfg == NULL) return attn__fail(err, ATTN_ERR_ARG, "", "config must not be NULL");
    int rc = attn_gpt2_plan_make(cfg, batch, 1, 0, p, err);
    if (rc) return rc;
    const char *context = attn_family_get(cfg->family)->context_name;
    if (capacity < 1 || capacity > cfg->block_size)
        return attn__fail(err, ATTN_ERR_SHAPE, "capacity",
                          "the cache's capacity must be in [1, %s %d], got %d", context,
                          cfg->block_size, capacity);
    if (!cache_floats(p, capacity, kv, work))
        return attn__fail(err, ATTN_ERR_RANGE, "capacity", "the cache would exceed %zu elements",
                          (size_t)ATTN_MAX_ELEMENTS);
    return ATTN_OK;
}

int attn_gpt2_cache_bytes(const attn_gpt2_config *cfg, int batch, int capacity, size_t *bytes,
                          attn_error *err) {
    attn_gpt2_plan p;
    size_t kv, work;
    int rc = cache_plan(cfg, batch, capacity, &p, &kv, &work, err);
    if (rc) return rc;
    if (bytes) *bytes = sizeof(attn_gpt2_cache) + 64 + (kv + work) * sizeof(float);
    return ATTN_OK;
}

int attn_gpt2_cache_create(const attn_gpt2_config *cfg, int batch, int capacity,
                           attn_gpt2_cache **cache, attn_error *err) {
    if (cache == NULL) return attn__fail(err, ATTN_ERR_ARG, "cache", "cache must not be NULL");
    *cache = NULL;
    attn_gpt2_plan p;
    size_t kv, work;
    int rc = cache_plan(cfg, batch, capacity, &p, &kv, &work, err);
    if (rc) return rc;
    size_t bytes = sizeof(attn_gpt2_cache) + 64 + (kv + work) * sizeof(float);
    attn_gpt2_cache *c = malloc(bytes);
    if (c == NULL)
        return attn__fail(err, ATTN_ERR_NOMEM, "cache", "cannot allocate %zu bytes for the cache",
                          bytes);
    *c = (attn_gpt2_cache){.plan = p, .capacity = capacity};
    uintptr_t at = ((uintptr_t)(c + 1) + 63) & ~(uintptr_t)63;
    size_t BC = (size_t)batch * (size_t)p.C;
    c->k = (float *)at, c->v = c->k + kv / 2;
    c->x = c->v + kv / 2, c->h = c->x + BC, c->z = c->h + BC, c->a = c->z + BC;
    c->qkv = c->a + BC, c->m = c->qkv + 3 * BC, c->scores = c->m + 4 * BC;
    *cache = c;
    return ATTN_OK;
}

void attn_gpt2_cache_free(attn_gpt2_cache *cache) { free(cache); }

int attn_gpt2_cache_length(const attn_gpt2_cache *cache) { return cache ? cache->length : 0; }

int attn_gpt2_cache_capacity(const attn_gpt2_cache *cache) { return cache ? cache->capacity : 0; }

void attn_gpt2_cache_reset(attn_gpt2_cache *cache) {
    if (cache) cache->length = 0;
}

int attn_gpt2_cache_truncate(attn_gpt2_cache *cache, int length, attn_error *err) {
    if (cache == NULL || length < 0 || length > cache->length)
        return attn__fail(err, ATTN_ERR_ARG, "length", "length must be in [0, %d], got %d",
                          cache ? cache->length : 0, length);
    cache->length = length;
    return ATTN_OK;
}

float *attn__cache_at(const attn_gpt2_cache *c, int which, int l, int b, int h) {
    const attn_gpt2_plan *p = &c->plan;
    size_t head = ((size_t)l * (size_t)p->B + (size_t)b) * (size_t)p->H + (size_t)h;
    return (which ? c->v : c->k) + head * (size_t)c->capacity * (size_t)p->D;
}

void attn__cache_store(attn_gpt2_cache *c, int l, const float *qkv, int T) {
    const attn_gpt2_plan *p = &c->plan;
    size_t C = (size_t)p->C, D = (size_t)p->D;
    for (int b = 0; b < p->B; b++)
        for (int h = 0; h < p->H; h++)
            for (int which = 0; which < 2; which++) {
                float *dst = attn__cache_at(c, which, l, b, h);
                const float *src = qkv + (size_t)b * (size_t)T * 3 * C + (1 + (size_t)which) * C +
                                   (size_t)h * D;
                for (int t = 0; t < T; t++)
                    memcpy(dst + (size_t)t * D, src + (size_t)t * 3 * C, D * sizeof(float));
            }
}

int attn__cache_accepts(const attn_gpt2_cache *c, const attn_gpt2_plan *plan, attn_error *err) {
    const attn_gpt2_config *a = &c->plan.cfg, *b = &plan->cfg;
    if (plan->training)
        return attn__fail(err, ATTN_ERR_ARG, "training",
                          "a cache is filled in eval mode only (dropout would change the keys)");
    if (a->family != b->family || a->vocab_size != b->vocab_size ||
        a->block_size != b->block_size || a->n_layer != b->n_layer || a->n_head != b->n_head ||
        a->n_embd != b->n_embd || c->plan.gelu != plan->gelu ||
        c->plan.attn.bias != plan->attn.bias)
        return attn__fail(err, ATTN_ERR_ARG, "cache", "the cache was made for another model");
    if (plan->B != c->plan.B)
        return attn__fail(err, ATTN_ERR_SHAPE, "cache", "the cache holds %d batch rows, not %d",
                          c->plan.B, plan->B);
    if (plan->T > c->capacity)
        return attn__fail(err, ATTN_ERR_SHAPE, "cache", "%d tokens exceed the cache's capacity %d",
                          plan->T, c->capacity);
    return ATTN_OK;
}
