/* reply_check.c - see reply_check.h. */
#include "tests/support/reply_check.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>


static int fail(char *why, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return -1;
}

api_endpoint reply_check_endpoint(unsigned char first_byte) {
    /* the attention endpoints, which come first in api_endpoint order; +2 so
     * that the digits 0 to 4 name them in that order */
    unsigned modules = 0;
    while (modules < API_EP_COUNT && api_endpoint_get((api_endpoint)modules)->kind == API_KIND_MODULE)
        modules++;
    return (api_endpoint)((((unsigned)first_byte & ~REPLY_CHECK_GZIP) + 2) % modules);
}

/* The server's way: a safetensors reply in parts, then made whole here
 * for the checks (left in parts, and failing them, if that runs out of
 * memory). */
static void handle_as_server(api_endpoint ep, const char *body, size_t len, api_reply *reply) {
    api_limits lim = {.max_elements = REPLY_CHECK_MAX_ELEMENTS, .zero_copy = 1};
    api_handle(ep, body, len, &lim, reply);
    api_reply_flatten(reply);
}

void reply_check_run(const unsigned char *data, size_t size, api_reply *reply) {
    api_endpoint ep = reply_check_endpoint(data[0]);
    if (!(data[0] & REPLY_CHECK_GZIP)) {
        handle_as_server(ep, (const char *)data + 1, size - 1, reply);
        return;
    }
    char *body, why[128];
    size_t len;
    int rc = api_gunzip(data + 1, size - 1, 1 << 20, &body, &len, why);
    if (rc != API_GZ_OK) {
        *reply = (api_reply){.content_type = "application/json"};
        api_error err = rc == API_GZ_TOO_LARGE ? API_E_TOO_LARGE
                        : rc == API_GZ_NOMEM   ? API_E_OUT_OF_MEMORY
                                               : API_E_INVALID_GZIP;
        reply->status = api_error_get(err)->status;
        if (api_error_reply(&reply->body, err, why, NULL) != 0) api_buf_free(&reply->body);
        return;
    }
    handle_as_server(ep, body, len, reply);
    free(body);
}

static int known_status(int s) {
    return s == 200 || s == 400 || s == 413 || s == 500 || s == 503;
}

int reply_check_error(const json_t *root, int status, char *why, size_t size) {
    const json_t *err = json_object_get(root, "error");
    if (!json_is_object(err) || json_object_size(root) != 1)
        return fail(why, size, "status %d but the body is not {\"error\": {...}}", status);
    const json_t *st = json_object_get(err, "status");
    const json_t *code = json_object_get(err, "code");
    const json_t *msg = json_object_get(err, "message");
    const json_t *field = json_object_get(err, "field");
    if (!json_is_integer(st) || json_integer_value(st) != status)
        return fail(why, size, "error.status is not the reply's status %d", status);
    if (!json_is_string(code) || json_string_length(code) == 0)
        return fail(why, size, "error.code is missing or empty");
    if (!json_is_string(msg) || json_string_length(msg) == 0)
        return fail(why, size, "error.message is missing or empty");
    if (strchr(json_string_value(msg), '\n'))
        return fail(why, size, "error.message has a line break");
    if (!(json_is_null(field) || json_is_string(field)))
        return fail(why, size, "error.field is neither a string nor null");
    if (json_object_size(err) != 4) return fail(why, size, "error has fields besides the four");
    return 0;
}

/* Every number of a 200 is finite (jansson rejects NaN text, but a writer
 * could still print "inf" or "nan", which would not parse at all). */
static int numbers_ok(const json_t *j) {
    if (json_is_real(j)) {
        double v = json_real_value(j);
        return v == v && v - v == 0;
    }
    if (json_is_array(j)) {
        size_t i;
        const json_t *x;
        json_array_foreach(j, i, x) if (!numbers_ok(x)) return 0;
    }
    if (json_is_object(j)) {
        const char *k;
        const json_t *x;
        json_object_foreach((json_t *)j, k, x) if (!numbers_ok(x)) return 0;
    }
    return 1;
}

/* A safetensors 200: an 8-byte length, a JSON header whose tensors' byte
 * ranges tile the rest of the body in order, with no gap. */
static int safetensors_ok(const api_buf *b, char *why, size_t size) {
    const unsigned char *d = (const unsigned char *)b->data;
    if (b->len < 8) return fail(why, size, "a safetensors reply of %zu bytes", b->len);
    uint64_t n = 0;
    for (int k = 0; k < 8; k++) n |= (uint64_t)d[k] << (8 * k);
    if (n > b->len - 8 || n % 8) return fail(why, size, "a safetensors header of %llu bytes",
                                              (unsigned long long)n);
    json_error_t je;
    json_t *h = json_loadb(b->data + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(h)) {
        json_decref(h);
        return fail(why, size, "the safetensors header is not a JSON object: %s", je.text);
    }
    const char *k;
    json_t *v;
    json_int_t end = 0;
    int rc = 0;
    json_object_foreach(h, k, v) {
        if (strcmp(k, "__metadata__") == 0) continue;
        const json_t *off = json_object_get(v, "data_offsets");
        json_int_t a = json_integer_value(json_array_get(off, 0)),
                   z = json_integer_value(json_array_get(off, 1));
        if (a != end || z < a) rc = fail(why, size, "safetensors tensor %s is not where the last ended", k);
        end = z;
    }
    if (rc == 0 && (uint64_t)end != b->len - 8 - n)
        rc = fail(why, size, "safetensors data is %zu bytes, the header describes %lld",
                  (size_t)(b->len - 8 - n), (long long)end);
    json_decref(h);
    return rc;
}

/* A 200 that is not JSON: a safetensors file (its header a JSON object with
 * the module in __metadata__), a PNG, or an SVG document. */
static int binary_ok(const api_reply *reply, char *why, size_t size) {
    const api_buf *b = &reply->body;
    const char *type = reply->content_type;
    if (strcmp(type, "image/png") == 0)
        return b->len > 33 && memcmp(b->data, "\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR", 16) == 0
                   ? 0 : fail(why, size, "an image/png reply that is not a PNG");
    if (strcmp(type, "image/svg+xml") == 0)
        return b->len > 40 && strncmp(b->data, "<?xml", 5) == 0 && strstr(b->data, "</svg>\n") != NULL
                   ? 0 : fail(why, size, "an image/svg+xml reply that is not an SVG document");
    if (strcmp(type, "application/octet-stream") != 0)
        return fail(why, size, "a 200 of type %s", type);
    uint64_t n = 0;
    for (int k = 7; k >= 0 && b->len >= 8; k--) n = n << 8 | (unsigned char)b->data[k];
    if (b->len < 8 || n > b->len - 8 || n % 8 != 0)
        return fail(why, size, "a safetensors reply with a header length of %llu", (unsigned long long)n);
    json_t *h = json_loadb(b->data + 8, (size_t)n, JSON_REJECT_DUPLICATES, NULL);
    int ok = json_is_string(json_object_get(json_object_get(h, "__metadata__"), "module"));
    json_decref(h);
    if (!ok) return fail(why, size, "a safetensors header without __metadata__.module");
    return safetensors_ok(b, why, size);
}

int reply_check(const api_reply *reply, char *why, size_t size) {
    const api_buf *b = &reply->body;
    if (!known_status(reply->status)) return fail(why, size, "unexpected status %d", reply->status);
    if (reply->n_parts) return fail(why, size, "a reply still in %d parts", reply->n_parts);
    if (b->data == NULL || b->len == 0 || b->failed)
        return fail(why, size, "status %d with no body", reply->status);
    if (reply->status == 200 && reply->content_type && strcmp(reply->content_type, "application/json") != 0)
        return binary_ok(reply, why, size);
    if (memchr(b->data, '\0', b->len)) return fail(why, size, "the body holds a NUL byte");
    json_error_t je;
    json_t *root = json_loadb(b->data, b->len, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(root)) {
        json_decref(root);
        return fail(why, size, "the body is not a JSON object: %s (column %d)", je.text, je.column);
    }
    int rc = 0;
    if (reply->status == 200) {
        if (!json_is_string(json_object_get(root, "module")) ||
            !json_is_object(json_object_get(root, "shape")))
            rc = fail(why, size, "a 200 without module and shape");
        else if (!numbers_ok(root))
            rc = fail(why, size, "a 200 with a non-finite number");
    } else {
        rc = reply_check_error(root, reply->status, why, size);
    }
    json_decref(root);
    return rc;
}
