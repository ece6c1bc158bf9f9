/* budget.c - see budget.h. One mutex and one condition variable. */
#include "budget.h"

#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A request waiting for memory, on its worker's stack, in arrival order. */
typedef struct budget_waiter {
    struct budget_waiter *next;
    size_t bytes;             /* what it waits for */
    size_t held;              /* what it holds already (a grower: more than 0) */
    int granted;              /* hand_out gave it the bytes */
} budget_waiter;

struct srv_budget {
    pthread_mutex_t mu;
    pthread_cond_t freed;     /* CLOCK_MONOTONIC */
    size_t limit, reserved, peak;
    int waiting;
    int stopping;             /* srv_budget_stop: no more waiting */
    size_t held_by_waiters;   /* what the waiting requests hold already */
    budget_waiter *first, *last; /* the waiting requests */
    unsigned long long waits, refused[4];
    unsigned long long trims; /* free arena memory given back to keep within the limit */
};

typedef signed char v16 __attribute__((vector_size(16)));

static int any_lane(v16 m) {
    unsigned long long w[2];
    memcpy(w, &m, sizeof w);
    return (w[0] | w[1]) != 0;
}

/* Brackets and separators, 16 bytes at a time. A lane gains -1 (true) at
 * most once a step: 127 steps before it could overflow, then the lanes are
 * summed. */
static void count_structure(const char *body, size_t len, size_t *open, size_t *sep,
                            size_t *quote) {
    size_t o_n = 0, s_n = 0, q_n = 0, i = 0;
    while (len - i >= 16 * 127) {
        v16 o = {0}, s = {0}, q = {0};
        for (int k = 0; k < 127; k++, i += 16) {
            v16 c;
            memcpy(&c, body + i, sizeof c);
            o += (c == '[') + (c == '{');
            s += (c == ',') + (c == ':');
            q += c == '"';
        }
        for (int k = 0; k < 16; k++)
            o_n -= (size_t)(long)o[k], s_n -= (size_t)(long)s[k], q_n -= (size_t)(long)q[k];
    }
    for (; i < len; i++) {
        char c = body[i];
        o_n += c == '[' || c == '{';
        s_n += c == ',' || c == ':';
        q_n += c == '"';
    }
    *open = o_n, *sep = s_n, *quote = q_n;
}

/* The bytes inside strings (total, and the longest string), and the
 * longest token outside them (an upper bound: a run of 16-byte blocks free
 * of separators, brackets, quotes and white space, plus a block's worth on
 * either side). Blocks without a quote or a backslash are taken whole. */
typedef struct {
    size_t total, longest, in_run, longest_run;
    int in, esc;
} strings;

static void scan_bytes(strings *st, const char *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char c = b[i];
        if (!st->in) {
            if (c == '"') st->in = 1, st->in_run = 0;
        } else if (st->esc) {
            st->esc = 0, st->in_run++;
        } else if (c == '\\') {
            st->esc = 1, st->in_run++;
        } else if (c == '"') {
            st->in = 0;
            st->total += st->in_run;
            if (st->in_run > st->longest) st->longest = st->in_run;
        } else {
            st->in_run++;
        }
    }
}

static void scan_strings(const char *body, size_t len, strings *st) {
    size_t i = 0, run = 0, longest_run = 0;
    for (; len - i >= 16; i += 16) {
        v16 c;
        memcpy(&c, body + i, sizeof c);
        v16 qb = (c == '"') | (c == '\\');
        /* Bytes that end a token outside strings, and a few more (control
         * bytes and bytes over 0x7f, which are signed here, '|'): none can
         * be inside a number or a literal, so the runs only get shorter
         * where no token could be longer. */
        v16 up = c | 0x20;
        v16 brk = (c <= ' ') | (up == '{') | (up == '}') | (up == '|') | (c == ',') | (c == ':') | qb;
        if (any_lane(brk)) {
            longest_run = run > longest_run ? run : longest_run;
            run = 0;
        } else {
            run += 16;
        }
        if (__builtin_expect(any_lane(qb) || st->esc, 0)) scan_bytes(st, body + i, 16);
        else if (st->in) st->in_run += 16;
    }
    scan_bytes(st, body + i, len - i);
    if (st->in) { /* unterminated: its text was kept all the same */
        st->total += st->in_run;
        if (st->in_run > st->longest) st->longest = st->in_run;
    }
    st->longest_run = run > longest_run ? run : longest_run;
}

size_t srv_budget_parse_estimate(const char *body, size_t len) {
    size_t open, sep, quote;
    count_structure(body, len, &open, &sep, &quote);
    strings st = {0};
    scan_strings(body, len, &st);
    size_t token = st.longest_run + 32; /* a token outside strings reaches into two blocks */
    if (st.longest > token) token = st.longest;
    /* len < 2^48: no overflow */
    return len + open * SRV_PARSE_PER_OPEN + (sep + 1) * SRV_PARSE_PER_SEP +
           quote * SRV_PARSE_PER_QUOTE + st.total + 3 * token + SRV_PARSE_BASE;
}

srv_budget *srv_budget_create(size_t limit) {
    srv_budget *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0) goto fail;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&b->freed, &ca);
    pthread_condattr_destroy(&ca);
    if (rc != 0) goto fail;
    if (pthread_mutex_init(&b->mu, NULL) != 0) {
        pthread_cond_destroy(&b->freed);
        goto fail;
    }
    b->limit = limit;
    return b;
fail:
    free(b);
    return NULL;
}

void srv_budget_destroy(srv_budget *b) {
    if (!b) return;
    pthread_cond_destroy(&b->freed);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void srv_budget_tune_malloc(size_t limit, int threads) {
    size_t top = limit / 2 / (size_t)(threads > 0 ? threads : 1);
    if (top > (size_t)64 << 20) top = (size_t)64 << 20;
    if (top < (size_t)128 << 10) top = (size_t)128 << 10;
    mallopt(M_ARENA_MAX, threads);
    mallopt(M_TRIM_THRESHOLD, (int)top);
}

/* Freed memory stays in malloc's arenas, mapped and warm, for the next
 * request (server/main.c): no page faults when it is reused. What the budget
 * has granted plus what sits free in the arenas must stay within the limit,
 * else the arenas give their free pages back to the system first. Called
 * with the mutex held, after a grant. */
static void keep_warm_within_limit(srv_budget *b) {
    struct mallinfo2 mi = mallinfo2();
    if (mi.fordblks > b->limit - b->reserved) {
        malloc_trim(0);
        b->trims++;
    }
}

static void grant(srv_budget *b, size_t bytes) {
    b->reserved += bytes;
    if (b->reserved > b->peak) b->peak = b->reserved;
}

/* Memory was released: the waiting requests that fit now get it, before
 * any new request can take it; those that hold memory already first, each
 * kind in order of arrival. A waiter that does not fit yet is passed over
 * (the ones behind it may fit). */
static void hand_out(srv_budget *b) {
    int any = 0;
    for (int grower = 1; grower >= 0; grower--)
        for (budget_waiter *w = b->first; w; w = w->next)
            if (!w->granted && (w->held > 0) == grower && w->bytes <= b->limit - b->reserved) {
                grant(b, w->bytes);
                w->granted = any = 1;
                b->waiting--;
                b->held_by_waiters -= w->held;
            }
    if (any) keep_warm_within_limit(b);
    pthread_cond_broadcast(&b->freed);
}

static void enqueue(srv_budget *b, budget_waiter *w) {
    if (b->last) b->last->next = w;
    else b->first = w;
    b->last = w;
    b->waiting++;
    b->held_by_waiters += w->held;
}

static void dequeue(srv_budget *b, budget_waiter *w) {
    budget_waiter **p = &b->first, *prev = NULL;
    while (*p != w) prev = *p, p = &(*p)->next;
    *p = w->next;
    if (b->last == w) b->last = prev;
    if (!w->granted) {
        b->waiting--;
        b->held_by_waiters -= w->held;
    }
}

/* Waits in line until hand_out grants w, the deadline passes or the server
 * stops; a grower gives up (STUCK) when everything reserved is held by
 * waiting requests: nothing would ever be released. */
static srv_budget_result wait_in_line(srv_budget *b, budget_waiter *w, double deadline) {
    enqueue(b, w);
    srv_budget_result r = SRV_BUDGET_OK;
    time_t sec = (time_t)deadline;
    struct timespec ts = {sec, (long)((deadline - (double)sec) * 1e9)};
    while (!w->granted) {
        if (w->held > 0 && b->held_by_waiters == b->reserved) r = SRV_BUDGET_STUCK;
        else if (now_s() >= deadline || b->stopping) r = SRV_BUDGET_TIMEOUT;
        if (r != SRV_BUDGET_OK) break;
        pthread_cond_timedwait(&b->freed, &b->mu, &ts);
    }
    dequeue(b, w);
    return w->granted ? SRV_BUDGET_OK : r;
}

srv_budget_result srv_budget_reserve(srv_budget *b, size_t *held, size_t bytes, double deadline) {
    srv_budget_result r = SRV_BUDGET_OK;
    pthread_mutex_lock(&b->mu);
    if (bytes > b->limit || *held > b->limit - bytes) {
        r = SRV_BUDGET_NEVER;
    } else if (bytes <= b->limit - b->reserved) { /* fits: taken, whoever waits */
        grant(b, bytes);
        keep_warm_within_limit(b);
    } else if (*held > 0 && b->held_by_waiters + *held == b->reserved) {
        r = SRV_BUDGET_STUCK; /* everything else reserved waits too: nothing will be released */
    } else if (now_s() >= deadline || b->stopping) {
        r = SRV_BUDGET_TIMEOUT;
    } else {
        budget_waiter w = {.bytes = bytes, .held = *held};
        b->waits++;
        r = wait_in_line(b, &w, deadline);
    }
    if (r == SRV_BUDGET_OK) *held += bytes;
    else b->refused[r]++;
    pthread_mutex_unlock(&b->mu);
    return r;
}

void srv_budget_release(srv_budget *b, size_t *held) {
    if (!b || *held == 0) return;
    pthread_mutex_lock(&b->mu);
    b->reserved -= *held;
    *held = 0;
    hand_out(b);
    pthread_mutex_unlock(&b->mu);
}

void srv_budget_stop(srv_budget *b) {
    if (!b) return;
    pthread_mutex_lock(&b->mu);
    b->stopping = 1;
    pthread_cond_broadcast(&b->freed);
    pthread_mutex_unlock(&b->mu);
}

void srv_budget_get_stats(srv_budget *b, srv_budget_stats *st) {
    pthread_mutex_lock(&b->mu);
    st->limit = b->limit;
    st->reserved = b->reserved;
    st->peak = b->peak;
    st->trims = b->trims;
    st->waiting = b->waiting;
    st->waits = b->waits;
    memcpy(st->refused, b->refused, sizeof st->refused);
    pthread_mutex_unlock(&b->mu);
}

/* ==== The default ======================================================= */

/* A limit in bytes from a cgroup file; 0 when unset ("max", or v1's huge value). */
static size_t read_limit(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    unsigned long long v = 0;
    int ok = fscanf(f, "%llu", &v) == 1;
    fclose(f);
    if (!ok || v >= (1ULL << 60) || v > SIZE_MAX) return 0;
    return (size_t)v;
}

/* The smallest limit in file `name` under root+path and its ancestors. */
static size_t limit_along(const char *root, char *path, const char *name) {
    size_t best = 0;
    for (;;) {
        char file[1024];
        snprintf(file, sizeof file, "%s%s/%s", root, strcmp(path, "/") == 0 ? "" : path, name);
        size_t v = read_limit(file);
        if (v && (!best || v < best)) best = v;
        char *slash = strrchr(path, '/');
        if (!slash || slash == path) {
            if (strcmp(path, "/") == 0) break;
            strcpy(path, "/");
            continue;
        }
        *slash = '\0';
    }
    return best;
}

/* The cgroup memory limit of this process, 0 if none; *v2 says which kind. */
static size_t cgroup_limit(int *v2) {
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return 0;
    char line[1024];
    size_t best = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2[1] != '/') continue;
        char path[512];
        snprintf(path, sizeof path, "%s", c2 + 1);
        size_t v = 0;
        int is_v2 = c2 == c1 + 1;   /* "0::/path" */
        if (is_v2) {
            v = limit_along("/sys/fs/cgroup", path, "memory.max");
        } else {
            *c2 = '\0';
            char controllers[256];
            snprintf(controllers, sizeof controllers, ",%s,", c1 + 1);
            if (!strstr(controllers, ",memory,")) continue;
            v = limit_along("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes");
        }
        if (v && (!best || v < best)) {
            best = v;
            *v2 = is_v2;
        }
    }
    fclose(f);
    return best;
}

size_t srv_budget_max_elements(size_t limit) {
    size_t half = limit / 2 / sizeof(float);
    return half > SRV_MIN_MAX_ELEMENTS ? half : SRV_MIN_MAX_ELEMENTS;
}

size_t srv_budget_default(char *how, size_t how_size) {
    int v2 = 0;
    size_t base = cgroup_limit(&v2);
    const char *from = v2 ? "cgroup memory.max" : "cgroup memory.limit_in_bytes";
    if (!base) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        base = pages > 0 && page > 0 ? (size_t)pages * (size_t)page / 2 : (size_t)1 << 30;
        from = "half the physical memory";
    }
    size_t margin = base / 4 > ((size_t)64 << 20) ? base / 4 : ((size_t)64 << 20);
    size_t budget = base > margin + ((size_t)64 << 20) ? base - margin : ((size_t)64 << 20);
    snprintf(how, how_size, "%s %.2f GiB minus a margin of %.2f GiB", from,
             (double)base / (1 << 30), (double)margin / (1 << 30));
    return budget;
}
