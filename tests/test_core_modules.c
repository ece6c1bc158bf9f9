/* test_core_modules.c - core's module table (ATTN_MODULE_MAP): every module
 * has a row, names and aliases round-trip, endpoints list their default
 * first, and each flag agrees with what attn_plan_make and attn_param_get
 * make of a config for that module.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/attention.h"
#include "tests/support/check_main.h"

static const attn_module_info *row(int m) {
    const attn_module_info *mod = attn_module_get((attn_module)m);
    ck_assert_msg(mod != NULL, "module %d has no row", m);
    return mod;
}

START_TEST(test_every_module_has_a_row) {
    ck_assert_ptr_null(attn_module_get(ATTN_MODULE_COUNT));
    ck_assert_ptr_null(attn_module_get((attn_module)-1));
    for (int m = 0; m < ATTN_MODULE_COUNT; m++) {
        const attn_module_info *mod = row(m);
        ck_assert_int_eq(mod->module, m);
        ck_assert_ptr_nonnull(mod->name);
        ck_assert_ptr_nonnull(mod->in_name);
        ck_assert_str_eq(attn_module_name((attn_module)m), mod->name);
        ck_assert_msg(strncmp(mod->endpoint, "/attention/", 11) == 0, "%s: endpoint %s", mod->name,
                      mod->endpoint);
        ck_assert_msg(!(mod->flags & ATTN_MOD_PROJECTED) || !(mod->flags & ATTN_MOD_QKV_INPUTS),
                      "%s: projected and given Q, K, V", mod->name);
        ck_assert_msg(!(mod->flags & ATTN_MOD_SPLIT_HEADS) || !(mod->flags & ATTN_MOD_HEAD_MODULES),
                      "%s: split heads and head modules", mod->name);
    }
}
END_TEST

START_TEST(test_names_round_trip) {
    for (int m = 0; m < ATTN_MODULE_COUNT; m++) {
        const attn_module_info *mod = row(m);
        attn_module got = ATTN_MODULE_COUNT;
        ck_assert_int_eq(attn_module_from_name(mod->name, &got), ATTN_OK);
        ck_assert_int_eq(got, m);
        if (mod->alias) {
            got = ATTN_MODULE_COUNT;
            ck_assert_int_eq(attn_module_from_name(mod->alias, &got), ATTN_OK);
            ck_assert_int_eq(got, m);
        }
        for (int o = 0; o < m; o++) { /* no name or alias is taken twice */
            const attn_module_info *other = row(o);
            ck_assert_str_ne(mod->name, other->name);
            ck_assert(!mod->alias || strcmp(mod->alias, other->name) != 0);
            ck_assert(!other->alias || strcmp(other->alias, mod->name) != 0);
            ck_assert(!mod->alias || !other->alias || strcmp(mod->alias, other->alias) != 0);
        }
    }
    attn_module got;
    ck_assert_int_eq(attn_module_from_name("sdpa", &got), ATTN_OK);
    ck_assert_int_eq(got, ATTN_SDPA);
    ck_assert_int_eq(attn_module_from_name("Simple", &got), ATTN_ERR_ARG);
    ck_assert_int_eq(attn_module_from_name("", &got), ATTN_ERR_ARG);
}
END_TEST

/* Each module is served by exactly one endpoint of the API, which lists it
 * once; each endpoint has one default, listed first. */
START_TEST(test_endpoints) {
    int seen[ATTN_MODULE_COUNT] = {0};
    for (int e = 0; e < API_EP_COUNT; e++) {
        if (api_endpoint_get((api_endpoint)e)->kind != API_KIND_MODULE) continue;
        attn_module mods[ATTN_MODULE_COUNT];
        const char *path = api_endpoint_path((api_endpoint)e);
        int n = attn_modules_on_endpoint(path, mods);
        ck_assert_msg(n > 0, "%s serves no module", path);
        for (int i = 0; i < n; i++) {
            const attn_module_info *mod = row(mods[i]);
            ck_assert_str_eq(mod->endpoint, path);
            ck_assert_msg(((mod->flags & ATTN_MOD_DEFAULT) != 0) == (i == 0),
                          "%s: %s is %s", path, mod->name, i ? "a second default" : "not the default");
            seen[mods[i]]++;
        }
    }
    for (int m = 0; m < ATTN_MODULE_COUNT; m++)
        ck_assert_msg(seen[m] == 1, "%s is on %d endpoints", row(m)->name, seen[m]);
    attn_module mods[ATTN_MODULE_COUNT];
    ck_assert_int_eq(attn_modules_on_endpoint("/attention/nothing", mods), 0);
    /* the order api clients have always seen (pick_module's error lists
     * it): the default, then the table's order */
    int n = attn_modules_on_endpoint("/attention/multihead", mods);
    ck_assert_int_ge(n, 4);
    ck_assert_int_eq(mods[0], ATTN_MHA);
    for (int i = 2; i < n; i++) ck_assert_int_lt(mods[i - 1], mods[i]);
    ck_assert_int_eq(mods[1], ATTN_MHA_WRAPPER);
    ck_assert_int_eq(attn_modules_on_endpoint("/attention/self", mods), 2);
    ck_assert_int_eq(mods[0], ATTN_SELF_V2);
    ck_assert_int_eq(mods[1], ATTN_SELF_V1);
}
END_TEST

/* A config every module accepts: 2 heads where it takes num_heads. */
static attn_config config_for(int m) {
    int heads = row(m)->flags & ATTN_MOD_MULTI_HEAD ? 2 : 1;
    return (attn_config){.module = (attn_module)m, .batch = 2, .tokens = 3, .d_in = 4,
                         .d_out = row(m)->out_name ? 6 : 0, .num_heads = heads};
}

START_TEST(test_flags_agree_with_the_plan) {
    const attn_module_info *mod = row(_i);
    attn_config cfg = config_for(_i);
    attn_plan plan;
    attn_error err = {0};
    ck_assert_msg(attn_plan_make(&cfg, &plan, &err) == ATTN_OK, "%s: %s", mod->name, err.message);
    unsigned f = mod->flags;
    ck_assert_int_eq(plan.H, f & ATTN_MOD_MULTI_HEAD ? 2 : 1);
    ck_assert_int_eq(plan.has_out_proj, (f & ATTN_MOD_OUT_PROJ) != 0);
    ck_assert_int_eq(plan.drop_site, mod->drop_site);
    ck_assert_int_eq(plan.n_params > 0, (f & ATTN_MOD_PROJECTED) != 0);
    int width = mod->out_name ? cfg.d_out : cfg.d_in;
    if (f & ATTN_MOD_SPLIT_HEADS) ck_assert_int_eq(plan.Dk, width / 2);
    if (f & (ATTN_MOD_HEAD_MODULES | ATTN_MOD_QKV_INPUTS)) ck_assert_int_eq(plan.Dk, width);
    if (mod->out_name && (f & ATTN_MOD_OUT_PROJ)) ck_assert_int_eq(plan.out_width, cfg.d_out);
    if (f & ATTN_MOD_UNSCALED)
        ck_assert_float_eq(plan.scale, 1.0f);
    else
        ck_assert_float_eq(plan.scale, (float)(1.0 / sqrt((double)plan.Dk)));
    if (f & ATTN_MOD_QKV_INPUTS)
        ck_assert_uint_eq(plan.n_inputs, plan.n_queries + plan.n_keys + plan.n_values);

    /* one head only where the row says so */
    attn_config c = cfg;
    c.num_heads = 2;
    int rc = attn_plan_make(&c, &plan, &err);
    if (!(f & ATTN_MOD_MULTI_HEAD)) {
        ck_assert_int_eq(rc, ATTN_ERR_ARG);
        ck_assert_str_eq(err.field, "num_heads");
    }
    /* the sum normalisation only where allowed */
    c = cfg;
    c.normalization = ATTN_NORM_SUM;
    ck_assert_int_eq(attn_plan_make(&c, &plan, &err) == ATTN_OK, (f & ATTN_MOD_SUM_NORM) != 0);
    /* context_length bounds the tokens, under the row's name */
    c = cfg;
    c.context_length = 2;
    rc = attn_plan_make(&c, &plan, &err);
    if (mod->context_name) {
        ck_assert_int_eq(rc, ATTN_ERR_SHAPE);
        ck_assert_str_eq(err.field, mod->context_name);
    } else {
        ck_assert_int_eq(rc, ATTN_OK);
    }
}
END_TEST

/* Modules that take a context length register a triangular buffer of that
 * size; its values are attn_param_buffer_value's, checked by
 * attn_params_check. Head modules name their tensors "heads.<h>.". */
START_TEST(test_buffers_and_names) {
    const attn_module_info *mod = row(_i);
    attn_config cfg = config_for(_i);
    cfg.context_length = 5;
    attn_plan plan;
    attn_error err = {0};
    ck_assert_int_eq(attn_plan_make(&cfg, &plan, &err), ATTN_OK);
    float *params = malloc((plan.n_params ? plan.n_params : 1) * sizeof *params);
    ck_assert_ptr_nonnull(params);
    attn_rng rng;
    attn_rng_seed(&rng, 1);
    ck_assert_int_eq(attn_params_init(&cfg, &plan, params, &rng, &err), ATTN_OK);
    int buffers = 0;
    for (int i = 0; i < plan.param_count; i++) {
        attn_param p;
        ck_assert_int_eq(attn_param_get(&cfg, &plan, i, &p), ATTN_OK);
        if (mod->flags & ATTN_MOD_HEAD_MODULES) ck_assert(strncmp(p.name, "heads.", 6) == 0);
        if (!p.buffer) {
            ck_assert_float_eq(attn_param_buffer_value(&p, 0, 1), 0.0f);
            continue;
        }
        buffers++;
        ck_assert_int_eq(p.shape[p.rank - 1], 5);
        ck_assert_int_eq(p.shape[p.rank - 2], 5);
        float *x = params + p.offset;
        for (int r = 0; r < 5; r++)
            for (int k = 0; k < 5; k++) {
                float want = p.buffer == ATTN_BUFFER_TRIU ? (float)(k > r) : (float)(k <= r);
                ck_assert_float_eq(attn_param_buffer_value(&p, r, k), want);
                ck_assert_float_eq(x[r * 5 + k], want); /* attn_params_init filled it so */
            }
        x[1] = 1.0f - x[1]; /* one flipped entry is caught */
        ck_assert_int_eq(attn_params_check(&cfg, &plan, params, &err), ATTN_ERR_ARG);
        x[1] = 1.0f - x[1];
        attn_param_buffer_fill(&p, x);
    }
    int want_buffers = mod->context_name ? (mod->flags & ATTN_MOD_HEAD_MODULES ? plan.H : 1) : 0;
    ck_assert_int_eq(buffers, want_buffers);
    ck_assert_int_eq(attn_params_check(&cfg, &plan, params, &err), ATTN_OK);
    free(params);
}
END_TEST

static Suite *modules_suite(void) {
    Suite *s = suite_create("modules");
    const TTest *tests[] = {test_every_module_has_a_row, test_names_round_trip, test_endpoints, NULL};
    TCase *tc = tcase_with(s, "table", 0, tests);
    tcase_add_loop_test(tc, test_flags_agree_with_the_plan, 0, ATTN_MODULE_COUNT);
    tcase_add_loop_test(tc, test_buffers_and_names, 0, ATTN_MODULE_COUNT);
    return s;
}

const test_program TEST_PROGRAM = {.suites = {modules_suite}};
