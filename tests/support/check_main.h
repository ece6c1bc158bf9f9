/* check_main.h - the one main() of the test programs (check_main.c), in the
 * manner of jansson's test/suites/api/util.h: a test file says what it runs,
 * check_main.c runs it.
 *
 * A test file defines its suites and the program:
 *
 *     static Suite *errors_suite(void) {
 *         Suite *s = suite_create("errors");
 *         const TTest *plan[] = {test_zero_sizes, test_overflow, NULL};
 *         tcase_with(s, "plan", 0, plan);
 *         return s;
 *     }
 *     const test_program TEST_PROGRAM = {.suites = {errors_suite}};
 *
 * main() then starts the process harness (tests/support/procs.h: what a test
 * starts is killed when it fails) and libcurl, makes the suites in order (a
 * suite function may prepare state the tests share, it runs once, in main's
 * process), runs them in Check's fork mode (each test in a child process)
 * unless .nofork, prints Check's summary line
 * "100%: Checks: N, Failures: 0, Errors: 0" (tests/run-tests.sh reads it),
 * kills and reaps what is left, and exits 0 only when every check passed.
 *
 * tests/support/ is linked as an archive, so a test file that still defines
 * its own main() links too (without this harness's cleanup).
 */
#ifndef TESTS_SUPPORT_CHECK_MAIN_H
#define TESTS_SUPPORT_CHECK_MAIN_H

#include <check.h>

#define TEST_MAX_SUITES 4

typedef Suite *(*test_suite_fn)(void);

typedef struct {
    test_suite_fn suites[TEST_MAX_SUITES]; /* made and run in this order, up to a NULL */
    int nofork;                            /* run every test in main's own process */
    void (*after)(void);                   /* in main, after the run (may be NULL) */
} test_program;

/* Defined by each test program. */
extern const test_program TEST_PROGRAM;

/* Adds a test case called name to s with tests (NULL-terminated), each
 * allowed timeout_s seconds (0: Check's default, 4 s or CK_DEFAULT_TIMEOUT).
 * Returns it, for tcase_add_checked_fixture or more tests. */
TCase *tcase_with(Suite *s, const char *name, double timeout_s, const TTest *const tests[]);

/* A suite called name of one test case (tcase_with(s, tcase, timeout_s,
 * tests)) with a checked fixture: setup and teardown run in each test's
 * process (either may be NULL; both NULL: no fixture). The common program:
 *
 *     static Suite *work_suite(void) {
 *         const TTest *tests[] = {t_max_work_413, t_hang_up, NULL};
 *         return suite_with("server_work", "work", 120, tests, NULL, teardown);
 *     }
 */
Suite *suite_with(const char *name, const char *tcase, double timeout_s, const TTest *const tests[],
                  void (*setup)(void), void (*teardown)(void));

#endif
