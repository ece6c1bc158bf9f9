/* hf_decode.c - ids back to text through a tokenizer.json's decoder
 * (the files of decoders/, applied to the list of token strings in turn, then
 * joined; no decoder: the tokens joined by spaces), and the bytes one token
 * stands for alone (api_bpe_token_bytes: the same steps without those that
 * look at the whole text: no U+FFFD, no Strip, no first-token rule). */
#include "hf.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t off, len;
} tok;

typedef struct {
    char *b; /* every token's bytes */
    size_t used, cap;
    tok *t, *u; /* the tokens, the next step's tokens */
    size_t n, nu, tcap;
    int piece;  /* one token alone (api_bpe_token_bytes) */
    int failed;
} chain;

static int reserve(chain *c, size_t extra) {
    if (c->cap - c->used >= extra) return 1;
    size_t cap = 2 * (c->used + extra) + 64;
    char *g = realloc(c->b, cap);
    if (!g) return c->failed = 1, 0;
    c->b = g, c->cap = cap;
    return 1;
}

/* Starts the next token of the step at the end of the buffer. */
static void open_tok(chain *c) {
    if (c->nu == c->tcap) {
        size_t cap = c->tcap ? 2 * c->tcap : 16;
        tok *g = realloc(c->u, cap * sizeof *g);
        tok *h = realloc(c->t, cap * sizeof *h);
        if (g) c->u = g;
        if (h) c->t = h;
        if (!g || !h) return (void)(c->failed = 1);
        c->tcap = cap;
    }
    c->u[c->nu++] = (tok){c->used, 0};
}

/* Appends bytes (outside the buffer) to the token being made. */
static void add(chain *c, const void *s, size_t n) {
    if (n == 0 || c->failed || !reserve(c, n)) return;
    memcpy(c->b + c->used, s, n);
    c->used += n;
    c->u[c->nu - 1].len += n;
}

/* Appends b[off .. off + n) of the buffer itself. */
static void add_own(chain *c, size_t off, size_t n) {
    if (n == 0 || c->failed || !reserve(c, n)) return;
    memmove(c->b + c->used, c->b + off, n);
    c->used += n;
    c->u[c->nu - 1].len += n;
}

/* The step's tokens become the tokens. */
static void next(chain *c) {
    tok *t = c->t;
    c->t = c->u, c->n = c->nu;
    c->u = t, c->nu = 0;
}

/* The byte of a "<0xNN>" token (u8::from_str_radix of NN), or -1. */
static int fallback_byte(const char *s, size_t n) {
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
    int v = 0;
    for (int i = 3; i < 5; i++) {
        char ch = s[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : (i == 3 && ch == '+') ? 0 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* ByteLevel: every token's bytes (its byte symbols', or its own UTF-8 when
 * it has another character) as one token, invalid UTF-8 as U+FFFD. */
static void byte_level(chain *c) {
    uint32_t sym[256];
    int16_t inverse[324];
    api__bpe_byte_symbols(sym, inverse);
    open_tok(c);
    for (size_t i = 0; i < c->n && !c->failed; i++) {
        const tok t = c->t[i];
        int all = 1;
        for (size_t p = 0; p < t.len && all;) {
            uint32_t cp;
            size_t k = api__bpe_utf8((const unsigned char *)c->b + t.off + p, t.len - p, &cp);
            all = k && cp < 324 && inverse[cp] >= 0;
            p += k ? k : 1;
        }
        if (!all) {
            add_own(c, t.off, t.len);
            continue;
        }
        for (size_t p = 0; p < t.len;) {
            uint32_t cp;
            p += api__bpe_utf8((const unsigned char *)c->b + t.off + p, t.len - p, &cp);
            unsigned char byte = (unsigned char)inverse[cp];
            add(c, &byte, 1);
        }
    }
    if (c->piece || c->failed) return next(c);
    next(c);
    tok raw = c->t[0];
    char *text = malloc(3 * raw.len + 1);
    if (!text) return (void)(c->failed = 1);
    size_t n = api_bpe_utf8_text(c->b + raw.off, raw.len, text);
    open_tok(c);
    add(c, text, n);
    free(text);
    next(c);
}

/* Ends a run of <0xNN> tokens: their bytes as one token if they are UTF-8,
 * else U+FFFD for each. */
static void flush_bytes(chain *c, const unsigned char *run, size_t n) {
    int valid = 1;
    for (size_t p = 0; p < n && valid;) {
        uint32_t cp;
        size_t k = api__bpe_utf8(run + p, n - p, &cp);
        valid = k > 0;
        p += k;
    }
    if (valid || c->piece) {
        if (n) open_tok(c), add(c, run, n);
        return;
    }
    for (size_t i = 0; i < n; i++) open_tok(c), add(c, "\xEF\xBF\xBD", 3);
}

static void byte_fallback(chain *c) {
    unsigned char *run = malloc(c->n + 1);
    size_t k = 0;
    if (!run) return (void)(c->failed = 1);
    for (size_t i = 0; i < c->n && !c->failed; i++) {
        int b = fallback_byte(c->b + c->t[i].off, c->t[i].len);
        if (b >= 0) {
            run[k++] = (unsigned char)b;
            continue;
        }
        flush_bytes(c, run, k), k = 0;
        open_tok(c);
        add_own(c, c->t[i].off, c->t[i].len);
    }
    flush_bytes(c, run, k);
    free(run);
    next(c);
}

/* Replace: each token with st's pattern replaced by its content. */
static void replace(chain *c, const api__step *st) {
    api__span *m = NULL;
    size_t mcap = 0;
    for (size_t i = 0; i < c->n && !c->failed; i++) {
        tok t = c->t[i];
        size_t k = 0;
        if (st->re) {
            long r = api__re_find(st->re, c->b + t.off, t.len, &m, &mcap);
            if (r < 0) c->failed = 1;
            k = r < 0 ? 0 : (size_t)r;
        } else {
            for (size_t p = 0; p + st->na <= t.len;) {
                const char *f = memmem(c->b + t.off + p, t.len - p, st->a, st->na);
                if (!f) break;
                if (k == mcap) {
                    api__span *g = realloc(m, (mcap ? 2 * mcap : 16) * sizeof *g);
                    if (!g) {
                        c->failed = 1;
                        break;
                    }
                    m = g, mcap = mcap ? 2 * mcap : 16;
                }
                size_t s = (size_t)(f - (c->b + t.off));
                m[k++] = (api__span){s, s + st->na};
                p = s + st->na;
            }
        }
        open_tok(c);
        size_t prev = 0;
        for (size_t j = 0; j < k; j++) add_own(c, t.off + prev, m[j].s - prev), add(c, st->b, st->nb), prev = m[j].e;
        add_own(c, t.off + prev, t.len - prev);
    }
    free(m);
    next(c);
}

/* The byte length of the character that ends s[0 .. n) (n > 0). */
static size_t last_char(const char *s, size_t n) {
    size_t j = n - 1;
    while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
    return n - j;
}

/* Strip: up to start characters st->ch off each token's start, stop off its end. */
static void strip(chain *c, const api__step *st) {
    char ch[4];
    size_t nch = api__utf8_put(ch, st->ch);
    for (size_t i = 0; i < c->n; i++) {
        tok t = c->t[i];
        for (int k = 0; k < st->start && t.len >= nch && memcmp(c->b + t.off, ch, nch) == 0; k++) t.off += nch, t.len -= nch;
        for (int k = 0; k < st->stop && t.len > 0 && last_char(c->b + t.off, t.len) == nch &&
                        memcmp(c->b + t.off + t.len - nch, ch, nch) == 0; k++)
            t.len -= nch;
        c->t[i] = t; /* a narrower view of the same bytes */
    }
}

/* Metaspace: the replacement as a space, dropped at the start of the first
 * token unless the scheme is never. */
static void metaspace(chain *c, const api__step *st) {
    for (size_t i = 0; i < c->n && !c->failed; i++) {
        tok t = c->t[i];
        open_tok(c);
        for (size_t p = 0; p < t.len;) {
            if (t.len - p >= st->na && memcmp(c->b + t.off + p, st->a, st->na) == 0) {
                if (c->piece || i > 0 || st->prepend == API__NEVER) add(c, " ", 1);
                p += st->na;
                continue;
            }
            add_own(c, t.off + p, 1);
            p++;
        }
    }
    next(c);
}

/* cleanup of decoders/wordpiece.rs on s[0 .. n) in place (each rewrite is
 * shorter), in its order; the new length. */
static size_t cleanup(char *s, size_t n) {
    static const char *const rules[][2] = {{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
                                           {" n't", "n't"}, {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"},
                                           {" 've", "'ve"}, {" 're", "'re"}};
    for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) {
        size_t from = strlen(rules[r][0]), to = strlen(rules[r][1]), o = 0;
        for (size_t i = 0; i < n;) {
            if (n - i >= from && memcmp(s + i, rules[r][0], from) == 0) {
                memcpy(s + o, rules[r][1], to), o += to, i += from;
                continue;
            }
            s[o++] = s[i++];
        }
        n = o;
    }
    return n;
}

/* WordPiece: the prefix off each token but the first, or a space before it;
 * then the cleanup when asked. */
static void wordpiece(chain *c, const api__step *st) {
    for (size_t i = 0; i < c->n && !c->failed; i++) {
        tok t = c->t[i];
        open_tok(c);
        if (i > 0 || c->piece) {
            if (t.len >= st->na && memcmp(c->b + t.off, st->a, st->na) == 0) t.off += st->na, t.len -= st->na;
            else add(c, " ", 1);
        }
        add_own(c, t.off, t.len);
        if (st->flags && !c->failed) {
            tok *u = &c->u[c->nu - 1];
            c->used -= u->len;
            u->len = cleanup(c->b + u->off, u->len);
            c->used += u->len;
        }
    }
    next(c);
}

static void fuse(chain *c) {
    size_t n = c->n;
    open_tok(c);
    for (size_t i = 0; i < n; i++) add_own(c, c->t[i].off, c->t[i].len);
    next(c);
}

/* The decoder's steps on the tokens of c, then their bytes joined (by
 * spaces when the file has no decoder) into *out (malloc'd, NUL-ended). */
static long run(const api__hf *h, chain *c, char **out) {
    for (size_t i = 0; i < h->n_dec && !c->failed; i++) {
        const api__step *st = &h->dec[i];
        if (st->type == API__D_BYTELEVEL) byte_level(c);
        else if (st->type == API__D_REPLACE) replace(c, st);
        else if (st->type == API__D_BYTEFALLBACK) byte_fallback(c);
        else if (st->type == API__D_FUSE && !c->piece) fuse(c);
        else if (st->type == API__D_STRIP && !c->piece) strip(c, st);
        else if (st->type == API__D_METASPACE) metaspace(c, st);
        else if (st->type == API__D_WORDPIECE) wordpiece(c, st);
    }
    size_t total = 0;
    for (size_t i = 0; i < c->n; i++) total += c->t[i].len + 1;
    char *s = c->failed ? NULL : malloc(total + 1);
    size_t o = 0;
    for (size_t i = 0; s && i < c->n; i++) {
        if (i > 0 && !h->has_decoder) s[o++] = ' ';
        if (c->t[i].len) memcpy(s + o, c->b + c->t[i].off, c->t[i].len);
        o += c->t[i].len;
    }
    free(c->b);
    free(c->t);
    free(c->u);
    if (!s) return API_BPE_ENOMEM;
    s[o] = '\0';
    *out = s;
    return (long)o;
}

long api__hf_token_piece(const api__hf *h, int32_t id, char **out) {
    chain c = {.piece = 1};
    open_tok(&c);
    add(&c, h->str + h->soff[id], h->soff[id + 1] - h->soff[id]);
    next(&c);
    long n = run(h, &c, out);
    return n < 0 ? -1 : n;
}

int api__hf_decode(const api_bpe *t, const int32_t *ids, size_t n, unsigned flags, char **text, size_t *len) {
    const api__hf *h = t->hf;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!api__hf_exists(t, ids[i])) return API_BPE_ERANGE;
        total += h->soff[ids[i] + 1] - h->soff[ids[i]] + 1;
        if (total > API_BPE_MAX_TEXT) return API_BPE_ETOOBIG;
    }
    chain c = {0};
    for (size_t i = 0; i < n && !c.failed; i++) {
        if ((flags & API_BPE_SKIP_SPECIAL) && api__hf_is_special(t, ids[i])) continue;
        open_tok(&c);
        add(&c, h->str + h->soff[ids[i]], h->soff[ids[i] + 1] - h->soff[ids[i]]);
    }
    next(&c);
    long r = run(h, &c, text);
    if (r < 0) return (int)r;
    *len = (size_t)r;
    return 0;
}
