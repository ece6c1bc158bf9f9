#!/bin/sh
# smoke.sh: posts the seed MultiHeadAttention request (torch.manual_seed(123),
# MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)) to $URL/attention/multihead and
# checks the context vectors that the chapter prints, to 4 decimals.
#   URL=http://127.0.0.1:8080 docker/smoke.sh
set -eu
: "${URL:=http://127.0.0.1:8080}"
reply=$(curl -fsS --max-time 30 -H 'Content-Type: application/json' \
  --data-binary '{"module":"MultiHeadAttention","d_out":2,"num_heads":2,"context_length":6,"dropout":0.0,"qkv_bias":false,"init":{"seed":123},"inputs":[[[0.43,0.15,0.89],[0.55,0.87,0.66],[0.57,0.85,0.64],[0.22,0.58,0.33],[0.77,0.25,0.10],[0.05,0.80,0.55]]]}' \
  "$URL/attention/multihead")
printf '%s' "$reply" | python3 -c '
import json, sys
want = [[[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593],
         [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]]]
got = json.load(sys.stdin)["context"]
flat = lambda t: [x for a in t for b in a for x in b]
assert len(got) == 1 and len(got[0]) == 6 and all(len(r) == 2 for r in got[0]), "shape %r" % (got,)
bad = [(g, w) for g, w in zip(flat(got), flat(want)) if abs(g - w) > 0.5e-4 + 1e-6]
if bad:
    sys.exit("smoke: context differs from the seed: %r" % bad)
print("smoke: MultiHeadAttention seed 123 context matches the chapter:", got)
'
# the demo model built into the image: listed, and its next byte after Romeo's line
models=$(curl -fsS --max-time 30 "$URL/models")
case "$models" in
*'"name":"shakespeare"'*'"builtin":true'*) echo "smoke: the demo model is served" ;;
*) echo "smoke: no demo model in GET /models: $models" >&2; exit 1 ;;
esac
next=$(curl -fsS --max-time 30 --data-binary '{"model":"shakespeare","text":"ROMEO:\nBut soft, what light through yonder window","return":["next_token"]}' "$URL/model/gpt2")
case "$next" in
*'"next_token":115,'*) echo "smoke: the demo model writes as it does outside the image" ;;
*) echo "smoke: the demo model answered $next" >&2; exit 1 ;;
esac
