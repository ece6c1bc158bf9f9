/* acceptor.c - see acceptor.h. */
#include "acceptor.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

int srv_acceptor_listen(srv_acceptor *a, const char *host, int port) {
    memset(a, 0, sizeof *a);
    a->fd = a->wake[0] = a->wake[1] = -1;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV}, *res = NULL;
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        srv_log("cannot resolve --host %s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int on = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
        srv_log("cannot listen on %s port %d: %s", host, port, strerror(errno));
        if (fd >= 0) close(fd);
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    struct sockaddr_storage bound;
    socklen_t len = sizeof bound;
    a->port = port;
    if (getsockname(fd, (struct sockaddr *)&bound, &len) == 0)
        a->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                    : ((struct sockaddr_in *)&bound)->sin_port);
    a->fd = fd;
    return 0;
}

static void sleep_ms(int ms) {
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* At most one line a second, however many connections are refused. */
static void log_refusals(srv_acceptor *a) {
    double now = now_s();
    if (now - a->logged_at < 1.0) return;
    unsigned long long n = atomic_load(&a->refused);
    srv_log("refused %llu connection(s) over --max-connections (%d open) since the last report",
            n - a->logged, srv_conns_open(a->conns));
    a->logged_at = now;
    a->logged = n;
}

/* A connection over the limit: the reply fits in the empty send buffer of
 * a new socket, so one send writes it; then the lingering close reads what
 * the client sends until it hangs up (else its unread request would make
 * the kernel reset the connection, reply and all). */
static void refuse(srv_acceptor *a, int c) {
    ssize_t w = send(c, a->refusal, a->refusal_len, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)w;
    shutdown(c, SHUT_WR);
    srv_linger_add(a->linger, c);
    close(c);
    atomic_fetch_add(&a->refused, 1);
    log_refusals(a);
}

/* Hands every connection waiting in the backlog to the daemon. */
static void accept_pending(srv_acceptor *a) {
    for (;;) {
        struct sockaddr_storage addr;
        socklen_t len = sizeof addr;
        int c = accept4(a->fd, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
            if (errno == ECONNABORTED) continue;
            /* Out of descriptors or memory: what is waiting stays in the
             * backlog; try again a little later instead of spinning. */
            srv_log("accept: %s", strerror(errno));
            sleep_ms(50);
            return;
        }
        if (!srv_conns_admit(a->conns)) {
            refuse(a, c);
            continue;
        }
        /* MHD owns the socket from here, and closes it if it refuses it
         * (memory: its own limit is never reached, see conns.h). */
        if (MHD_add_connection(a->daemon, c, (struct sockaddr *)&addr, len) != MHD_YES)
            srv_conns_unadmit(a->conns);
    }
}

static void *accept_loop(void *arg) {
    srv_acceptor *a = arg;
    struct pollfd p[2] = {{.fd = a->fd, .events = POLLIN}, {.fd = a->wake[0], .events = POLLIN}};
    for (;;) {
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            srv_log("accept loop: poll: %s", strerror(errno));
            sleep_ms(50);
            continue;
        }
        /* Also on the way out: a connection the kernel completed before the
         * drain began may already carry a request, and closing the socket
         * with it still in the backlog would reset it. */
        accept_pending(a);
        if (p[1].revents) return NULL;
    }
}

int srv_acceptor_start(srv_acceptor *a, struct MHD_Daemon *d, srv_conns *conns,
                       srv_linger *linger, const char *refusal, size_t refusal_len) {
    a->daemon = d;
    a->conns = conns;
    a->linger = linger;
    a->refusal = refusal;
    a->refusal_len = refusal_len;
    if (pipe2(a->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        a->wake[0] = a->wake[1] = -1;
        srv_log("cannot create the accept thread's pipe: %s", strerror(errno));
        return -1;
    }
    int rc = pthread_create(&a->thread, NULL, accept_loop, a);
    if (rc != 0) {
        srv_log("cannot start the accept thread: %s", strerror(rc));
        return -1;
    }
    a->running = 1;
    return 0;
}

void srv_acceptor_close(srv_acceptor *a) {
    if (a->running) {
        ssize_t w = write(a->wake[1], "x", 1);
        (void)w;
        pthread_join(a->thread, NULL);
        a->running = 0;
    }
    for (int i = 0; i < 2; i++) {
        if (a->wake[i] >= 0) close(a->wake[i]);
        a->wake[i] = -1;
    }
    if (a->fd >= 0) close(a->fd);
    a->fd = -1;
}

void srv_acceptor_fd_room(int max_connections) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    /* a descriptor per connection, one per lingering socket, and the rest */
    rlim_t need = (rlim_t)max_connections * 2 + 128;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need)
        srv_log("warning: %llu open files allowed (ulimit -n), --max-connections %d needs "
                "about %llu; connections past that wait in the backlog",
                (unsigned long long)rl.rlim_cur, max_connections, (unsigned long long)need);
}
