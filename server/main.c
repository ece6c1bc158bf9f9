/* main.c - attention-server: options, startup, signals, graceful shutdown.
 *
 * Signals: SIGTERM, SIGINT, SIGHUP and SIGQUIT all drain (nginx's QUIT is
 * its graceful stop; there is no configuration to reload on HUP, and a
 * hang-up's default action would cut every request in flight). They are
 * caught by a handler that only writes one byte to a pipe (a self-pipe; no
 * other work in the handler). A handler, not sigwait, because OpenBLAS
 * starts its threads before main runs, with every signal unblocked: with
 * sigwait the kernel could pick one of them and the default action would
 * kill the process. The main thread sleeps on the pipe. The handler is
 * installed once the checkpoints are loaded, just before the port is bound:
 * during start-up there is nothing to drain and the default action ends the
 * process, even while a loader is blocked (a FIFO given as a file). A
 * SIGHUP ignored by the parent (nohup) stays ignored.
 *
 * Shutdown: close the listening socket (acceptor.h: new connections are refused) and
 * answer /readyz with 503 on the connections still open;
 * wait until every request in flight has been answered (at most
 * --drain-timeout seconds; a second signal cuts the wait short); then stop
 * the computations still running (each within an item of its work:
 * attn_cancel_set) and answer the jobs still queued, which resumes every
 * suspended connection; then stop the daemon and exit 0.
 */
#include <cblas.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "info.h"
#include "kernels.h"
#include "log.h"
#include "metrics.h"
#include "options.h"
#include "pool.h"
#include "probe.h"
#include "sigbus.h"

static int signal_pipe[2] = {-1, -1};

static void on_signal(int sig) {
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    ssize_t w = write(signal_pipe[1], &b, 1);   /* a full pipe already holds a wakeup */
    (void)w;
    errno = saved;
}

/* SIGPIPE: ignored from the start (a write to a closed socket fails). */
static int ignore_sigpipe(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    return sigaction(SIGPIPE, &sa, NULL);
}

static int install_signals(void) {
    if (pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    static const int drain[] = {SIGTERM, SIGINT, SIGQUIT};
    for (size_t i = 0; i < sizeof drain / sizeof drain[0]; i++)
        if (sigaction(drain[i], &sa, NULL) != 0) return -1;
    if (sigaction(SIGHUP, NULL, &old) != 0) return -1;
    if (old.sa_handler != SIG_IGN && sigaction(SIGHUP, &sa, NULL) != 0) return -1;
    return 0;
}

/* Waits up to ms milliseconds (-1: forever) for a signal; returns it or 0. */
static int wait_signal(int ms) {
    struct pollfd p = {.fd = signal_pipe[0], .events = POLLIN};
    int r = poll(&p, 1, ms);
    if (r <= 0) return 0;
    unsigned char b = 0;
    return read(signal_pipe[0], &b, 1) == 1 ? b : 0;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The demo model's files, embedded by demo_model.S. */
extern const char srv__demo_config[], srv__demo_config_end[], srv__demo_weights[],
    srv__demo_weights_end[], srv__demo_vocab[], srv__demo_vocab_end[], srv__demo_merges[],
    srv__demo_merges_end[];

/* The demo model "shakespeare", offered when no --model is given. */
static int load_demo(api_models **models, api_weights_mode mode) {
    api_model_files f = {.mode = mode,
        .name = "shakespeare", .folder = "models/shakespeare",
        .config = srv__demo_config, .config_len = (size_t)(srv__demo_config_end - srv__demo_config),
        .weights = srv__demo_weights, .weights_len = (size_t)(srv__demo_weights_end - srv__demo_weights),
        .vocab = srv__demo_vocab, .vocab_len = (size_t)(srv__demo_vocab_end - srv__demo_vocab),
        .merges = srv__demo_merges, .merges_len = (size_t)(srv__demo_merges_end - srv__demo_merges)};
    char why[768];
    if (api_models_load_mem(models, &f, why, sizeof why) != 0) {
        srv_log("the demo model: %s", why); /* a broken build, not the user's input */
        return -1;
    }
    srv_log("the demo model \"shakespeare\" (built in; --demo-model off leaves it out)");
    return 0;
}

typedef struct {
    api_models **models;
    const char *spec;
    api_weights_mode mode;
    char why[768];
} model_load;

static int load_one(void *arg) {
    model_load *l = arg;
    return api_models_load_as(l->models, l->spec, l->mode, l->why, sizeof l->why);
}

/* The checkpoints, validated in full before the port is bound: a bad file
 * stops the server (exit 2) before it reports ready. Returns 0 or -1. */
static int load_models(const srv_options *opt, api_models **models) {
    if (opt->n_models == 0 && opt->demo_model) return load_demo(models, opt->weights_mode);
    for (int i = 0; i < opt->n_models; i++) {
        model_load l = {.models = models, .spec = opt->models[i], .mode = opt->weights_mode};
        char file[1024];
        double t0 = now_s();
        int rc = srv_sigbus_guard(load_one, &l, file, sizeof file);
        if (rc == SRV_SIGBUS_HIT) {
            srv_log("--model %.200s: %s changed while it was read: a page past its end (cut short "
                    "after it was opened?); a model's files must stay as they are while the server "
                    "loads them", opt->models[i], file);
            /* The load was abandoned midway: what it holds cannot be freed,
             * and a leak checker would turn the exit status into its own. */
            _exit(2);
        }
        if (rc != 0) {
            srv_log("--model %.200s: %s", opt->models[i], l.why);
            api_models_free(*models);
            *models = NULL;
            return -1;
        }
        srv_log("--model %.200s: loaded in %.2f s", opt->models[i], now_s() - t0);
    }
    return 0;
}

/* After signal sig: refuses new connections, waits for the requests in
 * flight (at most --drain-timeout; a second signal cuts the wait short),
 * then runs the jobs still queued, which resumes every suspended
 * connection, and gives their replies a second. Returns the requests left
 * unanswered. */
static long drain(srv_http *http, srv_pool *pool, const srv_options *opt, int sig) {
    srv_log("%s: draining %ld request(s) in flight, at most %ds", strsignal(sig),
            srv_metrics_in_flight(), opt->drain_timeout);
    srv_http_quiesce(http);
    /* A connection accepted just before the signal may not have sent its
     * request yet: give open connections half a second to show one. */
    double start = now_s(), deadline = start + opt->drain_timeout;
    while (now_s() < deadline) {
        if (srv_metrics_in_flight() == 0 &&
            (srv_http_connections(http) == 0 || now_s() > start + 0.5))
            break;
        if (wait_signal(20)) {
            srv_log("second signal: not waiting any longer");
            break;
        }
    }
    if (srv_metrics_in_flight() > 0) {
        srv_log("%ld request(s) still in flight: their computations stop now",
                srv_metrics_in_flight());
        srv_http_stop_computing(http);
    }
    srv_pool_stop(pool);     /* runs what is queued: every connection resumed */
    /* Replies of jobs that just finished still have to be sent. */
    for (double grace = now_s() + 1.0; srv_metrics_in_flight() > 0 && now_s() < grace;)
        wait_signal(10);
    return srv_metrics_in_flight();
}

static int serve(const srv_options *opt) {
    /* OpenBLAS 0.3.21 keeps one lock per transpose variant for its threaded
     * level-3 calls, so threaded sgemm calls of different variants from
     * several of our workers at once can corrupt its state. One OpenBLAS
     * thread makes every call run on the calling worker without that path;
     * the parallelism is ours: --threads workers, one request each, and
     * the compute pool below, whose threads help a request only while fewer
     * than --threads threads are inside the core's products. */
    openblas_set_num_threads(1);
    /* jansson seeds its hash function on first use; doing it here, before
     * any thread exists, avoids a race between the first requests. */
    json_object_seed(0);
    /* Large arrays come from malloc's arenas and stay warm for the next
     * request, within the memory budget: see srv_budget_tune_malloc. */
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    api_models *models = NULL;
    if (load_models(opt, &models) != 0) return 2;
    srv_pool *pool = srv_pool_create(opt->threads, opt->max_queue);
    if (!pool) {
        srv_log("cannot start %d worker threads", opt->threads);
        api_models_free(models);
        return 1;
    }
    /* The core's threads, shared by every request: one large request on an
     * idle server gets all --threads cores, busy workers keep theirs (see
     * attn_pool_create). */
    attn_pool *compute = attn_pool_create(opt->threads);
    if (!compute) {
        srv_log("cannot start %d compute threads", opt->threads - 1);
        srv_pool_destroy(pool);
        api_models_free(models);
        return 1;
    }
    srv_http http;
    if (install_signals() != 0) {
        srv_log("cannot install signal handlers: %s", strerror(errno));
        srv_pool_destroy(pool);
        attn_pool_destroy(compute);
        api_models_free(models);
        return 1;
    }
    if (srv_http_start(&http, opt, pool, compute, models) != 0) {
        srv_pool_destroy(pool);
        attn_pool_destroy(compute);
        api_models_free(models);
        return 1;
    }
    srv_log("%s listening on %s port %d: %d workers, %d I/O threads, max-queue %d, "
            "max-body %zu, max-elements %zu%s, timeout %ds, OpenBLAS %s x%d (checked%s%s)",
            srv_info_version_line(), opt->host, http.port, opt->threads, opt->io_threads,
            opt->max_queue, opt->max_body, http.limits.max_elements,
            opt->max_elements ? "" : " (from the memory budget)", opt->timeout,
            openblas_get_corename(), openblas_get_num_threads(),
            srv_kernels_get()->fallback_from[0] ? ", after " : "",
            srv_kernels_get()->fallback_from);

    int sig;
    while ((sig = wait_signal(-1)) == 0) {}
    long left = drain(&http, pool, opt, sig);
    srv_http_stop(&http);
    srv_pool_destroy(pool);
    attn_pool_destroy(compute); /* no worker is left to use it */
    api_models_free(models);
    srv_log("stopped%s", left > 0 ? " (some requests were cut off)" : "");
    close(signal_pipe[0]);
    close(signal_pipe[1]);
    return 0;
}

/* --tokenizer: every one loaded before the server listens; a bad directory
 * stops the start with the file and the fault. Returns 0 or -1. */
static int load_tokenizers(srv_options *opt, api_tokenizer *out) {
    for (int i = 0; i < opt->n_tokenizers; i++) {
        const srv_tokenizer_opt *t = &opt->tokenizers[i];
        api_bpe *bpe = NULL;
        char err[512];
        if (api_bpe_load(t->dir, &bpe, err, sizeof err) != 0) {
            srv_log("--tokenizer %s=%s: %s", t->name, t->dir, err);
            while (i-- > 0) api_bpe_free((api_bpe *)out[i].bpe);
            return -1;
        }
        out[i] = (api_tokenizer){.name = t->name, .bpe = bpe};
        srv_log("tokenizer %s: %zu tokens from %s", t->name, api_bpe_vocab_size(bpe), t->dir);
    }
    opt->loaded_tokenizers = out;
    return 0;
}

int main(int argc, char **argv) {
    srv_options opt;
    if (srv_options_parse(&opt, argc, argv) != 0) return 2;
    switch (opt.mode) {
    case SRV_MODE_HELP:
        srv_options_usage(stdout, argv[0]);
        return 0;
    case SRV_MODE_VERSION:
        printf("%s\n", srv_info_version_line());
        return 0;
    case SRV_MODE_PROBE:
        return srv_probe(opt.probe_url);
    case SRV_MODE_SERVE:
        break;
    }
    /* OpenBLAS's kernels checked before anything starts (kernels.h): a wrong
     * set is replaced by executing the server again with another one. */
    if (srv_kernels_select(argv) != 0) return 1;
    if (ignore_sigpipe() != 0) return 1;
    api_tokenizer tokenizers[SRV_MAX_TOKENIZERS];
    if (load_tokenizers(&opt, tokenizers) != 0) return 1;
    int rc = serve(&opt);
    for (int i = 0; i < opt.n_tokenizers; i++) api_bpe_free((api_bpe *)tokenizers[i].bpe);
    return rc;
}
