"""Head importance in PyTorch with hooks, the loop a TransformerLens user
writes (one run_with_hooks per head, its hook_z zeroed, loss compared), on
the model of bench_patch_torch.py (seed 003's GPT2 at the 124M shape,
torch.manual_seed(0), eval, GPT-2's tanh GELU) and 128 ids (a random half
repeated, as bench_analysis.c makes them).

    /usr/bin/python3 bench/bench_analysis_torch.py THREADS [MODEL.safetensors]

THREADS 1 or 2: under the best of that count's thread configurations
(bench_patch_torch.best_config). With a path, the weights are first written
there (bench_patch_torch.write_checkpoint) for the server's side of the same
run (bench_analysis.c).

Prints "name ms" lines: importance_124m_t128 (the loop of 144 forwards
after the clean one), importance_124m_t128_batched (each layer's 12 ablations
as one forward of a batch of 12, a row per head: a PyTorch user who
batches), each also as _cpu (process CPU time), then "result" and the 12 x 12
rises of the mean next-token cross-entropy, to check both sides agree."""
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import bench_patch_torch as bp  # noqa: E402  (the model, its checkpoint, best_config)

T = 128
L, H, D = bp.L, bp.H, bp.D


def ids():
    """bench_analysis.c's make_ids: an LCG from seed 5, the first half repeated."""
    s, half, out = 5, (T + 1) // 2, []
    for _ in range(half):
        s = (s * 6364136223846793005 + 1442695040888963407) % 2 ** 64
        out.append((s >> 33) % 50257)
    return torch.tensor([out + out[:T - half]])


def losses(idx, out):
    """Each row's mean next-token cross-entropy."""
    logits = out[0] if isinstance(out, tuple) else out
    B = logits.shape[0]
    nll = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), idx[:, 1:].reshape(-1),
                          reduction="none")
    return nll.reshape(B, -1).mean(1).numpy()


def zero_hook(layer, heads):
    """A pre-hook on block `layer`'s c_proj: heads [(row, head)] of hook_z zeroed."""
    def hook(m, inp):
        z = inp[0].clone()
        for row, h in heads:
            z[row, :, h * D:(h + 1) * D] = 0
        return (z,)
    return bp.model.h[layer].attn.c_proj.register_forward_pre_hook(hook)


def loop(idx):
    clean = losses(idx, bp.model(idx))[0]
    out = np.zeros((L, H))
    for l in range(L):
        for h in range(H):
            handle = zero_hook(l, [(0, h)])
            out[l, h] = losses(idx, bp.model(idx))[0] - clean
            handle.remove()
    return out


def batched(idx):
    clean = losses(idx, bp.model(idx))[0]
    out = np.zeros((L, H))
    for l in range(L):
        handle = zero_hook(l, [(h, h) for h in range(H)])
        out[l] = losses(idx.repeat(H, 1), bp.model(idx.repeat(H, 1))) - clean
        handle.remove()
    return out


def bench(name, fn, idx):
    bp.best_config(idx)
    t0, c0 = time.perf_counter(), time.process_time()
    result = fn(idx)
    print(f"{name} {(time.perf_counter() - t0) * 1e3:.3f}")
    print(f"{name}_cpu {(time.process_time() - c0) * 1e3:.3f}")
    sys.stdout.flush()
    return result


if len(sys.argv) > 2:
    bp.write_checkpoint(sys.argv[2])
with torch.no_grad():
    idx = ids()
    a = bench("importance_124m_t128", loop, idx)
    b = bench("importance_124m_t128_batched", batched, idx)
    assert np.allclose(a, b, atol=1e-3, rtol=1e-3), abs(a - b).max()
    print("result " + " ".join("%.6g" % v for v in a.ravel()))
