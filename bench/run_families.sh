#!/usr/bin/env bash
# The decoder families in the same run: the forward (T = 128, 512) and the
# per-token decode (context 128) of the SmolLM2-135M and Qwen2.5-0.5B shapes,
# core (bench_families, an attn_pool of 2 threads as the server runs) against
# PyTorch 1.13 running the project's reference (tests/golden/families.py) on
# the same weights at its best threads (bench_families_torch.py), and the
# decode step against the memory floor measured beside it. The weights are
# written once to $BENCH_FAMILIES_DIR (/tmp/attn-bench-families, 2.5 GB).
# The sides alternate, BENCH_ROUNDS rounds (2), the best of each kept.
#
#   bench/run_families.sh build/bench/bench_families
set -euo pipefail
here=$(dirname "$0")
. "$here/common.sh"
dir=${BENCH_FAMILIES_DIR:-/tmp/attn-bench-families}
rounds=${BENCH_ROUNDS:-2}
mkdir -p "$dir"
/usr/bin/python3 "$here/bench_families_torch.py" make "$dir"
all=""
for round in $(seq "$rounds"); do
  core=$("$1" "$dir" 2)
  torch=$(/usr/bin/python3 "$here/bench_families_torch.py" time "$dir")
  bench_alternate "$round" "$core" "$torch"
done
awk -v rounds="$rounds" -v load="$(bench_load)" -v machine="$(bench_machine)" '
function keep(arr, k, v) { if (!(k in arr) || v < arr[k]) arr[k] = v }
$1 == "core" && $3 == "floor" { keep(fl, $2, $4); gb[$2] = $5; next }
$1 == "core" { keep(core, $2 " " $3, $4); if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } next }
$1 == "torch" { keep(torch, $2 " " $3, $4) }
END {
    printf "decoder families, batch 1, %s (load average %s; best of %d rounds)\n", machine, load, rounds
    printf "%-14s %-10s %10s %10s %9s %10s %8s\n", "shape", "what", "core ms", "torch ms", "torch/core",
           "floor ms", "/floor"
    for (i = 1; i <= n; i++) {
        s = order[i]
        split("forward128 forward512 decode128", w, " ")
        for (j = 1; j <= 3; j++) {
            k = s " " w[j]
            if (w[j] == "decode128")
                printf "%-14s %-10s %10.2f %10.2f %8.2fx %10.2f %7.2fx\n", s, w[j], core[k], torch[k],
                       torch[k] / core[k], fl[s], core[k] / fl[s]
            else
                printf "%-14s %-10s %10.2f %10.2f %8.2fx\n", s, w[j], core[k], torch[k], torch[k] / core[k]
        }
        printf "%-14s (a decode step reads %.3f GB)\n", "", gb[s]
    }
    print "(core: attn_lm_forward / attn_lm_decode on 2 threads, median; torch: tests/golden/families.py"
    print " forward and its pieces with a key/value cache, best of torch/OpenBLAS threads 1/1, 1/2, 2/1, 2/2)"
}' <<<"$all"
