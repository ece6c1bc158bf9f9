/* files.c - see files.h. */
#include "files.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *tfile_path(char *out, size_t size, const char *rel) {
    const char *f = __FILE__, *cut = strstr(f, "tests/support/files.c");
    snprintf(out, size, "%.*s%s", cut ? (int)(cut - f) : 0, f, rel);
    return out;
}

char *tfile_read(const char *path, size_t *len) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    char *s = NULL;
    long n = -1;
    if (fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) >= 0 && fseek(fp, 0, SEEK_SET) == 0)
        s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, fp) != (size_t)n) {
        free(s);
        s = NULL;
    }
    fclose(fp);
    if (!s) return NULL;
    s[n] = '\0';
    if (len) *len = (size_t)n;
    return s;
}
