/* sigbus.c - see sigbus.h: sigsetjmp before the load, siglongjmp from the
 * handler, the faulting address looked up among the mappings. */
#include "sigbus.h"

#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static sigjmp_buf back;
static volatile pid_t guarded_tid;  /* the thread that runs fn */
static void *volatile fault_at;

static void on_sigbus(int sig, siginfo_t *si, void *ctx) {
    (void)ctx;
    if ((pid_t)syscall(SYS_gettid) != guarded_tid) { /* not the load's: the default action */
        signal(sig, SIG_DFL);
        return; /* the access faults again, and ends the process */
    }
    fault_at = si->si_addr;
    siglongjmp(back, 1);
}

/* The path of the file mapped at address a, from /proc/self/maps. */
static void mapped_file(const void *a, char *file, size_t size) {
    snprintf(file, size, "a mapped file");
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return;
    char line[4400];
    uintptr_t at = (uintptr_t)a;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        int path = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &path) < 2 || at < lo || at >= hi)
            continue;
        line[strcspn(line, "\n")] = '\0';
        if (path > 0 && line[path]) snprintf(file, size, "%s", line + path);
        break;
    }
    fclose(f);
}

int srv_sigbus_guard(int (*fn)(void *arg), void *arg, char *file, size_t file_size) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    guarded_tid = (pid_t)syscall(SYS_gettid);
    if (sigaction(SIGBUS, &sa, &old) != 0) return fn(arg);
    int rc;
    if (sigsetjmp(back, 1) == 0) {
        rc = fn(arg);
    } else {
        mapped_file(fault_at, file, file_size);
        rc = SRV_SIGBUS_HIT;
    }
    sigaction(SIGBUS, &old, NULL);
    return rc;
}
