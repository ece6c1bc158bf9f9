/* hf_text.c - regular expressions as the `tokenizers` library runs them
 * (Oniguruma through the onig crate: onig::Regex::new, find_iter) and the
 * Unicode properties its steps ask for (utf8proc). */
#include "hf.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

static pthread_once_t onig_once = PTHREAD_ONCE_INIT;

static void onig_start(void) {
    OnigEncoding enc[1] = {ONIG_ENCODING_UTF8};
    onig_initialize(enc, 1);
}

/* regex::escape: a backslash before each of \.+*?()|[]{}^$#&-~ */
static char *escaped(const char *s, size_t n, size_t *out_len) {
    char *e = malloc(2 * n + 1);
    size_t o = 0;
    if (!e) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (strchr("\\.+*?()|[]{}^$#&-~", s[i]) && s[i] != '\0') e[o++] = '\\';
        e[o++] = s[i];
    }
    *out_len = o;
    return e;
}

regex_t *api__re_new(const char *pat, size_t n, int literal, char *err, size_t err_size) {
    pthread_once(&onig_once, onig_start);
    size_t len = n;
    char *lit = literal ? escaped(pat, n, &len) : NULL;
    if (literal && !lit) return api__bpe_fail(err, err_size, API_BPE_ENOMEM, "out of memory"), NULL;
    const UChar *p = (const UChar *)(lit ? lit : pat);
    regex_t *re = NULL;
    OnigErrorInfo info;
    int rc = onig_new(&re, p, p + len, ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &info);
    free(lit);
    if (rc != ONIG_NORMAL) {
        UChar msg[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(msg, rc, &info);
        api__bpe_fail(err, err_size, API_BPE_EFORMAT, "the pattern \"%.60s\" does not compile: %s",
                      pat, (const char *)msg);
        return NULL;
    }
    return re;
}

/* The byte length of the character at s (n > 0 bytes left), 1 if invalid. */
static size_t char_len(const char *s, size_t n) {
    uint32_t cp;
    size_t k = api__bpe_utf8((const unsigned char *)s, n, &cp);
    return k ? k : 1;
}

long api__re_find(regex_t *re, const char *s, size_t n, api__span **out, size_t *cap) {
    OnigRegion *region = onig_region_new();
    if (!region) return -1;
    const UChar *str = (const UChar *)s, *end = str + n;
    size_t last_end = 0, count = 0;
    long last_match_end = -1;
    while (last_end <= n) {
        onig_region_clear(region);
        int r = onig_search(re, str, end, str + last_end, end, region, ONIG_OPTION_NONE);
        if (r < 0) break; /* ONIG_MISMATCH, or an error: no more matches */
        size_t ms = (size_t)region->beg[0], me = (size_t)region->end[0];
        if (ms == me && last_match_end == (long)me) { /* no empty match right after the last */
            last_end += last_end < n ? char_len(s + last_end, n - last_end) : 1;
            continue;
        }
        last_end = me;
        last_match_end = (long)me;
        if (count == *cap) {
            size_t c = *cap ? 2 * *cap : 64;
            api__span *m = realloc(*out, c * sizeof *m);
            if (!m) {
                onig_region_free(region, 1);
                return -1;
            }
            *out = m;
            *cap = c;
        }
        (*out)[count++] = (api__span){ms, me};
    }
    onig_region_free(region, 1);
    return (long)count;
}

int api__is_space(uint32_t cp) {
    /* the White_Space property */
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

int api__is_word(uint32_t cp) {
    /* \w: alphabetic, marks, decimal digits, connector punctuation, joiners */
    if (cp == 0x200C || cp == 0x200D) return 1;
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
        return 1;
    default:
        return 0;
    }
}

int api__is_numeric(uint32_t cp) {
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

long api__unicode_form(int form, const char *s, size_t n, char **out) {
    utf8proc_option_t opt = UTF8PROC_STABLE;
    if (form == API__N_NFC) opt |= UTF8PROC_COMPOSE;
    else if (form == API__N_NFD) opt |= UTF8PROC_DECOMPOSE;
    else if (form == API__N_NFKC) opt |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
    else opt |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst, opt);
    if (r < 0) return -1;
    *out = (char *)dst;
    return (long)r;
}
