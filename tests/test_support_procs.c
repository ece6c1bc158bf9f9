/* test_support_procs.c - the process harness the server, deployment,
 * scale-out and browser tests stand on (tests/support/procs.c and the waiting
 * of server_harness.c): a child gets its arguments and environment, its
 * output lands in the files given, it is stopped within the bound with the
 * status it exited with, a shell command's output and status come back, and
 * waiting on a URL ends when the process dies.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/check_main.h"
#include "tests/support/files.h"
#include "tests/support/procs.h"
#include "tests/support/server_harness.h"

/* A fresh temporary file name in path[64] (the file exists, empty). */
static void temp_path(char *path, const char *tag) {
    snprintf(path, 64, "/tmp/attn-procs-%s-XXXXXX", tag);
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
}

/* Runs sh -c script with io and returns its wait status (bounded to 10 s). */
static int run_sh(const char *script, const procs_io *io) {
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    pid_t pid = procs_spawn(argv, io);
    ck_assert_int_gt(pid, 0);
    int st = -1;
    ck_assert_msg(procs_wait(pid, 10.0, &st), "sh -c '%s' did not finish in 10 s", script);
    return st;
}

START_TEST(t_env_and_logs) {
    char out[64], err[64];
    temp_path(out, "out");
    temp_path(err, "err");
    const char *env[] = {"PROCS_TEST=given", "HOME=/given/first", NULL};
    procs_io io = {.env = env, .out = out, .err = err};
    int st = run_sh("echo \"$PROCS_TEST $HOME\"; echo to-stderr >&2; exit 3", &io);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 3, "status %d", st);
    char *o = tfile_read(out, NULL), *e = tfile_read(err, NULL);
    ck_assert_ptr_nonnull(o);
    ck_assert_ptr_nonnull(e);
    ck_assert_str_eq(o, "given /given/first\n");
    ck_assert_str_eq(e, "to-stderr\n");
    free(o);
    free(e);

    /* The same path for both: one file with both streams, appended. */
    io = (procs_io){.out = out, .err = out};
    st = run_sh("echo one; echo two >&2", &io);
    ck_assert_int_eq(st, 0);
    o = tfile_read(out, NULL);
    ck_assert_str_eq(o, "given /given/first\none\ntwo\n");
    free(o);
    unlink(out);
    unlink(err);
}
END_TEST

START_TEST(t_stop_and_kill) {
    const char *argv[] = {"/bin/sleep", "30", NULL};
    pid_t pid = procs_spawn(argv, NULL);
    ck_assert_int_gt(pid, 0);
    ck_assert_int_eq(procs_reap(pid, NULL), 0);   /* still running */
    int st = -1;
    ck_assert(procs_stop(pid, SIGTERM, 5.0, &st));
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %d", st);

    /* One that ignores SIGTERM is killed after the bound. */
    const char *stubborn[] = {"/bin/sh", "-c", "trap '' TERM; sleep 30 & wait", NULL};
    pid = procs_spawn(stubborn, NULL);
    ck_assert_int_gt(pid, 0);
    procs_sleep_ms(100);   /* let the shell set its trap */
    double t0 = procs_now();
    ck_assert_int_eq(procs_stop(pid, SIGTERM, 0.3, &st), 0);
    ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %d", st);
    ck_assert_double_lt(procs_now() - t0, 5.0);
}
END_TEST

START_TEST(t_capture_and_port) {
    int st = -1;
    char *out = procs_capture("printf 'a b'; exit 4", &st);
    ck_assert_ptr_nonnull(out);
    ck_assert_str_eq(out, "a b");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 4, "status %d", st);
    free(out);
    int port = procs_free_port();
    ck_assert_int_gt(port, 0);
    ck_assert_int_lt(port, 65536);
}
END_TEST

/* Waiting on a URL ends as soon as the process dies, not at the timeout. */
START_TEST(t_wait_url_ends_with_the_process) {
    const char *argv[] = {"/bin/sh", "-c", "exit 7", NULL};
    pid_t pid = procs_spawn(argv, NULL);
    ck_assert_int_gt(pid, 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/healthz", procs_free_port());
    double t0 = procs_now();
    ck_assert_int_eq(srvt_wait_url(url, pid, 20.0), 0);
    ck_assert_double_lt(procs_now() - t0, 10.0);
    int st = -1;
    ck_assert(procs_reap(pid, &st));
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 7, "status %d", st);
}
END_TEST

static Suite *procs_suite(void) {
    Suite *s = suite_create("support_procs");
    const TTest *tests[] = {t_env_and_logs, t_stop_and_kill, t_capture_and_port,
                            t_wait_url_ends_with_the_process, NULL};
    tcase_with(s, "procs", 30, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {procs_suite}};
