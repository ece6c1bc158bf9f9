/* linger.c - see linger.h. One thread, one epoll set, a fixed table of slots. */
#include "linger.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

typedef struct {
    int fd;              /* our duplicate; -1 when the slot is free */
    double start, last;  /* when it began lingering, when data last came */
    size_t bytes;        /* discarded so far */
} slot;

struct srv_linger {
    pthread_mutex_t mu;  /* guards the slots' fd fields against srv_linger_add */
    pthread_t thread;
    int ep, stop_fd;
    size_t max_bytes;
    int n;
    atomic_int count;
    slot *slots;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Frees a slot; the caller holds l->mu. Only the thread (and
 * srv_linger_stop after joining it) frees slots; srv_linger_add only fills
 * free ones, under the same mutex. */
static void release_locked(srv_linger *l, slot *s) {
    epoll_ctl(l->ep, EPOLL_CTL_DEL, s->fd, NULL);
    close(s->fd);
    s->fd = -1;
    atomic_fetch_sub(&l->count, 1);
}

static int slot_fd(srv_linger *l, slot *s) {
    pthread_mutex_lock(&l->mu);
    int fd = s->fd;
    pthread_mutex_unlock(&l->mu);
    return fd;
}

/* Reads what is there. Returns 1 while the socket should linger on. */
static int drain(srv_linger *l, slot *s, double now) {
    static _Thread_local char sink[65536];
    for (;;) {
        ssize_t n = read(s->fd, sink, sizeof sink);
        if (n > 0) {
            s->bytes += (size_t)n;
            s->last = now;
            if (s->bytes >= l->max_bytes) return 0;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);   /* 0: the client closed */
    }
}

static void *run(void *arg) {
    srv_linger *l = arg;
    struct epoll_event ev[64];
    for (;;) {
        int k = epoll_wait(l->ep, ev, 64, 250);
        if (k < 0 && errno != EINTR) {
            srv_log("lingering close: epoll_wait: %s", strerror(errno));
            struct timespec ts = {0, 50000000L};
            nanosleep(&ts, NULL);
        }
        double now = now_s();
        for (int i = 0; i < k; i++) {
            if (ev[i].data.u32 == UINT32_MAX) return NULL;   /* the stop eventfd */
            slot *s = &l->slots[ev[i].data.u32];
            if (slot_fd(l, s) >= 0 && !drain(l, s, now)) {
                pthread_mutex_lock(&l->mu);
                release_locked(l, s);
                pthread_mutex_unlock(&l->mu);
            }
        }
        pthread_mutex_lock(&l->mu);
        for (int i = 0; i < l->n; i++) {
            slot *s = &l->slots[i];
            if (s->fd >= 0 && (now - s->last > SRV_LINGER_IDLE_S || now - s->start > SRV_LINGER_TOTAL_S))
                release_locked(l, s);
        }
        pthread_mutex_unlock(&l->mu);
    }
}

srv_linger *srv_linger_start(size_t max_bytes, int max_sockets) {
    if (max_sockets < 1) return NULL;
    srv_linger *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->slots = calloc((size_t)max_sockets, sizeof *l->slots);
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    l->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (!l->slots || l->ep < 0 || l->stop_fd < 0) goto fail;
    for (int i = 0; i < max_sockets; i++) l->slots[i].fd = -1;
    l->n = max_sockets;
    l->max_bytes = max_bytes;
    atomic_init(&l->count, 0);
    struct epoll_event e = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
    if (epoll_ctl(l->ep, EPOLL_CTL_ADD, l->stop_fd, &e) != 0) goto fail;
    if (pthread_mutex_init(&l->mu, NULL) != 0) goto fail;
    if (pthread_create(&l->thread, NULL, run, l) != 0) {
        pthread_mutex_destroy(&l->mu);
        goto fail;
    }
    return l;
fail:
    if (l->ep >= 0) close(l->ep);
    if (l->stop_fd >= 0) close(l->stop_fd);
    free(l->slots);
    free(l);
    return NULL;
}

int srv_linger_add(srv_linger *l, int fd) {
    if (!l || fd < 0) return -1;
    int rc = -1;
    pthread_mutex_lock(&l->mu);
    for (int i = 0; i < l->n; i++) {
        slot *s = &l->slots[i];
        if (s->fd >= 0) continue;
        int d = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (d < 0) break;
        double now = now_s();
        *s = (slot){.fd = d, .start = now, .last = now};
        struct epoll_event e = {.events = EPOLLIN | EPOLLRDHUP, .data.u32 = (uint32_t)i};
        if (epoll_ctl(l->ep, EPOLL_CTL_ADD, d, &e) != 0) {
            close(d);
            s->fd = -1;
            break;
        }
        atomic_fetch_add(&l->count, 1);
        rc = 0;
        break;
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

int srv_linger_count(srv_linger *l) { return l ? atomic_load(&l->count) : 0; }

void srv_linger_stop(srv_linger *l) {
    if (!l) return;
    uint64_t one = 1;
    ssize_t w = write(l->stop_fd, &one, sizeof one);
    (void)w;
    pthread_join(l->thread, NULL);
    for (int i = 0; i < l->n; i++)
        if (l->slots[i].fd >= 0) close(l->slots[i].fd);
    close(l->ep);
    close(l->stop_fd);
    pthread_mutex_destroy(&l->mu);
    free(l->slots);
    free(l);
}
