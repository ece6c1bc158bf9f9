#!/usr/bin/env bash
# Core against PyTorch on the same shapes, in the same run, each side at its
# best: OpenBLAS's own kernels for both (run it with OPENBLAS_CORETYPE and
# OPENBLAS_L2_SIZE unset, as `make bench` does), one and two threads each
# (PyTorch's "two" is the best of OpenBLAS on two, PyTorch on two, or both:
# bench_torch.py), the sides alternating case by case and round by round
# (core first in odd rounds, PyTorch first in even ones), and the best of
# BENCH_ROUNDS rounds (3) kept for each. A 1024-cube cblas_sgemm on one and
# on two OpenBLAS threads is timed in every round too: each time is printed
# with its rate as a fraction of that (the best sgemm rate of the run at the
# same thread count), so that a figure says how near the machine's limit it
# is, whatever the load of the machine was.
#
#   bench/run.sh build/bench/bench_core [case ...]
set -euo pipefail
here=$(dirname "$0")
. "$here/common.sh"
core_bin=$1
shift
cases=${*:-"sdpa_causal_t4096_d64 sdpa_causal_t16384_d64 gpt2_t128_context gpt2_t512_context
            gpt2_t512_weights gpt2_t1024_context gpt2_t1024_weights"}
rounds=${BENCH_ROUNDS:-3}
for v in OPENBLAS_CORETYPE OPENBLAS_L2_SIZE; do
  [[ -z "${!v:-}" ]] || echo "note: $v=${!v} is set: both sides run those kernels, not their own"
done

all=""   # lines "side case threads ms gflops mb", and "sgemm threads gflops"
for round in $(seq "$rounds"); do
  for c in $cases; do
    core=$("$core_bin" "$c" | sed 's/^/core /')
    torch=$(/usr/bin/python3 "$here/bench_torch.py" "$c" | sed 's/^/torch /')
    bench_alternate "$round" "$core" "$torch"
  done
  all+=$("$core_bin" sgemm)$'\n'
done

awk -v rounds="$rounds" -v load="$(bench_load)" -v cpu="$(bench_machine)" "$bench_awk_sgemm"'
NF >= 5 {
    side = $1; k = $2; th = $3; ms = $4
    if (!((side, k, th) in best) || ms < best[side, k, th]) best[side, k, th] = ms
    if (side == "core") fl[k] = $5 * ms * 1e6   # GFLOP/s times ms: the FLOPs of the case
    mb = side == "core" ? $6 : $5
    if (mb > peak[side, k]) peak[side, k] = mb
    if (!(k in seen)) { seen[k] = 1; order[++n] = k }
}
function frac(side, k, th) { return 100 * fl[k] / (best[side, k, th] * 1e6) / sg[th] }
END {
    printf "%s, OpenBLAS %s kernels; load average %s; best of %d rounds\n", cpu, kernels, load, rounds
    printf "sgemm 1024^3, best of the run: %.1f GFLOP/s on 1 thread, %.1f on 2\n", sg[1], sg[2]
    printf "%-24s %17s %17s %17s %17s %8s %8s %8s\n", "case", "core_1t ms (%sg)", "core_2t ms (%sg)",
           "torch_1t ms (%sg)", "torch_2t ms (%sg)", "speedup", "core_MB", "torch_MB"
    for (i = 1; i <= n; i++) {
        k = order[i]
        cb = best["core", k, 1] < best["core", k, 2] ? best["core", k, 1] : best["core", k, 2]
        tb = best["torch", k, 1] < best["torch", k, 2] ? best["torch", k, 1] : best["torch", k, 2]
        printf "%-24s %9.2f (%4.0f%%) %9.2f (%4.0f%%) %9.2f (%4.0f%%) %9.2f (%4.0f%%) %7.2fx %8.1f %8.1f\n", k,
               best["core", k, 1], frac("core", k, 1), best["core", k, 2], frac("core", k, 2),
               best["torch", k, 1], frac("torch", k, 1), best["torch", k, 2], frac("torch", k, 2),
               tb / cb, peak["core", k], peak["torch", k]
    }
    print "(%sg: the FLOPs the module needs over the time, as a percentage of the sgemm rate at that thread count;"
    print " speedup: the best time of PyTorch over the best of ours)"
}' <<<"$all"
