"""End to end, over HTTP on loopback: this server against the PyTorch + FastAPI
service of bench/torch_server.py, started and measured in the same run,
requests alternating between the two. Prints, per case, the median time of
each (request sent to last reply byte read) and the ratio. Run by `make bench`:

    python3 bench/e2e.py build/attention-server

E2E_ROUNDS (7), E2E_TOKENS ("256 1024") and E2E_FORMATS ("base64
safetensors") narrow a run down.
"""
import base64
import gzip
import http.client
import json
import os
import random
import socket
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(port, path, proc, seconds=60):
    end = time.time() + seconds
    while time.time() < end:
        if proc.poll() is not None:
            sys.exit(f"server on port {port} exited with {proc.returncode}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", path)
            if c.getresponse().status < 500:
                return
        except OSError:
            time.sleep(0.2)
    sys.exit(f"server on port {port} not ready after {seconds} s")


def post(conn, path, body, headers):
    for attempt in range(2):  # a keep-alive connection the server closed: once more, afresh
        t0 = time.perf_counter()
        try:
            conn.request("POST", path, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            break
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            conn.close()
            if attempt:
                raise
    dt = (time.perf_counter() - t0) * 1e3
    if r.status != 200:
        sys.exit(f"{path}: {r.status} {data[:300]!r}")
    return dt, data, r.getheader("Content-Encoding"), r.getheader("Server-Timing")


def server_ms(timing):
    """{"parse": ms, "compute": ms, ...} from a Server-Timing header."""
    out = {}
    for part in (timing or "").split(","):
        name, _, dur = part.strip().partition(";dur=")
        if dur:
            out[name] = float(dur)
    return out


def gpt2_layer(T, fmt):
    """The issue's GPT-2-layer map: MultiHeadAttention 768 wide, 12 heads,
    context and per-head weights; inputs as JSON numbers or base64."""
    rnd = random.Random(T)
    x = [[round(rnd.uniform(-1, 1), 6) for _ in range(768)] for _ in range(T)]
    rq = {"module": "MultiHeadAttention", "d_in": 768, "d_out": 768, "num_heads": 12,
          "context_length": T, "init": {"seed": 123}, "return": ["context", "attn_weights"],
          "inputs": x}
    if fmt != "json":
        flat = [v for row in x for v in row]
        rq["inputs"] = {"shape": [T, 768], "dtype": "float32",
                        "base64": base64.b64encode(struct.pack(f"<{len(flat)}f", *flat)).decode()}
        rq["output_format"] = fmt
    return json.dumps(rq).encode()


def main():
    server = sys.argv[1]
    rounds = int(os.environ.get("E2E_ROUNDS", "7"))
    ours_port, torch_port = free_port(), free_port()
    ours = subprocess.Popen([server, "--host", "127.0.0.1", "--port", str(ours_port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    theirs = subprocess.Popen(["/usr/bin/python3", "-m", "uvicorn", "torch_server:app",
                               "--host", "127.0.0.1", "--port", str(torch_port),
                               "--log-level", "warning", "--timeout-keep-alive", "600"],
                              cwd=HERE, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(ours_port, "/healthz", ours)
        wait_ready(torch_port, "/docs", theirs)
        seed = open(os.path.join(ROOT, "api/examples/multihead_seed.json"), "rb").read()
        json_h = {"Content-Type": "application/json"}
        gz_h = dict(json_h, **{"Accept-Encoding": "gzip"})
        cases = [("seed_mha", seed, seed, json_h, 200)]
        sizes = [int(t) for t in os.environ.get("E2E_TOKENS", "256 1024").split()]
        for T, n in ((T, rounds if T <= 256 else max(3, rounds // 2)) for T in sizes):
            j = gpt2_layer(T, "json")
            cases.append((f"gpt2_map_t{T}_json", j, j, json_h, n))
            cases.append((f"gpt2_map_t{T}_json_gzip", j, j, gz_h, n))
            formats = [f for f in os.environ.get("E2E_FORMATS", "base64 safetensors").split() if f]
            for f in formats:
                cases.append((f"gpt2_map_t{T}_b64_in_{f}_out", gpt2_layer(T, f), j, json_h, n))
        c_ours = http.client.HTTPConnection("127.0.0.1", ours_port, timeout=600)
        c_theirs = http.client.HTTPConnection("127.0.0.1", torch_port, timeout=600)
        print(f"{'case':38} {'ours_ms':>9} {'torch_ms':>9} {'torch/ours':>10}  bytes in/out (ours)"
              "  ours: parse/compute/serialise ms (Server-Timing)")
        for name, body, torch_body, headers, n in cases:
            t_ours, t_theirs, phases = [], [], []
            for i in range(n + 1):  # the first of each is a warm-up
                a, data, enc, timing = post(c_ours, "/attention/multihead", body, headers)
                b, _, _, _ = post(c_theirs, "/attention/multihead", torch_body, json_h)
                if i:
                    t_ours.append(a)
                    t_theirs.append(b)
                    phases.append(server_ms(timing))
            if enc == "gzip":
                gzip.decompress(data)  # it is gzip indeed
            mo, mt = statistics.median(t_ours), statistics.median(t_theirs)
            split = "/".join(f"{statistics.median(p.get(k, 0) for p in phases):.2f}"
                             for k in ("parse", "compute", "serialise"))
            print(f"{name:38} {mo:9.2f} {mt:9.2f} {mt / mo:9.1f}x  {len(body)}/{len(data)}"
                  f"{' gzip' if enc == 'gzip' else ''}  {split}", flush=True)
    finally:
        for p in (ours, theirs):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    main()
