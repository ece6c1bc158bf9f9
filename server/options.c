/* options.c - flags and ATTN_* environment variables, see options.h. */
#include "options.h"

#include "cors.h"
#include "route.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* --max-elements is 0 unless given: the server derives it from the memory
 * budget (srv_budget_max_elements: half of it, at least 2^27 floats). */
#define DEFAULT_MAX_BODY ((size_t)64 << 20)
/* Default for --max-work: 2^40 multiply-adds, about 30 s of one core here
 * (GPT-2 124M over 1,024 tokens is 1.6e11; the attention of 1 M tokens of
 * width 1, 17 minutes on two cores, is 6.6e13). */
#define DEFAULT_MAX_WORK ((size_t)1 << 40)

typedef enum { OPT_STR, OPT_INT, OPT_SIZE, OPT_BOOL } opt_kind;

typedef struct {
    const char *flag;   /* "--port" */
    const char *env;    /* "ATTN_PORT" */
    opt_kind kind;
    size_t offset;      /* into srv_options */
    size_t str_size;    /* OPT_STR: capacity */
    long min, max;      /* OPT_INT: accepted range; OPT_SIZE: min 1 (positive) or 0 */
} opt_def;

#define OFF(f) offsetof(srv_options, f)
static const opt_def defs[] = {
    {"--host", "ATTN_HOST", OPT_STR, OFF(host), sizeof(((srv_options *)0)->host), 0, 0},
    {"--port", "ATTN_PORT", OPT_INT, OFF(port), 0, 0, 65535},
    {"--threads", "ATTN_THREADS", OPT_INT, OFF(threads), 0, 1, 1024},
    {"--io-threads", "ATTN_IO_THREADS", OPT_INT, OFF(io_threads), 0, 1, 256},
    {"--max-body", "ATTN_MAX_BODY", OPT_SIZE, OFF(max_body), 0, 1, 0},
    {"--max-elements", "ATTN_MAX_ELEMENTS", OPT_SIZE, OFF(max_elements), 0, 1, 0},
    {"--max-memory", "ATTN_MAX_MEMORY", OPT_SIZE, OFF(max_memory), 0, 1, 0},
    {"--max-work", "ATTN_MAX_WORK", OPT_SIZE, OFF(max_work), 0, 0, 0},
    {"--max-queue", "ATTN_MAX_QUEUE", OPT_INT, OFF(max_queue), 0, 1, 1000000},
    {"--max-connections", "ATTN_MAX_CONNECTIONS", OPT_INT, OFF(max_connections), 0, 1, 1000000},
    {"--timeout", "ATTN_TIMEOUT", OPT_INT, OFF(timeout), 0, 1, 86400},
    {"--drain-timeout", "ATTN_DRAIN_TIMEOUT", OPT_INT, OFF(drain_timeout), 0, 0, 86400},
    {"--cors-origin", "ATTN_CORS_ORIGIN", OPT_STR, OFF(cors_origin),
     sizeof(((srv_options *)0)->cors_origin), 0, 0},
    {"--access-log", "ATTN_ACCESS_LOG", OPT_BOOL, OFF(access_log), 0, 0, 0},
    {"--gzip-level", "ATTN_GZIP_LEVEL", OPT_INT, OFF(gzip_level), 0, 0, 12},
    {"--gzip-min-size", "ATTN_GZIP_MIN_SIZE", OPT_SIZE, OFF(gzip_min_size), 0, 1, 0},
    {"--stream-min-size", "ATTN_STREAM_MIN_SIZE", OPT_SIZE, OFF(stream_min_size), 0, 0, 0},
    {"--max-new-tokens", "ATTN_MAX_NEW_TOKENS", OPT_INT, OFF(max_new_tokens), 0, 1, 1 << 30},
    {"--max-streams", "ATTN_MAX_STREAMS", OPT_INT, OFF(max_streams), 0, 1, 4096},
    {"--batch", "ATTN_BATCH", OPT_BOOL, OFF(batch), 0, 0, 0},
    {"--demo-model", "ATTN_DEMO_MODEL", OPT_BOOL, OFF(demo_model), 0, 0, 0},
    {"--weights-dtype", "ATTN_WEIGHTS_DTYPE", OPT_STR, OFF(weights_dtype),
     sizeof(((srv_options *)0)->weights_dtype), 0, 0},
};
#define N_DEFS (sizeof defs / sizeof defs[0])

void srv_options_usage(FILE *f, const char *argv0) {
    char paths[600];
    srv_route_list(paths, sizeof paths, "\n  ");
    fprintf(f,
        "usage: %s [options]\n"
        "       %s --probe URL | --healthcheck [--host H] [--port P]\n"
        "\n"
        "Serves the attention modules and whole models over HTTP:\n"
        "  %s\n"
        "(GET / is the viewer, /openapi.json the API document.)\n"
        "Every option can also be set by the environment variable shown; the flag wins.\n"
        "\n"
        "  --host ADDR            ATTN_HOST             address to bind (127.0.0.1; 0.0.0.0 or ::\n"
        "                                               for every interface)\n"
        "  --port N               ATTN_PORT             TCP port (8080)\n"
        "  --threads N            ATTN_THREADS          compute workers (number of CPUs)\n"
        "  --io-threads N         ATTN_IO_THREADS       HTTP I/O threads (CPUs, at most 4)\n"
        "  --max-body SIZE        ATTN_MAX_BODY         largest request body; bytes, or with a\n"
        "                                               k/M/G suffix (64M)\n"
        "  --max-elements N       ATTN_MAX_ELEMENTS     most floats one request may hold, inputs,\n"
        "                                               intermediates and outputs; k/M/G suffixes\n"
        "                                               accepted (half the memory budget in floats,\n"
        "                                               at least 134217728 = 512 MiB)\n"
        "  --max-memory SIZE      ATTN_MAX_MEMORY       memory all requests together may reserve,\n"
        "                                               bodies included; one that does not fit\n"
        "                                               waits, then 503; one larger than all 413\n"
        "                                               (the cgroup memory limit, else half the RAM,\n"
        "                                               minus a quarter for the rest of the process)\n"
        "  --max-work N           ATTN_MAX_WORK         most multiply-adds one request may take\n"
        "                                               (projections, scores with 64 per softmax\n"
        "                                               element, a model's layers); over it 413;\n"
        "                                               k/M/G suffixes (1024G: about 30 s of one\n"
        "                                               core here; 0 = no limit)\n"
        "  --max-queue N          ATTN_MAX_QUEUE        requests waiting for a worker before 503 (64)\n"
        "  --max-connections N    ATTN_MAX_CONNECTIONS  open connections (1000)\n"
        "  --timeout SECONDS      ATTN_TIMEOUT          idle client timeout; also the longest a\n"
        "                                               request head may take to arrive, and a\n"
        "                                               request may wait for memory (30)\n"
        "  --drain-timeout SECS   ATTN_DRAIN_TIMEOUT    on SIGTERM, longest wait for requests in\n"
        "                                               flight to be sent (20)\n"
        "  --cors-origin LIST     ATTN_CORS_ORIGIN      origins whose pages may read the replies:\n"
        "                                               comma-separated, or * for any (unset: none)\n"
        "  --access-log on|off    ATTN_ACCESS_LOG       one line per request on stderr (on)\n"
        "  --gzip-level N         ATTN_GZIP_LEVEL       gzip replies for clients that accept it at\n"
        "                                               this level, 1 (fastest) to 12; 0 = never (1)\n"
        "  --gzip-min-size SIZE   ATTN_GZIP_MIN_SIZE    smaller replies are sent as they are (1k)\n"
        "  --stream-min-size SIZE ATTN_STREAM_MIN_SIZE  JSON replies this large or larger to clients\n"
        "                                               that do not take gzip are sent while they\n"
        "                                               are written, chunked (128M; 0 = never)\n"
        "  --max-new-tokens N     ATTN_MAX_NEW_TOKENS   tokens one generation may write (generate,\n"
        "                                               /v1/completions' max_tokens); more is 413 (1024)\n"
        "  --max-streams N        ATTN_MAX_STREAMS      generations running at once, each on a thread (16)\n"
        "  --batch on|off         ATTN_BATCH            their decode steps batched (on; off: turns)\n"
        "  --tokenizer NAME=DIR   ATTN_TOKENIZER        GPT-2's BPE files in DIR (vocab.json +\n"
        "                                               merges.txt, or encoder.json + vocab.bpe),\n"
        "                                               loaded at start; /model/gpt2 requests then\n"
        "                                               send \"text\" (and \"tokenizer\": NAME when\n"
        "                                               more than one is loaded); repeatable; the\n"
        "                                               variable takes NAME=DIR,NAME=DIR\n"
        "  --model NAME=DIR       ATTN_MODELS           load a model at start for POST /model/gpt2\n"
        "  --model NAME=FILE                            {\"model\": NAME}: DIR a Hugging Face folder\n"
        "                                               (config.json, model.safetensors or its\n"
        "                                               shards, the tokenizer files, which then\n"
        "                                               serve \"text\"); FILE one .safetensors of\n"
        "                                               GPT-2 or of the book's GPTModel, with\n"
        "                                               FILE:heads=N for n_head (else the file's\n"
        "                                               __metadata__, else width/64); repeatable\n"
        "                                               (the variable: comma-separated)\n"
        "  --demo-model on|off    ATTN_DEMO_MODEL       without --model, serve the demo model built\n"
        "                                               into the binary: \"shakespeare\", a small\n"
        "                                               GPT-2 trained on Tiny Shakespeare byte by\n"
        "                                               byte, its tokenizer with it (on)\n"
        "  --weights-dtype D      ATTN_WEIGHTS_DTYPE    keep (F16/BF16 weights stay half-size), f32,\n"
        "                                               or bf16 (half the memory, lossy) (keep)\n"
        "  --probe URL                                  GET URL, exit 0 on 2xx, 1 otherwise\n"
        "  --healthcheck                                probe http://HOST:PORT/healthz\n"
        "  --version                                    print the version and exit\n"
        "  --help                                       print this text and exit\n",
        argv0, argv0, paths);
}

int srv_parse_size(const char *s, size_t *out) {
    if (!s || !isdigit((unsigned char)*s)) return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE) return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (shift && (strcasecmp(end, "b") == 0 || strcasecmp(end, "ib") == 0)) end += strlen(end);
    if (*end != '\0') return -1;
    if (v > (unsigned long long)(SIZE_MAX >> shift)) return -1;
    *out = (size_t)v << shift;
    return 0;
}

static int parse_int(const char *s, long min, long max, int *out) {
    if (!s || !*s) return -1;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max) return -1;
    *out = (int)v;
    return 0;
}

static int parse_bool(const char *s, int *out) {
    static const char *yes[] = {"1", "on", "yes", "true"}, *no[] = {"0", "off", "no", "false"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) { *out = 1; return 0; }
        if (strcasecmp(s, no[i]) == 0) { *out = 0; return 0; }
    }
    return -1;
}

/* Stores value into the option; prints what is wrong and returns -1. */
static int set_value(srv_options *o, const opt_def *d, const char *value, const char *from) {
    char *field = (char *)o + d->offset;
    int ok = 0;
    switch (d->kind) {
    case OPT_STR:
        ok = strlen(value) < d->str_size;
        if (ok) memcpy(field, value, strlen(value) + 1);
        break;
    case OPT_INT: ok = parse_int(value, d->min, d->max, (int *)field) == 0; break;
    case OPT_SIZE:
        ok = srv_parse_size(value, (size_t *)field) == 0 && *(size_t *)field >= (size_t)d->min;
        break;
    case OPT_BOOL: ok = parse_bool(value, (int *)field) == 0; break;
    }
    if (!ok) {
        if (d->kind == OPT_INT)
            fprintf(stderr, "attention-server: %s: '%.64s' is not an integer in [%ld, %ld]\n",
                    from, value, d->min, d->max);
        else if (d->kind == OPT_SIZE)
            fprintf(stderr, "attention-server: %s: '%.64s' is not a %ssize (bytes, or k/M/G)\n",
                    from, value, d->min ? "positive " : "");
        else if (d->kind == OPT_BOOL)
            fprintf(stderr, "attention-server: %s: '%.64s' is not on or off\n", from, value);
        else
            fprintf(stderr, "attention-server: %s: value too long\n", from);
    }
    return ok ? 0 : -1;
}

/* Adds NAME=DIR (n bytes of s) to o->tokenizers; prints what is wrong and
 * returns -1. NAME: letters, digits, '.', '_', '-'; each name once. */
static int add_tokenizer(srv_options *o, const char *s, size_t n, const char *from) {
    const char *eq = memchr(s, '=', n);
    size_t name_len = eq ? (size_t)(eq - s) : 0, dir_len = eq ? n - name_len - 1 : 0;
    srv_tokenizer_opt *t = &o->tokenizers[o->n_tokenizers];
    int ok = eq && name_len > 0 && name_len < sizeof t->name && dir_len > 0 &&
             dir_len < sizeof t->dir;
    for (size_t i = 0; ok && i < name_len; i++)
        ok = isalnum((unsigned char)s[i]) || s[i] == '.' || s[i] == '_' || s[i] == '-';
    if (!ok) {
        fprintf(stderr, "attention-server: %s: '%.*s' is not NAME=DIR (NAME: letters, digits, "
                "'.', '_', '-')\n", from, (int)(n < 200 ? n : 200), s);
        return -1;
    }
    for (int i = 0; i < o->n_tokenizers; i++)
        if (strlen(o->tokenizers[i].name) == name_len &&
            strncmp(o->tokenizers[i].name, s, name_len) == 0) {
            fprintf(stderr, "attention-server: %s: the tokenizer name '%.*s' is given twice\n",
                    from, (int)name_len, s);
            return -1;
        }
    if (o->n_tokenizers == SRV_MAX_TOKENIZERS) {
        fprintf(stderr, "attention-server: %s: more than %d tokenizers\n", from,
                SRV_MAX_TOKENIZERS);
        return -1;
    }
    memcpy(t->name, s, name_len);
    t->name[name_len] = '\0';
    memcpy(t->dir, eq + 1, dir_len);
    t->dir[dir_len] = '\0';
    o->n_tokenizers++;
    return 0;
}

static int cpu_count(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void set_defaults(srv_options *o) {
    memset(o, 0, sizeof *o);
    o->mode = SRV_MODE_SERVE;
    strcpy(o->host, "127.0.0.1");
    o->port = 8080;
    o->threads = cpu_count();
    o->io_threads = o->threads < 4 ? o->threads : 4;
    o->max_body = DEFAULT_MAX_BODY;
    o->max_work = DEFAULT_MAX_WORK;
    o->max_queue = 64;
    o->max_connections = 1000;
    o->timeout = 30;
    o->drain_timeout = 20;
    o->access_log = 1;
    o->gzip_level = 1;
    o->gzip_min_size = 1024;
    o->stream_min_size = (size_t)128 << 20;
    o->max_new_tokens = 1024;
    o->max_streams = 16;
    o->batch = 1;
    o->demo_model = 1;
    strcpy(o->weights_dtype, "keep");
}

/* After the error's own line: where the options are, not all of them. */
static int fail(const char *argv0) {
    fprintf(stderr, "attention-server: '%s --help' lists every option\n", argv0);
    return -1;
}

/* One --model spec; -1 when there are too many. */
static int add_model(srv_options *o, const char *spec) {
    if (o->n_models == SRV_MAX_MODELS) {
        fprintf(stderr, "attention-server: at most %d models (--model)\n", SRV_MAX_MODELS);
        return -1;
    }
    o->models[o->n_models++] = spec;
    return 0;
}

/* ATTN_MODELS: specs separated by commas, split in o->models_env. */
static int models_from_env(srv_options *o) {
    const char *v = getenv("ATTN_MODELS");
    if (!v || !*v) return 0;
    if (strlen(v) >= sizeof o->models_env) {
        fprintf(stderr, "attention-server: ATTN_MODELS: value too long\n");
        return -1;
    }
    strcpy(o->models_env, v);
    for (char *save = NULL, *tok = strtok_r(o->models_env, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save))
        if (add_model(o, tok) != 0) return -1;
    return 0;
}

/* The variables: ATTN_MODELS, ATTN_TOKENIZER and every option's own. */
static int from_environment(srv_options *o) {
    if (models_from_env(o) != 0) return -1;
    for (size_t i = 0; i < N_DEFS; i++) {
        const char *v = getenv(defs[i].env);
        if (v && *v && set_value(o, &defs[i], v, defs[i].env) != 0) return -1;
    }
    const char *tokenizers = getenv("ATTN_TOKENIZER");
    for (const char *p = tokenizers; p && *p;) {
        size_t n = strcspn(p, ",");
        if (add_tokenizer(o, p, n, "ATTN_TOKENIZER") != 0) return -1;
        p += n + (p[n] == ',');
    }
    return 0;
}

/* The flags that are not rows of defs: --probe URL, --tokenizer NAME=DIR and
 * --model NAME=SPEC (repeatable; the first replaces the variable's list).
 * Returns 1 when arg is one of them (taken, *i past its value), 0 when it
 * is not, -1 after saying what is wrong. */
static int special_flag(srv_options *o, int argc, char **argv, int *i, int *seen) {
    const char *arg = argv[*i], *eq = strchr(arg, '=');
    size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
    static const char *const names[] = {"--probe", "--tokenizer", "--model"};
    static const char *const needs[] = {"a URL", "NAME=DIR", "NAME=DIR or NAME=FILE.safetensors"};
    int k = 0;
    while (k < 3 && !(strlen(names[k]) == name_len && strncmp(arg, names[k], name_len) == 0)) k++;
    if (k == 3) return 0;
    const char *value = eq ? eq + 1 : (*i + 1 < argc ? argv[++*i] : NULL);
    if (!value || !*value || (k == 0 && strlen(value) >= sizeof o->probe_url)) {
        fprintf(stderr, "attention-server: %s needs %s\n", names[k], needs[k]);
        return -1;
    }
    if (k == 0) {
        strcpy(o->probe_url, value);
        o->mode = SRV_MODE_PROBE;
        return 1;
    }
    if (seen[k]++ == 0) { /* the flags replace the variable */
        if (k == 1) o->n_tokenizers = 0;
        else o->n_models = 0;
    }
    int rc = k == 1 ? add_tokenizer(o, value, strlen(value), "--tokenizer") : add_model(o, value);
    return rc != 0 ? -1 : 1;
}

/* The command line; *healthcheck when --healthcheck is there. */
static int from_flags(srv_options *o, int argc, char **argv, int *healthcheck) {
    int seen[3] = {0};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) { o->mode = SRV_MODE_HELP; return 0; }
        if (strcmp(arg, "--version") == 0) { o->mode = SRV_MODE_VERSION; return 0; }
        if (strcmp(arg, "--healthcheck") == 0) { *healthcheck = 1; continue; }
        int special = special_flag(o, argc, argv, &i, seen);
        if (special < 0) return -1;
        if (special) continue;
        /* --flag value or --flag=value */
        const char *eq = strchr(arg, '=');
        size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        const opt_def *d = NULL;
        for (size_t k = 0; k < N_DEFS && !d; k++)
            if (strlen(defs[k].flag) == name_len && strncmp(arg, defs[k].flag, name_len) == 0) d = &defs[k];
        if (!d) {
            fprintf(stderr, "attention-server: unknown option '%.64s'\n", arg);
            return -1;
        }
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!value) {
            fprintf(stderr, "attention-server: %s needs a value\n", d->flag);
            return -1;
        }
        if (set_value(o, d, value, d->flag) != 0) return -1;
    }
    return 0;
}

/* --healthcheck: probe /healthz where the server listens (a server bound
 * to every interface is probed on loopback). */
static void healthcheck_url(srv_options *o) {
    const char *h = o->host;
    if (strcmp(h, "0.0.0.0") == 0 || strcmp(h, "") == 0) h = "127.0.0.1";
    else if (strcmp(h, "::") == 0) h = "::1";
    int v6 = strchr(h, ':') != NULL;
    snprintf(o->probe_url, sizeof o->probe_url, "http://%s%s%s:%d/healthz", v6 ? "[" : "", h,
             v6 ? "]" : "", o->port);
    o->mode = SRV_MODE_PROBE;
}

int srv_options_parse(srv_options *o, int argc, char **argv) {
    const char *argv0 = argc > 0 ? argv[0] : "attention-server";
    set_defaults(o);
    int healthcheck = 0;
    if (from_environment(o) != 0 || from_flags(o, argc, argv, &healthcheck) != 0) return fail(argv0);
    if (o->mode == SRV_MODE_HELP || o->mode == SRV_MODE_VERSION) return 0;
    srv_cors cors;
    char err[160];
    if (srv_cors_parse(&cors, o->cors_origin, err, sizeof err) != 0) {
        fprintf(stderr, "attention-server: --cors-origin: %s\n", err);
        return fail(argv0);
    }
    if (api_weights_mode_parse(o->weights_dtype, &o->weights_mode) != 0) {
        fprintf(stderr, "attention-server: --weights-dtype (ATTN_WEIGHTS_DTYPE): '%.32s' is not "
                "keep, f32 or bf16\n", o->weights_dtype);
        return fail(argv0);
    }
    if (healthcheck && o->mode != SRV_MODE_PROBE) healthcheck_url(o);
    return 0;
}
