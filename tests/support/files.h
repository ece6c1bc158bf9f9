/* files.h - the one whole-file reader of the test programs, and the files of
 * the repository.
 *
 * Paths are found from this file's own path as the compiler saw it
 * (`tests/support/files.c` when make builds it from the repository root,
 * an absolute path otherwise), so a test finds api/examples/ or
 * tests/fuzz/corpus/ whatever its working directory.
 */
#ifndef TESTS_SUPPORT_FILES_H
#define TESTS_SUPPORT_FILES_H

#include <stddef.h>
#include <stdio.h>

/* Writes the path of rel (relative to the repository root) into out and
 * returns out. */
char *tfile_path(char *out, size_t size, const char *rel);

/* Everything left to read from f (a file or a pipe), malloc'd and
 * NUL-terminated, its length in *len (len may be NULL); NULL on a read error
 * or when out of memory. Does not close f. */
char *tfile_read_stream(FILE *f, size_t *len);

/* The whole file at path, as tfile_read_stream; NULL if it cannot be read. */
char *tfile_read(const char *path, size_t *len);

/* The whole file rel of the repository (tfile_path, then tfile_read). */
char *tfile_read_rel(const char *rel, size_t *len);

/* The documents whose examples the tests run: "README.md", then every
 * "docs/NAME.md" in name order, as malloc'd relative paths into names (room
 * for max). Returns how many, or -1 when docs/ cannot be listed. */
int tfile_docs(char **names, int max);

#endif
