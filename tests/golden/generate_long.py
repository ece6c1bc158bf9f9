#!/usr/bin/python3
"""Golden vectors for the fused attention path: long sequences (several
query and key tiles, T not a multiple of a tile), masks, key padding, fully
masked rows and grouped-query heads, computed by PyTorch with the
materialised expression of generate.py (softmax(q kᵀ scale + masks) v).

    /usr/bin/python3 tests/golden/generate_long.py tests/golden/long

Kept compact: the inputs are not stored but made by a small integer hash
that tests/test_core_flash.c repeats exactly (`hash_tensor`), parameters
come from torch.manual_seed(seed) (attn_params_init draws the same), and
only the context is stored, as base64 of little-endian float32. Each case
runs through generate.run_case, so the masks and the all-zero rows follow
the same definitions as the other golden files.
"""
import base64
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import generate  # noqa: E402  (the modules and the instrumented forwards)

M32 = 0xFFFFFFFF


def hash_values(n, salt):
    """The integer hash of test_core_flash.c (hash_u32), 32-bit arithmetic,
    for flat indices 0..n-1."""
    i = np.arange(n, dtype=np.uint64)
    u = (i * np.uint64(2654435761) + np.uint64(salt * 40503 + 12345)) & np.uint64(M32)
    u ^= u >> np.uint64(16)
    u = (u * np.uint64(0x45D9F3B)) & np.uint64(M32)
    u ^= u >> np.uint64(16)
    return u


def hash_tensor(shape, salt):
    """Values in [-1, 1] with 4 decimals: ((u % 20001) - 10000) / 10000."""
    n = int(np.prod(shape))
    u = hash_values(n, salt)
    d = ((u % np.uint64(20001)).astype(np.int64) - 10000).astype(np.float64) / 10000.0
    return torch.from_numpy(d.astype(np.float32).reshape(shape))


def hash_bool(shape, salt, modulus, full_rows=0):
    """1 where u % modulus == 0; with full_rows, every row r (last axis) with
    r % full_rows == 3 is masked entirely."""
    n = int(np.prod(shape))
    m = (hash_values(n, salt) % np.uint64(modulus) == 0).reshape(shape)
    if full_rows:
        rows = m.reshape(-1, shape[-1])
        rows[np.arange(rows.shape[0]) % full_rows == 3, :] = True
    return torch.from_numpy(m.astype(np.uint8))


def hash_add(shape, salt, inf_modulus):
    """Additive mask: hash values, -inf where u % inf_modulus == 1."""
    t = hash_tensor(shape, salt)
    n = int(np.prod(shape))
    inf = torch.from_numpy((hash_values(n, salt) % np.uint64(inf_modulus) == 1).reshape(shape))
    return t.masked_fill(inf, float("-inf"))


# name, module, sizes, masks (salts fixed per tensor: x 1, query 2, key 3,
# value 4, attn_mask 5, key_padding_mask 6)
CASES = [
    dict(name="sdpa_long_causal", module="sdpa", B=1, H=2, T=700, d_in=16, causal=True),
    dict(name="sdpa_long_cross_gqa_bool_kpm", module="sdpa", B=2, H=4, Hkv=2, T=300, S=530,
         d_in=8, vdim=12, bool_mask=dict(modulus=5, full_rows=61, batched=True),
         kpm=dict(modulus=11)),
    dict(name="sdpa_long_causal_add_scale", module="sdpa", B=1, H=3, Hkv=1, T=530, d_in=8,
         causal=True, scale=0.2, add_mask=dict(inf_modulus=9, batched=False)),
    dict(name="gpt2_long_kpm", module="gpt2", B=2, H=4, T=520, d_in=32, causal=True, seed=5,
         kpm=dict(modulus=7, full_batch=1)),
]


def build(c):
    B, T, H = c["B"], c["T"], c["H"]
    S = c.get("S", 0) or T
    kw = dict(B=B, T=T, d_in=c["d_in"], H=H, S=c.get("S", 0), Hkv=c.get("Hkv", 0),
              vdim=c.get("vdim", 0), causal=c.get("causal", False), scale=c.get("scale"),
              seed=c.get("seed"))
    if c["module"] == "sdpa":
        Hkv = c.get("Hkv", 0) or H
        kw["query"] = hash_tensor((B, H, T, c["d_in"]), 2)
        kw["key"] = hash_tensor((B, Hkv, S, c["d_in"]), 3)
        kw["value"] = hash_tensor((B, Hkv, S, c.get("vdim", 0) or c["d_in"]), 4)
    else:
        kw["x"] = hash_tensor((B, T, c["d_in"]), 1)
        kw["context_length"] = T
    if "bool_mask" in c:
        bm = c["bool_mask"]
        shape = (B, T, S) if bm["batched"] else (T, S)
        kw["mask_bool"] = hash_bool(shape, 5, bm["modulus"], bm.get("full_rows", 0))
    if "add_mask" in c:
        am = c["add_mask"]
        shape = (B, T, S) if am["batched"] else (T, S)
        kw["mask_add"] = hash_add(shape, 5, am["inf_modulus"])
    if "kpm" in c:
        kp = hash_bool((B, S), 6, c["kpm"]["modulus"])
        if c["kpm"].get("full_batch") is not None:
            kp[c["kpm"]["full_batch"], :] = 1
        kw["kpm"] = kp
    return generate.make_case(c["name"], "", c["module"], **kw)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "long")
    os.makedirs(outdir, exist_ok=True)
    files = {}
    for c in CASES:
        _, _, _, _, _, rec, verified = generate.run_case(build(c))
        ctx = rec["context"].contiguous().numpy().astype("<f4")
        assert np.isfinite(ctx).all(), c["name"]
        obj = {"name": c["name"], "case": c, "verified": verified,
               "context": {"shape": list(ctx.shape),
                           "f32_base64": base64.b64encode(ctx.tobytes()).decode("ascii")}}
        files[c["name"] + ".json"] = json.dumps(obj, separators=(",", ":")) + "\n"
        print(f"{c['name']:32s} {len(files[c['name'] + '.json']):7d} B  {verified}")
    for name, text in files.items():
        with open(os.path.join(outdir, name), "w") as f:
            f.write(text)
    print(f"{len(files)} cases, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")


if __name__ == "__main__":
    main()
