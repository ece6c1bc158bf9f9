/* wp_model.c - the WordPiece model (models/wordpiece/mod.rs and
 * serialization.rs): a word is cut into the longest tokens of the
 * vocabulary from its start, each one after the first looked up with the
 * continuing_subword_prefix ("##") before it; a word with a part that has no
 * token, or with more characters than max_input_chars_per_word, is the one
 * unk_token. */
#include "wp.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define fail api__bpe_fail

int api__wp_parse_model(api__hf *h, json_t *model, size_t n_ids, char *err, size_t err_size) {
    json_t *unk = json_object_get(model, "unk_token"), *prefix = json_object_get(model, "continuing_subword_prefix"),
           *max = json_object_get(model, "max_input_chars_per_word");
    if (!json_is_string(unk) || !json_is_string(prefix) || !json_is_integer(max) || json_integer_value(max) < 0)
        return fail(err, err_size, API_BPE_EFORMAT, "model: a WordPiece without unk_token, "
                    "continuing_subword_prefix or max_input_chars_per_word");
    int rc = api__hf_load_vocab(h, json_object_get(model, "vocab"), n_ids, err, err_size);
    if (rc) return rc;
    h->wordpiece = 1;
    h->prefix_len = json_string_length(prefix);
    if (!(h->prefix = malloc(h->prefix_len + 1))) return API_BPE_ENOMEM;
    memcpy(h->prefix, json_string_value(prefix), h->prefix_len + 1);
    h->max_chars = (size_t)json_integer_value(max);
    h->unk = api__map_get(&h->vocab, json_string_value(unk), json_string_length(unk));
    if (h->unk < 0) /* the library fails each encoding that needs it */
        return fail(err, err_size, API_BPE_EFORMAT, "model: unk_token \"%.40s\" is not in the vocabulary",
                    json_string_value(unk));
    return 0;
}

/* The byte length of the character that ends s[0 .. n) (n > 0). */
static size_t last_char(const char *s, size_t n) {
    size_t j = n - 1;
    while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
    return n - j;
}

/* The id of s[start .. end), with the prefix when start > 0 (in w->word). */
static int32_t piece_id(const api__hf *h, api__work *w, const char *s, size_t start, size_t end) {
    if (start == 0) return api__map_get(&h->vocab, s, end);
    memcpy(w->word + h->prefix_len, s + start, end - start);
    return api__map_get(&h->vocab, w->word, h->prefix_len + end - start);
}

int api__wp_word(const api__hf *h, api__work *w, const char *s, size_t n, api__ids *out) {
    size_t chars = 0;
    for (size_t i = 0; i < n; i++) chars += ((unsigned char)s[i] & 0xC0) != 0x80;
    if (chars > h->max_chars) return api__ids_push(out, h->unk);
    if (w->wcap < h->prefix_len + n) {
        char *g = realloc(w->word, h->prefix_len + n);
        if (!g) return API_BPE_ENOMEM;
        w->word = g, w->wcap = h->prefix_len + n;
    }
    memcpy(w->word, h->prefix, h->prefix_len);
    size_t first = out->n;
    for (size_t start = 0, end; start < n; start = end) {
        int32_t id = -1;
        for (end = n; start < end; end -= last_char(s + start, end - start))
            if ((id = piece_id(h, w, s, start, end)) >= 0) break;
        if (id < 0) { /* a part without a token: the whole word is unk */
            out->n = first;
            return api__ids_push(out, h->unk);
        }
        int rc = api__ids_push(out, id);
        if (rc) return rc;
    }
    return 0;
}
