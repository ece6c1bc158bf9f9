/* budget.h - one memory budget shared by every request (--max-memory).
 *
 * A compute request reserves its estimate before it allocates and releases it
 * once its reply has been sent, in three steps: its body, from the first byte
 * (on the I/O thread, without waiting: what does not fit now is 503, what
 * would never fit 413), the parse (the JSON tree made of the body, estimated
 * from it, and a gzip body's inflated text) before api_handle, then the rest
 * (parameters, intermediates, outputs and reply text: the api's element
 * estimate, through api_limits.reserve) once the sizes are known. What
 * fits is taken at once, whoever waits: a request waiting for more than is
 * free does not keep out the ones that fit beside it. One that does not fit
 * waits on its worker, up to a deadline; memory released goes to the
 * waiting requests that fit before anyone else can take it, those that
 * already hold a reservation first, each kind in order of arrival. A
 * request is refused at once when it could never fit, and when everything
 * reserved belongs to requests that are themselves waiting for more
 * (nothing would ever be released).
 */
#ifndef SRV_BUDGET_H
#define SRV_BUDGET_H

#include <stddef.h>

typedef enum {
    SRV_BUDGET_OK,
    SRV_BUDGET_NEVER,    /* more than the whole budget */
    SRV_BUDGET_TIMEOUT,  /* did not fit before the deadline */
    SRV_BUDGET_STUCK,    /* every reserved byte is held by a waiting request */
} srv_budget_result;

typedef struct srv_budget srv_budget;

/* The memory the parse of a JSON body of `len` bytes takes at most: the
 * body itself, and jansson 2.14's peak while it builds the tree, bounded
 * from what the body holds. Measured with a counting allocator (malloc's
 * usable size plus its 8-byte header, tests/test_server_units.c), per item,
 * peak beside this bound:
 *   a number in an array        42.5 bytes      48 (a separator)
 *   an empty string in an array 90.5            112 (a separator, two quotes)
 *   an empty array              138.5           304 (a separator, a bracket)
 *   an empty object             234.5           304
 *   {"a":0} in an array         346.5           417
 *   a member "key": 0           133             165
 *   one string of L bytes       2.68 L          4 L (its copy, and the
 *     lexer's buffer, which doubles: old and new at once while it grows)
 *   one number of L digits      2.1 L           3 L
 * so: 256 per '[' or '{', 48 per ',' or ':' (and one), 32 per '"', the bytes
 * inside strings once more, three times the longest token (string, number
 * or literal: the lexer keeps each token's text in one buffer that grows by
 * doubling, up to 2 L, and 3 L while it moves), and 4 KiB. Counted 16 bytes at a time: blocks without a quote
 * or a backslash are not looked at byte by byte. */
#define SRV_PARSE_PER_OPEN 256
#define SRV_PARSE_PER_SEP 48
#define SRV_PARSE_PER_QUOTE 32
#define SRV_PARSE_BASE 4096
size_t srv_budget_parse_estimate(const char *body, size_t len);

/* Lets freed memory stay mapped for the next request, within a budget of
 * `limit` bytes for a process of `threads` threads that allocate.
 *
 * A fresh mapping for each large array costs a page fault per 4 KiB: about
 * a third of the time of a GPT-2-layer request at T=256. So arrays below 32
 * MiB come from malloc's arenas (main.c), one per thread (up to `threads`:
 * one shared arena would make small requests wait on its lock), and each
 * arena keeps a free top of up to limit / 2 / threads (at most 64 MiB,
 * M_TRIM_THRESHOLD) when a request frees its arrays. Free memory in the
 * arenas' bins and the main arena's top is given back (malloc_trim) when
 * a reservation would leave less room than it holds. Call before the
 * threads allocate. */
void srv_budget_tune_malloc(size_t limit, int threads);

/* A budget of `limit` bytes; NULL on OOM. */
srv_budget *srv_budget_create(size_t limit);
/* Accepts NULL. Every reservation must have been released. */
void srv_budget_destroy(srv_budget *b);

/* Reserves `bytes` more for a request that holds *held already (0 at first)
 * and adds them to *held. Waits while they do not fit, until `deadline`
 * (CLOCK_MONOTONIC seconds). */
srv_budget_result srv_budget_reserve(srv_budget *b, size_t *held, size_t bytes, double deadline);

/* Gives back everything in *held and sets it to 0. */
void srv_budget_release(srv_budget *b, size_t *held);

/* The server is stopping: every wait ends now, and later reservations that
 * do not fit at once are refused (SRV_BUDGET_TIMEOUT) without waiting. */
void srv_budget_stop(srv_budget *b);

typedef struct {
    size_t limit, reserved, peak;   /* bytes */
    int waiting;                    /* requests waiting for memory now */
    unsigned long long waits;       /* reservations that had to wait */
    unsigned long long refused[4];  /* by srv_budget_result (OK unused) */
    unsigned long long trims;       /* times free arena memory was given back to the system */
} srv_budget_stats;

void srv_budget_get_stats(srv_budget *b, srv_budget_stats *st);

/* The default --max-elements for a budget of `limit` bytes: half of it in
 * float32 values (one request may hold half the memory all requests share:
 * two of the largest run at once), at least SRV_MIN_MAX_ELEMENTS (2^27,
 * 512 MiB of floats). A request beyond the budget itself is refused up
 * front all the same: its reservation is 413 before anything is allocated.
 * Half the physical memory of a 4 GiB machine minus the margin already
 * takes the book's GPT_CONFIG_124M from a seed (about 176M values). */
#define SRV_MIN_MAX_ELEMENTS ((size_t)1 << 27)
size_t srv_budget_max_elements(size_t limit);

/* The default budget: the cgroup memory limit of this process (cgroup v2
 * memory.max or v1 memory.limit_in_bytes, the smallest along its path) when
 * one is set, else half the physical memory; minus a margin of a quarter of
 * that (at least 64 MiB) for what the budget does not count: the process
 * itself, libmicrohttpd's buffers (16 KiB a connection), small requests
 * answered on the I/O threads, and the allocator's slack. Writes how it was found into `how` ("cgroup memory.max 1.50 GiB"). */
size_t srv_budget_default(char *how, size_t how_size);

#endif
