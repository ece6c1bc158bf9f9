/* server_harness.h - the HTTP side of the process harness (procs.h): start
 * the real attention-server of this build on a free loopback port, wait for
 * a URL to answer, and talk HTTP with libcurl (the server, deployment,
 * scale-out and browser tests).
 *
 * The binary is $ATTN_SERVER if set, else $BUILD/attention-server (BUILD is
 * exported by tests/run-tests.sh: build or build-asan), else
 * build/attention-server. Its stderr (the access log) goes to a temporary
 * file. The server is started with procs_spawn and dies with the test
 * process (SIGKILL), so a failing test leaves nothing behind.
 */
#ifndef SERVER_HARNESS_H
#define SERVER_HARNESS_H

#include <curl/curl.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct {
    pid_t pid;            /* 0 when not running */
    int port;
    char base[64];        /* "http://127.0.0.1:PORT" */
    char log_path[64];    /* the server's stderr */
    char *log;            /* its contents after srvt_stop (malloc'd) */
} srvt_server;

/* The path of the server binary of this build. */
const char *srvt_binary(void);

/* Starts the server with --host 127.0.0.1 --port P plus args (NULL-terminated,
 * may be NULL) and the extra environment "K=V" entries in env (may be NULL),
 * then waits until GET /healthz answers 200. Returns 0, or -1 with the
 * reason on stderr. */
int srvt_start(srvt_server *s, const char *const *args, const char *const *env);

/* SIGTERM, then waits up to timeout_s seconds. Returns the exit status, 128+N
 * if it died of signal N, or -1 if it had to be killed. Keeps the log in
 * s->log and deletes the file. Checks that no process is left. */
int srvt_stop(srvt_server *s, int timeout_s);

/* Kills (SIGKILL) a server still running and frees s->log. Accepts a
 * stopped server. */
void srvt_release(srvt_server *s);

/* The same inside a Check test: the test fails when the server cannot start,
 * or does not exit 0 within 30 s (its log is in the message). srvt_must_stop
 * also releases s, so that a test may start another server. */
void srvt_must_start(srvt_server *s, const char *const *args);
void srvt_must_stop(srvt_server *s);

/* The server's stderr so far (malloc'd, NUL-terminated; NULL if none). */
char *srvt_read_log(const srvt_server *s);

/* Runs the binary with args and extra env to completion; captures stdout and
 * stderr (malloc'd, may pass NULL). Returns the exit status, -1 on error. */
int srvt_run(const char *const *args, const char *const *env, char **out, char **err);

/* ==== HTTP ============================================================== */

typedef struct {
    const char *method;          /* default: POST if body, else GET */
    const char *body;            /* sent as is; the content type is not set */
    size_t len;
    const char *const *headers;  /* "Name: value", NULL-terminated; may be NULL */
    int chunked;                 /* Transfer-Encoding: chunked */
    size_t pause_after;          /* with pause_ms: stop after this many body bytes */
    int pause_ms;                /* ... for this long (0: no pause) */
    void (*on_pause)(void *);    /* called once when the pause begins */
    void *pause_arg;
    long timeout_ms;             /* whole transfer; default 60000 */
    long connect_timeout_ms;     /* connecting; 0: curl's default */
    CURL *handle;                /* reuse this handle (keep-alive); NULL: a fresh one */
} srvt_req;

typedef struct {
    int curl_code;               /* CURLE_OK if the exchange completed */
    long status;
    char *body;                  /* NUL-terminated */
    size_t len;
    char *headers;               /* every header line received */
    double ms;
    char error[CURL_ERROR_SIZE]; /* curl's message when curl_code is not CURLE_OK */
} srvt_reply;

/* Sends one request to url (never through a proxy). Returns the CURLcode
 * (also in out); out is always filled and must be freed. */
int srvt_fetch(const char *url, const srvt_req *rq, srvt_reply *out);
/* The same to the server's base + path. */
int srvt_do(const srvt_server *s, const char *path, const srvt_req *rq, srvt_reply *out);
/* GET or POST of a NUL-terminated body. */
int srvt_get(const srvt_server *s, const char *path, srvt_reply *out);
int srvt_post(const srvt_server *s, const char *path, const char *body, srvt_reply *out);
void srvt_reply_free(srvt_reply *r);

/* The value of the last header `name` (case-insensitive) copied into buf, or
 * NULL if absent. */
const char *srvt_header(const srvt_reply *r, const char *name, char *buf, size_t cap);

/* Checks that the reply has that status and a body that reply_check_error
 * accepts ({"error":{"status":S,"code":C,"message":"...","field":...}}),
 * with that code unless code is NULL. Returns 0, or -1 with the reason on
 * stderr. */
int srvt_check_error(const srvt_reply *r, long status, const char *code);

/* Fails the test unless the reply's header `name` is `want` (want NULL: the
 * header must be absent). */
void srvt_assert_header(const srvt_reply *r, const char *name, const char *want);

/* Polls url with GET until it answers 200 (1), pid exits (0; pid <= 0: not
 * watched, and left for procs_reap) or timeout_s passes (0). */
int srvt_wait_url(const char *url, pid_t pid, double timeout_s);

/* A raw TCP connection to the server (for half-sent requests); -1 on error. */
int srvt_connect(const srvt_server *s);

/* ==== Raw exchanges (framing, hang-ups) ================================= */

typedef enum { SRVT_EOF, SRVT_TIMEOUT, SRVT_RESET } srvt_end;

typedef struct {
    char *data;          /* every byte received, NUL-terminated (malloc'd) */
    size_t len;
    srvt_end end;        /* how the reading ended */
    double ms;           /* from the send to that end */
} srvt_raw_reply;

/* Reads fd until the server closes it, resets it, or timeout_ms pass. */
void srvt_raw_read(int fd, int timeout_ms, srvt_raw_reply *out);
/* Connects, sends len bytes of data as they are, and reads as above.
 * Returns 0, or -1 if it could not connect or send. */
int srvt_raw(const srvt_server *s, const char *data, size_t len, int timeout_ms,
             srvt_raw_reply *out);
void srvt_raw_free(srvt_raw_reply *r);

/* The status of the first reply in a raw exchange (0 if none), and how
 * many status lines ("HTTP/1.") it holds at the start of a line. */
int srvt_raw_status(const srvt_raw_reply *r);
int srvt_raw_replies(const srvt_raw_reply *r);
/* Checks that a raw exchange is one reply with that status, a JSON error
 * body with that code, and the connection closed after it. Returns 0, or
 * -1 with the reason on stderr. */
int srvt_raw_check_error(const srvt_raw_reply *r, int status, const char *code);

/* The value of a /metrics series (the whole name with its labels, as
 * printed), or -1 when it is absent or the server does not answer. */
double srvt_metric(const srvt_server *s, const char *series);

/* Counts the lines of the server's log so far that contain `needle`. */
int srvt_log_count(const srvt_server *s, const char *needle);

/* The same, once it has reached want or timeout_s has passed. A reply's
 * access log line (and its count in /metrics) is written when
 * libmicrohttpd has finished with the connection, which may be after the
 * client has read the reply and seen the connection close. */
int srvt_log_wait(const srvt_server *s, const char *needle, int want, double timeout_s);

/* ==== Raw requests and the server's process =========================== */

/* Connects and sends the head of a POST to path with Content-Length length,
 * Host: t and the extra header lines in headers (each ending in "\r\n"; may
 * be NULL); the body is the caller's to send. Returns the socket; fails the
 * test when it cannot connect or send. */
int srvt_raw_post_head(const srvt_server *s, const char *path, const char *headers, size_t length);

/* Sends all len bytes of data on fd (failing the test when a send fails). */
void srvt_raw_send_all(int fd, const void *data, size_t len);

/* srvt_raw_post_head, then the whole body: the socket, the reply unread. */
int srvt_raw_post(const srvt_server *s, const char *path, const char *headers, const char *body,
                  size_t len);

/* The kB of the line "name: N kB" of /proc/PID/status (VmRSS, VmHWM), or -1
 * when there is none; fails the test when the file cannot be read. */
long srvt_status_kb(pid_t pid, const char *name);

/* POSTs body to path from n threads at once (a fresh connection each, the
 * whole transfer bounded by timeout_ms; 0: srvt_req's default) and waits
 * for all: replies[i] is the i-th's (each to be freed with srvt_reply_free,
 * its curl_code saying whether the exchange completed). */
void srvt_post_concurrently(const srvt_server *s, const char *path, const char *body, long timeout_ms, int n,
                            srvt_reply *replies);

#endif
