/* golden_tensors.c - see golden_tensors.h. */
#include "tests/support/golden_tensors.h"

#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gt_tensor *add(gt_file *g) {
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 32;
        gt_tensor *t = realloc(g->t, (size_t)cap * sizeof *t);
        ck_assert_ptr_nonnull(t);
        g->t = t, g->cap = cap;
    }
    return &g->t[g->n++];
}

void gt_load(const char *path, gt_file *g) {
    *g = (gt_file){0};
    snprintf(g->path, sizeof g->path, "%s", path);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = 0;
        char key[96], dtype[8];
        size_t count;
        if (sscanf(line, "tensor %95s %7s %zu", key, dtype, &count) == 3) {
            gt_tensor *t = add(g);
            snprintf(t->name, sizeof t->name, "%s", key);
            t->n = count, t->is_int = strcmp(dtype, "i32") == 0;
            t->data = malloc(count ? count * 4 : 4);
            ck_assert_msg(t->data && fread(t->data, 4, count, f) == count && fgetc(f) == '\n',
                          "%s: tensor %s cut short", path, key);
            continue;
        }
        if (sscanf(line, "%95s", key) == 1 && g->n_keys < GT_MAX_KEYS) {
            snprintf(g->key[g->n_keys], sizeof g->key[0], "%s", key);
            const char *v = line + strlen(key);
            snprintf(g->value[g->n_keys++], sizeof g->value[0], "%s", *v ? v + 1 : "");
        }
    }
    free(line);
    fclose(f);
}

const gt_tensor *gt_find(const gt_file *g, const char *name) {
    for (int i = 0; i < g->n; i++)
        if (strcmp(g->t[i].name, name) == 0) return &g->t[i];
    return NULL;
}

const char *gt_value(const gt_file *g, const char *key) {
    for (int i = 0; i < g->n_keys; i++)
        if (strcmp(g->key[i], key) == 0) return g->value[i];
    return NULL;
}

void gt_free(gt_file *g) {
    for (int i = 0; i < g->n; i++) free(g->t[i].data);
    free(g->t);
    *g = (gt_file){0};
}

int gt_near(double got, double want) { return fabs(got - want) <= GT_ATOL + GT_RTOL * fabs(want); }

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

int gt_list_cases(const char *root, gt_case_name *names, int max) {
    DIR *d = opendir(root);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) != NULL && n < max) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s/expected.gpt2", root, e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(path, "rb") : NULL;
        if (f == NULL) continue;
        fclose(f);
        snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    }
    if (d) closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_name);
    return n;
}

void gt_expect_families(const char *root, const gt_case_name *names, int n_names,
                        const char *const *families, size_t n) {
    for (size_t f = 0; f < n; f++) {
        int found = 0;
        for (int i = 0; i < n_names && !found; i++) {
            char path[600];
            snprintf(path, sizeof path, "%s/%s/expected.gpt2", root, names[i]);
            gt_file g;
            gt_load(path, &g);
            found = gt_value(&g, "family") && strcmp(gt_value(&g, "family"), families[f]) == 0;
            gt_free(&g);
        }
        ck_assert_msg(found, "no golden case of %s in %s", families[f], root);
    }
}

double gt_expect_flat(const char *what, const json_t *got, const gt_tensor *want,
                      int (*padded)(const void *ctx, size_t i), const void *ctx) {
    const json_t *data = json_object_get(got, "data");
    ck_assert_msg(json_is_array(data) && json_array_size(data) == want->n, "%s: %zu values, want %zu",
                  what, json_array_size(data), want->n);
    const float *w = want->data;
    double worst = 0.0;
    for (size_t i = 0; i < want->n; i++) {
        const json_t *x = json_array_get(data, i);
        if (isinf(w[i]) || (padded && padded(ctx, i))) {
            ck_assert_msg(json_is_null(x), "%s[%zu]: %s, the reply %g", what, i,
                          isinf(w[i]) ? "PyTorch has -inf" : "a padded position", json_number_value(x));
            continue;
        }
        ck_assert_msg(json_is_number(x), "%s[%zu]: null where PyTorch has %g", what, i, (double)w[i]);
        double d = fabs(json_number_value(x) - w[i]);
        ck_assert_msg(d <= GT_ATOL + GT_RTOL * fabs(w[i]), "%s[%zu]: %.9g, PyTorch %.9g", what, i,
                      json_number_value(x), (double)w[i]);
        worst = d > worst ? d : worst;
    }
    return worst;
}
