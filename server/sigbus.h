/* sigbus.h - a file that shrinks while it is read through a mapping.
 *
 * The model loader maps each safetensors file (api/model's st_read.c) and
 * checks its header against the size the file had when it was opened. If
 * the file is cut short afterwards (rewritten in place, truncated by
 * another process), the kernel answers a read of a page past the new end
 * with SIGBUS, whose default action ended the server (exit 135). During
 * start-up the loads run under this guard instead: the signal brings the
 * load back here, and the caller reports the file it hit and exits 2, as
 * for any bad file.
 */
#ifndef SRV_SIGBUS_H
#define SRV_SIGBUS_H

#include <stddef.h>

/* What srv_sigbus_guard returns when fn was cut short by SIGBUS. */
#define SRV_SIGBUS_HIT (-1000)

/* Runs fn(arg) on this thread and returns what it returns; SIGBUS on this
 * thread while it runs makes it return SRV_SIGBUS_HIT at once instead,
 * with the path of the mapped file the fault was in (from /proc/self/maps;
 * "a mapped file" when it cannot be told) in file. fn is abandoned where it
 * was: what it had allocated or mapped is not given back, so the caller's
 * only way on is to exit. Start-up only (it changes SIGBUS's disposition
 * for the whole process while fn runs). */
int srv_sigbus_guard(int (*fn)(void *arg), void *arg, char *file, size_t file_size);

#endif
