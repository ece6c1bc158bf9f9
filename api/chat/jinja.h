/* jinja.h - what the files of api/chat/ share (prefix api__jinja_): tokens,
 * the syntax tree, values, a render's state, and each file's functions.
 * chat.h is the interface. */
#ifndef API_CHAT_JINJA_H
#define API_CHAT_JINJA_H

#include "api/base/base.h" /* api__utf8_put */
#include "api/chat/chat.h"

typedef struct jinja_chunk jinja_chunk;
typedef struct { jinja_chunk *head; size_t used, limit; } jinja_arena; /* freed at once */
typedef struct { char *p; size_t n, cap; } jinja_buf;                   /* malloc'd scratch */

enum { T_END, T_TEXT, T_COMMENT, T_NUM, T_STR, T_NAME, T_OPEN_STMT, T_CLOSE_STMT, T_OPEN_EXPR,
       T_CLOSE_EXPR, T_LPAREN, T_RPAREN, T_LBRACKET, T_RBRACKET, T_LBRACE, T_RBRACE, T_COMMA,
       T_DOT, T_COLON, T_PIPE, T_ASSIGN, T_ADD, T_MUL, T_POW, T_CMP, T_UNARY };
enum { OP_ADD = 1, OP_SUB, OP_CONCAT, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_EQ, OP_NE,
       OP_LT, OP_GT, OP_LE, OP_GE, OP_IN, OP_NOTIN, OP_AND, OP_OR, OP_NOT, OP_NEG, OP_POS };
typedef struct { int type, op; const char *s; size_t n; int line; } jinja_token;

enum { N_TEXT, N_OUTPUT, N_IF, N_FOR, N_SET, N_STR, N_INT, N_FLOAT, N_NAME, N_LIST, N_TUPLE,
       N_DICT, N_PAIR, N_ATTR, N_INDEX, N_SLICE, N_CALL, N_KWARG, N_FILTER, N_TEST, N_UNARY,
       N_BINARY, N_COND };
/* A node; lists (statements, elements, arguments) chain through next.
 *   N_IF a test, b body, c else    N_FOR a target, b iterable, c body, d else
 *   N_SET a target, b value        N_OUTPUT a     N_TEXT, N_STR, N_NAME s, n
 *   N_ATTR a object, s name (flags 1: num, an index)   N_INDEX a object, b key
 *   N_SLICE a object, b:c:d        N_CALL a callee, b arguments   N_PAIR a: b
 *   N_KWARG s name, a value        N_FILTER a operand, op filter, b arguments,
 *   flags 1 with parentheses       N_TEST a operand, op test, flags 1 negated
 *   N_COND b ? a : c, flags 1 without else (undefined when b is false) */
typedef struct jinja_node jinja_node;
struct jinja_node {
    int kind, op, flags, line, depth;
    jinja_node *a, *b, *c, *d, *next;
    const char *s;
    size_t n;
    double num;
};

typedef struct {
    jinja_arena *arena;
    const jinja_token *tok;
    size_t pos, nest;
    api_chat_error *err;
} jinja_parser;

/* Filters (BARE: x|f, CALL: x|f(...)), tests, and builtin functions (a
 * GLOBAL, a STRING's method, an OBJECT's method): one table each. */
enum { BARE = 1, CALL = 2 };
enum { GLOBAL = 1, STRING, OBJECT };
#define JINJA_FILTERS(X) X(SAFE, "safe", BARE) X(TOJSON, "tojson", BARE | CALL) X(LIST, "list", BARE) \
    X(FIRST, "first", BARE) X(LAST, "last", BARE) X(LENGTH, "length", BARE) X(REVERSE, "reverse", BARE) \
    X(JOIN, "join", BARE | CALL) X(STRING, "string", BARE) X(UPPER, "upper", BARE) X(LOWER, "lower", BARE) \
    X(TITLE, "title", BARE) X(CAPITALIZE, "capitalize", BARE) X(TRIM, "trim", BARE) \
    X(INT, "int", BARE | CALL) X(FLOAT, "float", BARE | CALL) X(ABS, "abs", BARE) X(BOOL, "bool", BARE) \
    X(ITEMS, "items", BARE | CALL) X(KEYS, "keys", BARE | CALL) X(VALUES, "values", BARE | CALL) \
    X(DEFAULT, "default", CALL) X(SELECTATTR, "selectattr", CALL) X(REJECTATTR, "rejectattr", CALL) \
    X(MAP, "map", CALL) X(REPLACE, "replace", CALL)
#define JINJA_TESTS(X) X(DEFINED, "defined") X(UNDEFINED, "undefined") X(NONE, "none") \
    X(STRING, "string") X(NUMBER, "number") X(INTEGER, "integer") X(BOOLEAN, "boolean") \
    X(MAPPING, "mapping") X(ITERABLE, "iterable") X(SEQUENCE, "sequence") X(TRUE, "true") \
    X(FALSE, "false") X(ODD, "odd") X(EVEN, "even") X(CALLABLE, "callable") \
    X(EQUALTO, "equalto") X(EQ, "eq")
#define JINJA_FUNCS(X) X(RAISE, "raise_exception", GLOBAL) X(RANGE, "range", GLOBAL) \
    X(NAMESPACE, "namespace", GLOBAL) X(STRFTIME, "strftime_now", GLOBAL) X(UPPER, "upper", STRING) \
    X(LOWER, "lower", STRING) X(STRIP, "strip", STRING) X(LSTRIP, "lstrip", STRING) \
    X(RSTRIP, "rstrip", STRING) X(TITLE, "title", STRING) X(CAPITALIZE, "capitalize", STRING) \
    X(STARTSWITH, "startswith", STRING) X(ENDSWITH, "endswith", STRING) X(SPLIT, "split", STRING) \
    X(REPLACE, "replace", STRING) X(GET, "get", OBJECT) X(ITEMS, "items", OBJECT) X(KEYS, "keys", OBJECT) \
    X(VALUES, "values", OBJECT)
#define X_F(id, name, forms) F_##id,
#define X_T(id, name) TEST_##id,
#define X_FN(id, name, kind) FN_##id,
enum { JINJA_FILTERS(X_F) F_COUNT };
enum { JINJA_TESTS(X_T) TEST_COUNT };
enum { JINJA_FUNCS(X_FN) FN_COUNT };

enum { V_UNDEF, V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_ARRAY, V_OBJECT, V_NS, V_LOOP, V_FUNC };
typedef struct jinja_value jinja_value;
typedef struct jinja_array jinja_array;
typedef struct jinja_object jinja_object;
typedef struct jinja_loop jinja_loop;
/* A value, passed by value: arrays, objects and namespaces share their body
 * (identity is the body's address); numbers are doubles, as in JavaScript. */
struct jinja_value {
    int kind, fn; /* V_*; V_FUNC: FN_* */
    union {
        int b;
        double num;
        struct { const char *p; size_t n; } s;
        jinja_array *arr;
        jinja_object *obj;                                /* V_OBJECT, V_NS */
        struct { const jinja_loop *lp; size_t i; } loop; /* `loop` at item i */
        const jinja_value *self;                          /* V_FUNC: a method's receiver */
    } u;
};
struct jinja_array { jinja_value *v; size_t n, cap; int tuple; };
typedef struct { const char *k; size_t kn; jinja_value v; } jinja_entry;
struct jinja_object { jinja_entry *e; size_t n, cap; };
struct jinja_loop { const jinja_value *items; size_t n; };
typedef struct jinja_scope jinja_scope;
struct jinja_scope { jinja_scope *parent; jinja_object vars; };

typedef struct { /* one render */
    jinja_arena arena;
    api_chat_limits lim;
    api_chat_error *err;
    jinja_buf out;
    size_t iterations;
    int line; /* of the statement or expression being run, for errors */
} jinja_rt;

typedef struct { int indent, ascii, undefined_null, separators; jinja_value item, key; } jinja_json;

#define JV(k) ((jinja_value){.kind = (k)})
#define JV_NUM(k, x) ((jinja_value){.kind = (k), .u.num = (x)})
#define JV_BOOL(x) ((jinja_value){.kind = V_BOOL, .u.b = !!(x)})
#define JV_STR(p_, n_) ((jinja_value){.kind = V_STR, .u.s = {(p_), (n_)}})
#define JINJA_FMT(a, b) __attribute__((format(printf, a, b)))

/* Functions return 0 or -1 (the error is in rt->err or the parser's). */
/* rt.c: the arena, errors, strings built in a jinja_buf, the output */
void *api__jinja_arena_alloc(jinja_arena *a, size_t n); /* NULL: over the limit or no memory */
void api__jinja_arena_free(jinja_arena *a);
void api__jinja_set_error(api_chat_error *e, int code, int line, const char *fmt, ...) JINJA_FMT(4, 5);
int api__jinja_fail(jinja_rt *rt, int code, const char *fmt, ...) JINJA_FMT(3, 4);
void *api__jinja_alloc(jinja_rt *rt, size_t n); /* NULL after failing rt */
int api__jinja_add(jinja_rt *rt, jinja_buf *b, const char *s, size_t n);
int api__jinja_take(jinja_rt *rt, jinja_buf *b, jinja_value *out); /* b's text as a string; frees b */
int api__jinja_emit(jinja_rt *rt, const char *s, size_t n);
/* text.c: UTF-8, JavaScript's whitespace and numbers (mode 0 Number, 1 parseInt, 2 parseFloat) */
size_t api__jinja_utf8_decode(const char *s, size_t n, uint32_t *cp); /* bytes; 0: not UTF-8 */
int api__jinja_utf8_valid(const char *s, size_t n);
size_t api__jinja_utf8_count(const char *s, size_t n);
size_t api__jinja_space_at(const char *s, size_t n); /* bytes of the whitespace at s, or 0 */
void api__jinja_trim(const char **p, size_t *n, int left, int right);
int api__jinja_is_word(int c);
double api__jinja_js_number(const char *s, size_t n, int mode);
/* lex.c, parse.c, expr.c, names.c: compiling */
int api__jinja_lex(jinja_arena *a, const char *src, size_t len, jinja_token **tok, size_t *n, api_chat_error *err);
int api__jinja_parse(jinja_arena *a, const jinja_token *tok, jinja_node **root, api_chat_error *err);
jinja_node *api__jinja_expression(jinja_parser *p);
jinja_node *api__jinja_sequence(jinja_parser *p); /* a, b, ...: a tuple */
jinja_node *api__jinja_node(jinja_parser *p, int kind, const jinja_node *kids); /* kids: a, b, c, d, ... */
int api__jinja_syntax(jinja_parser *p, int code, const char *fmt, ...) JINJA_FMT(3, 4);
int api__jinja_is_name(const jinja_parser *p, size_t k, const char *name); /* token k ahead */
int api__jinja_expect(jinja_parser *p, int type, const char *what);
int api__jinja_filter_id(const char *s, size_t n, int *forms); /* -1: none */
int api__jinja_test_id(const char *s, size_t n);
int api__jinja_func_id(int kind, const char *s, size_t n);
const char *api__jinja_filter_name(int id);
const char *api__jinja_func_name(int id);
/* value.c: arrays, objects, scopes, loop, truth, equality, the context */
jinja_array *api__jinja_array_new(jinja_rt *rt, size_t cap);
int api__jinja_array_push(jinja_rt *rt, jinja_array *a, jinja_value v);
jinja_object *api__jinja_object_new(jinja_rt *rt);
const jinja_value *api__jinja_object_get(const jinja_object *o, const char *k, size_t kn);
int api__jinja_object_set(jinja_rt *rt, jinja_object *o, const char *k, size_t kn, jinja_value v);
jinja_value api__jinja_lookup(const jinja_scope *s, const char *name, size_t n);
int api__jinja_scope_set(jinja_rt *rt, jinja_scope *s, const char *name, size_t n, jinja_value v);
int api__jinja_loop_get(jinja_value loop, const char *name, size_t n, jinja_value *out); /* 1: a field */
int api__jinja_loop_object(jinja_rt *rt, jinja_value loop, jinja_value *out);
int api__jinja_truthy(jinja_value v);
int api__jinja_strict_eq(jinja_value a, jinja_value b);
int api__jinja_context(jinja_rt *rt, jinja_scope *s, const json_t *context);
/* print.c, strings.c, call.c, filters.c: values out, string methods, calls, filters and tests */
size_t api__jinja_number_text(double x, char *out); /* out: 32 bytes */
int api__jinja_json(jinja_rt *rt, jinja_buf *b, jinja_value v, const jinja_json *o);
enum { TX_CONCAT, TX_PRINT, TX_ITEM };
int api__jinja_text(jinja_rt *rt, jinja_buf *b, jinja_value v, int mode); /* TX_*: print.c says */
int api__jinja_case(jinja_rt *rt, jinja_value s, int how, jinja_value *out);
int api__jinja_split(jinja_rt *rt, jinja_value s, jinja_value sep, jinja_value max, jinja_value *out);
int api__jinja_replace(jinja_rt *rt, jinja_value s, jinja_value old, jinja_value rep, jinja_value count,
                       jinja_value *out);
int api__jinja_affix(jinja_rt *rt, jinja_value s, jinja_value x, int end, jinja_value *out);
int api__jinja_method(jinja_rt *rt, jinja_value recv, const char *name, size_t n, jinja_value *out); /* 1 bound */
int api__jinja_object_method(jinja_rt *rt, int fn, const jinja_object *o, const jinja_value *args, size_t nargs,
                             jinja_value *out);
int api__jinja_call(jinja_rt *rt, jinja_value f, const jinja_value *args, size_t nargs, const jinja_object *kw,
                    jinja_value *out);
int api__jinja_test(jinja_rt *rt, int id, jinja_value x, jinja_value b); /* 1, 0 or -1 */
int api__jinja_filter(jinja_rt *rt, int id, int call, jinja_value x, const jinja_value *args, size_t nargs,
                      const jinja_object *kw, jinja_value *out);
/* eval.c, exec.c */
int api__jinja_eval(jinja_rt *rt, jinja_scope *sc, const jinja_node *n, jinja_value *out);
int api__jinja_exec(jinja_rt *rt, jinja_scope *sc, const jinja_node *list);

#endif
