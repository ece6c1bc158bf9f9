/* test_deploy_manifests.c - the deployment files agree with the real server.
 *
 * docker/Dockerfile, docker/compose.yaml, docker/nginx.conf, docker/k8s/ manifests,
 * docs/deploy.md and tests/scaleout/nginx.conf.in name ports, environment
 * variables, flags, probe paths, a body limit and a drain time. This test takes
 * each of them from the files and compares it with `$BUILD/attention-server
 * --help`, then starts the server and checks that every probe path answers 200
 * and that the image's HEALTHCHECK and compose's healthcheck commands, run as
 * written, pass against it (and fail once it has stopped).
 *
 * Runs from the repository root (as `make test` does); BUILD names the build
 * directory (build or build-asan).
 */
#include <check.h>
#include <ctype.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/attention.h"
#include "tests/support/check_main.h"
#include "tests/support/files.h"
#include "tests/support/procs.h"
#include "tests/support/server_harness.h"

#define IMAGE_BIN "/usr/local/bin/attention-server"

static const char *const DEPLOY_FILES[] = {
    "docker/Dockerfile",          "docker/compose.yaml",        "docker/nginx.conf",
    "docker/k8s/deployment.yaml", "docker/k8s/service.yaml",    "docker/k8s/hpa.yaml",
    "docker/k8s/pdb.yaml",        "docs/deploy.md",              "tests/scaleout/nginx.conf.in",
};
#define N_DEPLOY_FILES (sizeof DEPLOY_FILES / sizeof DEPLOY_FILES[0])

static char *g_help;
static char g_server[512];

/* ==== Helpers ============================================================== */

/* The whole file rel of the repository. */
static char *slurp(const char *rel) {
    char *text = tfile_read_rel(rel, NULL);
    ck_assert_msg(text != NULL, "cannot read %s", rel);
    return text;
}

/* The first integer within `window` characters after each occurrence of key
 * (skipping quotes, '=', ':', spaces, newlines and "- "), up to max values.
 * Returns how many occurrences had one. */
static int ints_after(const char *text, const char *key, size_t window, long *out, int max) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, key)) != NULL && n < max; p += strlen(key)) {
        const char *q = p + strlen(key);
        const char *end = q + window;
        while (*q && q < end && !isdigit((unsigned char)*q)) q++;
        if (*q && q < end) out[n++] = strtol(q, NULL, 10);
    }
    return n;
}

/* A size as the server and nginx write it: digits and an optional k/m/g
 * (either case, 1024-based). -1 when there is none. */
static long long parse_size(const char *s) {
    while (*s == ' ' || *s == '"' || *s == ':' || *s == '=' || *s == '\t') s++;
    if (!isdigit((unsigned char)*s)) return -1;
    char *end;
    long long v = strtoll(s, &end, 10);
    switch (tolower((unsigned char)*end)) {
    case 'k': return v << 10;
    case 'm': return v << 20;
    case 'g': return v << 30;
    default: return v;
    }
}

/* The default the help text states for a flag: the "(...)" on its line(s).
 * Copies what is inside the parentheses into out. */
static void help_default(const char *flag, char *out, size_t len) {
    char at[64];
    snprintf(at, sizeof at, "\n  %s ", flag); /* its own line, not the usage line */
    const char *p = strstr(g_help, at);
    ck_assert_msg(p != NULL, "--help does not mention %s", flag);
    /* The description may continue on the next line: stop at the next flag. */
    const char *next = strstr(p + strlen(at), "\n  --");
    const char *open = strchr(p, '(');
    ck_assert_msg(open && (!next || open < next), "--help states no default for %s", flag);
    const char *close = strchr(open, ')');
    ck_assert_ptr_nonnull(close);
    size_t n = (size_t)(close - open - 1);
    if (n >= len) n = len - 1;
    /* Keep the first token only: "134217728 =\n 512 MiB" -> "134217728". */
    memcpy(out, open + 1, n);
    out[n] = '\0';
    char *sp = strpbrk(out, " \n;");
    if (sp) *sp = '\0';
}

/* The default of flag as a whole number (strtol of help_default's). */
static long help_default_int(const char *flag) {
    char def[64];
    help_default(flag, def, sizeof def);
    return strtol(def, NULL, 10);
}

/* The JSON array that follows `key` on the first line containing it, e.g. the
 * exec form of HEALTHCHECK CMD or a compose `test:`. */
static json_t *json_array_after(const char *text, const char *key) {
    const char *p = strstr(text, key);
    if (!p) return NULL;
    const char *open = strchr(p, '[');
    const char *nl = strchr(p, '\n');
    if (!open || (nl && open > nl)) return NULL;
    const char *close = strchr(open, ']');
    if (!close) return NULL;
    json_error_t err;
    return json_loadb(open, (size_t)(close - open + 1), 0, &err);
}

static void setup(void) {
    snprintf(g_server, sizeof g_server, "%s", srvt_binary());
    ck_assert_msg(access(g_server, X_OK) == 0, "%s is missing", g_server);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "'%s' --help 2>&1", g_server);
    int st = -1;
    g_help = procs_capture(cmd, &st);
    ck_assert_ptr_nonnull(g_help);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "--help exited with %d", st);
    ck_assert_ptr_nonnull(strstr(g_help, "--port"));
}

static void teardown(void) {
    free(g_help);
    g_help = NULL;
    procs_kill_all();
}

/* ==== Names: environment variables and flags =============================== */

START_TEST(test_env_vars_exist) {
    int seen = 0;
    for (size_t f = 0; f < N_DEPLOY_FILES; f++) {
        char *text = slurp(DEPLOY_FILES[f]);
        for (const char *p = text; (p = strstr(p, "ATTN_")) != NULL;) {
            char name[64];
            size_t n = 0;
            while (n + 1 < sizeof name && (isupper((unsigned char)p[n]) || p[n] == '_' ||
                                           isdigit((unsigned char)p[n])))
                name[n] = p[n], n++;
            name[n] = '\0';
            p += n;
            if (n <= 5) continue;
            /* The help lists each variable followed by spaces. */
            char want[72];
            snprintf(want, sizeof want, "%s ", name);
            ck_assert_msg(strstr(g_help, want) != NULL,
                          "%s uses %s, which attention-server --help does not list",
                          DEPLOY_FILES[f], name);
            seen++;
        }
        free(text);
    }
    ck_assert_int_ge(seen, 10);
}
END_TEST

/* Every --flag on a line that runs the image's binary is a real flag. */
START_TEST(test_flags_exist) {
    int seen = 0;
    for (size_t f = 0; f < N_DEPLOY_FILES; f++) {
        char *text = slurp(DEPLOY_FILES[f]);
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            /* Only what follows the binary on a line that runs it (not COPY ... its path). */
            const char *run = strstr(line, IMAGE_BIN);
            if (!run) run = strstr(line, "attention-server --");
            if (!run) continue;
            for (const char *p = run; (p = strstr(p, "--")) != NULL;) {
                char flag[64];
                size_t n = 0;
                while (n + 1 < sizeof flag &&
                       (p[n] == '-' || islower((unsigned char)p[n]) || isdigit((unsigned char)p[n])))
                    flag[n] = p[n], n++;
                flag[n] = '\0';
                p += n ? n : 2;
                if (n <= 2) continue;
                char want[72];
                snprintf(want, sizeof want, "  %s ", flag);
                char want_eol[72];
                snprintf(want_eol, sizeof want_eol, "  %s\n", flag);
                ck_assert_msg(strstr(g_help, want) || strstr(g_help, want_eol),
                              "%s runs attention-server with %s, which --help does not list",
                              DEPLOY_FILES[f], flag);
                seen++;
            }
        }
        free(text);
    }
    ck_assert_int_ge(seen, 2);
}
END_TEST

/* ==== Numbers: port, body limit, drain time, user ========================== */

START_TEST(test_ports_match) {
    long port = help_default_int("--port");
    ck_assert_int_eq(port, 8080);
    struct {
        const char *file, *key;
        size_t window;
        int at_least;
    } uses[] = {
        {"docker/Dockerfile", "EXPOSE", 4, 1},
        {"docker/Dockerfile", "ATTN_PORT", 4, 1},
        {"docker/compose.yaml", "ATTN_PORT", 6, 1},
        {"docker/compose.yaml", "expose:", 16, 1},
        {"docker/compose.yaml", "127.0.0.1:", 1, 1}, /* the readiness probe URL */
        {"docker/nginx.conf", "server attention-1:", 1, 1},
        {"docker/nginx.conf", "server attention-2:", 1, 1},
        {"docker/nginx.conf", "server attention-3:", 1, 1},
        {"docker/k8s/deployment.yaml", "containerPort:", 2, 1},
        {"docker/k8s/deployment.yaml", "ATTN_PORT", 40, 1},
        {"docker/k8s/deployment.yaml", "prometheus.io/port:", 3, 1},
    };
    for (size_t i = 0; i < sizeof uses / sizeof uses[0]; i++) {
        char *text = slurp(uses[i].file);
        long got[16];
        int n = ints_after(text, uses[i].key, uses[i].window, got, 16);
        ck_assert_msg(n >= uses[i].at_least, "%s: no port after \"%s\"", uses[i].file,
                      uses[i].key);
        for (int k = 0; k < n; k++)
            ck_assert_msg(got[k] == port, "%s: \"%s\" %ld, but the server listens on %ld",
                          uses[i].file, uses[i].key, got[k], port);
        free(text);
    }
    /* The Service sends its port to the container port named http. */
    char *svc = slurp("docker/k8s/service.yaml");
    ck_assert_ptr_nonnull(strstr(svc, "targetPort: http"));
    free(svc);
    char *dep = slurp("docker/k8s/deployment.yaml");
    ck_assert_ptr_nonnull(strstr(dep, "name: http"));
    free(dep);
}
END_TEST

START_TEST(test_body_limit_matches) {
    char def[64];
    help_default("--max-body", def, sizeof def);
    long long server = parse_size(def);
    ck_assert_msg(server > 0, "cannot read the --max-body default '%s'", def);
    const char *nginx_files[] = {"docker/nginx.conf", "tests/scaleout/nginx.conf.in"};
    for (int i = 0; i < 2; i++) {
        char *text = slurp(nginx_files[i]);
        const char *p = strstr(text, "client_max_body_size");
        ck_assert_msg(p != NULL, "%s sets no client_max_body_size", nginx_files[i]);
        long long v = parse_size(p + strlen("client_max_body_size"));
        ck_assert_msg(v == server, "%s: client_max_body_size %lld bytes, the server's --max-body %lld",
                      nginx_files[i], v, server);
        free(text);
    }
    const char *env_files[] = {"docker/compose.yaml", "docker/k8s/deployment.yaml"};
    for (int i = 0; i < 2; i++) {
        char *text = slurp(env_files[i]);
        const char *p = strstr(text, "ATTN_MAX_BODY");
        if (p) {
            p += strlen("ATTN_MAX_BODY");
            const char *v = strstr(p, "value:");
            if (v && v - p < 40) p = v + strlen("value:");
            long long got = parse_size(p);
            ck_assert_msg(got == server, "%s: ATTN_MAX_BODY %lld bytes, nginx allows %lld",
                          env_files[i], got, server);
        }
        free(text);
    }
}
END_TEST

/* The orchestrator waits longer than the server drains before it SIGKILLs. */
START_TEST(test_grace_exceeds_drain) {
    long drain_default = help_default_int("--drain-timeout");
    ck_assert_int_gt(drain_default, 0);

    char *dep = slurp("docker/k8s/deployment.yaml");
    long drain = drain_default, grace = -1, pre = 0;
    ints_after(dep, "ATTN_DRAIN_TIMEOUT", 40, &drain, 1);
    ck_assert_int_eq(ints_after(dep, "terminationGracePeriodSeconds:", 3, &grace, 1), 1);
    ints_after(dep, "/bin/sleep", 5, &pre, 1); /* the preStop pause comes first */
    ck_assert_msg(grace > drain + pre,
                  "k8s: terminationGracePeriodSeconds %ld <= drain %ld s + preStop %ld s", grace,
                  drain, pre);
    ck_assert_ptr_nonnull(strstr(dep, "runAsNonRoot: true"));
    ck_assert_ptr_nonnull(strstr(dep, "readOnlyRootFilesystem: true"));
    long uid = -1;
    ck_assert_int_eq(ints_after(dep, "runAsUser:", 3, &uid, 1), 1);
    free(dep);

    char *compose = slurp("docker/compose.yaml");
    long cdrain = drain_default, cgrace = -1;
    ints_after(compose, "ATTN_DRAIN_TIMEOUT", 6, &cdrain, 1);
    ck_assert_int_eq(ints_after(compose, "stop_grace_period:", 3, &cgrace, 1), 1);
    ck_assert_msg(cgrace > cdrain, "compose: stop_grace_period %ld s <= drain %ld s", cgrace,
                  cdrain);
    free(compose);

    /* The image's numeric user is the one Kubernetes runs as. */
    char *df = slurp("docker/Dockerfile");
    long image_uid = -1;
    ck_assert_int_eq(ints_after(df, "\nUSER ", 1, &image_uid, 1), 1);
    ck_assert_int_eq(image_uid, uid);
    ck_assert_ptr_nonnull(strstr(df, "STOPSIGNAL SIGTERM"));
    free(df);
    /* OPENBLAS_CORETYPE is left to the environment: no instruction sets it. */
    df = slurp("docker/Dockerfile");
    for (char *line = strtok(df, "\n"); line; line = strtok(NULL, "\n")) {
        while (*line == ' ') line++;
        ck_assert_msg(*line == '#' || !strstr(line, "OPENBLAS_CORETYPE"),
                      "the Dockerfile sets OPENBLAS_CORETYPE: %s", line);
    }
    free(df);
}
END_TEST

/* nginx retries failed POSTs on another replica, and the upstreams are the
 * compose services. */
START_TEST(test_nginx_retries_and_upstreams) {
    const char *files[] = {"docker/nginx.conf", "tests/scaleout/nginx.conf.in"};
    for (int i = 0; i < 2; i++) {
        char *text = slurp(files[i]);
        const char *p = strstr(text, "proxy_next_upstream ");
        ck_assert_msg(p != NULL, "%s: no proxy_next_upstream", files[i]);
        const char *semi = strchr(p, ';');
        ck_assert_ptr_nonnull(semi);
        char line[256];
        snprintf(line, sizeof line, "%.*s", (int)(semi - p), p);
        const char *need[] = {" error", " timeout", " http_502", " http_503", " non_idempotent"};
        for (int k = 0; k < 5; k++)
            ck_assert_msg(strstr(line, need[k]) != NULL, "%s: proxy_next_upstream lacks%s",
                          files[i], need[k]);
        free(text);
    }
    char *nginx = slurp("docker/nginx.conf");
    char *compose = slurp("docker/compose.yaml");
    for (int r = 1; r <= 3; r++) {
        char svc[32];
        snprintf(svc, sizeof svc, "\n  attention-%d:", r);
        ck_assert_msg(strstr(compose, svc) != NULL, "compose.yaml has no service attention-%d", r);
        snprintf(svc, sizeof svc, "server attention-%d:", r);
        ck_assert_msg(strstr(nginx, svc) != NULL, "nginx.conf has no upstream attention-%d", r);
    }
    free(nginx);
    free(compose);
}
END_TEST

/* ==== Conventions: image labels, licence, Kubernetes ======================= */

/* The first word after `key` (and any spaces, quotes, '=' or ':'), up to a
 * space, quote, '#' or the end of the line, into out. */
static void value_after(const char *text, const char *key, char *out, size_t len) {
    const char *p = strstr(text, key);
    ck_assert_msg(p != NULL, "no \"%s\"", key);
    p += strlen(key);
    while (*p == ' ' || *p == '"' || *p == '=' || *p == ':') p++;
    size_t n = strcspn(p, "\" #\n");
    ck_assert_uint_lt(n, len);
    memcpy(out, p, n);
    out[n] = '\0';
}

START_TEST(test_image_labels_and_license) {
    char *df = slurp("docker/Dockerfile");
    const char *labels[] = {"org.opencontainers.image.source=", "org.opencontainers.image.version=",
                            "org.opencontainers.image.revision=", "org.opencontainers.image.licenses=",
                            "org.opencontainers.image.title="};
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++)
        ck_assert_msg(strstr(df, labels[i]) != NULL, "the Dockerfile has no label %s", labels[i]);
    char v[64];
    value_after(df, "org.opencontainers.image.licenses=", v, sizeof v);
    ck_assert_str_eq(v, "MIT");
    /* The version label is the server's own version. */
    value_after(df, "\nARG VERSION", v, sizeof v);
    ck_assert_str_eq(v, ATTN_VERSION);
    ck_assert_ptr_nonnull(strstr(df, "org.opencontainers.image.version=\"${VERSION}\""));
    /* And the image carries the licence text. */
    ck_assert_ptr_nonnull(strstr(df, "COPY LICENSE "));
    free(df);
    char *lic = slurp("LICENSE");
    ck_assert_msg(strncmp(lic, "MIT License\n", 12) == 0, "LICENSE is not the MIT licence");
    ck_assert_ptr_nonnull(strstr(lic, "Copyright (c) 2026 attention-server contributors"));
    free(lic);
    char *ignore = slurp(".dockerignore");
    ck_assert_msg(strstr(ignore, "\n!LICENSE\n") != NULL, ".dockerignore keeps LICENSE out of the build");
    free(ignore);
}
END_TEST

/* One tag everywhere: the server's version. */
START_TEST(test_one_image_tag) {
    char want[64];
    snprintf(want, sizeof want, "attention-server:%s", ATTN_VERSION);
    const char *files[] = {"docker/k8s/deployment.yaml", "docker/compose.yaml"};
    for (int i = 0; i < 2; i++) {
        char *text = slurp(files[i]);
        int n = 0;
        for (const char *p = text; (p = strstr(p, "image: attention-server")) != NULL; p++) {
            char got[64];
            value_after(p, "image:", got, sizeof got);
            ck_assert_msg(strcmp(got, want) == 0, "%s: image %s, the server's version is %s",
                          files[i], got, ATTN_VERSION);
            n++;
        }
        ck_assert_msg(n >= 1, "%s names no attention-server image", files[i]);
        free(text);
    }
    char *dep = slurp("docker/k8s/deployment.yaml");
    char v[64];
    value_after(dep, "app.kubernetes.io/version:", v, sizeof v);
    ck_assert_str_eq(v, ATTN_VERSION);
    free(dep);
}
END_TEST

START_TEST(test_k8s_conventions) {
    char *dep = slurp("docker/k8s/deployment.yaml");
    char *hpa = slurp("docker/k8s/hpa.yaml");
    /* The HPA owns the replica count: a `replicas` here would reset it on
     * every apply. */
    ck_assert_ptr_nonnull(strstr(hpa, "kind: Deployment"));
    ck_assert_ptr_nonnull(strstr(hpa, "minReplicas:"));
    for (char *p = dep; (p = strstr(p, "replicas:")) != NULL; p++) {
        const char *line = p;
        while (line > dep && line[-1] != '\n') line--;
        ck_assert_msg(*line == '#' || strstr(line, "#") < p,
                      "deployment.yaml sets replicas beside the HPA: %.40s", line);
    }
    /* Spread over nodes, so that the PDB's minAvailable is not on one node. */
    ck_assert_ptr_nonnull(strstr(dep, "topologySpreadConstraints:"));
    ck_assert_ptr_nonnull(strstr(dep, "topologyKey: kubernetes.io/hostname"));
    ck_assert_ptr_nonnull(strstr(dep, "whenUnsatisfiable: DoNotSchedule"));
    /* Compute workers from the CPU limit, not a number written twice. */
    const char *t = strstr(dep, "name: ATTN_THREADS");
    ck_assert_msg(t != NULL, "deployment.yaml does not set ATTN_THREADS");
    const char *next = strstr(t + 1, "- name:");
    size_t span = next ? (size_t)(next - t) : strlen(t);
    char item[512];
    snprintf(item, sizeof item, "%.*s", (int)(span < sizeof item ? span : sizeof item - 1), t);
    ck_assert_msg(strstr(item, "resourceFieldRef:") && strstr(item, "resource: limits.cpu") &&
                      !strstr(item, "value: "),
                  "ATTN_THREADS is not taken from the CPU limit:\n%s", item);
    ck_assert_ptr_nonnull(strstr(item, "containerName: attention-server"));
    ck_assert_ptr_nonnull(strstr(dep, "cpu: \""));   /* there is a CPU limit to take */
    free(hpa);
    free(dep);

    /* The recommended labels on every object; the selectors use name and
     * instance, which the pod template carries. */
    const char *k8s[] = {"docker/k8s/deployment.yaml", "docker/k8s/service.yaml",
                         "docker/k8s/hpa.yaml", "docker/k8s/pdb.yaml"};
    const char *labels[] = {"app.kubernetes.io/name: attention-server",
                            "app.kubernetes.io/instance: attention-server",
                            "app.kubernetes.io/version: ", "app.kubernetes.io/component: ",
                            "app.kubernetes.io/part-of: ", "app.kubernetes.io/managed-by: "};
    for (int f = 0; f < 4; f++) {
        char *text = slurp(k8s[f]);
        const char *meta = strstr(text, "\nmetadata:");
        ck_assert_msg(meta != NULL, "%s: no metadata", k8s[f]);
        const char *spec = strstr(meta, "\nspec:");
        ck_assert_ptr_nonnull(spec);
        for (size_t l = 0; l < sizeof labels / sizeof labels[0]; l++) {
            const char *at = strstr(meta, labels[l]);
            ck_assert_msg(at && at < spec, "%s: no label %s", k8s[f], labels[l]);
        }
        free(text);
    }
    dep = slurp("docker/k8s/deployment.yaml");
    const char *tmpl = strstr(dep, "\n  template:");
    ck_assert_ptr_nonnull(tmpl);
    ck_assert_ptr_nonnull(strstr(tmpl, "app.kubernetes.io/name: attention-server"));
    ck_assert_ptr_nonnull(strstr(tmpl, "app.kubernetes.io/instance: attention-server"));
    free(dep);
}
END_TEST

/* ==== A running server ===================================================== */

/* Runs argv (a JSON array of strings, the image's binary replaced by the one
 * built here) with ATTN_HOST and ATTN_PORT set as in the image; returns the
 * exit status. */
static int run_probe_command(const json_t *cmd, int port) {
    const char *argv[16] = {0};
    size_t n = json_array_size(cmd);
    ck_assert(n >= 2 && n < 16);
    ck_assert_str_eq(json_string_value(json_array_get(cmd, 0)), "CMD");
    char url[256];
    for (size_t i = 1; i < n; i++) {
        const char *a = json_string_value(json_array_get(cmd, i));
        ck_assert_ptr_nonnull(a);
        if (strcmp(a, IMAGE_BIN) == 0) {
            a = g_server;
        } else if (strstr(a, "http://127.0.0.1:8080/") == a) {
            /* compose probes its own container's port 8080; here the test's port */
            snprintf(url, sizeof url, "http://127.0.0.1:%d/%s", port, a + strlen("http://127.0.0.1:8080/"));
            a = url;
        }
        argv[i - 1] = a;
    }
    ck_assert_str_eq(argv[0], g_server);
    char port_env[32];
    snprintf(port_env, sizeof port_env, "ATTN_PORT=%d", port);
    const char *env[] = {"ATTN_HOST=0.0.0.0", port_env, NULL};
    pid_t pid = procs_spawn(argv, &(procs_io){.env = env, .out = "/dev/null", .err = "/dev/null"});
    ck_assert_int_gt(pid, 0);
    int st = -1;
    ck_assert_msg(procs_wait(pid, 15.0, &st), "the probe command did not finish in 15 s");
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

START_TEST(test_probes_answer) {
    srvt_server srv;
    ck_assert_msg(srvt_start(&srv, NULL, NULL) == 0, "the server never answered /healthz");
    int port = srv.port;
    char url[256];

    /* Every HTTP path the manifests probe or scrape answers 200. */
    const char *keys[] = {"path: ", "prometheus.io/path: "};
    char *dep = slurp("docker/k8s/deployment.yaml");
    CURL *c = curl_easy_init();
    int paths = 0;
    for (int k = 0; k < 2; k++) {
        for (const char *p = dep; (p = strstr(p, keys[k])) != NULL; p += strlen(keys[k])) {
            const char *s = p + strlen(keys[k]);
            size_t n = strcspn(s, " \"\n");
            ck_assert(n > 0 && n < 64 && *s == '/');
            snprintf(url, sizeof url, "http://127.0.0.1:%d%.*s", port, (int)n, s);
            srvt_reply r;
            int rc = srvt_fetch(url, &(srvt_req){.timeout_ms = 5000, .handle = c}, &r);
            ck_assert_msg(rc == CURLE_OK && r.status == 200, "%s answered %ld %s", url, r.status,
                          r.error);
            srvt_reply_free(&r);
            paths++;
        }
    }
    ck_assert_int_ge(paths, 4); /* liveness, readiness, startup, metrics */
    ck_assert_ptr_nonnull(strstr(dep, "path: /healthz"));
    ck_assert_ptr_nonnull(strstr(dep, "path: /readyz"));
    free(dep);
    curl_easy_cleanup(c);

    /* The image's HEALTHCHECK and the compose healthcheck, as written. */
    char *df = slurp("docker/Dockerfile");
    json_t *hc = json_array_after(strstr(df, "\nHEALTHCHECK") ? strstr(df, "\nHEALTHCHECK") : df,
                                  "CMD [");
    ck_assert_msg(hc != NULL, "the Dockerfile HEALTHCHECK is not in exec form");
    /* json_array_after starts at the '[' after "CMD": put "CMD" back in front. */
    json_array_insert_new(hc, 0, json_string("CMD"));
    char *compose = slurp("docker/compose.yaml");
    json_t *ct = json_array_after(compose, "test: [\"CMD\", \"" IMAGE_BIN);
    ck_assert_msg(ct != NULL, "compose.yaml has no exec-form healthcheck of the server");
    ck_assert_int_eq(run_probe_command(hc, port), 0);
    ck_assert_int_eq(run_probe_command(ct, port), 0);

    int rc = srvt_stop(&srv, 25);
    ck_assert_msg(rc == 0, "exit status %d on SIGTERM (-1: none within 25 s)", rc);
    srvt_release(&srv);

    /* And both fail once nothing listens. */
    ck_assert_int_ne(run_probe_command(hc, port), 0);
    ck_assert_int_ne(run_probe_command(ct, port), 0);
    json_decref(hc);
    json_decref(ct);
    free(df);
    free(compose);
}
END_TEST

static Suite *manifests_suite(void) {
    const TTest *tests[] = {test_env_vars_exist, test_flags_exist, test_ports_match,
                            test_body_limit_matches, test_grace_exceeds_drain,
                            test_nginx_retries_and_upstreams, test_image_labels_and_license,
                            test_one_image_tag, test_k8s_conventions, test_probes_answer, NULL};
    return suite_with("deploy_manifests", "files_vs_server", 60, tests, setup, teardown);
}

const test_program TEST_PROGRAM = {.suites = {manifests_suite}};
