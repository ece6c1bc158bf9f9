#!/usr/bin/env bash
# GPT-2 124M-shaped forward: core (bench_gpt2) against PyTorch running seed
# 003's GPT2, in the same run, each side at its best: OpenBLAS's own kernels
# (run it with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset, as `make bench`
# does), 1 and 2 threads each (core: an attn_pool of that width with OpenBLAS
# on one thread, as the server runs; PyTorch: the best of its thread
# configurations, bench_gpt2_torch.py), the sides alternating and the best
# of BENCH_ROUNDS rounds (2) kept. A 1024-cube cblas_sgemm on one and two
# OpenBLAS threads is timed in each round (bench_core sgemm): each time is
# printed with its rate as a fraction of that.
#
#   bench/run_gpt2.sh build/bench/bench_gpt2 build/bench/bench_core
set -euo pipefail
here=$(dirname "$0")
. "$here/common.sh"
rounds=${BENCH_ROUNDS:-2}
all=""   # "side threads case ms [gflop]" and "sgemm threads gflops"
for round in $(seq "$rounds"); do
  for th in 1 2; do
    core=$("$1" "$th" | sed "s/^/core $th /")
    torch=$(/usr/bin/python3 "$here/bench_gpt2_torch.py" "$th" | sed "s/^/torch $th /")
    bench_alternate $((round + th)) "$torch" "$core"
  done
  all+=$("$2" sgemm)$'\n'
done
awk -v rounds="$rounds" -v load="$(bench_load)" -v cpu="$(bench_machine)" "$bench_awk_sgemm"'
$3 ~ /_init$/ { next }
{
    side = $1; th = $2; k = $3
    if (!((side, k, th) in best) || $4 < best[side, k, th]) best[side, k, th] = $4
    if (NF >= 5) fl[k] = $5
    if (!(k in seen)) { seen[k] = 1; order[++n] = k }
}
function frac(side, k, th) { return 100 * fl[k] / best[side, k, th] * 1e3 / sg[th] }
END {
    printf "%s, OpenBLAS %s kernels; load average %s; best of %d rounds\n", cpu, kernels, load, rounds
    printf "sgemm 1024^3, best of the run: %.1f GFLOP/s on 1 thread, %.1f on 2\n", sg[1], sg[2]
    printf "%-30s %6s %17s %17s %17s %17s %8s\n", "case", "GFLOP", "core_1t ms (%sg)", "core_2t ms (%sg)",
           "torch_1t ms (%sg)", "torch_2t ms (%sg)", "speedup"
    for (i = 1; i <= n; i++) {
        k = order[i]
        cb = best["core", k, 1] < best["core", k, 2] ? best["core", k, 1] : best["core", k, 2]
        tb = best["torch", k, 1] < best["torch", k, 2] ? best["torch", k, 1] : best["torch", k, 2]
        printf "%-30s %6.1f %9.1f (%4.0f%%) %9.1f (%4.0f%%) %9.1f (%4.0f%%) %9.1f (%4.0f%%) %7.2fx\n", k, fl[k],
               best["core", k, 1], frac("core", k, 1), best["core", k, 2], frac("core", k, 2),
               best["torch", k, 1], frac("torch", k, 1), best["torch", k, 2], frac("torch", k, 2), tb / cb
    }
    print "(%sg: the GFLOP of the forward over its time, as a percentage of the sgemm rate at that thread count;"
    print " the +maps and next_token cases count the same GFLOP as the plain one, less lm_head for next_token)"
}' <<<"$all"
