/* test_api_clients.c - client generators accept the OpenAPI document.
 *
 * The document is the one the server embeds and serves (api_openapi_json()).
 * With Node from Debian (nodejs, npm: installed with apt-get when missing)
 * and three npm packages at pinned versions, installed once into build/npm/
 * (NPM_PREFIX overrides it) and used offline afterwards:
 *
 *   - `redocly lint` with the recommended rules (tests/clients/redocly.yaml:
 *     one rule off, with its reason) reports no error and no warning; the
 *     same lint of the document without `servers` must report one, so the
 *     rules are known to run;
 *   - openapi-typescript, with its default options, turns the document into
 *     openapi.ts; the test writes requests.ts, every request of README.md and
 *     api/examples/ as a typed literal (tests/support/api_requests.c), and
 *     `tsc --strict` compiles them with tests/clients/client.ts (a small
 *     client that reads attn_weights as number[][][]) and
 *     tests/clients/negative.ts (lines the types must refuse, each under a
 *     @ts-expect-error that fails the build if the types accept it);
 *   - node runs the compiled client against a server of this build: every
 *     request answers as api_handle answers it in this process, and the
 *     GPT-2 example of the README gives [2][3][3] weights that the client
 *     read nested, flat and base64 and found equal;
 *   - the client's own sources (api.ts, client.ts) hold no cast, no `any`
 *     and no @ts- directive.
 *
 * The work files stay in $BUILD/clients/ for a look after a failure. When npm
 * cannot reach its registry the test fails and says so.
 */
#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/model/model.h"
#include "api/module/module.h"
#include "api/numbers/numbers.h"
#include "support/api_requests.h"
#include "support/check_main.h"
#include "support/files.h"
#include "support/jschema.h"
#include "support/npm.h"
#include "support/procs.h"
#include "support/server_harness.h"

/* What the test installs from npm, pinned: versions that run on Debian
 * bookworm's own Node 18 (18.20.4), which `make test` installs on a fresh
 * machine. @redocly/cli 2.x needs Node 20.19 or 22 ("engines"); 1.34.20, the
 * last of 1.x whose dependencies are all published (1.34.21 names a
 * respect-core that the registry does not have), takes Node 18.17 and gives
 * this document the same verdicts.
 * Checked by running this test with Node 18.20.4 and npm 9.2.0 (Debian's)
 * in place of /usr/bin/node and npm (docs/testing.md). */
#define REDOCLY_VERSION "1.34.20"
#define NODE_MIN_MAJOR 18
#define NODE_MIN_MINOR 17
static const char *const npm_packages[] = {"openapi-typescript@7.13.0", "typescript@5.9.3",
                                           "@redocly/cli@" REDOCLY_VERSION, NULL};

static char g_npm[1024];    /* the npm prefix: build/npm */
static char g_work[1024];   /* $BUILD/clients */

/* ==== Files and processes ================================================ */

static void set_dirs(void) {
    const char *prefix = getenv("NPM_PREFIX");
    if (prefix && *prefix) snprintf(g_npm, sizeof g_npm, "%s", prefix);
    else tfile_path(g_npm, sizeof g_npm, "build/npm");
    const char *build = getenv("BUILD");
    char rel[256];
    snprintf(rel, sizeof rel, "%s/clients", build && *build ? build : "build");
    if (rel[0] == '/') snprintf(g_work, sizeof g_work, "%s", rel);
    else tfile_path(g_work, sizeof g_work, rel);
}

/* Creates the directory path and makes path absolute (the programs started
 * here get absolute paths only). */
static void mkdirs(char *path, size_t cap) {
    char cmd[1200], abs[PATH_MAX];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", path);
    ck_assert_msg(system(cmd) == 0 && realpath(path, abs) != NULL, "cannot create %s", path);
    ck_assert_msg(strlen(abs) < cap, "path too long: %s", abs);
    memcpy(path, abs, strlen(abs) + 1);
}

static void write_file(const char *dir, const char *name, const char *text, size_t len) {
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_msg(f != NULL, "cannot write %s: %s", path, strerror(errno));
    int ok = fwrite(text, 1, len, f) == len;
    ck_assert_msg(fclose(f) == 0 && ok, "cannot write %s", path);
}

/* The file dir/name, malloc'd ("" if absent). */
static char *read_in(const char *dir, const char *name) {
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *s = tfile_read(path, NULL);
    return s ? s : calloc(1, 1);
}

/* Runs argv (argv[0] and every file argument absolute paths) with env
 * added ("K=V", NULL-terminated, may be NULL), stdout to g_work/out_name and
 * stderr to g_work/err_name, for at most timeout_s. Returns the exit status,
 * or -1 when it could not start, died of a signal or ran out of time (it is
 * then killed). */
static int run(const char *const argv[], const char *const env[], const char *out_name,
               const char *err_name, double timeout_s) {
    char out[1400], err[1400];
    snprintf(out, sizeof out, "%s/%s", g_work, out_name);
    snprintf(err, sizeof err, "%s/%s", g_work, err_name);
    unlink(out);
    unlink(err);
    procs_io io = {.env = env, .out = out, .err = err, .death_signal = SIGKILL};
    pid_t pid = procs_spawn(argv, &io);
    if (pid < 0) return -1;
    int st = 0;
    if (!procs_wait(pid, timeout_s, &st)) {
        fprintf(stderr, "%s: no answer after %.0f s, killed\n", argv[0], timeout_s);
        procs_kill(pid);
        return -1;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The last lines of a text, at most n bytes (points into it). */
static const char *tail(const char *s, size_t n) {
    size_t len = strlen(s);
    if (len <= n) return s;
    const char *p = s + len - n, *nl = strchr(p, '\n');
    return nl ? nl + 1 : p;
}

/* A program of the npm prefix: build/npm/node_modules/.bin/NAME */
static void npm_bin(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/node_modules/.bin/%s", g_npm, name);
}

/* The directories, and Node and npm from Debian (apt-get when missing). */
static void need_node(void) {
    set_dirs();
    mkdirs(g_work, sizeof g_work);
    mkdirs(g_npm, sizeof g_npm);
    ck_assert_msg(procs_ensure_package("/usr/bin/node", "nodejs"),
                  "could not install nodejs (the reason is on stderr)");
    ck_assert_msg(procs_ensure_package("/usr/bin/npm", "npm"), "could not install npm (the reason is on stderr)");
    char *v = procs_capture("/usr/bin/node --version", NULL);
    int major = 0, minor = 0;
    ck_assert_msg(v && sscanf(v, "v%d.%d", &major, &minor) == 2, "node --version says %s", v ? v : "nothing");
    ck_assert_msg(major > NODE_MIN_MAJOR || (major == NODE_MIN_MAJOR && minor >= NODE_MIN_MINOR),
                  "@redocly/cli %s needs Node 18.17 or later; /usr/bin/node is %.20s", REDOCLY_VERSION, v);
    free(v);
}

/* The npm packages into g_npm: once, offline afterwards. A registry that
 * cannot be reached fails within about a minute (one retry). */
START_TEST(t_npm_packages) {
    need_node();
    ck_assert_msg(npm_ensure(g_npm, npm_packages, g_npm, sizeof g_npm),
                  "npm could not install the clients' packages into %s (npm.c said why above)", g_npm);
}
END_TEST

/* The tools of the tests below: installed by t_npm_packages. */
static void ensure_tools(void) {
    need_node();
    ck_assert_msg(npm_ensure(g_npm, npm_packages, g_npm, sizeof g_npm),
                  "the npm packages are not in %s: see t_npm_packages above", g_npm);
}

/* Writes the served document into the work directory. */
static void write_document(const char *name) {
    const char *doc = api_openapi_json();
    write_file(g_work, name, doc, strlen(doc));
}

/* ==== redocly lint ======================================================= */

static const char *const redocly_env[] = {"REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true",
                                          "NO_COLOR=1", NULL};

/* The string at a JSON pointer of j, "?" if there is none. */
static const char *str_at(const json_t *j, const char *pointer) {
    const char *s = json_string_value(jschema_resolve(j, pointer));
    return s ? s : "?";
}

/* Lints g_work/name with tests/clients/redocly.yaml; returns redocly's JSON
 * report (the caller frees it) and its exit status in *rc. */
static json_t *lint(const char *name, int *rc) {
    char bin[1200], rel[1024], config[PATH_MAX];
    npm_bin(bin, sizeof bin, "redocly");
    ck_assert_ptr_nonnull(realpath(tfile_path(rel, sizeof rel, "tests/clients/redocly.yaml"), config));
    char file[1400];
    snprintf(file, sizeof file, "%s/%s", g_work, name);
    const char *argv[] = {bin, "lint", "--config", config, "--format=json", file, NULL};
    *rc = run(argv, redocly_env, "redocly.out", "redocly.err", 120);
    char *out = read_in(g_work, "redocly.out"), *err = read_in(g_work, "redocly.err");
    json_t *report = json_loads(out, 0, NULL);
    ck_assert_msg(report != NULL, "redocly lint printed no JSON report (exit %d):\n%s\n%s", *rc,
                  tail(out, 1500), tail(err, 1500));
    free(out);
    free(err);
    return report;
}

START_TEST(t_redocly_lint) {
    ensure_tools();
    write_document("openapi.json");
    int rc;
    json_t *report = lint("openapi.json", &rc);
    json_int_t errors = json_integer_value(jschema_resolve(report, "#/totals/errors"));
    json_int_t warnings = json_integer_value(jschema_resolve(report, "#/totals/warnings"));
    char problems[3000] = "";
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(report, "problems"), i, p) {
        size_t n = strlen(problems);
        snprintf(problems + n, sizeof problems - n, "  %s %s: %s at %s\n", str_at(p, "#/severity"),
                 str_at(p, "#/ruleId"), str_at(p, "#/message"), str_at(p, "#/location/0/pointer"));
    }
    ck_assert_msg(rc == 0 && errors == 0 && warnings == 0 && json_array_size(json_object_get(report, "problems")) == 0,
                  "redocly lint (exit %d): %lld errors, %lld warnings:\n%s", rc, (long long)errors,
                  (long long)warnings, problems);
    ck_assert_str_eq(str_at(report, "#/version"), REDOCLY_VERSION);
    json_decref(report);

    /* The rules do run: without servers the same document fails. */
    json_t *doc = json_loads(api_openapi_json(), 0, NULL);
    ck_assert_ptr_nonnull(doc);
    ck_assert_int_eq(json_object_del(doc, "servers"), 0);
    char path[1400];
    snprintf(path, sizeof path, "%s/no-servers.json", g_work);
    ck_assert_int_eq(json_dump_file(doc, path, JSON_INDENT(1)), 0);
    json_decref(doc);
    report = lint("no-servers.json", &rc);
    ck_assert_msg(rc != 0 && json_integer_value(jschema_resolve(report, "#/totals/errors")) >= 1,
                  "redocly lint passes a document without servers (exit %d)", rc);
    ck_assert_str_eq(str_at(report, "#/problems/0/ruleId"), "no-empty-servers");
    json_decref(report);
}
END_TEST

/* ==== The TypeScript client ============================================== */

/* requests.ts: every request of README.md and api/examples/ as a call(...)
 * whose body tsc checks against its path's request type. */
static void write_requests(const api_request_list *l) {
    size_t cap = 1 << 16, len = 0;
    char *ts = malloc(cap);
    ck_assert_ptr_nonnull(ts);
    len += (size_t)snprintf(ts, cap, "// Written by tests/test_api_clients.c from README.md and api/examples/.\n"
                                     "import { call } from \"./api\";\n\nexport const requests = [\n");
    for (size_t i = 0; i < l->count; i++) {
        char *body = json_dumps(l->items[i].body, JSON_COMPACT);
        ck_assert_ptr_nonnull(body);
        size_t need = strlen(body) + 256;
        if (len + need >= cap) {
            while (len + need >= cap) cap *= 2;
            ts = realloc(ts, cap);
            ck_assert_ptr_nonnull(ts);
        }
        len += (size_t)snprintf(ts + len, cap - len, "    call(\"%s\", \"%s\", %s),\n", l->items[i].name,
                                l->items[i].path, body);
        free(body);
    }
    len += (size_t)snprintf(ts + len, cap - len, "];\n");
    write_file(g_work, "requests.ts", ts, len);
    free(ts);
}

/* Every ```ts block of the document rel as readme_N.ts (N counting on from
 * *n; its "./attention" import, the name the documents give the generated
 * types, becomes "./openapi"); their paths, absolute, into files. */
static void write_doc_ts(const char *rel, char files[][1400], int max, int *n) {
    char *text = tfile_read_rel(rel, NULL);
    ck_assert_msg(text != NULL, "cannot read %s", rel);
    for (char *p = strstr(text, "\n```ts\n"); p; p = strstr(p, "\n```ts\n")) {
        char *code = p + 7, *end = strstr(code, "\n```\n");
        ck_assert_msg(end != NULL, "%s: a ```ts block is not closed", rel);
        ck_assert_int_lt(*n, max);
        *end = '\0';
        const char *from = "from \"./attention\"", *at = strstr(code, from);
        char name[32];
        snprintf(name, sizeof name, "readme_%d.ts", *n);
        size_t len = strlen(code) + 64;
        char *ts = malloc(len);
        ck_assert_ptr_nonnull(ts);
        if (at) snprintf(ts, len, "%.*sfrom \"./openapi\"%s\n", (int)(at - code), code, at + strlen(from));
        else snprintf(ts, len, "%s\n", code);
        write_file(g_work, name, ts, strlen(ts));
        free(ts);
        snprintf(files[(*n)++], 1400, "%s/%s", g_work, name);
        p = end + 1;
    }
    free(text);
}

/* The ```ts blocks of README.md and docs/ (write_doc_ts). Returns how many. */
static int write_readme_ts(char files[][1400], int max) {
    char *names[64];
    int docs = tfile_docs(names, 64), n = 0;
    ck_assert_msg(docs > 0, "cannot list docs/");
    for (int i = 0; i < docs; i++) {
        write_doc_ts(names[i], files, max, &n);
        free(names[i]);
    }
    return n;
}

static void copy_source(const char *name) {
    char rel[128], path[1024];
    snprintf(rel, sizeof rel, "tests/clients/%s", name);
    size_t n = 0;
    char *s = tfile_read(tfile_path(path, sizeof path, rel), &n);
    ck_assert_msg(s != NULL, "cannot read %s", path);
    write_file(g_work, name, s, n);
    free(s);
}

/* What api_handle answers to one request in this process: status, and the
 * module or the error code. */
static int expected(const api_example_request *r, char *what, size_t cap) {
    api_endpoint ep;
    ck_assert_msg(api_endpoint_from_path(r->path, &ep) == 0, "%s: no endpoint %s", r->name, r->path);
    char *body = json_dumps(r->body, JSON_COMPACT);
    api_limits lim = {.max_elements = 10000000};
    api_reply rep;
    int st = api_handle(ep, body, strlen(body), &lim, &rep);
    json_t *j = json_loadb(rep.body.data, rep.body.len, 0, NULL);
    const char *s = st == 200 ? json_string_value(json_object_get(j, "module"))
                              : json_string_value(jschema_resolve(j, "#/error/code"));
    snprintf(what, cap, "%s", s ? s : "?");
    json_decref(j);
    api_buf_free(&rep.body);
    free(body);
    return st;
}

START_TEST(t_typescript_client) {
    ensure_tools();
    write_document("openapi.json");
    char bin[1200];
    npm_bin(bin, sizeof bin, "openapi-typescript");
    char doc[1400], types[1400];
    snprintf(doc, sizeof doc, "%s/openapi.json", g_work);
    snprintf(types, sizeof types, "%s/openapi.ts", g_work);
    const char *gen[] = {bin, doc, "-o", types, NULL};
    double t0 = procs_now();
    int rc = run(gen, (const char *const[]){"NO_COLOR=1", NULL}, "openapi-typescript.out",
                 "openapi-typescript.err", 120);
    char *err = read_in(g_work, "openapi-typescript.err");
    ck_assert_msg(rc == 0, "openapi-typescript failed (exit %d):\n%s", rc, tail(err, 2000));
    free(err);
    double t_gen = procs_now() - t0;

    api_request_list l;
    char why[512];
    ck_assert_msg(api_requests_load(&l, why, sizeof why) == 0, "%s", why);
    ck_assert_int_ge(l.from_readme, 5);
    ck_assert_int_gt(l.count, l.from_readme + 5);
    write_requests(&l);
    copy_source("api.ts");
    copy_source("client.ts");
    copy_source("negative.ts");

    npm_bin(bin, sizeof bin, "tsc");
    char outdir[1400], client[1400], negative[1400], js[1400];
    snprintf(outdir, sizeof outdir, "%s/out", g_work);
    snprintf(client, sizeof client, "%s/client.ts", g_work);
    snprintf(negative, sizeof negative, "%s/negative.ts", g_work);
    snprintf(js, sizeof js, "%s/out/client.js", g_work);
    char readme_ts[4][1400];
    int n_readme = write_readme_ts(readme_ts, 4);
    ck_assert_int_ge(n_readme, 1);
    const char *tsc[] = {bin, "--strict", "--target", "es2022", "--module", "commonjs", "--lib", "es2022,dom",
                         "--outDir", outdir, client, negative, readme_ts[0], n_readme > 1 ? readme_ts[1] : NULL,
                         n_readme > 2 ? readme_ts[2] : NULL, n_readme > 3 ? readme_ts[3] : NULL, NULL};
    t0 = procs_now();
    rc = run(tsc, NULL, "tsc.out", "tsc.err", 180);
    char *out = read_in(g_work, "tsc.out");
    ck_assert_msg(rc == 0, "tsc --strict failed (exit %d) in %s:\n%s", rc, g_work, tail(out, 3000));
    free(out);
    double t_tsc = procs_now() - t0;

    /* The compiled client against a server of this build. */
    srvt_server srv = {0};
    ck_assert_msg(srvt_start(&srv, NULL, NULL) == 0, "cannot start %s", srvt_binary());
    const char *node[] = {"/usr/bin/node", js, srv.base, NULL};
    t0 = procs_now();
    rc = run(node, NULL, "client.out", "client.err", 120);
    double t_run = procs_now() - t0;
    ck_assert_int_eq(srvt_stop(&srv, 30), 0);
    srvt_release(&srv);
    out = read_in(g_work, "client.out");
    err = read_in(g_work, "client.err");
    json_t *report = json_loads(out, 0, NULL);
    ck_assert_msg(rc == 0 && report != NULL && json_object_get(report, "failure") == NULL,
                  "the client failed (exit %d):\n%s\n%s", rc, tail(out, 2000), tail(err, 2000));
    free(out);
    free(err);

    json_t *outcomes = json_object_get(report, "outcomes");
    ck_assert_int_eq(json_array_size(outcomes), l.count);
    int forms = 0, gpt2_rank3 = 0;
    for (size_t i = 0; i < l.count; i++) {
        const api_example_request *r = &l.items[i];
        json_t *o = json_array_get(outcomes, i);
        ck_assert_str_eq(str_at(o, "#/name"), r->name);
        char what[128];
        int st = expected(r, what, sizeof what);
        const char *got = json_string_value(json_object_get(o, st == 200 ? "module" : "error_code"));
        ck_assert_msg(json_integer_value(json_object_get(o, "status")) == st && got && strcmp(got, what) == 0,
                      "%s: the client got %lld %s, api_handle gives %d %s", r->name,
                      (long long)json_integer_value(json_object_get(o, "status")), got ? got : "?", st, what);
        forms += (int)json_integer_value(json_object_get(o, "forms_checked"));
        const char *module = json_string_value(json_object_get(r->body, "module"));
        if (i < l.from_readme && module && strcmp(module, "GPT2CausalSelfAttention") == 0) {
            json_t *w = json_object_get(o, "attn_weights");
            ck_assert_int_eq(json_integer_value(json_object_get(w, "rank")), 3);
            json_t *shape = json_object_get(w, "shape");
            ck_assert_int_eq(json_array_size(shape), 3);
            for (size_t d = 0; d < 3; d++)   /* [H=2][T=3][S=3] */
                ck_assert_int_eq(json_integer_value(json_array_get(shape, d)), d ? 3 : 2);
            ck_assert_int_eq(json_integer_value(json_object_get(o, "forms_checked")), 3);
            gpt2_rank3++;
        }
    }
    ck_assert_msg(gpt2_rank3 == 1, "README.md and docs/ have %d GPT-2 example(s) with attn_weights, expected 1", gpt2_rank3);
    ck_assert_int_ge(forms, 3);
    fprintf(stderr, "clients: openapi-typescript %.1f s, tsc %.1f s, %zu requests (%zu of README.md) "
            "and %d reply forms checked by the client in %.1f s\n",
            t_gen, t_tsc, l.count, l.from_readme, forms, t_run);
    json_decref(report);
    api_requests_free(&l);
}
END_TEST

/* ==== The client's sources =============================================== */

/* 1 if the word w (letters, digits, _) occurs in s as a whole word. */
static int has_word(const char *s, const char *w) {
    size_t n = strlen(w);
    for (const char *p = strstr(s, w); p; p = strstr(p + 1, w)) {
        int before = p > s && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
        int after = isalnum((unsigned char)p[n]) || p[n] == '_';
        if (!before && !after) return 1;
    }
    return 0;
}

START_TEST(t_client_has_no_cast) {
    static const char *const files[] = {"api.ts", "client.ts"};
    int lines = 0;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char rel[128], path[1024];
        snprintf(rel, sizeof rel, "tests/clients/%s", files[f]);
        char *s = tfile_read(tfile_path(path, sizeof path, rel), NULL);
        ck_assert_msg(s != NULL, "cannot read %s", path);
        int line = 0;
        for (char *p = s, *eol; *p; p = eol ? eol + 1 : p + strlen(p)) {
            eol = strchr(p, '\n');
            if (eol) *eol = '\0';
            line++;
            char *comment = strstr(p, "//");
            if (comment) *comment = '\0';
            const char *t = p + strspn(p, " ");
            if (*t == '*' || strncmp(t, "/*", 2) == 0 || *t == '\0') continue;
            lines++;
            ck_assert_msg(!has_word(t, "any"), "%s:%d uses any: %s", rel, line, t);
            ck_assert_msg(strstr(t, "@ts-") == NULL, "%s:%d silences tsc: %s", rel, line, t);
            for (const char *a = strstr(t, " as "); a; a = strstr(a + 1, " as "))
                ck_assert_msg(strncmp(a, " as const", 9) == 0, "%s:%d casts: %s", rel, line, t);
        }
        free(s);
    }
    ck_assert_int_gt(lines, 50);
}
END_TEST

static Suite *clients_suite(void) {
    Suite *s = suite_create("api_clients");
    const TTest *tests[] = {t_client_has_no_cast, t_npm_packages, t_redocly_lint, t_typescript_client, NULL};
    tcase_with(s, "clients", 900, tests);   /* the first run installs nodejs, npm and the npm packages */
    return s;
}

const test_program TEST_PROGRAM = {.suites = {clients_suite}};
