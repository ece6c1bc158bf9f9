"""Times seed 003's GPT2 (gpt2_min.py, the classes of
tests/golden/reference.py) in PyTorch on bench_gpt2.c's cases: 124M
shape, eval mode, batch 1, torch.no_grad(), the given number of threads
(argument, default 1). "logits+maps" also keeps every attention map, as a
caller wanting them would (F.softmax outputs recorded); "next_token" is the
same call (argmax of the last row costs nothing), where core computes the
last position's logits only. Prints "name ms", the best over the thread
configurations of that count (CONFIGS)."""
import ctypes, os, sys, time
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "golden"))
from reference import GPT2, GPTConfig  # noqa: E402

# the library PyTorch's products run on (Debian's torch links OpenBLAS), whose
# threads are its own: "1" sets both to one, "2" takes the best of OpenBLAS
# on two, PyTorch on two, and both (as bench_torch.py)
OPENBLAS = ctypes.CDLL("libopenblas.so.0")
THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 1
CONFIGS = {1: [(1, 1)], 2: [(1, 2), (2, 1), (2, 2)]}[THREADS]
torch.set_num_threads(1)  # the init is timed on one thread
t0 = time.perf_counter()
torch.manual_seed(0)
model = GPT2(GPTConfig(50257, 1024, 12, 12, 768, 0.1)).eval()
print(f"gpt2_124m_init {(time.perf_counter() - t0) * 1e3:.3f}")


def bench(name, T, maps, iters):
    idx = torch.tensor([[(t * 7919) % 50257 for t in range(T)]])
    kept = []
    softmax = F.softmax

    def recording(*a, **k):
        out = softmax(*a, **k)
        kept.append(out)
        return out

    best = 1e30
    with torch.no_grad():
        for torch_threads, blas_threads in CONFIGS:
            torch.set_num_threads(torch_threads)
            OPENBLAS.openblas_set_num_threads(blas_threads)
            model(idx)  # warm up
            for _ in range(3):
                t0 = time.perf_counter()
                for _ in range(iters):
                    kept.clear()
                    if maps:
                        F.softmax = recording
                    try:
                        model(idx)
                    finally:
                        F.softmax = softmax
                best = min(best, (time.perf_counter() - t0) * 1e3 / iters)
    print(f"{name} {best:.3f}")


bench("gpt2_124m_t128_logits", 128, False, 2)
bench("gpt2_124m_t128_logits+maps", 128, True, 2)
bench("gpt2_124m_t128_next_token", 128, False, 2)  # the seed's model computes every position's logits
bench("gpt2_124m_t512_logits", 512, False, 1)
bench("gpt2_124m_t512_logits+maps", 512, True, 1)
