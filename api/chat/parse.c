/* parse.c - tokens to the statement tree: text, {{ expression }},
 * {% if %}{% elif %}{% else %}{% endif %}, {% for x in y %}{% else %}{% endfor %}
 * and {% set target = value %}. The Jinja statements @huggingface/jinja also
 * knows but none of the supported templates use (macro, call, filter,
 * break, continue, set blocks) are refused with API_CHAT_EUNSUPPORTED. */
#include "api/chat/jinja.h"

#include <string.h>

static jinja_node *block(jinja_parser *p, const char *const *stops);

/* {% name: the statement's first word is one of names (NULL-terminated). */
static const char *stop_at(const jinja_parser *p, const char *const *names) {
    if (p->tok[p->pos].type != T_OPEN_STMT) return NULL;
    for (; names && *names; names++)
        if (api__jinja_is_name(p, 1, *names)) return *names;
    return NULL;
}

/* {% else %}, {% endif %}, {% endfor %}: stop_at saw "{% word". */
static int end_tag(jinja_parser *p) {
    p->pos += 2;
    return api__jinja_expect(p, T_CLOSE_STMT, "'%}'");
}

/* A name, or names separated by commas (an unpacking target). */
static jinja_node *target(jinja_parser *p) {
    int paren = p->tok[p->pos].type == T_LPAREN;
    p->pos += (size_t)paren;
    jinja_node *head = NULL, **tail = &head;
    int n = 0;
    do {
        if (n > 0) p->pos++;
        const jinja_token *t = &p->tok[p->pos];
        if (t->type != T_NAME) return api__jinja_syntax(p, API_CHAT_ESYNTAX, "expected a loop variable"), NULL;
        p->pos++;
        if ((*tail = api__jinja_node(p, N_NAME, &(jinja_node){.s = t->s, .n = t->n})) == NULL) return NULL;
        tail = &(*tail)->next;
        n++;
    } while (p->tok[p->pos].type == T_COMMA);
    if (paren && api__jinja_expect(p, T_RPAREN, "')'") != 0) return NULL;
    return n == 1 ? head : api__jinja_node(p, N_TUPLE, &(jinja_node){.a = head});
}

static jinja_node *for_statement(jinja_parser *p) {
    static const char *const stops[] = {"endfor", "else", NULL};
    static const char *const end[] = {"endfor", NULL};
    jinja_node f = {0};
    if ((f.a = target(p)) == NULL) return NULL;
    if (!api__jinja_is_name(p, 0, "in")) return api__jinja_syntax(p, API_CHAT_ESYNTAX, "expected 'in'"), NULL;
    p->pos++;
    if ((f.b = api__jinja_expression(p)) == NULL || api__jinja_expect(p, T_CLOSE_STMT, "'%}'") != 0)
        return NULL;
    f.c = block(p, stops);
    if (p->err->code) return NULL;
    if (strcmp(stop_at(p, stops), "else") == 0) {
        if (end_tag(p) != 0) return NULL;
        f.d = block(p, end);
        if (p->err->code) return NULL;
    }
    if (end_tag(p) != 0) return NULL;
    return api__jinja_node(p, N_FOR, &f);
}

/* if and elif: an elif is an if in the else branch; the outermost if takes
 * the {% endif %}. */
static jinja_node *if_statement(jinja_parser *p, int outer) {
    static const char *const stops[] = {"elif", "else", "endif", NULL};
    static const char *const end[] = {"endif", NULL};
    if (p->nest++ > API_CHAT_MAX_NESTING)
        return api__jinja_syntax(p, API_CHAT_ELIMIT, "the template nests deeper than %d", API_CHAT_MAX_NESTING), NULL;
    jinja_node n = {0};
    if ((n.a = api__jinja_expression(p)) == NULL || api__jinja_expect(p, T_CLOSE_STMT, "'%}'") != 0)
        return NULL;
    n.b = block(p, stops);
    if (p->err->code) return NULL;
    const char *stop = stop_at(p, stops);
    if (strcmp(stop, "elif") == 0) {
        p->pos += 2;
        if ((n.c = if_statement(p, 0)) == NULL) return NULL;
    } else if (strcmp(stop, "else") == 0) {
        if (end_tag(p) != 0) return NULL;
        n.c = block(p, end);
        if (p->err->code) return NULL;
    }
    if (outer && end_tag(p) != 0) return NULL;
    p->nest--;
    return api__jinja_node(p, N_IF, &n);
}

/* set x = v, set a, b = v, set ns.attr = v. */
static jinja_node *set_statement(jinja_parser *p) {
    jinja_node n = {0};
    if ((n.a = api__jinja_sequence(p)) == NULL) return NULL;
    if (p->tok[p->pos].type != T_ASSIGN)
        return api__jinja_syntax(p, API_CHAT_EUNSUPPORTED, "{%% set %%} blocks are not supported"), NULL;
    p->pos++;
    int ok = n.a->kind == N_NAME || (n.a->kind == N_ATTR && !n.a->flags);
    if (n.a->kind == N_TUPLE) {
        ok = 1;
        for (jinja_node *e = n.a->a; e; e = e->next) ok &= e->kind == N_NAME;
    }
    if (!ok) return api__jinja_syntax(p, API_CHAT_ESYNTAX, "{%% set %%} assigns to a name, names or ns.attr"), NULL;
    if ((n.b = api__jinja_sequence(p)) == NULL || api__jinja_expect(p, T_CLOSE_STMT, "'%}'") != 0)
        return NULL;
    return api__jinja_node(p, N_SET, &n);
}

/* Jinja statements that this module refuses (the parser names them). */
static const char *const refused[] = {"macro", "call", "filter", "break", "continue", "include",
                                      "import", "from", "extends", "block", "with", "do",
                                      "autoescape", "generation", NULL};

/* After {%: one statement, up to and with its end. */
static jinja_node *statement(jinja_parser *p) {
    const jinja_token *t = &p->tok[p->pos];
    if (t->type != T_NAME) return api__jinja_syntax(p, API_CHAT_ESYNTAX, "expected a statement after {%%"), NULL;
    p->pos++;
    jinja_node *n = NULL;
    if (t->n == 3 && memcmp(t->s, "set", 3) == 0) n = set_statement(p);
    else if (t->n == 2 && memcmp(t->s, "if", 2) == 0) n = if_statement(p, 1);
    else if (t->n == 3 && memcmp(t->s, "for", 3) == 0) {
        if (p->nest++ > API_CHAT_MAX_NESTING)
            return api__jinja_syntax(p, API_CHAT_ELIMIT, "the template nests deeper than %d", API_CHAT_MAX_NESTING),
                   NULL;
        n = for_statement(p);
        p->nest--;
    }
    if (n) n->line = t->line; /* where the statement starts, for errors */
    if (n || p->err->code) return n;
    for (const char *const *r = refused; *r; r++)
        if (strlen(*r) == t->n && memcmp(*r, t->s, t->n) == 0)
            return api__jinja_syntax(p, API_CHAT_EUNSUPPORTED, "{%% %s %%} is not supported", *r), NULL;
    return api__jinja_syntax(p, API_CHAT_ESYNTAX, "unknown statement {%% %.*s %%}", (int)(t->n > 40 ? 40 : t->n),
                             t->s),
           NULL;
}

/* Statements up to a {% stop %} (left for the caller) or, with no stops, the
 * end of the template. NULL is also an empty block: check p->err. */
static jinja_node *block(jinja_parser *p, const char *const *stops) {
    jinja_node *head = NULL, **tail = &head;
    for (;;) {
        const jinja_token *t = &p->tok[p->pos];
        jinja_node *n = NULL;
        if (t->type == T_END) {
            if (stops) api__jinja_syntax(p, API_CHAT_ESYNTAX, "the template ends before {%% %s %%}", stops[0]);
            return head;
        }
        if (stop_at(p, stops)) return head;
        p->pos++;
        if (t->type == T_COMMENT) continue;
        if (t->type == T_TEXT) {
            n = api__jinja_node(p, N_TEXT, &(jinja_node){.s = t->s, .n = t->n});
        } else if (t->type == T_OPEN_EXPR) {
            jinja_node *e = api__jinja_expression(p);
            if (e == NULL || api__jinja_expect(p, T_CLOSE_EXPR, "'}}'") != 0) return NULL;
            n = api__jinja_node(p, N_OUTPUT, &(jinja_node){.a = e});
            if (n) n->line = t->line;
        } else if (t->type == T_OPEN_STMT) {
            static const char *const ends[] = {"endif", "endfor", "elif", "else", "endset", "endmacro", NULL};
            for (const char *const *e = ends; *e; e++)
                if (api__jinja_is_name(p, 0, *e))
                    return api__jinja_syntax(p, API_CHAT_ESYNTAX, "unexpected {%% %s %%}", *e), NULL;
            n = statement(p);
        } else {
            return api__jinja_syntax(p, API_CHAT_ESYNTAX, "unexpected '%.*s'", (int)(t->n > 40 ? 40 : t->n), t->s),
                   NULL;
        }
        if (n == NULL) return NULL;
        *tail = n;
        tail = &n->next;
    }
}

int api__jinja_parse(jinja_arena *a, const jinja_token *tok, jinja_node **root, api_chat_error *err) {
    jinja_parser p = {.arena = a, .tok = tok, .err = err};
    jinja_node *n = block(&p, NULL);
    if (err->code) return err->code;
    *root = n;
    return 0;
}
