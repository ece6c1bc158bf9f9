#!/usr/bin/env bash
# The analyses of POST /model's "analysis" on the GPT-2 124M shape, batch 1:
#  - the six attention-only ones (entropy, sink, previous_token,
#    duplicate_token, induction, rollout) at T = 128 and 1,024, beside the
#    forward that returns the maps (bench_analysis THREADS maps: core's
#    attn_lm_run with attn_weights; with the analyses too; the analyses
#    without the maps), on 1 thread (its CPU time) and 2 (wall time);
#  - the importance sweep (the forward and 144 ablated runs from each
#    block's input, through api_handle) against PyTorch with hooks running
#    the same 144 ablations (bench_analysis_torch.py: TransformerLens's loop
#    of one forward per head, and each layer's 12 as one batch), on the same
#    weights (the torch script writes them as the checkpoint the server's
#    side loads), at T = 128, 1 and 2 threads each, the sides alternating,
#    the best of BENCH_ROUNDS rounds (2) kept, beside the 1024-cube sgemm
#    rate of the same rounds; the two sides' 144 results must agree (1e-4 +
#    1e-3 relative).
#
#   bench/run_analysis.sh build/bench/bench_analysis build/bench/bench_core
set -euo pipefail
here=$(dirname "$0")
. "$here/common.sh"
rounds=${BENCH_ROUNDS:-2}
model=$(mktemp /tmp/bench-analysis-XXXXXX.safetensors)
trap 'rm -f "$model"' EXIT
all=""
for round in $(seq "$rounds"); do
  for th in 1 2; do all+=$("$1" "$th" maps | sed "s/^/core $th /")$'\n'; done
  for th in 1 2; do
    first=""
    if ((round == 1 && th == 1)); then first=$model; fi
    torch=$(/usr/bin/python3 "$here/bench_analysis_torch.py" "$th" $first | sed "s/^/torch $th /")
    core=$(BENCH_ANALYSIS_RUNS=1 "$1" "$th" importance "$model" | sed "s/^/core $th /")
    bench_alternate $((round + th)) "$torch" "$core"
  done
  all+=$("$2" sgemm)$'\n'
done
awk -v rounds="$rounds" -v load="$(bench_load)" -v machine="$(bench_machine)" '
$1 == "sgemm" { if ($3 > sg[$2]) sg[$2] = $3; next }
$3 == "result" {
    for (i = 4; i <= NF; i++) {
        if ($1 == "torch") want[i] = $i; else got[i] = $i
        n_res = NF
    }
    next
}
{ k = $1 "_" $3; if (!((k, $2) in best) || $4 < best[k, $2]) best[k, $2] = $4 }
function min2(k) { return best[k, 1] < best[k, 2] ? best[k, 1] : best[k, 2] }
function row(what, k) { printf "%-52s %12.0f %12.0f %12.0f\n", what, best[k, 1], best[k, 2], best[k "_cpu", 1] }
END {
    bad = 0
    for (i = 4; i <= n_res; i++) {
        d = got[i] - want[i]; if (d < 0) d = -d
        w = want[i]; if (w < 0) w = -w
        if (d > 1e-4 + 1e-3 * w) bad++
    }
    printf "%s; sgemm 1024^3, best of the run: %.1f GFLOP/s on 1 thread, %.1f on 2 (load average %s; best of %d rounds)\n",
           machine, sg[1], sg[2], load, rounds
    printf "%-34s %12s %12s %12s %12s %12s\n", "the six analyses (ms)", "maps", "maps + six", "added", "six alone", "vs maps"
    for (th = 1; th <= 2; th++)
        for (t = 128; t <= 1024; t *= 8) {
            m = best["core_maps_t" t, th]; b = best["core_both_t" t, th]; a = best["core_alone_t" t, th]
            printf "%-34s %12.1f %12.1f %11.1f%% %12.1f %11.1f%%\n", "T = " t (th == 1 ? ", 1 thread, CPU time" : ", 2 threads, wall"),
                   m, b, 100 * (b - m) / m, a, 100 * (a - m) / m
        }
    printf "%-52s %12s %12s %12s\n", "importance sweep, 144 heads, T=128 (ms)", "1 thread", "2 threads", "1t CPU time"
    row("server (api_handle, runs from each block, grouped)", "core_importance_124m_t128")
    row("PyTorch hooks, one forward per head (TL loop)", "torch_importance_124m_t128")
    row("PyTorch hooks, each layer'"'"'s 12 heads as a batch", "torch_importance_124m_t128_batched")
    c = min2("core_importance_124m_t128"); cc = best["core_importance_124m_t128_cpu", 1]
    printf "speedup, best wall time against best: %.2fx over the loop, %.2fx over the batched PyTorch\n",
           min2("torch_importance_124m_t128") / c, min2("torch_importance_124m_t128_batched") / c
    printf "speedup on one thread in CPU time: %.2fx over the loop, %.2fx over the batched PyTorch\n",
           best["torch_importance_124m_t128_cpu", 1] / cc, best["torch_importance_124m_t128_batched_cpu", 1] / cc
    printf "results: %d of %d differ beyond 1e-4 + 1e-3 relative\n", bad, n_res - 3
    if (bad) exit 1
}' <<<"$all"
