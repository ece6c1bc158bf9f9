/* conns.c - see conns.h. A list of open connections under one mutex. */
#include "conns.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct entry {
    struct entry *prev, *next;
    int fd;
    double head_since;   /* waiting for a request head since; 0 while serving one */
    int cut;             /* shut down already */
} entry;

struct srv_conns {
    pthread_mutex_t mu;
    pthread_cond_t wake;   /* CLOCK_MONOTONIC; signalled on stop */
    pthread_t thread;
    int stopping;
    double timeout;
    entry *head;
    atomic_ullong cut;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *watch(void *arg) {
    srv_conns *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 500000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->wake, &c->mu, &ts);
        double now = now_s();
        for (entry *e = c->head; e; e = e->next) {
            if (e->cut || e->head_since == 0 || now - e->head_since <= c->timeout) continue;
            /* The fd stays open: libmicrohttpd closes it after telling us. */
            shutdown(e->fd, SHUT_RDWR);
            e->cut = 1;
            atomic_fetch_add_explicit(&c->cut, 1, memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

srv_conns *srv_conns_start(int head_timeout_s) {
    srv_conns *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->timeout = head_timeout_s;
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0) goto fail;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&c->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0) goto fail;
    if (pthread_mutex_init(&c->mu, NULL) != 0) goto fail_cond;
    if (pthread_create(&c->thread, NULL, watch, c) != 0) goto fail_mutex;
    return c;
fail_mutex:
    pthread_mutex_destroy(&c->mu);
fail_cond:
    pthread_cond_destroy(&c->wake);
fail:
    free(c);
    return NULL;
}

void srv_conns_stop(srv_conns *c) {
    if (!c) return;
    pthread_mutex_lock(&c->mu);
    c->stopping = 1;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    while (c->head) {   /* none left after MHD_stop_daemon; freed all the same */
        entry *e = c->head;
        c->head = e->next;
        free(e);
    }
    pthread_cond_destroy(&c->wake);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void srv_conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode code) {
    srv_conns *c = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        entry *e = ci ? calloc(1, sizeof *e) : NULL;
        *socket_context = e;
        if (!e) return;   /* not watched: only the idle timeout applies */
        e->fd = ci->connect_fd;
        e->head_since = now_s();
        pthread_mutex_lock(&c->mu);
        e->next = c->head;
        if (c->head) c->head->prev = e;
        c->head = e;
        pthread_mutex_unlock(&c->mu);
        return;
    }
    entry *e = *socket_context;
    if (!e) return;
    pthread_mutex_lock(&c->mu);
    if (e->prev) e->prev->next = e->next;
    else c->head = e->next;
    if (e->next) e->next->prev = e->prev;
    pthread_mutex_unlock(&c->mu);
    free(e);
    *socket_context = NULL;
}

static void set_since(srv_conns *c, struct MHD_Connection *conn, double since) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    entry *e = ci ? ci->socket_context : NULL;
    if (!e) return;
    pthread_mutex_lock(&c->mu);
    e->head_since = since;
    pthread_mutex_unlock(&c->mu);
}

void srv_conns_head_done(srv_conns *c, struct MHD_Connection *conn) { set_since(c, conn, 0); }

void srv_conns_reply_done(srv_conns *c, struct MHD_Connection *conn) {
    set_since(c, conn, now_s());
}

unsigned long long srv_conns_cut(srv_conns *c) {
    return c ? atomic_load_explicit(&c->cut, memory_order_relaxed) : 0;
}
