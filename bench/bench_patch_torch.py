"""A full activation-patching sweep in PyTorch with hooks, the way
TransformerLens's patching.py runs one (get_act_patch_attn_head_out_all_pos:
one forward of the corrupted input per layer and head, that head's hook_z
taken from the clean run by a hook), on seed 003's GPT2 at the 124M shape
(the classes of tests/golden/reference.py, torch.manual_seed(0), eval,
GPT-2's tanh GELU as in the released checkpoints) and a 16-token pair.

    /usr/bin/python3 bench/bench_patch_torch.py THREADS [MODEL.safetensors]

THREADS 1 or 2: under the best of the thread configurations of that count
(PyTorch's own threads and OpenBLAS's, as bench_torch.py: 1/1; 1/2, 2/1,
2/2), chosen by timing 12 forwards under each. With a path, the
weights are first written there in Hugging Face's GPT-2 layout (Conv1D
weights [in][out]), for the server's side of the same run (bench_patch.c).

Prints "name ms" lines: patch_heads_124m_t16 (the loop of 144 forwards,
TransformerLens's way), patch_heads_124m_t16_batched (the same 144 runs as
one forward of a batch of 144, each row with its own head patched: what a
PyTorch user who batches would write), each also as _cpu (process CPU
time), then "result" and the 12 x 12 logit differences of the sweep, to
check both sides computed the same."""
import ctypes
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "golden"))
from reference import GPT2, GPTConfig  # noqa: E402

OPENBLAS = ctypes.CDLL("libopenblas.so.0")
THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 1
CONFIGS = {1: [(1, 1)], 2: [(1, 2), (2, 1), (2, 2)]}[THREADS]
T = 16
CLEAN = [(t * 7919 + 11) % 50257 for t in range(T)]
CORRUPTED = list(CLEAN)
CORRUPTED[5], CORRUPTED[11] = 1000, 2000
DIFF = (464, 383)  # logit[a] - logit[b] at the last position

gelu = F.gelu
F.gelu = lambda x: gelu(x, approximate="tanh")  # gelu_new, as the checkpoint loader runs
torch.manual_seed(0)
model = GPT2(GPTConfig(50257, 1024, 12, 12, 768, 0.1)).eval()
L, H, C = 12, 12, 768
D = C // H


def write_checkpoint(path):
    """model.safetensors in Hugging Face's GPT-2 names and Conv1D layout."""
    tensors = []
    for name, t in model.state_dict().items():
        if name == "lm_head.weight" or name.endswith(".attn.bias"):
            continue
        hf = name.replace(".mlp.fc.", ".mlp.c_fc.").replace(".mlp.proj.", ".mlp.c_proj.")
        a = t.numpy().astype("<f4")
        if a.ndim == 2 and not name.startswith(("wte", "wpe")):
            a = np.ascontiguousarray(a.T)
        tensors.append((hf, a))
    header, offset = {"__metadata__": {"n_head": str(H)}}, 0
    for name, a in tensors:
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for _, a in tensors:
            f.write(a.tobytes())


def z_hook(layer, store=None, patch=None):
    """A pre-hook on block `layer`'s c_proj: keeps its input (hook_z), or
    replaces heads of it: patch = [(row, head, source z [T][C])]."""
    def hook(m, inp):
        z = inp[0]
        if store is not None:
            store[layer] = z[0].clone()
        if patch:
            z = z.clone()
            for row, h, src in patch:
                z[row, :, h * D:(h + 1) * D] = src[:, h * D:(h + 1) * D]
            return (z,)
    return model.h[layer].attn.c_proj.register_forward_pre_hook(hook)


def metric(out):
    logits = out[0] if isinstance(out, tuple) else out
    return (logits[:, -1, DIFF[0]] - logits[:, -1, DIFF[1]]).numpy()


def clean_z(idx):
    store = {}
    handles = [z_hook(l, store=store) for l in range(L)]
    model(idx)
    for h in handles:
        h.remove()
    return store


def sweep_loop(clean, corrupted):
    """TransformerLens's loop: one forward per layer and head."""
    z = clean_z(clean)
    model(corrupted)
    out = np.zeros((L, H), dtype=np.float32)
    for l in range(L):
        for h in range(H):
            handle = z_hook(l, patch=[(0, h, z[l])])
            out[l, h] = metric(model(corrupted))[0]
            handle.remove()
    return out


def sweep_batched(clean, corrupted):
    """The same runs as one batch: row l * H + h patches head h of layer l."""
    z = clean_z(clean)
    model(corrupted)
    handles = [z_hook(l, patch=[(l * H + h, h, z[l]) for h in range(H)]) for l in range(L)]
    out = metric(model(corrupted.repeat(L * H, 1))).reshape(L, H)
    for handle in handles:
        handle.remove()
    return out


def best_config(corrupted):
    """The thread configuration of this count under which 12 forwards of the
    corrupted input are fastest (a whole sweep under each would take
    minutes)."""
    best, pick = 1e30, CONFIGS[0]
    for cfg in CONFIGS:
        torch.set_num_threads(cfg[0])
        OPENBLAS.openblas_set_num_threads(cfg[1])
        model(corrupted)  # warm up
        t0 = time.perf_counter()
        for _ in range(12):
            model(corrupted)
        t = time.perf_counter() - t0
        if t < best:
            best, pick = t, cfg
    torch.set_num_threads(pick[0])
    OPENBLAS.openblas_set_num_threads(pick[1])
    return pick


def bench(name, fn, clean, corrupted):
    """The sweep's wall time and CPU time under the best configuration."""
    best_config(corrupted)
    t0, c0 = time.perf_counter(), time.process_time()
    result = fn(clean, corrupted)
    print(f"{name} {(time.perf_counter() - t0) * 1e3:.3f}")
    print(f"{name}_cpu {(time.process_time() - c0) * 1e3:.3f}")
    return result


def main():
    if len(sys.argv) > 2:
        write_checkpoint(sys.argv[2])
    with torch.no_grad():
        clean, corrupted = torch.tensor([CLEAN]), torch.tensor([CORRUPTED])
        loop = bench("patch_heads_124m_t16", sweep_loop, clean, corrupted)
        batched = bench("patch_heads_124m_t16_batched", sweep_batched, clean, corrupted)
        assert np.allclose(loop, batched, atol=1e-3, rtol=1e-3), abs(loop - batched).max()
        print("result " + " ".join("%.6g" % v for v in loop.ravel()))


if __name__ == "__main__":  # bench_analysis_torch.py imports the model and helpers
    main()
