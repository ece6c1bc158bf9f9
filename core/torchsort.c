/* torchsort.c - torch.sort(x) ascending as PyTorch 1.13 does it on the CPU,
 * equal values included.
 *
 * sort_kernel (aten/src/ATen/native/cpu/SortingKernel.cpp) fills the indices
 * with 0 .. n-1 and calls std::sort over (value, index) pairs with a
 * comparator of the values alone (KeyValueCompAsc), so the order of equal
 * values is whatever GCC 12's introsort leaves (Debian's build: "GCC 12.2").
 * This file is that std::sort (bits/stl_algo.h, bits/stl_heap.h) written
 * out for the pairs, step for step: the same comparisons and moves give the
 * same order. Values are compared with <; no NaN reaches here.
 */
#include "torchmath.h"

#include <string.h>

typedef attn__kv kv;

#define THRESHOLD 16 /* _S_threshold */

static inline void swap_kv(kv *a, kv *b) {
    kv t = *a;
    *a = *b;
    *b = t;
}

/* ==== Heap sort, the depth limit's fallback ================================ */

static void push_heap(kv *first, ptrdiff_t hole, ptrdiff_t top, kv value) {
    ptrdiff_t parent = (hole - 1) / 2;
    while (hole > top && first[parent].value < value.value) {
        first[hole] = first[parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    first[hole] = value;
}

static void adjust_heap(kv *first, ptrdiff_t hole, ptrdiff_t len, kv value) {
    const ptrdiff_t top = hole;
    ptrdiff_t second = hole;
    while (second < (len - 1) / 2) {
        second = 2 * (second + 1);
        if (first[second].value < first[second - 1].value) second--;
        first[hole] = first[second];
        hole = second;
    }
    if ((len & 1) == 0 && second == (len - 2) / 2) {
        second = 2 * (second + 1);
        first[hole] = first[second - 1];
        hole = second - 1;
    }
    push_heap(first, hole, top, value);
}

static void pop_heap(kv *first, kv *last, kv *result) {
    kv value = *result;
    *result = *first;
    adjust_heap(first, 0, last - first, value);
}

static void make_heap(kv *first, kv *last) {
    ptrdiff_t len = last - first;
    if (len < 2) return;
    for (ptrdiff_t parent = (len - 2) / 2;; parent--) {
        adjust_heap(first, parent, len, first[parent]);
        if (parent == 0) return;
    }
}

/* __partial_sort(first, last, last): __heap_select then __sort_heap. */
static void heap_sort(kv *first, kv *last) {
    make_heap(first, last); /* heap_select's loop over [last, last) is empty */
    while (last - first > 1) {
        --last;
        pop_heap(first, last, last);
    }
}

/* ==== Introsort ============================================================ */

static void move_median_to_first(kv *result, kv *a, kv *b, kv *c) {
    if (a->value < b->value) {
        if (b->value < c->value) swap_kv(result, b);
        else if (a->value < c->value) swap_kv(result, c);
        else swap_kv(result, a);
    } else if (a->value < c->value) {
        swap_kv(result, a);
    } else if (b->value < c->value) {
        swap_kv(result, c);
    } else {
        swap_kv(result, b);
    }
}

static kv *unguarded_partition(kv *first, kv *last, const kv *pivot) {
    for (;;) {
        while (first->value < pivot->value) ++first;
        --last;
        while (pivot->value < last->value) --last;
        if (!(first < last)) return first;
        swap_kv(first, last);
        ++first;
    }
}

static void introsort_loop(kv *first, kv *last, ptrdiff_t depth_limit) {
    while (last - first > THRESHOLD) {
        if (depth_limit == 0) {
            heap_sort(first, last);
            return;
        }
        --depth_limit;
        kv *mid = first + (last - first) / 2;
        move_median_to_first(first, first + 1, mid, last - 1);
        kv *cut = unguarded_partition(first + 1, last, first);
        introsort_loop(cut, last, depth_limit);
        last = cut;
    }
}

static void unguarded_linear_insert(kv *last) {
    kv val = *last;
    kv *next = last - 1;
    while (val.value < next->value) {
        *last = *next;
        last = next;
        --next;
    }
    *last = val;
}

static void insertion_sort(kv *first, kv *last) {
    if (first == last) return;
    for (kv *i = first + 1; i != last; ++i) {
        if (i->value < first->value) {
            kv val = *i;
            memmove(first + 1, first, (size_t)(i - first) * sizeof *first);
            *first = val;
        } else {
            unguarded_linear_insert(i);
        }
    }
}

void attn__torch_sort_ascending(attn__kv *kv_, size_t n) {
    if (n == 0) return;
    kv *first = kv_, *last = kv_ + n;
    int lg = 63 - __builtin_clzll((unsigned long long)n); /* std::__lg */
    introsort_loop(first, last, (ptrdiff_t)lg * 2);
    if (n > THRESHOLD) { /* __final_insertion_sort */
        insertion_sort(first, first + THRESHOLD);
        for (kv *i = first + THRESHOLD; i != last; ++i) unguarded_linear_insert(i);
    } else {
        insertion_sort(first, last);
    }
}
