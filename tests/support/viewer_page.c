/* viewer_page.c - see viewer_page.h. */
#include "viewer_page.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "files.h"
#include "npm.h"
#include "procs.h"

#define CHROMIUM "/usr/bin/chromium"

void vpage_prepare(char *modules, size_t size) {
    ck_assert_msg(procs_ensure_package(CHROMIUM, "chromium"), "could not install chromium");
    ck_assert_msg(procs_ensure_package("/usr/bin/node", "nodejs"), "could not install nodejs");
    const char *const specs[] = {VPAGE_PLAYWRIGHT, NULL};
    char root[512];
    ck_assert_msg(npm_ensure("build/npm", specs, root, sizeof root),
                  "could not install " VPAGE_PLAYWRIGHT);
    snprintf(modules, size, "%s/node_modules", root);
}

char *vpage_dir(char *out, size_t size) {
    tfile_path(out, size, "build/viewer");
    mkdir(out, 0755);
    return out;
}

/* A member of the report that must be there. */
static const json_t *member(const json_t *r, const char *script, const char *key) {
    const json_t *v = json_object_get(r, key);
    ck_assert_msg(v != NULL, "%s: the report has no %s", script, key);
    return v;
}

json_t *vpage_run(const char *modules, const char *script, const char *base) {
    char outdir[512], path[512], rel[128], cmd[2400];
    snprintf(rel, sizeof rel, "tests/viewer/%s", script);
    tfile_path(path, sizeof path, rel);
    snprintf(cmd, sizeof cmd, "PLAYWRIGHT_DIR=%s node %s %s %s", modules, path, base,
             vpage_dir(outdir, sizeof outdir));
    int status;
    char *out = procs_capture(cmd, &status);
    ck_assert_msg(out && status == 0, "%s failed (%d): %s", script, status, out ? out : "");
    json_error_t je;
    json_t *r = json_loads(out, JSON_ALLOW_NUL, &je);
    ck_assert_msg(r != NULL, "%s: the report is not JSON (%s): %s", script, je.text, out);
    ck_assert_msg(json_object_get(r, "exception") == NULL, "the page script %s failed: %s", script,
                  json_string_value(json_object_get(r, "exception")));
    const json_t *errors = member(r, script, "console_errors");
    ck_assert_msg(json_array_size(errors) == 0, "%s: console errors: %s", script,
                  json_dumps(errors, 0));
    const json_t *foreign = member(r, script, "foreign_requests");
    ck_assert_msg(json_array_size(foreign) == 0, "%s: requests to other hosts: %s", script,
                  json_dumps(foreign, 0));
    free(out);
    return r;
}
