/* test_api_jansson_oom.c - jansson 2.14 asserts in its lexer when one of
 * its allocations fails at the wrong moment: the character it could not
 * save is missing when the string's escapes are decoded (assert(0)) or when
 * a character is put back (assert(c == d)), and the process aborts. Under
 * real memory pressure (ulimit -v, strict overcommit) any request could do
 * that to the server. Each body here is parsed with each of its allocations
 * failing in turn, in a child process: every child must end normally with a
 * well-formed reply (tests/support/reply_check.h), never by SIGABRT.
 */
#include <check.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/api.h"
#include "support/check_main.h"
#include "support/fail_alloc.h"
#include "support/reply_check.h"

/* A body whose string holds an escape after `pad` characters (the lexer's
 * buffer grows at 16, 32, 64, ... bytes), and a number after it. */
static char *body_with(int pad, const char *escape) {
    char *b = malloc(512);
    ck_assert_ptr_nonnull(b);
    snprintf(b, 512, "{\"module\": \"SelfAttention_v1\", \"inputs\": [[1, 2]], \"d_out\": 2, "
             "\"init\": {\"seed\": 1}, \"x\": \"%.*s%s%s\", \"y\": 12345678901234567}", pad,
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", escape,
             "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    return b;
}

/* In a child: api_handle with allocation k failing; exits 0 when the reply
 * is well formed, 1 when not; killed by SIGABRT when jansson asserts. */
static int child_status(const char *body, long k) {
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        api_reply rep;
        fail_alloc_at(k);
        api_handle(API_EP_SELF, body, strlen(body), NULL, &rep);
        fail_alloc_stop();
        char why[256]; /* 503 with no body: the server sends its static one */
        int ok = (rep.body.data == NULL && rep.status == 503) || reply_check(&rep, why, sizeof why) == 0;
        if (!ok && getenv("JANSSON_OOM_VERBOSE")) fprintf(stderr, "k %ld: %s\n", k, why);
        _exit(ok ? 0 : 1);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    return st;
}

START_TEST(t_lexer_never_aborts) {
    static const char *const escapes[] = {"\\u0041", "\\n"};
    int children = 0, aborted = 0, malformed = 0;
    for (int e = 0; e < 2; e++)
        for (int pad = 10; pad <= 34; pad++) { /* around the buffer's growth at 16 and 32 */
            char *body = body_with(pad, escapes[e]);
            api_reply rep;
            fail_alloc_count();
            api_handle(API_EP_SELF, body, strlen(body), NULL, &rep);
            long n = fail_alloc_stop();
            api_reply_free(&rep);
            for (long k = 0; k < n; k++, children++) {
                int st = child_status(body, k);
                if (WIFSIGNALED(st)) {
                    if (!aborted++)
                        fprintf(stderr, "allocation %ld of %ld failing killed the parse (signal %d): "
                                "%s\n", k, n, WTERMSIG(st), body);
                } else if (WEXITSTATUS(st) != 0) {
                    malformed++;
                }
            }
            free(body);
        }
    fprintf(stderr, "jansson: %d parses with one allocation failing, %d aborted, %d malformed\n",
            children, aborted, malformed);
    ck_assert_int_gt(children, 1000); /* allocation 27 of pad 29's \\u0041 aborted before */
    ck_assert_int_eq(aborted, 0);
    ck_assert_int_eq(malformed, 0);
}
END_TEST

static Suite *jansson_suite(void) {
    Suite *s = suite_create("api_jansson_oom");
    const TTest *tests[] = {t_lexer_never_aborts, NULL};
    tcase_with(s, "jansson", 300, tests);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {jansson_suite}};
