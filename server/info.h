/* info.h - the bodies of GET /version. */
#ifndef SRV_INFO_H
#define SRV_INFO_H

#include <stddef.h>

/* {"name","version","build":{"date","compiler"},"openblas":{"core","threads",
 * "config","check":{"passed","products","worst","ms","fallback_from"}}} as a
 * fresh malloc'd text; NULL on OOM. "check" is the start-up check of the
 * kernels (kernels.h): worst is the largest error over its bound (< 1),
 * fallback_from the kernel sets that failed before ("" when none). */
char *srv_info_version_json(size_t *len);

/* One line for --version and the startup log. */
const char *srv_info_version_line(void);

/* The labels of attn_build_info: "0.1.0", "gcc 12.2.0", OpenBLAS's kernel
 * ("Haswell"). Static strings. */
const char *srv_info_version(void);
const char *srv_info_compiler(void);
const char *srv_info_openblas(void);

#endif
