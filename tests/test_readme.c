/* test_readme.c - runs every curl example of README.md as written and checks
 * its output against the block shown under it.
 *
 * An example is a ```sh block whose lines start with "curl"; the fenced
 * block right after it (```json or ```text) is the expected output. JSON is
 * compared as JSON (same values, any spacing), text line by line. The
 * examples say localhost:8080; the test points them at a server of its own
 * started on a free port.
 */
#include <check.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_EXAMPLES 64

typedef struct {
    char *command;   /* the sh block */
    char *expected;  /* the block after it */
    int is_json;
    int line;        /* where the command starts in README.md */
} example;

static example examples[MAX_EXAMPLES];
static int n_examples;
static pid_t server_pid;
static int server_port;

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

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

/* Fills examples[]; returns NULL or a description of what is wrong. */
static const char *collect_examples(void) {
    static char problem[256];
    char *readme = read_file("README.md");
    if (!readme) return "README.md not found (run from the repository root)";
    char *p = readme;
    while ((p = strstr(p, "```")) != NULL) {
        int is_sh = strncmp(p, "```sh\n", 6) == 0;
        char *eol = strchr(p, '\n');
        if (!eol) break;
        p = eol + 1;
        int line = line_of(readme, p);
        char *block = take_block(&p);
        if (!block) break;
        if (!is_sh || strncmp(block, "curl ", 5) != 0) {
            free(block);
            continue;
        }
        /* The expected output: the next fenced block, after blank lines only. */
        while (*p == '\n') p++;
        if (strncmp(p, "```", 3) != 0 || !strchr(p, '\n')) {
            snprintf(problem, sizeof problem, "README.md:%d: a curl example needs its output "
                     "block right after it", line);
            return problem;
        }
        int is_json = strncmp(p, "```json\n", 8) == 0;
        p = strchr(p, '\n') + 1;
        char *expected = take_block(&p);
        if (!expected || n_examples == MAX_EXAMPLES) {
            snprintf(problem, sizeof problem, "README.md:%d: unterminated output block or too "
                     "many examples", line);
            return problem;
        }
        examples[n_examples++] = (example){block, expected, is_json, line};
    }
    free(readme);
    return NULL;
}

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &len))
        return -1;
    int port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static int run(const char *cmd, char **out) {
    FILE *f = popen(cmd, "r");
    if (!f) return -1;
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) break;
            buf = bigger;
            cap *= 2;
        }
    }
    buf[len] = '\0';
    *out = buf;
    return pclose(f);
}

/* Starts the server of this build on a free port; 0 when it answers. */
static int start_server(void) {
    const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
    char bin[512];
    snprintf(bin, sizeof bin, "%s/attention-server", build);
    server_port = free_port();
    if (server_port <= 0) return -1;
    char port[16];
    snprintf(port, sizeof port, "%d", server_port);
    server_pid = fork();
    if (server_pid == 0) {
        if (!freopen("/dev/null", "w", stderr)) _exit(127);
        execl(bin, bin, "--host", "127.0.0.1", "--port", port, (char *)NULL);
        _exit(127);
    }
    char cmd[256], *out = NULL;
    snprintf(cmd, sizeof cmd, "curl -sf http://127.0.0.1:%d/healthz", server_port);
    for (int i = 0; i < 100; i++) {
        int rc = run(cmd, &out);
        free(out);
        if (rc == 0) return 0;
        usleep(50 * 1000);
    }
    return -1;
}

static void stop_server(void) {
    if (server_pid <= 0) return;
    kill(server_pid, SIGTERM);
    int status;
    waitpid(server_pid, &status, 0);
    server_pid = 0;
}

/* Replaces every "localhost:8080" by the test server's address. */
static char *retarget(const char *cmd) {
    static const char *from = "localhost:8080";
    char to[32];
    snprintf(to, sizeof to, "127.0.0.1:%d", server_port);
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
    ck_assert_msg(n_examples >= 5, "README.md shows %d curl examples, expected one per endpoint",
                  n_examples);
}
END_TEST

START_TEST(readme_example_runs) {
    if (_i >= n_examples || !server_started) return; /* reported by readme_has_examples */
    example *ex = &examples[_i];
    char *cmd = retarget(ex->command), *out = NULL;
    int rc = run(cmd, &out);
    ck_assert_msg(rc == 0, "README.md:%d: exit status %d: %s", ex->line, rc, cmd);
    if (ex->is_json) {
        json_error_t e1, e2;
        json_t *got = json_loads(out, 0, &e1), *want = json_loads(ex->expected, 0, &e2);
        ck_assert_msg(want != NULL, "README.md:%d: the shown output is not JSON: %s", ex->line,
                      e2.text);
        ck_assert_msg(got != NULL, "README.md:%d: the reply is not JSON: %s", ex->line, out);
        ck_assert_msg(json_equal(got, want), "README.md:%d: reply differs from the README:\n%s",
                      ex->line, out);
        json_decref(got);
        json_decref(want);
    } else {
        ck_assert_msg(strcmp(out, ex->expected) == 0,
                      "README.md:%d: output differs from the README:\n%s", ex->line, out);
    }
    free(out);
    free(cmd);
}
END_TEST

int main(void) {
    collect_problem = collect_examples();
    server_started = start_server() == 0;
    Suite *s = suite_create("readme");
    TCase *tc = tcase_create("curl examples");
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, readme_has_examples);
    tcase_add_loop_test(tc, readme_example_runs, 0, n_examples > 0 ? n_examples : 1);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    stop_server();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
