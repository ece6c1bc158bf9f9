/* test_make_run.c - `make run`, the first command of a new user: it builds
 * the server alone (no test program: a dry run into an empty build
 * directory lists the server's objects and link, never tests/), it takes
 * `make run PORT=N HOST=ADDR` as flags, and with ATTN_PORT in the
 * environment it really serves on that port (started from the repository
 * root on this build's directory, probed, stopped with SIGTERM). */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "support/check_main.h"
#include "support/files.h"
#include "support/procs.h"
#include "support/server_harness.h"

/* The repository root (where the Makefile is). */
static const char *root(void) {
    static char path[512];
    tfile_path(path, sizeof path, ".");
    return path;
}

static const char *build_dir(void) {
    const char *b = getenv("BUILD");
    return b && *b ? b : "build";
}

START_TEST(builds_the_server_alone) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "make -s -n -C '%s' run PORT=12345 HOST=127.0.0.2 BUILD=/tmp/no-such-build-dir 2>&1",
             root());
    int st;
    char *out = procs_capture(cmd, &st);
    ck_assert_ptr_nonnull(out);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "make -n run: %d\n%s", st, out);
    ck_assert_msg(strstr(out, "/tmp/no-such-build-dir/attention-server --port 12345 --host 127.0.0.2"),
                  "no server command with the flags:\n%s", out);
    ck_assert_msg(strstr(out, "server/main.c"), "the server is not built:\n%s", out);
    ck_assert_msg(!strstr(out, "tests/test_"), "make run builds test programs:\n%.2000s", out);
    free(out);
    /* nothing on the command line: no flag, the server reads ATTN_PORT itself */
    snprintf(cmd, sizeof cmd, "ATTN_PORT=4321 HOST=elsewhere make -s -n -C '%s' run BUILD=%s 2>&1 | tail -1",
             root(), build_dir());
    out = procs_capture(cmd, &st);
    ck_assert_ptr_nonnull(out);
    ck_assert_msg(strstr(out, "/attention-server\n") && !strstr(out, "--port") && !strstr(out, "--host"),
                  "%s", out);
    free(out);
}
END_TEST

START_TEST(serves_on_attn_port) {
    int port = procs_free_port();
    char env_port[32], env_build[600], makefile_dir[600], url[96], log[128];
    snprintf(env_port, sizeof env_port, "ATTN_PORT=%d", port);
    snprintf(makefile_dir, sizeof makefile_dir, "%s", root());
    snprintf(env_build, sizeof env_build, "BUILD=%s", build_dir());
    snprintf(log, sizeof log, "/tmp/make-run-%d.log", port);
    const char *env[] = {env_port, "ATTN_ACCESS_LOG=off", NULL};
    const char *argv[] = {"/usr/bin/make", "-s", "-C", makefile_dir, "run", env_build, NULL};
    procs_io io = {.env = env, .out = log, .err = log};
    pid_t pid = procs_spawn(argv, &io);
    ck_assert_int_gt(pid, 0);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/healthz", port);
    int up = srvt_wait_url(url, pid, 120);
    char *text = tfile_read(log, NULL);
    ck_assert_msg(up == 1, "make run did not serve on ATTN_PORT %d:\n%s", port, text ? text : "");
    ck_assert_msg(text && strstr(text, "listening on 127.0.0.1 port"), "%s", text ? text : "");
    free(text);
    kill(-pid, SIGTERM); /* make and the server it started: one process group */
    int st;
    ck_assert_msg(procs_wait(pid, 30, &st), "make run did not stop");
    remove(log);
}
END_TEST

static Suite *make_run_suite(void) {
    Suite *s = suite_create("make_run");
    const TTest *tests[] = {builds_the_server_alone, serves_on_attn_port, NULL};
    tcase_with(s, "run", 150, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {make_run_suite}};
