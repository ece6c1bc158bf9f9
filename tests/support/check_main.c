/* check_main.c - see check_main.h. */
#include "check_main.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>

#include "procs.h"

TCase *tcase_with(Suite *s, const char *name, double timeout_s, const TTest *const tests[]) {
    TCase *tc = tcase_create(name);
    if (timeout_s > 0) tcase_set_timeout(tc, timeout_s);
    for (size_t i = 0; tests && tests[i]; i++) tcase_add_test(tc, tests[i]);
    suite_add_tcase(s, tc);
    return tc;
}

int main(void) {
    if (procs_init() != 0) {
        perror("procs_init");
        return EXIT_FAILURE;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    SRunner *sr = srunner_create(NULL);
    for (int i = 0; i < TEST_MAX_SUITES && TEST_PROGRAM.suites[i]; i++)
        srunner_add_suite(sr, TEST_PROGRAM.suites[i]());
    if (TEST_PROGRAM.nofork) srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (TEST_PROGRAM.after) TEST_PROGRAM.after();
    procs_kill_all();
    curl_global_cleanup();
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

Suite *suite_with(const char *name, const char *tcase, double timeout_s, const TTest *const tests[],
                  void (*setup)(void), void (*teardown)(void)) {
    Suite *s = suite_create(name);
    TCase *tc = tcase_with(s, tcase, timeout_s, tests);
    if (setup || teardown) tcase_add_checked_fixture(tc, setup, teardown);
    return s;
}
