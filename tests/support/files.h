/* files.h - files of the repository, for the test programs.
 *
 * Paths are found from this file's own path as the compiler saw it
 * (`tests/support/files.c` when make builds it from the repository root,
 * an absolute path otherwise), so a test finds api/examples/ or
 * tests/fuzz/corpus/ whatever its working directory.
 */
#ifndef TESTS_SUPPORT_FILES_H
#define TESTS_SUPPORT_FILES_H

#include <stddef.h>

/* Writes the path of rel (relative to the repository root) into out and
 * returns out. */
char *tfile_path(char *out, size_t size, const char *rel);

/* The whole file at path (not rel: pass tfile_path's result), malloc'd and
 * NUL-terminated, its length in *len (len may be NULL); NULL if it cannot be
 * read. */
char *tfile_read(const char *path, size_t *len);

#endif
