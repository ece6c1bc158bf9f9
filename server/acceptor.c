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
        /* MHD owns the socket from here, and closes it if it refuses it
         * (connection limit, memory). */
        MHD_add_connection(a->daemon, c, (struct sockaddr *)&addr, len);
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

int srv_acceptor_start(srv_acceptor *a, struct MHD_Daemon *d) {
    a->daemon = d;
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
