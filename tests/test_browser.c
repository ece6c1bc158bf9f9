/* test_browser.c - a page on another origin fetches attention maps in a real
 * browser (Debian's Chromium, headless; installed with apt-get when missing).
 *
 * This test program serves tests/browser/cors_page.html on one loopback port
 * (its own origin) with libmicrohttpd. Two attention-servers run on two other
 * ports: A with --cors-origin set to the page's origin, B with another
 * origin. The page POSTs the seed MultiHeadAttention request as JSON to A
 * (so Chromium sends a CORS preflight first), draws one heat map per head,
 * sends a bad request to A and reads its error body, tries the same request
 * on B, and POSTs what it saw back to /result here. The checks: the chapter's
 * numbers arrived, 2 x 6 x 6 cells were drawn, the error's JSON was
 * readable, B was refused by the browser itself (a TypeError, and B's log
 * shows the preflight but never the POST), and A's log shows the preflight
 * before the POSTs.
 */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/check_main.h"
#include "support/files.h"
#include "support/jschema.h"
#include "support/procs.h"
#include "support/server_harness.h"

#define CHROMIUM "/usr/bin/chromium"

static const double seed_context[6][2] = {
    {0.3190, 0.4858}, {0.2943, 0.3897}, {0.2856, 0.3593},
    {0.2693, 0.3873}, {0.2639, 0.3928}, {0.2575, 0.4028},
};

/* ==== The page's own origin ============================================== */

typedef struct {
    char *page;            /* the HTML, served at /page.html */
    size_t page_len;
    pthread_mutex_t lock;
    char *result;          /* the body of POST /result, once complete */
    atomic_int got_result;
} origin_state;

static origin_state g_origin = {.lock = PTHREAD_MUTEX_INITIALIZER};

typedef struct {
    char *data;
    size_t len;
} upload;

static enum MHD_Result serve(void *cls, struct MHD_Connection *c, const char *url,
                             const char *method, const char *version, const char *data,
                             size_t *data_size, void **req_cls) {
    (void)cls;
    (void)version;
    if (*req_cls == NULL) {
        *req_cls = calloc(1, sizeof(upload));
        return *req_cls ? MHD_YES : MHD_NO;
    }
    upload *u = *req_cls;
    if (*data_size) {
        char *p = realloc(u->data, u->len + *data_size + 1);
        if (!p) return MHD_NO;
        memcpy(p + u->len, data, *data_size);
        u->data = p;
        u->len += *data_size;
        u->data[u->len] = '\0';
        *data_size = 0;
        return MHD_YES;
    }
    struct MHD_Response *r;
    unsigned status = 200;
    if (strcmp(method, "GET") == 0 && strcmp(url, "/page.html") == 0) {
        r = MHD_create_response_from_buffer(g_origin.page_len, g_origin.page, MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
    } else if (strcmp(method, "POST") == 0 && strcmp(url, "/result") == 0) {
        pthread_mutex_lock(&g_origin.lock);
        if (!g_origin.result) {
            g_origin.result = u->data ? u->data : strdup("");
            u->data = NULL;
            atomic_store(&g_origin.got_result, 1);
        }
        pthread_mutex_unlock(&g_origin.lock);
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    } else {
        status = 404;   /* /favicon.ico */
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    }
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static void serve_done(void *cls, struct MHD_Connection *c, void **req_cls,
                       enum MHD_RequestTerminationCode toe) {
    (void)cls;
    (void)c;
    (void)toe;
    upload *u = *req_cls;
    if (u) free(u->data);
    free(u);
    *req_cls = NULL;
}

static struct MHD_Daemon *start_origin(int port) {
    g_origin.page = tfile_read_rel("tests/browser/cors_page.html", &g_origin.page_len);
    ck_assert_msg(g_origin.page && strstr(g_origin.page, "</html>"),
                  "cannot read tests/browser/cors_page.html");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, (uint16_t)port, NULL, NULL, serve, NULL,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a,
                            MHD_OPTION_NOTIFY_COMPLETED, serve_done, NULL, MHD_OPTION_END);
}

/* ==== Checks ============================================================= */

/* A string of the report by JSON pointer ("#/bad/body/error/code"). */
static const char *str_at(const json_t *j, const char *pointer) {
    const char *s = json_string_value(jschema_resolve(j, pointer));
    return s ? s : "(missing)";
}

START_TEST(t_viewer_on_another_origin) {
    ck_assert_msg(procs_ensure_package(CHROMIUM, "chromium"),
                  "could not install chromium (the reason is on stderr)");
    int page_port = procs_free_port();
    struct MHD_Daemon *origin = start_origin(page_port);
    ck_assert_msg(origin != NULL, "cannot serve the page on port %d", page_port);
    char origin_url[64];
    snprintf(origin_url, sizeof origin_url, "http://127.0.0.1:%d", page_port);

    srvt_server a = {0}, b = {0};
    const char *args_a[] = {"--cors-origin", origin_url, NULL};
    const char *args_b[] = {"--cors-origin", "http://viewer.example", NULL};
    ck_assert(srvt_start(&a, args_a, NULL) == 0);
    ck_assert(srvt_start(&b, args_b, NULL) == 0);

    char dir[] = "/tmp/attn-browser-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char profile[64], log[64], url[256], user_dir[80];
    snprintf(profile, sizeof profile, "%s/profile", dir);
    snprintf(log, sizeof log, "%s/chromium.log", dir);
    snprintf(user_dir, sizeof user_dir, "--user-data-dir=%s", profile);
    snprintf(url, sizeof url, "%s/page.html?allowed=%s&denied=%s", origin_url, a.base, b.base);
    /* The flags this machine's notes give for headless Chromium as root with
     * no network beyond loopback. */
    const char *argv[] = {CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                          "--disable-quic", "--no-first-run", "--disable-background-networking",
                          "--disable-component-update", "--disable-sync", user_dir, url, NULL};
    pid_t chrome = procs_spawn(argv, &(procs_io){.out = log, .err = log});
    ck_assert_int_gt(chrome, 0);
    double end = procs_now() + 90.0;
    int exited = 0;
    while (!atomic_load(&g_origin.got_result) && procs_now() < end && !exited) {
        exited = procs_reap(chrome, NULL);
        procs_sleep_ms(50);
    }
    if (!exited) procs_stop(chrome, SIGTERM, 10.0, NULL);
    kill(-chrome, SIGKILL);   /* its helpers share its process group */
    MHD_stop_daemon(origin);
    ck_assert_msg(atomic_load(&g_origin.got_result),
                  "the page never reported back (chromium %s; its log: %s)",
                  exited ? "exited" : "timed out", log);

    json_error_t je;
    json_t *rep = json_loads(g_origin.result, 0, &je);
    ck_assert_msg(rep != NULL, "report is not JSON: %s", g_origin.result);
    fprintf(stderr, "browser: page on %s: allowed server %lld, %lld cells drawn; bad request "
            "%lld %s; other origin's server: \"%s\"\n",
            str_at(rep, "#/origin"), json_integer_value(jschema_resolve(rep, "#/ok/status")),
            json_integer_value(jschema_resolve(rep, "#/cells")), json_integer_value(jschema_resolve(rep, "#/bad/status")),
            str_at(rep, "#/bad/body/error/code"), str_at(rep, "#/denied/error"));
    ck_assert_msg(jschema_resolve(rep, "#/page_error") == NULL, "page error: %s", str_at(rep, "#/page_error"));
    ck_assert_str_eq(str_at(rep, "#/origin"), origin_url);

    /* The allowed server: the chapter's numbers, the header, a drawn map. */
    ck_assert_int_eq(json_integer_value(jschema_resolve(rep, "#/ok/status")), 200);
    ck_assert_str_eq(str_at(rep, "#/ok/content_type"), "application/json");
    const json_t *ctx = jschema_resolve(rep, "#/ok/body/context");
    ck_assert_int_eq(json_array_size(ctx), 6);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 2; j++) {
            double v = json_number_value(json_array_get(json_array_get(ctx, (size_t)i), (size_t)j));
            ck_assert_msg(fabs(v - seed_context[i][j]) < 0.5e-4 + 1e-6, "context[%d][%d] = %g, want %.4f",
                          i, j, v, seed_context[i][j]);
        }
    ck_assert_int_eq(json_integer_value(jschema_resolve(rep, "#/cells")), 2 * 6 * 6);
    const json_t *sums = jschema_resolve(rep, "#/row_sums");
    ck_assert_int_eq(json_array_size(sums), 2);
    for (size_t h = 0; h < 2; h++) {
        const json_t *rows = json_array_get(sums, h);
        ck_assert_int_eq(json_array_size(rows), 6);
        for (size_t i = 0; i < 6; i++) {   /* each cell shown with 2 decimals */
            double s = json_number_value(json_array_get(rows, i));
            ck_assert_msg(fabs(s - 1.0) <= 0.03, "head %zu row %zu sums to %g", h, i, s);
        }
    }

    /* An error reply is readable across origins too. */
    ck_assert_int_eq(json_integer_value(jschema_resolve(rep, "#/bad/status")), 400);
    ck_assert_str_eq(str_at(rep, "#/bad/body/error/code"), "invalid_shape");
    ck_assert_str_eq(str_at(rep, "#/bad/body/error/field"), "num_heads");

    /* The server that allows another origin: the browser refuses. */
    ck_assert_msg(strncmp(str_at(rep, "#/denied/error"), "TypeError", 9) == 0, "denied: %s",
                  str_at(rep, "#/denied/error"));
    json_decref(rep);

    ck_assert_int_eq(srvt_stop(&a, 30), 0);
    ck_assert_int_eq(srvt_stop(&b, 30), 0);
    const char *pre = strstr(a.log, " OPTIONS /attention/multihead 204 ");
    const char *post = strstr(a.log, " POST /attention/multihead 200 ");
    ck_assert_msg(pre && post && pre < post, "A's log lacks the preflight before the POST:\n%s", a.log);
    ck_assert_msg(strstr(a.log, " POST /attention/multihead 400 "), "A's log:\n%s", a.log);
    ck_assert_msg(strstr(b.log, " OPTIONS /attention/multihead 204 "), "B's log:\n%s", b.log);
    ck_assert_msg(!strstr(b.log, " POST /attention/"), "the browser sent B the POST:\n%s", b.log);
    srvt_release(&a);
    srvt_release(&b);
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(rm), 0);
}
END_TEST

static Suite *browser_suite(void) {
    Suite *s = suite_create("browser");
    const TTest *tests[] = {t_viewer_on_another_origin, NULL};
    tcase_with(s, "cors", 900, tests);   /* the first run installs chromium */
    return s;
}

const test_program TEST_PROGRAM = {.suites = {browser_suite}};
