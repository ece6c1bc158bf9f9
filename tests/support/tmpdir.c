/* tmpdir.c - see tmpdir.h. */
#include "tmpdir.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static char g_dir[128];

void ttmp_make(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/%s-XXXXXX", program_invocation_short_name);
    ck_assert_msg(mkdtemp(g_dir) != NULL, "mkdtemp %s failed", g_dir);
}

void ttmp_remove(void) {
    if (g_dir[0] == '\0') return;
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    g_dir[0] = '\0';
    ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}

const char *ttmp_dir(void) { return g_dir; }

char *ttmp_path(char *out, size_t size, const char *name) {
    snprintf(out, size, "%s/%s", g_dir, name);
    return out;
}
