/* gpt2_files.h - the "gpt2-golden 1" files of tests/golden/gpt2/,
 * gptmodel/ and hooks/ (written by tests/golden/generate_gpt2.py,
 * generate_gptmodel.py and generate_hooks.py), as test_core_gpt2 and
 * test_core_hooks both read them: which files there are, and the config
 * lines of their headers.
 *
 *   static gpt2_files g_files;
 *   const char *dirs[] = {"tests/golden/hooks"};
 *   gpt2_files_list(&g_files, dirs, 1);
 *   ... tcase_add_loop_test(tc, test, 0, g_files.n) reads g_files.paths[_i] ...
 *   gpt2_files_free(&g_files);
 */
#ifndef TESTS_SUPPORT_GPT2_FILES_H
#define TESTS_SUPPORT_GPT2_FILES_H

#include "core/lm.h"

#define GPT2_FILES_MAX_DIRS 4

typedef struct {
    char **paths;                     /* "dir/name.gpt2", malloc'd, in strcmp order */
    int n;                            /* how many paths */
    int per_dir[GPT2_FILES_MAX_DIRS]; /* how many of them each directory gave */
} gpt2_files;

/* Lists the *.gpt2 files of dirs[0..n_dirs) (at most GPT2_FILES_MAX_DIRS)
 * into *f, sorted by path; a directory that cannot be opened gives none
 * (the caller's test counts per_dir). Runs no check: call it while making
 * the suite. Free with gpt2_files_free. */
void gpt2_files_list(gpt2_files *f, const char *const dirs[], int n_dirs);

/* Frees the paths; *f is empty after it. */
void gpt2_files_free(gpt2_files *f);

/* One header line "key value" of a golden file: the config keys of both
 * families (GPT2's and the book's names) into *c. Returns 1 when key was a
 * config key, 0 when it is for the caller (case, seed, B, T, names ...). */
int gpt2_config_key(attn_lm_config *c, const char *key, const char *val);

#endif
