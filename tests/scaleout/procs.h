/* procs.h - child processes for the deployment tests (test_deploy_manifests.c,
 * test_scaleout.c): free loopback ports, starting build/attention-server and
 * nginx, waiting for a URL to answer, stopping a process within a time bound,
 * and a registry that kills whatever is still running when a check fails.
 *
 * Check runs each test in a forked child that leaves with _exit() when a check
 * fails (no teardown, no atexit) and is SIGKILLed on timeout, so cleanup
 * cannot rely on the test itself:
 *   - procs_init() (in main, before srunner_run_all) makes the test program a
 *     child subreaper and maps a registry shared with the forked test children;
 *   - every process started here leads its own process group (nginx workers
 *     included) and gets SIGTERM if the test process that started it dies;
 *   - procs_kill_all() (atexit, and after srunner_run_all) SIGKILLs the group
 *     of every registered process not yet reaped, and reaps every orphan.
 * Header-only: each test program includes it once.
 */
#ifndef TESTS_SCALEOUT_PROCS_H
#define TESTS_SCALEOUT_PROCS_H

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROCS_MAX 32

typedef struct {
    int n;
    pid_t pid[PROCS_MAX];
    int live[PROCS_MAX]; /* started and not yet reaped */
} procs_registry;

static procs_registry *procs_reg;

static inline double procs_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void procs_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static inline void procs_forget(pid_t pid) {
    if (!procs_reg) return;
    for (int i = 0; i < procs_reg->n; i++)
        if (procs_reg->pid[i] == pid) procs_reg->live[i] = 0;
}

/* Kills the process group of every registered process that is still live,
 * then reaps (bounded to 5 s) whatever is left: our own children and the
 * orphans that the subreaper flag handed to us. */
static inline void procs_kill_all(void) {
    if (!procs_reg) return;
    for (int i = 0; i < procs_reg->n; i++) {
        if (!procs_reg->live[i]) continue;
        kill(-procs_reg->pid[i], SIGKILL);
        kill(procs_reg->pid[i], SIGKILL);
    }
    /* Reap even when nothing registered is live: the helpers of a process
     * that exited by itself (Chromium's) are orphans handed to us. */
    double end = procs_now() + 5.0;
    while (procs_now() < end) {
        pid_t r = waitpid(-1, NULL, WNOHANG);
        if (r > 0) {
            procs_forget(r);
            continue;
        }
        if (r < 0 && errno == ECHILD) break;
        procs_sleep_ms(10);
    }
    for (int i = 0; i < procs_reg->n; i++) procs_reg->live[i] = 0;
}

/* In main, before srunner_run_all. Returns 0 or -1. */
static inline int procs_init(void) {
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    void *p = mmap(NULL, sizeof *procs_reg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) return -1;
    procs_reg = p;
    memset(procs_reg, 0, sizeof *procs_reg);
    atexit(procs_kill_all);
    return 0;
}

/* A loopback TCP port that was free a moment ago, or 0. */
static inline int procs_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* Starts argv[0] (a path) with argv, stdout and stderr appended to log_path
 * (or inherited when NULL), envp added to the environment ("NAME=value", NULL
 * terminated, may be NULL). Returns the pid, or -1. */
static inline pid_t procs_spawn(char *const argv[], const char *log_path, char *const envp[]) {
    if (!procs_reg || procs_reg->n >= PROCS_MAX) return -1;
    pid_t parent = getpid();
    /* The child's environment: envp first (getenv takes the first match). */
    extern char **environ;
    size_t ne = 0, na = 0;
    while (environ[ne]) ne++;
    while (envp && envp[na]) na++;
    char **env = calloc(ne + na + 1, sizeof *env);
    if (!env) return -1;
    for (size_t i = 0; i < na; i++) env[i] = envp[i];
    for (size_t i = 0; i < ne; i++) env[na + i] = environ[i];
    int log_fd = -1;
    if (log_path) {
        log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log_fd < 0) {
            free(env);
            return -1;
        }
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        if (log_fd >= 0) close(log_fd);
        free(env);
        return -1;
    }
    if (pid == 0) {
        /* Only async-signal-safe calls until exec (the parent has threads). */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
        if (getppid() != parent) _exit(127);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        if (log_fd >= 0) {
            dup2(log_fd, 1);
            dup2(log_fd, 2);
        }
        execve(argv[0], argv, env);
        _exit(127);
    }
    setpgid(pid, pid); /* also here, so that the group exists before we return */
    if (log_fd >= 0) close(log_fd);
    free(env);
    procs_reg->pid[procs_reg->n] = pid;
    procs_reg->live[procs_reg->n] = 1;
    procs_reg->n++;
    return pid;
}

/* Nonblocking: 1 and *status if pid has exited (and is now reaped), else 0. */
static inline int procs_reap(pid_t pid, int *status) {
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) {
        procs_forget(pid);
        if (status) *status = st;
        return 1;
    }
    if (r < 0 && errno == ECHILD) {
        procs_forget(pid);
        if (status) *status = -1;
        return 1;
    }
    return 0;
}

/* Waits up to timeout_s for pid to exit. 1 and *status if it did, else 0. */
static inline int procs_wait(pid_t pid, double timeout_s, int *status) {
    double end = procs_now() + timeout_s;
    for (;;) {
        if (procs_reap(pid, status)) return 1;
        if (procs_now() >= end) return 0;
        procs_sleep_ms(5);
    }
}

/* Sends sig and waits up to timeout_s; then SIGKILLs its group and waits.
 * Returns 1 if it exited within the bound after sig (status in *status),
 * 0 if it had to be killed. */
static inline int procs_stop(pid_t pid, int sig, double timeout_s, int *status) {
    if (pid <= 0) return 1;
    kill(pid, sig);
    if (procs_wait(pid, timeout_s, status)) return 1;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    procs_wait(pid, 5.0, status);
    return 0;
}

/* Installs the Debian package that provides binary when binary is missing
 * (tools/apt-install.sh, as `make deps` does: root or sudo, waits for the
 * package lock). Returns 1 when binary is then there; otherwise the reason
 * is on stderr. */
static inline int procs_ensure_package(const char *binary, const char *package) {
    if (access(binary, X_OK) == 0) return 1;
    fprintf(stderr, "installing %s for %s\n", package, binary);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "tools/apt-install.sh %s", package);
    if (system(cmd) != 0) return 0;
    if (access(binary, X_OK) == 0) return 1;
    fprintf(stderr, "%s is installed but %s is still missing\n", package, binary);
    return 0;
}

/* ---- HTTP with libcurl ------------------------------------------------------ */

typedef struct {
    char *data;
    size_t len, cap;
} procs_buf;

static inline size_t procs_buf_write(char *p, size_t size, size_t n, void *user) {
    procs_buf *b = user;
    size_t add = size * n;
    if (b->len + add + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + add + 1) cap *= 2;
        char *nd = realloc(b->data, cap);
        if (!nd) return 0;
        b->data = nd;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, add);
    b->len += add;
    b->data[b->len] = '\0';
    return add;
}

/* GET (body NULL) or POST body to url with handle c (reused: keep-alive).
 * Returns the HTTP status, or 0 on a transport error (message in errbuf). The
 * reply is in *out (reset first). */
static inline long procs_http(CURL *c, const char *url, const char *body, procs_buf *out,
                              double timeout_s, char errbuf[CURL_ERROR_SIZE]) {
    out->len = 0;
    if (out->data) out->data[0] = '\0';
    errbuf[0] = '\0';
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, procs_buf_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(c, CURLOPT_PROXY, "");
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    }
    if (curl_easy_perform(c) != CURLE_OK) return 0;
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

/* Polls url with GET until it answers 200, pid exits, or timeout_s passes.
 * Returns 1 when it answered 200. */
static inline int procs_wait_http(const char *url, pid_t pid, double timeout_s) {
    CURL *c = curl_easy_init();
    if (!c) return 0;
    procs_buf b = {0};
    char err[CURL_ERROR_SIZE];
    int ok = 0;
    double end = procs_now() + timeout_s;
    while (procs_now() < end) {
        siginfo_t si = {0};
        if (pid > 0 && waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            si.si_pid == pid)
            break; /* it exited: leave it for procs_reap */
        if (procs_http(c, url, NULL, &b, 1.0, err) == 200) {
            ok = 1;
            break;
        }
        procs_sleep_ms(20);
    }
    free(b.data);
    curl_easy_cleanup(c);
    return ok;
}

/* Runs a shell command and returns its output (malloc'd, NUL terminated) and
 * exit status in *status; NULL on failure to start it. */
static inline char *procs_capture(const char *cmd, int *status) {
    FILE *f = popen(cmd, "r");
    if (!f) return NULL;
    procs_buf b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (procs_buf_write(chunk, 1, n, &b) != n) break;
    int st = pclose(f);
    if (status) *status = st;
    if (!b.data) b.data = calloc(1, 1);
    return b.data;
}

#endif
