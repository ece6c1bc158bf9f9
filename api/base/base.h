/* base.h - what every folder of api/ uses (prefix api__): errors as api_err,
 * the growing byte buffer replies are written into, and the clock.
 *
 *   errors.c   the API_ERROR_MAP rows, api__fail, user text echoed safely,
 *              core's attn_error mapped to an api_err
 *   buf.c      api_buf: reserve, put, printf, JSON strings; huge pages for
 *              large arrays; UTF-8 writing; api__now_ms
 *   json_guard.c  jansson's allocator and a parse that never aborts
 */
#ifndef API_BASE_H
#define API_BASE_H

#include <stddef.h>
#include <stdint.h>

#include "api/api.h"
#include "core/attention.h"

/* ==== jansson (json_guard.c) ============================================== */

struct json_t;
struct json_error_t;

/* Before a parse on this thread: jansson's allocator installed (once), this
 * thread's failure flag cleared. */
void api__json_begin(void);
/* 1 when an allocation of jansson's on this thread failed since
 * api__json_begin: nothing it returned is to be trusted. */
int api__json_failed(void);
/* json_loadb(text, len, JSON_REJECT_DUPLICATES), never aborting: NULL, with
 * api__json_failed() set, when jansson asserted after a failed allocation. */
struct json_t *api__json_parse(const char *text, size_t len, struct json_error_t *je);

/* Most axes a tensor of a request or a reply has. */
#define API_MAX_RANK 4

/* ==== Errors ============================================================== */

/* Longest piece of user text echoed in an error message or field. */
#define API_ECHO_MAX 128

typedef struct {
    api_error code;      /* its row in API_ERROR_MAP: status and code text */
    char field[192];     /* "" = none (null in the body) */
    char message[512];
} api_err;

/* Fills e and returns -1. field may be NULL. printf-style message. */
int api__fail(api_err *e, api_error code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Copies at most API_ECHO_MAX bytes of user text into dst (size >= API_ECHO_MAX + 4),
 * control characters replaced by '?', cut on a UTF-8 boundary, "..." when cut.
 * Returns dst. */
char *api__echo(char *dst, size_t size, const char *src);

/* Maps an attn_error to an api_err: status, code, field renamed to the
 * request's own names (GPT2 n_head, torch embed_dim, ...). */
void api__from_attn(api_err *e, const attn_error *ae, attn_module m);

/* ==== Output buffer ======================================================= */

/* Asks for 2 MiB pages over the whole 2 MiB blocks of p[0..bytes) when it
 * is 32 MiB or more (malloc maps such blocks afresh for each call: a 50 MB
 * map takes 12,800 page faults in 4 KiB pages, 25 in huge pages). Nothing
 * happens where the kernel's transparent huge pages are off; where they are
 * "always" it changes nothing either. */
void api__huge_pages(void *p, size_t bytes);

/* Makes room for extra more bytes; 0, or -1 (and b->failed) on failure. */
int api__buf_reserve(api_buf *b, size_t extra);
void api__buf_put(api_buf *b, const char *s, size_t n);
void api__buf_puts(api_buf *b, const char *s);
void api__buf_printf(api_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string: quoted, escaped; NULL writes null. */
void api__buf_json_string(api_buf *b, const char *s);
/* The same for n bytes that may hold NUL (written \u0000); s[n] must be NUL. */
void api__buf_json_stringn(api_buf *b, const char *s, size_t n);

/* Writes code point cp (at most 0x10FFFF) as UTF-8 at out (1 to 4 bytes,
 * room for 4 needed); returns the count. The tokenizers and the chat
 * templates' lexer both write code points with it. */
size_t api__utf8_put(char *out, uint32_t cp);

/* Monotonic milliseconds: the reply's timings. */
double api__now_ms(void);

#endif
