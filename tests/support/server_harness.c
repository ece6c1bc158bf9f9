/* server_harness.c - see server_harness.h. */
#include "server_harness.h"

#include <check.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files.h"
#include "procs.h"
#include "reply_check.h"

static double now_ms(void) { return procs_now() * 1e3; }

const char *srvt_binary(void) {
    static char path[512];
    const char *p = getenv("ATTN_SERVER");
    if (p && *p) return p;
    const char *b = getenv("BUILD");
    snprintf(path, sizeof path, "%s/attention-server", b && *b ? b : "build");
    return path;
}

char *srvt_read_log(const srvt_server *s) { return s->log_path[0] ? tfile_read(s->log_path, NULL) : NULL; }

/* argv of the server binary: the binary, then first[], then args[] (both
 * NULL-terminated, may be NULL), into argv[cap]. */
static void server_argv(const char **argv, size_t cap, const char *const *first,
                        const char *const *args) {
    size_t n = 0;
    argv[n++] = srvt_binary();
    for (size_t i = 0; first && first[i] && n < cap - 1; i++) argv[n++] = first[i];
    for (size_t i = 0; args && args[i] && n < cap - 1; i++) argv[n++] = args[i];
    argv[n] = NULL;
}

static int start_once(srvt_server *s, const char *const *args, const char *const *env) {
    memset(s, 0, sizeof *s);
    s->port = procs_free_port();
    if (s->port <= 0) return -1;
    snprintf(s->base, sizeof s->base, "http://127.0.0.1:%d", s->port);
    snprintf(s->log_path, sizeof s->log_path, "/tmp/attn-server-XXXXXX");
    int log_fd = mkostemp(s->log_path, O_CLOEXEC);
    if (log_fd < 0) return -1;
    close(log_fd);

    char port[16];
    snprintf(port, sizeof port, "%d", s->port);
    const char *first[] = {"--host", "127.0.0.1", "--port", port, NULL}, *argv[64];
    server_argv(argv, 64, first, args);
    procs_io io = {.env = env, .out = s->log_path, .err = s->log_path, .death_signal = SIGKILL};
    s->pid = procs_spawn(argv, &io);
    if (s->pid < 0) {
        s->pid = 0;
        unlink(s->log_path);
        return -1;
    }
    char url[128];
    snprintf(url, sizeof url, "%s/healthz", s->base);
    if (srvt_wait_url(url, s->pid, 30.0)) return 0;
    int st;
    if (procs_reap(s->pid, &st)) {
        s->pid = 0;
        char *log = srvt_read_log(s);
        fprintf(stderr, "server exited during startup (status %d): %s\n",
                WIFEXITED(st) ? WEXITSTATUS(st) : -1, log ? log : "");
        free(log);
        unlink(s->log_path);
        return WIFEXITED(st) && WEXITSTATUS(st) == 1 ? 1 : -1;   /* 1: maybe port taken */
    }
    fprintf(stderr, "server did not answer /healthz within 30 s\n");
    srvt_release(s);
    return -1;
}

int srvt_start(srvt_server *s, const char *const *args, const char *const *env) {
    for (int attempt = 0; attempt < 5; attempt++) {
        int rc = start_once(s, args, env);
        if (rc != 1) return rc;   /* a port taken between probe and bind: try another */
    }
    return -1;
}

int srvt_stop(srvt_server *s, int timeout_s) {
    if (s->pid <= 0) return -1;
    pid_t pid = s->pid;
    int st = 0, rc = -1;
    if (procs_stop(pid, SIGTERM, timeout_s, &st))
        rc = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
    else
        fprintf(stderr, "server %d did not exit within %d s of SIGTERM; killed it\n", (int)pid,
                timeout_s);
    s->pid = 0;
    if (kill(pid, 0) == 0 || errno != ESRCH) {
        fprintf(stderr, "process %d still exists after stop\n", (int)pid);
        rc = -1;
    }
    free(s->log);
    s->log = srvt_read_log(s);
    unlink(s->log_path);
    return rc;
}

void srvt_release(srvt_server *s) {
    if (s->pid > 0) {
        procs_kill(s->pid);
        s->pid = 0;
        unlink(s->log_path);
    }
    free(s->log);
    s->log = NULL;
}

int srvt_run(const char *const *args, const char *const *env, char **out, char **err) {
    char op[] = "/tmp/attn-run-out-XXXXXX", ep[] = "/tmp/attn-run-err-XXXXXX";
    int ofd = mkostemp(op, O_CLOEXEC), efd = mkostemp(ep, O_CLOEXEC);
    const char *argv[64];
    server_argv(argv, 64, NULL, args);
    int rc = -1, st;
    procs_io io = {.env = env, .out = op, .err = ep, .death_signal = SIGKILL};
    pid_t pid = ofd >= 0 && efd >= 0 ? procs_spawn(argv, &io) : -1;
    if (pid > 0 && procs_wait(pid, 120.0, &st) && WIFEXITED(st)) rc = WEXITSTATUS(st);
    if (pid > 0) procs_kill(pid);
    if (ofd >= 0) close(ofd);
    if (efd >= 0) close(efd);
    if (out) *out = tfile_read(op, NULL);
    if (err) *err = tfile_read(ep, NULL);
    unlink(op);
    unlink(ep);
    return rc;
}

int srvt_wait_url(const char *url, pid_t pid, double timeout_s) {
    for (double end = procs_now() + timeout_s; procs_now() < end; procs_sleep_ms(20)) {
        if (procs_exited(pid)) return 0;
        srvt_reply r;
        srvt_req rq = {.timeout_ms = 1000};
        int ok = srvt_fetch(url, &rq, &r) == CURLE_OK && r.status == 200;
        srvt_reply_free(&r);
        if (ok) return 1;
    }
    return 0;
}

/* ==== HTTP ============================================================== */

typedef struct {
    char *data;
    size_t len, cap;
} grow;

static size_t grow_put(grow *g, const char *p, size_t n) {
    if (g->len + n + 1 > g->cap) {
        size_t cap = (g->cap ? g->cap : 1024);
        while (cap < g->len + n + 1) cap *= 2;
        char *d = realloc(g->data, cap);
        if (!d) return 0;
        g->data = d;
        g->cap = cap;
    }
    memcpy(g->data + g->len, p, n);
    g->len += n;
    g->data[g->len] = '\0';
    return n;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud) { return grow_put(ud, p, size * n); }

typedef struct {
    const srvt_req *rq;
    size_t sent;
    int paused;
} upload;

static size_t on_read(char *buf, size_t size, size_t n, void *ud) {
    upload *u = ud;
    const srvt_req *rq = u->rq;
    size_t room = size * n, left = rq->len - u->sent;
    if (rq->pause_ms > 0 && !u->paused) {
        if (u->sent >= rq->pause_after) {
            u->paused = 1;
            if (rq->on_pause) rq->on_pause(rq->pause_arg);
            procs_sleep_ms(rq->pause_ms);
        } else if (left > rq->pause_after - u->sent) {
            left = rq->pause_after - u->sent;
        }
    }
    if (left > room) left = room;
    memcpy(buf, rq->body + u->sent, left);
    u->sent += left;
    return left;
}

int srvt_fetch(const char *url, const srvt_req *rq, srvt_reply *out) {
    memset(out, 0, sizeof *out);
    CURL *h = rq->handle ? rq->handle : curl_easy_init();
    if (!h) return out->curl_code = CURLE_FAILED_INIT;
    grow body = {0}, head = {0};
    upload up = {rq, 0, 0};
    struct curl_slist *hl = NULL;
    for (size_t i = 0; rq->headers && rq->headers[i]; i++) hl = curl_slist_append(hl, rq->headers[i]);

    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, out->error);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, rq->timeout_ms > 0 ? rq->timeout_ms : 60000L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, rq->connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &head);
    const char *method = rq->method ? rq->method : rq->body ? "POST" : "GET";
    if (rq->body) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        if (rq->chunked || rq->pause_ms > 0) {
            curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
            curl_easy_setopt(h, CURLOPT_READDATA, &up);
            if (rq->chunked) hl = curl_slist_append(hl, "Transfer-Encoding: chunked");
            else curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->len);
        } else {
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->len);
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, rq->body);
        }
    } else {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    if (strcmp(method, "HEAD") == 0) curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "GET") != 0 && strcmp(method, "POST") != 0)
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);

    double t0 = now_ms();
    out->curl_code = curl_easy_perform(h);
    out->ms = now_ms() - t0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &out->status);
    if (!body.data) grow_put(&body, "", 0);
    if (!head.data) grow_put(&head, "", 0);
    out->body = body.data;
    out->len = body.len;
    out->headers = head.data;

    /* A reused handle keeps its connection but forgets this request. */
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
    curl_easy_setopt(h, CURLOPT_NOBODY, 0L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
    curl_easy_setopt(h, CURLOPT_READFUNCTION, NULL);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(hl);
    if (!rq->handle) curl_easy_cleanup(h);
    return out->curl_code;
}

int srvt_do(const srvt_server *s, const char *path, const srvt_req *rq, srvt_reply *out) {
    char url[512];
    snprintf(url, sizeof url, "%s%s", s->base, path);
    return srvt_fetch(url, rq, out);
}

int srvt_get(const srvt_server *s, const char *path, srvt_reply *out) {
    srvt_req rq = {0};
    return srvt_do(s, path, &rq, out);
}

int srvt_post(const srvt_server *s, const char *path, const char *body, srvt_reply *out) {
    srvt_req rq = {.body = body, .len = strlen(body)};
    return srvt_do(s, path, &rq, out);
}

void srvt_reply_free(srvt_reply *r) {
    free(r->body);
    free(r->headers);
    memset(r, 0, sizeof *r);
}

const char *srvt_header(const srvt_reply *r, const char *name, char *buf, size_t cap) {
    const char *found = NULL;
    size_t nl = strlen(name);
    for (const char *line = r->headers; line && *line;) {
        const char *eol = strstr(line, "\r\n");
        if (!eol) eol = line + strlen(line);
        if ((size_t)(eol - line) > nl && strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
            const char *v = line + nl + 1;
            while (*v == ' ' || *v == '\t') v++;
            size_t vl = (size_t)(eol - v);
            if (vl >= cap) vl = cap - 1;
            memcpy(buf, v, vl);
            buf[vl] = '\0';
            found = buf;
        }
        line = *eol ? eol + 2 : eol;
    }
    return found;
}

int srvt_check_error(const srvt_reply *r, long status, const char *code) {
    int ok = 0;
    json_error_t e;
    json_t *root = json_loadb(r->body ? r->body : "", r->len, 0, &e);
    const char *cd = json_string_value(json_object_get(json_object_get(root, "error"), "code"));
    char why[256];
    if (r->status != status) fprintf(stderr, "status %ld, expected %ld\n", r->status, status);
    else if (reply_check_error(root, (int)status, why, sizeof why) != 0)
        fprintf(stderr, "%s: %.300s\n", why, r->body);
    else if (code && strcmp(cd, code) != 0)
        fprintf(stderr, "error.code is not %s: %.300s\n", code, r->body);
    else ok = 1;
    json_decref(root);
    return ok ? 0 : -1;
}

int srvt_connect(const srvt_server *s) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void srvt_must_start(srvt_server *s, const char *const *args) {
    ck_assert_msg(srvt_start(s, args, NULL) == 0, "cannot start %s", srvt_binary());
}

void srvt_must_stop(srvt_server *s) {
    int rc = srvt_stop(s, 30);
    ck_assert_msg(rc == 0, "server exit status %d, log:\n%s", rc, s->log ? s->log : "");
    srvt_release(s);
}

void srvt_assert_header(const srvt_reply *r, const char *name, const char *want) {
    char buf[512];
    const char *v = srvt_header(r, name, buf, sizeof buf);
    if (!want) {
        ck_assert_msg(v == NULL, "unexpected header %s: %s", name, v ? v : "");
        return;
    }
    ck_assert_msg(v != NULL, "no %s header in:\n%s", name, r->headers);
    ck_assert_str_eq(v, want);
}

/* ==== Raw exchanges ===================================================== */

void srvt_raw_read(int fd, int timeout_ms, srvt_raw_reply *out) {
    grow g = {0};
    grow_put(&g, "", 0);
    double end = procs_now() + timeout_ms / 1e3, t0 = procs_now();
    out->end = SRVT_TIMEOUT;
    for (;;) {
        double left = end - procs_now();
        if (left <= 0) break;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, (int)(left * 1e3) + 1) <= 0) continue;
        char buf[16384];
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n > 0) {
            grow_put(&g, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        out->end = n == 0 ? SRVT_EOF : SRVT_RESET;
        break;
    }
    out->data = g.data;
    out->len = g.len;
    out->ms = (procs_now() - t0) * 1e3;
}

int srvt_raw(const srvt_server *s, const char *data, size_t len, int timeout_ms,
             srvt_raw_reply *out) {
    memset(out, 0, sizeof *out);
    int fd = srvt_connect(s);
    if (fd < 0) return -1;
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(fd, data + off, len - off, MSG_NOSIGNAL);
        if (n <= 0) break;
        off += (size_t)n;
    }
    srvt_raw_read(fd, timeout_ms, out);
    close(fd);
    return off == len ? 0 : -1;
}

void srvt_raw_free(srvt_raw_reply *r) {
    free(r->data);
    memset(r, 0, sizeof *r);
}

int srvt_raw_status(const srvt_raw_reply *r) {
    int st = 0;
    if (r->data && sscanf(r->data, "HTTP/1.%*d %d", &st) != 1) st = 0;
    return st;
}

int srvt_raw_replies(const srvt_raw_reply *r) {
    int n = 0;
    for (const char *p = r->data; p && (p = strstr(p, "HTTP/1.")); p++)
        n += p == r->data || p[-1] == '\n';
    return n;
}

int srvt_raw_check_error(const srvt_raw_reply *r, int status, const char *code) {
    const char *body = r->data ? strstr(r->data, "\r\n\r\n") : NULL;
    if (srvt_raw_status(r) != status) {
        fprintf(stderr, "status %d, expected %d: %.300s\n", srvt_raw_status(r), status,
                r->data ? r->data : "");
        return -1;
    }
    if (srvt_raw_replies(r) != 1) {
        fprintf(stderr, "%d status lines: %.600s\n", srvt_raw_replies(r), r->data);
        return -1;
    }
    if (r->end != SRVT_EOF) {
        fprintf(stderr, "the connection was not closed after the reply (%s): %.300s\n",
                r->end == SRVT_TIMEOUT ? "timeout" : "reset", r->data);
        return -1;
    }
    srvt_reply rep = {.status = status, .body = (char *)(body ? body + 4 : ""),
                      .len = body ? strlen(body + 4) : 0};
    return srvt_check_error(&rep, status, code);
}

double srvt_metric(const srvt_server *s, const char *series) {
    srvt_reply r;
    double v = -1;
    if (srvt_get(s, "/metrics", &r) == CURLE_OK && r.status == 200) {
        size_t n = strlen(series);
        for (const char *line = r.body; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
            if (strncmp(line, series, n) == 0 && line[n] == ' ') {
                v = strtod(line + n + 1, NULL);
                break;
            }
    }
    srvt_reply_free(&r);
    return v;
}

int srvt_log_count(const srvt_server *s, const char *needle) {
    char *log = srvt_read_log(s);
    int n = 0;
    for (const char *p = log; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
    free(log);
    return n;
}

int srvt_log_wait(const srvt_server *s, const char *needle, int want, double timeout_s) {
    double end = procs_now() + timeout_s;
    int n;
    while ((n = srvt_log_count(s, needle)) < want && procs_now() < end) procs_sleep_ms(10);
    return n;
}

int srvt_raw_post_head(const srvt_server *s, const char *path, const char *headers, size_t length) {
    int fd = srvt_connect(s);
    ck_assert_int_ge(fd, 0);
    char head[512];
    int n = snprintf(head, sizeof head, "POST %s HTTP/1.1\r\nHost: t\r\n%sContent-Length: %zu\r\n\r\n", path,
                     headers ? headers : "", length);
    ck_assert(n > 0 && (size_t)n < sizeof head);
    srvt_raw_send_all(fd, head, (size_t)n);
    return fd;
}

void srvt_raw_send_all(int fd, const void *data, size_t len) {
    for (size_t off = 0; off < len;) {
        ssize_t w = send(fd, (const char *)data + off, len - off, MSG_NOSIGNAL);
        ck_assert_msg(w > 0, "send after %zu of %zu bytes: %s", off, len, w < 0 ? strerror(errno) : "none");
        off += (size_t)w;
    }
}

int srvt_raw_post(const srvt_server *s, const char *path, const char *headers, const char *body,
                  size_t len) {
    int fd = srvt_raw_post_head(s, path, headers, len);
    srvt_raw_send_all(fd, body, len);
    return fd;
}

long srvt_status_kb(pid_t pid, const char *name) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    long kb = -1;
    size_t n = strlen(name);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, name, n) == 0 && line[n] == ':') kb = strtol(line + n + 1, NULL, 10);
    fclose(f);
    return kb;
}

typedef struct {
    const srvt_server *s;
    const char *path;
    srvt_req rq;
    srvt_reply *out;
} post_job;

static void *post_job_run(void *arg) {
    post_job *j = arg;
    srvt_do(j->s, j->path, &j->rq, j->out);
    return NULL;
}

void srvt_post_concurrently(const srvt_server *s, const char *path, const char *body, long timeout_ms, int n,
                            srvt_reply *replies) {
    ck_assert_int_gt(n, 0);
    post_job *jobs = calloc((size_t)n, sizeof *jobs);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    ck_assert(jobs != NULL && th != NULL);
    for (int i = 0; i < n; i++) {
        jobs[i] = (post_job){s, path, {.body = body, .len = strlen(body), .timeout_ms = timeout_ms}, &replies[i]};
        ck_assert_int_eq(pthread_create(&th[i], NULL, post_job_run, &jobs[i]), 0);
    }
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    free(jobs);
    free(th);
}
