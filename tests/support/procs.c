/* procs.c - see procs.h. */
#include "procs.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
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

#include "files.h"

#define PROCS_MAX 64

enum { SLOT_FREE, SLOT_CLAIMED, SLOT_LIVE };

/* Shared by main and every forked test process. A slot is claimed with a
 * compare-and-swap, so processes and threads may start children at once. */
typedef struct {
    pid_t main_pid;            /* the process that called procs_init */
    pid_t pid[PROCS_MAX];
    pid_t owner[PROCS_MAX];    /* the process that started it */
    int state[PROCS_MAX];
} registry;

static registry *g_reg;

double procs_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void procs_sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int claim_slot(void) {
    for (int i = 0; g_reg && i < PROCS_MAX; i++) {
        int expected = SLOT_FREE;
        if (__atomic_compare_exchange_n(&g_reg->state[i], &expected, SLOT_CLAIMED, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return i;
    }
    return -1;
}

static void forget(pid_t pid) {
    for (int i = 0; g_reg && i < PROCS_MAX; i++)
        if (__atomic_load_n(&g_reg->state[i], __ATOMIC_ACQUIRE) == SLOT_LIVE && g_reg->pid[i] == pid)
            __atomic_store_n(&g_reg->state[i], SLOT_FREE, __ATOMIC_RELEASE);
}

void procs_kill_all(void) {
    if (!g_reg) return;
    pid_t self = getpid();
    int all = self == g_reg->main_pid;
    for (int i = 0; i < PROCS_MAX; i++) {
        if (__atomic_load_n(&g_reg->state[i], __ATOMIC_ACQUIRE) != SLOT_LIVE) continue;
        if (!all && g_reg->owner[i] != self) continue;
        kill(-g_reg->pid[i], SIGKILL);
        kill(g_reg->pid[i], SIGKILL);
    }
    /* Reap even when nothing registered is live: the helpers of a process
     * that exited by itself (Chromium's) are orphans handed to us. */
    for (double end = procs_now() + 5.0; procs_now() < end;) {
        pid_t r = waitpid(-1, NULL, WNOHANG);
        if (r > 0) {
            forget(r);
            continue;
        }
        if (r < 0 && errno == ECHILD) break;
        procs_sleep_ms(10);
    }
    for (int i = 0; i < PROCS_MAX; i++)
        if (__atomic_load_n(&g_reg->state[i], __ATOMIC_ACQUIRE) == SLOT_LIVE &&
            (all || g_reg->owner[i] == self))
            __atomic_store_n(&g_reg->state[i], SLOT_FREE, __ATOMIC_RELEASE);
}

int procs_init(void) {
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    void *p = mmap(NULL, sizeof *g_reg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
    g_reg = p;
    memset(g_reg, 0, sizeof *g_reg);
    g_reg->main_pid = getpid();
    atexit(procs_kill_all);
    return 0;
}

int procs_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static int open_log(const char *path) {
    return path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
}

/* Whether environ entry "NAME=value" names a variable that set[] gives. */
static int env_given(const char *entry, const char *const *set) {
    size_t n = strcspn(entry, "=");
    for (size_t i = 0; set && set[i]; i++)
        if (strncmp(set[i], entry, n) == 0 && set[i][n] == '=') return 1;
    return 0;
}

/* The child's side of fork, entered with every signal blocked: only
 * async-signal-safe calls until exec (the parent may have threads). The
 * handlers of the test process (Check's SIGTERM handler kills its process
 * group) are reset before any signal can reach this process. */
static void exec_child(const char *const argv[], char *const env[], int out_fd, int err_fd,
                       int death_signal, pid_t parent) {
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++) sigaction(sig, &dfl, NULL);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, death_signal, 0, 0, 0);
    if (getppid() != parent) _exit(127);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    if (out_fd >= 0) dup2(out_fd, 1);
    if (err_fd >= 0) dup2(err_fd, 2);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(argv[0], (char *const *)argv, env);
    _exit(127);
}

pid_t procs_spawn(const char *const argv[], const procs_io *io) {
    static const procs_io none = {0};
    if (!io) io = &none;
    if (g_reg == NULL) { /* a test program with a main() of its own */
        fprintf(stderr, "procs_spawn: procs_init() was not called (tests/support/check_main.c "
                        "calls it: define TEST_PROGRAM instead of main)\n");
        return -1;
    }
    int slot = claim_slot();
    if (slot < 0) return -1;
    /* The child's environment: io->env, then what it does not replace. */
    extern char **environ;
    size_t ne = 0, na = 0;
    while (environ[ne]) ne++;
    while (io->env && io->env[na]) na++;
    char **env = calloc(ne + na + 1, sizeof *env);
    int out_fd = open_log(io->out);
    int err_fd = io->err && io->out && strcmp(io->err, io->out) == 0 ? out_fd : open_log(io->err);
    pid_t pid = -1;
    if (env && (!io->out || out_fd >= 0) && (!io->err || err_fd >= 0)) {
        size_t k = 0;
        for (size_t i = 0; i < na; i++) env[k++] = (char *)io->env[i];
        for (size_t i = 0; i < ne; i++)
            if (!env_given(environ[i], io->env)) env[k++] = environ[i];
        fflush(NULL);
        pid_t parent = getpid();
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pid = fork();
        if (pid == 0)
            exec_child(argv, env, out_fd, err_fd, io->death_signal ? io->death_signal : SIGTERM,
                       parent);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    if (pid > 0) setpgid(pid, pid); /* also here, so that the group exists before we return */
    if (out_fd >= 0) close(out_fd);
    if (err_fd >= 0 && err_fd != out_fd) close(err_fd);
    free(env);
    if (pid < 0) {
        __atomic_store_n(&g_reg->state[slot], SLOT_FREE, __ATOMIC_RELEASE);
        return -1;
    }
    g_reg->pid[slot] = pid;
    g_reg->owner[slot] = getpid();
    __atomic_store_n(&g_reg->state[slot], SLOT_LIVE, __ATOMIC_RELEASE);
    return pid;
}

int procs_reap(pid_t pid, int *status) {
    int st = 0;
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid || (r < 0 && errno == ECHILD)) {
        forget(pid);
        if (status) *status = r == pid ? st : -1;
        return 1;
    }
    return 0;
}

int procs_exited(pid_t pid) {
    siginfo_t si = {0};
    return pid > 0 && waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           si.si_pid == pid;
}

int procs_wait(pid_t pid, double timeout_s, int *status) {
    for (double end = procs_now() + timeout_s;; procs_sleep_ms(5)) {
        if (procs_reap(pid, status)) return 1;
        if (procs_now() >= end) return 0;
    }
}

void procs_kill(pid_t pid) {
    if (pid <= 0) return;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    procs_wait(pid, 5.0, NULL);
}

int procs_stop(pid_t pid, int sig, double timeout_s, int *status) {
    if (pid <= 0) return 1;
    kill(pid, sig);
    if (procs_wait(pid, timeout_s, status)) return 1;
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    procs_wait(pid, 5.0, status);
    return 0;
}

char *procs_capture(const char *cmd, int *status) {
    FILE *f = popen(cmd, "r");
    if (!f) return NULL;
    char *out = tfile_read_stream(f, NULL);
    int st = pclose(f);
    if (status) *status = st;
    return out ? out : calloc(1, 1);
}

int procs_ensure_package(const char *binary, const char *package) {
    if (access(binary, X_OK) == 0) return 1;
    fprintf(stderr, "installing %s for %s\n", package, binary);
    /* tools/apt-install.sh waits for the package lock and says what failed */
    char script[1024], cmd[1400];
    tfile_path(script, sizeof script, "tools/apt-install.sh");
    snprintf(cmd, sizeof cmd, "'%s' %s", script, package);
    if (system(cmd) != 0) return 0;
    if (access(binary, X_OK) == 0) return 1;
    fprintf(stderr, "%s is installed but %s is still missing\n", package, binary);
    return 0;
}
