/* conns.c - see conns.h. A list of open connections under one mutex. */
#include "conns.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Where a connection is: waiting for a request head (with a deadline),
 * reading a body, or serving a complete request. */
typedef enum { ST_HEAD, ST_BODY, ST_SERVING } state;

typedef struct entry {
    struct entry *prev, *next;
    int fd;
    state st;
    double head_since;   /* ST_HEAD: waiting since */
    int gone_seen;       /* the client was seen gone at the last look */
    atomic_int *gone;    /* ST_SERVING: set when the client has gone (body_done) */
    int cut;             /* shut down already */
} entry;

struct srv_conns {
    pthread_mutex_t mu;
    pthread_cond_t wake;   /* CLOCK_MONOTONIC; signalled on stop */
    pthread_t thread;
    int stopping;
    double timeout;
    entry *head;
    atomic_ullong cut, hung_up;
    atomic_int open;       /* slots taken (srv_conns_admit) */
    int max_open;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The client has closed its side (or the socket failed) and nothing is
 * left to read before the end of the stream. */
static int peer_gone(int fd) {
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) != 1 || !(p.revents & (POLLRDHUP | POLLHUP | POLLERR))) return 0;
    int unread = 0;
    return ioctl(fd, FIONREAD, &unread) != 0 || unread == 0;
}

/* A late head is shut down both ways; a connection whose client is gone
 * only for reading, so that libmicrohttpd reads the end of the stream at
 * once and reports the client gone (aborted:client). The fd stays open:
 * libmicrohttpd closes it after telling us. Called
 * with c->mu held, so the entry (and its fd) cannot go meanwhile. */
static void cut(entry *e, int how, atomic_ullong *counter) {
    shutdown(e->fd, how);
    e->cut = 1;
    atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
}

static void look(srv_conns *c) {
    double now = now_s();
    for (entry *e = c->head; e; e = e->next) {
        if (e->st == ST_SERVING) {
            int gone = e->gone && peer_gone(e->fd);
            if (gone && e->gone_seen) atomic_store(e->gone, 1);
            e->gone_seen = gone;
            continue;
        }
        if (e->cut) continue;
        if (e->st == ST_HEAD && now - e->head_since > c->timeout) {
            cut(e, SHUT_RDWR, &c->cut);
            continue;
        }
        /* Twice in a row with no change of state in between: libmicrohttpd
         * may have read the last bytes of a complete request and not yet
         * handed it over. */
        int gone = peer_gone(e->fd);
        if (gone && e->gone_seen) cut(e, SHUT_RD, &c->hung_up);
        e->gone_seen = gone;
    }
}

static void *watch(void *arg) {
    srv_conns *c = arg;
    pthread_mutex_lock(&c->mu);
    while (!c->stopping) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 200000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->wake, &c->mu, &ts);
        look(c);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

srv_conns *srv_conns_start(int head_timeout_s, int max_open) {
    srv_conns *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->timeout = head_timeout_s;
    c->max_open = max_open;
    atomic_init(&c->open, 0);
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

int srv_conns_admit(srv_conns *c) {
    int n = atomic_load(&c->open);
    do {
        if (n >= c->max_open) return 0;
    } while (!atomic_compare_exchange_weak(&c->open, &n, n + 1));
    return 1;
}

void srv_conns_unadmit(srv_conns *c) { atomic_fetch_sub(&c->open, 1); }

int srv_conns_open(srv_conns *c) { return c ? atomic_load(&c->open) : 0; }

void srv_conns_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                      enum MHD_ConnectionNotificationCode code) {
    srv_conns *c = cls;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) atomic_fetch_sub(&c->open, 1);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        entry *e = ci ? calloc(1, sizeof *e) : NULL;
        *socket_context = e;
        if (!e) return;   /* not watched: only the idle timeout applies */
        e->fd = ci->connect_fd;
        e->st = ST_HEAD;
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

static void set_state(srv_conns *c, struct MHD_Connection *conn, state st, atomic_int *gone) {
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    entry *e = ci ? ci->socket_context : NULL;
    if (!e) return;
    pthread_mutex_lock(&c->mu);
    e->st = st;
    e->gone = gone;
    e->gone_seen = 0;
    if (st == ST_HEAD) e->head_since = now_s();
    pthread_mutex_unlock(&c->mu);
}

void srv_conns_head_done(srv_conns *c, struct MHD_Connection *conn) {
    set_state(c, conn, ST_BODY, NULL);
}

void srv_conns_body_done(srv_conns *c, struct MHD_Connection *conn, atomic_int *gone) {
    set_state(c, conn, ST_SERVING, gone);
}

void srv_conns_reply_done(srv_conns *c, struct MHD_Connection *conn) {
    set_state(c, conn, ST_HEAD, NULL);
}

unsigned long long srv_conns_cut(srv_conns *c) {
    return c ? atomic_load_explicit(&c->cut, memory_order_relaxed) : 0;
}

unsigned long long srv_conns_hung_up(srv_conns *c) {
    return c ? atomic_load_explicit(&c->hung_up, memory_order_relaxed) : 0;
}
