/* batch.c - the token ids of a POST /model request and what comes with them:
 *
 *   "idx": [T], [B][T], or rows of different lengths [[...], [...]]: these
 *          are padded on the right with the model's pad_token_id (0 when it
 *          has none) and the padding is attention_mask's 0s
 *   "attention_mask": idx's shape ([T] or [B][T]), 1 for a token, 0 for
 *          padding (transformers' attention_mask); a causal model's padding
 *          comes after its tokens (its positions count from 0)
 *   "token_type_ids": idx's shape (the same row lengths, or the padded
 *          [B][T]), integers below type_vocab_size (BERT's segments)
 */
#include "api/model/model.h"
#include "api/numbers/numbers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A row's length: a JSON array's size, or a scanned row's count; -1 when
 * x is no row. */
static long row_len(const json_t *x) {
    const api_scanned *sc = api__scan_lookup(x);
    if (sc) return sc->rank == 1 ? (long)sc->count : -1;
    return json_is_array(x) ? (long)json_array_size(x) : -1;
}

/* 1 when v is rows of different lengths (a plain JSON list of rows). */
static int is_ragged(const json_t *v) {
    size_t n = json_is_array(v) && !api__scan_lookup(v) ? json_array_size(v) : 0;
    long first = n ? row_len(json_array_get(v, 0)) : -1;
    for (size_t i = 1; first >= 0 && i < n; i++) {
        long k = row_len(json_array_get(v, i));
        if (k < 0) return 0;
        if (k != first) return 1;
    }
    return 0;
}

/* Integer values of t below `below` into out; a bad one is named by its
 * place ("idx[1][3]"). */
static int ints_of(const api_tensor *t, const char *field, long below, int32_t *out, api_err *e) {
    size_t T = (size_t)t->shape[t->rank - 1];
    for (size_t i = 0; i < t->count; i++) {
        float x = t->data[i];
        if (x >= 0.0f && x < (float)below && x == floorf(x)) {
            out[i] = (int32_t)x;
            continue;
        }
        char at[80];
        if (t->rank == 2) snprintf(at, sizeof at, "%s[%zu][%zu]", field, i / T, i % T);
        else snprintf(at, sizeof at, "%s[%zu]", field, i);
        int ids = strncmp(field, "token_type_ids", 14) != 0 && strncmp(field, "attention_mask", 14) != 0;
        return api__fail(e, API_E_INVALID_ARGUMENT, at, "%s is %g: %s are integers in [0, %s%ld)", at,
                         (double)x, ids ? "token ids" : "its values", ids ? "vocab_size " : "", below);
    }
    return 0;
}

/* The rows of a ragged field, each [len[b]] of integers below `below`, into
 * out [B][T] (T the longest); lens gets each row's length (NULL: they must
 * equal want). */
static int ragged_rows(const json_t *v, const char *name, long below, int T, int *lens,
                       const int *want, size_t *budget, int32_t *out, api_err *e) {
    for (size_t b = 0; b < json_array_size(v); b++) {
        char field[64];
        snprintf(field, sizeof field, "%s[%zu]", name, b);
        api_tensor t;
        if (api__tensor_read(json_array_get(v, b), field, 1, 1, API_VAL_NUMBER, budget, &t, e)) return -1;
        int rc = 0;
        if (want && t.shape[0] != want[b])
            rc = api__fail(e, API_E_INVALID_SHAPE, field, "%s has %d values, idx[%zu] %d tokens", field,
                           t.shape[0], b, want[b]);
        else if (t.shape[0] < 1 || t.shape[0] > T)
            rc = api__fail(e, API_E_INVALID_SHAPE, field, "%s holds no token", field);
        if (rc == 0) rc = ints_of(&t, field, below, out + b * (size_t)T, e);
        if (lens && rc == 0) lens[b] = t.shape[0];
        api__tensor_free(&t);
        if (rc) return -1;
    }
    return 0;
}

/* Rows of different lengths: padded with pad_token_id, masked. */
static int read_ragged(const json_t *v, const char *name, model_rq *rq, size_t *budget, api_err *e) {
    size_t B = json_array_size(v);
    long T = 0;
    for (size_t b = 0; b < B; b++) T = row_len(json_array_get(v, b)) > T ? row_len(json_array_get(v, b)) : T;
    if (B > INT32_MAX || T > rq->cfg.context || (double)B * (double)T > (double)*budget)
        return api__fail(e, T > rq->cfg.context ? API_E_INVALID_SHAPE : API_E_TOO_LARGE, name,
                         "%s of %zu rows of up to %ld tokens is too large (the model takes at most "
                         "%d positions)", name, B, T, rq->cfg.context);
    rq->B = (int)B, rq->T = (int)T, rq->batched = 1;
    int *lens = malloc(B * sizeof *lens);
    rq->idx = malloc(B * (size_t)T * sizeof *rq->idx);
    rq->mask = calloc(B * (size_t)T, 1);
    int rc = lens && rq->idx && rq->mask ? 0 : api__fail(e, API_E_OUT_OF_MEMORY, name, "out of memory");
    for (size_t i = 0; rc == 0 && i < B * (size_t)T; i++) rq->idx[i] = rq->cfg.pad_id;
    if (rc == 0) rc = ragged_rows(v, name, rq->cfg.vocab_size, rq->T, lens, NULL, budget, rq->idx, e);
    for (size_t b = 0; rc == 0 && b < B; b++) memset(rq->mask + b * (size_t)T, 1, (size_t)lens[b]);
    free(lens);
    return rc;
}

int api__model_rows_read(const json_t *v, const char *name, model_rq *rq, size_t *budget, api_err *e) {
    if (is_ragged(v)) return read_ragged(v, name, rq, budget, e);
    api_tensor t;
    if (api__tensor_read(v, name, 1, 2, API_VAL_NUMBER, budget, &t, e)) return -1;
    rq->batched = t.rank == 2;
    rq->B = rq->batched ? t.shape[0] : 1;
    rq->T = t.shape[t.rank - 1];
    int rc = 0;
    if (rq->T < 1 || rq->B < 1)
        rc = api__fail(e, API_E_INVALID_SHAPE, name, "%s holds no token", name);
    else if (rq->T > rq->cfg.context)
        rc = api__fail(e, API_E_INVALID_SHAPE, name, "%d tokens exceed %s %d (the model takes at most "
                       "%d positions)", rq->T, api__hparam_name(rq->cfg.arch, ATTN_HP_CONTEXT),
                       rq->cfg.context, rq->cfg.context);
    else if ((rq->idx = malloc(t.count * sizeof *rq->idx)) == NULL)
        rc = api__fail(e, API_E_OUT_OF_MEMORY, name, "cannot allocate %s", name);
    if (rc == 0) rc = ints_of(&t, name, rq->cfg.vocab_size, rq->idx, e);
    api__tensor_free(&t);
    return rc;
}

/* idx: [T], [B][T] or rows of different lengths. */
static int read_idx(const json_t *root, model_rq *rq, size_t *budget, api_err *e) {
    const json_t *v = api__field(root, "idx");
    if (v == NULL)
        return api__fail(e, API_E_MISSING_FIELD, "idx", "idx is required: token ids [T] or [B][T] "
                         "(rows of different lengths are padded)");
    return api__model_rows_read(v, "idx", rq, budget, e);
}

/* A tensor field of idx's padded shape into a new array (floats checked
 * below `below`). */
static int read_shaped(const json_t *v, const char *name, const model_rq *rq, long below,
                       size_t *budget, int32_t *out, api_err *e) {
    api_tensor t;
    if (api__tensor_read(v, name, 1, 2, below == 2 ? API_VAL_BOOL : API_VAL_NUMBER, budget, &t, e))
        return -1;
    int rc = 0;
    if (t.rank != (rq->batched ? 2 : 1) || t.shape[t.rank - 1] != rq->T || (rq->batched && t.shape[0] != rq->B))
        rc = api__fail(e, API_E_INVALID_SHAPE, name, "%s must have idx's shape (%s%d tokens)", name,
                       rq->batched ? "rows of " : "", rq->T);
    if (rc == 0) rc = ints_of(&t, name, below, out, e);
    api__tensor_free(&t);
    return rc;
}

/* attention_mask: 0 and 1; every row keeps a token; a causal model's padding last. */
static int read_mask(const json_t *root, model_rq *rq, size_t *budget, api_err *e) {
    const json_t *v = api__field(root, "attention_mask");
    if (v == NULL) return 0;
    if (rq->mask)
        return api__fail(e, API_E_INVALID_ARGUMENT, "attention_mask", "idx's rows of different "
                         "lengths make the mask: leave attention_mask out, or pad idx yourself");
    size_t n = (size_t)rq->B * (size_t)rq->T;
    int32_t *m = malloc(n * sizeof *m);
    if (m == NULL) return api__fail(e, API_E_OUT_OF_MEMORY, "attention_mask", "out of memory");
    int rc = read_shaped(v, "attention_mask", rq, 2, budget, m, e);
    if (rc == 0 && (rq->mask = malloc(n)) == NULL) rc = api__fail(e, API_E_OUT_OF_MEMORY, "attention_mask", "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++) rq->mask[i] = (uint8_t)m[i];
    free(m);
    attn_lm_plan p;
    int causal = attn_lm_plan_make(&rq->cfg, 1, 1, 0, &p, NULL) == ATTN_OK && !p.spec.bidirectional;
    for (int b = 0; rc == 0 && b < rq->B; b++) {
        const uint8_t *r = rq->mask + (size_t)b * (size_t)rq->T;
        int kept = 0, after_pad = 0;
        for (int t = 0; t < rq->T; t++) after_pad |= kept > 0 && r[t] && t > 0 && !r[t - 1], kept += r[t];
        if (kept == 0 || (causal && (after_pad || !r[0])))
            rc = api__fail(e, API_E_INVALID_ARGUMENT, "attention_mask", "attention_mask's row %d %s", b,
                           kept == 0 ? "keeps no token" : "pads before a token: a causal model's "
                           "padding comes after its tokens (its positions count from 0)");
    }
    return rc;
}

/* token_type_ids: idx's shape, or its rows' lengths when idx was ragged. */
static int read_types(const json_t *root, model_rq *rq, size_t *budget, api_err *e) {
    const json_t *v = api__field(root, "token_type_ids");
    if (v == NULL) return 0;
    if (rq->cfg.type_vocab < 1)
        return api__fail(e, API_E_INVALID_ARGUMENT, "token_type_ids", "%s has no token types",
                         attn_arch_name(rq->cfg.arch));
    size_t n = (size_t)rq->B * (size_t)rq->T;
    if ((rq->types = calloc(n, sizeof *rq->types)) == NULL)
        return api__fail(e, API_E_OUT_OF_MEMORY, "token_type_ids", "out of memory");
    if (!is_ragged(v)) return read_shaped(v, "token_type_ids", rq, rq->cfg.type_vocab, budget, rq->types, e);
    int *lens = malloc((size_t)rq->B * sizeof *lens), rc = 0;
    if (lens == NULL || !rq->mask || json_array_size(v) != (size_t)rq->B)
        rc = api__fail(e, lens ? API_E_INVALID_SHAPE : API_E_OUT_OF_MEMORY, "token_type_ids",
                       "token_type_ids must have idx's shape (rows of idx's lengths)");
    for (int b = 0; rc == 0 && b < rq->B; b++) {
        lens[b] = 0;
        for (int t = 0; t < rq->T; t++) lens[b] += rq->mask[(size_t)b * (size_t)rq->T + (size_t)t];
    }
    if (rc == 0) rc = ragged_rows(v, "token_type_ids", rq->cfg.type_vocab, rq->T, NULL, lens, budget, rq->types, e);
    free(lens);
    return rc;
}

int api__model_ids_read(const json_t *root, model_rq *rq, size_t *budget, api_err *e) {
    if (read_idx(root, rq, budget, e) || read_mask(root, rq, budget, e) || read_types(root, rq, budget, e))
        return -1;
    int any = 0; /* a mask of ones is no padding */
    for (size_t i = 0; rq->mask && i < (size_t)rq->B * (size_t)rq->T; i++) any |= !rq->mask[i];
    if (rq->mask && !any) {
        free(rq->mask);
        rq->mask = NULL;
    }
    return 0;
}
