/* lex.c - template source to tokens, as @huggingface/jinja's lexer does it:
 * first the whitespace options transformers renders with (a single trailing
 * newline dropped; lstrip_blocks: spaces and tabs before {% and {# at the
 * start of a line dropped; trim_blocks: the newline after %} and #} dropped),
 * then tokens, with {%- -%} {{- -}} {#- -#} stripping the whitespace beside
 * them. {% raw %}...{% endraw %} is kept as text (Jinja's raw block, which
 * @huggingface/jinja lacks). */
#include "api/chat/jinja.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    jinja_arena *arena;
    const char *src; /* after the whitespace options */
    size_t len, pos;
    size_t *gone;    /* offsets in src where trim_blocks dropped a newline */
    size_t n_gone, gone_seen, line_pos;
    int line, brace;
    jinja_token *tok;
    size_t n, cap;
    api_chat_error *err;
} lexer;

/* ==== Whitespace options ==== */

static int line_start(const char *s, size_t i) {
    if (i == 0) return 1;
    if (s[i - 1] == '\n' || s[i - 1] == '\r') return 1;
    return i >= 3 && (unsigned char)s[i - 3] == 0xE2 && (unsigned char)s[i - 2] == 0x80 &&
           ((unsigned char)s[i - 1] == 0xA8 || (unsigned char)s[i - 1] == 0xA9);
}

static int is_tag_open(const char *s, size_t i, size_t n) {
    return i + 1 < n && s[i] == '{' && (s[i + 1] == '#' || s[i + 1] == '%' || s[i + 1] == '-');
}

/* src after the options into lx->src (arena), with the dropped newlines'
 * offsets for line numbers. */
static int preprocess(lexer *lx, const char *src, size_t n) {
    if (n > 0 && src[n - 1] == '\n') n--;
    char *out = api__jinja_arena_alloc(lx->arena, n + 1);
    lx->gone = malloc((n / 3 + 1) * sizeof *lx->gone);
    if (out == NULL || lx->gone == NULL) return -1;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (line_start(src, i)) {
            size_t j = i;
            while (j < n && (src[j] == ' ' || src[j] == '\t')) j++;
            if (j > i && is_tag_open(src, j, n)) {
                i = j;
                continue;
            }
        }
        if (src[i] == '\n' && i >= 2 && src[i - 1] == '}' && memchr("#%-", src[i - 2], 3)) {
            lx->gone[lx->n_gone++] = o;
            i++;
            continue;
        }
        out[o++] = src[i++];
    }
    out[o] = '\0';
    lx->src = out;
    lx->len = o;
    return 0;
}

/* The source line of offset pos (offsets only grow). */
static int line_of(lexer *lx, size_t pos) {
    for (; lx->line_pos < pos; lx->line_pos++)
        if (lx->src[lx->line_pos] == '\n') lx->line++;
    while (lx->gone_seen < lx->n_gone && lx->gone[lx->gone_seen] <= pos) {
        lx->gone_seen++;
        lx->line++;
    }
    return lx->line;
}

/* ==== Tokens ==== */

static int fail(lexer *lx, const char *msg) {
    api__jinja_set_error(lx->err, API_CHAT_ESYNTAX, line_of(lx, lx->pos), "%s", msg);
    return -1;
}

static int push(lexer *lx, int type, int op, const char *s, size_t n, size_t at) {
    if (lx->n + 1 >= lx->cap) {
        size_t cap = lx->cap ? lx->cap * 2 : 256;
        jinja_token *t = realloc(lx->tok, cap * sizeof *t);
        if (t == NULL) {
            api__jinja_set_error(lx->err, API_CHAT_ENOMEM, 0, "out of memory");
            return -1;
        }
        lx->tok = t;
        lx->cap = cap;
    }
    lx->tok[lx->n++] = (jinja_token){type, op, s, n, line_of(lx, at)};
    return 0;
}

static int last_type(const lexer *lx) { return lx->n ? lx->tok[lx->n - 1].type : T_END; }

/* {%- {{- {#-: the text before loses its trailing whitespace. */
static void strip_before(lexer *lx) {
    if (last_type(lx) != T_TEXT) return;
    jinja_token *t = &lx->tok[lx->n - 1];
    api__jinja_trim(&t->s, &t->n, 0, 1);
    if (t->n == 0) lx->n--;
}

static void skip_space(lexer *lx) {
    size_t k;
    while (lx->pos < lx->len && (k = api__jinja_space_at(lx->src + lx->pos, lx->len - lx->pos)))
        lx->pos += k;
}

static int starts(const lexer *lx, const char *s) {
    size_t n = strlen(s);
    return lx->len - lx->pos >= n && memcmp(lx->src + lx->pos, s, n) == 0;
}

static int text(lexer *lx) {
    size_t start = lx->pos;
    while (lx->pos < lx->len && !(lx->src[lx->pos] == '{' && lx->pos + 1 < lx->len &&
                                  memchr("%{#", lx->src[lx->pos + 1], 3)))
        lx->pos++;
    return lx->pos > start ? push(lx, T_TEXT, 0, lx->src + start, lx->pos - start, start) : 1;
}

static int comment(lexer *lx) {
    size_t start = lx->pos;
    lx->pos += 2;
    int strip = lx->pos < lx->len && lx->src[lx->pos] == '-';
    lx->pos += (size_t)strip; /* {#-#} strips before only: the - is not also the closing one */
    const char *end = memmem(lx->src + lx->pos, lx->len - lx->pos, "#}", 2);
    if (end == NULL) return fail(lx, "a comment {# is not closed with #}");
    if (strip) strip_before(lx);
    int strip_after = end > lx->src + lx->pos && end[-1] == '-';
    lx->pos = (size_t)(end - lx->src) + 2;
    if (push(lx, T_COMMENT, 0, NULL, 0, start) != 0) return -1;
    if (strip_after) skip_space(lx);
    return 0;
}

/* A string literal's escapes resolved (\xHH and \uHHHH as code points). */
static int escape(lexer *lx, char *out, size_t *o) {
    char c = lx->src[lx->pos++];
    static const char from[] = "ntrbfv'\"\\", to[] = "\n\t\r\b\f\v'\"\\";
    const char *k = c ? strchr(from, c) : NULL;
    if (k) {
        out[(*o)++] = to[k - from];
        return 0;
    }
    if (c != 'x' && c != 'u') return fail(lx, "an unknown escape in a string literal");
    size_t digits = c == 'x' ? 2 : 4;
    uint32_t cp = 0;
    for (size_t i = 0; i < digits; i++, lx->pos++) {
        char h = lx->pos < lx->len ? lx->src[lx->pos] : 0;
        int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
              : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (v < 0) return fail(lx, "a bad \\x or \\u escape in a string literal");
        cp = cp << 4 | (uint32_t)v;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) return fail(lx, "a \\u escape of a surrogate is not supported");
    *o += api__utf8_put(out + *o, cp);
    return 0;
}

static int string(lexer *lx) {
    size_t start = lx->pos, end = start + 1;
    char quote = lx->src[start];
    while (end < lx->len && lx->src[end] != quote) end += lx->src[end] == '\\' ? 2 : 1;
    if (end >= lx->len) return fail(lx, "a string literal is not closed");
    char *out = api__jinja_arena_alloc(lx->arena, end - start); /* escapes only shorten */
    if (out == NULL) {
        api__jinja_set_error(lx->err, API_CHAT_ENOMEM, 0, "out of memory");
        return -1;
    }
    size_t o = 0;
    for (lx->pos = start + 1; lx->pos < end;) {
        if (lx->src[lx->pos] != '\\') out[o++] = lx->src[lx->pos++];
        else if (++lx->pos, escape(lx, out, &o) != 0) return -1;
    }
    lx->pos = end + 1;
    out[o] = '\0';
    return push(lx, T_STR, 0, out, o, start);
}

static int digits(lexer *lx) {
    size_t start = lx->pos;
    while (lx->pos < lx->len && lx->src[lx->pos] >= '0' && lx->src[lx->pos] <= '9') lx->pos++;
    return lx->pos > start;
}

/* digits, and ".digits" when allowed (not after a dot: a.0.1 is two indexes). */
static void number_rest(lexer *lx, int fraction) {
    if (fraction && lx->pos + 1 < lx->len && lx->src[lx->pos] == '.' &&
        lx->src[lx->pos + 1] >= '0' && lx->src[lx->pos + 1] <= '9') {
        lx->pos++;
        digits(lx);
    }
}

/* + or - where no operand is before it: a sign (with the digits after it, a
 * signed number literal). */
static int sign(lexer *lx) {
    size_t start = lx->pos++;
    if (digits(lx)) {
        number_rest(lx, 1);
        return push(lx, T_NUM, 0, lx->src + start, lx->pos - start, start);
    }
    return push(lx, T_UNARY, lx->src[start] == '-' ? OP_NEG : OP_POS, lx->src + start, 1, start);
}

/* The operator and punctuation table, longest first where one is a prefix of
 * another ("**" before "*", "//" before "/", "<=" before "<"). */
static const struct { const char *s; int type, op; } punct[] = {
    {"{%", T_OPEN_STMT, 0}, {"%}", T_CLOSE_STMT, 0}, {"{{", T_OPEN_EXPR, 0}, {"}}", T_CLOSE_EXPR, 0},
    {"(", T_LPAREN, 0},     {")", T_RPAREN, 0},      {"{", T_LBRACE, 0},     {"}", T_RBRACE, 0},
    {"[", T_LBRACKET, 0},   {"]", T_RBRACKET, 0},    {",", T_COMMA, 0},      {".", T_DOT, 0},
    {":", T_COLON, 0},      {"|", T_PIPE, 0},        {"<=", T_CMP, OP_LE},   {">=", T_CMP, OP_GE},
    {"==", T_CMP, OP_EQ},   {"!=", T_CMP, OP_NE},    {"<", T_CMP, OP_LT},    {">", T_CMP, OP_GT},
    {"+", T_ADD, OP_ADD},   {"-", T_ADD, OP_SUB},    {"~", T_ADD, OP_CONCAT},{"**", T_POW, OP_POW},
    {"*", T_MUL, OP_MUL},   {"//", T_MUL, OP_FLOORDIV}, {"/", T_MUL, OP_DIV}, {"%", T_MUL, OP_MOD},
    {"=", T_ASSIGN, 0},
};

static int punctuation(lexer *lx) {
    for (size_t i = 0; i < sizeof punct / sizeof punct[0]; i++) {
        if (punct[i].type == T_CLOSE_EXPR && lx->brace > 0) continue; /* {{ {'a': {}} }} */
        if (!starts(lx, punct[i].s)) continue;
        size_t start = lx->pos;
        lx->pos += strlen(punct[i].s);
        if (punct[i].type == T_OPEN_EXPR) lx->brace = 0;
        if (punct[i].type == T_LBRACE) lx->brace++;
        if (punct[i].type == T_RBRACE) lx->brace--;
        return push(lx, punct[i].type, punct[i].op, lx->src + start, lx->pos - start, start);
    }
    return 1;
}

/* {% raw %}: everything up to {% endraw %} is one text token. Returns 1 when
 * the statement just opened is not raw. */
static int raw(lexer *lx) {
    size_t p = lx->pos;
    while (p < lx->len && (lx->src[p] == ' ' || lx->src[p] == '\t' || lx->src[p] == '\n')) p++;
    if (lx->len - p < 5 || memcmp(lx->src + p, "raw", 3) != 0) return 1;
    p += 3;
    while (p < lx->len && (lx->src[p] == ' ' || lx->src[p] == '\t' || lx->src[p] == '\n')) p++;
    int strip = p < lx->len && lx->src[p] == '-';
    if (lx->len - p - (size_t)strip < 2 || memcmp(lx->src + p + strip, "%}", 2) != 0) return 1;
    lx->n--; /* the {% */
    lx->pos = p + (size_t)strip + 2;
    if (strip) skip_space(lx);
    size_t start = lx->pos;
    for (; lx->pos + 1 < lx->len; lx->pos++) {
        if (lx->src[lx->pos] != '{' || lx->src[lx->pos + 1] != '%') continue;
        size_t q = lx->pos + 2, end = lx->pos;
        int strip_end = q < lx->len && lx->src[q] == '-';
        q += (size_t)strip_end;
        while (q < lx->len && (lx->src[q] == ' ' || lx->src[q] == '\t' || lx->src[q] == '\n')) q++;
        if (lx->len - q < 6 || memcmp(lx->src + q, "endraw", 6) != 0) continue;
        const char *body = lx->src + start;
        size_t n = end - start;
        if (strip_end) api__jinja_trim(&body, &n, 0, 1);
        if (n > 0 && push(lx, T_TEXT, 0, body, n, start) != 0) return -1;
        lx->pos = q + 6; /* the rest of {% endraw %} is an ordinary statement's end */
        skip_space(lx);
        if (starts(lx, "-%}")) {
            lx->pos += 3;
            skip_space(lx);
        } else if (starts(lx, "%}")) {
            lx->pos += 2;
        } else {
            return fail(lx, "{% endraw is not closed with %}");
        }
        return push(lx, T_COMMENT, 0, NULL, 0, lx->pos);
    }
    return fail(lx, "{% raw %} has no {% endraw %}");
}

/* One token inside {% %} or {{ }}. */
static int inner(lexer *lx) {
    skip_space(lx);
    if (lx->pos >= lx->len) return fail(lx, "the template ends inside {% %} or {{ }}");
    if (starts(lx, "-%}") || starts(lx, "-}}")) {
        int stmt = lx->src[lx->pos + 1] == '%';
        size_t start = lx->pos;
        lx->pos += 3;
        if (push(lx, stmt ? T_CLOSE_STMT : T_CLOSE_EXPR, 0, lx->src + start + 1, 2, start) != 0)
            return -1;
        skip_space(lx);
        return 0;
    }
    char c = lx->src[lx->pos];
    int last = last_type(lx);
    if (c == '-' || c == '+') {
        if (last == T_TEXT || last == T_END) return fail(lx, "a sign outside {{ }} or {% %}");
        if (last != T_NAME && last != T_NUM && last != T_STR && last != T_RPAREN && last != T_RBRACKET)
            return sign(lx);
    }
    int r = punctuation(lx);
    if (r <= 0) return r;
    if (c == '\'' || c == '"') return string(lx);
    size_t start = lx->pos;
    if (c >= '0' && c <= '9') {
        digits(lx);
        number_rest(lx, last != T_DOT);
        return push(lx, T_NUM, 0, lx->src + start, lx->pos - start, start);
    }
    if (api__jinja_is_word((unsigned char)c)) {
        while (lx->pos < lx->len && api__jinja_is_word((unsigned char)lx->src[lx->pos])) lx->pos++;
        return push(lx, T_NAME, 0, lx->src + start, lx->pos - start, start);
    }
    return fail(lx, "an unexpected character inside {{ }} or {% %}");
}

static int next(lexer *lx) {
    int last = last_type(lx);
    if (last == T_END || last == T_CLOSE_STMT || last == T_CLOSE_EXPR || last == T_COMMENT) {
        int r = text(lx);
        if (r <= 0) return r;
    }
    if (starts(lx, "{#")) return comment(lx);
    if (starts(lx, "{%-") || starts(lx, "{{-")) {
        int stmt = lx->src[lx->pos + 1] == '%';
        strip_before(lx);
        size_t start = lx->pos;
        lx->pos += 3;
        if (!stmt) lx->brace = 0;
        if (push(lx, stmt ? T_OPEN_STMT : T_OPEN_EXPR, 0, lx->src + start, 2, start) != 0) return -1;
        return stmt ? (raw(lx) < 0 ? -1 : 0) : 0;
    }
    if (starts(lx, "{%")) {
        if (punctuation(lx) != 0) return -1;
        return raw(lx) < 0 ? -1 : 0;
    }
    return inner(lx);
}

int api__jinja_lex(jinja_arena *arena, const char *src, size_t len, jinja_token **out, size_t *n,
                   api_chat_error *err) {
    lexer lx = {.arena = arena, .line = 1, .err = err};
    int rc = preprocess(&lx, src, len);
    if (rc != 0) api__jinja_set_error(err, API_CHAT_ENOMEM, 0, "out of memory");
    while (rc == 0 && lx.pos < lx.len) rc = next(&lx);
    if (rc == 0) rc = push(&lx, T_END, 0, NULL, 0, lx.len);
    free(lx.gone);
    if (rc != 0) {
        free(lx.tok);
        return err->code ? err->code : API_CHAT_ESYNTAX;
    }
    *out = lx.tok;
    *n = lx.n;
    return 0;
}
