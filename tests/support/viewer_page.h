/* viewer_page.h - the browser tests' page scripts (tests/viewer/NAME.mjs):
 * Debian's Chromium driven by playwright-core from npm, one script run per
 * view against a running server, its report printed as JSON. test_viewer.c
 * and test_viewer_generate.c drive every view this way.
 *
 *   char modules[600];
 *   vpage_prepare(modules, sizeof modules);
 *   ... start a server s ...
 *   json_t *r = vpage_run(modules, "plain.mjs", s.base);
 *   ... checks of r ...
 *   json_decref(r);
 */
#ifndef TESTS_SUPPORT_VIEWER_PAGE_H
#define TESTS_SUPPORT_VIEWER_PAGE_H

#include <jansson.h>
#include <stddef.h>

/* The last release that runs on Debian bookworm's Node 18: 1.62 and later
 * stop with "Playwright requires Node.js 20 or higher" (their "engines" still
 * say >=18). Checked with Node 18.20.4 in place of /usr/bin/node. */
#define VPAGE_PLAYWRIGHT "playwright-core@1.61.1"

/* Chromium and Node (Debian's, installed when missing) and VPAGE_PLAYWRIGHT
 * (npm, under build/npm): fails the running test when any cannot be had.
 * Writes playwright-core's node_modules folder into modules. */
void vpage_prepare(char *modules, size_t size);

/* build/viewer, where the scripts write their screenshots and downloads
 * (made when missing), into out; returns out. */
char *vpage_dir(char *out, size_t size);

/* Runs `node tests/viewer/<script> <base> <vpage_dir>` with PLAYWRIGHT_DIR
 * set to modules and returns its report, parsed (the caller decrefs it).
 * Fails the running test unless the script exited 0 with a JSON report
 * that has no "exception", and its page logged no console error
 * ("console_errors" empty) and asked no other host for anything
 * ("foreign_requests" empty). */
json_t *vpage_run(const char *modules, const char *script, const char *base);

#endif
