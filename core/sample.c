/* sample.c - the next token from one row of logits, as PyTorch 1.13 chooses
 * it on the CPU: greedy (torch.argmax), or the book's generate() (Raschka,
 * ch. 5: top-k with torch.topk and torch.where, logits / temperature,
 * torch.softmax, torch.multinomial) with Hugging Face's TopPLogitsWarper
 * and MinPLogitsWarper (transformers' order: min_p after top_p) between the
 * temperature and the softmax; and the model's own
 * log-probabilities (log_softmax of the raw logits) of the chosen token and
 * of the most likely ones.
 *
 * torch.multinomial(probs, 1) on the CPU is argmax(probs / q) with
 * q = torch.empty_like(probs).exponential_(1) (Distributions.cpp, the
 * Gumbel trick): one exponential draw per vocabulary entry and step. The
 * softmax is PyTorch's AVX2 kernel bit for bit (torchmath.c), so the ratios
 * and the token are PyTorch's.
 */
#include "internal.h"
#include "torchmath.h"

#include <math.h>
#include <string.h>

void attn_softmax_torch(const float *x, float *y, size_t n) {
    if (n == 0) return;
    float m = attn__torch_row_max(x, n);
    float inv = 1.0f / attn__torch_exp_sum(x, y, m, n); /* tmp_sum = 1 / tmp_sum */
    for (size_t i = 0; i < n; i++) y[i] = y[i] * inv;
}

/* ==== Sizes and checks ====================================================== */

static int wants_draw(const attn_sampler *opt) {
    return opt->temperature > 0.0;
}

static int wants_top_p(const attn_sampler *opt) {
    return wants_draw(opt) && opt->top_p < 1.0;
}

static int wants_min_p(const attn_sampler *opt) {
    return wants_draw(opt) && opt->min_p > 0.0;
}

size_t attn_sample_scratch_size(const attn_sampler *opt, int n_vocab) {
    size_t per = 0;
    if (n_vocab < 1) return 0;
    if (opt == NULL || wants_draw(opt)) per += sizeof(float);          /* the row */
    if (opt == NULL || wants_top_p(opt) || wants_min_p(opt))
        per += 2 * sizeof(attn__kv); /* sorting; min_p's probabilities */
    size_t bytes;
    return attn__mul((size_t)n_vocab, per, &bytes) ? bytes : 0;
}

static int check_options(const attn_sampler *opt, int n_vocab, attn_error *err) {
    if (opt == NULL) return attn__fail(err, ATTN_ERR_ARG, "sampler", "no sampler options");
    if (n_vocab < 1)
        return attn__fail(err, ATTN_ERR_ARG, "n_vocab", "a row of %d logits (at least 1)", n_vocab);
    if (!(opt->temperature >= 0.0) || isinf(opt->temperature))
        return attn__fail(err, ATTN_ERR_ARG, "temperature",
                          "temperature must be 0 (greedy) or a finite positive number");
    if (opt->top_k < 0)
        return attn__fail(err, ATTN_ERR_ARG, "top_k", "top_k is %d: 0 (off) or at least 1",
                          opt->top_k);
    if (!(opt->top_p >= 0.0 && opt->top_p <= 1.0))
        return attn__fail(err, ATTN_ERR_ARG, "top_p", "top_p must be in [0, 1] (1: off)");
    if (!(opt->min_p >= 0.0 && opt->min_p <= 1.0))
        return attn__fail(err, ATTN_ERR_ARG, "min_p", "min_p must be in [0, 1] (0: off)");
    return ATTN_OK;
}

/* The raw logits: no NaN, no +inf, and at least one finite (-inf entries are
 * tokens ruled out). Their maximum in *max. */
static int check_logits(const float *logits, int n, float *max, attn_error *err) {
    float m = -INFINITY;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        float v = logits[i];
        bad |= isnan(v) || v == INFINITY;
        m = v > m ? v : m;
    }
    if (bad)
        return attn__fail(err, ATTN_ERR_NONFINITE, "logits", "logits hold NaN or +infinity");
    if (m == -INFINITY)
        return attn__fail(err, ATTN_ERR_NONFINITE, "logits", "every logit is -infinity");
    *max = m;
    return ATTN_OK;
}

/* ==== Filters ================================================================ */

/* A float's bits as an unsigned key in the order of the floats. */
static inline uint32_t order_key(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}

/* The digit d (of 8 bits at shift) of the count[256] in which the rank-th
 * largest lies; rank becomes its rank within that digit. */
static int digit_of_rank(const size_t count[256], size_t *rank) {
    int d = 255;
    while (count[d] < *rank) *rank -= count[d--];
    return d;
}

/* torch.topk(x, k).values[-1]: the k-th largest of x[0..n) (1 <= k <= n),
 * by an MSB-first radix select over the keys: one pass over x for the top
 * byte, the keys of that byte copied to work (n floats), three passes there. */
static float kth_largest(const float *x, int n, int k, uint32_t *work) {
    size_t count[256] = {0}, rank = (size_t)k, m = 0;
    for (int i = 0; i < n; i++) count[order_key(x[i]) >> 24]++;
    uint32_t prefix = (uint32_t)digit_of_rank(count, &rank) << 24;
    for (int i = 0; i < n; i++) {
        uint32_t key = order_key(x[i]);
        if ((key >> 24) == (prefix >> 24)) work[m++] = key;
    }
    for (int shift = 16; shift >= 0; shift -= 8) {
        uint32_t mask = 0xffffffffu << (shift + 8);
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < m; i++)
            if ((work[i] & mask) == prefix) count[(work[i] >> shift) & 0xffu]++;
        prefix |= (uint32_t)digit_of_rank(count, &rank) << shift;
    }
    uint32_t u = (prefix & 0x80000000u) ? prefix & 0x7fffffffu : ~prefix;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The book's filter, then the temperature: z = where(x < kth, -inf, x) / t
 * (float32 / float(t), as tensor / python float). Fails when a quotient
 * overflows to +inf or nothing finite is left (PyTorch's softmax would give
 * NaN and torch.multinomial refuse it). */
static int filter_scale(const attn_sampler *opt, const float *x, int n, float *z,
                        attn_error *err) {
    float thr = -INFINITY, t = (float)opt->temperature;
    if (opt->top_k > 0 && opt->top_k < n) thr = kth_largest(x, n, opt->top_k, (uint32_t *)z);
    if (t == 0.0f)
        return attn__fail(err, ATTN_ERR_NONFINITE, "temperature",
                          "temperature %g is 0 in float32", opt->temperature);
    float m = -INFINITY;
    for (int i = 0; i < n; i++) {
        z[i] = x[i] < thr ? -INFINITY : x[i] / t;
        m = z[i] > m ? z[i] : m;
    }
    if (m == INFINITY || m == -INFINITY)
        return attn__fail(err, ATTN_ERR_NONFINITE, "temperature",
                          "logits / temperature %g leave no finite maximum", opt->temperature);
    return ATTN_OK;
}

/* kv[0..n) sorted by value, ascending, equal values in index order (an LSD
 * radix sort on the keys, stable): four passes through tmp and back. */
static void radix_sort_kv(attn__kv *kv, attn__kv *tmp, int n) {
    for (int shift = 0; shift < 32; shift += 8) {
        size_t count[257] = {0};
        for (int i = 0; i < n; i++) count[((order_key(kv[i].value) >> shift) & 0xffu) + 1]++;
        for (int d = 0; d < 256; d++) count[d + 1] += count[d];
        for (int i = 0; i < n; i++) tmp[count[(order_key(kv[i].value) >> shift) & 0xffu]++] = kv[i];
        attn__kv *t = kv;
        kv = tmp;
        tmp = t;
    }
}

/* How many of the sorted values TopPLogitsWarper removes (a prefix):
 *   cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
 *   remove = cumulative_probs <= (1 - top_p); remove[..., -1:] = 0
 * cumsum of float32 on the CPU accumulates in double and rounds each sum
 * to float; the comparison rounds 1 - top_p to float32. sorted is
 * overwritten with the softmax. */
static int top_p_cut(double top_p, float *sorted, int n) {
    attn_softmax_torch(sorted, sorted, (size_t)n);
    float limit = (float)(1.0 - top_p);
    double cum = 0.0;
    int m = 0;
    for (; m < n - 1; m++) {
        cum += (double)sorted[m];
        if (!((float)cum <= limit)) break; /* the sums only grow */
    }
    return m;
}

/* TopPLogitsWarper(top_p) on z[0..n), in place. Which tokens go depends on
 * torch.sort's order of equal values only when equal values straddle the
 * cut: the values are sorted by a radix sort, and only then is PyTorch's
 * std::sort (torchsort.c) run for the order. kv, tmp: n entries each. */
static void top_p_filter(double top_p, float *z, int n, attn__kv *kv, attn__kv *tmp) {
    for (int i = 0; i < n; i++) kv[i] = (attn__kv){z[i], i};
    radix_sort_kv(kv, tmp, n);
    float *sorted = (float *)tmp;
    for (int i = 0; i < n; i++) sorted[i] = kv[i].value;
    int m = top_p_cut(top_p, sorted, n);
    if (m > 0 && kv[m - 1].value == kv[m].value) {
        for (int i = 0; i < n; i++) kv[i] = (attn__kv){z[i], i};
        attn__torch_sort_ascending(kv, (size_t)n);
    }
    for (int j = 0; j < m; j++) z[kv[j].index] = -INFINITY;
}

/* MinPLogitsWarper(min_p) on z[0..n), in place:
 *   probs = torch.softmax(scores); top_probs = probs.max()
 *   tokens_to_remove = probs < min_p * top_probs   (float32 product)
 * min_tokens_to_keep 1 never matters: the most likely token always stays
 * (min_p <= 1). probs: n floats. */
static void min_p_filter(double min_p, float *z, int n, float *probs) {
    attn_softmax_torch(z, probs, (size_t)n);
    float top = probs[0];
    for (int i = 1; i < n; i++) top = probs[i] > top ? probs[i] : top;
    float limit = (float)min_p * top;
    for (int i = 0; i < n; i++)
        if (probs[i] < limit) z[i] = -INFINITY;
}

/* ==== The draw ================================================================ */

/* torch.multinomial(p, 1): argmax(p / q), q[i] = (float)(-log(1 - u_i)) from
 * exponential_(1), first index on ties, and a NaN (0 / 0 when a draw is
 * exactly 0 and its p is 0) taken first, as torch.argmax's GreaterOrNan.
 * Every entry draws (two outputs, in blocks). The log is taken only where
 * the ratio could win: -log(1 - u) >= u, and the computed q and quotient
 * lose less than 2^-22 of it, so p / u * (1 + 2^-21) < best proves that
 * p / q < best; for p = 0 the ratio is 0 unless u is 0. */
static int multinomial_one(const float *p, int n, attn_rng *rng) {
    enum { PAIRS = 256 };
    uint32_t w[2 * PAIRS];
    int best = 0;
    float best_r = 0.0f;
    for (int base = 0; base < n; base += PAIRS) {
        int m = n - base < PAIRS ? n - base : PAIRS;
        attn__rng_u32_fill(rng, w, 2 * (size_t)m);
        for (int k = 0; k < m; k++) {
            int i = base + k;
            uint64_t bits = (((uint64_t)w[2 * k] << 32) | w[2 * k + 1]) & ((UINT64_C(1) << 53) - 1);
            if (i > 0 && bits != 0 &&
                (isnan(best_r) || (double)p[i] * (9007199254740992.0 * (1.0 + 0x1p-21)) <
                                      (double)best_r * (double)bits))
                continue;
            float r = p[i] / attn__exponential_of(bits, 1.0);
            if (i == 0 || (!isnan(best_r) && (isnan(r) || r > best_r))) {
                best = i;
                best_r = r;
            }
        }
    }
    return best;
}

/* torch.argmax: the first largest. */
static int argmax_first(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* ==== Log-probabilities ======================================================= */

/* "a is less likely than b": lower log-probability, or equal and a higher id. */
static inline int worse(attn_token_logprob a, attn_token_logprob b) {
    return a.logprob < b.logprob || (a.logprob == b.logprob && a.id > b.id);
}

static void sift_down(attn_token_logprob *h, int n, int i) {
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n) return;
        if (c + 1 < n && worse(h[c + 1], h[c])) c++;
        if (!worse(h[c], h[i])) return;
        attn_token_logprob t = h[i];
        h[i] = h[c];
        h[c] = t;
        i = c;
    }
}

/* The n_top most likely of the row, most likely first (ties: lower id
 * first), kept in a heap of the caller's array whose root is the least
 * likely kept. lp(i) = (x[i] - max) - log_sum, log_softmax's arithmetic. */
static void top_logprobs(const float *x, int n, float max, float log_sum,
                         attn_token_logprob *top, int n_top) {
    int kept = 0;
    for (int i = 0; i < n && n_top > 0; i++) {
        attn_token_logprob c = {i, (x[i] - max) - log_sum};
        if (kept < n_top) {
            int j = kept++;
            top[j] = c;
            while (j > 0 && worse(top[j], top[(j - 1) / 2])) { /* sift up */
                attn_token_logprob t = top[j];
                top[j] = top[(j - 1) / 2];
                top[(j - 1) / 2] = t;
                j = (j - 1) / 2;
            }
        } else if (worse(top[0], c)) {
            top[0] = c;
            sift_down(top, kept, 0);
        }
    }
    for (int end = kept - 1; end > 0; end--) { /* the least likely go to the end */
        attn_token_logprob t = top[0];
        top[0] = top[end];
        top[end] = t;
        sift_down(top, end, 0);
    }
}

/* ==== The calls ================================================================ */

/* The distribution of the draw into z[0..n): top-k and temperature, top-p,
 * min-p, softmax. kv: 2 n entries, for top-p and min-p. */
static int distribution(const attn_sampler *opt, const float *logits, int n, float *z,
                        attn__kv *kv, attn_error *err) {
    int rc = filter_scale(opt, logits, n, z, err);
    if (rc != ATTN_OK) return rc;
    if (wants_top_p(opt)) top_p_filter(opt->top_p, z, n, kv, kv + n);
    if (wants_min_p(opt)) min_p_filter(opt->min_p, z, n, (float *)kv);
    attn_softmax_torch(z, z, (size_t)n);
    return ATTN_OK;
}

/* The checks both entry points make: options, pointers, scratch, logits. */
static int check_call(const attn_sampler *opt, const float *logits, int n_vocab,
                      size_t scratch_need, const void *scratch, size_t scratch_size, float *max,
                      attn_error *err) {
    int rc = check_options(opt, n_vocab, err);
    if (rc != ATTN_OK) return rc;
    if (logits == NULL) return attn__fail(err, ATTN_ERR_ARG, "logits", "a NULL pointer");
    if (wants_draw(opt) && scratch_need == 0)
        return attn__fail(err, ATTN_ERR_RANGE, "n_vocab", "the scratch size overflows");
    if (scratch_need > 0 && (scratch == NULL || scratch_size < scratch_need))
        return attn__fail(err, ATTN_ERR_ARG, "scratch",
                          "scratch of %zu bytes; these options need %zu", scratch_size,
                          scratch_need);
    return check_logits(logits, n_vocab, max, err);
}

int attn_sample_probs(const attn_sampler *opt, const float *logits, int n_vocab, float *probs,
                      void *scratch, size_t scratch_size, attn_error *err) {
    if (opt != NULL && !wants_draw(opt))
        return attn__fail(err, ATTN_ERR_ARG, "temperature",
                          "temperature 0 is greedy: no distribution is drawn from");
    float max = 0.0f;
    size_t need = opt ? attn_sample_scratch_size(opt, n_vocab) : 0;
    int rc = check_call(opt, logits, n_vocab, need, scratch, scratch_size, &max, err);
    if (rc != ATTN_OK) return rc;
    if (probs == NULL) return attn__fail(err, ATTN_ERR_ARG, "probs", "a NULL pointer");
    attn__kv *kv = scratch ? (attn__kv *)((float *)scratch + n_vocab) : NULL;
    return distribution(opt, logits, n_vocab, probs, kv, err);
}

int attn_sample(const attn_sampler *opt, const float *logits, int n_vocab, attn_rng *rng,
                void *scratch, size_t scratch_size, attn_token_logprob *chosen,
                attn_token_logprob *top, int n_top, attn_error *err) {
    float max = 0.0f;
    size_t need = opt ? attn_sample_scratch_size(opt, n_vocab) : 0;
    int rc = check_call(opt, logits, n_vocab, need, scratch, scratch_size, &max, err);
    if (rc != ATTN_OK) return rc;
    if (chosen == NULL) return attn__fail(err, ATTN_ERR_ARG, "chosen", "a NULL pointer");
    if (n_top < 0 || n_top > n_vocab || (n_top > 0 && top == NULL))
        return attn__fail(err, ATTN_ERR_ARG, "n_top",
                          "n_top is %d: 0 .. n_vocab (%d), with room for as many", n_top, n_vocab);
    int id;
    if (!wants_draw(opt)) {
        id = argmax_first(logits, n_vocab);
    } else {
        if (rng == NULL) return attn__fail(err, ATTN_ERR_ARG, "rng", "sampling needs a generator");
        float *z = scratch;
        if ((rc = distribution(opt, logits, n_vocab, z, (attn__kv *)(z + n_vocab), err)) != ATTN_OK)
            return rc;
        id = multinomial_one(z, n_vocab, rng);
    }
    float log_sum = logf(attn__torch_exp_sum(logits, NULL, max, (size_t)n_vocab));
    chosen->id = id;
    chosen->logprob = (logits[id] - max) - log_sum;
    top_logprobs(logits, n_vocab, max, log_sum, top, n_top);
    return ATTN_OK;
}
