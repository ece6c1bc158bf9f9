/* options.c - a request's "generate" object into api_gen_opts:
 *
 *   "generate": {"max_new_tokens": 20, "temperature": 1.4, "top_k": 25,
 *                "top_p": 0.9, "seed": 123, "stop": ["\n\n"],
 *                "eos_token_id": 50256, "context_size": 256,
 *                "logprobs": 5, "attention": true, "min_p": 0.05,
 *                "repetition_penalty": 1.3, "frequency_penalty": 0.5,
 *                "presence_penalty": 0.5}
 *
 * The names are the book's generate() arguments (Raschka, ch. 5:
 * max_new_tokens, context_size, temperature, top_k, eos_id as
 * eos_token_id, Hugging Face's name), Hugging Face's top_p, min_p and
 * repetition_penalty, OpenAI's frequency_penalty and presence_penalty
 * (core/penalty.c has the definitions); null is the same as absent. */
#include "api/generate/generate.h"
#include "api/request/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const fields[] = {"max_new_tokens", "temperature", "top_k", "top_p", "seed",
                                     "stop", "eos_token_id", "context_size", "logprobs",
                                     "attention", "min_p", "repetition_penalty",
                                     "frequency_penalty", "presence_penalty", NULL};

const char *api__gen_finish_name(api_gen_finish f) {
    static const char *const names[] = {NULL, "length", "stop", "timeout"};
    return (unsigned)f < sizeof names / sizeof names[0] ? names[f] : NULL;
}

void api__gen_opts_init(api_gen_opts *o) {
    *o = (api_gen_opts){.max_new_tokens = 16, .sampler = ATTN_SAMPLER_GREEDY,
                        .penalties = ATTN_PENALTIES_OFF, .eos_id = -1};
}

void api__gen_opts_free(api_gen_opts *o) {
    for (int i = 0; i < o->n_stop; i++) free(o->stop[i]);
    o->n_stop = 0;
}

int api__gen_check_cap(int n, int max_new, const char *field, api_err *e) {
    if (max_new > 0 && n > max_new)
        return api__fail(e, API_E_TOO_LARGE, field,
                         "%s is %d, over this server's limit of %d new tokens a request "
                         "(--max-new-tokens)", field, n, max_new);
    return 0;
}

int api__gen_add_stop(api_gen_opts *o, const char *s, size_t n, const char *field, api_err *e) {
    if (o->n_stop == API_GEN_MAX_STOP)
        return api__fail(e, API_E_INVALID_ARGUMENT, field, "at most %d stop strings",
                         API_GEN_MAX_STOP);
    if (n == 0 || n > API_GEN_MAX_STOP_BYTES)
        return api__fail(e, API_E_INVALID_ARGUMENT, field,
                         "a stop string has 1 to %d bytes (this one %zu)", API_GEN_MAX_STOP_BYTES, n);
    char *copy = malloc(n + 1);
    if (copy == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, field, "cannot copy the stop strings");
    memcpy(copy, s, n);
    copy[n] = '\0';
    o->stop[o->n_stop] = copy;
    o->stop_len[o->n_stop++] = n;
    return 0;
}

/* "stop": a string or an array of them. */
static int read_stop(const json_t *g, api_gen_opts *o, api_err *e) {
    const json_t *v = api__field(g, "stop");
    if (v == NULL) return 0;
    if (json_is_string(v)) return api__gen_add_stop(o, json_string_value(v), json_string_length(v),
                                                    "generate.stop", e);
    if (!json_is_array(v))
        return api__field_wrong_type(e, "generate.stop", v, "a string or an array of strings");
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *s = json_array_get(v, i);
        char name[48];
        snprintf(name, sizeof name, "generate.stop[%zu]", i);
        if (!json_is_string(s)) return api__field_wrong_type(e, name, s, "a string");
        if (api__gen_add_stop(o, json_string_value(s), json_string_length(s), name, e)) return -1;
    }
    return 0;
}

/* Renames the field of an error of the shared getters "x" -> "generate.x". */
static int in_generate(api_err *e) {
    char field[sizeof e->field];
    snprintf(field, sizeof field, "generate.%.*s", 64, e->field); /* names of 20 bytes at most */
    snprintf(e->field, sizeof e->field, "%s", field);
    return -1;
}

/* temperature (>= 0; 0 is greedy), top_k (0: off), top_p (in (0, 1]). */
static int read_sampler(const json_t *g, api_gen_opts *o, api_err *e) {
    attn_sampler *s = &o->sampler;
    double t = 0.0, p = 1.0;
    if (api__field_number(g, "temperature", &t, e) < 0 || api__field_number(g, "top_p", &p, e) < 0 ||
        api__field_int(g, "top_k", 0, INT32_MAX, &s->top_k, e) < 0)
        return in_generate(e);
    if (!(t >= 0.0 && t <= 1e6))
        return api__fail(e, API_E_INVALID_ARGUMENT, "generate.temperature",
                         "generate.temperature is %g: 0 (greedy) or a positive number", t);
    if (!(p > 0.0 && p <= 1.0))
        return api__fail(e, API_E_INVALID_ARGUMENT, "generate.top_p",
                         "generate.top_p is %g: in (0, 1] (1: off)", p);
    s->temperature = t;
    s->top_p = p;
    return 0;
}

/* obj's number name into *x when present; a 400 naming prefix+name when
 * it is not in [lo, hi] (lo excluded when open). */
static int read_ranged(const json_t *obj, const char *prefix, const char *name, double lo,
                       int open, double hi, double *x, api_err *e) {
    char field[64];
    snprintf(field, sizeof field, "%s%s", prefix, name);
    const json_t *v = api__field(obj, name);
    if (v == NULL) return 0;
    if (!json_is_number(v)) return api__field_wrong_type(e, field, v, "a number");
    double d = json_number_value(v);
    if (!(open ? d > lo : d >= lo) || !(d <= hi))
        return api__fail(e, API_E_INVALID_ARGUMENT, field, "%s is %g: in %c%g, %g]", field, d,
                         open ? '(' : '[', lo, hi);
    *x = d;
    return 0;
}

int api__gen_read_penalties(const json_t *obj, const char *prefix, api_gen_opts *o, api_err *e) {
    attn_penalties *p = &o->penalties;
    if (read_ranged(obj, prefix, "min_p", 0.0, 0, 1.0, &o->sampler.min_p, e) ||
        read_ranged(obj, prefix, "repetition_penalty", 0.0, 1, 1e6, &p->repetition_penalty, e) ||
        read_ranged(obj, prefix, "frequency_penalty", -2.0, 0, 2.0, &p->frequency_penalty, e) ||
        read_ranged(obj, prefix, "presence_penalty", -2.0, 0, 2.0, &p->presence_penalty, e))
        return -1;
    return 0;
}

static int read_numbers(const json_t *g, int max_new, api_gen_opts *o, api_err *e) {
    int attention = 0;
    if (api__field_int(g, "max_new_tokens", 0, INT32_MAX, &o->max_new_tokens, e) < 0 ||
        api__field_int(g, "eos_token_id", 0, INT32_MAX, &o->eos_id, e) < 0 ||
        api__field_int(g, "context_size", 1, INT32_MAX, &o->context_size, e) < 0 ||
        api__field_int(g, "logprobs", 0, API_GEN_MAX_TOP, &o->logprobs, e) < 0 ||
        api__field_bool(g, "attention", &attention, e) < 0)
        return in_generate(e);
    o->attention = attention;
    const json_t *seed = api__field(g, "seed");
    if (seed) {
        if (!json_is_integer(seed)) return api__field_wrong_type(e, "generate.seed", seed, "an integer");
        o->has_seed = 1;
        o->seed = (uint64_t)json_integer_value(seed); /* negative seeds wrap, as torch's */
    }
    return api__gen_check_cap(o->max_new_tokens, max_new, "generate.max_new_tokens", e);
}

int api__gen_parse(const json_t *g, int max_new, int has_tokenizer, api_gen_opts *o, api_err *e) {
    api__gen_opts_init(o);
    if (!json_is_object(g))
        return api__field_wrong_type(e, "generate", g, "an object ({\"max_new_tokens\": N, ...})");
    const char *key = api__unknown_key(g, fields);
    if (key) {
        char echo[API_ECHO_MAX + 4], field[API_ECHO_MAX + 16];
        snprintf(field, sizeof field, "generate.%s", api__echo(echo, sizeof echo, key));
        return api__fail(e, API_E_UNKNOWN_FIELD, field,
                         "unknown field \"%s\" (generate takes max_new_tokens, temperature, top_k, "
                         "top_p, min_p, repetition_penalty, frequency_penalty, presence_penalty, seed, stop, "
                         "eos_token_id, context_size, logprobs, attention)",
                         field);
    }
    if (read_numbers(g, max_new, o, e)) return -1;
    if (read_sampler(g, o, e) || api__gen_read_penalties(g, "generate.", o, e)) return -1;
    if (read_stop(g, o, e)) return -1;
    if (o->n_stop && !has_tokenizer)
        return api__fail(e, API_E_INVALID_ARGUMENT, "generate.stop",
                         "stop strings are matched on the text: they need a tokenizer "
                         "(--tokenizer NAME=DIR)");
    return 0;
}
