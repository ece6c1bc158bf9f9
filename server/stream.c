/* stream.c - see stream.h. */
#include "stream.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct piece {
    struct piece *next;
    size_t len, off; /* bytes [off, len) are still to send */
    char *data;
} piece;

struct srv_stream {
    pthread_mutex_t mu;
    pthread_cond_t room;   /* CLOCK_MONOTONIC; the reader took bytes, or the end */
    size_t queued, max_queued; /* bytes written, not yet handed to libmicrohttpd */
    double wait_s;
    const atomic_int *stop;    /* the server is stopping: no more waiting */
    struct MHD_Connection *conn;
    piece *head, *tail;
    int holders;   /* writer, reader, request */
    int ended;     /* the writer is done */
    int ok;        /* ... and wrote the whole body */
    int detached;  /* the connection is finished */
    int waiting;   /* the reader suspended the connection for want of a piece */
    size_t sent;
};

static int init_sync(srv_stream *s) {
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0) return -1;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&s->room, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0) return -1;
    if (pthread_mutex_init(&s->mu, NULL) == 0) return 0;
    pthread_cond_destroy(&s->room);
    return -1;
}

srv_stream *srv_stream_create(struct MHD_Connection *conn, char *data, size_t len,
                              size_t max_queued, double wait_s, const atomic_int *stop) {
    srv_stream *s = calloc(1, sizeof *s);
    piece *p = malloc(sizeof *p);
    if (s == NULL || p == NULL || init_sync(s) != 0) {
        free(s);
        free(p);
        free(data);
        return NULL;
    }
    *p = (piece){.len = len, .data = data};
    s->queued = len;
    s->max_queued = max_queued;
    s->wait_s = wait_s;
    s->stop = stop;
    s->head = s->tail = p;
    s->conn = conn;
    s->holders = 3;
    return s;
}

/* Resumes a connection the reader suspended: outside s->mu, which the
 * reader holds while it suspends (a resume must follow the suspend). The
 * connection cannot finish while it is suspended, so it is still there. */
static void wake_reader(srv_stream *s, int wake) {
    if (wake) MHD_resume_connection(s->conn);
}

/* Waits with s->mu held while the writer is max_queued bytes ahead and the
 * reader makes progress at least every wait_s seconds. Returns 0 when there
 * is room, -1 when the connection is gone or the reader stalled. */
static int wait_room(srv_stream *s) {
    double waited = 0;
    size_t before = s->sent;
    while (!s->detached && s->queued >= s->max_queued) {
        if (s->stop && atomic_load(s->stop)) return -1;
        if (s->sent != before) before = s->sent, waited = 0;
        if (waited >= s->wait_s) return -1;
        struct timespec ts; /* a fifth of a second at a time, to see *stop */
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 200000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&s->room, &s->mu, &ts);
        waited += 0.2;
    }
    return s->detached ? -1 : 0;
}

int srv_stream_full(srv_stream *s) {
    pthread_mutex_lock(&s->mu);
    int full = !s->detached && s->queued >= s->max_queued;
    pthread_mutex_unlock(&s->mu);
    return full;
}

int srv_stream_push(srv_stream *s, char *data, size_t len) {
    piece *p = malloc(sizeof *p);
    pthread_mutex_lock(&s->mu);
    int gone = wait_room(s) != 0;
    if (p == NULL || gone) {
        pthread_mutex_unlock(&s->mu);
        free(p);
        free(data);
        return -1;
    }
    *p = (piece){.len = len, .data = data};
    s->queued += len;
    if (s->tail) s->tail->next = p;
    else s->head = p;
    s->tail = p;
    int wake = s->waiting;
    s->waiting = 0;
    pthread_mutex_unlock(&s->mu);
    wake_reader(s, wake);
    return 0;
}

int srv_stream_end(srv_stream *s, int ok) {
    pthread_mutex_lock(&s->mu);
    s->ended = 1;
    s->ok = ok;
    int gone = s->detached, wake = s->waiting;
    s->waiting = 0;
    pthread_mutex_unlock(&s->mu);
    wake_reader(s, wake);
    srv_stream_release(s);
    return gone;
}

int srv_stream_detach(srv_stream *s) {
    pthread_mutex_lock(&s->mu);
    s->detached = 1;
    pthread_cond_broadcast(&s->room);
    int ended = s->ended;
    pthread_mutex_unlock(&s->mu);
    return ended;
}

size_t srv_stream_sent(srv_stream *s) {
    pthread_mutex_lock(&s->mu);
    size_t n = s->sent;
    pthread_mutex_unlock(&s->mu);
    return n;
}

ssize_t srv_stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    srv_stream *s = cls;
    pthread_mutex_lock(&s->mu);
    size_t n = 0;
    while (s->head && n < max) {
        piece *p = s->head;
        size_t take = p->len - p->off < max - n ? p->len - p->off : max - n;
        memcpy(buf + n, p->data + p->off, take);
        n += take;
        p->off += take;
        if (p->off == p->len) { /* sent: its memory goes now */
            s->head = p->next;
            if (s->head == NULL) s->tail = NULL;
            s->queued -= p->len;
            free(p->data);
            free(p);
        }
    }
    s->sent += n;
    if (n) pthread_cond_signal(&s->room);
    ssize_t r = (ssize_t)n;
    if (n == 0) {
        if (s->ended) {
            r = s->ok ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
        } else { /* until the writer's next piece: srv_stream_push resumes */
            s->waiting = 1;
            MHD_suspend_connection(s->conn);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return r;
}

void srv_stream_release(void *cls) {
    srv_stream *s = cls;
    pthread_mutex_lock(&s->mu);
    int last = --s->holders == 0;
    pthread_mutex_unlock(&s->mu);
    if (!last) return;
    for (piece *p = s->head, *next; p; p = next) {
        next = p->next;
        free(p->data);
        free(p);
    }
    pthread_cond_destroy(&s->room);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
