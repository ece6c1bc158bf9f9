/* pool.c - worker threads and a ring buffer of jobs under one mutex. */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct {
    srv_job_fn fn;
    void *arg;
} job;

struct srv_pool {
    pthread_mutex_t mu;
    pthread_cond_t has_job;
    job *ring;
    size_t cap, head, count;   /* ring[head] is the oldest of count jobs not picked up yet */
    size_t running;            /* count + running <= cap: one per thread, max_queue waiting */
    int stopping;
    int n_threads;
    pthread_t *threads;
};

static void *worker(void *arg) {
    srv_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->count == 0 && !p->stopping) pthread_cond_wait(&p->has_job, &p->mu);
        if (p->count == 0) break;   /* stopping and nothing left */
        job j = p->ring[p->head];
        p->head = (p->head + 1) % p->cap;
        p->count--;
        p->running++;
        pthread_mutex_unlock(&p->mu);
        j.fn(j.arg);
        pthread_mutex_lock(&p->mu);
        p->running--;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

srv_pool *srv_pool_create(int threads, int max_queue) {
    if (threads < 1 || max_queue < 1) return NULL;
    srv_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    /* A job a thread has not picked up yet is in the ring whether or not
     * that thread is idle: the ring holds every job taken. */
    p->cap = (size_t)threads + (size_t)max_queue;
    p->ring = calloc(p->cap, sizeof *p->ring);
    p->threads = calloc((size_t)threads, sizeof *p->threads);
    if (!p->ring || !p->threads) goto fail_alloc;
    if (pthread_mutex_init(&p->mu, NULL) != 0) goto fail_alloc;
    if (pthread_cond_init(&p->has_job, NULL) != 0) goto fail_mutex;
    for (; p->n_threads < threads; p->n_threads++)
        if (pthread_create(&p->threads[p->n_threads], NULL, worker, p) != 0) goto fail_threads;
    return p;

fail_threads:
    srv_pool_destroy(p);   /* joins the workers started so far */
    return NULL;
fail_mutex:
    pthread_mutex_destroy(&p->mu);
fail_alloc:
    free(p->threads);
    free(p->ring);
    free(p);
    return NULL;
}

int srv_pool_submit(srv_pool *p, srv_job_fn fn, void *arg) {
    int rc = -1;
    pthread_mutex_lock(&p->mu);
    if (!p->stopping && p->count + p->running < p->cap) {
        p->ring[(p->head + p->count) % p->cap] = (job){fn, arg};
        p->count++;
        pthread_cond_signal(&p->has_job);
        rc = 0;
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

void srv_pool_stats(srv_pool *p, size_t *queued, size_t *running) {
    pthread_mutex_lock(&p->mu);
    *queued = p->count;
    *running = p->running;
    pthread_mutex_unlock(&p->mu);
}

void srv_pool_stop(srv_pool *p) {
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->has_job);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    p->n_threads = 0;
}

void srv_pool_destroy(srv_pool *p) {
    if (!p) return;
    srv_pool_stop(p);
    pthread_cond_destroy(&p->has_job);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p->ring);
    free(p);
}
