#!/usr/bin/env bash
# Small requests at the speed of the HTTP layer: the seed MultiHeadAttention
# example (api/examples/multihead_seed.json) POSTed to this server under
# `wrk -t2 -c16`, against nginx serving the same reply bytes as a static file
# (a POST to a static file is a 405 in nginx, so nginx gets GETs of it), in
# the same run, each WRK_SECONDS long, alternating twice. Prints requests/s
# of each and the ratio.
#
#   bench/http_small.sh build/attention-server
set -euo pipefail
server=$1
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${WRK_SECONDS:-5}
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ours=$(port)
theirs=$(port)

"$server" --host 127.0.0.1 --port "$ours" --access-log off >"$tmp/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$ours/healthz" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$ours/attention/multihead" --data-binary @"$root/api/examples/multihead_seed.json" \
  -o "$tmp/reply.json"

mkdir -p "$tmp/www"
cp "$tmp/reply.json" "$tmp/www/reply.json"
cat >"$tmp/nginx.conf" <<EOF
daemon off;
worker_processes 2;
pid $tmp/nginx.pid;
error_log $tmp/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $tmp/body;
    proxy_temp_path $tmp/proxy;
    fastcgi_temp_path $tmp/fastcgi;
    uwsgi_temp_path $tmp/uwsgi;
    scgi_temp_path $tmp/scgi;
    server {
        listen 127.0.0.1:$theirs;
        root $tmp/www;
        location / { default_type application/json; }
    }
}
EOF
nginx -c "$tmp/nginx.conf" -p "$tmp" -e "$tmp/error.log" &
pids+=($!)
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$theirs/reply.json" >/dev/null && break; sleep 0.1; done

# wrk sends the example as the POST body
body=$(python3 -c 'import json, sys; print(json.dumps(open(sys.argv[1]).read()))' "$root/api/examples/multihead_seed.json")
cat >"$tmp/post.lua" <<EOF
wrk.method = "POST"
wrk.body = $body
wrk.headers["Content-Type"] = "application/json"
EOF

rate() { wrk -t2 -c16 -d"${seconds}s" "$@" | awk '/Requests\/sec/ {print $2}'; }
ours_rates=() nginx_rates=()
for round in 1 2; do
  ours_rates+=("$(rate -s "$tmp/post.lua" "http://127.0.0.1:$ours/attention/multihead")")
  nginx_rates+=("$(rate "http://127.0.0.1:$theirs/reply.json")")
done
best() { printf '%s\n' "$@" | sort -g | tail -n 1; }
o=$(best "${ours_rates[@]}")
n=$(best "${nginx_rates[@]}")
printf '%-34s %12s %12s %8s\n' "case" "ours_req/s" "nginx_req/s" "ours/nginx"
printf '%-34s %12.0f %12.0f %7.2fx\n' "seed_mha_wrk_t2_c16 ($(wc -c <"$tmp/reply.json") B)" "$o" "$n" \
  "$(python3 -c "print($o / $n)")"
