/* parallel.h - splitting one call's work over the threads of an attn_pool
 * (private).
 *
 * A call cuts its work into items whose number and boundaries depend only on
 * the shapes, never on the thread count, and each item writes its own part
 * of the outputs with one fixed sequence of operations. Which thread runs an
 * item therefore cannot change a single bit of the result; the split only
 * decides how many cores the call gets.
 */
#ifndef ATTN_PARALLEL_H
#define ATTN_PARALLEL_H

#include "attention.h"

/* One item of work. `slot` (0 <= slot < attn__pool_width) names the thread's
 * private scratch for as long as the item runs: two items running at the
 * same time never share a slot. Items must not rely on what a slot held. */
typedef void (*attn__item_fn)(void *ctx, long item, int slot);

/* How many threads may run items of one call at once: 1 for NULL. */
int attn__pool_width(const attn_pool *pool);

/* Runs fn(ctx, i, slot) for every i in [0, n_items), on the calling thread
 * (always slot 0) and on pool threads that are idle; returns when every item
 * is done. With a NULL pool, or when `worth_it` is 0 (too little work to pay
 * for waking a thread), the items run in order on the calling thread. */
void attn__parallel(attn_pool *pool, long n_items, int worth_it, attn__item_fn fn, void *ctx);

/* 1 once the calling thread's check (attn_cancel_set) has said stop, asked
 * now or by an item of its calls: their results are incomplete. */
int attn__cancelled(void);
/* ATTN_ERR_CANCELLED with err filled when attn__cancelled(), else ATTN_OK. */
int attn__cancel_check(attn_error *err);

#endif
