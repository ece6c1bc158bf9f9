#!/usr/bin/python3
"""Golden vectors for core's GPT-2 (core/gpt2.c): seed 003's gpt2_min.py run
by PyTorch 1.13 (Debian's python3-torch).

    /usr/bin/python3 tests/golden/generate_gpt2.py tests/golden/gpt2   (or `make golden`)

Each case is `torch.manual_seed(seed); model = GPT2(GPTConfig(...))`, then
`model.train()` or `model.eval()` and one call `model(idx)` that continues
the generator left by the constructor (dropout draws in training mode). The
classes below are the seed's, verbatim. Intermediates are recorded without
changing any operation: forward hooks on `drop`, on each block and on
`ln_f` (the hidden states, Hugging Face's convention: the input of every
block, then the output of ln_f), and F.softmax wrapped to keep every
attention map.

File format (`*.gpt2`, little-endian): text lines `key value` (the config,
`seed`, `training`, `B`, `T`, `activation` gelu or gelu_new: Hugging Face's
NewGELUActivation put in F.gelu's place), then for each tensor a line
`tensor NAME DTYPE COUNT` followed by COUNT raw values (f32 or i32) and a
newline. Tensors: idx [B][T]; params, the state_dict in order without
lm_head.weight (the names are in the `names` line); logits [B][T][V];
hidden [n_layer + 1][B][T][C]; attn [n_layer][B][H][T][T]; dropout, every
dropout multiplier in draw order (drop [B][T][C], then per block
attn.resid_drop and mlp.drop [B][T][C]; ones in eval mode), recorded by
dropout_record.py.
"""
import math
import os
import sys
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from dropout_record import DropoutRecorder

torch.set_num_threads(1)

# ==== seed 003, gpt2_min.py, verbatim ======================================


@dataclass
class GPTConfig:
    vocab_size: int
    block_size: int
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.1

class CausalSelfAttention(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.n_head, self.n_embd = config.n_head, config.n_embd
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.resid_drop = nn.Dropout(config.dropout)
        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size)).view(1, 1, config.block_size, config.block_size))
    def forward(self, x):
        B, T, C = x.size()
        qkv = self.c_attn(x)
        q, k, v = qkv.split(self.n_embd, dim=2)
        head_dim = C // self.n_head
        q = q.view(B, T, self.n_head, head_dim).transpose(1, 2)
        k = k.view(B, T, self.n_head, head_dim).transpose(1, 2)
        v = v.view(B, T, self.n_head, head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_drop(self.c_proj(y))

class MLP(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.proj = nn.Linear(4 * config.n_embd, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
    def forward(self, x):
        return self.drop(self.proj(F.gelu(self.fc(x))))

class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)
    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x

class GPT2(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.h = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight
    def forward(self, idx, targets=None):
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        x = self.drop(x)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        logits = self.lm_head(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1)) if targets is not None else None
        return logits, loss

# ==== the cases ===========================================================

# name, GPTConfig(vocab_size, block_size, n_layer, n_head, n_embd, dropout),
# seed, training, B, T, seed of the token ids
CASES = [
    ("s1_v40_l2_h2_c16_b2_t5", (40, 12, 2, 2, 16, 0.1), 1, False, 2, 5, 11),
    # wte and wpe under 16 elements: normal_ draws one at a time (double Box-Muller, cached)
    ("s5_tiny_normal_small", (3, 2, 1, 2, 4, 0.0), 5, False, 1, 2, 12),
    # 1000-element wte: the last 16 are redrawn; T = block_size
    ("s42_v50_l3_h4_c20_t16", (50, 16, 3, 4, 20, 0.1), 42, False, 1, 16, 13),
    ("s7_t1_b3", (30, 8, 2, 4, 8, 0.1), 7, False, 3, 1, 14),
    ("s123_v97_l2_h3_c24", (97, 32, 2, 3, 24, 0.2), 123, False, 2, 9, 15),
    # training mode: drop, resid_drop and mlp.drop draw from the generator left by the constructor
    ("s3_train_p0.2", (40, 12, 2, 2, 16, 0.2), 3, True, 2, 6, 16),
    ("s9_train_p0.5_b1", (23, 10, 3, 1, 12, 0.5), 9, True, 1, 10, 17),
    ("s4_train_p0", (40, 12, 1, 2, 16, 0.0), 4, True, 2, 4, 18),
    # p = 1: PyTorch multiplies by zero and draws nothing
    ("s6_train_p1", (20, 6, 2, 2, 8, 1.0), 6, True, 1, 5, 19),
]

# The same model with GPT-2's released activation (Hugging Face's gelu_new,
# NewGELUActivation) in place of F.gelu: name, config, seed, training, B, T, idx seed
CASES_GELU_NEW = [
    ("s8_gelu_new", (40, 12, 2, 2, 16, 0.1), 8, False, 2, 7, 20),
]


# Larger models whose whole init is checked through a hash (a file of their
# parameters would not be compact): GPTConfig fields, seed. Odd sizes so that
# wte's and wpe's last 16 normals are redrawn.
HASHED_INITS = [
    ((5003, 64, 2, 4, 48, 0.1), 0),
    ((50257, 7, 1, 1, 20, 0.0), 123),
    ((1, 1, 1, 1, 3, 0.1), 5),  # wte and wpe of 3 elements: one at a time, cached pair
]


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def hashed_init(cfg_t, seed):
    torch.manual_seed(seed)
    model = GPT2(GPTConfig(*cfg_t))
    sd = model.state_dict()
    flat = np.concatenate([sd[k].numpy().astype("<f4").ravel() for k in sd if k != "lm_head.weight"])
    # the generator after the constructor: lm_head's draws were consumed
    after = torch.rand(1).item()
    return flat.size, fnv1a64(flat.tobytes()), after


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def run_case(cfg_t, seed, training, B, T, idx_seed, activation="gelu"):
    cfg = GPTConfig(*cfg_t)
    idx = torch.randint(0, cfg.vocab_size, (B, T), generator=torch.Generator().manual_seed(idx_seed))
    torch.manual_seed(seed)
    model = GPT2(cfg)
    model.train(training)
    names = [k for k in model.state_dict().keys() if k != "lm_head.weight"]
    sd = model.state_dict()
    params = np.concatenate([sd[k].detach().numpy().astype(np.float32).ravel() for k in names])

    hidden, maps = [], []
    hooks = [model.drop.register_forward_hook(lambda m, i, o: hidden.append(o.detach().clone()))]
    for block in list(model.h)[:-1]:
        hooks.append(block.register_forward_hook(lambda m, i, o: hidden.append(o.detach().clone())))
    hooks.append(model.ln_f.register_forward_hook(lambda m, i, o: hidden.append(o.detach().clone())))
    softmax = F.softmax

    def recording_softmax(*args, **kwargs):
        out = softmax(*args, **kwargs)
        maps.append(out.detach().clone())
        return out

    F.softmax = recording_softmax
    gelu = F.gelu
    if activation == "gelu_new":
        F.gelu = gelu_new
    try:
        with DropoutRecorder() as drops, torch.no_grad():
            logits, _ = model(idx)
    finally:
        F.softmax = softmax
        F.gelu = gelu
        for h in hooks:
            h.remove()
    assert len(hidden) == cfg.n_layer + 1 and len(maps) == cfg.n_layer
    if not training and activation == "gelu":  # the recording changed nothing: same bits
        with torch.no_grad():
            again, _ = model(idx)
        assert torch.equal(again, logits)
    assert len(drops.masks) == 1 + 2 * cfg.n_layer
    attn = torch.stack(maps).numpy() if maps else np.zeros(0, np.float32)
    masks = np.concatenate([m.numpy().astype("<f4").ravel() for m in drops.masks])
    return cfg, idx, names, params, logits.numpy(), torch.stack(hidden).numpy(), attn, masks


def write_case(path, name, cfg, seed, training, B, T, idx, names, tensors, activation):
    with open(path, "wb") as f:
        head = [f"gpt2-golden 1", f"case {name}",
                f"vocab_size {cfg.vocab_size}", f"block_size {cfg.block_size}",
                f"n_layer {cfg.n_layer}", f"n_head {cfg.n_head}", f"n_embd {cfg.n_embd}",
                f"dropout {cfg.dropout!r}", f"seed {seed}", f"training {int(training)}",
                f"B {B}", f"T {T}", f"activation {activation}", "names " + " ".join(names)]
        f.write(("\n".join(head) + "\n").encode())
        for tname, arr in [("idx", idx.numpy().astype("<i4"))] + tensors:
            dtype = "i32" if arr.dtype.kind == "i" else "f32"
            arr = np.ascontiguousarray(arr, dtype="<i4" if dtype == "i32" else "<f4").ravel()
            f.write(f"tensor {tname} {dtype} {arr.size}\n".encode())
            f.write(arr.tobytes())
            f.write(b"\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "gpt2")
    print("torch", torch.__version__, "OPENBLAS_CORETYPE", os.environ.get("OPENBLAS_CORETYPE"))
    # compute everything, then write
    results = [(c, "gelu", run_case(*c[1:])) for c in CASES]
    results += [(c, "gelu_new", run_case(*c[1:], activation="gelu_new")) for c in CASES_GELU_NEW]
    hashes = [(c, s, hashed_init(c, s)) for c, s in HASHED_INITS]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "init_hashes.txt"), "w") as f:
        f.write("# vocab_size block_size n_layer n_head n_embd dropout seed n_params "
                "fnv1a64(state_dict float32 bytes, lm_head excepted) torch.rand(1) after\n")
        for c, s, (n, h, after) in hashes:
            f.write("%d %d %d %d %d %r %d %d %016x %r\n" % (*c, s, n, h, after))
    print("wrote init_hashes.txt")
    for (name, _, seed, training, B, T, _), act, (cfg, idx, names, params, logits, hidden, attn,
                                                  masks) in results:
        write_case(os.path.join(out, name + ".gpt2"), name, cfg, seed, training, B, T, idx, names,
                   [("params", params), ("logits", logits), ("hidden", hidden), ("attn", attn),
                    ("dropout", masks)], act)
        print("wrote", name)


if __name__ == "__main__":
    main()
