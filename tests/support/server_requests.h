/* server_requests.h - request bodies and reply checks shared by the server
 * tests (tests/test_server_*.c). */
#ifndef SERVER_REQUESTS_H
#define SERVER_REQUESTS_H

#include <stddef.h>

#include "server_harness.h"

/* The seed chapter's torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0,
 * num_heads=2) on the six "Your journey starts with one step" embeddings. */
extern const char srvt_seed_mha[];

/* Checks a 200 reply to srvt_seed_mha: context equals the chapter's printed
 * tensor to 4 decimals. Returns 0, or -1 with the reason on stderr. */
int srvt_check_seed_mha(const srvt_reply *r);

/* Attention without weights (seed 3.3) on the same embeddings; the check
 * compares the "journey" row of the context, [0.4419, 0.6515, 0.5683]. */
extern const char srvt_seed_simple[];
int srvt_check_seed_simple(const srvt_reply *r);

/* A MultiHeadAttention request that computes for a while (d_out 2048, one
 * head, `tokens` tokens of 8 values) and returns only "timing": a small
 * reply for a long job. malloc'd; NULL on OOM. */
char *srvt_slow_body(int tokens);
/* Checks a 200 reply to srvt_slow_body: its shape and timing. */
int srvt_check_slow(const srvt_reply *r, int tokens);

/* MultiHeadAttention with the weights of its 4 heads over `tokens` tokens of
 * 64 values (d_out 64, seed 5, return context and attn_weights): about 33 MB
 * of JSON reply at 1,024 tokens. malloc'd (fails the test when out of
 * memory); its length in *len (len may be NULL). */
char *srvt_map_body(int tokens, size_t *len);

/* A reply to srvt_slow_body(tokens) under load: computed (200, as
 * srvt_check_slow wants it) or refused for now (503 overloaded with a
 * Retry-After, whose value goes into retry_after, cap bytes; may be NULL).
 * Returns 200 or 503, or -1 with the reason on stderr. */
int srvt_check_slow_or_busy(const srvt_reply *r, int tokens, char *retry_after, size_t cap);

#endif
