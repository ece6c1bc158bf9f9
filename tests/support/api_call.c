/* api_call.c - see api_call.h. */
#include "api_call.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

tapi_reply tapi_handle(api_endpoint ep, const char *body, const api_limits *lim) {
    static const api_limits defaults = {.max_elements = 100000000};
    api_reply r;
    int st = api_handle(ep, body, strlen(body), lim ? lim : &defaults, &r);
    ck_assert_int_eq(st, r.status);
    ck_assert_ptr_nonnull(r.body.data);
    json_error_t je;
    tapi_reply out = {.status = st, .j = json_loads(r.body.data, 0, &je), .text = strdup(r.body.data)};
    ck_assert_msg(out.j != NULL, "reply is not JSON (%s): %.300s", je.text, r.body.data);
    api_reply_free(&r);
    return out;
}

void tapi_reply_free(tapi_reply *r) {
    json_decref(r->j);
    free(r->text);
    *r = (tapi_reply){0};
}

json_t *tapi_call(api_endpoint ep, const char *body, const api_limits *lim, int want_status) {
    tapi_reply r = tapi_handle(ep, body, lim);
    ck_assert_msg(r.status == want_status, "status %d, expected %d: %.600s", r.status, want_status,
                  r.text);
    json_t *j = r.j;
    r.j = NULL;
    tapi_reply_free(&r);
    return j;
}

char *tapi_body(json_t *r, const char *extra_json) {
    ck_assert_ptr_nonnull(r);
    if (extra_json) {
        json_t *x = json_loads(extra_json, 0, NULL);
        ck_assert_msg(x != NULL, "extra members are not JSON: %s", extra_json);
        json_object_update(r, x);
        json_decref(x);
    }
    char *s = json_dumps(r, JSON_COMPACT);
    ck_assert_ptr_nonnull(s);
    json_decref(r);
    return s;
}

static int record_reserve(void *ctx, size_t bytes, char *msg, size_t size) {
    (void)msg, (void)size;
    *(size_t *)ctx = bytes;
    return 0;
}

size_t tapi_reserved(api_endpoint ep, const char *body, const api_limits *lim) {
    size_t reserved = 0;
    api_limits l = lim ? *lim : (api_limits){.max_elements = 100000000};
    l.reserve = record_reserve;
    l.reserve_ctx = &reserved;
    json_decref(tapi_call(ep, body, &l, 200));
    return reserved;
}

void tapi_expect_field(api_endpoint ep, const char *body, const api_limits *lim, int status, const char *field) {
    json_t *j = tapi_call(ep, body, lim, status);
    const char *f = json_string_value(json_object_get(json_object_get(j, "error"), "field"));
    ck_assert_msg(f && strcmp(f, field) == 0, "%s: field %s", body, f ? f : "null");
    json_decref(j);
}
