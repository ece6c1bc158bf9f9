/* npm.c - see npm.h. */
#include "npm.h"

#include "files.h"
#include "procs.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 if the package of spec is installed in prefix at spec's version. */
static int installed(const char *prefix, const char *spec) {
    const char *at = strrchr(spec, '@'); /* "@scope/name@1.2.3": the last '@' */
    if (at == NULL || at == spec) return 0;
    char path[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/node_modules/%.*s/package.json", prefix, (int)(at - spec), spec);
    json_t *j = json_load_file(path, 0, NULL);
    const char *v = json_string_value(json_object_get(j, "version"));
    int same = v && strcmp(v, at + 1) == 0;
    json_decref(j);
    return same;
}

static int all_installed(const char *prefix, const char *const *specs) {
    for (int i = 0; specs[i]; i++)
        if (!installed(prefix, specs[i])) return 0;
    return 1;
}

int npm_ensure(const char *prefix, const char *const *specs, char *out, size_t size) {
    char rel[PATH_MAX], cmd[PATH_MAX + 2048];
    if (prefix[0] == '/') snprintf(rel, sizeof rel, "%s", prefix);
    else tfile_path(rel, sizeof rel, prefix);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", rel);
    char abs[PATH_MAX];
    if (system(cmd) != 0 || realpath(rel, abs) == NULL || strlen(abs) >= size) {
        fprintf(stderr, "npm: cannot make the prefix %s\n", rel);
        return 0;
    }
    memcpy(out, abs, strlen(abs) + 1);
    if (all_installed(out, specs)) return 1;
    if (!procs_ensure_package("/usr/bin/node", "nodejs") ||
        !procs_ensure_package("/usr/bin/npm", "npm"))
        return 0; /* procs_ensure_package said why */

    /* One retry, so that an unreachable registry fails within about a minute. */
    int n = snprintf(cmd, sizeof cmd,
                     "cd '%s' && timeout 300 /usr/bin/npm install --prefix '%s' --save-exact "
                     "--no-audit --no-fund --fetch-retries=1 --fetch-retry-mintimeout=2000 "
                     "--fetch-retry-maxtimeout=10000 --fetch-timeout=60000",
                     out, out);
    for (int i = 0; specs[i] && n > 0 && (size_t)n < sizeof cmd; i++)
        n += snprintf(cmd + n, sizeof cmd - (size_t)n, " '%s'", specs[i]);
    if (n > 0 && (size_t)n < sizeof cmd) n += snprintf(cmd + n, sizeof cmd - (size_t)n, " 2>&1");
    if (n < 0 || (size_t)n >= sizeof cmd) {
        fprintf(stderr, "npm: too many packages for one command\n");
        return 0;
    }
    fprintf(stderr, "npm: installing into %s (once):", out);
    for (int i = 0; specs[i]; i++) fprintf(stderr, " %s", specs[i]);
    fprintf(stderr, "\n");
    double t0 = procs_now();
    int status = 0;
    char *log = procs_capture(cmd, &status);
    if (status == 0 && all_installed(out, specs)) {
        fprintf(stderr, "npm: installed in %.1f s\n", procs_now() - t0);
        free(log);
        return 1;
    }
    char *registry = procs_capture("/usr/bin/npm config get registry 2>/dev/null", NULL);
    if (registry) registry[strcspn(registry, "\n")] = '\0';
    size_t len = log ? strlen(log) : 0;
    fprintf(stderr,
            "npm: could not install into %s (wait status %d after %.0f s): can the registry %s be "
            "reached? npm said:\n%s\n",
            out, status, procs_now() - t0, registry && *registry ? registry : "(npm config get registry)",
            log ? (len > 1500 ? log + len - 1500 : log) : "(nothing)");
    free(registry);
    free(log);
    return 0;
}
