#!/usr/bin/python3
"""Golden vectors for core's second model family, the book's chapter-4
GPTModel (Raschka, "Build a Large Language Model (From Scratch)", ch04
gpt.py of github.com/rasbt/LLMs-from-scratch, commit 28c65cd), run by
PyTorch 1.13 (Debian's python3-torch).

    /usr/bin/python3 tests/golden/generate_gptmodel.py tests/golden/gptmodel   (or `make golden`)

Each case is `torch.manual_seed(seed); model = GPTModel(cfg)`, then
`model.train()` or `model.eval()` and one call `model(idx)` continuing the
generator left by the constructor (dropout draws in training mode). The
classes below are the book's, verbatim. Intermediates are recorded without
changing any operation: forward hooks on `drop_emb`, on each block and on
`final_norm` (the hidden states: the input of every block, then the output
of final_norm, as core's attn_gpt2_outputs.hidden_states), `torch.softmax`
wrapped to keep every attention map (before the weights' dropout), and
`F.dropout` wrapped to keep each multiplier tensor (dropout_record.py: the
real F.dropout runs, the mask is redrawn from the same generator state and
checked bit for bit against the real output).

The file format is tests/golden/generate_gpt2.py's (`*.gpt2`), with the
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
import torch.nn as nn
import torch.nn.functional as F

from dropout_record import DropoutRecorder

torch.set_num_threads(1)

# ==== the book's ch04 gpt.py (Chapters 3 and 4), verbatim ==================


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"

        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads  # Reduce the projection dim to match desired output dim

        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)  # Linear layer to combine head outputs
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape

        keys = self.W_key(x)  # Shape: (b, num_tokens, d_out)
        queries = self.W_query(x)
        values = self.W_value(x)

        # We implicitly split the matrix by adding a `num_heads` dimension
        # Unroll last dim: (b, num_tokens, d_out) -> (b, num_tokens, num_heads, head_dim)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        # Transpose: (b, num_tokens, num_heads, head_dim) -> (b, num_heads, num_tokens, head_dim)
        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        # Compute scaled dot-product attention (aka self-attention) with a causal mask
        attn_scores = queries @ keys.transpose(2, 3)  # Dot product for each head

        # Original mask truncated to the number of tokens and converted to boolean
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]

        # Use the mask to fill attention scores
        attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        # Shape: (b, num_tokens, num_heads, head_dim)
        context_vec = (attn_weights @ values).transpose(1, 2)

        # Combine heads, where self.d_out = self.num_heads * self.head_dim
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        context_vec = self.out_proj(context_vec)  # optional projection

        return context_vec


class LayerNorm(nn.Module):
    def __init__(self, emb_dim):
        super().__init__()
        self.eps = 1e-5
        self.scale = nn.Parameter(torch.ones(emb_dim))
        self.shift = nn.Parameter(torch.zeros(emb_dim))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = x.var(dim=-1, keepdim=True, unbiased=False)
        norm_x = (x - mean) / torch.sqrt(var + self.eps)
        return self.scale * norm_x + self.shift


class GELU(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(
            torch.sqrt(torch.tensor(2.0 / torch.pi)) *
            (x + 0.044715 * torch.pow(x, 3))
        ))


class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(cfg["emb_dim"], 4 * cfg["emb_dim"]),
            GELU(),
            nn.Linear(4 * cfg["emb_dim"], cfg["emb_dim"]),
        )

    def forward(self, x):
        return self.layers(x)


class TransformerBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.att = MultiHeadAttention(
            d_in=cfg["emb_dim"],
            d_out=cfg["emb_dim"],
            context_length=cfg["context_length"],
            num_heads=cfg["n_heads"],
            dropout=cfg["drop_rate"],
            qkv_bias=cfg["qkv_bias"])
        self.ff = FeedForward(cfg)
        self.norm1 = LayerNorm(cfg["emb_dim"])
        self.norm2 = LayerNorm(cfg["emb_dim"])
        self.drop_shortcut = nn.Dropout(cfg["drop_rate"])

    def forward(self, x):
        # Shortcut connection for attention block
        shortcut = x
        x = self.norm1(x)
        x = self.att(x)   # Shape [batch_size, num_tokens, emb_size]
        x = self.drop_shortcut(x)
        x = x + shortcut  # Add the original input back

        # Shortcut connection for feed-forward block
        shortcut = x
        x = self.norm2(x)
        x = self.ff(x)
        x = self.drop_shortcut(x)
        x = x + shortcut  # Add the original input back

        return x


class GPTModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.drop_emb = nn.Dropout(cfg["drop_rate"])

        self.trf_blocks = nn.Sequential(
            *[TransformerBlock(cfg) for _ in range(cfg["n_layers"])])

        self.final_norm = LayerNorm(cfg["emb_dim"])
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)

    def forward(self, in_idx):
        batch_size, seq_len = in_idx.shape
        tok_embeds = self.tok_emb(in_idx)
        pos_embeds = self.pos_emb(torch.arange(seq_len, device=in_idx.device))
        x = tok_embeds + pos_embeds  # Shape [batch_size, num_tokens, emb_size]
        x = self.drop_emb(x)
        x = self.trf_blocks(x)
        x = self.final_norm(x)
        logits = self.out_head(x)
        return logits


def generate_text_simple(model, idx, max_new_tokens, context_size):
    # idx is (B, T) array of indices in the current context
    for _ in range(max_new_tokens):

        # Crop current context if it exceeds the supported context size
        # E.g., if LLM supports only 5 tokens, and the context size is 10
        # then only the last 5 tokens are used as context
        idx_cond = idx[:, -context_size:]

        # Get the predictions
        with torch.no_grad():
            logits = model(idx_cond)

        # Focus only on the last time step
        # (batch, n_token, vocab_size) becomes (batch, vocab_size)
        logits = logits[:, -1, :]

        # Get the idx of the vocab entry with the highest logits value
        idx_next = torch.argmax(logits, dim=-1, keepdim=True)  # (batch, 1)

        # Append sampled index to the running sequence
        idx = torch.cat((idx, idx_next), dim=1)  # (batch, n_tokens+1)

    return idx

# ==== recording ============================================================

KEYS = ["vocab_size", "context_length", "emb_dim", "n_heads", "n_layers", "drop_rate", "qkv_bias"]


def config(t):
    return dict(zip(KEYS, t))


class Recorder(DropoutRecorder):
    """torch.softmax wrapped too while a forward runs: the maps (softmax
    outputs), in call order, besides the dropout multipliers."""

    def __init__(self):
        super().__init__()
        self.maps = []

    def softmax(self, *args, **kwargs):
        out = self._softmax(*args, **kwargs)
        self.maps.append(out.detach().clone())
        return out

    def __enter__(self):
        self._softmax = torch.softmax
        torch.softmax = self.softmax
        return super().__enter__()

    def __exit__(self, *exc):
        torch.softmax = self._softmax
        super().__exit__(*exc)


def flat(tensors):
    return np.concatenate([t.detach().numpy().astype("<f4").ravel() for t in tensors]) \
        if tensors else np.zeros(0, np.float32)


def run_case(cfg_t, seed, training, B, T, idx_seed):
    cfg = config(cfg_t)
    idx = torch.randint(0, cfg["vocab_size"], (B, T),
                        generator=torch.Generator().manual_seed(idx_seed))
    torch.manual_seed(seed)
    model = GPTModel(cfg)
    model.train(training)
    sd = model.state_dict()
    names = list(sd.keys())
    params = flat([sd[k] for k in names])

    hidden = []
    rec = lambda m, i, o: hidden.append(o.detach().clone())
    blocks = list(model.trf_blocks)
    hooks = [model.drop_emb.register_forward_hook(rec)] if blocks else []  # the input of block 0
    hooks += [b.register_forward_hook(rec) for b in blocks[:-1]]
    hooks.append(model.final_norm.register_forward_hook(rec))
    try:
        with Recorder() as r, torch.no_grad():
            logits = model(idx)
    finally:
        for h in hooks:
            h.remove()
    assert len(hidden) == cfg["n_layers"] + 1 and len(r.maps) == cfg["n_layers"]
    assert len(r.masks) == 1 + 3 * cfg["n_layers"]
    if not training:  # the recording changed nothing: same bits
        with torch.no_grad():
            assert torch.equal(model(idx), logits)
    attn = torch.stack(r.maps).numpy() if r.maps else np.zeros(0, np.float32)
    return cfg, idx, names, params, [("params", params), ("logits", logits.numpy()),
                                     ("hidden", torch.stack(hidden).numpy()), ("attn", attn),
                                     ("dropout", flat(r.masks))]


def write_case(path, name, cfg, seed, training, B, T, idx, names, tensors):
    with open(path, "wb") as f:
        head = ["gpt2-golden 1", f"case {name}", "family GPTModel"]
        head += [f"{k} {int(cfg[k]) if k == 'qkv_bias' else cfg[k]!r}" for k in KEYS]
        head += [f"seed {seed}", f"training {int(training)}", f"B {B}", f"T {T}",
                 "names " + " ".join(names)]  # no activation line: GPTModel has one GELU
        f.write(("\n".join(head) + "\n").encode())
        for tname, arr in [("idx", idx.numpy().astype("<i4"))] + tensors:
            dtype = "i32" if arr.dtype.kind == "i" else "f32"
            arr = np.ascontiguousarray(arr, dtype="<i4" if dtype == "i32" else "<f4").ravel()
            f.write(f"tensor {tname} {dtype} {arr.size}\n".encode())
            f.write(arr.tobytes())
            f.write(b"\n")

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


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def hashed_init(cfg_t, seed):
    torch.manual_seed(seed)
    model = GPTModel(config(cfg_t))
    sd = model.state_dict()
    data = flat([sd[k] for k in sd])
    after = torch.rand(1).item()  # the generator after the constructor
    return data.size, fnv1a64(data.tobytes()), after


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
    hashes = [(c, s, hashed_init(c, s)) for c, s in HASHED_INITS]
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
        write_case(os.path.join(out, name + ".gpt2"), name, cfg, seed, training, B, T, idx, names,
                   tensors)
        print("wrote", name)


if __name__ == "__main__":
    main()
