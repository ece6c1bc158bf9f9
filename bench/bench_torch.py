"""Times PyTorch on the shapes of bench_core.c (same modules, eval mode, one
thread), prints "name ms" lines in the same format. Run by `make bench`."""
import sys, time
import torch

from seed_modules import CausalSelfAttention, MultiHeadAttention

torch.set_num_threads(1)

def bench(name, module, x, iters):
    module.eval()
    best = 1e30
    with torch.no_grad():
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(iters):
                module(x)
            best = min(best, (time.perf_counter() - t0) * 1e3 / iters)
    print(f"{name} {best:.4f}", flush=True)

torch.manual_seed(123)
bench("seed_mha_b2_t6", MultiHeadAttention(3, 2, 6, 0.0, 2), torch.rand(2, 6, 3), 20000)
bench("mha_b1_t128_d256_h4", MultiHeadAttention(256, 256, 128, 0.0, 4), torch.rand(1, 128, 256), 200)
bench("gpt2_b1_t512_d768_h12", CausalSelfAttention(768, 12, 512), torch.rand(1, 512, 768), 10)
bench("gpt2_b4_t256_d768_h12", CausalSelfAttention(768, 12, 256), torch.rand(4, 256, 768), 10)
