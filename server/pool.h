/* pool.h - a fixed set of worker threads and a bounded job queue.
 *
 * The HTTP I/O threads never compute: they submit a job and suspend the
 * connection; a worker runs the job, which resumes it. A full queue is
 * reported to the submitter at once (the server answers 503) instead of
 * growing without bound.
 */
#ifndef SRV_POOL_H
#define SRV_POOL_H

#include <stddef.h>

typedef void (*srv_job_fn)(void *arg);

typedef struct srv_pool srv_pool;

/* Starts `threads` workers with room for `max_queue` jobs waiting for one:
 * threads + max_queue jobs taken at once, running or not, however soon
 * after one another they come (a job an idle worker has not picked up yet
 * is not waiting). Returns NULL if memory or threads cannot be had. */
srv_pool *srv_pool_create(int threads, int max_queue);

/* Queues fn(arg). Returns 0, or -1 if the queue is full or the pool is
 * shutting down; the job is then not run and arg stays the caller's. */
int srv_pool_submit(srv_pool *p, srv_job_fn fn, void *arg);

/* Jobs waiting and jobs running right now (for /metrics). */
void srv_pool_stats(srv_pool *p, size_t *queued, size_t *running);

/* Refuses new jobs, runs every job already queued, and joins the workers.
 * The pool stays valid (srv_pool_submit returns -1) until srv_pool_destroy.
 * Idempotent. */
void srv_pool_stop(srv_pool *p);

/* Stops the pool if needed and frees it. Accepts NULL. */
void srv_pool_destroy(srv_pool *p);

#endif
