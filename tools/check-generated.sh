#!/usr/bin/env bash
# check-generated.sh - every committed generated file is what its generator
# writes now (`make gen` rewrites them). Run from the repository root; exits 1
# naming the file that differs, and says so when a generator's tool is
# missing (the check of that file is then skipped).
#
#   api/numbers/pow10_tables.h   api/numbers/gen-pow10.py (python3)
#   api/bpe/unicode.c            api/bpe/gen-unicode.js (node; compared only with a
#                                Node of the Unicode version the file names)
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

same() { # same FILE GENERATED: 0 if equal, else says so
  if cmp -s "$1" "$2"; then
    echo "generated: $1 is what its generator writes"
  else
    echo "generated: $1 differs from what its generator writes (run make gen):"
    diff "$1" "$2" | head -n 10
    failed=1
  fi
}

if [[ -x /usr/bin/python3 ]]; then
  /usr/bin/python3 api/numbers/gen-pow10.py >"$tmp/pow10_tables.h" && same api/numbers/pow10_tables.h "$tmp/pow10_tables.h"
else
  echo "generated: skipped api/numbers/pow10_tables.h: /usr/bin/python3 is missing"
fi

want=$(sed -n "1s/.*Node's Unicode \([0-9.]*\).*/\1/p" api/bpe/unicode.c)
if ! command -v node >/dev/null; then
  echo "generated: skipped api/bpe/unicode.c: node is missing"
elif [[ $(node -p process.versions.unicode) != "$want" ]]; then
  echo "generated: skipped api/bpe/unicode.c: it was written from Unicode $want, this node has $(node -p process.versions.unicode)"
else
  node api/bpe/gen-unicode.js >"$tmp/unicode.c" && same api/bpe/unicode.c "$tmp/unicode.c"
fi
exit $failed
