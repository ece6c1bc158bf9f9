#!/usr/bin/python3
"""Golden vectors for core's second model family, the book's chapter-4
GPTModel (Raschka, "Build a Large Language Model (From Scratch)", ch04
gpt.py of github.com/rasbt/LLMs-from-scratch, commit 28c65cd), run by
PyTorch 1.13 (Debian's python3-torch).

    /usr/bin/python3 tests/golden/generate_gptmodel.py tests/golden/gptmodel   (or `make golden`)

Each case is `torch.manual_seed(seed); model = GPTModel(cfg)`, then
`model.train()` or `model.eval()` and one call `model(idx)` continuing the
generator left by the constructor (dropout draws in training mode). The
classes are the book's, verbatim (reference.py). Intermediates are recorded without
changing any operation: forward hooks on `drop_emb`, on each block and on
`final_norm` (the hidden states: the input of every block, then the output
of final_norm, as core's attn_gpt2_outputs.hidden_states), `torch.softmax`
wrapped to keep every attention map (before the weights' dropout), and
`F.dropout` wrapped to keep each multiplier tensor (record.py: the
real F.dropout runs, the mask is redrawn from the same generator state and
checked bit for bit against the real output).

The file format is tests/golden/generate_gpt2.py's (`*.gpt2`, golden_io.py), with the
book's config keys (vocab_size, context_length, emb_dim, n_heads, n_layers,
drop_rate, qkv_bias) and `family GPTModel`, and one more tensor: `dropout`,
every dropout multiplier in draw order (drop_emb [B][T][C], then per block
the attention weights' [B][H][T][T] and drop_shortcut twice [B][T][C];
all ones in eval mode).

Also written: init_hashes.txt (larger models' whole state_dict through a
hash) and book_124m.txt, the book's own check: torch.manual_seed(123);
GPTModel(GPT_CONFIG_124M), eval, generate_text_simple of 6 tokens after the
ids of "Hello, I am".
"""
import os
import sys

import numpy as np
import torch

from record import ForwardRecorder
from golden_io import flat, hashed_init, write_gpt2
from reference import BOOK_KEYS, GPTModel, book_config, generate_text_simple  # the book's ch04

torch.set_num_threads(1)

# ==== recording ============================================================


def run_case(cfg_t, seed, training, B, T, idx_seed):
    cfg = book_config(cfg_t)
    idx = torch.randint(0, cfg["vocab_size"], (B, T),
                        generator=torch.Generator().manual_seed(idx_seed))
    torch.manual_seed(seed)
    model = GPTModel(cfg)
    model.train(training)
    sd = model.state_dict()
    names = list(sd.keys())
    params = flat([sd[k] for k in names])

    with ForwardRecorder(model.drop_emb, list(model.trf_blocks), model.final_norm) as r, \
            torch.no_grad():
        logits = model(idx)
    assert len(r.hidden) == cfg["n_layers"] + 1 and len(r.maps) == cfg["n_layers"]
    assert len(r.masks) == 1 + 3 * cfg["n_layers"]
    if not training:  # the recording changed nothing: same bits
        with torch.no_grad():
            assert torch.equal(model(idx), logits)
    attn = torch.stack(r.maps).numpy() if r.maps else np.zeros(0, np.float32)
    return cfg, idx, names, params, [("params", params), ("logits", logits.numpy()),
                                     ("hidden", torch.stack(r.hidden).numpy()), ("attn", attn),
                                     ("dropout", flat(r.masks))]


def head_lines(cfg, seed, training, B, T, names):
    head = ["family GPTModel"]
    head += [f"{k} {int(cfg[k]) if k == 'qkv_bias' else cfg[k]!r}" for k in BOOK_KEYS]
    head += [f"seed {seed}", f"training {int(training)}", f"B {B}", f"T {T}",
             "names " + " ".join(names)]  # no activation line: GPTModel has one GELU
    return head


# ==== the cases ============================================================

# name, (vocab_size, context_length, emb_dim, n_heads, n_layers, drop_rate, qkv_bias),
# seed, training, B, T, seed of the token ids
CASES = [
    ("b1_v40_l2_h2_c16_b2_t5", (40, 12, 16, 2, 2, 0.1, False), 1, False, 2, 5, 31),
    ("b2_qkv_bias_t16", (50, 16, 20, 4, 3, 0.1, True), 2, False, 1, 16, 32),
    # normal_ below 16 elements: element by element in double, cached pair
    ("b3_tiny_normal_small", (3, 2, 4, 2, 1, 0.0, True), 3, False, 1, 2, 33),
    ("b4_t1_b3", (30, 8, 8, 4, 2, 0.1, False), 4, False, 3, 1, 34),
    ("b5_v97_l2_h3_c24", (97, 32, 24, 3, 2, 0.2, True), 5, False, 2, 9, 35),
    ("b6_no_layers", (20, 6, 8, 2, 0, 0.1, False), 6, False, 2, 4, 36),
    # training: drop_emb, the attention weights and drop_shortcut twice per block
    ("b7_train_p0.2", (40, 12, 16, 2, 2, 0.2, False), 7, True, 2, 6, 37),
    ("b8_train_p0.5_qkv", (23, 10, 12, 3, 3, 0.5, True), 8, True, 2, 10, 38),
    ("b9_train_p0", (40, 12, 16, 2, 1, 0.0, False), 9, True, 2, 4, 39),
    ("b10_train_p1", (20, 6, 8, 2, 2, 1.0, True), 10, True, 1, 5, 40),
    ("b11_train_h1_t1", (17, 4, 6, 1, 2, 0.3, False), 11, True, 3, 1, 41),
]

# Larger inits checked through a hash: config, seed
HASHED_INITS = [
    ((5003, 64, 48, 4, 2, 0.1, True), 0),
    ((50257, 7, 20, 1, 1, 0.0, False), 123),
    ((1, 1, 3, 1, 1, 0.1, True), 5),
]

GPT_CONFIG_124M = {"vocab_size": 50257, "context_length": 1024, "emb_dim": 768, "n_heads": 12,
                   "n_layers": 12, "drop_rate": 0.1, "qkv_bias": False}
BOOK_PROMPT = [15496, 11, 314, 716]  # "Hello, I am" in GPT-2's tokenizer
BOOK_PRINTED = [15496, 11, 314, 716, 27018, 24086, 47843, 30961, 42348, 7267]


def book_124m():
    torch.manual_seed(123)
    model = GPTModel(GPT_CONFIG_124M)
    model.eval()
    out = generate_text_simple(model, torch.tensor([BOOK_PROMPT]), 6,
                               GPT_CONFIG_124M["context_length"])
    ids = out[0].tolist()
    assert ids == BOOK_PRINTED, f"PyTorch here gives {ids}, the book printed {BOOK_PRINTED}"
    return ids


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "gptmodel")
    print("torch", torch.__version__, "OPENBLAS_CORETYPE", os.environ.get("OPENBLAS_CORETYPE"))
    results = [(c, run_case(*c[1:])) for c in CASES]
    hashes = [(c, s, hashed_init(lambda: GPTModel(book_config(c)), s)) for c, s in HASHED_INITS]
    book = book_124m()
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "init_hashes.txt"), "w") as f:
        f.write("# vocab_size context_length emb_dim n_heads n_layers drop_rate qkv_bias seed "
                "n_params fnv1a64(state_dict float32 bytes) torch.rand(1) after\n")
        for c, s, (n, h, after) in hashes:
            f.write("%d %d %d %d %d %r %d %d %d %016x %r\n" % (*c[:6], int(c[6]), s, n, h, after))
    with open(os.path.join(out, "book_124m.txt"), "w") as f:
        f.write("# torch.manual_seed(123); GPTModel(GPT_CONFIG_124M); eval; generate_text_simple("
                "max_new_tokens=6) after \"Hello, I am\": prompt, then the ids PyTorch wrote\n")
        f.write(" ".join(map(str, BOOK_PROMPT)) + "\n" + " ".join(map(str, book[4:])) + "\n")
    for (name, cfg_t, seed, training, B, T, _), (cfg, idx, names, _, tensors) in results:
        write_gpt2(os.path.join(out, name + ".gpt2"), name,
                   head_lines(cfg, seed, training, B, T, names), idx, tensors)
        print("wrote", name)


if __name__ == "__main__":
    main()
