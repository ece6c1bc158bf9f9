#!/usr/bin/python3
"""Golden vectors for core's GPT-2 (core/gpt2.c): seed 003's gpt2_min.py run
by PyTorch 1.13 (Debian's python3-torch).

    /usr/bin/python3 tests/golden/generate_gpt2.py tests/golden/gpt2   (or `make golden`)

Each case is `torch.manual_seed(seed); model = GPT2(GPTConfig(...))`, then
`model.train()` or `model.eval()` and one call `model(idx)` that continues
the generator left by the constructor (dropout draws in training mode). The
classes are the seed's, verbatim (reference.py). Intermediates are recorded without
changing any operation: forward hooks on `drop`, on each block and on
`ln_f` (the hidden states, Hugging Face's convention: the input of every
block, then the output of ln_f), and F.softmax wrapped to keep every
attention map (record.py).

File format (`*.gpt2`, little-endian, golden_io.write_gpt2): text lines
`key value` (the config, `seed`, `training`, `B`, `T`, `activation` gelu or
gelu_new: Hugging Face's NewGELUActivation put in F.gelu's place,
GPTConfig.activation), then for each tensor a line `tensor NAME DTYPE COUNT`
followed by COUNT raw values (f32 or i32) and a newline. Tensors: idx
[B][T]; params, the state_dict in order without lm_head.weight (the names
are in the `names` line); logits [B][T][V]; hidden [n_layer + 1][B][T][C];
attn [n_layer][B][H][T][T]; dropout, every dropout multiplier in draw order
(drop [B][T][C], then per block attn.resid_drop and mlp.drop [B][T][C]; ones
in eval mode), recorded by record.py.
"""
import os
import sys

import numpy as np
import torch

from record import ForwardRecorder
from golden_io import flat, hashed_init, write_gpt2
from reference import GPT2, GPTConfig  # seed 003's gpt2_min.py

torch.set_num_threads(1)

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


def run_case(cfg_t, seed, training, B, T, idx_seed, activation="gelu"):
    cfg = GPTConfig(*cfg_t, activation=activation)
    idx = torch.randint(0, cfg.vocab_size, (B, T), generator=torch.Generator().manual_seed(idx_seed))
    torch.manual_seed(seed)
    model = GPT2(cfg)
    model.train(training)
    names = [k for k in model.state_dict().keys() if k != "lm_head.weight"]
    sd = model.state_dict()
    params = flat([sd[k] for k in names])

    with ForwardRecorder(model.drop, list(model.h), model.ln_f) as r, torch.no_grad():
        logits, _ = model(idx)
    assert len(r.hidden) == cfg.n_layer + 1 and len(r.maps) == cfg.n_layer
    if not training:  # the recording changed nothing: same bits
        with torch.no_grad():
            again, _ = model(idx)
        assert torch.equal(again, logits)
    assert len(r.masks) == 1 + 2 * cfg.n_layer
    attn = torch.stack(r.maps).numpy() if r.maps else np.zeros(0, np.float32)
    return cfg, idx, names, params, logits.numpy(), torch.stack(r.hidden).numpy(), attn, flat(r.masks)


def head_lines(cfg, seed, training, B, T, names):
    return [f"vocab_size {cfg.vocab_size}", f"block_size {cfg.block_size}",
            f"n_layer {cfg.n_layer}", f"n_head {cfg.n_head}", f"n_embd {cfg.n_embd}",
            f"dropout {cfg.dropout!r}", f"seed {seed}", f"training {int(training)}",
            f"B {B}", f"T {T}", f"activation {cfg.activation}", "names " + " ".join(names)]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "gpt2")
    print("torch", torch.__version__, "OPENBLAS_CORETYPE", os.environ.get("OPENBLAS_CORETYPE"))
    # compute everything, then write
    results = [(c, run_case(*c[1:])) for c in CASES]
    results += [(c, run_case(*c[1:], activation="gelu_new")) for c in CASES_GELU_NEW]
    hashes = [(c, s, hashed_init(lambda: GPT2(GPTConfig(*c)), s, skip=("lm_head.weight",)))
              for c, s in HASHED_INITS]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "init_hashes.txt"), "w") as f:
        f.write("# vocab_size block_size n_layer n_head n_embd dropout seed n_params "
                "fnv1a64(state_dict float32 bytes, lm_head excepted) torch.rand(1) after\n")
        for c, s, (n, h, after) in hashes:
            f.write("%d %d %d %d %d %r %d %d %016x %r\n" % (*c, s, n, h, after))
    print("wrote init_hashes.txt")
    for (name, _, seed, training, B, T, _), (cfg, idx, names, params, logits, hidden, attn,
                                             masks) in results:
        write_gpt2(os.path.join(out, name + ".gpt2"), name, head_lines(cfg, seed, training, B, T, names),
                   idx, [("params", params), ("logits", logits), ("hidden", hidden), ("attn", attn),
                         ("dropout", masks)])
        print("wrote", name)


if __name__ == "__main__":
    main()
