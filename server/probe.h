/* probe.h - the probe mode of the binary, for container health checks that
 * have no curl: `attention-server --probe http://127.0.0.1:8080/healthz`. */
#ifndef SRV_PROBE_H
#define SRV_PROBE_H

/* GETs an http:// URL (no TLS) with a 5 s limit on connecting, sending and
 * each read. Returns the process exit status: 0 if the reply is 2xx, 1
 * otherwise (the reason on stderr), 2 if the URL cannot be parsed. */
int srv_probe(const char *url);

#endif
