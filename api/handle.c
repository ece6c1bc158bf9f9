/* handle.c - api_handle: one request body to one reply, the same steps for
 * every endpoint (pipeline.h): read, parse, plan, admit, prepare, compute,
 * contents, write. The endpoint's row names its kind, whose steps do what
 * differs; the format's row names its writer. */
#include "api/pipeline.h"
#include "api/numbers/numbers.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ==== The tables ========================================================= */

static const api_kind_ops *const kinds[API_KIND_COUNT] = {
    [API_KIND_MODULE] = &api__module_kind,
    [API_KIND_MODEL] = &api__model_kind,
    [API_KIND_OPENAI] = &api__openai_kind,
    [API_KIND_EMBED] = &api__embed_kind,
    [API_KIND_TOKENS] = &api__tokens_kind,
};

const api_kind_ops *api__kind_get(api_kind k) {
    return (unsigned)k < API_KIND_COUNT ? kinds[k] : NULL;
}

typedef int (*writer_fn)(api_buf *b, const api_contents *c, api_st_parts *parts, api_err *e);

static const writer_fn writers[API_FORMAT_COUNT] = {
#define API_FORMAT_WRITER(id, name, mime, flags, per_value, writer) [API_FORMAT_##id] = writer,
    API_FORMAT_MAP(API_FORMAT_WRITER)
#undef API_FORMAT_WRITER
};

/* ==== read =============================================================== */

/* The body as a tree in *root: tensor arrays taken out first by the scanner
 * (api/numbers/numscan.c), jansson reads the rest. */
static int read_tree(const api_job *j, const char *body, size_t len, api_scan *scan,
                     json_t **root, api_err *e) {
    json_error_t je;
    api__json_begin();
    if (api__scan_body(body, len, j->max, j->lim ? j->lim->compute : NULL, scan))
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the request's tensors");
    api__scan_set_current(scan);
    je.text[0] = '\0';
    if (scan->text) *root = api__json_parse(scan->text, scan->len, &je);
    if (*root == NULL && !api__json_failed()) /* no tensor taken out, or a syntax error: its position */
        *root = api__json_parse(body, len, &je);
    /* Even a tree that came back is not to be trusted after a failed
     * allocation: jansson 2.14's lexer drops the character it could not
     * append ("SelfAttention_v1" parsed as "SelfAttention_1"). */
    if (api__json_failed() || (*root == NULL && json_error_code(&je) == json_error_out_of_memory))
        return api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the parsed request");
    if (*root == NULL) {
        /* jansson's text quotes the input near the error: keep it one line */
        char text[API_ECHO_MAX + 4];
        return api__fail(e, API_E_INVALID_JSON, NULL, "malformed JSON at line %d, column %d: %s",
                         je.line, je.column, api__echo(text, sizeof text, je.text));
    }
    if (!json_is_object(*root))
        return api__fail(e, API_E_INVALID_TYPE, NULL, "the request body must be a JSON object");
    return 0;
}

/* ==== admit ============================================================== */

/* 413 over --max-elements or --max-work; 1 when the request is to run elsewhere
 * (lim->defer_above, lim->defer_generation); the memory budget's reservation
 * (503 when refused). */
static int admit(const api_job *j, api_err *e) {
    const api_limits *lim = j->lim;
    if (j->need > j->max)
        return api__fail(e, API_E_TOO_LARGE, NULL,
                         "this %s needs about %zu values (%s), over this server's limit of %zu",
                         j->need_noun, j->need, j->need_what, j->max);
    if (lim && lim->max_work > 0 && j->ops > lim->max_work)
        return api__fail(e, API_E_TOO_LARGE, j->ops_field,
                         "this %s takes about %.3g multiply-adds (its length in %s), over this "
                         "server's limit of %.3g (--max-work)",
                         j->need_noun, j->ops, j->ops_field, lim->max_work);
    if (lim && lim->defer_above && j->work > lim->defer_above) return 1;
    if (lim && lim->defer_generation && j->generates) return 1;
    if (lim && lim->reserve) {
        char msg[256] = "no memory for this request now; retry later";
        size_t bytes = j->need > SIZE_MAX / sizeof(float) ? SIZE_MAX : j->need * sizeof(float);
        if (lim->reserve(lim->reserve_ctx, bytes, msg, sizeof msg) != 0) {
            msg[sizeof msg - 1] = '\0';
            return api__fail(e, API_E_OVERLOADED, NULL, "%s", msg);
        }
    }
    return 0;
}

/* ==== write ============================================================== */

/* A large JSON reply goes out while it is written, once nothing in it can
 * make it an error but a failed allocation. Returns the first reservation. */
static size_t plan_stream(const api_job *j, const api_contents *c, api_reply *reply) {
    const api_format_info *f = api_format_get(j->fmt.format);
    const api_limits *lim = j->lim;
    size_t reserve = f->per_value ? j->reply_values * f->per_value + 4096 : 4096;
    if (lim && lim->stream && lim->stream_above && (f->flags & API_FMT_STREAMS) &&
        reserve >= lim->stream_above && !api__contents_nonfinite(c)) {
        size_t piece = lim->stream_piece ? lim->stream_piece : lim->stream_above;
        reply->body.drain = lim->stream;
        reply->body.drain_ctx = lim->stream_ctx;
        reply->body.drain_at = piece;
        reserve = piece + piece / 4;
    }
    return reserve;
}

/* The reply body in the requested format; a float32 safetensors reply is
 * left in the arrays the computation wrote when the caller takes parts. */
static int write_reply(api_job *j, api_contents *c, api_reply *reply, api_err *e) {
    const api_format_info *f = api_format_get(j->fmt.format);
    int in_parts = j->lim && j->lim->zero_copy && (f->flags & API_FMT_PARTS) && !j->fmt.half;
    api_st_parts *parts = in_parts ? malloc(sizeof *parts) : NULL;
    int rc = -1;
    if (in_parts && parts == NULL) {
        api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    } else if (api__buf_reserve(&reply->body, plan_stream(j, c, reply)) != 0) {
        api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    } else {
        if (parts) parts->n = 0;
        c->t_serialise = api__now_ms();
        rc = writers[j->fmt.format](&reply->body, c, parts, e);
    }
    if (rc == 0 && parts && parts->n > 0 && api__reply_adopt(reply, &j->arrays, parts) != 0)
        rc = api__fail(e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
    free(parts);
    reply->body.drain = NULL; /* what is left is the caller's */
    reply->content_type = f->mime;
    return rc;
}

/* ==== the request ======================================================== */

static int fail_reply(api_reply *reply, const api_err *e, const char *error_event) {
    api_reply_free(reply);
    reply->status = api_error_get(e->code)->status;
    reply->content_type = "application/json";
    api_buf err = {0};
    if (api_error_reply(&err, e->code, e->message, e->field) != 0) {
        api_buf_free(&err);
        reply->status = api_error_get(API_E_OUT_OF_MEMORY)->status;
    } else if (error_event) { /* the stream has begun: its last event */
        api__buf_puts(&reply->body, error_event);
        api__buf_put(&reply->body, err.data, err.len);
        api__buf_puts(&reply->body, "\n\n");
        reply->content_type = "text/event-stream";
        api_buf_free(&err);
    } else {
        reply->body = err;
    }
    return reply->status;
}

/* parse, plan and admit: 0, 1 when deferred, -1 with e filled. */
static int accept_request(api_job *j, const api_kind_ops *k, const json_t *root, api_err *e) {
    if (k->parse(j, root, e) || k->plan(j, e)) return -1;
    return admit(j, e);
}

/* prepare, compute and write, the tree freed before computing. */
static int run(api_job *j, const api_kind_ops *k, json_t **root, api_reply *reply, api_err *e) {
    if (k->prepare(j, e)) return -1;
    json_decref(*root);
    *root = NULL;
    double t1 = api__now_ms();
    reply->ms_parse = t1 - j->t0;
    if (k->compute(j, e)) return -1;
    double t2 = api__now_ms();
    reply->ms_compute = t2 - t1;
    api_contents c = {.fmt = j->fmt, .ms_parse = reply->ms_parse, .ms_compute = reply->ms_compute};
    if (k->contents(j, &c, e) || write_reply(j, &c, reply, e)) return -1;
    reply->ms_serialise = api__now_ms() - t2;
    return 0;
}

int api_handle(api_endpoint ep, const char *body, size_t len, const api_limits *lim,
               api_reply *reply) {
    *reply = (api_reply){.content_type = "application/json"};
    api_err e = {.code = API_E_INTERNAL_ERROR};
    api_job j = {.ep = ep, .lim = lim, .t0 = api__now_ms(),
                 .max = lim && lim->max_elements ? lim->max_elements : ATTN_MAX_ELEMENTS};
    const api_endpoint_info *info = api_endpoint_get(ep);
    const api_kind_ops *k = info ? kinds[info->kind] : NULL;
    api_scan scan = {0};
    json_t *root = NULL;
    int rc = -1;
    if (k == NULL) api__fail(&e, API_E_NOT_FOUND, NULL, "unknown endpoint %d", (int)ep);
    else if ((j.state = calloc(1, k->state_size)) == NULL)
        api__fail(&e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the request");
    else if (read_tree(&j, body ? body : "", body ? len : 0, &scan, &root, &e) == 0 &&
             (rc = accept_request(&j, k, root, &e)) == 0)
        rc = run(&j, k, &root, reply, &e);
    json_decref(root);
    api__scan_set_current(NULL);
    api__scan_free(&scan);
    if (k && j.state) k->release(&j);
    free(j.state);
    api__arrays_free(&j.arrays);
    if (rc == 1) { /* deferred: status 0, no body */
        reply->generation = j.generates;
        return 0;
    }
    if (rc != 0) {
        if (e.code == API_E_INTERNAL_ERROR && reply->body.failed)
            api__fail(&e, API_E_OUT_OF_MEMORY, NULL, "cannot allocate the reply");
        return fail_reply(reply, &e, j.error_event);
    }
    reply->status = 200;
    return 200;
}
