/* reply_check.h - what every api_handle reply must be, whatever the request.
 *
 * Used by the fuzzer (tests/fuzz/fuzz_api.c) and by the replay of its corpus
 * (tests/test_api_fuzz_corpus.c): the status is one api_handle documents, the
 * body is one complete JSON object (or, for a safetensors 200, a well-formed
 * safetensors file), a 200 names its module and carries only
 * finite numbers, and an error is {"error": {status, code, message, field}}
 * with the same status as the reply.
 */
#ifndef REPLY_CHECK_H
#define REPLY_CHECK_H

#include <stddef.h>

#include <jansson.h>

#include "api/api.h"

/* 0 when the reply is well formed; otherwise -1 and a one-line reason in why. */
int reply_check(const api_reply *reply, char *why, size_t why_size);

/* 0 when root is exactly {"error": {"status": status, "code", "message",
 * "field"}}: a non-empty code, a non-empty one-line message, a field that is
 * a string or null. Otherwise -1 and the reason in why. Also used by the
 * server tests (srvt_check_error). */
int reply_check_error(const json_t *root, int status, char *why, size_t why_size);

/* A fuzz input is one endpoint byte followed by the request body; with
 * REPLY_CHECK_GZIP set in that byte the body is gzip, inflated first as the
 * server does for Content-Encoding: gzip. */
api_endpoint reply_check_endpoint(unsigned char first_byte);
#define REPLY_CHECK_GZIP 0x80

/* Runs one fuzz input through api_gunzip (when its first byte says gzip) and
 * api_handle, as the server would (a safetensors reply in parts, made whole
 * by api_reply_flatten); fills reply (a 400/413 error for a bad gzip body,
 * as the server answers it). Free it with api_reply_free. */
void reply_check_run(const unsigned char *data, size_t size, api_reply *reply);

/* The element budget the fuzzer and its replay run with: small, so that no
 * input can make one iteration slow, and large enough for every example. */
#define REPLY_CHECK_MAX_ELEMENTS ((size_t)1 << 20)

#endif
