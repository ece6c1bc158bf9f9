/* test_readme.c - runs every curl example of README.md and of every docs/NAME.md
 * as written and checks its output against the block shown under it.
 *
 * An example is a ```sh block whose lines start with "curl"; the fenced
 * block right after it (```json or ```text) is the expected output. JSON is
 * compared as JSON (same values, any spacing), text line by line. The
 * examples say localhost:8080; the test points them at a server of its own
 * started on a free port.
 */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/check_main.h"
#include "support/files.h"
#include "support/procs.h"
#include "support/server_harness.h"

#define MAX_EXAMPLES 128

typedef struct {
    char *command;   /* the sh block */
    char *expected;  /* the block after it */
    int is_json;
    const char *file; /* README.md or docs/NAME.md */
    int line;        /* where the command starts in it */
} example;

static example examples[MAX_EXAMPLES];
static int n_examples;
static srvt_server g_server;

static int line_of(const char *text, const char *at) {
    int line = 1;
    for (const char *c = text; c < at; c++) line += *c == '\n';
    return line;
}

/* Returns the fenced block whose text starts at *p (after its opening line)
 * and advances *p past the closing fence; NULL if unterminated. */
static char *take_block(char **p) {
    char *start = *p, *end = strstr(start, "\n```");
    if (!end) return NULL;
    char *block = strndup(start, (size_t)(end - start + 1));
    char *eol = strchr(end + 1, '\n');
    *p = eol ? eol + 1 : end + 4;
    return block;
}

/* Adds the examples of the repository file rel to examples[]; returns NULL
 * or a description of what is wrong. */
static const char *collect_file(const char *rel) {
    static char problem[256];
    char *text = tfile_read_rel(rel, NULL);
    if (!text) {
        snprintf(problem, sizeof problem, "cannot read %s", rel);
        return problem;
    }
    char *p = text;
    while ((p = strstr(p, "```")) != NULL) {
        int is_sh = strncmp(p, "```sh\n", 6) == 0;
        char *eol = strchr(p, '\n');
        if (!eol) break;
        p = eol + 1;
        int line = line_of(text, p);
        char *block = take_block(&p);
        if (!block) break;
        if (!is_sh || strncmp(block, "curl ", 5) != 0) {
            free(block);
            continue;
        }
        /* The expected output: the next fenced block, after blank lines only. */
        while (*p == '\n') p++;
        if (strncmp(p, "```", 3) != 0 || !strchr(p, '\n')) {
            snprintf(problem, sizeof problem, "%s:%d: a curl example needs its output "
                     "block right after it", rel, line);
            return problem;
        }
        int is_json = strncmp(p, "```json\n", 8) == 0;
        p = strchr(p, '\n') + 1;
        char *expected = take_block(&p);
        if (!expected || n_examples == MAX_EXAMPLES) {
            snprintf(problem, sizeof problem, "%s:%d: unterminated output block or too "
                     "many examples", rel, line);
            return problem;
        }
        examples[n_examples++] = (example){block, expected, is_json, strdup(rel), line};
    }
    free(text);
    return NULL;
}

/* Fills examples[] from README.md, then the .md files of docs/ in name order. */
static const char *collect_examples(void) {
    char *names[64];
    int n = tfile_docs(names, 64);
    if (n < 0) return "cannot list docs/";
    const char *problem = NULL;
    for (int i = 0; i < n; i++) {
        if (!problem) problem = collect_file(names[i]);
        free(names[i]);
    }
    return problem;
}

/* Replaces every "localhost:8080" by the test server's address. */
static char *retarget(const char *cmd) {
    static const char *from = "localhost:8080";
    char to[32];
    snprintf(to, sizeof to, "127.0.0.1:%d", g_server.port);
    char *out = malloc(strlen(cmd) * 2 + 64), *o = out;
    for (const char *c = cmd; *c;) {
        if (strncmp(c, from, strlen(from)) == 0) {
            o += sprintf(o, "%s", to);
            c += strlen(from);
        } else {
            *o++ = *c++;
        }
    }
    *o = '\0';
    return out;
}

static const char *collect_problem;
static int server_started;

START_TEST(readme_has_examples) {
    ck_assert_msg(collect_problem == NULL, "%s", collect_problem);
    ck_assert_msg(server_started, "the server did not answer /healthz");
    ck_assert_msg(n_examples >= 5, "README.md and docs/ show %d curl examples, expected one "
                  "per endpoint at least", n_examples);
}
END_TEST

START_TEST(readme_example_runs) {
    if (_i >= n_examples || !server_started) return; /* reported by readme_has_examples */
    example *ex = &examples[_i];
    char *cmd = retarget(ex->command);
    int rc = -1;
    char *out = procs_capture(cmd, &rc);
    ck_assert_msg(out != NULL && rc == 0, "%s:%d: exit status %d: %s", ex->file, ex->line, rc, cmd);
    if (ex->is_json) {
        json_error_t e1, e2;
        json_t *got = json_loads(out, 0, &e1), *want = json_loads(ex->expected, 0, &e2);
        ck_assert_msg(want != NULL, "%s:%d: the shown output is not JSON: %s", ex->file, ex->line,
                      e2.text);
        ck_assert_msg(got != NULL, "%s:%d: the reply is not JSON: %s", ex->file, ex->line, out);
        ck_assert_msg(json_equal(got, want), "%s:%d: reply differs from the document:\n%s",
                      ex->file, ex->line, out);
        json_decref(got);
        json_decref(want);
    } else {
        ck_assert_msg(strcmp(out, ex->expected) == 0,
                      "%s:%d: output differs from the document:\n%s", ex->file, ex->line, out);
    }
    free(out);
    free(cmd);
}
END_TEST

/* Runs in main's process (nofork): the examples and the server are made
 * once, here, for all the checks. */
static Suite *readme_suite(void) {
    collect_problem = collect_examples();
    server_started = srvt_start(&g_server, NULL, NULL) == 0;
    Suite *s = suite_create("readme");
    const TTest *tests[] = {readme_has_examples, NULL};
    TCase *tc = tcase_with(s, "curl examples", 30, tests);
    tcase_add_loop_test(tc, readme_example_runs, 0, n_examples > 0 ? n_examples : 1);
    return s;
}

static void stop_server(void) {
    srvt_stop(&g_server, 30);
    srvt_release(&g_server);
}

const test_program TEST_PROGRAM = {.suites = {readme_suite}, .nofork = 1, .after = stop_server};
