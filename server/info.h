/* info.h - the bodies of GET /version. */
#ifndef SRV_INFO_H
#define SRV_INFO_H

#include <stddef.h>

/* {"name","version","build":{"date","compiler"},"openblas":{"core","threads",
 * "config"}} as a fresh malloc'd text; NULL on OOM. */
char *srv_info_version_json(size_t *len);

/* One line for --version and the startup log. */
const char *srv_info_version_line(void);

#endif
