#!/usr/bin/env bash
# Concurrent generations through the server (issue 31's setup): 1, 2, 4, 8
# and 16 streams of the GPT-2 124M shape (random weights, written once by
# bench/streams_model.py into $STREAMS_DIR), 128-token prompts, 64 new
# tokens, greedy, streamed, prefill included; F32 and BF16
# (--weights-dtype bf16); the batched steps (--batch on) against the old
# turns (--batch off) in the same run. Each line: aggregate tokens/s, time to
# first token and time between tokens (p50, p95, ms; wall clock of the
# client, bench/bench_streams.c). STREAMS_COUNTS, STREAMS_DTYPES and
# STREAMS_MODELS (gpt2-124m, smollm2-135m) narrow a run down.
#
#   bench/run_streams.sh build/attention-server build/bench/bench_streams
set -euo pipefail
here=$(dirname "$0")
. "$here/common.sh"
server=$1 client=$2
dir=${STREAMS_DIR:-${TMPDIR:-/tmp}/attn-bench-streams}
counts=${STREAMS_COUNTS:-1 2 4 8 16}
dtypes=${STREAMS_DTYPES:-f32 bf16}
models=${STREAMS_MODELS:-gpt2-124m}
port=${STREAMS_PORT:-18771}
/usr/bin/python3 "$here/streams_model.py" "$dir" $models
echo "concurrent streams: 128-token prompts, 64 new tokens, greedy; $(bench_machine)"
for model in $models; do
  for dtype in $dtypes; do
    for batch in off on; do
      "$server" --port "$port" --model "m=$dir/$model" --weights-dtype "$dtype" --batch "$batch" \
        --max-streams 16 --max-new-tokens 64 --timeout 900 2>/dev/null &
      pid=$!
      for _ in $(seq 600); do
        curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
        sleep 0.1
      done
      echo "== $model $dtype --batch $batch (load average $(bench_load))"
      "$client" "http://127.0.0.1:$port" m 128 64 $counts || echo "(a stream failed)"
      kill "$pid"
      wait "$pid" 2>/dev/null || true
    done
  done
done
