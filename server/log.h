/* log.h - access log and server messages on stderr, one write per line so
 * that lines from different threads never interleave. */
#ifndef SRV_LOG_H
#define SRV_LOG_H

#include <stddef.h>

/* "2024-05-01T12:00:00.123Z POST /attention/multihead 200 in=512 out=2048 3.21ms"
 * status 0 means no reply was sent; `note` (may be NULL) says why. */
void srv_log_access(const char *method, const char *path, int status, size_t bytes_in,
                    size_t bytes_out, double ms, const char *note);

/* A timestamped message: "2024-...Z attention-server: ..." */
void srv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
