/* parallel.c - attn_pool: helper threads that join the calls in progress.
 *
 * A call (attn__parallel) publishes a job: a function and a count of items.
 * The calling thread claims items one by one; helper threads that are idle
 * join the oldest job with unclaimed items and claim items too. The number
 * of threads computing at once, callers included, stays within the pool's
 * width, so when every core already runs its own call no helper joins, and
 * on an idle machine one call gets every core.
 *
 * Items are coarse (a tile of attention, a block of rows of a projection:
 * tens of microseconds and more), so claiming under one mutex costs nothing
 * measurable.
 *
 * Helpers are kept off the caller's CPU (steer_helpers). Woken after an idle
 * spell, a helper was often placed by Linux on the CPU of the caller that
 * woke it, on a KVM guest whose other virtual CPU had halted: it then waited
 * for the caller to block, and the call ran on one core until the load
 * balancer moved it, milliseconds later (MultiHeadAttention, T = 256, 12
 * heads: 15 ms after 0.35 s of sleep against 8 ms back to back). With the
 * caller's CPU out of its affinity mask, the wake-up has to use another CPU:
 * 8 ms after sleep too.
 */
#include "internal.h"
#include "parallel.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

typedef struct job {
    attn__item_fn fn;
    void *ctx;
    int (*stop)(void *ctx);        /* the caller's check (attn_cancel_set), or NULL */
    void *stop_ctx;
    int skipped;                   /* items were skipped: stop said so */
    long n_items, next, finished;  /* items [0, next) are claimed, `finished` of them done */
    int slots;                     /* threads that joined, the caller included */
    struct job *link;              /* next job with unclaimed items */
    pthread_cond_t all_done;
} job;

struct attn_pool {
    pthread_mutex_t mu;
    pthread_cond_t wake;   /* a job was published, or a thread stopped computing */
    int width;             /* threads that may compute at once, callers included */
    int computing;         /* callers inside attn__parallel and helpers in a job */
    job *jobs;             /* oldest first */
    int stopping;
    int n_threads;
    pthread_t *threads;
    int *avoided;          /* per helper: the CPU its affinity leaves out, -1: none */
    cpu_set_t allowed;     /* the CPUs the process could use when the pool began */
    int n_allowed;
};

int attn__pool_width(const attn_pool *pool) { return pool ? pool->width : 1; }

static void unlink_job(attn_pool *p, job *j) {
    for (job **at = &p->jobs; *at; at = &(*at)->link)
        if (*at == j) {
            *at = j->link;
            return;
        }
}

/* The calling thread's check (attn_cancel_set), and whether it fired. */
static _Thread_local int (*cancel_stop)(void *ctx);
static _Thread_local void *cancel_ctx;
static _Thread_local int cancel_seen;

void attn_cancel_set(int (*stop)(void *ctx), void *ctx) {
    cancel_stop = stop;
    cancel_ctx = ctx;
    cancel_seen = 0;
}

int attn__cancelled(void) {
    if (!cancel_seen && cancel_stop && cancel_stop(cancel_ctx)) cancel_seen = 1;
    return cancel_seen;
}

int attn__cancel_check(attn_error *err) {
    if (!attn__cancelled()) return ATTN_OK;
    return attn__fail(err, ATTN_ERR_CANCELLED, "", "stopped before the end (attn_cancel_set)");
}

/* Claims and runs items of j until none is left; when j's check says stop,
 * claims the rest without running them. Called and returns with p->mu
 * held. */
static void run_items(attn_pool *p, job *j, int slot) {
    while (j->next < j->n_items) {
        long item = j->next++;
        if (j->next == j->n_items) unlink_job(p, j); /* nothing left to join */
        pthread_mutex_unlock(&p->mu);
        int skip = j->stop && j->stop(j->stop_ctx);
        if (!skip) j->fn(j->ctx, item, slot);
        pthread_mutex_lock(&p->mu);
        if (skip) {
            j->skipped = 1;
            if (j->next < j->n_items) unlink_job(p, j);
            j->finished += j->n_items - j->next; /* claimed, never to run */
            j->next = j->n_items;
        }
        if (++j->finished == j->n_items) pthread_cond_signal(&j->all_done);
    }
}

static job *joinable(attn_pool *p) {
    for (job *j = p->jobs; j; j = j->link)
        if (j->next < j->n_items && j->slots < p->width) return j;
    return NULL;
}

static void *helper(void *arg) {
    attn_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        job *j = NULL;
        while (!p->stopping && (p->computing >= p->width || (j = joinable(p)) == NULL))
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->stopping) break;
        int slot = j->slots++;
        p->computing++;
        run_items(p, j, slot);   /* j may be gone once its last item is done */
        p->computing--;
        pthread_cond_broadcast(&p->wake);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Gives each helper every CPU the process had but the caller's, so that the
 * wake-up below cannot queue a helper behind the caller (see the top). One
 * system call per helper when the caller's CPU changes, none otherwise; a
 * helper busy with another call on that CPU is moved off it, which is
 * also where it should be. Called with p->mu held. */
static void steer_helpers(attn_pool *p) {
    int cpu = sched_getcpu();
    if (cpu < 0 || p->n_allowed < 2 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &p->allowed))
        return;
    cpu_set_t others = p->allowed;
    CPU_CLR(cpu, &others);
    for (int i = 0; i < p->n_threads; i++)
        if (p->avoided[i] != cpu &&
            pthread_setaffinity_np(p->threads[i], sizeof others, &others) == 0)
            p->avoided[i] = cpu;
}

/* attn__parallel with the calling thread's check (cancellable) or none. */
static void parallel(attn_pool *p, long n_items, int worth_it, attn__item_fn fn, void *ctx,
                     int cancellable) {
    if (p == NULL || p->width < 2 || n_items < 2 || !worth_it) {
        for (long i = 0; i < n_items && !(cancellable && attn__cancelled()); i++) fn(ctx, i, 0);
        return;
    }
    job j = {.fn = fn, .ctx = ctx, .n_items = n_items, .slots = 1,
             .stop = cancellable && !cancel_seen ? cancel_stop : NULL, .stop_ctx = cancel_ctx};
    if (cancellable && cancel_seen) return;
    if (pthread_cond_init(&j.all_done, NULL) != 0) { /* no condition variable: run alone */
        for (long i = 0; i < n_items; i++) fn(ctx, i, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    job **tail = &p->jobs;
    while (*tail) tail = &(*tail)->link;
    *tail = &j;
    if (p->computing < p->width) steer_helpers(p); /* some helper may join */
    p->computing++;
    pthread_cond_broadcast(&p->wake);
    run_items(p, &j, 0);
    while (j.finished < j.n_items) pthread_cond_wait(&j.all_done, &p->mu);
    p->computing--;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    pthread_cond_destroy(&j.all_done);
    if (j.skipped) cancel_seen = 1;
}

void attn__parallel(attn_pool *p, long n_items, int worth_it, attn__item_fn fn, void *ctx) {
    parallel(p, n_items, worth_it, fn, ctx, 1);
}

attn_pool *attn_pool_create(int threads) {
    if (threads < 1 || threads > 1024) return NULL;
    attn_pool *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    p->width = threads;
    p->threads = calloc((size_t)threads, sizeof *p->threads);
    p->avoided = malloc((size_t)threads * sizeof *p->avoided);
    if (p->threads == NULL || p->avoided == NULL) goto fail_alloc;
    for (int i = 0; i < threads; i++) p->avoided[i] = -1;
    if (sched_getaffinity(0, sizeof p->allowed, &p->allowed) == 0)
        p->n_allowed = CPU_COUNT(&p->allowed);
    if (pthread_mutex_init(&p->mu, NULL) != 0) goto fail_alloc;
    if (pthread_cond_init(&p->wake, NULL) != 0) goto fail_mutex;
    /* Several threads now call OpenBLAS at once: 0.3.21 is safe for that
     * only with one thread of its own per call. */
    openblas_set_num_threads(1);
    for (; p->n_threads < threads - 1; p->n_threads++)
        if (pthread_create(&p->threads[p->n_threads], NULL, helper, p) != 0) {
            attn_pool_destroy(p); /* joins the helpers started so far */
            return NULL;
        }
    return p;

fail_mutex:
    pthread_mutex_destroy(&p->mu);
fail_alloc:
    free(p->threads);
    free(p->avoided);
    free(p);
    return NULL;
}

void attn_pool_destroy(attn_pool *p) {
    if (p == NULL) return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p->avoided);
    free(p);
}

int attn_pool_width(const attn_pool *pool) { return attn__pool_width(pool); }

void attn_pool_run(attn_pool *pool, long n_items, void (*fn)(void *ctx, long item, int slot),
                   void *ctx) {
    parallel(pool, n_items, 1, fn, ctx, 0);
}
