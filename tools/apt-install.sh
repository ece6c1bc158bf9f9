#!/usr/bin/env bash
# apt-install.sh PACKAGE... - installs the Debian packages of the list that are
# missing (nothing when all are there), as root or through sudo. Used by the
# Makefile (`make deps` and the targets that need more) and by the tests that
# install a tool on first use (procs_ensure_package).
#
# Another apt-get or dpkg may hold the package lock (unattended upgrades, a
# parallel `make deps`): this waits for it up to APT_LOCK_TIMEOUT seconds
# (120), through apt's own DPkg::Lock::Timeout for `install` and by retrying
# `update`, which does not honour that option for the lists lock. When it
# fails it says what happened: no root and no sudo, the lock still held,
# or apt-get's own last error.
set -u
timeout=${APT_LOCK_TIMEOUT:-120}

missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0
echo "installing: ${missing[*]}" >&2

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if ! command -v sudo >/dev/null; then
    echo "cannot install ${missing[*]}: not root, and sudo is not installed" >&2
    exit 1
  fi
  if ! sudo -n true 2>/dev/null; then
    echo "cannot install ${missing[*]}: not root, and sudo asks for a password" >&2
    exit 1
  fi
  sudo=(sudo -n)
fi
apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -qq -o "DPkg::Lock::Timeout=$timeout")
err=$(mktemp)
trap 'rm -f "$err"' EXIT

# apt-get's own words: the line naming the lock and its holder, else the
# last "E: " line, else its last line.
reason() {
  grep -m 1 "Could not get lock" "$err" || grep -E '^E: ' "$err" | tail -n 1 | grep . ||
    tail -n 1 "$err"
}

deadline=$((SECONDS + timeout))
until "${apt[@]}" update >/dev/null 2>"$err"; do
  if grep -q "Could not get lock" "$err" && ((SECONDS < deadline)); then
    sleep 2
    continue
  fi
  if grep -q "Could not get lock" "$err"; then
    echo "cannot install ${missing[*]}: another package manager held the apt lock for" \
         "more than ${timeout} s: $(reason)" >&2
  else
    echo "cannot install ${missing[*]}: apt-get update failed: $(reason)" >&2
  fi
  exit 1
done
if ! "${apt[@]}" install -y "${missing[@]}" >/dev/null 2>"$err"; then
  if grep -q "Could not get lock" "$err"; then
    echo "cannot install ${missing[*]}: another package manager held the dpkg lock for" \
         "more than ${timeout} s: $(reason)" >&2
  else
    echo "cannot install ${missing[*]}: apt-get install failed: $(reason)" >&2
  fi
  exit 1
fi
for p in "${missing[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    echo "cannot install $p: apt-get reported success but the package is not installed" >&2
    exit 1
  fi
done
