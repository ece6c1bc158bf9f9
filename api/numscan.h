/* numscan.h - numeric arrays of a request body read without jansson
 * (private to api/, prefix api__).
 *
 * jansson makes one allocated value per number (about 30 MB/s on tensor
 * text). Before jansson sees a body, api__scan_body finds the arrays that
 * are tensors (the value of "inputs", "query", "key", "value", "attn_mask",
 * "key_padding_mask", a flat tensor's "data", or an entry of "state_dict"),
 * reads those made only of numbers straight into float arrays, decodes the
 * "base64" text of binary tensors, and gives jansson a copy of the body in
 * which each of them is replaced by a short placeholder string.
 * api__tensor_read takes a placeholder's floats (or bytes) back.
 *
 * Anything unusual (a boolean, a string, a ragged or empty axis, more than
 * API_MAX_RANK axes, a number jansson would reject or that overflows float32)
 * leaves that array as it is, so jansson and tensor_in.c report it with the
 * messages and field paths they always gave.
 *
 * Numbers are rounded as Python's json and torch.tensor round them: decimal
 * to the nearest double, then to float32 (which is not always strtof's
 * float: the double may be a float midpoint that then rounds to even). The
 * digits are read eight at a time; the double is exact by Clinger's fast
 * path (digits and power of ten exact doubles), else by Eisel and Lemire's
 * 128-bit product (api/pow10_tables.h), else, for the rare cases the product
 * cannot decide, numbers past 19 digits whose two ends round apart and
 * exponents outside the table, by strtod.
 */
#ifndef API_NUMSCAN_H
#define API_NUMSCAN_H

#include <stddef.h>
#include <stdint.h>

#include "api/api_internal.h"

/* Reads the JSON number at p (p < end). Returns the characters it takes,
 * or 0 when p does not start a JSON number that this fast reader takes
 * (invalid syntax, an integer jansson keeps as int64 that overflows it, more
 * than 63 characters, a double overflow): the caller then leaves the text
 * to jansson. A JSON integer "-0" is 0, as in Python; "-0.0" is -0. */
size_t api__scan_number(const char *p, const char *end, double *out);

/* One array taken out of the body: numbers read as floats, or the "base64"
 * text of a binary tensor decoded to bytes (rank 0). */
typedef struct {
    int rank;
    int shape[API_MAX_RANK];
    size_t count;       /* floats, or bytes when rank is 0 */
    float *data;        /* count floats, malloc'd; NULL once taken */
    uint8_t *bytes;     /* rank 0: the decoded bytes, malloc'd */
} api_scanned;

typedef struct {
    char *text;         /* the body with placeholders (malloc'd), or NULL */
    size_t len;
    api_scanned *arrays;
    int n, cap;
    size_t elements;    /* floats taken out, at most the budget */
} api_scan;

/* Scans body[0..len). budget bounds the floats taken out (arrays past it are
 * left to jansson, whose reading then meets the usual limit). A large array
 * of rank 2 or more is read on the threads of pool (NULL: this thread): its
 * rows are found first (a pass over brackets only), then read in groups,
 * each number exactly as one thread reads it, and every check the same.
 * Returns 0, or -1 when an allocation failed (s is then freed). With no
 * array taken out, s->text is NULL and the body is parsed as it is. */
int api__scan_body(const char *body, size_t len, size_t budget, struct attn_pool *pool,
                   api_scan *s);
void api__scan_free(api_scan *s);

/* On by default; tests and benchmarks turn it off (for the whole process)
 * to compare with jansson reading every number. */
void api__scan_enable(int on);

/* The scan that api__tensor_read consults on this thread (NULL = none):
 * api_handle sets it for the time of one request. */
void api__scan_set_current(api_scan *s);
/* If j is a placeholder of the current scan, its array; else NULL. */
api_scanned *api__scan_lookup(const json_t *j);

#endif
