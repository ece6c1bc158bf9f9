/* options.h - command line flags and ATTN_* environment variables.
 *
 * Every option has a flag and an environment variable; the variable is read
 * first and the flag overrides it. Bad values are reported on stderr with the
 * usage text and the process exits 2; this happens at startup only.
 */
#ifndef SRV_OPTIONS_H
#define SRV_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "api/api.h"
#define SRV_MAX_MODELS 16

typedef enum {
    SRV_MODE_SERVE,        /* run the server */
    SRV_MODE_HELP,         /* --help: usage on stdout, exit 0 */
    SRV_MODE_VERSION,      /* --version: one line on stdout, exit 0 */
    SRV_MODE_PROBE,        /* --probe URL / --healthcheck: GET it, exit 0 on 2xx */
} srv_mode;

#define SRV_MAX_TOKENIZERS 16

/* --tokenizer NAME=DIR: GPT-2's BPE files in DIR, named NAME in requests. */
typedef struct {
    char name[64];
    char dir[1024];
} srv_tokenizer_opt;

typedef struct {
    srv_mode mode;
    char host[256];        /* --host, ATTN_HOST: address or name to bind */
    int port;              /* --port, ATTN_PORT */
    int threads;           /* --threads, ATTN_THREADS: compute workers */
    int io_threads;        /* --io-threads, ATTN_IO_THREADS: libmicrohttpd pool */
    size_t max_body;       /* --max-body, ATTN_MAX_BODY: bytes */
    size_t max_elements;   /* --max-elements, ATTN_MAX_ELEMENTS: floats per request; 0 = from
                            * the memory budget (srv_budget_max_elements) */
    int max_queue;         /* --max-queue, ATTN_MAX_QUEUE: jobs waiting for a worker */
    int max_connections;   /* --max-connections, ATTN_MAX_CONNECTIONS */
    int timeout;           /* --timeout, ATTN_TIMEOUT: idle client seconds; also the deadline
                            * of a request head (conns.h) and of a wait for memory */
    int drain_timeout;     /* --drain-timeout, ATTN_DRAIN_TIMEOUT: seconds on SIGTERM */
    size_t max_memory;     /* --max-memory, ATTN_MAX_MEMORY: bytes for all requests; 0 = default */
    size_t max_work;       /* --max-work, ATTN_MAX_WORK: multiply-adds one request may take
                            * (api_limits.max_work); 0 = no limit */
    char cors_origin[2048];/* --cors-origin, ATTN_CORS_ORIGIN: "" = no CORS headers, "*", or a
                            * comma-separated list of origins (cors.h) */
    int access_log;        /* --access-log on|off, ATTN_ACCESS_LOG */
    int gzip_level;        /* --gzip-level, ATTN_GZIP_LEVEL: 0 = never compress replies, 1-12 */
    size_t gzip_min_size;  /* --gzip-min-size, ATTN_GZIP_MIN_SIZE: smaller replies go as they are */
    size_t stream_min_size;/* --stream-min-size, ATTN_STREAM_MIN_SIZE: JSON replies of about this
                            * size or more are streamed to clients without gzip; 0 = never */
    int max_new_tokens;    /* --max-new-tokens, ATTN_MAX_NEW_TOKENS: tokens one generation may
                            * write (api_limits.max_new_tokens) */
    int max_streams;       /* --max-streams, ATTN_MAX_STREAMS: generations running at once
                            * (their threads, gen.h) */
    int batch;             /* --batch on|off, ATTN_BATCH: decode steps batched (batch.h) */
    char probe_url[1024];  /* --probe URL; --healthcheck builds it from host and port */
    srv_tokenizer_opt tokenizers[SRV_MAX_TOKENIZERS]; /* --tokenizer NAME=DIR (repeatable),
                            * ATTN_TOKENIZER (NAME=DIR[,NAME=DIR...]) */
    int n_tokenizers;
    const api_tokenizer *loaded_tokenizers; /* [n_tokenizers], loaded by main at start */
    const char *models[SRV_MAX_MODELS]; /* --model NAME=FILE[:heads=N], repeatable (into argv),
                            * or ATTN_MODELS, comma-separated (into models_env) */
    int n_models;
    char models_env[4096];
    int demo_model;        /* --demo-model on|off, ATTN_DEMO_MODEL: without --model, serve the
                            * built-in demo model "shakespeare" (on) */
    char weights_dtype[32];/* --weights-dtype keep|f32|bf16, ATTN_WEIGHTS_DTYPE ("keep") ... */
    api_weights_mode weights_mode; /* ... parsed: how every model holds its weight matrices */
} srv_options;

/* Fills *o from the environment and argv. Returns 0, or -1 after printing
 * the reason and the usage text on stderr (the caller exits 2). */
int srv_options_parse(srv_options *o, int argc, char **argv);

/* Writes the usage text to f (stdout for --help, stderr on errors). */
void srv_options_usage(FILE *f, const char *argv0);

/* Parses a byte count: a plain integer is bytes; k, M, G (optionally followed
 * by "B" or "iB", any case) multiply by 1024, 1024^2, 1024^3. Returns 0, or
 * -1 if s is not such a number or it overflows size_t. */
int srv_parse_size(const char *s, size_t *out);

#endif
