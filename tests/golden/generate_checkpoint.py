#!/usr/bin/python3
"""Small random GPT-2 checkpoints in the Hugging Face layout, and their logits,
for the --model tests (api/model/checkpoint.c, tests/test_api_checkpoint.c,
tests/test_server_models.c); the book's GPTModel saved as safetensors under
its own names; and model folders (--model NAME=DIR) as save_pretrained
leaves them: config.json, model.safetensors or shards with their
model.safetensors.index.json, and a tokenizer beside them.

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

The GPTModel file (book_f32) is the book's class itself (reference.py's
copy) with random weights loaded by load_state_dict, saved as
safetensors.torch.save_file(model.state_dict()) would (mask buffers
included); its logits come from that model's forward.

Each folder (folder_gpt2, folder_shards, folder_book) holds a tokenizer of
GPT-2's 256 byte symbols (ids in byte order) and one merge, "Ġ t" (id 256):
vocab.json + merges.txt, or encoder.json + vocab.bpe (folder_shards). With
a single merge, the tokens of ASCII text are its bytes with every space
before a "t" joined to it (GPT-2's pre-tokenizer keeps a space with the
letters after it), so the ids are computed here without a tokenizer library.
NAME.json then holds "text", its idx and the logits, for a request that
sends only {"model": NAME, "text": ...}.
"""
import json
import math
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference import GPTModel, gelu_new  # noqa: E402

torch.set_num_threads(1)

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


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


# ==== the book's GPTModel and model folders =================================

TEXT = "the cat sat on the mat, to the east"


def bytes_to_unicode():
    """encoder.py's table: each byte's symbol in vocab.json."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def write_tokenizer(d, openai_names):
    u = bytes_to_unicode()
    vocab = {u[b]: b for b in range(256)}
    vocab[u[32] + "t"] = 256
    names = ("encoder.json", "vocab.bpe") if openai_names else ("vocab.json", "merges.txt")
    with open(os.path.join(d, names[0]), "w") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(d, names[1]), "w") as f:
        f.write("#version: 0.2\n%s t\n" % u[32])


def text_ids(text):
    """The tokens of ASCII text with the one merge: bytes, " t" joined."""
    raw, ids, i = text.encode(), [], 0
    while i < len(raw):
        if raw[i] == 32 and i + 1 < len(raw) and raw[i + 1] == ord("t"):
            ids.append(256)
            i += 2
        else:
            ids.append(raw[i])
            i += 1
    return ids


def hf_tensors(sd, prefix):
    return [(prefix + k, "F32", v) for k, v in sd.items()]


def rounded(x):
    return [float("%.9g" % v) for v in x.flatten().tolist()]


def gpt2_folder(out, name, seed, shards, openai_names):
    V, P, L, C, H = 300, 40, 2, 24, 3  # n_head 3: not n_embd / 64, config.json says it
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    g = torch.Generator().manual_seed(seed)
    sd = random_state_dict(g, V, P, L, C)
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
              "layer_norm_epsilon": 1e-05, "n_ctx": P, "n_embd": C, "n_head": H, "n_layer": L,
              "n_positions": P, "vocab_size": V, "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    tensors = hf_tensors(sd, "transformer.")
    if shards:
        half = len(tensors) // 2
        parts = [("model-00001-of-00002.safetensors", tensors[:half]),
                 ("model-00002-of-00002.safetensors", tensors[half:])]
        weight_map = {}
        for file, part in parts:
            write_safetensors(os.path.join(d, file), part, {"format": "pt"})
            weight_map.update({n: file for n, _, _ in part})
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": sum(4 * t.numel() for _, _, t in tensors)},
                       "weight_map": weight_map}, f, indent=2)
    else:
        write_safetensors(os.path.join(d, "model.safetensors"), tensors, {"format": "pt"})
    write_tokenizer(d, openai_names)
    idx = torch.tensor([text_ids(TEXT)])
    with torch.no_grad():
        logits = forward(sd, idx, H)
    ref = {"folder": name, "config": {"vocab_size": V, "block_size": P, "n_layer": L, "n_head": H,
                                      "n_embd": C}, "shards": 2 if shards else 1, "text": TEXT,
           "idx": idx[0].tolist(), "logits": rounded(logits)}
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"))
        f.write("\n")


def book_model(cfg, seed):
    """GPTModel(cfg) with random weights (LayerNorm scales around 1)."""
    torch.manual_seed(seed)
    model = GPTModel(cfg)
    g = torch.Generator().manual_seed(seed + 1)
    sd = {}
    for k, v in model.state_dict().items():
        if k.endswith(".mask"):
            sd[k] = v.clone()
        elif k.endswith(".scale"):
            sd[k] = 1.0 + 0.1 * torch.randn(v.shape, generator=g)
        else:
            sd[k] = 0.3 * torch.randn(v.shape, generator=g)
    model.load_state_dict(sd)
    model.eval()
    return model, sd


def book_case(out, name, seed, folder, spec):
    cfg = {"vocab_size": 300, "context_length": 40, "emb_dim": 20, "n_heads": 2, "n_layers": 2,
           "drop_rate": 0.1, "qkv_bias": True}
    model, sd = book_model(cfg, seed)
    keep_masks = not folder  # save_file keeps the buffers; the folder leaves them out
    tensors = [(k, "F32", v) for k, v in sd.items() if keep_masks or not k.endswith(".mask")]
    if folder:
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        write_safetensors(os.path.join(d, "model.safetensors"), tensors, None)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f, indent=2)
        write_tokenizer(d, False)
        idx = torch.tensor([text_ids(TEXT)])
    else:
        write_safetensors(os.path.join(out, name + ".safetensors"), tensors, {"format": "pt"})
        idx = torch.randint(0, cfg["vocab_size"], (2, 7), generator=torch.Generator().manual_seed(seed + 2))
    with torch.no_grad():
        logits = model(idx)
    ref = {"config": cfg, "idx": idx.tolist() if not folder else idx[0].tolist(),
           "logits": rounded(logits)}
    if folder:
        ref.update({"folder": name, "shards": 1, "text": TEXT})
    else:
        ref.update({"file": name + ".safetensors", "spec_suffix": spec})
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
    # the book's GPTModel under its own names, masks included, heads on the command line
    book_case(out, "book_f32", 14, folder=False, spec=":heads=2")
    # folders: Hugging Face's GPT-2 (one file; two shards with OpenAI's tokenizer names),
    # and the book's GPTModel with its GPT_CONFIG dict as config.json
    gpt2_folder(out, "folder_gpt2", 15, shards=False, openai_names=False)
    gpt2_folder(out, "folder_shards", 16, shards=True, openai_names=True)
    book_case(out, "folder_book", 17, folder=True, spec="")


if __name__ == "__main__":
    main()
