/* probe.c - a minimal HTTP/1.0 GET client, see probe.h. */
#include "probe.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define PROBE_TIMEOUT_S 5

/* Splits http://host[:port][/path] (host may be [v6]). Returns 0 or -1. */
static int split_url(const char *url, char *host, size_t host_cap, char *port, size_t port_cap,
                     const char **path) {
    if (strncmp(url, "http://", 7) != 0) return -1;
    const char *h = url + 7, *end;
    if (*h == '[') {
        end = strchr(h, ']');
        if (!end) return -1;
        h++;
    } else {
        end = h + strcspn(h, ":/");
    }
    size_t hl = (size_t)(end - h);
    if (hl == 0 || hl >= host_cap) return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    if (*end == ']') end++;
    const char *p = "80";
    size_t pl = 2;
    if (*end == ':') {
        p = end + 1;
        pl = strcspn(p, "/");
        end = p + pl;
    }
    if (pl == 0 || pl >= port_cap) return -1;
    memcpy(port, p, pl);
    port[pl] = '\0';
    *path = *end ? end : "/";
    return *end == '\0' || *end == '/' ? 0 : -1;
}

int srv_probe(const char *url) {
    char host[256], port[16];
    const char *path;
    if (split_url(url, host, sizeof host, port, sizeof port, &path) != 0) {
        fprintf(stderr, "attention-server: probe: cannot parse URL '%.200s' "
                        "(expected http://host:port/path)\n", url);
        return 2;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "attention-server: probe: %s: %s\n", host, gai_strerror(rc));
        return 1;
    }
    int fd = -1;
    struct timeval tv = {PROBE_TIMEOUT_S, 0};
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        /* On Linux SO_SNDTIMEO also bounds connect(). */
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "attention-server: probe: cannot connect to %s port %s\n", host, port);
        return 1;
    }
    char req[1024];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n",
                     path, host);
    if (n < 0 || (size_t)n >= sizeof req || send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
        fprintf(stderr, "attention-server: probe: cannot send the request\n");
        close(fd);
        return 1;
    }
    char head[64];
    size_t got = 0;
    while (got < sizeof head - 1) {
        ssize_t r = recv(fd, head + got, sizeof head - 1 - got, 0);
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    head[got] = '\0';
    int status = 0;
    if (sscanf(head, "HTTP/%*d.%*d %d", &status) != 1) {
        fprintf(stderr, "attention-server: probe: no HTTP status line from %s\n", url);
        return 1;
    }
    if (status < 200 || status > 299) {
        fprintf(stderr, "attention-server: probe: %s answered %d\n", url, status);
        return 1;
    }
    return 0;
}
