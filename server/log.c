/* log.c - see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static size_t stamp(char *buf, size_t cap) {
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    int m = snprintf(buf + n, cap - n, ".%03ldZ ", ts.tv_nsec / 1000000);
    return n + (m > 0 ? (size_t)m : 0);
}

static void emit(char *line, size_t len, size_t cap) {
    if (len >= cap - 1) len = cap - 2;   /* truncated: still one line */
    line[len++] = '\n';
    for (size_t off = 0; off < len;) {
        ssize_t w = write(STDERR_FILENO, line + off, len - off);
        if (w <= 0) return;
        off += (size_t)w;
    }
}

/* Copies at most 200 bytes of a client-supplied path, replacing control
 * characters and spaces so that one request stays one parsable line. */
static void clean_path(char *dst, size_t cap, const char *src) {
    size_t i = 0;
    for (; src && src[i] && i < cap - 1 && i < 200; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = (c <= ' ' || c == 0x7f) ? '?' : (char)c;
    }
    dst[i] = '\0';
}

void srv_log_access(const char *method, const char *path, int status, size_t bytes_in,
                    size_t bytes_out, double ms, const char *note) {
    char line[512], p[256], m[16];
    clean_path(p, sizeof p, path);
    clean_path(m, sizeof m, method);
    size_t n = stamp(line, sizeof line);
    char st[8] = "-";
    if (status) snprintf(st, sizeof st, "%d", status);
    int k = snprintf(line + n, sizeof line - n, "%s %s %s in=%zu out=%zu %.2fms%s%s", m, p, st,
                     bytes_in, bytes_out, ms, note ? " " : "", note ? note : "");
    emit(line, n + (k > 0 ? (size_t)k : 0), sizeof line);
}

void srv_log(const char *fmt, ...) {
    char line[1024];
    size_t n = stamp(line, sizeof line);
    int k = snprintf(line + n, sizeof line - n, "attention-server: ");
    n += k > 0 ? (size_t)k : 0;
    va_list ap;
    va_start(ap, fmt);
    k = vsnprintf(line + n, sizeof line - n, fmt, ap);
    va_end(ap);
    /* What the message quotes (a path, a header, libmicrohttpd's own text
     * about a request) may carry control bytes: one line, no terminal
     * escapes. */
    for (size_t i = n; i < sizeof line && line[i]; i++)
        if ((unsigned char)line[i] < ' ' || line[i] == 0x7f) line[i] = '?';
    emit(line, n + (k > 0 ? (size_t)k : 0), sizeof line);
}
