#!/usr/bin/env bash
# Sentence embeddings, issue 30's goal: a batch of 32 sentences of 16 to 64
# tokens through all-MiniLM-L6-v2's shape (random weights written once by
# bench_embed_torch.py, the same file on both sides), the server's
# (bench_embed: the packed run and pooling, the dense run, POST
# /v1/embeddings through api_handle) on 1 and 2 threads against PyTorch 1.13
# at its best of four thread settings, the sides alternating, the best of
# BENCH_ROUNDS rounds (2) kept; then both on one thread in CPU time (the
# figure other processes on the cores do not inflate). bench_embed checks
# the packed against the dense embeddings, bench_embed_torch.py its lean
# forward against tests/golden/encoders.py before timing.
#
#   bench/run_embed.sh build/bench/bench_embed
set -euo pipefail
here=$(dirname "$0")
. "$here/common.sh"
rounds=${BENCH_ROUNDS:-2}
dir=$(mktemp -d /tmp/bench-embed-XXXXXX)
trap 'rm -rf "$dir"' EXIT
/usr/bin/python3 "$here/bench_embed_torch.py" write "$dir" >&2
# "core packed ms 12.3" from bench_embed as "core_packed$2 $1 12.3"
core_lines() { awk -v th="$1" -v suf="${2:-}" '/ ms /{n = $0; sub(/ ms .*/, "", n); gsub(/ /, "_", n); print n suf, th, $NF}'; }
all=""
for round in $(seq "$rounds"); do
  torch=$(/usr/bin/python3 "$here/bench_embed_torch.py" time "$dir" 9 2>/dev/null | sed 's/^torch embed /torch_best 0 /')
  core=$("$1" "$dir" 1 9 | core_lines 1)$'\n'$("$1" "$dir" 2 9 | core_lines 2)
  bench_alternate "$round" "$torch" "$core"
done
all+=$(/usr/bin/python3 "$here/bench_embed_torch.py" time "$dir" 9 cputime 2>/dev/null | sed 's/^torch embed /torch_cpu 1 /')$'\n'
all+=$("$1" "$dir" 1 9 cputime | core_lines 1 _cpu)
awk -v rounds="$rounds" -v load="$(bench_load)" -v machine="$(bench_machine)" '
NF == 3 { k = $1 SUBSEP $2; if (!(k in best) || $3 < best[k]) best[k] = $3 }
function b(name, th) { return best[name, th] }
END {
    printf "%s; load average %s; best of %d rounds, median of 9 batches each\n", machine, load, rounds
    printf "%-52s %10s %10s %12s\n", "32 sentences, 16-64 tokens, MiniLM-L6 shape (ms)", "1 thread", "2 threads", "1t CPU time"
    printf "%-52s %10.1f %10.1f %12.1f\n", "server core, packed (what /v1/embeddings runs)", b("core_packed", 1), b("core_packed", 2), b("core_packed_cpu", 1)
    printf "%-52s %10.1f %10.1f %12.1f\n", "server core, dense (the padding computed)", b("core_dense", 1), b("core_dense", 2), b("core_dense_cpu", 1)
    printf "%-52s %10.1f %10.1f %12.1f\n", "server api_handle POST /v1/embeddings (JSON both ways)", b("api_embeddings", 1), b("api_embeddings", 2), b("api_embeddings_cpu", 1)
    printf "%-52s %21.1f %12.1f\n", "PyTorch 1.13, padded batch, best of 4 thread settings", b("torch_best", 0), b("torch_cpu", 1)
    c = b("api_embeddings", 1) < b("api_embeddings", 2) ? b("api_embeddings", 1) : b("api_embeddings", 2)
    printf "speedup, best wall time against best: %.2fx (POST /v1/embeddings), %.2fx (core packed)\n",
           b("torch_best", 0) / c, b("torch_best", 0) / (b("core_packed", 1) < b("core_packed", 2) ? b("core_packed", 1) : b("core_packed", 2))
    printf "speedup on one thread in CPU time: %.2fx (POST /v1/embeddings), %.2fx (core packed)\n",
           b("torch_cpu", 1) / b("api_embeddings_cpu", 1), b("torch_cpu", 1) / b("core_packed_cpu", 1)
}' <<<"$all"
