/* expr.c - expressions, by @huggingface/jinja's grammar, loosest first:
 *   a if b else c  (a if b: a or undefined)   or   and   not
 *   comparisons and in / not in (one level, left to right)
 *   + - ~      * / // %      **      x is [not] test      x | filter(...)
 *   unary + -  then  a.b  a[b]  a[b:c:d]  f(...)  then literals, names, ( )
 * Filter and test names are checked here, so an unsupported one is refused
 * when the template compiles. Also the parser's small helpers (parse.c uses
 * them). */
#include "api/chat/jinja.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ==== Helpers ==== */

int api__jinja_syntax(jinja_parser *p, int code, const char *fmt, ...) {
    if (p->err->code == 0) {
        char msg[400];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        api__jinja_set_error(p->err, code, p->tok[p->pos].line, "%s", msg);
    }
    return -1;
}

static const jinja_token *peek(const jinja_parser *p) { return &p->tok[p->pos]; }

static int is(const jinja_parser *p, int type) { return p->tok[p->pos].type == type; }

/* Token k ahead is the name `name` (k = 0: the current one). */
int api__jinja_is_name(const jinja_parser *p, size_t k, const char *name) {
    for (size_t i = 0; i < k; i++)
        if (p->tok[p->pos + i].type == T_END) return 0;
    const jinja_token *t = &p->tok[p->pos + k];
    return t->type == T_NAME && t->n == strlen(name) && memcmp(t->s, name, t->n) == 0;
}

int api__jinja_expect(jinja_parser *p, int type, const char *what) {
    if (!is(p, type)) return api__jinja_syntax(p, API_CHAT_ESYNTAX, "expected %s", what);
    p->pos++;
    return 0;
}

static int depth_of(const jinja_node *list) {
    int d = 0;
    for (; list; list = list->next)
        if (list->depth > d) d = list->depth;
    return d;
}

/* A node of kind at the current line. kids (may be NULL) gives a, b, c, d;
 * the node's depth is one more than its deepest child list's. */
jinja_node *api__jinja_node(jinja_parser *p, int kind, const jinja_node *kids) {
    jinja_node *n = api__jinja_arena_alloc(p->arena, sizeof *n);
    if (n == NULL) {
        api__jinja_syntax(p, API_CHAT_ENOMEM, "out of memory");
        return NULL;
    }
    *n = kids ? *kids : (jinja_node){0};
    n->kind = kind;
    n->line = p->tok[p->pos > 0 ? p->pos - 1 : 0].line;
    n->next = NULL;
    int d = depth_of(n->a);
    const jinja_node *more[] = {n->b, n->c, n->d};
    for (int i = 0; i < 3; i++)
        if (depth_of(more[i]) > d) d = depth_of(more[i]);
    n->depth = d + 1;
    if (n->depth > API_CHAT_MAX_NESTING) {
        api__jinja_syntax(p, API_CHAT_ELIMIT, "the template nests deeper than %d", API_CHAT_MAX_NESTING);
        return NULL;
    }
    return n;
}

static jinja_node *binary(jinja_parser *p, int op, jinja_node *a, jinja_node *b) {
    if (a == NULL || b == NULL) return NULL;
    return api__jinja_node(p, N_BINARY, &(jinja_node){.op = op, .a = a, .b = b});
}

/* Guards the parser's own recursion (parentheses, not, signs, else). */
static int enter(jinja_parser *p) {
    if (++p->nest > API_CHAT_MAX_NESTING)
        return api__jinja_syntax(p, API_CHAT_ELIMIT, "the template nests deeper than %d",
                                 API_CHAT_MAX_NESTING);
    return 0;
}

static jinja_node *leave(jinja_parser *p, jinja_node *n) {
    p->nest--;
    return n;
}

/* ==== Literals and names ==== */

static jinja_node *list_literal(jinja_parser *p, int close, int kind);

/* 'a' 'b': adjacent string literals are one. */
static jinja_node *string_literal(jinja_parser *p) {
    size_t total = 0, i = p->pos;
    for (; p->tok[i].type == T_STR; i++) total += p->tok[i].n;
    char *s = api__jinja_arena_alloc(p->arena, total + 1);
    if (s == NULL) return api__jinja_syntax(p, API_CHAT_ENOMEM, "out of memory"), NULL;
    size_t o = 0;
    for (; p->pos < i; p->pos++) {
        memcpy(s + o, p->tok[p->pos].s, p->tok[p->pos].n);
        o += p->tok[p->pos].n;
    }
    return api__jinja_node(p, N_STR, &(jinja_node){.s = s, .n = total});
}

static jinja_node *number(jinja_parser *p) {
    const jinja_token *t = &p->tok[p->pos++];
    char buf[64];
    if (t->n >= sizeof buf) return api__jinja_syntax(p, API_CHAT_ESYNTAX, "a number too long"), NULL;
    memcpy(buf, t->s, t->n);
    buf[t->n] = '\0';
    int is_float = memchr(t->s, '.', t->n) != NULL;
    return api__jinja_node(p, is_float ? N_FLOAT : N_INT, &(jinja_node){.num = strtod(buf, NULL)});
}

static jinja_node *primary(jinja_parser *p) {
    const jinja_token *t = peek(p);
    switch (t->type) {
    case T_NUM:
        return number(p);
    case T_STR:
        return string_literal(p);
    case T_NAME:
        p->pos++;
        return api__jinja_node(p, N_NAME, &(jinja_node){.s = t->s, .n = t->n});
    case T_LPAREN: {
        p->pos++;
        if (enter(p) != 0) return NULL;
        jinja_node *e = api__jinja_sequence(p);
        if (e == NULL || api__jinja_expect(p, T_RPAREN, "')'") != 0) return NULL;
        return leave(p, e);
    }
    case T_LBRACKET:
        p->pos++;
        return list_literal(p, T_RBRACKET, N_LIST);
    case T_LBRACE:
        p->pos++;
        return list_literal(p, T_RBRACE, N_DICT);
    default:
        api__jinja_syntax(p, API_CHAT_ESYNTAX, "expected a value, found '%.*s'", (int)(t->n > 40 ? 40 : t->n),
                          t->s ? t->s : "the end");
        return NULL;
    }
}

/* [a, b] or {k: v, ...}, after the opening bracket (commas may be left out,
 * as @huggingface/jinja lets them). */
static jinja_node *list_literal(jinja_parser *p, int close, int kind) {
    if (enter(p) != 0) return NULL;
    jinja_node *head = NULL, **tail = &head;
    while (!is(p, close)) {
        if (is(p, T_END)) return api__jinja_syntax(p, API_CHAT_ESYNTAX, "a list or dict is not closed"), NULL;
        jinja_node *e = api__jinja_expression(p);
        if (e == NULL) return NULL;
        if (kind == N_DICT) {
            jinja_node *v = NULL;
            if (api__jinja_expect(p, T_COLON, "':' in a dict") != 0 || (v = api__jinja_expression(p)) == NULL)
                return NULL;
            if ((e = api__jinja_node(p, N_PAIR, &(jinja_node){.a = e, .b = v})) == NULL) return NULL;
        }
        *tail = e;
        tail = &e->next;
        if (is(p, T_COMMA)) p->pos++;
    }
    p->pos++;
    return leave(p, api__jinja_node(p, kind, &(jinja_node){.a = head}));
}

/* ==== a.b  a[b]  a[b:c:d]  f(...) ==== */

/* (x, y=z) into *out: positional arguments, then keyword ones (N_KWARG);
 * NULL for (). */
static int arguments(jinja_parser *p, jinja_node **out) {
    if (api__jinja_expect(p, T_LPAREN, "'('") != 0 || enter(p) != 0) return -1;
    jinja_node *head = NULL, **tail = &head;
    int keywords = 0;
    while (!is(p, T_RPAREN)) {
        if (is(p, T_MUL) || is(p, T_POW))
            return api__jinja_syntax(p, API_CHAT_EUNSUPPORTED, "* and ** in calls are not supported");
        if (is(p, T_END)) return api__jinja_syntax(p, API_CHAT_ESYNTAX, "expected ')'");
        jinja_node *e = api__jinja_expression(p);
        if (e == NULL) return -1;
        if (is(p, T_ASSIGN)) {
            p->pos++;
            if (e->kind != N_NAME) return api__jinja_syntax(p, API_CHAT_ESYNTAX, "a keyword argument needs a name");
            jinja_node *v = api__jinja_expression(p);
            if (v == NULL) return -1;
            e = api__jinja_node(p, N_KWARG, &(jinja_node){.s = e->s, .n = e->n, .a = v});
            if (e == NULL) return -1;
            keywords = 1;
        } else if (keywords) {
            return api__jinja_syntax(p, API_CHAT_ESYNTAX, "positional arguments must come first");
        }
        *tail = e;
        tail = &e->next;
        if (is(p, T_COMMA)) p->pos++;
    }
    p->pos++;
    p->nest--;
    *out = head;
    return 0;
}

/* [b], [b:c], [::d] after the '['. */
static jinja_node *subscript(jinja_parser *p, jinja_node *obj) {
    jinja_node *slot[4] = {0};
    int n = 0, slice = 0;
    while (!is(p, T_RBRACKET)) {
        if (n == 4 || is(p, T_END)) return api__jinja_syntax(p, API_CHAT_ESYNTAX, "expected ']'"), NULL;
        if (is(p, T_COLON)) {
            p->pos++;
            n++;
            slice = 1;
            continue;
        }
        if ((slot[n++] = api__jinja_expression(p)) == NULL) return NULL;
        if (is(p, T_COLON)) {
            p->pos++;
            slice = 1;
        } else if (!is(p, T_RBRACKET)) {
            return api__jinja_syntax(p, API_CHAT_ESYNTAX, "expected ']'"), NULL;
        }
    }
    p->pos++;
    if (n == 0) return api__jinja_syntax(p, API_CHAT_ESYNTAX, "[] needs an index or a slice"), NULL;
    if (n > 3) return api__jinja_syntax(p, API_CHAT_ESYNTAX, "a slice takes at most 3 parts"), NULL;
    if (!slice) return api__jinja_node(p, N_INDEX, &(jinja_node){.a = obj, .b = slot[0]});
    return api__jinja_node(p, N_SLICE, &(jinja_node){.a = obj, .b = slot[0], .c = slot[1], .d = slot[2]});
}

static jinja_node *members(jinja_parser *p, jinja_node *obj) {
    while (obj && (is(p, T_DOT) || is(p, T_LBRACKET))) {
        int dot = is(p, T_DOT);
        p->pos++;
        if (!dot) {
            obj = subscript(p, obj);
            continue;
        }
        const jinja_token *t = peek(p);
        int index = t->type == T_NUM && memchr(t->s, '.', t->n) == NULL;
        if (t->type != T_NAME && !index)
            return api__jinja_syntax(p, API_CHAT_ESYNTAX, "expected a name after '.'"), NULL;
        jinja_node *num = index ? number(p) : NULL;
        if (!index) p->pos++;
        if (index && num == NULL) return NULL;
        obj = api__jinja_node(p, N_ATTR, &(jinja_node){.a = obj, .s = t->s, .n = t->n, .flags = index,
                                                       .num = index ? num->num : 0});
    }
    return obj;
}

static jinja_node *call_member(jinja_parser *p) {
    jinja_node *obj = members(p, primary(p));
    while (obj && is(p, T_LPAREN)) {
        jinja_node *args;
        if (arguments(p, &args) != 0) return NULL;
        obj = api__jinja_node(p, N_CALL, &(jinja_node){.a = obj, .b = args});
        obj = members(p, obj);
    }
    return obj;
}

/* ==== Signs, filters, tests ==== */

static jinja_node *unary_sign(jinja_parser *p) {
    const jinja_token *t = peek(p);
    if ((t->type == T_UNARY || t->type == T_ADD) && (t->s[0] == '-' || t->s[0] == '+') && t->n == 1) {
        p->pos++;
        if (enter(p) != 0) return NULL;
        jinja_node *arg = unary_sign(p);
        if (arg == NULL) return NULL;
        int op = t->s[0] == '-' ? OP_NEG : OP_POS;
        return leave(p, api__jinja_node(p, N_UNARY, &(jinja_node){.op = op, .a = arg}));
    }
    return call_member(p);
}

/* selectattr / rejectattr take string literals: the attribute, a test, its
 * argument; the test is looked up now. */
static int check_select(jinja_parser *p, jinja_node *f) {
    int n = 0;
    for (jinja_node *a = f->b; a; a = a->next, n++)
        if (a->kind != N_STR)
            return api__jinja_syntax(p, API_CHAT_EUNSUPPORTED, "%s takes string literals only",
                                     api__jinja_filter_name(f->op));
    if (n < 1 || n > 3) return api__jinja_syntax(p, API_CHAT_ESYNTAX, "%s takes 1 to 3 arguments",
                                                 api__jinja_filter_name(f->op));
    if (n >= 2 && api__jinja_test_id(f->b->next->s, f->b->next->n) < 0)
        return api__jinja_syntax(p, API_CHAT_EUNSUPPORTED, "the test '%.*s' is not supported",
                                 (int)f->b->next->n, f->b->next->s);
    return 0;
}

static jinja_node *filter_expr(jinja_parser *p) {
    jinja_node *x = unary_sign(p);
    while (x && is(p, T_PIPE)) {
        p->pos++;
        const jinja_token *t = peek(p);
        if (t->type != T_NAME) return api__jinja_syntax(p, API_CHAT_ESYNTAX, "expected a filter name"), NULL;
        p->pos++;
        int forms = 0, id = api__jinja_filter_id(t->s, t->n, &forms), call = is(p, T_LPAREN);
        if (id < 0)
            return api__jinja_syntax(p, API_CHAT_EUNSUPPORTED, "the filter '%.*s' is not supported",
                                     (int)t->n, t->s), NULL;
        if (!(forms & (call ? CALL : BARE)))
            return api__jinja_syntax(p, API_CHAT_EUNSUPPORTED, "the filter '%.*s' %s parentheses",
                                     (int)t->n, t->s, call ? "takes no" : "needs"), NULL;
        jinja_node *args = NULL;
        if (call && arguments(p, &args) != 0) return NULL;
        x = api__jinja_node(p, N_FILTER, &(jinja_node){.a = x, .op = id, .b = args, .flags = call});
        if (x && (id == F_SELECTATTR || id == F_REJECTATTR) && check_select(p, x) != 0) return NULL;
    }
    return x;
}

static jinja_node *test_expr(jinja_parser *p) {
    jinja_node *x = filter_expr(p);
    while (x && api__jinja_is_name(p, 0, "is")) {
        p->pos++;
        int negate = api__jinja_is_name(p, 0, "not");
        p->pos += (size_t)negate;
        const jinja_token *t = peek(p);
        if (t->type != T_NAME) return api__jinja_syntax(p, API_CHAT_ESYNTAX, "expected a test name"), NULL;
        p->pos++;
        int id = api__jinja_test_id(t->s, t->n);
        if (id < 0)
            return api__jinja_syntax(p, API_CHAT_EUNSUPPORTED, "the test '%.*s' is not supported",
                                     (int)t->n, t->s), NULL;
        if (is(p, T_LPAREN))
            return api__jinja_syntax(p, API_CHAT_EUNSUPPORTED, "tests with arguments are not supported"), NULL;
        x = api__jinja_node(p, N_TEST, &(jinja_node){.a = x, .op = id, .flags = negate});
    }
    return x;
}

/* ==== Binary operators, loosest last ==== */

static jinja_node *power(jinja_parser *p) {
    jinja_node *x = test_expr(p);
    while (x && is(p, T_POW)) {
        p->pos++;
        x = binary(p, OP_POW, x, test_expr(p));
    }
    return x;
}

static jinja_node *product(jinja_parser *p) {
    jinja_node *x = power(p);
    while (x && is(p, T_MUL)) {
        int op = p->tok[p->pos++].op;
        x = binary(p, op, x, power(p));
    }
    return x;
}

static jinja_node *sum(jinja_parser *p) {
    jinja_node *x = product(p);
    while (x && is(p, T_ADD)) {
        int op = p->tok[p->pos++].op;
        x = binary(p, op, x, product(p));
    }
    return x;
}

static jinja_node *comparison(jinja_parser *p) {
    jinja_node *x = sum(p);
    while (x) {
        int op;
        if (api__jinja_is_name(p, 0, "not") && api__jinja_is_name(p, 1, "in")) {
            op = OP_NOTIN;
            p->pos += 2;
        } else if (api__jinja_is_name(p, 0, "in")) {
            op = OP_IN;
            p->pos++;
        } else if (is(p, T_CMP)) {
            op = p->tok[p->pos++].op;
        } else {
            break;
        }
        x = binary(p, op, x, sum(p));
    }
    return x;
}

static jinja_node *negation(jinja_parser *p) {
    if (!api__jinja_is_name(p, 0, "not")) return comparison(p);
    p->pos++;
    if (enter(p) != 0) return NULL;
    jinja_node *arg = negation(p);
    if (arg == NULL) return NULL;
    return leave(p, api__jinja_node(p, N_UNARY, &(jinja_node){.op = OP_NOT, .a = arg}));
}

static jinja_node *conjunction(jinja_parser *p) {
    jinja_node *x = negation(p);
    while (x && api__jinja_is_name(p, 0, "and")) {
        p->pos++;
        x = binary(p, OP_AND, x, negation(p));
    }
    return x;
}

static jinja_node *disjunction(jinja_parser *p) {
    jinja_node *x = conjunction(p);
    while (x && api__jinja_is_name(p, 0, "or")) {
        p->pos++;
        x = binary(p, OP_OR, x, conjunction(p));
    }
    return x;
}

/* a if b else c; a if b (in a for loop: a filter on its items). */
jinja_node *api__jinja_expression(jinja_parser *p) {
    if (enter(p) != 0) return NULL;
    jinja_node *a = disjunction(p);
    if (a && api__jinja_is_name(p, 0, "if")) {
        p->pos++;
        jinja_node *test = disjunction(p), *other = NULL;
        if (test == NULL) return NULL;
        int with_else = api__jinja_is_name(p, 0, "else");
        if (with_else) {
            p->pos++;
            if ((other = api__jinja_expression(p)) == NULL) return NULL;
        }
        a = api__jinja_node(p, N_COND, &(jinja_node){.a = a, .b = test, .c = other, .flags = !with_else});
    }
    return a ? leave(p, a) : NULL;
}

/* a, b, c: a tuple when there is a comma. */
jinja_node *api__jinja_sequence(jinja_parser *p) {
    jinja_node *first = api__jinja_expression(p);
    if (first == NULL || !is(p, T_COMMA)) return first;
    jinja_node **tail = &first->next;
    while (is(p, T_COMMA)) {
        p->pos++;
        if ((*tail = api__jinja_expression(p)) == NULL) return NULL;
        tail = &(*tail)->next;
    }
    return api__jinja_node(p, N_TUPLE, &(jinja_node){.a = first});
}
