/* golden_tensors.c - see golden_tensors.h. */
#include "tests/support/golden_tensors.h"

#include <check.h>
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
