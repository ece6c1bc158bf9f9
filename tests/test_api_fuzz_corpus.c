/* test_api_fuzz_corpus.c - replays tests/fuzz/corpus through api_handle.
 *
 * Each file is one endpoint byte ('0' simple, '1' self, '2' causal,
 * '3' multihead, '4' sdpa) and a request body: the seed examples, inputs
 * written by hand to reach the edges of the parser, and what `make fuzz`
 * kept. Every reply must pass reply_check (a complete JSON object, the
 * documented error shape); the example_* files must also succeed. Under
 * `make asan` the same replay runs with AddressSanitizer and UBSan.
 */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "tests/support/check_main.h"
#include "tests/support/files.h"
#include "tests/support/reply_check.h"

static char corpus_dir[1024];
static char **names;
static int n_names;

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_corpus(void) {
    tfile_path(corpus_dir, sizeof corpus_dir, "tests/fuzz/corpus");
    DIR *d = opendir(corpus_dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        names = realloc(names, (size_t)(n_names + 1) * sizeof *names);
        names[n_names++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n_names, sizeof *names, by_name);
}

START_TEST(replay_one) {
    const char *name = names[_i];
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", corpus_dir, name);
    size_t len;
    char *data = tfile_read(path, &len);
    ck_assert_msg(data != NULL, "cannot read %s", path);
    if (len == 0) { free(data); return; }   /* the fuzzer skips empty inputs too */
    api_reply reply;
    reply_check_run((const unsigned char *)data, len, &reply);
    char why[256] = "";
    int rc = reply_check(&reply, why, sizeof why);
    ck_assert_msg(rc == 0, "%s: %s: %.300s", name, why, reply.body.data ? reply.body.data : "");
    if (strncmp(name, "example_", 8) == 0)
        ck_assert_msg(reply.status == 200, "%s: status %d: %.300s", name, reply.status, reply.body.data);
    api_reply_free(&reply);
    free(data);
}
END_TEST

/* The corpus is there: the examples of api/examples/ and the crafted edges. */
START_TEST(corpus_present) {
    int examples = 0, crafted = 0;
    for (int i = 0; i < n_names; i++) {
        examples += strncmp(names[i], "example_", 8) == 0;
        crafted += strncmp(names[i], "crafted_", 8) == 0;
    }
    ck_assert_int_ge(examples, 15);
    ck_assert_int_ge(crafted, 10);
}
END_TEST

/* Runs in main's process (nofork): hundreds of short replays. */
static Suite *corpus_suite(void) {
    json_object_seed(1);
    list_corpus();
    Suite *s = suite_create("api_fuzz_corpus");
    const TTest *tests[] = {corpus_present, NULL};
    TCase *tc = tcase_with(s, "replay", 60, tests);
    if (n_names > 0) tcase_add_loop_test(tc, replay_one, 0, n_names);
    return s;
}

static void free_names(void) {
    for (int i = 0; i < n_names; i++) free(names[i]);
    free(names);
}

const test_program TEST_PROGRAM = {.suites = {corpus_suite}, .nofork = 1, .after = free_names};
