/* gen.h - the server's side of generation (POST /model/gpt2 with
 * "generate", POST /v1/completions): requests that write token after token
 * for seconds or minutes.
 *
 * They run on threads of their own (--max-streams of them, the same
 * --max-queue behind them), not on the compute workers, so that a few long
 * generations never hold every worker. Their steps take turns: a FIFO gate
 * lets --threads of them compute at once, and each generation goes back to
 * the end of the line after every token when others wait (srv_gen_yield),
 * so concurrent streams advance token for token in turn rather than one
 * after the other, and a new one writes its first token after one round.
 *
 * A request is a generation by what its parse finds (api_limits.
 * defer_generation), never by a look at its bytes: an escaped key or a gzip
 * body is one too. The parse runs where the request would have run (the
 * I/O thread for a small body, else a compute worker), which hands it over.
 *
 * Between tokens the generation also asks whether its client is still
 * there (the socket read-closed and nothing left to read: the generation
 * stops at the next token) and whether its time is up.
 */
#ifndef SRV_GEN_H
#define SRV_GEN_H

#include <stddef.h>

#include "pool.h"

typedef struct srv_gen srv_gen;

/* threads generations at once (max_queue more waiting), width of them
 * computing at a time. NULL if memory or threads cannot be had. */
srv_gen *srv_gen_create(int threads, int max_queue, int width);
/* Runs what is queued, joins the threads and frees. Accepts NULL. Before,
 * srv_gen_stopping makes running generations end at their next token. */
void srv_gen_destroy(srv_gen *g);
void srv_gen_stopping(srv_gen *g);
int srv_gen_is_stopping(srv_gen *g);

/* Queues fn(arg) on the generation threads: 0, or -1 when the queue is full. */
int srv_gen_submit(srv_gen *g, srv_job_fn fn, void *arg);
/* Generations queued and running (for /metrics). */
void srv_gen_stats(srv_gen *g, size_t *queued, size_t *running);

/* A turn at computing: waits for it in FIFO order (enter), gives it back
 * (leave), or, between tokens, gives it to the longest waiting generation
 * if one waits and lines up again (yield). */
void srv_gen_enter(srv_gen *g);
void srv_gen_leave(srv_gen *g);
void srv_gen_yield(srv_gen *g);

/* 1 when the peer of socket fd has closed its side and sent nothing more. */
int srv_gen_peer_gone(int fd);

#endif
