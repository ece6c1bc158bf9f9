#!/usr/bin/env bash
# GPT-2 124M-shaped forward: core (bench_gpt2) against PyTorch running seed
# 003's GPT2, in the same run, with 1 and with 2 threads each (OpenBLAS
# threads for core, torch.set_num_threads for PyTorch). Prints both times and
# PyTorch's time divided by core's, and core's 1-thread time against
# PyTorch's best thread count.
set -euo pipefail
here=$(dirname "$0")
for th in 1 2; do
  core=$("$1" "$th")
  torch=$(OMP_NUM_THREADS=$th /usr/bin/python3 "$here/bench_gpt2_torch.py" "$th")
  echo "threads $th: case                     core_ms   torch_ms  torch/core"
  join <(sort <<<"$core") <(sort <<<"$torch") |
    awk '{printf "  %-34s %9.2f %9.2f %8.2fx\n", $1, $2, $3, $3 / $2}'
done
