#!/usr/bin/python3
"""Small random GPT-2 checkpoints in the Hugging Face layout, and their logits,
for the --model tests (api/checkpoint.c, tests/test_api_checkpoint.c,
tests/test_server_models.c).

    /usr/bin/python3 tests/golden/generate_checkpoint.py tests/golden/ckpt   (or `make golden`)

Each case writes NAME.safetensors as transformers' GPT2LMHeadModel.save_pretrained
would (safetensors has no PyPI package here: the format is written by hand,
8-byte little-endian header length, JSON header padded with spaces to a
multiple of 8, the tensors' bytes): Conv1D weights [in][out], optionally the
"transformer." prefix, lm_head.weight and the old attn.bias / attn.masked_bias
buffers, in F32, F16 or BF16. NAME.json holds the spec suffix the server is
given, the config, idx [B][T] and the logits [B][T][V] of a forward pass
written after transformers' GPT2 (Conv1D as addmm, gelu_new, LayerNorm eps
1e-5, causal softmax attention scaled by 1/sqrt(head_dim)) in float32 on the
weights as stored (rounded to the file's dtype): an implementation apart
from core's seed-003 model, so that a transposition gone wrong shows.
"""
import json
import math
import os
import struct
import sys

import torch

torch.set_num_threads(1)

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def conv1d(x, w, b):  # transformers.pytorch_utils.Conv1D: w [in][out]
    return torch.addmm(b, x.reshape(-1, x.size(-1)), w).view(*x.shape[:-1], w.size(-1))


def forward(sd, idx, n_head):
    """transformers' GPT2LMHeadModel forward, eval mode, float32."""
    wte, wpe = sd["wte.weight"], sd["wpe.weight"]
    B, T = idx.shape
    C = wte.size(1)
    x = wte[idx] + wpe[torch.arange(T)]
    n_layer = len({k.split(".")[1] for k in sd if k.startswith("h.")})
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(n_layer):
        p = lambda n: sd["h.%d.%s" % (l, n)]
        h = torch.nn.functional.layer_norm(x, (C,), p("ln_1.weight"), p("ln_1.bias"), 1e-5)
        q, k, v = conv1d(h, p("attn.c_attn.weight"), p("attn.c_attn.bias")).split(C, dim=2)
        heads = lambda t: t.view(B, T, n_head, C // n_head).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        w = q @ k.transpose(-1, -2) / math.sqrt(C // n_head)
        w = torch.where(mask, w, torch.tensor(torch.finfo(w.dtype).min))
        a = (torch.softmax(w, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + conv1d(a, p("attn.c_proj.weight"), p("attn.c_proj.bias"))
        h = torch.nn.functional.layer_norm(x, (C,), p("ln_2.weight"), p("ln_2.bias"), 1e-5)
        m = gelu_new(conv1d(h, p("mlp.c_fc.weight"), p("mlp.c_fc.bias")))
        x = x + conv1d(m, p("mlp.c_proj.weight"), p("mlp.c_proj.bias"))
    x = torch.nn.functional.layer_norm(x, (C,), sd["ln_f.weight"], sd["ln_f.bias"], 1e-5)
    return x @ wte.t()


def random_state_dict(g, V, P, L, C):
    n = lambda *s, std=1.0: torch.randn(*s, generator=g) * std
    sd = {"wte.weight": n(V, C, std=0.5), "wpe.weight": n(P, C, std=0.5)}
    for l in range(L):
        h = "h.%d." % l
        sd[h + "ln_1.weight"] = 1.0 + n(C, std=0.1)
        sd[h + "ln_1.bias"] = n(C, std=0.1)
        sd[h + "attn.c_attn.weight"] = n(C, 3 * C, std=0.3)
        sd[h + "attn.c_attn.bias"] = n(3 * C, std=0.1)
        sd[h + "attn.c_proj.weight"] = n(C, C, std=0.2)
        sd[h + "attn.c_proj.bias"] = n(C, std=0.1)
        sd[h + "ln_2.weight"] = 1.0 + n(C, std=0.1)
        sd[h + "ln_2.bias"] = n(C, std=0.1)
        sd[h + "mlp.c_fc.weight"] = n(C, 4 * C, std=0.2)
        sd[h + "mlp.c_fc.bias"] = n(4 * C, std=0.1)
        sd[h + "mlp.c_proj.weight"] = n(4 * C, C, std=0.1)
        sd[h + "mlp.c_proj.bias"] = n(C, std=0.1)
    sd["ln_f.weight"] = 1.0 + n(C, std=0.1)
    sd["ln_f.bias"] = n(C, std=0.1)
    return sd


def write_safetensors(path, tensors, metadata):
    """tensors: [(name, dtype name, tensor)] in file order."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, t in tensors:
        t = t.to(DTYPES.get(dtype, t.dtype)).contiguous()
        raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def case(out, name, seed, V, P, L, C, H, dtype, prefix, lm_head, buffers, metadata, spec, B, T):
    g = torch.Generator().manual_seed(seed)
    sd = random_state_dict(g, V, P, L, C)
    # the weights as the file holds them, back in float32 for the reference
    stored = {k: v.to(DTYPES[dtype]).to(torch.float32) for k, v in sd.items()}
    tensors = []
    for k, v in sd.items():
        tensors.append((prefix + k, dtype, v))
        if buffers and k.endswith("ln_1.bias"):
            l = k.split(".")[1]
            tril = torch.tril(torch.ones(P, P)).view(1, 1, P, P)
            tensors.append((prefix + "h.%s.attn.bias" % l, "F32", tril))
            tensors.append((prefix + "h.%s.attn.masked_bias" % l, "F32", torch.tensor(-1e4)))
    if lm_head:
        tensors.append(("lm_head.weight", dtype, sd["wte.weight"]))
    write_safetensors(os.path.join(out, name + ".safetensors"), tensors, metadata)
    idx = torch.randint(0, V, (B, T), generator=g)
    with torch.no_grad():
        logits = forward(stored, idx, H)
    ref = {"spec_suffix": spec, "file": name + ".safetensors",
           "config": {"vocab_size": V, "block_size": P, "n_layer": L, "n_head": H, "n_embd": C},
           "dtype": dtype, "transformer_prefix": bool(prefix), "lm_head": lm_head,
           "idx": idx.tolist(), "logits": [float("%.9g" % x) for x in logits.flatten().tolist()]}
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"))
        f.write("\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/golden/ckpt"
    os.makedirs(out, exist_ok=True)
    # F32 with everything an older save has: prefix, lm_head, buffers, n_head in the metadata
    case(out, "tiny_f32", 11, V=61, P=16, L=2, C=32, H=4, dtype="F32", prefix="transformer.",
         lm_head=True, buffers=True, metadata={"format": "pt", "n_head": "4"}, spec="", B=2, T=9)
    # BF16 as GPT2LMHeadModel.save_pretrained leaves it today: no prefix, n_head = n_embd / 64
    case(out, "tiny_bf16", 12, V=50, P=12, L=1, C=128, H=2, dtype="BF16", prefix="",
         lm_head=False, buffers=False, metadata={"format": "pt"}, spec="", B=1, T=12)
    # F16 with n_head given on the command line (NAME=FILE:heads=4)
    case(out, "tiny_f16", 13, V=40, P=8, L=3, C=24, H=4, dtype="F16", prefix="",
         lm_head=False, buffers=False, metadata=None, spec=":heads=4", B=3, T=5)


if __name__ == "__main__":
    main()
