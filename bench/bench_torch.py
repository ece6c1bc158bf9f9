"""Times PyTorch on the cases of bench_core.c (eval mode, no grad) with one
and with two threads, and prints "name threads ms peak_mb" lines in the same
format, for the cases named on the command line (all by default). SDPA is
PyTorch 1.13's materialised expression (it has no
F.scaled_dot_product_attention): softmax(q @ kᵀ / sqrt(d) + mask) @ v. Run by
`make bench`.

Threads: torch.set_num_threads sets only PyTorch's own (OpenMP) threads; its
matrix products go to OpenBLAS, whose threads are separate and default to
every core. So "one thread" sets both to one, and "two" is the best of the
three ways to use both cores: OpenBLAS on two (the default with
set_num_threads(1)), PyTorch on two, or both on two."""
import ctypes
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden"))
from reference import CausalSelfAttention, GPTConfig  # noqa: E402  seed 003, gpt2_min.py


def status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


# the library PyTorch's products run on (Debian's torch links OpenBLAS)
OPENBLAS = ctypes.CDLL("libopenblas.so.0")

# (PyTorch threads, OpenBLAS threads) for "1" and "2" threads
CONFIGS = {1: [(1, 1)], 2: [(1, 2), (2, 1), (2, 2)]}


def timed(fn, runs):
    best, peak = 1e30, 0
    rss = status_kb("VmRSS")
    with torch.no_grad():
        for _ in range(runs):
            reset_peak()
            t0 = time.perf_counter()
            fn()
            best = min(best, (time.perf_counter() - t0) * 1e3)
            peak = max(peak, status_kb("VmHWM") - rss)
    return best, peak


def bench(name, fn, runs):
    for threads, configs in CONFIGS.items():
        best, peak = 1e30, 0
        for torch_threads, blas_threads in configs:
            torch.set_num_threads(torch_threads)
            OPENBLAS.openblas_set_num_threads(blas_threads)
            ms, kb = timed(fn, runs)
            best, peak = min(best, ms), max(peak, kb)
        print(f"{name} {threads} {best:.4f} {peak / 1024:.1f}", flush=True)


def sdpa_case(name, T, runs):
    q, k, v = (torch.rand(1, 1, T, 64) * 2 - 1 for _ in range(3))
    mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    bench(name, lambda: torch.softmax(q @ k.transpose(-2, -1) / 8 + mask, dim=-1) @ v, runs)


def gpt2_layer(T):
    """Seed 003's attention, 768 wide, 12 heads, context T (eval: no dropout)."""
    return CausalSelfAttention(GPTConfig(1, T, 1, 12, 768, 0.0)).eval()


def gpt2_case(name, T, runs):
    mod = gpt2_layer(T)
    x = torch.rand(1, T, 768)
    bench(name, lambda: mod(x), runs)


CASES = {
    "sdpa_causal_t4096_d64": lambda n: sdpa_case(n, 4096, 5),
    "sdpa_causal_t16384_d64": lambda n: sdpa_case(n, 16384, 2),
    "gpt2_t128_context": lambda n: gpt2_case(n, 128, 40),
    "gpt2_t512_context": lambda n: gpt2_case(n, 512, 20),
    "gpt2_t512_weights": lambda n: gpt2_case(n, 512, 20),  # the weights are made either way
    "gpt2_t1024_context": lambda n: gpt2_case(n, 1024, 10),
    "gpt2_t1024_weights": lambda n: gpt2_case(n, 1024, 10),
}

def cputime():
    """The GPT-2 layer at T = 128 and 512 on one thread (PyTorch's and
    OpenBLAS's), best of 30 in process CPU time, as `bench_core cputime`
    measures ours: "name ms" lines."""
    torch.set_num_threads(1)
    OPENBLAS.openblas_set_num_threads(1)
    for T in (128, 512):
        mod = gpt2_layer(T)
        x = torch.rand(1, T, 768)
        best = 1e30
        with torch.no_grad():
            for _ in range(30):
                t0 = time.process_time()
                mod(x)
                best = min(best, (time.process_time() - t0) * 1e3)
        print(f"torch_gpt2_t{T}_context_cpu {best:.3f}", flush=True)


torch.manual_seed(123)
if sys.argv[1:] == ["cputime"]:
    cputime()
    sys.exit(0)
for name in sys.argv[1:] or CASES:  # the cases named, or all
    CASES[name](name)
