/* tmpdir.h - one temporary directory for the test that runs: made fresh as
 * /tmp/<program>-XXXXXX and removed with everything in it. In fork mode
 * each test is its own process, so each has its own directory.
 *
 *   tcase_add_checked_fixture(tc, ttmp_make, ttmp_remove);
 *   char p[256];
 *   ckf_write(ttmp_path(p, sizeof p, "cut.safetensors"), data, n);
 */
#ifndef TESTS_SUPPORT_TMPDIR_H
#define TESTS_SUPPORT_TMPDIR_H

#include <stddef.h>

/* Makes the directory (fails the test when it cannot). A checked fixture's
 * setup, or a call inside a test. */
void ttmp_make(void);

/* Removes it and everything in it (rm -rf; fails the test when that fails).
 * Does nothing when none was made. */
void ttmp_remove(void);

/* Its path ("" before ttmp_make). */
const char *ttmp_dir(void);

/* dir/name into out; returns out. */
char *ttmp_path(char *out, size_t size, const char *name);

#endif
