"""Sentence embeddings in PyTorch 1.13 on all-MiniLM-L6-v2's shape (BertModel:
6 layers, hidden 384, 12 heads, FFN 1536, vocab 30,522, 512 positions;
mean pooling over the tokens, then Normalize), the baseline of
bench/run_embed.sh:

    /usr/bin/python3 bench/bench_embed_torch.py write DIR   the folder and the batch
    /usr/bin/python3 bench/bench_embed_torch.py time DIR [RUNS] [cputime]

write: random weights (torch.manual_seed(0)) into DIR as a model folder
(config.json, model.safetensors F32 under BertModel's bare names, modules.json,
1_Pooling/config.json with mean pooling, the Normalize module) that the
server and bench_embed.c load, and DIR/batch.json: 32 sentences of 16 to 64
tokens ([CLS] ids [SEP], lengths uniform, seeded), as a tokenizer gives them.

time: the batch as transformers and sentence-transformers run it: padded to
its longest sentence with an attention_mask (SentenceTransformer.encode
sorts by length and pads each batch of 32 to its longest: one batch here),
BertModel.forward as modeling_bert.py computes it (the extended additive
mask, BertSelfAttention, BertSelfOutput, BertIntermediate, BertOutput, in
eval mode under torch.no_grad), Pooling's mean over the tokens and
Normalize. Checked first against tests/golden/encoders.py's transcription.
Prints "torch embed ms" for the best thread configuration (PyTorch threads
and OpenBLAS threads 1/1, 1/2, 2/1, 2/2), the median of RUNS batches each;
with cputime, one thread each and the process's CPU time (time.process_time),
which other processes sharing the cores do not inflate.
"""
import ctypes, json, math, os, statistics, struct, sys, time
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "golden"))
import encoders as enc  # noqa: E402

V, P, L, H, C, FF = 30522, 512, 6, 12, 384, 1536
B, LO, HI = 32, 16, 64
CONFIGS = [(1, 1), (1, 2), (2, 1), (2, 2)]  # (torch threads, OpenBLAS threads)
OPENBLAS = ctypes.CDLL("libopenblas.so.0")

CONFIG = {"architectures": ["BertModel"], "attention_probs_dropout_prob": 0.1, "gradient_checkpointing": False,
          "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": C, "initializer_range": 0.02,
          "intermediate_size": FF, "layer_norm_eps": 1e-12, "max_position_embeddings": P, "model_type": "bert",
          "num_attention_heads": H, "num_hidden_layers": L, "pad_token_id": 0,
          "position_embedding_type": "absolute", "transformers_version": "4.8.2", "type_vocab_size": 2,
          "use_cache": True, "vocab_size": V}


def state_dict():
    """BertModel's tensors: Linear weights N(0, 0.02) as BertPreTrainedModel._init_weights,
    biases and LayerNorm as small noise around their init, embeddings N(0, 0.02)."""
    torch.manual_seed(0)
    sd = {"embeddings.word_embeddings.weight": torch.randn(V, C) * 0.02,
          "embeddings.position_embeddings.weight": torch.randn(P, C) * 0.02,
          "embeddings.token_type_embeddings.weight": torch.randn(2, C) * 0.02,
          "embeddings.LayerNorm.weight": 1 + 0.02 * torch.randn(C), "embeddings.LayerNorm.bias": 0.02 * torch.randn(C)}
    lin = {"attention.self.query": (C, C), "attention.self.key": (C, C), "attention.self.value": (C, C),
           "attention.output.dense": (C, C), "intermediate.dense": (FF, C), "output.dense": (C, FF)}
    for l in range(L):
        p = "encoder.layer.%d." % l
        for name, (o, i) in lin.items():
            sd[p + name + ".weight"] = torch.randn(o, i) * 0.05
            sd[p + name + ".bias"] = torch.randn(o) * 0.02
        for n in ("attention.output.LayerNorm", "output.LayerNorm"):
            sd[p + n + ".weight"] = 1 + 0.02 * torch.randn(C)
            sd[p + n + ".bias"] = 0.02 * torch.randn(C)
    sd["pooler.dense.weight"] = torch.randn(C, C) * 0.05
    sd["pooler.dense.bias"] = torch.randn(C) * 0.02
    return sd


def write(d):
    os.makedirs(os.path.join(d, "1_Pooling"), exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2, sort_keys=True)
    sd = state_dict()
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for k in sorted(sd):
        raw = sd[k].contiguous().numpy().astype("<f4").tobytes()
        header[k] = {"dtype": "F32", "shape": list(sd[k].shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    with open(os.path.join(d, "modules.json"), "w") as f:
        json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                   {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}], f)
    with open(os.path.join(d, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": C, "pooling_mode_cls_token": False,
                   "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
                   "pooling_mode_mean_sqrt_len_tokens": False}, f)
    g = torch.Generator().manual_seed(1)
    lens = torch.randint(LO, HI + 1, (B,), generator=g).tolist()
    rows = [[101] + torch.randint(1000, V, (n - 2,), generator=g).tolist() + [102] for n in lens]
    with open(os.path.join(d, "batch.json"), "w") as f:
        json.dump(rows, f)
    print("wrote %s: %d sentences of %d to %d tokens (%d in all, padded %d)" % (
        d, B, min(lens), max(lens), sum(lens), B * max(lens)))


def lean(sd, idx, mask):
    """BertModel.forward (modeling_bert.py) without hooks, then mean pooling and
    Normalize: what an application runs."""
    ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    T = idx.shape[1]
    x = sd["embeddings.word_embeddings.weight"][idx] + sd["embeddings.token_type_embeddings.weight"][0] + \
        sd["embeddings.position_embeddings.weight"][:T]
    x = F.layer_norm(x, (C,), sd["embeddings.LayerNorm.weight"], sd["embeddings.LayerNorm.bias"], 1e-12)
    for l in range(L):
        p = "encoder.layer.%d." % l
        lin = lambda t, n: F.linear(t, sd[p + n + ".weight"], sd[p + n + ".bias"])
        hd = lambda t: t.view(t.shape[0], T, H, C // H).permute(0, 2, 1, 3)
        q, k, v = hd(lin(x, "attention.self.query")), hd(lin(x, "attention.self.key")), hd(lin(x, "attention.self.value"))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(C // H) + ext
        z = torch.matmul(torch.softmax(s, dim=-1), v).permute(0, 2, 1, 3).reshape(x.shape)
        x = F.layer_norm(lin(z, "attention.output.dense") + x, (C,), sd[p + "attention.output.LayerNorm.weight"],
                         sd[p + "attention.output.LayerNorm.bias"], 1e-12)
        m = lin(F.gelu(lin(x, "intermediate.dense")), "output.dense")
        x = F.layer_norm(m + x, (C,), sd[p + "output.LayerNorm.weight"], sd[p + "output.LayerNorm.bias"], 1e-12)
    me = mask.unsqueeze(-1).float()
    return F.normalize(torch.sum(x * me, 1) / torch.clamp(me.sum(1), min=1e-9), p=2, dim=1)


def batch(d):
    with open(os.path.join(d, "batch.json")) as f:
        rows = json.load(f)
    T = max(len(r) for r in rows)
    idx = torch.zeros(len(rows), T, dtype=torch.long)
    mask = torch.zeros(len(rows), T, dtype=torch.long)
    for b, r in enumerate(rows):
        idx[b, :len(r)] = torch.tensor(r)
        mask[b, :len(r)] = 1
    return idx, mask


def time_it(d, runs, cputime):
    sd, (idx, mask) = state_dict(), batch(d)
    with torch.no_grad():
        ref = enc.forward(CONFIG, sd, idx, mask, torch.zeros_like(idx))["last_hidden_state"]
        want = enc.normalize(enc.pool({"pooling_mode_mean_tokens": True}, ref, mask))
        err = float((lean(sd, idx, mask) - want).abs().max())
    assert err < 1e-5, err
    best, clock = None, time.process_time if cputime else time.perf_counter
    for tt, ob in CONFIGS[:1] if cputime else CONFIGS:
        torch.set_num_threads(tt)
        OPENBLAS.openblas_set_num_threads(ob)
        with torch.no_grad():
            lean(sd, idx, mask)
            ms = []
            for _ in range(runs):
                t0 = clock()
                lean(sd, idx, mask)
                ms.append((clock() - t0) * 1e3)
        m = statistics.median(ms)
        print("# torch threads %d, OpenBLAS threads %d: %.1f ms" % (tt, ob, m), file=sys.stderr)
        best = m if best is None or m < best else best
    print("torch embed %.2f" % best)


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        time_it(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 9, "cputime" in sys.argv[4:])
