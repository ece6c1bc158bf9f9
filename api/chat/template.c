/* template.c - the interface (chat.h): compile a template once, render it
 * with a context as often as wanted, from any thread. */
#include "api/chat/jinja.h"

#include <stdlib.h>
#include <string.h>

struct api_chat_template {
    jinja_arena arena; /* every node, the source after the whitespace options */
    jinja_node *root;
};

static const struct { int code; const char *text; } messages[] = {
    {API_CHAT_OK, "ok"},
    {API_CHAT_ENOMEM, "out of memory"},
    {API_CHAT_ESYNTAX, "the template is not valid Jinja"},
    {API_CHAT_EUNSUPPORTED, "the template uses Jinja this server does not support"},
    {API_CHAT_ERAISE, "the template raised an exception"},
    {API_CHAT_ERENDER, "the template failed while rendering"},
    {API_CHAT_ELIMIT, "the template went over a limit"},
    {API_CHAT_EARG, "a bad argument"},
};

const char *api__chat_strerror(int code) {
    for (size_t i = 0; i < sizeof messages / sizeof messages[0]; i++)
        if (messages[i].code == code) return messages[i].text;
    return "unknown error";
}

void api__chat_limits_default(api_chat_limits *lim) {
    *lim = (api_chat_limits){.max_output = (size_t)4 << 20, .max_memory = (size_t)64 << 20,
                             .max_iterations = 100000, .max_depth = 256, .now = 0};
}

static void clear(api_chat_error *err) { *err = (api_chat_error){0}; }

int api__chat_compile(const char *src, size_t len, api_chat_template **out, api_chat_error *err) {
    api_chat_error ignored;
    if (err == NULL) err = &ignored;
    clear(err);
    *out = NULL;
    if (src == NULL && len > 0) return api__jinja_set_error(err, API_CHAT_EARG, 0, "no template"), API_CHAT_EARG;
    if (len > API_CHAT_MAX_TEMPLATE) {
        api__jinja_set_error(err, API_CHAT_ELIMIT, 0, "the template is longer than %zu bytes", API_CHAT_MAX_TEMPLATE);
        return API_CHAT_ELIMIT;
    }
    if (!api__jinja_utf8_valid(src ? src : "", len)) {
        api__jinja_set_error(err, API_CHAT_ESYNTAX, 0, "the template is not UTF-8");
        return API_CHAT_ESYNTAX;
    }
    api_chat_template *t = calloc(1, sizeof *t);
    if (t == NULL) return api__jinja_set_error(err, API_CHAT_ENOMEM, 0, "out of memory"), API_CHAT_ENOMEM;
    t->arena.limit = 128 * len + ((size_t)1 << 20); /* nodes: under 100 bytes a source byte */
    jinja_token *tok = NULL;
    size_t n = 0;
    int rc = api__jinja_lex(&t->arena, src ? src : "", len, &tok, &n, err);
    if (rc == 0) rc = api__jinja_parse(&t->arena, tok, &t->root, err);
    free(tok);
    if (rc != 0) {
        if (err->code == 0) api__jinja_set_error(err, rc, 0, "%s", api__chat_strerror(rc));
        api__chat_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

void api__chat_free(api_chat_template *t) {
    if (t == NULL) return;
    api__jinja_arena_free(&t->arena);
    free(t);
}

/* The globals every render starts with, in the scope the context joins. */
static int globals(jinja_rt *rt, jinja_scope *sc) {
    static const struct { const char *name; int fn; } funcs[] = {
        {"raise_exception", FN_RAISE}, {"range", FN_RANGE}, {"namespace", FN_NAMESPACE}, {"strftime_now", FN_STRFTIME}};
    static const struct { const char *name; int kind, b; } consts[] = {
        {"true", V_BOOL, 1}, {"false", V_BOOL, 0}, {"none", V_NONE, 0},
        {"True", V_BOOL, 1}, {"False", V_BOOL, 0}, {"None", V_NONE, 0}};
    for (size_t i = 0; i < sizeof funcs / sizeof funcs[0]; i++) {
        jinja_value f = {.kind = V_FUNC, .fn = funcs[i].fn};
        if (api__jinja_scope_set(rt, sc, funcs[i].name, strlen(funcs[i].name), f) != 0) return -1;
    }
    for (size_t i = 0; i < sizeof consts / sizeof consts[0]; i++) {
        jinja_value c = {.kind = consts[i].kind, .u.b = consts[i].b};
        if (api__jinja_scope_set(rt, sc, consts[i].name, strlen(consts[i].name), c) != 0) return -1;
    }
    return 0;
}

static int check_limits(const api_chat_limits *lim, api_chat_error *err) {
    if (lim->max_output == 0 || lim->max_memory < ((size_t)1 << 16) || lim->max_depth < 1 || lim->max_depth > 10000) {
        api__jinja_set_error(err, API_CHAT_EARG, 0,
                             "bad limits: max_output > 0, max_memory >= 64 KiB, max_depth 1..10000");
        return API_CHAT_EARG;
    }
    return 0;
}

int api__chat_render(const api_chat_template *t, const json_t *context, const api_chat_limits *lim,
                     char **text, size_t *len, api_chat_error *err) {
    api_chat_error ignored;
    if (err == NULL) err = &ignored;
    clear(err);
    *text = NULL;
    *len = 0;
    api_chat_limits dflt;
    api__chat_limits_default(&dflt);
    if (lim == NULL) lim = &dflt;
    if (t == NULL || !json_is_object(context)) {
        api__jinja_set_error(err, API_CHAT_EARG, 0, "render needs a template and a JSON object");
        return API_CHAT_EARG;
    }
    if (check_limits(lim, err) != 0) return API_CHAT_EARG;
    jinja_rt rt = {.lim = *lim, .err = err};
    rt.arena.limit = lim->max_memory;
    jinja_scope *sc = api__jinja_alloc(&rt, sizeof *sc);
    int rc = sc ? 0 : -1;
    if (rc == 0) {
        *sc = (jinja_scope){0};
        rc = globals(&rt, sc);
    }
    if (rc == 0) rc = api__jinja_context(&rt, sc, context);
    if (rc == 0) rc = api__jinja_exec(&rt, sc, t->root);
    if (rc == 0 && rt.out.p == NULL) rc = api__jinja_add(&rt, &rt.out, "", 0);
    api__jinja_arena_free(&rt.arena);
    if (rc != 0) {
        free(rt.out.p);
        if (err->code == 0) api__jinja_set_error(err, API_CHAT_ENOMEM, 0, "out of memory");
        return err->code;
    }
    *text = rt.out.p;
    *len = rt.out.n;
    return 0;
}
