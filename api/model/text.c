/* text.c - "text" of a POST /model request (and /v1/embeddings' input) through its tokenizer:
 *
 *   "text": "..."              one row
 *   "text": ["...", "..."]     rows of different lengths (padded on the right,
 *                              attention_mask's 0s, as idx's rows are)
 *   "text": [["a", "b"], ...]  sentence pairs, for an encoder
 *
 * A decoder's text is its tokens and nothing else (GPT-2's tokenizer reads
 * <|endoftext|> as text, as encoder.py does). An encoder's rows are its
 * tokenizer's own encoding of a text or pair (api_bpe_encode_pair, as
 * `tokenizers`' encode(a, b)) when its files give the template
 * (tokenizer.json's post-processor, vocab.txt's BERT template), truncated
 * as they say: tokenizer.json's "truncation" (MiniLM's 128, longest_first),
 * or for /v1/embeddings the folder's max_seq_length (sentence-transformers'
 * truncation="longest_first"). A folder that states no truncation gets
 * none: a row over the model's positions is a 400, as transformers'
 * tokenizer(text) does not truncate either (its model then fails).
 * With vocab.json + merges.txt (no special tokens in the files) the
 * template is made here from the vocabulary's names:
 *   [CLS] and [SEP]:  [CLS] A [SEP] B [SEP], token types 0 then 1 for B
 *   <s> and </s>:     <s> A </s></s> B </s>, token types 0 (RoBERTa)
 * and the special tokens written in a text (<mask>, [MASK], <s>, ...) are
 * their ids, <mask> taking the spaces before it (RoBERTa's tokenizer adds it
 * with lstrip). The reply says where each row's sentence B starts. */
#include "api/bpe/bpe.h"
#include "api/model/model.h"
#include "api/tokens/tokens.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A tokenizer's template: the first token, the separator(s) between the two
 * sentences, the last, and sentence B's token type. */
typedef struct {
    int32_t first, mid[2], last;
    int n_mid, type_b;
    const char *names[6];   /* the special tokens matched in texts */
    int32_t ids[6];
    int n_specials;
    int32_t mask;           /* -1: none */
    int own;                /* the tokenizer's own template (api_bpe_encode_pair) */
} tmpl;

/* The id of the token written as name in the folder's files (an added
 * token, or a vocabulary entry: vocab.txt's [CLS] too), or -1. */
static int32_t token_id(const api_bpe *bpe, const char *name) {
    return api_bpe_token_id(bpe, name, strlen(name));
}

/* BERT's template when the vocabulary holds [CLS] and [SEP], RoBERTa's when
 * it holds <s> and </s>; 0, or -1 when neither. */
static int template_of(const api_bpe *bpe, tmpl *t) {
    static const char *const bert[] = {"[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]"};
    static const char *const roberta[] = {"<s>", "</s>", "<mask>", "<pad>", "<unk>"};
    const char *const *names = bert;
    int32_t a = token_id(bpe, "[CLS]"), b = token_id(bpe, "[SEP]");
    int is_bert = a >= 0 && b >= 0;
    if (!is_bert) names = roberta, a = token_id(bpe, "<s>"), b = token_id(bpe, "</s>");
    if (api_bpe_has_template(bpe) && (a < 0 || b < 0)) { /* the files' template, their mask token */
        *t = (tmpl){.mask = api_bpe_mask_id(bpe), .own = 1};
        return 0;
    }
    if (a < 0 || b < 0) return -1;
    *t = (tmpl){.first = a, .mid = {b, b}, .last = b, .n_mid = is_bert ? 1 : 2, .type_b = is_bert,
                .mask = -1, .own = api_bpe_has_template(bpe)};
    for (int i = 0; i < 5; i++) {
        int32_t id = i == 0 ? a : i == 1 ? b : token_id(bpe, names[i]);
        if (id < 0) continue;
        if (i == 2) t->mask = id;
        t->names[t->n_specials] = names[i];
        t->ids[t->n_specials++] = id;
    }
    return 0;
}

/* A growing list of ids. */
typedef struct {
    int32_t *v;
    size_t n, cap;
    int failed;
} ids;

static void push(ids *x, const int32_t *v, size_t n) {
    if (x->failed || n == 0) return; /* v may be NULL then */
    if (x->n + n > x->cap) {
        size_t cap = (x->n + n) * 2 + 16;
        int32_t *p = realloc(x->v, cap * sizeof *p);
        if (p == NULL) {
            x->failed = 1;
            return;
        }
        x->v = p, x->cap = cap;
    }
    memcpy(x->v + x->n, v, n * sizeof *v);
    x->n += n;
}

/* The tokens of text[0..len) onto out (api_bpe_encode_ex's flags); 0 or an
 * API_BPE_* code. */
static int plain(const api_bpe *bpe, const char *text, size_t len, unsigned flags, ids *out) {
    int32_t *v = NULL;
    size_t n = 0;
    int rc = len || flags ? api_bpe_encode_ex(bpe, text, len, flags, &v, &n) : 0;
    if (rc == 0) push(out, v, n);
    free(v);
    return rc;
}

/* text with the template's special tokens written in it as their ids (an
 * encoder's); a decoder's (no t) with the folder's own template when flags
 * ask for it (Gemma's <bos>). */
static int encode(const api_bpe *bpe, const tmpl *t, const char *text, size_t len, unsigned flags,
                  ids *out) {
    if (t == NULL) return plain(bpe, text, len, flags, out);
    size_t start = 0;
    for (size_t i = 0; t && i < len; i++)
        for (int s = 0; s < t->n_specials; s++) {
            size_t k = strlen(t->names[s]);
            if (k > len - i || memcmp(text + i, t->names[s], k) != 0) continue;
            size_t end = i;
            if (t->ids[s] == t->mask) /* lstrip: the spaces before <mask> are its own */
                while (end > start && strchr(" \t\n\r\f\v", text[end - 1])) end--;
            int rc = plain(bpe, text + start, end - start, 0, out);
            if (rc) return rc;
            push(out, &t->ids[s], 1);
            start = i + k;
            i = start - 1;
            break;
        }
    return plain(bpe, text + start, len - start, 0, out);
}

/* How an encoder's texts are truncated: rq->text_max (longest first), else
 * tokenizer.json's "truncation"; with the template unless add_special is
 * false. */
static api_bpe_opts opts_of(const model_rq *rq) {
    api_bpe_opts o = {0};
    if (rq->text_max > 0) o = (api_bpe_opts){.max_length = (size_t)rq->text_max, .strategy = API_BPE_LONGEST_FIRST};
    else api_bpe_file_truncation(rq->tok->bpe, &o);
    o.flags = rq->text_flags & API_BPE_ADD_SPECIAL;
    return o;
}

/* A text a, or a pair (b not NULL), as the tokenizer encodes it: its ids,
 * type ids and where B starts. */
static int own_row(const model_rq *rq, const json_t *a, const json_t *b, ids *out, ids *types, int *b_start) {
    api_bpe_opts o = opts_of(rq);
    api_bpe_encoding en;
    int rc = api_bpe_encode_pair(rq->tok->bpe, json_string_value(a), json_string_length(a),
                                 b ? json_string_value(b) : NULL, b ? json_string_length(b) : 0, &o, &en);
    if (rc == 0) push(out, en.ids, en.n), push(types, en.type_ids, en.n);
    *b_start = b ? (int)en.b_start : -1;
    api_bpe_encoding_free(&en);
    return rc;
}

/* One row: a text, or a pair [a, b], with the template (encoders) into the
 * row's ids, types and where B starts. */
/* A text a, or a pair, with the template made here (vocab.json + merges.txt;
 * t NULL: a decoder's text alone) into the row's ids, types and where B
 * starts; a text cut to rq->text_max, its last special token kept. */
static int made_row(const model_rq *rq, const tmpl *t, const json_t *a, const json_t *b, ids *out,
                    ids *types, int *b_start) {
    const api_bpe *bpe = rq->tok->bpe;
    unsigned flags = rq->text_flags & ~API_BPE_ADD_SPECIAL;
    int rc = 0, wrap = t && (rq->text_flags & API_BPE_ADD_SPECIAL); /* add_special: false leaves it out */
    if (wrap) push(out, &t->first, 1);
    rc = encode(bpe, t, json_string_value(a), json_string_length(a), t ? flags : rq->text_flags, out);
    if (wrap && rc == 0) push(out, t->mid, b ? (size_t)t->n_mid : 1);
    if (t && !b && rc == 0 && rq->text_max > wrap && out->n > (size_t)rq->text_max) {
        out->n = (size_t)rq->text_max - (size_t)wrap; /* the embeddings' max_seq_length */
        if (wrap) push(out, t->mid, 1);
    }
    size_t n_a = out->n;
    if (b && rc == 0) rc = encode(bpe, t, json_string_value(b), json_string_length(b), flags, out);
    if (wrap && b && rc == 0) push(out, &t->last, 1);
    *b_start = b ? (int)n_a : -1;
    for (size_t i = types->n; rc == 0 && i < out->n; i++) {
        int32_t ty = b && i >= n_a ? t->type_b : 0;
        push(types, &ty, 1);
    }
    return rc;
}

/* One row: a text, or a pair [a, b], with the template (encoders) into the
 * row's ids, types and where B starts. */
static int row(const model_rq *rq, const tmpl *t, const json_t *v, const char *field, ids *out,
               ids *types, int *b_start, api_err *e) {
    int pair = json_is_array(v);
    const json_t *a = pair ? json_array_get(v, 0) : v, *b = pair ? json_array_get(v, 1) : NULL;
    if (!json_is_string(a) || (pair && (json_array_size(v) != 2 || !json_is_string(b))))
        return api__field_wrong_type(e, field, v, t ? "a string or a pair [a, b] of strings" : "a string");
    if (pair && !t)
        return api__fail(e, API_E_INVALID_ARGUMENT, field, "sentence pairs are an encoder's: %s reads "
                         "one text per row", attn_arch_name(rq->cfg.arch));
    int rc = t && t->own ? own_row(rq, a, b, out, types, b_start) : made_row(rq, t, a, b, out, types, b_start);
    if (rc == API_BPE_ENOMEM || out->failed || types->failed)
        return api__fail(e, API_E_OUT_OF_MEMORY, field, "cannot allocate the tokens of %s", field);
    if (rc == API_BPE_ENOTSUP)
        return api__fail(e, API_E_INVALID_ARGUMENT, field, "%s: tokenizer \"%s\" has no template for "
                         "a pair of texts", field, rq->tok->name);
    if (rc) return api__fail(e, API_E_INVALID_ARGUMENT, field, "%s: %s", field, api_bpe_strerror(rc));
    return 0;
}

/* The most tokens a row may have: the positions (past padding_idx for
 * RoBERTa); *enc: the model is an encoder. */
static int most_tokens(const model_rq *rq, int *enc) {
    attn_lm_plan p;
    if (attn_lm_plan_make(&rq->cfg, 1, 1, 0, &p, NULL) != ATTN_OK) return rq->cfg.context;
    *enc = p.spec.bidirectional;
    return rq->cfg.context - (p.spec.pos_after_pad ? p.spec.pad_id + 1 : 0);
}

/* Row b's ids (and types, where B starts) into rq's [B][T] arrays. */
static int place(model_rq *rq, int b, const ids *r, const ids *ty, int b_start) {
    size_t at = (size_t)b * (size_t)rq->T;
    memcpy(rq->idx + at, r->v, r->n * sizeof *r->v);
    for (size_t t = r->n; t < (size_t)rq->T; t++) rq->idx[at + t] = rq->cfg.pad_id;
    if (rq->mask) memset(rq->mask + at, 1, r->n);
    if (rq->types) memcpy(rq->types + at, ty->v, ty->n * sizeof *ty->v);
    if (rq->b_start) rq->b_start[b] = b_start;
    return 0;
}

/* Every row encoded (rows[b], types[b]), then the batch laid out. */
static int rows_read(const json_t *v, const char *name, const tmpl *t, model_rq *rq, int most,
                     api_err *e) {
    int list = json_is_array(v), B = list ? (int)json_array_size(v) : 1, T = 0, rc = 0, pairs = 0;
    if (list && (B < 1 || json_array_size(v) > 4096))
        return api__fail(e, API_E_INVALID_ARGUMENT, name, "%s lists 1 to 4096 rows", name);
    ids *r = calloc((size_t)B, sizeof *r), *ty = calloc((size_t)B, sizeof *ty);
    int *bs = calloc((size_t)B, sizeof *bs);
    if (!r || !ty || !bs) rc = api__fail(e, API_E_OUT_OF_MEMORY, name, "out of memory");
    for (int b = 0; rc == 0 && b < B; b++) {
        char field[48];
        snprintf(field, sizeof field, "%s", name);
        if (list) snprintf(field, sizeof field, "%s[%d]", name, b);
        const json_t *x = list ? json_array_get(v, (size_t)b) : v;
        pairs |= json_is_array(x);
        if ((rc = row(rq, t, x, field, &r[b], &ty[b], &bs[b], e)) == 0 && r[b].n == 0)
            rc = api__fail(e, API_E_INVALID_SHAPE, field, "%s is empty: no token", field);
        else if (rc == 0 && r[b].n > (size_t)most)
            rc = api__fail(e, API_E_INVALID_SHAPE, field, "%s is %zu tokens, over the %d positions the "
                           "model takes (its tokenizer's files do not truncate it to fit)", field, r[b].n, most);
        if (rc == 0 && (int)r[b].n > T) T = (int)r[b].n;
    }
    size_t n = (size_t)B * (size_t)T;
    int ragged = 0, typed = 0;
    for (int b = 0; rc == 0 && b < B; b++) ragged |= (int)r[b].n != T;
    for (int b = 0; rc == 0 && b < B; b++)
        for (size_t i = 0; i < ty[b].n; i++) typed |= ty[b].v[i] != 0;
    rq->B = B, rq->T = T, rq->batched = list, rq->from_text = 1;
    if (rc == 0 && (!(rq->idx = malloc(n * sizeof *rq->idx)) || (ragged && !(rq->mask = calloc(n, 1))) ||
                    (typed && rq->cfg.type_vocab > 1 && !(rq->types = calloc(n, sizeof *rq->types))) ||
                    (pairs && !(rq->b_start = malloc((size_t)B * sizeof *rq->b_start)))))
        rc = api__fail(e, API_E_OUT_OF_MEMORY, name, "out of memory");
    for (int b = 0; rc == 0 && b < B; b++) place(rq, b, &r[b], &ty[b], bs[b]);
    for (int b = 0; r && ty && b < B; b++) free(r[b].v), free(ty[b].v);
    free(r), free(ty), free(bs);
    return rc;
}

int api__model_text_read(const json_t *v, const char *name, const api_limits *lim, model_rq *rq,
                         api_err *e) {
    if (!json_is_string(v) && !json_is_array(v))
        return api__field_wrong_type(e, name, v, "a string, a list of strings, or of pairs [a, b]");
    (void)lim;
    if (rq->tok == NULL) return api__tokenizer_missing(name, e);
    int enc = 0, most = most_tokens(rq, &enc);
    size_t len = json_is_string(v) ? json_string_length(v) : 0;
    api_bpe_opts o;
    int cut = enc && (rq->text_max > 0 || api_bpe_file_truncation(rq->tok->bpe, &o));
    /* each token covers at most `most` bytes: a longer text cannot fit (unless truncated) */
    if (!cut && len > (size_t)most * api_bpe_max_token_bytes(rq->tok->bpe) + 64)
        return api__fail(e, API_E_INVALID_SHAPE, name, "%s of %zu bytes is more than %d tokens", name,
                         len, most);
    tmpl t;
    if (enc && template_of(rq->tok->bpe, &t))
        return api__fail(e, API_E_INVALID_ARGUMENT, name, "tokenizer \"%s\" has neither [CLS] and "
                         "[SEP] nor <s> and </s>: an encoder's text needs its template (give ids)",
                         rq->tok->name);
    if (rows_read(v, name, enc ? &t : NULL, rq, most, e)) return -1;
    for (size_t i = 0; i < (size_t)rq->B * (size_t)rq->T; i++)
        if (rq->idx[i] >= rq->cfg.vocab_size)
            return api__fail(e, API_E_INVALID_ARGUMENT, name,
                             "token %zu of %s is id %d, not below vocab_size %d (tokenizer \"%s\" "
                             "has %zu tokens)", i, name, (int)rq->idx[i], rq->cfg.vocab_size,
                             rq->tok->name, api_bpe_vocab_size(rq->tok->bpe));
    return 0;
}

/* The id of the template's mask token ([MASK], <mask>) of tok, or -1. */
int32_t api__model_mask_token(const api_tokenizer *tok) {
    tmpl t;
    return tok && template_of(tok->bpe, &t) == 0 ? t.mask : -1;
}
