#!/usr/bin/env bash
# A full activation-patching sweep, every head of the 124M shape on a
# 16-token pair: the server's (bench_patch: api_handle with "patch", the
# runs from each layer's input, grouped and shared over an attn_pool)
# against PyTorch with hooks (bench_patch_torch.py: TransformerLens's loop of
# one forward per head, and the same runs batched), on the same weights (the
# torch script writes them as a checkpoint the server's side loads), in the
# same run, 1 and 2 threads each, the sides alternating and the best of
# BENCH_ROUNDS rounds (2) kept, beside the 1024-cube sgemm rate of the same
# rounds; the two sides' 144 results must agree (1e-4 + 1e-3 relative).
#
#   bench/run_patch.sh build/bench/bench_patch build/bench/bench_core
set -euo pipefail
here=$(dirname "$0")
. "$here/common.sh"
rounds=${BENCH_ROUNDS:-2}
model=$(mktemp /tmp/bench-patch-XXXXXX.safetensors)
trap 'rm -f "$model"' EXIT
all=""
for round in $(seq "$rounds"); do
  for th in 1 2; do
    first=""
    if ((round == 1 && th == 1)); then first=$model; fi
    torch=$(/usr/bin/python3 "$here/bench_patch_torch.py" "$th" $first | sed "s/^/torch $th /")
    core=$(BENCH_PATCH_RUNS=1 "$1" "$th" "$model" | sed "s/^/core $th /")
    bench_alternate $((round + th)) "$torch" "$core"
  done
  all+=$("$2" sgemm)$'\n'
done
awk -v rounds="$rounds" -v load="$(bench_load)" '
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
function row(what, k) { printf "%-46s %12.0f %12.0f %12.0f\n", what, best[k, 1], best[k, 2], best[k "_cpu", 1] }
END {
    bad = 0
    for (i = 4; i <= n_res; i++) {
        d = got[i] - want[i]; if (d < 0) d = -d
        w = want[i]; if (w < 0) w = -w
        if (d > 1e-4 + 1e-3 * w) bad++
    }
    printf "sgemm 1024^3, best of the run: %.1f GFLOP/s on 1 thread, %.1f on 2 (load average %s; best of %d rounds)\n",
           sg[1], sg[2], load, rounds
    printf "%-46s %12s %12s %12s\n", "patching sweep, 144 heads, T=16 (ms)", "1 thread", "2 threads", "1t CPU time"
    row("server (api_handle, runs from each layer)", "core_patch_heads_124m_t16")
    row("PyTorch hooks, one forward per head (TL)", "torch_patch_heads_124m_t16")
    row("PyTorch hooks, the 144 runs as one batch", "torch_patch_heads_124m_t16_batched")
    c = min2("core_patch_heads_124m_t16"); cc = best["core_patch_heads_124m_t16_cpu", 1]
    printf "speedup, best wall time against best: %.2fx over TransformerLens'"'"'s loop, %.2fx over the batched PyTorch\n",
           min2("torch_patch_heads_124m_t16") / c, min2("torch_patch_heads_124m_t16_batched") / c
    printf "speedup on one thread in CPU time: %.2fx over the loop, %.2fx over the batched PyTorch\n",
           best["torch_patch_heads_124m_t16_cpu", 1] / cc, best["torch_patch_heads_124m_t16_batched_cpu", 1] / cc
    printf "results: %d of %d differ beyond 1e-4 + 1e-3 relative\n", bad, n_res - 3
    if (bad) exit 1
}' <<<"$all"
