#!/usr/bin/env bash
# GPT-2 124M-shaped forward: core (bench_gpt2) against PyTorch running seed
# 003's GPT2, in the same run, with 1 and with 2 threads each (core: an
# attn_pool of that width with OpenBLAS on one thread, as the server runs;
# PyTorch: torch.set_num_threads). Prints every time, then per case the
# speedup: PyTorch's best thread count against ours (issue 13's goal is 2x
# at T=128, logits only).
set -euo pipefail
here=$(dirname "$0")
all=""
for th in 1 2; do
  core=$("$1" "$th")
  torch=$(OMP_NUM_THREADS=$th /usr/bin/python3 "$here/bench_gpt2_torch.py" "$th")
  echo "threads $th: case                     core_ms   torch_ms  torch/core"
  join <(sort <<<"$core") <(sort <<<"$torch") |
    awk '{printf "  %-34s %9.2f %9.2f %8.2fx\n", $1, $2, $3, $3 / $2}'
  all+=$(join <(sort <<<"$core") <(sort <<<"$torch") | sed "s/^/$th /")$'\n'
done
echo "best of each side: case           core_ms (threads)  torch_ms (threads)  speedup"
awk 'NF == 4 {
       if (!($2 in c) || $3 < c[$2]) { c[$2] = $3; ct[$2] = $1 }
       if (!($2 in t) || $4 < t[$2]) { t[$2] = $4; tt[$2] = $1 }
     }
     END { for (k in c) printf "  %-34s %9.2f (%d) %11.2f (%d) %8.2fx\n", k, c[k], ct[k], t[k], tt[k], t[k] / c[k] }' \
  <<<"$all" | sort
