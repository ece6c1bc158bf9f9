/* test_core_sample.c - core's sampling (attn_sample, attn_softmax_torch,
 * attn_rng_exponential_fill) against PyTorch 1.13: tests/golden/sample.txt,
 * written by tests/golden/generate_sample.py (its docstring gives the
 * format). Set GOLDEN_SAMPLE to read another file (a larger sweep made with
 * --cases N); run from the repository root.
 *
 * What must hold, per line of the file:
 *   exp:  Tensor.exponential_() after torch.manual_seed, three calls in a
 *         row: every float bit for bit (FNV-1a of the bytes);
 *   case: torch.softmax of the row and of row / temperature bit for bit; the
 *         token PyTorch chose (greedy or torch.multinomial), its
 *         log-probability and the top-N ids and log-probabilities
 *         (|got - want| <= 1e-4, the tolerance); PyTorch's refusals
 *         (NaN probabilities) as ATTN_ERR_NONFINITE; the generator advanced
 *         by V draws when sampling, none when greedy;
 *   seq:  several steps from one torch.manual_seed, each on a new row: the
 *         same tokens.
 * And tests/golden/penalties.txt (tests/golden/generate_penalties.py): the
 * repetition, frequency and presence penalties (attn_penalize) bit for bit,
 * then min_p after top_p: the distribution bit for bit and the token.
 * Plus the errors of attn_sample (each leaves the generator as it was), the
 * scratch sizes and concurrent calls.
 */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attention.h"
#include "core/torchmath.h"
#include "tests/support/check_main.h"

#define LP_TOL 1e-4
#define MAX_TOP 64

/* ==== The golden file ===================================================== */

typedef struct {
    char id[16];
    int V, quant, top_k, ntop;
    unsigned long long lseed, sseed;
    double scale, ninf, temp, top_p;
    int nonfinite;                 /* PyTorch refused the row */
    int want_id;
    float want_lp;
    unsigned long long hsoft, hscaled, hsample;
    int k;                         /* top-N entries given */
    int top_id[MAX_TOP];
    float top_lp[MAX_TOP];
} sample_case;

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

static const char *golden_path(void) {
    const char *p = getenv("GOLDEN_SAMPLE");
    return p && *p ? p : "tests/golden/sample.txt";
}

/* Every line of the golden file that starts with `kind `, in order; the
 * text is the caller's to free (lines point into it). */
static char *golden_lines(const char *kind, char **lines, int cap, int *n) {
    char *text = read_text(golden_path());
    ck_assert_msg(text != NULL, "cannot read %s (run from the repository root)", golden_path());
    size_t kl = strlen(kind);
    *n = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save))
        if (strncmp(line, kind, kl) == 0 && line[kl] == ' ' && *n < cap) lines[(*n)++] = line + kl + 1;
    ck_assert_msg(*n > 0, "no '%s' line in %s", kind, golden_path());
    return text;
}

static void parse_case(char *line, sample_case *c) {
    memset(c, 0, sizeof *c);
    int used = 0;
    char result[16];
    int got = sscanf(line, "%15s %d %llu %lf %d %lf %lf %d %lf %llu %d %15s %n", c->id, &c->V,
                     &c->lseed, &c->scale, &c->quant, &c->ninf, &c->temp, &c->top_k, &c->top_p,
                     &c->sseed, &c->ntop, result, &used);
    ck_assert_msg(got == 12, "bad case line: %.80s", line);
    if (strcmp(result, "nonfinite") == 0) {
        c->nonfinite = 1;
        return;
    }
    char *p = line + used;
    int adv = 0;
    got = sscanf(p, "%d %f %llx %llx %llx %d %n", &c->want_id, &c->want_lp, &c->hsoft,
                 &c->hscaled, &c->hsample, &c->k, &adv);
    ck_assert_msg(got == 6 && c->k <= MAX_TOP, "bad result of case %s", c->id);
    p += adv;
    for (int j = 0; j < c->k; j++) {
        got = sscanf(p, "%d %f %n", &c->top_id[j], &c->top_lp[j], &adv);
        ck_assert_msg(got == 2, "bad top-N of case %s", c->id);
        p += adv;
    }
}

/* ==== Rows: the recipe of generate_sample.py's logits_of ==================== */

/* torch.randn(V, generator=g) * scale, torch.round(x * quant) / quant,
 * x[torch.rand(V, generator=g) < ninf] = -inf (never all). */
static float *make_row(int V, unsigned long long lseed, double scale, int quant, double ninf) {
    float *x = malloc((size_t)V * sizeof *x), *u = malloc((size_t)V * sizeof *u);
    ck_assert(x && u);
    attn_rng g;
    attn_normal_cache cache = {0};
    attn_rng_seed(&g, lseed);
    attn_rng_normal_fill(&g, &cache, x, (size_t)V, 0.0, 1.0);
    for (int i = 0; i < V; i++) x[i] = x[i] * (float)scale;
    if (quant > 0)
        for (int i = 0; i < V; i++) x[i] = nearbyintf(x[i] * (float)quant) / (float)quant;
    if (ninf > 0) {
        attn_rng_uniform_fill(&g, u, (size_t)V, 0.0f, 1.0f);
        int all = 1;
        for (int i = 0; i < V; i++) all &= u[i] < (float)ninf;
        for (int i = 0; i < V; i++)
            if (u[i] < (float)ninf && !(all && i == 0)) x[i] = -INFINITY;
    }
    free(u);
    return x;
}

static unsigned long long fnv1a64(const void *data, size_t n) {
    const unsigned char *b = data;
    unsigned long long h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* ==== exponential_ ========================================================= */

START_TEST(test_exponential_bits) {
    char *lines[64];
    int n;
    char *text = golden_lines("exp", lines, 64, &n);
    for (int l = 0; l < n; l++) {
        unsigned long long seed, h[3];
        int size, calls, used;
        float first[3];
        ck_assert(sscanf(lines[l], "%llu %d %d %llx %llx %llx %n", &seed, &size, &calls, &h[0],
                         &h[1], &h[2], &used) == 6 && calls == 3);
        float *q = malloc((size_t)size * sizeof *q);
        attn_rng rng;
        attn_rng_seed(&rng, seed);
        for (int c = 0; c < 3; c++) {
            attn_rng_exponential_fill(&rng, q, (size_t)size, 1.0);
            if (c == 0) {
                char *p = lines[l] + used;
                for (int j = 0; j < 3 && j < size; j++) {
                    int adv;
                    ck_assert(sscanf(p, "%f %n", &first[j], &adv) == 1);
                    p += adv;
                    ck_assert_msg(q[j] == first[j], "seed %llu n %d: q[%d] = %.9g, PyTorch %.9g",
                                  seed, size, j, q[j], first[j]);
                }
            }
            ck_assert_msg(fnv1a64(q, (size_t)size * sizeof *q) == h[c],
                          "seed %llu n %d call %d: not PyTorch's bits", seed, size, c + 1);
        }
        free(q);
    }
    free(text);
}
END_TEST

/* ==== One step ============================================================= */

static attn_sampler sampler_of(const sample_case *c) {
    attn_sampler s = ATTN_SAMPLER_GREEDY;
    s.temperature = c->temp;
    s.top_k = c->top_k;
    s.top_p = c->top_p;
    return s;
}

static int softmax_matches(const float *x, int V, double temp, unsigned long long want) {
    float *y = malloc((size_t)V * sizeof *y);
    for (int i = 0; i < V; i++) y[i] = temp > 0 ? x[i] / (float)temp : x[i];
    attn_softmax_torch(y, y, (size_t)V);
    int ok = fnv1a64(y, (size_t)V * sizeof *y) == want;
    free(y);
    return ok;
}

/* Case c's row is wrong for softmax_bits: torch.softmax of x, and of
 * x / temperature when sampling, not PyTorch's bits. */
static int softmax_wrong(const sample_case *c, const float *x) {
    int bad = !softmax_matches(x, c->V, 0.0, c->hsoft);
    if (c->temp > 0) bad |= !softmax_matches(x, c->V, c->temp, c->hscaled);
    return bad;
}

/* Case c's row is wrong for distribution_bits: attn_sample_probs (top-k,
 * temperature, top-p, softmax) is not what torch.multinomial was handed. */
static int distribution_wrong(const sample_case *c, const float *x) {
    float *probs = malloc((size_t)c->V * sizeof *probs);
    attn_sampler s = sampler_of(c);
    size_t bytes = attn_sample_scratch_size(&s, c->V);
    void *scratch = malloc(bytes);
    attn_error err;
    int rc = attn_sample_probs(&s, x, c->V, probs, scratch, bytes, &err);
    ck_assert_msg(rc == ATTN_OK, "case %s: %s", c->id, err.message);
    int bad = fnv1a64(probs, (size_t)c->V * sizeof *probs) != c->hsample;
    free(scratch);
    free(probs);
    return bad;
}

/* wrong(c, row) for every case line PyTorch did not refuse (and, with
 * sampled_only, that samples: temperature > 0). Returns how many were
 * wrong; *checked says how many were seen, first_wrong the first wrong id. */
static int count_wrong(int (*wrong)(const sample_case *, const float *), int sampled_only,
                       int *checked, char first_wrong[64]) {
    static char *lines[20000];
    int n, bad = 0;
    char *text = golden_lines("case", lines, 20000, &n);
    *checked = 0;
    first_wrong[0] = '\0';
    for (int l = 0; l < n; l++) {
        sample_case c;
        parse_case(lines[l], &c);
        if (c.nonfinite || (sampled_only && c.temp <= 0)) continue;
        float *x = make_row(c.V, c.lseed, c.scale, c.quant, c.ninf);
        if (wrong(&c, x) && !bad++) snprintf(first_wrong, 64, "%s", c.id);
        (*checked)++;
        free(x);
    }
    free(text);
    return bad;
}

START_TEST(test_softmax_bits) {
    int checked;
    char first_wrong[64];
    int wrong = count_wrong(softmax_wrong, 0, &checked, first_wrong);
    ck_assert_msg(checked > 0, "no case checked");
    ck_assert_msg(wrong == 0, "softmax differs from torch.softmax's bits in %d of %d cases (first %s)",
                  wrong, checked, first_wrong);
}
END_TEST

/* attn_sample_probs: what torch.multinomial was handed (top-k, temperature,
 * top-p, softmax), bit for bit. */
START_TEST(test_distribution_bits) {
    int checked;
    char first_wrong[64];
    int wrong = count_wrong(distribution_wrong, 1, &checked, first_wrong);
    ck_assert_int_ge(checked, 50);
    ck_assert_msg(wrong == 0,
                  "the sampling distribution differs from PyTorch's bits in %d of %d cases "
                  "(first %s)", wrong, checked, first_wrong);
}
END_TEST

/* The generator after a step: seeded with sseed, then 2 V outputs (V
 * exponential draws of 53 bits) when sampling. */
static uint32_t next_after(const sample_case *c) {
    attn_rng r;
    attn_rng_seed(&r, c->sseed);
    if (c->temp > 0)
        for (long i = 0; i < 2L * c->V; i++) attn_rng_u32(&r);
    return attn_rng_u32(&r);
}

static void check_step(const sample_case *c, double *max_diff) {
    float *x = make_row(c->V, c->lseed, c->scale, c->quant, c->ninf);
    attn_sampler s = sampler_of(c);
    size_t bytes = attn_sample_scratch_size(&s, c->V);
    void *scratch = bytes ? malloc(bytes) : NULL;
    attn_rng rng;
    attn_rng_seed(&rng, c->sseed);
    attn_token_logprob chosen, top[MAX_TOP];
    attn_error err;
    int rc = attn_sample(&s, x, c->V, &rng, scratch, bytes, &chosen, top, c->ntop, &err);
    if (c->nonfinite) {
        ck_assert_msg(rc == ATTN_ERR_NONFINITE, "case %s: rc %d, PyTorch refused it", c->id, rc);
    } else {
        ck_assert_msg(rc == ATTN_OK, "case %s: %s", c->id, err.message);
        ck_assert_msg(chosen.id == c->want_id, "case %s: token %d, PyTorch %d", c->id, chosen.id,
                      c->want_id);
        double d = fabs((double)chosen.logprob - c->want_lp);
        for (int j = 0; j < c->k; j++)
            if (!isinf(c->top_lp[j]) && fabs((double)top[j].logprob - c->top_lp[j]) > d)
                d = fabs((double)top[j].logprob - c->top_lp[j]);
        *max_diff = d > *max_diff ? d : *max_diff;
        ck_assert_msg(fabsf(chosen.logprob - c->want_lp) <= LP_TOL,
                      "case %s: logprob %.9g, PyTorch %.9g", c->id, chosen.logprob, c->want_lp);
        ck_assert_int_eq(c->k, c->ntop);
        for (int j = 0; j < c->k; j++) {
            ck_assert_msg(top[j].id == c->top_id[j], "case %s: top %d is %d, PyTorch %d", c->id,
                          j, top[j].id, c->top_id[j]);
            ck_assert_msg(fabsf(top[j].logprob - c->top_lp[j]) <= LP_TOL ||
                              (isinf(c->top_lp[j]) && top[j].logprob == c->top_lp[j]),
                          "case %s: top %d logprob %.9g, PyTorch %.9g", c->id, j,
                          top[j].logprob, c->top_lp[j]);
        }
        ck_assert_msg(attn_rng_u32(&rng) == next_after(c),
                      "case %s: the generator did not advance by V draws", c->id);
    }
    free(scratch);
    free(x);
}

START_TEST(test_steps) {
    static char *lines[20000];
    int n, sampled = 0;
    double max_diff = 0.0;
    char *text = golden_lines("case", lines, 20000, &n);
    for (int l = 0; l < n; l++) {
        sample_case c;
        parse_case(lines[l], &c);
        sampled += c.temp > 0 && !c.nonfinite;
        check_step(&c, &max_diff);
    }
    free(text);
    printf("test_steps: %d cases (%d sampled): PyTorch's tokens, log-probabilities within %.3g\n",
           n, sampled, max_diff);
    ck_assert_int_ge(n, 100);
    ck_assert_int_ge(sampled, 50);
}
END_TEST

/* ==== A generation loop ==================================================== */

START_TEST(test_sequences) {
    char *lines[64];
    int n;
    char *text = golden_lines("seq", lines, 64, &n);
    for (int l = 0; l < n; l++) {
        char id[16];
        int V, steps, top_k, used;
        double temp, top_p;
        unsigned long long sseed, lseed0;
        ck_assert(sscanf(lines[l], "%15s %d %d %lf %d %lf %llu %llu : %n", id, &V, &steps, &temp,
                         &top_k, &top_p, &sseed, &lseed0, &used) == 8);
        attn_sampler s = {.temperature = temp, .top_k = top_k, .top_p = top_p};
        size_t bytes = attn_sample_scratch_size(&s, V);
        void *scratch = malloc(bytes);
        attn_rng rng;
        attn_rng_seed(&rng, sseed); /* once, before the loop */
        char *p = lines[l] + used;
        for (int t = 0; t < steps; t++) {
            int want, adv;
            ck_assert(sscanf(p, "%d %n", &want, &adv) == 1);
            p += adv;
            float *x = make_row(V, lseed0 + (unsigned long long)t, 3.0, 0, 0.0);
            attn_token_logprob chosen;
            ck_assert_int_eq(attn_sample(&s, x, V, &rng, scratch, bytes, &chosen, NULL, 0, NULL),
                             ATTN_OK);
            ck_assert_msg(chosen.id == want, "sequence %s step %d: token %d, PyTorch %d", id, t,
                          chosen.id, want);
            free(x);
        }
        free(scratch);
    }
    free(text);
}
END_TEST

/* ==== torch.sort's order ===================================================== */

static float pattern_value(const char *name, int i, int n) {
    if (strcmp(name, "sorted") == 0) return (float)i;
    if (strcmp(name, "reversed") == 0) return (float)(n - i);
    if (strcmp(name, "organ") == 0) return (float)(i < n / 2 ? i : n - i);
    if (strcmp(name, "sawtooth") == 0) return (float)(i % 8);
    return (float)(((uint32_t)i * 2654435761u) >> 28);
}

/* The order of equal values is torch.sort's (GCC 12's std::sort), the heap
 * sort fallback included (organ pipes reach it). */
START_TEST(test_sort_order) {
    char *lines[64];
    int n;
    char *text = golden_lines("sort", lines, 64, &n);
    for (int l = 0; l < n; l++) {
        char name[16];
        int size;
        unsigned long long want;
        ck_assert(sscanf(lines[l], "%15s %d %llx", name, &size, &want) == 3);
        attn__kv *kv = malloc((size_t)size * sizeof *kv);
        int32_t *idx = malloc((size_t)size * sizeof *idx);
        for (int i = 0; i < size; i++) kv[i] = (attn__kv){pattern_value(name, i, size), i};
        attn__torch_sort_ascending(kv, (size_t)size);
        for (int i = 0; i < size; i++) idx[i] = kv[i].index;
        ck_assert_msg(fnv1a64(idx, (size_t)size * sizeof *idx) == want,
                      "%s of %d: not torch.sort's order", name, size);
        free(idx);
        free(kv);
    }
    free(text);
}
END_TEST

/* ==== Penalties and min_p ==================================================== */

typedef struct {
    char id[16];
    int V, top_k, n_prompt, n_ids, want;
    unsigned long long lseed, sseed, hpen, hsample;
    double scale, temp, top_p, min_p;
    attn_penalties pen;
    int32_t ids[64];
} pen_case;

static void parse_pen(const char *line, pen_case *c) {
    int used = 0, adv = 0;
    ck_assert_msg(sscanf(line, "%15s %d %llu %lf %lf %d %lf %lf %lf %lf %lf %llu %d %d : %n", c->id,
                         &c->V, &c->lseed, &c->scale, &c->temp, &c->top_k, &c->top_p, &c->min_p,
                         &c->pen.repetition_penalty, &c->pen.frequency_penalty,
                         &c->pen.presence_penalty, &c->sseed, &c->n_prompt, &c->n_ids,
                         &used) == 14 && c->n_ids <= 64,
                  "bad pen line: %.60s", line);
    const char *p = line + used;
    for (int i = 0; i < c->n_ids; i++, p += adv) ck_assert(sscanf(p, "%d %n", &c->ids[i], &adv) == 1);
    ck_assert_msg(sscanf(p, "= %d %llx %llx", &c->want, &c->hpen, &c->hsample) == 3,
                  "bad result of %s", c->id);
}

/* One golden step: the penalized row's bits, the distribution's bits, the
 * token; counts left zeros. */
static void check_pen(const pen_case *c) {
    float *x = make_row(c->V, c->lseed, c->scale, 0, 0.0);
    int32_t *counts = calloc((size_t)c->V, sizeof *counts);
    attn_error err = {0};
    ck_assert_msg(attn_penalize(&c->pen, x, c->V, c->ids, c->n_ids, c->n_prompt, counts, &err) ==
                      ATTN_OK, "%s: %s", c->id, err.message);
    ck_assert_msg(fnv1a64(x, (size_t)c->V * sizeof *x) == c->hpen,
                  "%s: the penalized logits are not PyTorch's bits", c->id);
    for (int i = 0; i < c->V; i++) ck_assert_int_eq(counts[i], 0);
    attn_sampler s = {.temperature = c->temp, .top_k = c->top_k, .top_p = c->top_p,
                      .min_p = c->min_p};
    size_t bytes = attn_sample_scratch_size(&s, c->V);
    void *scratch = bytes ? malloc(bytes) : NULL;
    float *probs = malloc((size_t)c->V * sizeof *probs);
    if (c->temp > 0) {
        ck_assert_int_eq(attn_sample_probs(&s, x, c->V, probs, scratch, bytes, &err), ATTN_OK);
        ck_assert_msg(fnv1a64(probs, (size_t)c->V * sizeof *probs) == c->hsample,
                      "%s: the distribution (min_p %g) is not PyTorch's bits", c->id, c->min_p);
    }
    attn_rng rng;
    attn_rng_seed(&rng, c->sseed);
    attn_token_logprob chosen;
    ck_assert_int_eq(attn_sample(&s, x, c->V, &rng, scratch, bytes, &chosen, NULL, 0, &err), ATTN_OK);
    ck_assert_msg(chosen.id == c->want, "%s: token %d, PyTorch %d", c->id, chosen.id, c->want);
    free(probs);
    free(scratch);
    free(counts);
    free(x);
}

START_TEST(test_penalties) {
    const char *path = "tests/golden/penalties.txt";
    char *text = read_text(path);
    ck_assert_msg(text != NULL, "cannot read %s (run from the repository root)", path);
    int n = 0, minp = 0, pens = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "pen ", 4) != 0) continue;
        pen_case c;
        parse_pen(line + 4, &c);
        check_pen(&c);
        n++;
        minp += c.temp > 0 && c.min_p > 0;
        pens += attn_penalties_on(&c.pen) && c.n_ids > 0;
    }
    free(text);
    printf("test_penalties: %d steps (%d with min_p, %d penalized): PyTorch's bits and tokens\n", n,
           minp, pens);
    ck_assert_int_ge(n, 60);
    ck_assert_int_ge(minp, 10);
    ck_assert_int_ge(pens, 20);
}
END_TEST

/* attn_penalize refuses bad options, sizes and ids, logits untouched. */
static void expect_pen_error(attn_penalties pen, const int32_t *ids, int n_ids, int n_prompt,
                             const char *field) {
    float x[4] = {1.0f, -2.0f, 3.0f, 0.5f}, was[4];
    memcpy(was, x, sizeof x);
    int32_t counts[4] = {0};
    attn_error err = {0};
    ck_assert_int_eq(attn_penalize(&pen, x, 4, ids, n_ids, n_prompt, counts, &err), ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, field);
    ck_assert(memcmp(x, was, sizeof x) == 0);
}

START_TEST(test_penalty_errors) {
    int32_t ids[3] = {0, 2, 2}, bad[2] = {1, 4};
    attn_penalties off = ATTN_PENALTIES_OFF, p = off;
    p.repetition_penalty = 0.0;
    expect_pen_error(p, ids, 3, 1, "repetition_penalty");
    p.repetition_penalty = NAN;
    expect_pen_error(p, ids, 3, 1, "repetition_penalty");
    p = off, p.frequency_penalty = 2.01;
    expect_pen_error(p, ids, 3, 1, "frequency_penalty");
    p = off, p.presence_penalty = -2.5;
    expect_pen_error(p, ids, 3, 1, "presence_penalty");
    p = off, p.presence_penalty = 1.0;
    expect_pen_error(p, bad, 2, 0, "ids");
    expect_pen_error(p, ids, 3, 4, "n_ids");
    ck_assert(!attn_penalties_on(&off) && !attn_penalties_on(NULL) && attn_penalties_on(&p));
    /* the arithmetic by hand: 3 / 2 for a prompt id, then 2 counts of id 2 */
    p = (attn_penalties){.repetition_penalty = 2.0, .frequency_penalty = 0.5,
                         .presence_penalty = 0.25};
    float x[4] = {1.0f, -2.0f, 3.0f, 0.5f};
    int32_t counts[4] = {0};
    ck_assert_int_eq(attn_penalize(&p, x, 4, ids, 3, 1, counts, NULL), ATTN_OK);
    ck_assert(x[0] == 0.5f && x[1] == -2.0f && x[2] == 1.5f - 1.25f && x[3] == 0.5f);
    /* min_p out of [0, 1] */
    attn_sampler s = {.temperature = 1.0, .top_p = 1.0, .min_p = 1.5};
    float y[4] = {0}, scratch[64];
    attn_rng rng;
    attn_rng_seed(&rng, 1);
    attn_token_logprob chosen;
    attn_error err = {0};
    ck_assert_int_eq(attn_sample(&s, y, 4, &rng, scratch, sizeof scratch, &chosen, NULL, 0, &err),
                     ATTN_ERR_ARG);
    ck_assert_str_eq(err.field, "min_p");
    s.min_p = 0.1;
    ck_assert_uint_eq(attn_sample_scratch_size(&s, 100), 2000);
}
END_TEST

/* ==== Errors ================================================================ */

/* attn_sample must fail with `code` naming `field` and leave rng alone. */
static void expect_error(const attn_sampler *s, const float *x, int V, void *scratch,
                         size_t bytes, int n_top, int code, const char *field) {
    attn_rng rng, before;
    attn_rng_seed(&rng, 42);
    attn_rng_u32(&rng);
    before = rng;
    attn_token_logprob chosen = {-7, 0.0f}, top[4];
    attn_error err = {0};
    int rc = attn_sample(s, x, V, &rng, scratch, bytes, &chosen, top, n_top, &err);
    ck_assert_msg(rc == code, "%s: rc %d, want %d (%s)", field, rc, code, err.message);
    ck_assert_str_eq(err.field, field);
    ck_assert_int_eq(err.code, code);
    ck_assert_msg(memcmp(&rng, &before, sizeof rng) == 0, "%s: the generator moved", field);
}

START_TEST(test_errors) {
    float x[4] = {1.0f, 2.0f, 0.5f, -1.0f};
    float scratch[64];
    size_t bytes = sizeof scratch;
    attn_sampler ok = {.temperature = 1.0, .top_k = 0, .top_p = 0.9}, s;
    expect_error(&ok, x, 0, scratch, bytes, 0, ATTN_ERR_ARG, "n_vocab");
    expect_error(&ok, x, -3, scratch, bytes, 0, ATTN_ERR_ARG, "n_vocab");
    expect_error(NULL, x, 4, scratch, bytes, 0, ATTN_ERR_ARG, "sampler");
    expect_error(&ok, NULL, 4, scratch, bytes, 0, ATTN_ERR_ARG, "logits");
    double bad_t[] = {-1.0, NAN, INFINITY, -0.5e-300};
    for (int i = 0; i < 4; i++) {
        s = ok;
        s.temperature = bad_t[i];
        expect_error(&s, x, 4, scratch, bytes, 0, ATTN_ERR_ARG, "temperature");
    }
    s = ok;
    s.top_k = -1;
    expect_error(&s, x, 4, scratch, bytes, 0, ATTN_ERR_ARG, "top_k");
    double bad_p[] = {-0.1, 1.5, NAN};
    for (int i = 0; i < 3; i++) {
        s = ok;
        s.top_p = bad_p[i];
        expect_error(&s, x, 4, scratch, bytes, 0, ATTN_ERR_ARG, "top_p");
    }
    expect_error(&ok, x, 4, scratch, bytes, 5, ATTN_ERR_ARG, "n_top");
    expect_error(&ok, x, 4, scratch, bytes, -1, ATTN_ERR_ARG, "n_top");
    expect_error(&ok, x, 4, scratch, attn_sample_scratch_size(&ok, 4) - 1, 0, ATTN_ERR_ARG,
                 "scratch");
    expect_error(&ok, x, 4, NULL, bytes, 0, ATTN_ERR_ARG, "scratch");
    attn_token_logprob chosen;
    ck_assert_int_eq(attn_sample(&ok, x, 4, NULL, scratch, bytes, &chosen, NULL, 0, NULL),
                     ATTN_ERR_ARG); /* sampling without a generator */
    float nan_x[4] = {1.0f, NAN, 0.0f, 2.0f}, inf_x[4] = {1.0f, INFINITY, 0.0f, 2.0f};
    float ninf_x[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    attn_sampler greedy = ATTN_SAMPLER_GREEDY;
    expect_error(&ok, nan_x, 4, scratch, bytes, 0, ATTN_ERR_NONFINITE, "logits");
    expect_error(&greedy, nan_x, 4, NULL, 0, 0, ATTN_ERR_NONFINITE, "logits");
    expect_error(&ok, inf_x, 4, scratch, bytes, 0, ATTN_ERR_NONFINITE, "logits");
    expect_error(&greedy, ninf_x, 4, NULL, 0, 0, ATTN_ERR_NONFINITE, "logits");
    float big[4] = {3e38f, 1.0f, -3e38f, 0.0f};
    s = ok;
    s.temperature = 0.5; /* 3e38 / 0.5 overflows: PyTorch's softmax gives NaN */
    expect_error(&s, big, 4, scratch, bytes, 0, ATTN_ERR_NONFINITE, "temperature");
    s.temperature = 1e-300; /* 0 in float32 */
    expect_error(&s, x, 4, scratch, bytes, 0, ATTN_ERR_NONFINITE, "temperature");
}
END_TEST

START_TEST(test_greedy_and_sizes) {
    attn_sampler g = ATTN_SAMPLER_GREEDY, t = {.temperature = 0.7, .top_k = 5, .top_p = 1.0},
                 p = {.temperature = 0.7, .top_k = 0, .top_p = 0.5};
    ck_assert_uint_eq(attn_sample_scratch_size(&g, 100), 0);
    ck_assert_uint_eq(attn_sample_scratch_size(&t, 100), 400);
    ck_assert_uint_eq(attn_sample_scratch_size(&p, 100), 2000);
    ck_assert_uint_eq(attn_sample_scratch_size(NULL, 100), 2000);
    ck_assert_uint_eq(attn_sample_scratch_size(&p, 0), 0);
    /* greedy: the first largest, no generator, no scratch, the filters ignored */
    float x[6] = {0.5f, 2.0f, -INFINITY, 2.0f, 1.0f, -3.0f};
    attn_token_logprob chosen, top[6];
    g.top_k = 1;
    g.top_p = 0.0;
    ck_assert_int_eq(attn_sample(&g, x, 6, NULL, NULL, 0, &chosen, top, 6, NULL), ATTN_OK);
    ck_assert_int_eq(chosen.id, 1);
    /* ties in the top-N: the lower id first; -inf last */
    ck_assert_int_eq(top[0].id, 1);
    ck_assert_int_eq(top[1].id, 3);
    ck_assert_int_eq(top[5].id, 2);
    ck_assert(top[5].logprob == -INFINITY);
    /* log_softmax: log(e^2 / (e^.5 + 2 e^2 + e + e^-3)) */
    double z = exp(0.5) + 2 * exp(2.0) + exp(1.0) + exp(-3.0);
    ck_assert_double_eq_tol(chosen.logprob, 2.0 - log(z), 1e-6);
    ck_assert(top[0].logprob == chosen.logprob);
}
END_TEST

/* ==== Concurrent calls ====================================================== */

typedef struct {
    const float *x;
    int V, ids[40];
} loop_job;

static void *run_loop(void *arg) {
    loop_job *j = arg;
    attn_sampler s = {.temperature = 0.9, .top_k = 50, .top_p = 0.9};
    size_t bytes = attn_sample_scratch_size(&s, j->V);
    void *scratch = malloc(bytes);
    attn_rng rng;
    attn_rng_seed(&rng, 77);
    for (int t = 0; t < 40; t++) {
        attn_token_logprob c;
        if (attn_sample(&s, j->x, j->V, &rng, scratch, bytes, &c, NULL, 0, NULL) != ATTN_OK)
            c.id = -1;
        j->ids[t] = c.id;
    }
    free(scratch);
    return NULL;
}

START_TEST(test_concurrent) {
    float *x = make_row(50257, 5, 3.0, 0, 0.0);
    loop_job a = {.x = x, .V = 50257}, b = a, alone = a;
    run_loop(&alone);
    pthread_t ta, tb;
    ck_assert_int_eq(pthread_create(&ta, NULL, run_loop, &a), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, run_loop, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    for (int t = 0; t < 40; t++) {
        ck_assert_int_ge(alone.ids[t], 0);
        ck_assert_int_eq(a.ids[t], alone.ids[t]);
        ck_assert_int_eq(b.ids[t], alone.ids[t]);
    }
    free(x);
}
END_TEST

static Suite *suite(void) {
    Suite *s = suite_create("core_sample");
    const TTest *golden[] = {test_exponential_bits, test_softmax_bits, test_distribution_bits,
                             test_steps, test_sequences, test_sort_order, NULL};
    tcase_with(s, "pytorch", 120, golden);
    const TTest *api[] = {test_errors, test_greedy_and_sizes, test_concurrent, NULL};
    tcase_with(s, "api", 60, api);
    const TTest *pen[] = {test_penalties, test_penalty_errors, NULL};
    tcase_with(s, "penalties", 60, pen);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {suite}};
