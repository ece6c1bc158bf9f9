/* stream.h - a reply body that a worker hands to the connection piece by
 * piece while it writes the rest (api_limits.stream): a queue of pieces
 * between the worker thread that writes them and libmicrohttpd's I/O thread
 * that sends them as a chunked body.
 *
 * The I/O thread suspends the connection when it has sent every piece so
 * far, and the worker resumes it with the next one. The worker waits for
 * the client: while `max_queued` bytes are written and not yet handed to
 * libmicrohttpd, srv_stream_push blocks until the client has read enough, the
 * connection is gone, or `wait_s` seconds pass without progress (then the
 * reply is cut). A client that does not read thus holds a few pieces, not
 * the whole reply (a 123 MB map piled up whole before).
 *
 * Three hold the stream: the writer (the worker) until srv_stream_end, the
 * reader (the response) until libmicrohttpd frees it (srv_stream_release),
 * and the request until it is freed (srv_stream_release too). The request
 * is freed by whichever of srv_stream_end and srv_stream_detach comes
 * second.
 */
#ifndef SRV_STREAM_H
#define SRV_STREAM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct MHD_Connection;
typedef struct srv_stream srv_stream;

/* A stream for a connection the caller has suspended, holding the first
 * piece (a malloc'd `data` of len bytes, taken in any case), that lets the
 * writer run at most max_queued bytes ahead of the reader and wait at most
 * wait_s seconds for it, or until *stop (the server is stopping); NULL on
 * OOM. */
srv_stream *srv_stream_create(struct MHD_Connection *conn, char *data, size_t len,
                              size_t max_queued, double wait_s, const atomic_int *stop);

/* Writer: queues a malloc'd piece (taken in any case), after waiting for
 * room (see above). Returns 0, or -1 when the connection is gone or the
 * client read nothing for wait_s seconds (nothing more is worth writing). */
int srv_stream_push(srv_stream *s, char *data, size_t len);

/* Writer: no more pieces; ok = 0 cuts the reply short (the client sees an
 * incomplete chunked body: the reply failed after it had begun). The writer
 * must not use the stream afterwards. Returns 1 when the connection was
 * already gone (srv_stream_detach came first: the caller frees the
 * request), else 0. */
int srv_stream_end(srv_stream *s, int ok);

/* The connection is finished (libmicrohttpd's request-completed
 * notification): nothing is resumed any more. Returns 1 when the writer had
 * ended (the caller frees the request), else 0 (the writer will). */
int srv_stream_detach(srv_stream *s);

/* 1 when srv_stream_push would wait for the client now. */
int srv_stream_full(srv_stream *s);

/* Body bytes handed to libmicrohttpd so far. */
size_t srv_stream_sent(srv_stream *s);

/* libmicrohttpd's content reader for the response
 * (MHD_create_response_from_callback, cls = the stream). */
ssize_t srv_stream_read(void *cls, uint64_t pos, char *buf, size_t max);
/* Drops the reader's hold (the response's free callback) or the request's. */
void srv_stream_release(void *cls);

#endif
