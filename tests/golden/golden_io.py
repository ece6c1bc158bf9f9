"""What the model generators write, one copy of each: the `*.gpt2` file
format (generate_gpt2.py, generate_gptmodel.py, generate_hooks.py), the
float32 bytes of a list of tensors, and their FNV-1a 64 hash (init_hashes.txt,
sample.txt).

`*.gpt2` (little-endian): text lines `key value`, the first two
`gpt2-golden 1` and `case NAME`; then for each tensor a line
`tensor NAME DTYPE COUNT` (DTYPE i32 for integer arrays, f32 otherwise),
COUNT raw values and a newline. idx [B][T] is the first tensor.
"""
import numpy as np
import torch


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def flat(tensors):
    """The tensors' values, one after another, as one float32 array."""
    return np.concatenate([t.detach().numpy().astype("<f4").ravel() for t in tensors]) \
        if tensors else np.zeros(0, np.float32)


def hashed_init(make, seed, skip=()):
    """torch.manual_seed(seed); make(): the number of state_dict values (the
    names in skip left out), the FNV-1a 64 hash of their float32 bytes, and
    torch.rand(1) drawn right after the constructor."""
    torch.manual_seed(seed)
    sd = make().state_dict()
    data = flat([v for k, v in sd.items() if k not in skip])
    after = torch.rand(1).item()
    return data.size, fnv1a64(data.tobytes()), after


def write_gpt2(path, name, head, idx, tensors):
    """head: the `key value` lines after `case NAME`; idx: a LongTensor
    [B][T]; tensors: [(name, numpy array)] after idx."""
    with open(path, "wb") as f:
        f.write(("\n".join(["gpt2-golden 1", f"case {name}"] + head) + "\n").encode())
        for tname, arr in [("idx", idx.numpy().astype("<i4"))] + tensors:
            dtype = "i32" if arr.dtype.kind == "i" else "f32"
            arr = np.ascontiguousarray(arr, dtype="<i4" if dtype == "i32" else "<f4").ravel()
            f.write(f"tensor {tname} {dtype} {arr.size}\n".encode())
            f.write(arr.tobytes())
            f.write(b"\n")
