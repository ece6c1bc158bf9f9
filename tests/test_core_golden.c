/* test_core_golden.c - core against PyTorch: every file of tests/golden/.
 *
 * One suite per module of core's table (ATTN_MODULE_MAP), two checks per
 * golden file, and two checks of the directory: every module has files,
 * every file belongs to a module of the table.
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
#include "tests/support/golden.h"

/* The golden files of every module of core's table, grouped by module:
 * g_paths[g_first[m] .. g_first[m] + g_count[m]) are module m's. */
static char **g_paths;
static int g_first[ATTN_MODULE_COUNT], g_count[ATTN_MODULE_COUNT], g_total;
/* Every file of the directory, whatever its "module". */
static char **g_all;
static int g_n_all;

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
                   (p.buffer != ATTN_BUFFER_NONE) == g->is_buffer;
        for (int d = 0; same && d < p.rank; d++) same = p.shape[d] == g->t.shape[d];
        if (!same) {
            snprintf(line, sizeof line, "state_dict[%d]: core \"%s\" (%zu floats%s), PyTorch \"%s\" "
                     "(%zu floats%s)", i, p.name, p.count, p.buffer ? ", buffer" : "", g->name,
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

/* _i indexes g_paths; each module's suite loops over its own range. */
START_TEST(test_layout) {
    ck_assert_int_lt(_i, g_total);
    run_golden_file(g_paths[_i], PART_LAYOUT);
}
END_TEST

START_TEST(test_numerics) {
    ck_assert_int_lt(_i, g_total);
    run_golden_file(g_paths[_i], PART_NUMERICS);
}
END_TEST

/* A module without any golden file is a failure, not a silent pass. */
START_TEST(test_every_module_has_files) {
    for (int m = 0; m < ATTN_MODULE_COUNT; m++)
        ck_assert_msg(g_count[m] > 0, "no golden file for module %s in %s",
                      attn_module_name((attn_module)m), golden_dir());
}
END_TEST

/* A golden file of a module that core's table does not have is a failure
 * too: it would otherwise never be run. */
START_TEST(test_every_file_has_a_module) {
    ck_assert_int_gt(g_n_all, 0);
    for (int i = 0; i < g_n_all; i++) {
        int listed = 0;
        for (int k = 0; k < g_total && !listed; k++) listed = strcmp(g_all[i], g_paths[k]) == 0;
        ck_assert_msg(listed, "%s: its \"module\" is none of core's modules (ATTN_MODULE_MAP)",
                      g_all[i]);
    }
}
END_TEST

/* Lists the files of every module (its name and alias) into g_paths.
 * Returns -1 if the directory cannot be read. */
static int list_files(void) {
    g_n_all = golden_list(NULL, &g_all);
    if (g_n_all < 0) return -1;
    g_paths = calloc((size_t)g_n_all + 1, sizeof *g_paths);
    if (g_paths == NULL) return -1;
    for (int m = 0; m < ATTN_MODULE_COUNT; m++) {
        const attn_module_info *mod = attn_module_get((attn_module)m);
        const char *names[] = {mod->name, mod->alias, NULL};
        char **paths;
        int n = golden_list(names, &paths);
        g_first[m] = g_total;
        for (int i = 0; i < n && g_total < g_n_all; i++) g_paths[g_total++] = paths[i];
        g_count[m] = g_total - g_first[m];
        free(paths); /* the strings now belong to g_paths */
    }
    return 0;
}

int main(void) {
    if (list_files() != 0)
        fprintf(stderr, "cannot read the golden directory %s (set GOLDEN_DIR or run from the "
                "repository root)\n", golden_dir());
    SRunner *sr = srunner_create(NULL);
    for (int m = 0; m < ATTN_MODULE_COUNT; m++) {
        Suite *s = suite_create(attn_module_name((attn_module)m));
        TCase *tl = tcase_create("state_dict");
        TCase *tn = tcase_create("forward");
        tcase_set_timeout(tn, 30);
        if (g_count[m] > 0) {
            tcase_add_loop_test(tl, test_layout, g_first[m], g_first[m] + g_count[m]);
            tcase_add_loop_test(tn, test_numerics, g_first[m], g_first[m] + g_count[m]);
        }
        suite_add_tcase(s, tl);
        suite_add_tcase(s, tn);
        srunner_add_suite(sr, s);
    }
    Suite *meta = suite_create("golden_files");
    TCase *tc = tcase_create("present");
    tcase_add_test(tc, test_every_module_has_files);
    tcase_add_test(tc, test_every_file_has_a_module);
    suite_add_tcase(meta, tc);
    srunner_add_suite(sr, meta);
    printf("%d golden files in %s\n", g_total, golden_dir());

    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    golden_list_free(g_paths, g_total);
    golden_list_free(g_all, g_n_all > 0 ? g_n_all : 0);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
