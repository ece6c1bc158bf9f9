/* cache.h - the key/value cache of incremental decoding (private to core/:
 * cache.c owns it, decode.c runs a step on it, model_attend.c fills it
 * during a prefill). */
#ifndef ATTN_CACHE_H
#define ATTN_CACHE_H

#include "internal.h"

struct attn_gpt2_cache {
    attn_gpt2_plan plan;  /* the model with B = batch, T = 1, eval: one step's sizes */
    int capacity, length; /* positions the cache can hold, and holds */
    float *k, *v;         /* [n_layer][B][H][capacity][D] */
    /* one step's work space */
    float *x, *h, *z, *a; /* [B][C] each */
    float *qkv;           /* [B][3C] */
    float *m;             /* [B][4C] */
    float *scores;        /* [B][H][capacity] */
};

/* Keys (or values, which = 1) of block l, batch row b, head h: [capacity][D]. */
float *attn__cache_at(const attn_gpt2_cache *c, int which, int l, int b, int h);

/* Stores the keys and values of positions [0, T) of block l from a
 * forward's qkv [B][T][3C] (token-major: queries, keys, values). */
void attn__cache_store(attn_gpt2_cache *c, int l, const float *qkv, int T);

/* ATTN_OK if plan describes the cache's model and batch in eval mode with
 * T <= capacity; otherwise an error naming the mismatch. */
int attn__cache_accepts(const attn_gpt2_cache *c, const attn_gpt2_plan *plan, attn_error *err);

#endif
