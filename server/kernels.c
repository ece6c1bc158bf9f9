/* kernels.c - see kernels.h. */
#include "kernels.h"

#include <cblas.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"

/* The kernel sets that failed before this process, "Core: why; Core: why". */
#define HISTORY_ENV "ATTN_BLAS_FALLBACK"

static srv_kernels g_kernels; /* written once, before any thread of ours */

const srv_kernels *srv_kernels_get(void) { return &g_kernels; }

/* In the child: the check with one OpenBLAS thread (as the server runs it),
 * its report written to fd; no core file if a kernel crashes, and a hung
 * kernel is killed after 30 s. */
static void child_check(int fd) {
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    alarm(30);
    openblas_set_num_threads(1);
    attn_blas_report r;
    int ok = attn_blas_check(&r) == ATTN_OK && write(fd, &r, sizeof r) == (ssize_t)sizeof r;
    _exit(ok ? 0 : 3);
}

/* Reads exactly n bytes (fewer if the writer died). */
static size_t read_all(int fd, void *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    return got;
}

/* Runs attn_blas_check in a child process. Returns 1 when it passed (r
 * filled), 0 when it failed or the child died (why says how), -1 when no
 * child could be started. */
static int check_in_child(attn_blas_report *r, char *why, size_t cap) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]), close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        child_check(fd[1]);
    }
    close(fd[1]);
    size_t got = read_all(fd[0], r, sizeof *r);
    close(fd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(st)) {
        snprintf(why, cap, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
        return 0;
    }
    if (got != sizeof *r || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(why, cap, "the check did not finish (exit status %d)", WEXITSTATUS(st));
        return 0;
    }
    if (!r->passed) {
        snprintf(why, cap, "%s out of bound (%.2g times it)", r->failed, r->worst);
        return 0;
    }
    return 1;
}

/* 1 when `name` is one of the cores named in history ("Core: why; ..."). */
static int tried(const char *history, const char *name) {
    size_t n = strlen(name);
    for (const char *p = history; p && *p;) {
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') return 1;
        const char *next = strstr(p, "; ");
        p = next ? next + 2 : NULL;
    }
    return 0;
}

/* Executes this binary again with OPENBLAS_CORETYPE=core and the history;
 * returns only if that failed. */
static void reexec(char **argv, const char *core, const char *history) {
    if (setenv("OPENBLAS_CORETYPE", core, 1) != 0 || setenv(HISTORY_ENV, history, 1) != 0) return;
    execv("/proc/self/exe", argv);
    execvp(argv[0], argv);
}

/* The check failed for the kernels in use: tries the next set. Returns -1
 * (logged) when there is none or it could not be started. */
static int fall_back(char **argv, const char *core, const char *why) {
    const char *before = getenv(HISTORY_ENV);
    char history[sizeof g_kernels.fallback_from];
    snprintf(history, sizeof history, "%s%s%s: %s", before ? before : "", before ? "; " : "",
             core, why);
    static const char *const sets[] = SRV_KERNELS_FALLBACKS;
    const char *forced = getenv("OPENBLAS_CORETYPE");
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        if (tried(history, sets[i]) || (forced && strcasecmp(forced, sets[i]) == 0) ||
            strcasecmp(core, sets[i]) == 0)
            continue;
        srv_log("OpenBLAS kernels %s failed the start-up check (%s): starting again with "
                "OPENBLAS_CORETYPE=%s", core, why, sets[i]);
        reexec(argv, sets[i], history);
        srv_log("cannot execute the server again: %s", strerror(errno));
        return -1;
    }
    srv_log("no OpenBLAS kernel set passed the start-up check (%s): not starting", history);
    return -1;
}

int srv_kernels_select(char **argv) {
    const char *core = openblas_get_corename();
    char why[160] = "";
    attn_blas_report r;
    int rc = check_in_child(&r, why, sizeof why);
    if (rc < 0) { /* no child: check here (a crashing kernel then ends the server) */
        int threads = openblas_get_num_threads();
        openblas_set_num_threads(1);
        rc = attn_blas_check(&r) == ATTN_OK && r.passed;
        openblas_set_num_threads(threads);
        snprintf(why, sizeof why, "%s out of bound (%.2g times it)", r.failed, r.worst);
    }
    if (!rc) return fall_back(argv, core ? core : "?", why);
    g_kernels.report = r;
    const char *history = getenv(HISTORY_ENV);
    snprintf(g_kernels.fallback_from, sizeof g_kernels.fallback_from, "%s", history ? history : "");
    unsetenv(HISTORY_ENV);
    srv_log("OpenBLAS kernels %s passed the start-up check: %d products within %.2g of the "
            "float32 bound in %.1f ms%s%s", r.core, r.products, r.worst, r.ms,
            g_kernels.fallback_from[0] ? "; after " : "", g_kernels.fallback_from);
    return 0;
}
