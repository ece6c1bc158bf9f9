/* procs.h - child processes of the test programs: free loopback ports,
 * starting a program with its arguments, environment and log files, waiting
 * for it and stopping it within a time bound, and a registry that kills
 * whatever a test left running (tests/support/procs.c). The HTTP side (wait
 * until a URL answers, the attention-server of this build) is
 * tests/support/server_harness.h.
 *
 * Check runs each test in a forked child that leaves with _exit() when a check
 * fails (no teardown, no atexit) and is SIGKILLed on timeout, so cleanup
 * cannot rely on the test itself:
 *   - procs_init() (check_main.c's main, before the tests run) makes the test
 *     program a child subreaper and maps a registry shared with the forked
 *     test children;
 *   - every process started here leads its own process group (nginx workers,
 *     Chromium's helpers included) and gets a signal (SIGTERM unless said
 *     otherwise) when the thread that started it ends;
 *   - procs_kill_all() (atexit in each test process, and in main after the
 *     run) SIGKILLs the group of every registered process that this process
 *     started (main: every one) and is not yet reaped, then reaps every child
 *     and orphan.
 */
#ifndef TESTS_SUPPORT_PROCS_H
#define TESTS_SUPPORT_PROCS_H

#include <sys/types.h>

/* In main, before the tests run. Returns 0 or -1. */
int procs_init(void);

/* See above. Does nothing before procs_init. */
void procs_kill_all(void);

/* A loopback TCP port that was free a moment ago, or 0. */
int procs_free_port(void);

typedef struct {
    const char *const *env; /* "NAME=value" added to the inherited environment,
                               replacing a variable of that name; NULL-terminated;
                               may be NULL */
    const char *out;        /* stdout appended to this file; NULL: inherited */
    const char *err;        /* stderr likewise; the same path as out: one file */
    int death_signal;       /* sent when the starting thread ends; 0: SIGTERM */
} procs_io;

/* Starts argv[0] (a path) with argv (NULL-terminated), stdin from /dev/null,
 * default signal dispositions and an empty signal mask, and registers it. A
 * signal sent to it at once (before exec) is held until its dispositions are
 * reset. io may be NULL. Returns the pid, or -1. */
pid_t procs_spawn(const char *const argv[], const procs_io *io);

/* Nonblocking: 1 and *status (may be NULL) if pid has exited and is now
 * reaped, else 0. */
int procs_reap(pid_t pid, int *status);

/* 1 if pid has exited but is not reaped yet (procs_reap still sees it). */
int procs_exited(pid_t pid);

/* Waits up to timeout_s for pid to exit. 1 and *status if it did, else 0. */
int procs_wait(pid_t pid, double timeout_s, int *status);

/* Sends sig and waits up to timeout_s; then SIGKILLs its group and waits.
 * Returns 1 if it exited within the bound after sig (status in *status),
 * 0 if it had to be killed. */
int procs_stop(pid_t pid, int sig, double timeout_s, int *status);

/* SIGKILLs pid and its group and reaps it (bounded to 5 s). */
void procs_kill(pid_t pid);

/* Runs a shell command; returns its stdout (malloc'd, NUL-terminated) and its
 * wait status in *status (may be NULL); NULL if it could not start. */
char *procs_capture(const char *cmd, int *status);

/* Installs the Debian package that provides binary when binary is missing
 * (apt-get, as root or through sudo, like `make deps`). Returns 1 when
 * binary is then there. */
int procs_ensure_package(const char *binary, const char *package);

/* CLOCK_MONOTONIC in seconds, and a sleep that survives signals. */
double procs_now(void);
void procs_sleep_ms(int ms);

#endif
