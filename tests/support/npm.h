/* npm.h - npm packages for the tests that run JavaScript (the typed clients,
 * the tokenizer's references, the viewer in Chromium): pinned versions,
 * installed once into a prefix under build/npm, offline afterwards.
 */
#ifndef TESTS_SUPPORT_NPM_H
#define TESTS_SUPPORT_NPM_H

#include <stddef.h>

/* Makes sure every package of specs ("NAME@VERSION", NULL-terminated) is in
 * the prefix at that version: Debian's node and npm first (apt-get when
 * missing), then one `npm install --save-exact` of them all when any is
 * missing or at another version. prefix is relative to the repository root
 * (or absolute); its absolute path goes to out. Returns 1, or 0 after saying
 * on stderr why (npm's last lines and the registry it tried). */
int npm_ensure(const char *prefix, const char *const *specs, char *out, size_t size);

#endif
