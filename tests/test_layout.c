/* test_layout.c - the code keeps the shape docs/architecture.md gives it:
 * tools/check-layout.py on this build (no call cycle between C files, no
 * function over 80 lines, no private header over 200 lines, at most 10 .c
 * files directly in api/), and every committed generated file equal to
 * what its generator writes (tools/check-generated.sh). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/check_main.h"
#include "support/files.h"
#include "support/procs.h"

/* Runs cmd from the repository root; its output is the failure message. */
static void run_checked(const char *what, const char *cmd) {
    char root[4096], line[8192];
    tfile_path(root, sizeof root, "");
    snprintf(line, sizeof line, "cd '%s' && %s 2>&1", root[0] ? root : ".", cmd);
    int status = -1;
    char *out = procs_capture(line, &status);
    ck_assert_msg(out != NULL, "%s: cannot run %s", what, cmd);
    fprintf(stderr, "%s", out);
    ck_assert_msg(status == 0, "%s failed (exit %d):\n%s", what, status, out);
    free(out);
}

START_TEST(test_layout) {
    const char *build = getenv("BUILD");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tools/check-layout.py '%s'", build ? build : "build");
    run_checked("layout", cmd);
}
END_TEST

START_TEST(test_generated) { run_checked("generated files", "tools/check-generated.sh"); }
END_TEST

static Suite *layout_suite(void) {
    Suite *s = suite_create("layout");
    const TTest *tests[] = {test_layout, test_generated, NULL};
    tcase_with(s, "layout", 60, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {layout_suite}};
