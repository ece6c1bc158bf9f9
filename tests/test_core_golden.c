/* test_core_golden.c - core against PyTorch: every file of tests/golden/.
 *
 * One suite per module, two checks per golden file:
 *   "state_dict": the plan's attn_param_get entries against the file's
 *      params, which are PyTorch's state_dict in its order (names, shapes,
 *      buffers);
 *   "forward": attn_params_init from the file's seed must give PyTorch's
 *      parameters (matched by name, so that an ordering difference does not
 *      hide the numerics) within tolerance, the largest ulp distance is
 *      printed (0 expected: the same draws in the same order); then
 *      attn_forward with PyTorch's parameters and the generator left by the
 *      init, every output requested, each compared with the file within
 *      |got - want| <= 1e-5 + 1e-5 |want| (-inf must be -inf).
 * Set GOLDEN_DIR to use another directory; run from the repository root.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attention.h"
#include "tests/support/check_main.h"
#include "tests/support/golden.h"

typedef struct {
    const char *suite;
    const char *modules[3];
    char **paths;
    int n;
} module_files;

static module_files g_files[] = {
    {"simple", {"simple", NULL}, NULL, 0},
    {"v1", {"SelfAttention_v1", NULL}, NULL, 0},
    {"v2", {"SelfAttention_v2", NULL}, NULL, 0},
    {"causal", {"CausalAttention", NULL}, NULL, 0},
    {"wrapper", {"MultiHeadAttentionWrapper", NULL}, NULL, 0},
    {"mha", {"MultiHeadAttention", NULL}, NULL, 0},
    {"gpt2", {"GPT2CausalSelfAttention", NULL}, NULL, 0},
    {"torch_mha", {"torch.nn.MultiheadAttention", NULL}, NULL, 0},
    {"sdpa", {"scaled_dot_product_attention", NULL}, NULL, 0},
};
#define N_MODULES ((int)(sizeof g_files / sizeof g_files[0]))

/* Appends a line to a report buffer. */
static void report(char *buf, size_t len, const char *line) {
    size_t used = strlen(buf);
    if (used + 2 < len) snprintf(buf + used, len - used, "%s%s", used ? "\n  " : "", line);
}

/* Part 1: the plan's state_dict (attn_param_get) against PyTorch's, entry
 * by entry: names, order, shapes, buffers. */
static void check_layout(const golden_case *gc, const attn_plan *plan, char *problems, size_t len) {
    char line[600];
    if (plan->param_count != gc->n_params) {
        snprintf(line, sizeof line, "param_count %d, PyTorch's state_dict has %d entries",
                 plan->param_count, gc->n_params);
        report(problems, len, line);
    }
    if (plan->n_params != gc->n_params_flat) {
        snprintf(line, sizeof line, "n_params %zu, PyTorch %zu", plan->n_params, gc->n_params_flat);
        report(problems, len, line);
    }
    for (int i = 0; i < plan->param_count && i < gc->n_params; i++) {
        attn_param p;
        attn_param_get(&gc->cfg, plan, i, &p);
        const golden_param *g = &gc->params[i];
        int same = strcmp(p.name, g->name) == 0 && p.rank == g->t.rank && p.count == g->t.count &&
                   p.is_buffer == g->is_buffer;
        for (int d = 0; same && d < p.rank; d++) same = p.shape[d] == g->t.shape[d];
        if (!same) {
            snprintf(line, sizeof line, "state_dict[%d]: core \"%s\" (%zu floats%s), PyTorch \"%s\" "
                     "(%zu floats%s)", i, p.name, p.count, p.is_buffer ? ", buffer" : "", g->name,
                     g->t.count, g->is_buffer ? ", buffer" : "");
            report(problems, len, line);
        }
    }
}

/* PyTorch's parameters laid out as core's plan wants them, matched by name
 * (so that a difference of order does not hide the numerics). NULL with a
 * reason when a name or a size has no match. */
static float *params_by_name(const golden_case *gc, const attn_plan *plan, char *why, size_t len) {
    float *out = malloc((plan->n_params ? plan->n_params : 1) * sizeof *out);
    if (!out) {
        snprintf(why, len, "out of memory");
        return NULL;
    }
    for (int i = 0; i < plan->param_count; i++) {
        attn_param p;
        attn_param_get(&gc->cfg, plan, i, &p);
        const golden_param *g = NULL;
        for (int j = 0; j < gc->n_params && !g; j++)
            if (strcmp(gc->params[j].name, p.name) == 0) g = &gc->params[j];
        if (!g || g->t.count != p.count) {
            snprintf(why, len, "core's \"%s\" (%zu floats) %s", p.name, p.count,
                     g ? "has another size in PyTorch's state_dict" : "is not in PyTorch's state_dict");
            free(out);
            return NULL;
        }
        memcpy(out + p.offset, g->t.data, p.count * sizeof *out);
    }
    return out;
}

/* Part 2: attn_params_init from the seed, then attn_forward with PyTorch's
 * parameters, every output compared. */
static void check_numerics(const golden_case *gc, const attn_plan *plan, char *problems,
                           size_t len) {
    char line[600];
    attn_error err = {0};
    float *want_params = params_by_name(gc, plan, line, sizeof line);
    if (!want_params) {
        report(problems, len, line);
        return;
    }
    attn_rng rng;
    attn_rng_seed(&rng, gc->has_seed ? gc->seed : ATTN_TORCH_DEFAULT_SEED);
    float *params = malloc((plan->n_params ? plan->n_params : 1) * sizeof *params);
    ck_assert_ptr_nonnull(params);
    int rc = attn_params_init(&gc->cfg, plan, params, &rng, &err);
    if (rc != ATTN_OK) {
        snprintf(line, sizeof line, "attn_params_init: %s (%s)", err.message, err.field);
        report(problems, len, line);
    } else if (plan->n_params) {
        if (golden_compare("params", params, want_params, plan->n_params, line, sizeof line) >= 0)
            report(problems, len, line);
        uint32_t ulp = golden_max_ulp(params, want_params, plan->n_params);
        printf("%-40s params: %4zu floats, max %u ulp from PyTorch\n", gc->name, plan->n_params, ulp);
        rc = attn_params_check(&gc->cfg, plan, want_params, &err);
        if (rc != ATTN_OK) {
            snprintf(line, sizeof line, "attn_params_check rejects PyTorch's state_dict: %s (%s)",
                     err.message, err.field);
            report(problems, len, line);
        }
    }

    golden_buffers b;
    ck_assert_int_eq(golden_buffers_alloc(plan, &b), 0);
    attn_inputs in = gc->in;
    in.params = plan->n_params ? want_params : NULL;
    rc = attn_forward(&gc->cfg, plan, &in, &rng, &b.out, &err);
    if (rc != ATTN_OK) {
        snprintf(line, sizeof line, "attn_forward: %s (%s: %s)", attn_status_name(rc), err.field,
                 err.message);
        report(problems, len, line);
    } else {
        for (int i = 0; i < GOLDEN_OUT_COUNT; i++) {
            const golden_tensor *want = &gc->out[i];
            size_t n = golden_output_count(plan, i);
            if (n != want->count) {
                snprintf(line, sizeof line, "%s: plan has %zu elements, PyTorch %zu",
                         golden_output_names[i], n, want->count);
                report(problems, len, line);
                continue;
            }
            long bad = i == GOLDEN_MASK
                           ? golden_compare_bytes("mask", b.mask, want->bytes, n, line, sizeof line)
                           : golden_compare(golden_output_names[i], b.f[i], want->data, n, line,
                                            sizeof line);
            if (bad >= 0) report(problems, len, line);
        }
    }
    golden_buffers_free(&b);
    free(params);
    free(want_params);
}

enum { PART_LAYOUT, PART_NUMERICS };

static void run_golden_file(const char *path, int part) {
    golden_case gc;
    char why[512];
    if (golden_load(path, &gc, why, sizeof why) != 0) ck_abort_msg("cannot load: %s", why);
    attn_plan plan;
    attn_error err = {0};
    int rc = attn_plan_make(&gc.cfg, &plan, &err);
    if (rc != ATTN_OK) {
        golden_free(&gc);
        ck_abort_msg("%s: attn_plan_make: %s (%s: %s)", path, attn_status_name(rc), err.field,
                     err.message);
    }
    char problems[4096] = "";
    if (part == PART_LAYOUT)
        check_layout(&gc, &plan, problems, sizeof problems);
    else
        check_numerics(&gc, &plan, problems, sizeof problems);
    if (problems[0]) {
        char msg[4700];
        snprintf(msg, sizeof msg, "%s (%s) %s:\n  %s", gc.name, path,
                 part == PART_LAYOUT ? "state_dict" : "numerics", problems);
        golden_free(&gc);
        ck_abort_msg("%s", msg);
    }
    golden_free(&gc);
}

/* One test function per module (tcase_add_loop_test passes only the file
 * index _i), generated from this macro. */
#define MODULE_TEST(k)                                                      \
    START_TEST(test_layout_##k) {                                           \
        ck_assert_int_lt(_i, g_files[k].n);                                 \
        run_golden_file(g_files[k].paths[_i], PART_LAYOUT);                 \
    }                                                                       \
    END_TEST                                                                \
    START_TEST(test_numerics_##k) {                                         \
        ck_assert_int_lt(_i, g_files[k].n);                                 \
        run_golden_file(g_files[k].paths[_i], PART_NUMERICS);               \
    }                                                                       \
    END_TEST
MODULE_TEST(0)
MODULE_TEST(1)
MODULE_TEST(2)
MODULE_TEST(3)
MODULE_TEST(4)
MODULE_TEST(5)
MODULE_TEST(6)
MODULE_TEST(7)
MODULE_TEST(8)


/* A module without any golden file is a failure, not a silent pass. */
START_TEST(test_every_module_has_files) {
    for (int k = 0; k < N_MODULES; k++)
        ck_assert_msg(g_files[k].n > 0, "no golden file for module %s in %s", g_files[k].suite,
                      golden_dir());
}
END_TEST

/* One suite: per module a "<module>/state_dict" and a "<module>/forward" case
 * with one check per golden file, then "present". */
static Suite *golden_suite(void) {
    static char case_names[N_MODULES][2][48];
    const TTest *layout[N_MODULES] = {
        test_layout_0, test_layout_1, test_layout_2, test_layout_3, test_layout_4,
        test_layout_5, test_layout_6, test_layout_7, test_layout_8,
    };
    const TTest *numerics[N_MODULES] = {
        test_numerics_0, test_numerics_1, test_numerics_2, test_numerics_3, test_numerics_4,
        test_numerics_5, test_numerics_6, test_numerics_7, test_numerics_8,
    };
    Suite *s = suite_create("golden");
    int total = 0;
    for (int k = 0; k < N_MODULES; k++) {
        g_files[k].n = golden_list(g_files[k].modules, &g_files[k].paths);
        if (g_files[k].n < 0) {
            fprintf(stderr, "cannot read the golden directory %s (set GOLDEN_DIR or run from the "
                    "repository root)\n", golden_dir());
            g_files[k].n = 0;
        }
        total += g_files[k].n;
        snprintf(case_names[k][0], sizeof case_names[k][0], "%s/state_dict", g_files[k].suite);
        snprintf(case_names[k][1], sizeof case_names[k][1], "%s/forward", g_files[k].suite);
        TCase *tl = tcase_with(s, case_names[k][0], 0, NULL);
        TCase *tn = tcase_with(s, case_names[k][1], 30, NULL);
        if (g_files[k].n > 0) {
            tcase_add_loop_test(tl, layout[k], 0, g_files[k].n);
            tcase_add_loop_test(tn, numerics[k], 0, g_files[k].n);
        }
    }
    const TTest *present[] = {test_every_module_has_files, NULL};
    tcase_with(s, "present", 0, present);
    printf("%d golden files in %s\n", total, golden_dir());
    return s;
}

static void golden_files_free(void) {
    for (int k = 0; k < N_MODULES; k++) golden_list_free(g_files[k].paths, g_files[k].n);
}

const test_program TEST_PROGRAM = {.suites = {golden_suite}, .after = golden_files_free};
