#!/usr/bin/env bash
# Runs the core and PyTorch benchmarks back to back (same machine, same run)
# and prints, per case: our times with one thread and with both cores,
# PyTorch's with one and two threads, PyTorch's best time divided by our
# best, our GFLOP/s (both cores) against a bare cblas_sgemm of the same FLOPs
# on both cores, and the peak memory each side added.
# Each case runs on our side and then on PyTorch's before the next, so that
# a change of load on a shared machine falls on both sides of a ratio.
set -euo pipefail
cases="sdpa_causal_t4096_d64 sdpa_causal_t16384_d64 gpt2_t512_context gpt2_t512_weights
       gpt2_t1024_context gpt2_t1024_weights"
core="" torch=""
for c in $cases; do
    core+=$("$1" "$c")$'\n'
    torch+=$(/usr/bin/python3 "$(dirname "$0")/bench_torch.py" "$c")$'\n'
done
core=${core%$'\n'}
echo "$core" | awk -v torch="$torch" '
BEGIN {
    n = split(torch, lines, "\n")
    for (i = 1; i <= n; i++) {
        split(lines[i], f, " ")
        tms[f[1], f[2]] = f[3]; tmb[f[1], f[2]] = f[4]
    }
    printf "%-24s %9s %9s %9s %9s %7s %7s %7s %5s %8s %8s\n", "case", "core_1t", "core_2t",
           "torch_1t", "torch_2t", "speedup", "GFLOP/s", "sgemm", "%", "core_MB", "torch_MB"
}
{
    ms[$1, $2] = $3; gf[$1, $2] = $4; sg[$1, $2] = $5; mb[$1, $2] = $6
    if (!($1 in seen)) { seen[$1] = 1; order[++cases] = $1 }
}
END {
    for (c = 1; c <= cases; c++) {
        k = order[c]
        cb = ms[k, 1] < ms[k, 2] ? ms[k, 1] : ms[k, 2]
        tb = tms[k, 1] < tms[k, 2] ? tms[k, 1] : tms[k, 2]
        cm = mb[k, 1] > mb[k, 2] ? mb[k, 1] : mb[k, 2]
        tm = tmb[k, 1] > tmb[k, 2] ? tmb[k, 1] : tmb[k, 2]
        printf "%-24s %9.2f %9.2f %9.2f %9.2f %6.2fx %7.1f %7.1f %4.0f%% %8.1f %8.1f\n", k,
               ms[k, 1], ms[k, 2], tms[k, 1], tms[k, 2], tb / cb, gf[k, 2], sg[k, 2],
               100 * gf[k, 2] / sg[k, 2], cm, tm
    }
}'
