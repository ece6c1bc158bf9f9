#!/usr/bin/env bash
# Runs the core and PyTorch benchmarks back to back (same machine, same run)
# and prints, per case, both times and PyTorch's time divided by ours.
set -euo pipefail
core=$("$1")
torch=$(OMP_NUM_THREADS=1 /usr/bin/python3 "$(dirname "$0")/bench_torch.py")
echo "case                       core_ms   torch_ms  torch/core"
join <(sort <<<"$core") <(sort <<<"$torch") |
  awk '{printf "%-26s %9.4f %9.4f %8.2fx\n", $1, $2, $3, $3 / $2}'
