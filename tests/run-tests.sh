#!/usr/bin/env bash
# Runs each test program given, prints its output, and fails when a program
# fails, crashes, or runs no check at all (Check says 100% for zero checks).
set -u
failed=0 programs=0 total_checks=0 total_failures=0 times=''
for t in "$@"; do
  programs=$((programs + 1))
  log=$(mktemp)
  start=$SECONDS
  "$t" >"$log" 2>&1
  rc=$?
  cat "$log"
  times+="$((SECONDS - start)) s ${t##*/}"$'\n'
  line=$(grep -E '^[0-9]+%: Checks: [0-9]+' "$log" | tail -n 1)
  checks=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$line")
  fails=$(sed -E 's/.*Failures: ([0-9]+), Errors: ([0-9]+).*/\1+\2/' <<<"$line")
  rm -f "$log"
  if [[ -z "$line" ]]; then
    echo "FAIL $t: no Check summary (exit $rc)"; failed=$((failed + 1)); continue
  fi
  total_checks=$((total_checks + checks)); total_failures=$((total_failures + fails))
  if ((rc != 0)) || ((checks == 0)) || ((fails != 0)); then
    echo "FAIL $t: exit $rc, $checks checks, $((fails)) failed"; failed=$((failed + 1))
  fi
done
echo "slowest programs:"; sort -rn <<<"${times%$'\n'}" | head -n 8 | sed 's/^/  /'
echo "test programs: $programs, checks: $total_checks, failed checks: $total_failures, failed programs: $failed"
echo "$((total_checks - total_failures)) passed, $total_failures failed"
((programs > 0 && failed == 0))
