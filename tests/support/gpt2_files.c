/* gpt2_files.c - see gpt2_files.h. */
#include "gpt2_files.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends dir's *.gpt2 files to f; stops early when out of memory. */
static void list_dir(gpt2_files *f, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".gpt2") != 0) continue;
        char **grown = realloc(f->paths, (size_t)(f->n + 1) * sizeof *f->paths);
        if (!grown) break;
        f->paths = grown;
        size_t n = strlen(dir) + l + 2;
        if (!(f->paths[f->n] = malloc(n))) break;
        snprintf(f->paths[f->n++], n, "%s/%s", dir, e->d_name);
    }
    closedir(d);
}

void gpt2_files_list(gpt2_files *f, const char *const dirs[], int n_dirs) {
    *f = (gpt2_files){0};
    for (int i = 0; i < n_dirs && i < GPT2_FILES_MAX_DIRS; i++) {
        int before = f->n;
        list_dir(f, dirs[i]);
        f->per_dir[i] = f->n - before;
    }
    if (f->n) qsort(f->paths, (size_t)f->n, sizeof *f->paths, cmp_str);
}

void gpt2_files_free(gpt2_files *f) {
    for (int i = 0; i < f->n; i++) free(f->paths[i]);
    free(f->paths);
    *f = (gpt2_files){0};
}

int gpt2_config_key(attn_lm_config *c, const char *key, const char *val) {
#define KEY(a, b) (!strcmp(key, a) || !strcmp(key, b))
    if (!strcmp(key, "family"))
        c->arch = strcmp(val, "GPTModel") == 0 ? ATTN_ARCH_GPTMODEL : ATTN_ARCH_GPT2;
    else if (!strcmp(key, "vocab_size")) c->vocab_size = atoi(val);
    else if (KEY("block_size", "context_length")) c->context = atoi(val);
    else if (KEY("n_layer", "n_layers")) c->n_layer = atoi(val);
    else if (KEY("n_head", "n_heads")) c->n_head = atoi(val);
    else if (KEY("n_embd", "emb_dim")) c->width = atoi(val);
    else if (KEY("dropout", "drop_rate")) c->dropout = strtod(val, NULL);
    else if (!strcmp(key, "qkv_bias")) c->qkv_bias = atoi(val);
    else if (!strcmp(key, "activation"))
        c->act = strcmp(val, "gelu_new") == 0 ? ATTN_ACT_GELU_TANH : ATTN_ACT_GELU_ERF;
    else return 0;
    return 1;
#undef KEY
}
