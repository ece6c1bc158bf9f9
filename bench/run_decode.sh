#!/usr/bin/env bash
# Per-token decode of the GPT-2 124M shape at context 128 and 512, both
# families, in the same run: core with its key/value cache (bench_decode,
# an attn_pool of 2 threads as the server runs, beside the memory-bandwidth
# floor it measures itself: the weights a step reads, summed once by the same
# threads), PyTorch 1.13 with its own cache (the past_key_values loop) and
# PyTorch's full recompute of the window (the books' loop), both at their
# best thread configuration (bench_decode_torch.py). The sides alternate,
# BENCH_ROUNDS rounds (2), the best of each kept; every time is printed with
# its ratio to the floor measured beside it. Run it with OPENBLAS_CORETYPE and
# OPENBLAS_L2_SIZE unset, as `make bench` does.
#
#   bench/run_decode.sh build/bench/bench_decode
set -euo pipefail
here=$(dirname "$0")
. "$here/common.sh"
rounds=${BENCH_ROUNDS:-2}
all=""
for round in $(seq "$rounds"); do
  core=$("$1" 2 | awk '/decode step/ {
      gsub(",", ""); printf "core %s %s %s %s\n", $1, $3, $8, $13 }')   # family ctx step floor
  torch=$(/usr/bin/python3 "$here/bench_decode_torch.py")
  bench_alternate "$round" "$core" "$torch"
done
awk -v rounds="$rounds" -v load="$(bench_load)" '
$1 == "core" { k = $2 " " $3; if (!(k in core) || $4 < core[k]) { core[k] = $4; floor_[k] = $5 }
               if (!(k in seen)) { seen[k] = 1; order[++n] = k } next }
$1 ~ /^torch_/ { k = $2 " " $3; if (!(($1, k) in t) || $4 < t[$1, k]) t[$1, k] = $4 }
END {
    printf "per-token decode, GPT-2 124M shape, batch 1 (load average %s; best of %d rounds)\n", load, rounds
    printf "%-18s %10s %10s %8s %14s %16s %10s %10s\n", "family context", "core ms", "floor ms", "/floor",
           "torch kv ms", "torch full ms", "kv/core", "full/core"
    for (i = 1; i <= n; i++) {
        k = order[i]
        printf "%-18s %10.2f %10.2f %7.2fx %14.2f %16.2f %9.2fx %9.2fx\n", k, core[k], floor_[k],
               core[k] / floor_[k], t["torch_kv", k], t["torch_full", k], t["torch_kv", k] / core[k],
               t["torch_full", k] / core[k]
    }
    print "(core: attn_gpt2_decode on 2 threads, median step; floor: its weights read once by the same"
    print " threads in the same process; torch kv: the past_key_values loop, torch full: model(idx[:, -ctx:]),"
    print " each at its best of torch/OpenBLAS threads 1/1, 1/2, 2/1, 2/2)"
}' <<<"$all"
