/* test_scaleout.c - three attention-server replicas behind a real nginx.
 *
 * Starts three $BUILD/attention-server processes on free loopback ports and
 * Debian's nginx (installed with apt-get when /usr/sbin/nginx is missing) on
 * another, configured from tests/scaleout/nginx.conf.in with the retry policy
 * of docker/nginx.conf. Eight libcurl clients send SCALE_REQUESTS mixed
 * requests (every endpoint, seven modules) whose answers were computed here
 * with the core library; a third of the way in one replica is SIGKILLed, at
 * half way another gets SIGTERM. Every request must get a 200 with the right
 * numbers, the SIGTERMed replica must exit 0 after draining, and the requests
 * per second before the first kill and after the second stop are printed.
 *
 * Everything started here is stopped here; tests/support/procs.h kills what
 * a failing check leaves behind.
 */
#include <check.h>
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/attention.h"
#include "tests/support/check_main.h"
#include "tests/support/files.h"
#include "tests/support/procs.h"
#include "tests/support/server_harness.h"

#define SCALE_REQUESTS 3000
#define SCALE_CLIENTS 8
#define SCALE_LOAD_SECONDS 45.0 /* bound on the whole load phase */
#define ATOL 1e-5
#define RTOL 1e-4

#define NGINX_BIN "/usr/sbin/nginx"
#define NGINX_TEMPLATE "tests/scaleout/nginx.conf.in"

/* ==== Requests with known answers ======================================== */

typedef struct {
    const char *name;
    const char *path;
    char *body;
    float *want_context;
    size_t n_context;
    float *want_weights;
    size_t n_weights;
} variant;

#define MAX_VARIANTS 16
static variant g_var[MAX_VARIANTS];
static int g_nvar;

/* "Your journey starts with one step", seed 000 3.3.1 */
static const float SEED_INPUTS[18] = {0.43f, 0.15f, 0.89f, 0.55f, 0.87f, 0.66f,
                                      0.57f, 0.85f, 0.64f, 0.22f, 0.58f, 0.33f,
                                      0.77f, 0.25f, 0.10f, 0.05f, 0.80f, 0.55f};

/* Deterministic inputs in [-1, 1] with three decimals: exact in JSON text. */
static void fill_inputs(float *x, size_t n, unsigned seed) {
    unsigned s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        x[i] = (float)((int)((s >> 8) % 2001u) - 1000) / 1000.0f;
    }
}

typedef struct {
    char *p;
    size_t len, cap;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(sbuf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        ck_assert_int_ge(n, 0);
        if (b->p && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 1024;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *np = realloc(b->p, cap);
        ck_assert_ptr_nonnull(np);
        b->p = np;
        b->cap = cap;
    }
}

/* Appends x as nested arrays of the given shape (rank 1 to 4). */
static void sb_tensor(sbuf *b, const float *x, const int *shape, int rank) {
    if (rank == 1) {
        sb_add(b, "[");
        for (int i = 0; i < shape[0]; i++) sb_add(b, "%s%.9g", i ? "," : "", (double)x[i]);
        sb_add(b, "]");
        return;
    }
    size_t inner = 1;
    for (int d = 1; d < rank; d++) inner *= (size_t)shape[d];
    sb_add(b, "[");
    for (int i = 0; i < shape[0]; i++) {
        if (i) sb_add(b, ",");
        sb_tensor(b, x + (size_t)i * inner, shape + 1, rank - 1);
    }
    sb_add(b, "]");
}

/* Computes context and weights of cfg with parameters from
 * torch.manual_seed(seed) (if the module has any) into v. */
static void compute(variant *v, const attn_config *cfg, uint64_t seed, const attn_inputs *given) {
    attn_plan plan;
    attn_error err = {0};
    int rc = attn_plan_make(cfg, &plan, &err);
    ck_assert_msg(rc == ATTN_OK, "%s: attn_plan_make: %s (%s)", v->name, err.message, err.field);
    float *params = malloc((plan.n_params ? plan.n_params : 1) * sizeof *params);
    ck_assert_ptr_nonnull(params);
    attn_rng rng;
    attn_rng_seed(&rng, seed);
    if (plan.n_params) {
        rc = attn_params_init(cfg, &plan, params, &rng, &err);
        ck_assert_msg(rc == ATTN_OK, "%s: attn_params_init: %s", v->name, err.message);
    }
    v->n_context = plan.n_context;
    v->n_weights = plan.n_scores;
    v->want_context = malloc(plan.n_context * sizeof(float));
    v->want_weights = malloc(plan.n_scores * sizeof(float));
    ck_assert(v->want_context && v->want_weights);
    attn_inputs in = *given;
    in.params = plan.n_params ? params : NULL;
    attn_outputs out = {.context = v->want_context, .weights = v->want_weights};
    rc = attn_forward(cfg, &plan, &in, &rng, &out, &err);
    ck_assert_msg(rc == ATTN_OK, "%s: attn_forward: %s (%s)", v->name, err.message, err.field);
    free(params);
}

/* Requests that take x: fields, then "init":{"seed":seed} unless seed is 0
 * (no parameters), then the inputs; input_seed 0: the seed chapter's six
 * embeddings. */
typedef struct {
    const char *name, *path, *fields;
    attn_config cfg;
    int batch;           /* 0: no batch axis in the request */
    uint64_t seed;       /* torch.manual_seed of the parameters */
    unsigned input_seed;
} x_case;

/* The chapter's multi-head modules (3.6), whose requests differ in numbers
 * only: "module", d_out, num_heads, context_length, dropout 0 and qkv_bias
 * (then init.seed), on x of [batch][tokens][d_in]; causal. */
typedef struct {
    const char *name;
    attn_module module;
    int tokens, d_in, d_out, num_heads, context_length, qkv_bias, batch;
    uint64_t seed;
    unsigned input_seed;
} mha_case;

static const mha_case MHA_CASES[] = {
    /* The seed request of the chapter (3.6.2): batch of one. */
    {"MultiHeadAttention seed 123", ATTN_MHA, 6, 3, 2, 2, 6, 0, 1, 123, 0},
    {"MultiHeadAttention B2 T16 d16 h4", ATTN_MHA, 16, 16, 16, 4, 16, 1, 2, 7, 1},
    {"MultiHeadAttention T48 d48 h4", ATTN_MHA, 48, 48, 48, 4, 64, 0, 1, 11, 5},
    {"MultiHeadAttentionWrapper", ATTN_MHA_WRAPPER, 6, 3, 2, 2, 6, 0, 2, 123, 2},
};

static const x_case X_CASES[] = {
    {"GPT2CausalSelfAttention", "/attention/multihead",
     "\"module\":\"GPT2CausalSelfAttention\",\"n_embd\":8,\"n_head\":2,\"block_size\":8,\"dropout\":0.0",
     {.module = ATTN_GPT2, .tokens = 5, .d_in = 8, .num_heads = 2, .context_length = 8, .bias = 1, .causal = 1},
     2, 1, 3},
    {"torch.nn.MultiheadAttention", "/attention/multihead",
     "\"module\":\"torch.nn.MultiheadAttention\",\"embed_dim\":8,\"num_heads\":2,\"dropout\":0.0,"
     "\"bias\":true,\"causal\":false",
     {.module = ATTN_TORCH_MHA, .tokens = 7, .d_in = 8, .num_heads = 2, .bias = 1}, 1, 3, 4},
    {"CausalAttention seed 789", "/attention/causal",
     "\"module\":\"CausalAttention\",\"d_out\":2,\"context_length\":6,\"dropout\":0.0,\"qkv_bias\":false",
     {.module = ATTN_CAUSAL, .tokens = 6, .d_in = 3, .d_out = 2, .num_heads = 1, .context_length = 6, .causal = 1},
     0, 789, 0},
    {"SelfAttention_v2 seed 789", "/attention/self",
     "\"module\":\"SelfAttention_v2\",\"d_out\":2,\"qkv_bias\":false",
     {.module = ATTN_SELF_V2, .tokens = 6, .d_in = 3, .d_out = 2, .num_heads = 1}, 0, 789, 0},
    {"SelfAttention_v1 seed 123", "/attention/self", "\"module\":\"SelfAttention_v1\",\"d_out\":2",
     {.module = ATTN_SELF_V1, .tokens = 6, .d_in = 3, .d_out = 2, .num_heads = 1}, 0, 123, 0},
    {"simple softmax", "/attention/simple", "\"normalization\":\"softmax\"",
     {.module = ATTN_SIMPLE, .tokens = 6, .d_in = 3, .num_heads = 1}, 0, 0, 0},
};

/* Scaled dot-product attention on rank-2 query [L][E], key [S][E], value [S][Ev]. */
typedef struct {
    const char *name;
    int L, S, E, Ev, causal;
    unsigned input_seed;
} sdpa_case;

static const sdpa_case SDPA_CASES[] = {
    {"sdpa cross L4 S5", 4, 5, 3, 2, 0, 5},
    {"sdpa causal L6 S6", 6, 6, 4, 4, 1, 6},
};

/* A module that takes x [B][T][d_in] (B = 0: no batch axis in the request). */
static void add_x_variant(const x_case *c) {
    ck_assert_int_lt(g_nvar, MAX_VARIANTS);
    variant *v = &g_var[g_nvar++];
    v->name = c->name;
    v->path = c->path;
    attn_config cfg = c->cfg;
    const char *fields = c->fields;
    int B = c->batch;
    cfg.batch = B ? B : 1;
    size_t n = (size_t)cfg.batch * (size_t)cfg.tokens * (size_t)cfg.d_in;
    float *x = malloc(n * sizeof *x);
    ck_assert_ptr_nonnull(x);
    if (c->input_seed == 0)
        memcpy(x, SEED_INPUTS, n * sizeof *x);
    else
        fill_inputs(x, n, c->input_seed);
    sbuf b = {0};
    sb_add(&b, "{%s%s", fields, *fields ? "," : "");
    if (c->seed) sb_add(&b, "\"init\":{\"seed\":%llu},", (unsigned long long)c->seed);
    sb_add(&b, "\"inputs\":");
    int shape3[3] = {cfg.batch, cfg.tokens, cfg.d_in};
    if (B)
        sb_tensor(&b, x, shape3, 3);
    else
        sb_tensor(&b, x, shape3 + 1, 2);
    sb_add(&b, "}");
    v->body = b.p;
    attn_inputs in = {.x = x};
    compute(v, &cfg, c->seed, &in);
    free(x);
}

static void add_sdpa_variant(const sdpa_case *c) {
    int L = c->L, S = c->S, E = c->E, Ev = c->Ev, causal = c->causal;
    ck_assert_int_lt(g_nvar, MAX_VARIANTS);
    variant *v = &g_var[g_nvar++];
    v->name = c->name;
    v->path = "/attention/sdpa";
    float *q = malloc((size_t)(L * E + S * E + S * Ev) * sizeof *q);
    ck_assert_ptr_nonnull(q);
    float *k = q + L * E, *val = k + S * E;
    fill_inputs(q, (size_t)(L * E + S * E + S * Ev), c->input_seed);
    sbuf b = {0};
    int qs[2] = {L, E}, ks[2] = {S, E}, vs[2] = {S, Ev};
    sb_add(&b, "{\"causal\":%s,\"query\":", causal ? "true" : "false");
    sb_tensor(&b, q, qs, 2);
    sb_add(&b, ",\"key\":");
    sb_tensor(&b, k, ks, 2);
    sb_add(&b, ",\"value\":");
    sb_tensor(&b, val, vs, 2);
    sb_add(&b, "}");
    v->body = b.p;
    attn_config cfg = {.module = ATTN_SDPA, .batch = 1, .tokens = L, .kv_tokens = S, .d_in = E,
                       .vdim = Ev, .num_heads = 1, .causal = causal};
    attn_inputs in = {.query = q, .key = k, .value = val};
    compute(v, &cfg, 0, &in);
    free(q);
}

/* A row of MHA_CASES as the request and config it stands for. */
static void add_mha_variant(size_t i) {
    static char fields[sizeof MHA_CASES / sizeof MHA_CASES[0]][256];
    const mha_case *m = &MHA_CASES[i];
    snprintf(fields[i], sizeof fields[i],
             "\"module\":\"%s\",\"d_out\":%d,\"num_heads\":%d,\"context_length\":%d,"
             "\"dropout\":0.0,\"qkv_bias\":%s",
             attn_module_name(m->module), m->d_out, m->num_heads, m->context_length,
             m->qkv_bias ? "true" : "false");
    x_case c = {m->name, "/attention/multihead", fields[i],
                {.module = m->module, .tokens = m->tokens, .d_in = m->d_in, .d_out = m->d_out,
                 .num_heads = m->num_heads, .context_length = m->context_length,
                 .bias = m->qkv_bias, .causal = 1},
                m->batch, m->seed, m->input_seed};
    add_x_variant(&c);
}

static void make_variants(void) {
    for (size_t i = 0; i < sizeof MHA_CASES / sizeof MHA_CASES[0]; i++) add_mha_variant(i);
    for (size_t i = 0; i < sizeof X_CASES / sizeof X_CASES[0]; i++) add_x_variant(&X_CASES[i]);
    for (size_t i = 0; i < sizeof SDPA_CASES / sizeof SDPA_CASES[0]; i++)
        add_sdpa_variant(&SDPA_CASES[i]);
}

static void free_variants(void) {
    for (int i = 0; i < g_nvar; i++) {
        free(g_var[i].body);
        free(g_var[i].want_context);
        free(g_var[i].want_weights);
    }
    g_nvar = 0;
}

/* Flattens nested JSON arrays of numbers into out (at most cap values).
 * Returns the count, or -1 on a non-number. */
static long flatten(const json_t *j, double *out, long cap, long at) {
    if (json_is_number(j)) {
        if (at < cap) out[at] = json_number_value(j);
        return at + 1;
    }
    if (!json_is_array(j)) return -1;
    size_t i;
    const json_t *e;
    json_array_foreach(j, i, e) {
        at = flatten(e, out, cap, at);
        if (at < 0) return -1;
    }
    return at;
}

/* NULL if the reply has the numbers of v, else why not (static buffer of the caller). */
static const char *check_numbers(const variant *v, const char *reply, char *why, size_t whylen) {
    json_error_t jerr;
    json_t *root = json_loads(reply, 0, &jerr);
    if (!root) {
        snprintf(why, whylen, "reply is not JSON: %s", jerr.text);
        return why;
    }
    const char *fail = NULL;
    struct {
        const char *key;
        const float *want;
        size_t n;
    } parts[2] = {{"context", v->want_context, v->n_context},
                  {"attn_weights", v->want_weights, v->n_weights}};
    for (int p = 0; p < 2 && !fail; p++) {
        const json_t *t = json_object_get(root, parts[p].key);
        if (!t) {
            snprintf(why, whylen, "no \"%s\" in the reply", parts[p].key);
            fail = why;
            break;
        }
        double *got = malloc((parts[p].n + 1) * sizeof *got);
        if (!got) {
            snprintf(why, whylen, "out of memory");
            fail = why;
            break;
        }
        long n = flatten(t, got, (long)parts[p].n, 0);
        if (n != (long)parts[p].n) {
            snprintf(why, whylen, "\"%s\" has %ld numbers, expected %zu", parts[p].key, n,
                     parts[p].n);
            fail = why;
        }
        for (long i = 0; !fail && i < n; i++) {
            double w = parts[p].want[i];
            if (!(fabs(got[i] - w) <= ATOL + RTOL * fabs(w))) {
                snprintf(why, whylen, "\"%s\"[%ld] = %.9g, expected %.9g", parts[p].key, i,
                         got[i], w);
                fail = why;
            }
        }
        free(got);
    }
    json_decref(root);
    return fail;
}

/* ==== Processes ============================================================ */

typedef struct {
    char dir[256];
    int port[3];
    pid_t replica[3];
    int nginx_port;
    pid_t nginx;
} cluster;

static cluster g_cl;

static void ensure_nginx(void) {
    if (access(NGINX_BIN, X_OK) == 0) return;
    ck_assert_msg(procs_ensure_package(NGINX_BIN, "nginx-light"),
                  "could not install nginx-light (the reason is on stderr)");
    /* The package starts its own service: this test does not use it. */
    if (system("command -v service >/dev/null && service nginx stop >/dev/null 2>&1") != 0) {
    }
}

static void start_replica(int i) {
    const char *server = srvt_binary();
    char port[16], log[512];
    ck_assert_msg(access(server, X_OK) == 0, "%s is missing (make build/attention-server)", server);
    g_cl.port[i] = procs_free_port();
    ck_assert_int_gt(g_cl.port[i], 0);
    snprintf(port, sizeof port, "%d", g_cl.port[i]);
    snprintf(log, sizeof log, "%s/replica%d.log", g_cl.dir, i);
    const char *argv[] = {server, "--host", "127.0.0.1", "--port", port, "--threads", "2", NULL};
    g_cl.replica[i] = procs_spawn(argv, &(procs_io){.out = log, .err = log});
    ck_assert_int_gt(g_cl.replica[i], 0);
}

/* Replaces every "@KEY@" of the template by its value. */
static char *fill_template(const char *tmpl, const char *const *kv, int nkv) {
    sbuf b = {0};
    sb_add(&b, "%s", "");
    for (const char *p = tmpl; *p;) {
        int hit = 0;
        for (int k = 0; k < nkv; k++) {
            size_t l = strlen(kv[2 * k]);
            if (strncmp(p, kv[2 * k], l) == 0) {
                sb_add(&b, "%s", kv[2 * k + 1]);
                p += l;
                hit = 1;
                break;
            }
        }
        if (!hit) sb_add(&b, "%c", *p++);
    }
    return b.p;
}

static void start_nginx(void) {
    ensure_nginx();
    char *tmpl = tfile_read_rel(NGINX_TEMPLATE, NULL);
    ck_assert_msg(tmpl != NULL, "cannot read " NGINX_TEMPLATE);
    g_cl.nginx_port = procs_free_port();
    char listen[16], up[3][16];
    snprintf(listen, sizeof listen, "%d", g_cl.nginx_port);
    for (int i = 0; i < 3; i++) snprintf(up[i], sizeof up[i], "%d", g_cl.port[i]);
    const char *kv[] = {"@PREFIX@",     g_cl.dir, "@USER@",       geteuid() == 0 ? "user root;" : "",
                        "@LISTEN@",     listen,   "@UPSTREAM_0@", up[0],
                        "@UPSTREAM_1@", up[1],    "@UPSTREAM_2@", up[2]};
    char *conf = fill_template(tmpl, kv, 6);
    free(tmpl);
    char conf_path[512], err_path[512];
    snprintf(conf_path, sizeof conf_path, "%s/nginx.conf", g_cl.dir);
    snprintf(err_path, sizeof err_path, "%s/error.log", g_cl.dir);
    FILE *f = fopen(conf_path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(conf, f);
    fclose(f);
    free(conf);
    const char *argv[] = {NGINX_BIN, "-c", conf_path, "-p", g_cl.dir, "-e", err_path, NULL};
    char log[512];
    snprintf(log, sizeof log, "%s/nginx.out", g_cl.dir);
    g_cl.nginx = procs_spawn(argv, &(procs_io){.out = log, .err = log});
    ck_assert_int_gt(g_cl.nginx, 0);
}

static int count_lines_with(const char *path, const char *needle) {
    char *s = tfile_read(path, NULL);
    if (!s) return -1;
    int n = 0;
    for (char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    free(s);
    return n;
}

/* ==== Load ================================================================= */

typedef struct {
    atomic_long next;      /* next request index to send */
    atomic_long done;      /* requests answered (right or wrong) */
    atomic_long failed;
    double deadline;
    char url[64];
    pthread_mutex_t lock;
    char first_failures[5][512];
    int n_failures_kept;
} load_state;

static load_state g_load;

static void record_failure(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void record_failure(const char *fmt, ...) {
    atomic_fetch_add(&g_load.failed, 1);
    pthread_mutex_lock(&g_load.lock);
    if (g_load.n_failures_kept < 5) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g_load.first_failures[g_load.n_failures_kept], 512, fmt, ap);
        va_end(ap);
        g_load.n_failures_kept++;
    }
    pthread_mutex_unlock(&g_load.lock);
}

static void *client(void *arg) {
    (void)arg;
    CURL *c = curl_easy_init();
    if (!c) {
        record_failure("curl_easy_init failed");
        return NULL;
    }
    const char *json[] = {"Content-Type: application/json", NULL};
    char url[128], why[400];
    for (;;) {
        long i = atomic_fetch_add(&g_load.next, 1);
        if (i >= SCALE_REQUESTS) break;
        if (procs_now() > g_load.deadline) {
            record_failure("request %ld not sent: the load phase ran out of time", i);
            atomic_fetch_add(&g_load.done, 1);
            continue;
        }
        const variant *v = &g_var[i % g_nvar];
        snprintf(url, sizeof url, "%s%s", g_load.url, v->path);
        srvt_req rq = {.body = v->body, .len = strlen(v->body), .headers = json,
                       .timeout_ms = 30000, .connect_timeout_ms = 2000, .handle = c};
        srvt_reply reply;
        long status = srvt_fetch(url, &rq, &reply) == CURLE_OK ? reply.status : 0;
        if (status != 200) {
            record_failure("request %ld (%s): status %ld %s %.200s", i, v->name, status,
                           reply.error, reply.body ? reply.body : "");
        } else if (check_numbers(v, reply.body, why, sizeof why)) {
            record_failure("request %ld (%s): %s", i, v->name, why);
        }
        srvt_reply_free(&reply);
        atomic_fetch_add(&g_load.done, 1);
    }
    curl_easy_cleanup(c);
    return NULL;
}

/* Waits until `done` reaches target, the load ends, or the deadline passes. */
static long wait_done(long target) {
    for (;;) {
        long d = atomic_load(&g_load.done);
        if (d >= target || procs_now() > g_load.deadline) return d;
        procs_sleep_ms(1);
    }
}

/* ==== The test ============================================================= */

static void cluster_setup(void) {
    memset(&g_cl, 0, sizeof g_cl);
    snprintf(g_cl.dir, sizeof g_cl.dir, "/tmp/attn-scaleout-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g_cl.dir));
}

static void cluster_teardown(void) {
    int st;
    if (g_cl.nginx > 0) procs_stop(g_cl.nginx, SIGQUIT, 10.0, &st);
    for (int i = 0; i < 3; i++)
        if (g_cl.replica[i] > 0) procs_stop(g_cl.replica[i], SIGTERM, 10.0, &st);
    procs_kill_all();
    free_variants();
}

/* Three replicas on free ports, each ready, and nginx in front of them. */
static void start_cluster(void) {
    for (int i = 0; i < 3; i++) start_replica(i);
    char url[128];
    for (int i = 0; i < 3; i++) {
        snprintf(url, sizeof url, "http://127.0.0.1:%d/readyz", g_cl.port[i]);
        ck_assert_msg(srvt_wait_url(url, g_cl.replica[i], 15.0),
                      "replica %d never became ready (log %s/replica%d.log)", i, g_cl.dir, i);
    }
    start_nginx();
    snprintf(url, sizeof url, "http://127.0.0.1:%d/healthz", g_cl.nginx_port);
    ck_assert_msg(srvt_wait_url(url, g_cl.nginx, 15.0), "nginx never answered (see %s/error.log)",
                  g_cl.dir);
}

/* What the load phase saw: clients started, requests answered, and when. */
typedef struct {
    int started;
    long n_kill, n_one, done; /* answered at the kill, when one replica was left, at the end */
    double t0, t_kill, t_one, t_end;
    int reaped0, reaped1, st0, st1; /* the killed and the stopped replica */
} load_run;

/* SCALE_REQUESTS from SCALE_CLIENTS clients through nginx; a third of the
 * way replica 0 is SIGKILLed, half way replica 1 gets SIGTERM. */
static load_run run_load(void) {
    load_run L = {0};
    snprintf(g_load.url, sizeof g_load.url, "http://127.0.0.1:%d", g_cl.nginx_port);
    atomic_store(&g_load.next, 0);
    atomic_store(&g_load.done, 0);
    atomic_store(&g_load.failed, 0);
    g_load.n_failures_kept = 0;
    pthread_mutex_init(&g_load.lock, NULL);
    L.t0 = procs_now();
    g_load.deadline = L.t0 + SCALE_LOAD_SECONDS;
    pthread_t th[SCALE_CLIENTS];
    for (; L.started < SCALE_CLIENTS; L.started++)
        if (pthread_create(&th[L.started], NULL, client, NULL) != 0) break;

    /* A third of the way: SIGKILL replica 0 (connections reset, nothing drained). */
    L.n_kill = wait_done(SCALE_REQUESTS / 3);
    L.t_kill = procs_now();
    kill(g_cl.replica[0], SIGKILL);
    /* Half way: SIGTERM replica 1, which drains and exits 0. */
    wait_done(SCALE_REQUESTS / 2);
    kill(g_cl.replica[1], SIGTERM);
    L.reaped0 = procs_wait(g_cl.replica[0], 10.0, &L.st0);
    L.reaped1 = procs_wait(g_cl.replica[1], 30.0, &L.st1);
    if (L.reaped0) g_cl.replica[0] = 0;
    if (L.reaped1) g_cl.replica[1] = 0;
    /* From here on one replica serves everything. */
    L.t_one = procs_now();
    L.n_one = atomic_load(&g_load.done);

    for (int i = 0; i < L.started; i++) pthread_join(th[i], NULL);
    L.t_end = procs_now();
    L.done = atomic_load(&g_load.done);
    pthread_mutex_destroy(&g_load.lock);
    return L;
}

/* The requests per second before the first kill and after the second
 * stop, the replicas' and nginx's logs, the first failures. */
static void print_load(const load_run *L) {
    double rps_before = L->n_kill / (L->t_kill - L->t0 > 0 ? L->t_kill - L->t0 : 1e-9);
    double rps_after = (L->done - L->n_one) / (L->t_end - L->t_one > 0 ? L->t_end - L->t_one : 1e-9);
    printf("scaleout: %ld requests from %d clients in %.2f s through nginx: %.0f req/s with 3 "
           "replicas (first %ld), %.0f req/s with 1 replica (last %ld); %ld failed\n",
           L->done, L->started, L->t_end - L->t0, rps_before, L->n_kill, rps_after,
           L->done - L->n_one, atomic_load(&g_load.failed));
    char path[600];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/replica%d.log", g_cl.dir, i);
        printf("scaleout: replica %d access log has %d /attention/ lines\n", i,
               count_lines_with(path, "/attention/"));
    }
    snprintf(path, sizeof path, "%s/error.log", g_cl.dir);
    printf("scaleout: nginx error log: %d upstream errors (each one retried on another replica)\n",
           count_lines_with(path, "upstream"));
    for (int i = 0; i < g_load.n_failures_kept; i++)
        printf("scaleout: failure: %s\n", g_load.first_failures[i]);
    fflush(stdout);
}

START_TEST(test_scaleout_kill_two_of_three) {
    make_variants();
    start_cluster();
    load_run L = run_load();
    print_load(&L);

    ck_assert_int_eq(L.started, SCALE_CLIENTS);
    ck_assert_int_eq(L.done, SCALE_REQUESTS);
    ck_assert_msg(atomic_load(&g_load.failed) == 0, "%ld of %d requests failed; first: %s",
                  atomic_load(&g_load.failed), SCALE_REQUESTS, g_load.first_failures[0]);
    ck_assert_msg(L.reaped0 && WIFSIGNALED(L.st0) && WTERMSIG(L.st0) == SIGKILL,
                  "replica 0 was not killed by SIGKILL (status %d)", L.st0);
    ck_assert_msg(L.reaped1 && WIFEXITED(L.st1) && WEXITSTATUS(L.st1) == 0,
                  "replica 1 did not exit 0 on SIGTERM (status %d, log %s/replica1.log)", L.st1,
                  g_cl.dir);

    /* The survivor still answers through nginx, then everything stops cleanly. */
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/readyz", g_cl.nginx_port);
    ck_assert(srvt_wait_url(url, g_cl.nginx, 5.0));
    int st = 0;
    ck_assert_msg(procs_stop(g_cl.nginx, SIGQUIT, 10.0, &st) && WIFEXITED(st) &&
                      WEXITSTATUS(st) == 0,
                  "nginx did not stop on SIGQUIT (status %d)", st);
    g_cl.nginx = 0;
    ck_assert_msg(procs_stop(g_cl.replica[2], SIGTERM, 10.0, &st) && WIFEXITED(st) &&
                      WEXITSTATUS(st) == 0,
                  "replica 2 did not exit 0 on SIGTERM (status %d)", st);
    g_cl.replica[2] = 0;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_cl.dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *scaleout_suite(void) {
    json_object_seed(0);
    Suite *s = suite_create("scaleout");
    const TTest *tests[] = {test_scaleout_kill_two_of_three, NULL};
    tcase_add_checked_fixture(tcase_with(s, "nginx_three_replicas", 300, tests), cluster_setup,
                              cluster_teardown);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {scaleout_suite}};
