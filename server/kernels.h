/* kernels.h - the OpenBLAS kernels of this process, checked at start.
 *
 * OpenBLAS picks its kernels by the CPU unless OPENBLAS_CORETYPE names a
 * set. Before the server starts anything, srv_kernels_select runs the
 * core's attn_blas_check in a child process (so that a kernel set that
 * crashes on this CPU, such as SkylakeX's AVX-512 code on a CPU without it,
 * is caught too). When the check fails, the server executes itself again
 * with the next kernel set of SRV_KERNELS_FALLBACKS in OPENBLAS_CORETYPE and
 * the failure in ATTN_BLAS_FALLBACK, which the new process reports; when
 * none passes, it does not start.
 */
#ifndef SRV_KERNELS_H
#define SRV_KERNELS_H

#include "core/attention.h"

/* Tried in this order after the kernels OpenBLAS chose: AVX2, then the
 * generic SSE3 set every x86-64 CPU runs. */
#define SRV_KERNELS_FALLBACKS {"Haswell", "Prescott"}

typedef struct {
    attn_blas_report report; /* the kernels in use: passed */
    char fallback_from[256]; /* "" or the kernel sets that failed, with why:
                                "Zen: linear_nt_k768 out of bound (1.1e+02 of it)" */
} srv_kernels;

/* Checks the kernels; on failure executes argv[0]'s binary again with the
 * next kernel set (does not return then). Returns 0 when the kernels in use
 * passed (the start-up line is logged), -1 when no kernel set passed or the
 * check could not run (logged). Call before any thread of ours exists. */
int srv_kernels_select(char **argv);

/* What srv_kernels_select found (zeros before it ran). */
const srv_kernels *srv_kernels_get(void);

#endif
