/* files.c - see files.h. */
#include "files.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

char *tfile_path(char *out, size_t size, const char *rel) {
    const char *f = __FILE__, *cut = strstr(f, "tests/support/files.c");
    snprintf(out, size, "%.*s%s", cut ? (int)(cut - f) : 0, f, rel);
    return out;
}

char *tfile_read_stream(FILE *f, size_t *len) {
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    for (size_t r; s && (r = fread(s + n, 1, cap - n - 1, f)) > 0;) {
        n += r;
        if (cap - n - 1 > 0) continue;
        char *t = cap <= SIZE_MAX / 2 ? realloc(s, cap * 2) : NULL;
        if (!t) {
            free(s);
            return NULL;
        }
        s = t;
        cap *= 2;
    }
    if (!s || ferror(f)) {
        free(s);
        return NULL;
    }
    s[n] = '\0';
    if (len) *len = n;
    return s;
}

char *tfile_read(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = tfile_read_stream(f, len);
    fclose(f);
    return s;
}

char *tfile_read_rel(const char *rel, size_t *len) {
    char path[1024];
    return tfile_read(tfile_path(path, sizeof path, rel), len);
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int tfile_docs(char **names, int max) {
    char dir[4096];
    DIR *d = opendir(tfile_path(dir, sizeof dir, "docs"));
    if (d == NULL || max < 1) {
        if (d) closedir(d);
        return -1;
    }
    int n = 0;
    names[n++] = strdup("README.md");
    for (struct dirent *de; (de = readdir(d)) != NULL && n < max;) {
        size_t len = strlen(de->d_name);
        if (len <= 3 || strcmp(de->d_name + len - 3, ".md") != 0) continue;
        names[n] = malloc(len + 6);
        if (names[n]) snprintf(names[n++], len + 6, "docs/%s", de->d_name);
    }
    closedir(d);
    qsort(names + 1, (size_t)(n - 1), sizeof names[0], by_name);
    return n;
}
