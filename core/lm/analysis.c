/* analysis.c - what each head does, read from a run's attention weights
 * as each block makes them (the from_maps rows of ATTN_ANALYSIS_MAP):
 * entropy, the sink, TransformerLens's three head detectors and attention
 * rollout; and the table's functions.
 *
 * Why inside the forward (attn_lm_outputs.analysis) and not a function over
 * maps the caller holds: block l's scores need block l's weights only, so a
 * run asked for the scores and not for the maps materialises one block's
 * [B][H][T][T] at a time (48 MB at T = 1,024 with 12 heads) instead of every
 * block's (580 MB for 12 blocks), and nothing is computed twice; a run that
 * returns the maps anyway has them read where they were written. The
 * rollout keeps one [B][T][T] of head means; the product it multiplies is
 * its own previous block's output.
 *
 * Per head (b, h) of block l, one pass over its weights P[q][k]:
 *   entropy          mean over q of -sum_k P ln P
 *   sink             mean over q >= 1 of P[q][0]
 *   previous_token   sum_q P[q][q-1] / sum P
 *   duplicate_token  sum over k < q with idx[k] == idx[q] of P[q][k] / sum P
 *   induction        sum over those k of P[q][k+1] / sum P
 * (the duplicates of q are the chain of previous occurrences, occ[]; the
 * induction pattern D[q][k] = dup[q][k-1] for 1 <= k <= q is the same chain
 * shifted by one). Sums in double.
 */
#include "core/linear.h"
#include "core/lm/lm.h"
#include "core/parallel.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* Columns of the rollout's product per item (a causal model's: strmm). */
#define ROLLOUT_COLS 128

static const attn_analysis_info analyses[ATTN_ANALYSIS_COUNT] = {
#define XX(id, name, shape, maps, what)                                                            \
    {ATTN_ANALYSIS_##id, name, ATTN_ANALYSIS_SHAPE_##shape, maps, what},
    ATTN_ANALYSIS_MAP(XX)
#undef XX
};

const attn_analysis_info *attn_analysis_get(attn_analysis a) {
    if ((int)a < 0 || a >= ATTN_ANALYSIS_COUNT) return NULL;
    return &analyses[a];
}

int attn_analysis_parse(const char *name, attn_analysis *a) {
    for (int i = 0; name && i < ATTN_ANALYSIS_COUNT; i++)
        if (strcmp(analyses[i].name, name) == 0) {
            if (a) *a = (attn_analysis)i;
            return ATTN_OK;
        }
    return ATTN_ERR_ARG;
}

int attn_analysis_dims(const attn_lm_plan *p, attn_analysis a, int shape[4], size_t *count) {
    const attn_analysis_info *info = attn_analysis_get(a);
    if (info == NULL || p == NULL) return 0;
    int maps = info->shape == ATTN_ANALYSIS_SHAPE_MAPS;
    int dims[4] = {p->B, p->n_layer, maps ? p->T : p->H, maps ? p->T : 1};
    size_t n = (size_t)p->B * (size_t)p->n_layer * (size_t)dims[2] * (size_t)dims[3];
    if (shape) memcpy(shape, dims, sizeof dims);
    if (count) *count = n; /* within the plan's checks: at most n_attn */
    return maps ? 4 : 3;
}

/* ==== Checks ================================================================ */

int attn__analysing(const attn__run *r) {
    for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++)
        if (analyses[a].from_maps && r->out->analysis[a]) return 1;
    return 0;
}

int attn__analysis_check(const attn__run *r, attn_error *err) {
    const attn_lm_plan *p = r->p;
    const attn_lm_inputs *in = r->in;
    int maps = attn__analysing(r), importance = r->out->analysis[ATTN_ANALYSIS_IMPORTANCE] != NULL;
    if (importance && !r->whole)
        return attn__fail(err, ATTN_ERR_ARG, "analysis", "importance runs ablated models of its "
                          "own: attn_lm_run computes it (not a run of many, nor a prefill)");
    if ((maps || importance) && (in->idx == NULL || in->start_layer != 0))
        return attn__fail(err, ATTN_ERR_ARG, "analysis", "the analyses read the token ids and "
                          "every block: a run from idx, start_layer 0");
    if (r->out->loss && in->idx == NULL)
        return attn__fail(err, ATTN_ERR_ARG, "idx", "the loss needs the token ids (idx)");
    if ((r->out->loss || importance) && p->T < 2)
        return attn__fail(err, ATTN_ERR_ARG, importance ? "analysis" : "loss",
                          "the next-token loss needs at least 2 tokens, got %d", p->T);
    return ATTN_OK;
}

void attn__analysis_start(attn__run *r) {
    const attn_lm_plan *p = r->p;
    if (r->occ == NULL) return;
    for (int b = 0; b < p->B; b++) { /* the previous occurrence: a backward scan per token */
        const int32_t *ids = r->in->idx + (size_t)b * (size_t)p->T;
        int *occ = r->occ + (size_t)b * (size_t)p->T;
        for (int t = 0; t < p->T; t++) {
            occ[t] = -1;
            for (int s = t - 1; s >= 0; s--)
                if (ids[s] == ids[t]) {
                    occ[t] = s;
                    break;
                }
        }
    }
}

/* ==== One head's scores ===================================================== */

typedef struct {
    attn__run *r;
    int l;
    const float *pattern;
} block_job;

/* ==== -sum p ln p on vectors ================================================= */

/* Eight floats as one vector (GCC's vector extension: one AVX2 register or
 * two SSE ones); a scalar loop with a log call per weight stays scalar (75
 * million calls over the maps of 12 blocks at T = 1,024, 10% of the forward
 * on one core). The clones are built for AVX-512, AVX2 and the baseline, as
 * vexp.c's. */
typedef float vec8 __attribute__((vector_size(8 * sizeof(float))));
typedef int32_t vec8_mask __attribute__((vector_size(8 * sizeof(float))));
#define SELECT8(m, a, b) ((vec8)(((vec8_mask)(a) & (m)) | ((vec8_mask)(b) & ~(m))))
#define CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

/* x ln x for eight x in [0, 1] (through pointers: a vector passed by value
 * changes the ABI between clones) (0 below FLT_MIN: 0 ln 0 = 0, and a
 * subnormal weight adds less than 1e-36): x = m 2^e with m in [sqrt(1/2),
 * sqrt 2), ln m by Cephes' logf polynomial (within 2 ulp). */
__attribute__((always_inline)) static inline void xlogx8(const vec8 *in, vec8 *out) {
    const vec8 zero = {0}, one = zero + 1.0f, x = *in;
    vec8_mask bits = (vec8_mask)x, mb = (bits & 0x007fffff) | 0x3f000000; /* m in [0.5, 1) */
    vec8 m = (vec8)mb, e = __builtin_convertvector(((bits >> 23) & 0xff) - 126, vec8);
    vec8_mask small = m < 0.70710678f;
    vec8 f = SELECT8(small, m + m - one, m - one);
    e -= SELECT8(small, one, zero);
    vec8 z = f * f, y = zero + 7.0376836292e-2f;
    y = y * f - 1.1514610310e-1f;
    y = y * f + 1.1676998740e-1f;
    y = y * f - 1.2420140846e-1f;
    y = y * f + 1.4249322787e-1f;
    y = y * f - 1.6668057665e-1f;
    y = y * f + 2.0000714765e-1f;
    y = y * f - 2.4999993993e-1f;
    y = y * f + 3.3333331174e-1f;
    y = y * f * z + e * -2.12194440e-4f - 0.5f * z;
    vec8 ln = f + y + e * 0.693359375f;
    *out = SELECT8(x >= 1.17549435e-38f, x * ln, zero);
}

/* -sum x ln x over x[0..n) (each in [0, 1]), and *sum += sum x. */
CLONES static double row_entropy(const float *x, int n, double *sum) {
    vec8 e = {0}, s = {0};
    int k = 0;
    for (; k + 8 <= n; k += 8) {
        vec8 v, t;
        memcpy(&v, x + k, sizeof v);
        xlogx8(&v, &t);
        e += t;
        s += v;
    }
    double ent = 0.0, total = 0.0;
    for (int l = 0; l < 8; l++) ent -= e[l], total += s[l];
    for (; k < n; k++) {
        total += x[k];
        if (x[k] >= 1.17549435e-38f) ent -= (double)x[k] * (double)logf(x[k]);
    }
    *sum += total;
    return ent;
}

static void head_item(void *ctx, long item, int slot) {
    (void)slot;
    const block_job *j = ctx;
    const attn__run *r = j->r;
    const attn_lm_plan *p = r->p;
    size_t T = (size_t)p->T;
    int b = (int)(item / p->H), h = (int)(item % p->H);
    const float *P = j->pattern + (size_t)item * T * T;
    const int *occ = r->occ + (size_t)b * T;
    double total = 0.0, ent = 0.0, sink = 0.0, prev = 0.0, dup = 0.0, ind = 0.0;
    for (size_t q = 0; q < T; q++) {
        const float *row = P + q * T;
        /* a causal map is 0 above its diagonal */
        ent += row_entropy(row, p->attn.causal ? (int)q + 1 : (int)T, &total);
        if (q > 0) sink += row[0], prev += row[q - 1];
        for (int k = occ[q]; k >= 0; k = occ[k]) dup += row[k], ind += row[k + 1];
    }
    float *const *dst = r->out->analysis;
    size_t at = ((size_t)b * (size_t)p->n_layer + (size_t)j->l) * (size_t)p->H + (size_t)h;
    double share = total > 0.0 ? 1.0 / total : 0.0;
    if (dst[ATTN_ANALYSIS_ENTROPY]) dst[ATTN_ANALYSIS_ENTROPY][at] = (float)(ent / (double)T);
    if (dst[ATTN_ANALYSIS_SINK]) dst[ATTN_ANALYSIS_SINK][at] = T > 1 ? (float)(sink / (double)(T - 1)) : 0.0f;
    if (dst[ATTN_ANALYSIS_PREVIOUS_TOKEN]) dst[ATTN_ANALYSIS_PREVIOUS_TOKEN][at] = (float)(prev * share);
    if (dst[ATTN_ANALYSIS_DUPLICATE_TOKEN]) dst[ATTN_ANALYSIS_DUPLICATE_TOKEN][at] = (float)(dup * share);
    if (dst[ATTN_ANALYSIS_INDUCTION]) dst[ATTN_ANALYSIS_INDUCTION][at] = (float)(ind * share);
}

static int heads_asked(const attn__run *r) {
    for (int a = 0; a < ATTN_ANALYSIS_COUNT; a++)
        if (analyses[a].from_maps && analyses[a].shape == ATTN_ANALYSIS_SHAPE_HEADS &&
            r->out->analysis[a])
            return 1;
    return 0;
}

/* ==== Rollout =============================================================== */

/* abar = rows of (mean over heads of P[b] + I) renormalised, as Abnar &
 * Zuidema's compute_joint_attention: aug / aug.sum(-1). A causal map's
 * rows stop at the diagonal (the rest stays 0). */
static void head_mean(const attn__run *r, const float *P, float *abar) {
    const attn_lm_plan *p = r->p;
    size_t T = (size_t)p->T, TT = T * T;
    for (size_t q = 0; q < T; q++) {
        size_t n = p->attn.causal ? q + 1 : T;
        float *row = abar + q * T;
        memcpy(row, P + q * T, T * sizeof *row);
        for (int h = 1; h < p->H; h++) {
            const float *Ph = P + (size_t)h * TT + q * T;
            for (size_t k = 0; k < n; k++) row[k] += Ph[k];
        }
        double sum = 1.0;
        for (size_t k = 0; k < n; k++) sum += row[k] /= (float)p->H;
        row[q] += 1.0f;
        float inv = (float)(1.0 / sum);
        for (size_t k = 0; k < n; k++) row[k] *= inv;
    }
}

typedef struct {
    const attn_lm_plan *p;
    const float *abar;
    float *joint;        /* joint[l-1] on entry, joint[l] = abar . joint[l-1] after */
} product_job;

/* Columns [j0, j1) of a causal product in place: joint and abar are lower
 * triangular, so rows above j0 of these columns are 0 and stay 0, and
 * rows j0.. need abar's rows and columns j0.. only (strmm: a triangular
 * matrix times a block, a sixth of the full product over all blocks). */
static void product_item(void *ctx, long item, int slot) {
    (void)slot;
    const product_job *j = ctx;
    int T = j->p->T, j0 = (int)item * ROLLOUT_COLS, w = T - j0 < ROLLOUT_COLS ? T - j0 : ROLLOUT_COLS;
    cblas_strmm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, T - j0, w, 1.0f,
                j->abar + (size_t)j0 * (size_t)T + (size_t)j0, T, j->joint + (size_t)j0 * (size_t)T + (size_t)j0, T);
}

static void rollout(attn__run *r, int l, const float *pattern) {
    const attn_lm_plan *p = r->p;
    size_t T = (size_t)p->T, TT = T * T;
    for (int b = 0; b < p->B; b++) {
        float *joint = r->out->analysis[ATTN_ANALYSIS_ROLLOUT] + ((size_t)b * (size_t)p->n_layer + (size_t)l) * TT;
        float *abar = r->abar + (size_t)b * TT;
        head_mean(r, pattern + (size_t)b * (size_t)p->H * TT, l == 0 ? joint : abar);
        if (l == 0) continue;
        if (!p->attn.causal) { /* joint[l] = abar . joint[l-1]: x [T][T] times W stored [in][out] */
            attn__linear_args prod = {.y = joint, .x = abar, .rows = p->T, .in = p->T, .out = p->T,
                                      .w = joint - TT, .w_is_in_out = 1, .act = ATTN__NO_ACT};
            attn__linear_run(r->pool, &prod);
            continue;
        }
        memcpy(joint, joint - TT, TT * sizeof *joint);
        product_job j = {.p = p, .abar = abar, .joint = joint};
        long items = (p->T + ROLLOUT_COLS - 1) / ROLLOUT_COLS;
        attn__parallel(r->pool, items, (double)T * T * T > 1e6, product_item, &j);
    }
}

void attn__analyse_block(attn__run *r, int l, const float *pattern) {
    const attn_lm_plan *p = r->p;
    if (!attn__analysing(r)) return;
    if (heads_asked(r)) {
        block_job j = {.r = r, .l = l, .pattern = pattern};
        double work = (double)p->B * p->H * p->T * p->T;
        attn__parallel(r->pool, (long)p->B * p->H, work > 1e5, head_item, &j);
    }
    if (r->out->analysis[ATTN_ANALYSIS_ROLLOUT]) rollout(r, l, pattern);
}
