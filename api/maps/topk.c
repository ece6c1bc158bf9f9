/* topk.c - the k largest entries of each row of a map, for "top_k".
 *
 * Order: larger value first, equal values by lower index (a stable
 * descending sort). Masked entries (mask 1, or a -inf score) are never
 * chosen; a row with fewer than k others is padded with index -1, value 0.
 * Small k keeps a sorted list of the best k seen (one comparison with the
 * k-th for most entries); large k sorts the row's candidates.
 */
#include "api/maps/maps.h"

#include <math.h>
#include <stdlib.h>

/* Below this k, insertion into a sorted list of k; from it on, a sort. */
#define TOPK_INSERT_MAX 32

/* a before b: larger value, then lower index */
static int before(float va, int ia, float vb, int ib) { return va > vb || (va == vb && ia < ib); }

typedef struct {
    const float *x;
} sort_ctx;

static int cmp_desc(const void *a, const void *b, void *ctx) {
    const float *x = ((const sort_ctx *)ctx)->x;
    int i = *(const int *)a, j = *(const int *)b;
    if (x[i] > x[j]) return -1;
    if (x[i] < x[j]) return 1;
    return (i > j) - (i < j);
}

/* One row of floats: its chosen indices into idx (returns how many). */
static int row_top(const float *x, int n, const uint8_t *mask, int k, int *idx, int *scratch) {
    if (k <= TOPK_INSERT_MAX) {
        int m = 0;
        for (int j = 0; j < n; j++) {
            if ((mask && mask[j]) || x[j] == -INFINITY) continue;
            if (m == k && !before(x[j], j, x[idx[k - 1]], idx[k - 1])) continue;
            int p = m < k ? m++ : k - 1;
            while (p > 0 && before(x[j], j, x[idx[p - 1]], idx[p - 1])) {
                idx[p] = idx[p - 1];
                p--;
            }
            idx[p] = j;
        }
        return m;
    }
    int m = 0;
    for (int j = 0; j < n; j++)
        if (!(mask && mask[j]) && x[j] != -INFINITY) scratch[m++] = j;
    sort_ctx c = {x};
    qsort_r(scratch, (size_t)m, sizeof *scratch, cmp_desc, &c);
    m = m < k ? m : k;
    for (int i = 0; i < m; i++) idx[i] = scratch[i];
    return m;
}

void api__topk_f32(const float *x, size_t rows, int n, const uint8_t *mask, size_t mask_step,
                   int k, float *values, int32_t *indices, int *scratch) {
    int local[TOPK_INSERT_MAX];
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * (size_t)n;
        int *idx = k <= TOPK_INSERT_MAX ? local : scratch;
        /* the sort path leaves its choice at the front of scratch */
        int m = row_top(row, n, mask ? mask + r * mask_step : NULL, k, idx, scratch);
        float *v = values + r * (size_t)k;
        int32_t *o = indices + r * (size_t)k;
        for (int i = 0; i < k; i++) {
            o[i] = i < m ? idx[i] : -1;
            v[i] = i < m ? row[idx[i]] : 0.0f;
        }
    }
}

void api__topk_u8(const uint8_t *x, size_t rows, int n, const uint8_t *mask, size_t mask_step,
                  int k, uint8_t *values, int32_t *indices, int *scratch) {
    /* bytes are 0 or 1: the ones first, then the zeros, each by index */
    for (size_t r = 0; r < rows; r++) {
        const uint8_t *row = x + r * (size_t)n;
        const uint8_t *mk = mask ? mask + r * mask_step : NULL;
        uint8_t *v = values + r * (size_t)k;
        int32_t *o = indices + r * (size_t)k;
        int m = 0;
        for (int want = 1; want >= 0 && m < k; want--)
            for (int j = 0; j < n && m < k; j++)
                if (!(mk && mk[j]) && (row[j] != 0) == want) {
                    o[m] = j;
                    v[m++] = row[j];
                }
        for (; m < k; m++) {
            o[m] = -1;
            v[m] = 0;
        }
    }
    (void)scratch;
}
