/* batch.h - continuous batching of the generations' decode steps: every
 * generation that is ready gives its rows to one step (core's
 * attn_lm_step_caches: one pass over the weights for all of them, each row
 * attending over its own generation's cache).
 *
 * No thread of its own: a generation thread that has its rows in and finds
 * no step running and no other generation about to come (between two of
 * its steps: sampling, writing its token) leads the step for all that are
 * in, on its thread; the others wait for their results. Generations join
 * and leave between steps. One that computes alone for a while (a prompt's
 * prefill, the context window's recompute) or whose client is not reading
 * (its stream full) is away: nobody waits for it. A step also goes without
 * a late generation after SRV_BATCH_WAIT_MS, so that nothing missed can
 * stall the others.
 *
 * One engine serves every model: a step takes the rows of one model (the
 * leader's params), the others the next. A step's rows are those of the
 * caches' sequences (a generation of B rows gives B), at most max_rows.
 */
#ifndef SRV_BATCH_H
#define SRV_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "core/lm.h"

#define SRV_BATCH_WAIT_MS 50

typedef struct srv_batch srv_batch;
typedef struct srv_batch_member srv_batch_member;

/* An engine whose steps take at most max_rows rows; NULL on OOM. */
srv_batch *srv_batch_create(int max_rows);
/* Frees; every member must have left. Accepts NULL. */
void srv_batch_destroy(srv_batch *b);

/* A generation joins (away until its first step) and leaves; join is NULL
 * on OOM (the generation then steps alone). */
srv_batch_member *srv_batch_join(srv_batch *b);
void srv_batch_leave(srv_batch *b, srv_batch_member *m);

/* attn_lm_decode(cache, params, tokens, pool, {logits}, err) in the next
 * step with the other members' rows: logits [seqs][vocab]. */
int srv_batch_decode(srv_batch *b, srv_batch_member *m, attn_lm_cache *cache, const void *params,
                     const int32_t *tokens, float *logits, int vocab, attn_pool *pool,
                     attn_error *err);
/* m computes alone or waits for its client: no step waits for it until its
 * next srv_batch_decode (away) or until back. */
void srv_batch_away(srv_batch *b, srv_batch_member *m);
void srv_batch_back(srv_batch *b, srv_batch_member *m);

typedef struct {
    int members, away;               /* generations joined, of them away */
    size_t cache_bytes;              /* the key/value caches of the members that have stepped */
    unsigned long long steps, rows;  /* steps run, rows they took */
    unsigned long long by_rows[8];   /* steps of 1, 2, 3-4, 5-8, 9-16, 17-32, 33-64, more rows */
} srv_batch_stats;
void srv_batch_get_stats(srv_batch *b, srv_batch_stats *s);

#endif
