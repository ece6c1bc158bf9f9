/* framing.c - see framing.h. */
#include "framing.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* What the head says about its framing, gathered in one pass. */
typedef struct {
    int hosts, lengths, encodings;
    char length[2][48];   /* the first two Content-Length values, clamped */
    char te[160];         /* every Transfer-Encoding value, joined by ", " */
} head;

static enum MHD_Result collect(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value) {
    (void)kind;
    head *h = cls;
    if (!value) value = "";
    if (strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0) {
        h->hosts++;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        if (h->lengths < 2) snprintf(h->length[h->lengths], sizeof h->length[0], "%s", value);
        h->lengths++;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        size_t n = strlen(h->te);
        snprintf(h->te + n, sizeof h->te - n, "%s%s", h->encodings ? ", " : "", value);
        h->encodings++;
    }
    return MHD_YES;
}

void srv_framing_fail(srv_framing *f, api_error err, const char *fmt, ...) {
    f->err = err;
    f->status = api_error_get(err)->status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
    /* The client's text in the message: printable ASCII only. */
    for (char *p = f->message; *p; p++)
        if (!isprint((unsigned char)*p)) *p = '?';
}

/* A Content-Length value: 1*DIGIT that fits 64 bits (RFC 9110 8.6). */
static void check_value(const char *v, srv_framing *f) {
    size_t n = strspn(v, "0123456789");
    if (n == 0 || v[n] != '\0') {
        srv_framing_fail(f, API_E_BAD_REQUEST, "Content-Length '%.40s' is not a decimal number", v);
        return;
    }
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (x > (UINT64_MAX - 9) / 10) {
            srv_framing_fail(f, API_E_TOO_LARGE, "Content-Length %.40s is beyond any limit", v);
            return;
        }
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
}

static void check_lengths(const head *h, srv_framing *f) {
    if (h->lengths > 1) {
        srv_framing_fail(f, API_E_BAD_REQUEST, "Content-Length is given %d times ('%.20s', '%.20s'): "
             "send it once", h->lengths, h->length[0], h->length[1]);
        return;
    }
    if (h->lengths == 1) check_value(h->length[0], f);
}

/* The next coding of a Transfer-Encoding list, lowercase, parameters dropped;
 * returns the rest of the list or NULL at its end. */
static const char *next_coding(const char *p, char *out, size_t cap) {
    while (*p == ' ' || *p == '\t' || *p == ',') p++;
    if (!*p) return NULL;
    size_t n = 0;
    for (; *p && *p != ','; p++)
        if (*p != ' ' && *p != '\t' && n + 1 < cap) out[n++] = (char)tolower((unsigned char)*p);
    out[n] = '\0';
    char *semi = strchr(out, ';');
    if (semi) *semi = '\0';
    return p;
}

static void check_codings(const head *h, int http10, srv_framing *f) {
    if (http10) {
        srv_framing_fail(f, API_E_BAD_REQUEST, "Transfer-Encoding in an HTTP/1.0 request");
        return;
    }
    if (h->lengths) {
        srv_framing_fail(f, API_E_BAD_REQUEST, "both Content-Length and Transfer-Encoding: send one");
        return;
    }
    char coding[48], last[48] = "", other[48] = "";
    int chunked = 0, count = 0;
    for (const char *p = h->te; (p = next_coding(p, coding, sizeof coding)) != NULL;) {
        if (!coding[0]) continue;
        count++;
        chunked += strcmp(coding, "chunked") == 0;
        if (strcmp(coding, "chunked") != 0 && !other[0]) snprintf(other, sizeof other, "%s", coding);
        snprintf(last, sizeof last, "%s", coding);
    }
    if (count == 0 || strcmp(last, "chunked") != 0)
        srv_framing_fail(f, API_E_BAD_REQUEST, "Transfer-Encoding '%.60s' does not end in chunked: the "
             "body's end cannot be known", h->te);
    else if (chunked > 1)
        srv_framing_fail(f, API_E_BAD_REQUEST, "Transfer-Encoding '%.60s' applies chunked twice", h->te);
    else if (other[0])
        srv_framing_fail(f, API_E_NOT_IMPLEMENTED, "transfer coding '%.40s' is not implemented: send the "
             "body chunked, or with Content-Encoding: gzip", other);
}

static int takes_body(const char *method) {
    return strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 || strcmp(method, "PATCH") == 0;
}

void srv_framing_check(struct MHD_Connection *conn, const char *version, const char *method,
                       srv_framing *out) {
    memset(out, 0, sizeof *out);
    head h = {0};
    MHD_get_connection_values(conn, MHD_HEADER_KIND, collect, &h);
    int http10 = version && strcmp(version, MHD_HTTP_VERSION_1_0) == 0;
    int http11 = version && strcmp(version, MHD_HTTP_VERSION_1_1) == 0;
    if (http11 && h.hosts == 0) {
        srv_framing_fail(out, API_E_BAD_REQUEST, "an HTTP/1.1 request without Host");
        return;
    }
    if (h.hosts > 1) {
        srv_framing_fail(out, API_E_BAD_REQUEST, "Host is given %d times", h.hosts);
        return;
    }
    if (h.encodings) {
        check_codings(&h, http10, out);
        return;
    }
    check_lengths(&h, out);
    if (!out->status && !h.lengths && takes_body(method))
        srv_framing_fail(out, API_E_LENGTH_REQUIRED, "%.10s without Content-Length or Transfer-Encoding: "
             "send the body's length", method);
}

void srv_framing_check_length(struct MHD_Connection *conn, srv_framing *out) {
    memset(out, 0, sizeof *out);
    head h = {0};
    MHD_get_connection_values(conn, MHD_HEADER_KIND, collect, &h);
    if (h.encodings) return; /* libmicrohttpd ignores Content-Length then */
    if (h.lengths) check_value(h.length[0], out);
}

int srv_framing_body(const srv_framing *f, api_buf *buf) {
    *buf = (api_buf){0};
    return api_error_reply(buf, f->err, f->message, NULL);
}
