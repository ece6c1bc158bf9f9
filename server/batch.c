/* batch.c - the generations' steps taken together, see batch.h. */
#include "batch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef enum { M_AWAY, M_BUSY, M_READY, M_STEPPING } member_state;

struct srv_batch_member {
    member_state state;
    int done, rc;
    attn_lm_cache *cache;
    const void *params;
    const int32_t *tokens;
    float *logits;
    int vocab, seqs;
    size_t cache_bytes;
    attn_pool *pool;
    attn_error err;
    srv_batch_member *next;
};

struct srv_batch {
    pthread_mutex_t mu;
    pthread_cond_t change;
    srv_batch_member *members;
    int busy, stepping, max_rows;
    srv_batch_stats stats;
};

srv_batch *srv_batch_create(int max_rows) {
    srv_batch *b = calloc(1, sizeof *b);
    if (b == NULL) return NULL;
    b->max_rows = max_rows < 1 ? 1 : max_rows;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int ok = pthread_mutex_init(&b->mu, NULL) == 0;
    if (ok && pthread_cond_init(&b->change, &ca) != 0) {
        pthread_mutex_destroy(&b->mu);
        ok = 0;
    }
    pthread_condattr_destroy(&ca);
    if (!ok) {
        free(b);
        return NULL;
    }
    return b;
}

void srv_batch_destroy(srv_batch *b) {
    if (b == NULL) return;
    pthread_cond_destroy(&b->change);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

srv_batch_member *srv_batch_join(srv_batch *b) {
    srv_batch_member *m = calloc(1, sizeof *m);
    if (m == NULL) return NULL;
    m->state = M_AWAY;
    pthread_mutex_lock(&b->mu);
    m->next = b->members;
    b->members = m;
    pthread_mutex_unlock(&b->mu);
    return m;
}

/* m's state set, the count of busy members kept; b->mu held. */
static void set_state(srv_batch *b, srv_batch_member *m, member_state s) {
    b->busy += (s == M_BUSY) - (m->state == M_BUSY);
    m->state = s;
    pthread_cond_broadcast(&b->change);
}

void srv_batch_leave(srv_batch *b, srv_batch_member *m) {
    if (m == NULL) return;
    pthread_mutex_lock(&b->mu);
    set_state(b, m, M_AWAY);
    for (srv_batch_member **at = &b->members; *at; at = &(*at)->next)
        if (*at == m) {
            *at = m->next;
            break;
        }
    pthread_mutex_unlock(&b->mu);
    free(m);
}

void srv_batch_away(srv_batch *b, srv_batch_member *m) {
    if (m == NULL) return;
    pthread_mutex_lock(&b->mu);
    if (m->state == M_BUSY) set_state(b, m, M_AWAY);
    pthread_mutex_unlock(&b->mu);
}

void srv_batch_back(srv_batch *b, srv_batch_member *m) {
    if (m == NULL) return;
    pthread_mutex_lock(&b->mu);
    if (m->state == M_AWAY) set_state(b, m, M_BUSY);
    pthread_mutex_unlock(&b->mu);
}

/* The members the leader's step takes (leader first): ready, of its model,
 * within max_rows; each marked stepping. Their count; b->mu held. */
static int take(srv_batch *b, srv_batch_member *leader, srv_batch_member **took, int most) {
    int n = 0, rows = 0;
    took[n++] = leader, rows += leader->seqs;
    set_state(b, leader, M_STEPPING);
    for (srv_batch_member *m = b->members; m && n < most; m = m->next)
        if (m->state == M_READY && m->params == leader->params && rows + m->seqs <= b->max_rows) {
            took[n++] = m, rows += m->seqs;
            set_state(b, m, M_STEPPING);
        }
    return n;
}

/* Each member alone (one member, or a failed step: its error is found). */
static void alone(srv_batch_member *m) {
    attn_lm_step_outputs so = {.logits = m->logits};
    m->rc = attn_lm_decode(m->cache, m->params, m->tokens, m->pool, &so, &m->err);
}

/* The rows of took[0..n) in one step, each member's logits copied out. */
static void step_together(srv_batch_member **took, int n, int rows) {
    attn_lm_cache *caches[64];
    attn_lm_row *row = malloc((size_t)rows * sizeof *row);
    float *logits = malloc((size_t)rows * (size_t)took[0]->vocab * sizeof *logits);
    int rc = row && logits ? ATTN_OK : ATTN_ERR_NOMEM, at = 0;
    for (int k = 0; rc == ATTN_OK && k < n; k++) {
        caches[k] = took[k]->cache;
        for (int s = 0; s < took[k]->seqs; s++, at++)
            row[at] = (attn_lm_row){.seq = at, .token = took[k]->tokens[s], .pos = -1};
    }
    attn_lm_step_outputs so = {.logits = logits};
    attn_error err = {0};
    if (rc == ATTN_OK) rc = attn_lm_step_caches(caches, n, took[0]->params, row, rows, took[0]->pool, &so, &err);
    size_t off = 0;
    for (int k = 0; k < n; k++) {
        size_t len = (size_t)took[k]->seqs * (size_t)took[k]->vocab;
        if (rc == ATTN_OK) memcpy(took[k]->logits, logits + off, len * sizeof *logits), took[k]->rc = ATTN_OK;
        else alone(took[k]); /* each finds its own error, or succeeds alone */
        off += len;
    }
    free(row);
    free(logits);
}

/* Leads one step: the members taken, the step run outside the lock, the
 * results handed back. b->mu held on entry and exit. */
static void lead(srv_batch *b, srv_batch_member *leader) {
    srv_batch_member *took[64];
    int n = take(b, leader, took, 64), rows = 0;
    for (int k = 0; k < n; k++) rows += took[k]->seqs;
    b->stepping = 1;
    pthread_mutex_unlock(&b->mu);
    if (n == 1) alone(leader);
    else step_together(took, n, rows);
    pthread_mutex_lock(&b->mu);
    b->stepping = 0;
    for (int k = 0; k < n; k++) took[k]->done = 1, set_state(b, took[k], M_BUSY);
    int bin = 0;
    while (bin < 7 && rows > (1 << bin)) bin++;
    b->stats.steps++;
    b->stats.rows += (unsigned long long)rows;
    b->stats.by_rows[bin]++;
    pthread_cond_broadcast(&b->change);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Waits on b->change until `until` (monotonic milliseconds). */
static void wait_until(srv_batch *b, double until) {
    struct timespec ts = {.tv_sec = (time_t)(until / 1e3)};
    ts.tv_nsec = (long)((until - (double)ts.tv_sec * 1e3) * 1e6);
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    if (ts.tv_nsec < 0) ts.tv_nsec = 0;
    pthread_cond_timedwait(&b->change, &b->mu, &ts);
}

int srv_batch_decode(srv_batch *b, srv_batch_member *m, attn_lm_cache *cache, const void *params,
                     const int32_t *tokens, float *logits, int vocab, attn_pool *pool,
                     attn_error *err) {
    if (m == NULL) {
        attn_lm_step_outputs so = {.logits = logits};
        return attn_lm_decode(cache, params, tokens, pool, &so, err);
    }
    pthread_mutex_lock(&b->mu);
    *m = (srv_batch_member){.state = m->state, .cache = cache, .params = params, .tokens = tokens,
                            .logits = logits, .vocab = vocab, .seqs = attn_lm_cache_seqs(cache),
                            .pool = pool, .next = m->next,
                            .cache_bytes = m->cache ? m->cache_bytes : attn_lm_cache_size(cache)};
    set_state(b, m, M_READY);
    double late = now_ms() + SRV_BATCH_WAIT_MS; /* go without the busy ones then */
    while (!m->done) {
        if (m->state == M_READY && !b->stepping && (b->busy == 0 || now_ms() >= late)) lead(b, m);
        else if (m->state == M_READY && !b->stepping && b->busy) wait_until(b, late);
        else pthread_cond_wait(&b->change, &b->mu);
    }
    int rc = m->rc;
    if (rc != ATTN_OK && err) *err = m->err;
    pthread_mutex_unlock(&b->mu);
    return rc;
}

void srv_batch_get_stats(srv_batch *b, srv_batch_stats *s) {
    memset(s, 0, sizeof *s);
    if (b == NULL) return;
    pthread_mutex_lock(&b->mu);
    *s = b->stats;
    for (srv_batch_member *m = b->members; m; m = m->next) {
        s->members++;
        s->away += m->state == M_AWAY;
        s->cache_bytes += m->cache_bytes;
    }
    pthread_mutex_unlock(&b->mu);
}
