/* gen.c - generation threads and their turns, see gen.h. */
#include "gen.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

struct srv_gen {
    srv_pool *pool;
    pthread_mutex_t mu;
    pthread_cond_t turn;
    unsigned long long next_ticket, serving; /* FIFO: tickets served in order */
    int width, inside;                       /* generations computing now, at most width */
    int waiting;                             /* holding a ticket not yet served */
    atomic_int stopping;
};

srv_gen *srv_gen_create(int threads, int max_queue, int width) {
    srv_gen *g = calloc(1, sizeof *g);
    if (g == NULL) return NULL;
    g->width = width < 1 ? 1 : width;
    atomic_init(&g->stopping, 0);
    if (pthread_mutex_init(&g->mu, NULL) != 0) {
        free(g);
        return NULL;
    }
    if (pthread_cond_init(&g->turn, NULL) != 0 || !(g->pool = srv_pool_create(threads, max_queue))) {
        srv_gen_destroy(g);
        return NULL;
    }
    return g;
}

void srv_gen_stopping(srv_gen *g) {
    if (g) atomic_store(&g->stopping, 1);
}

int srv_gen_is_stopping(srv_gen *g) { return g && atomic_load(&g->stopping); }

void srv_gen_destroy(srv_gen *g) {
    if (g == NULL) return;
    srv_gen_stopping(g);
    srv_pool_destroy(g->pool); /* runs the queue: every connection resumed */
    pthread_cond_destroy(&g->turn);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

int srv_gen_submit(srv_gen *g, srv_job_fn fn, void *arg) { return srv_pool_submit(g->pool, fn, arg); }

void srv_gen_stats(srv_gen *g, size_t *queued, size_t *running) {
    *queued = *running = 0;
    if (g) srv_pool_stats(g->pool, queued, running);
}

void srv_gen_enter(srv_gen *g) {
    pthread_mutex_lock(&g->mu);
    unsigned long long ticket = g->next_ticket++;
    g->waiting++;
    while (ticket != g->serving || g->inside >= g->width) pthread_cond_wait(&g->turn, &g->mu);
    g->serving++;
    g->waiting--;
    g->inside++;
    pthread_cond_broadcast(&g->turn); /* the next ticket may go in too */
    pthread_mutex_unlock(&g->mu);
}

void srv_gen_leave(srv_gen *g) {
    pthread_mutex_lock(&g->mu);
    g->inside--;
    pthread_cond_broadcast(&g->turn);
    pthread_mutex_unlock(&g->mu);
}

void srv_gen_yield(srv_gen *g) {
    pthread_mutex_lock(&g->mu);
    int others = g->waiting > 0;
    pthread_mutex_unlock(&g->mu);
    if (!others) return; /* nobody waits: keep the turn */
    srv_gen_leave(g);
    srv_gen_enter(g);
}

int srv_gen_peer_gone(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) != 1 || !(p.revents & (POLLRDHUP | POLLHUP | POLLERR))) return 0;
    int unread = 0;
    return ioctl(fd, FIONREAD, &unread) != 0 || unread == 0;
}
