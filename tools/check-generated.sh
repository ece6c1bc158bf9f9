#!/usr/bin/env bash
# check-generated.sh - every committed generated file is what its generator
# writes now (`make gen` rewrites them). Run from the repository root; exits 1
# naming the file that differs, and says so when a generator's tool is
# missing (the check of that file is then skipped).
#
#   api/numbers/pow10_tables.h   api/numbers/gen-pow10.py (python3)
#   api/bpe/unicode.c            tools/gen-unicode.c (cc and libonig-dev; compared
#                                only with the Oniguruma version the file names)
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

want=$(sed -n "1s/.*from Oniguruma \([0-9.]*\)'s.*/\1/p" api/bpe/unicode.c)
if ! cc -std=c11 -O2 tools/gen-unicode.c -lonig -o "$tmp/gen-unicode" 2>"$tmp/cc.log"; then
  echo "generated: skipped api/bpe/unicode.c: tools/gen-unicode.c does not build here: $(head -c 300 "$tmp/cc.log")"
else
  "$tmp/gen-unicode" >"$tmp/unicode.c"
  have=$(sed -n "1s/.*from Oniguruma \([0-9.]*\)'s.*/\1/p" "$tmp/unicode.c")
  if [[ $have != "$want" ]]; then
    echo "generated: skipped api/bpe/unicode.c: it was written from Oniguruma $want, this one is $have"
  else
    same api/bpe/unicode.c "$tmp/unicode.c"
  fi
fi
exit $failed
