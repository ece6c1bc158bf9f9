/* delivered.h - how much of a reply reached its client, for the access
 * log's out= and /metrics' bytes out.
 *
 * A reply libmicrohttpd wrote whole was delivered whole as far as the
 * server can tell (its kernel has it to send). One cut short (the client
 * hung up, reset, or timed out) got what its client's TCP acknowledged:
 * counted from the socket's own counters (TCP_INFO's bytes acknowledged,
 * the send queue), from where the reply began to where it ended, less the
 * reply's head.
 */
#ifndef SRV_DELIVERED_H
#define SRV_DELIVERED_H

#include <stddef.h>

/* Bytes socket fd has been given to send so far: those its peer
 * acknowledged and those still queued. 0 when it cannot be told. */
unsigned long long srv_tcp_written(int fd);

/* Bytes the peer of socket fd has acknowledged so far; 0 when it cannot be
 * told. */
unsigned long long srv_tcp_acked(int fd);

/* Of a reply of `body` bytes after a head of `head` bytes, begun when the
 * socket had been given `written_before` bytes, what the peer received:
 * acked - written_before - head, within [0, body]. */
size_t srv_delivered(unsigned long long acked, unsigned long long written_before, size_t head,
                     size_t body);

#endif
