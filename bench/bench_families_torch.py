"""The decoder families' bench, PyTorch 1.13's side (bench/run_families.sh):
the SmolLM2-135M shape (LlamaForCausalLM: 30 layers, 576 wide, 9 heads, 3
key/value heads, MLP 1,536, vocabulary 49,152, tied) and the Qwen2.5-0.5B
shape (Qwen2ForCausalLM: 24 layers, 896 wide, 14 heads, 2 key/value heads,
MLP 4,864, vocabulary 151,936, tied, q/k/v biases), batch 1, eval,
torch.no_grad().

    bench_families_torch.py make DIR     writes DIR/<shape>/config.json and
                                         model.safetensors (F32, random:
                                         torch.manual_seed(0), normal(0, 0.02),
                                         norms 1): the weights both sides load
    bench_families_torch.py time DIR     prints "torch <shape> <what> ms" lines

What is timed is the project's reference (tests/golden/families.py, the
float32 forward transcribed from transformers' modeling_llama.py and
modeling_qwen2.py, which the service's goldens come from): its forward over
T = 128 and 512 tokens (every position's logits), and a decode step at
context 128 with a key/value cache (below: the reference's pieces, the way
transformers' LlamaAttention runs with past_key_values: the new token's
q/k/v projected, RoPE at its position, torch.cat onto the cache, one
query's eager attention, o_proj, the MLP, the head on the new position; the
step is checked against the whole forward's last logits first). Each figure
is the best over the thread configurations (PyTorch's threads, OpenBLAS's:
1/1, 1/2, 2/1, 2/2) of the median of the runs.
"""
import ctypes, json, os, statistics, sys, time

import torch
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "golden"))
import families as fam  # noqa: E402
from generate_checkpoint import write_safetensors  # noqa: E402

OPENBLAS = ctypes.CDLL("libopenblas.so.0")
CONFIGS = [(1, 1), (1, 2), (2, 1), (2, 2)]  # (torch threads, OpenBLAS threads)

SHAPES = {
    "smollm2-135m": {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                     "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
                     "num_attention_heads": 9, "num_key_value_heads": 3, "vocab_size": 49152,
                     "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
                     "rope_theta": 100000.0, "tie_word_embeddings": True, "hidden_act": "silu",
                     "torch_dtype": "float32"},
    "qwen2.5-0.5b": {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
                     "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
                     "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
                     "max_position_embeddings": 32768, "max_window_layers": 21,
                     "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "sliding_window": 32768,
                     "use_sliding_window": False, "tie_word_embeddings": True,
                     "hidden_act": "silu", "torch_dtype": "float32"},
}


def make(out):
    for name, config in SHAPES.items():
        d = os.path.join(out, name)
        if os.path.exists(os.path.join(d, "model.safetensors")):
            continue
        os.makedirs(d, exist_ok=True)
        torch.manual_seed(0)
        sd = {}
        for k, shape, kind in fam.tensor_table(config):
            sd[k] = torch.ones(shape) if kind == "norm" else torch.randn(shape) * 0.02
        write_safetensors(os.path.join(d, "model.safetensors"),
                          [(k, "F32", sd[k]) for k in sorted(sd)], {"format": "pt"})
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(config, f, indent=2, sort_keys=True)


def load(d):
    with open(os.path.join(d, "config.json")) as f:
        config = json.load(f)
    raw = open(os.path.join(d, "model.safetensors"), "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    sd = {}
    for k, e in header.items():
        if k == "__metadata__":
            continue
        b, t = e["data_offsets"]
        sd[k] = torch.frombuffer(bytearray(raw[8 + n + b:8 + n + t]),
                                 dtype=torch.float32).view(e["shape"])
    return config, sd


# ==== A decode step with a cache, on the reference's pieces =================


def step(config, sd, s, token, pos, past, inv_freq):
    """One token at position pos; past[l] = (k, v) [1][Hkv][pos][D]."""
    h = F.embedding(torch.tensor([[token]]), sd["model.embed_tokens.weight"])
    t = torch.tensor([pos], dtype=torch.float32)
    freqs = torch.outer(t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()  # [1][D]: apply_rotary_pos_emb broadcasts them
    act = fam.activation(s["act"])
    for l in range(s["L"]):
        p = "model.layers.%d." % l
        a = fam.rms_norm(h, sd[p + "input_layernorm.weight"], s["eps"])
        q = fam.linear(a, sd, p + "self_attn.q_proj").view(1, 1, -1, s["D"]).transpose(1, 2)
        k = fam.linear(a, sd, p + "self_attn.k_proj").view(1, 1, -1, s["D"]).transpose(1, 2)
        v = fam.linear(a, sd, p + "self_attn.v_proj").view(1, 1, -1, s["D"]).transpose(1, 2)
        q, k = fam.apply_rotary_pos_emb(q, k, cos, sin)
        k = torch.cat((past[l][0], k), dim=2)
        v = torch.cat((past[l][1], v), dim=2)
        past[l] = (k, v)
        n_rep = q.shape[1] // k.shape[1]
        w = torch.matmul(q, fam.repeat_kv(k, n_rep).transpose(2, 3)) * s["D"] ** -0.5
        z = torch.matmul(F.softmax(w, dim=-1, dtype=torch.float32), fam.repeat_kv(v, n_rep))
        h = h + fam.linear(z.transpose(1, 2).reshape(1, 1, -1), sd, p + "self_attn.o_proj")
        m = fam.rms_norm(h, sd[p + "post_attention_layernorm.weight"], s["eps"])
        h = h + fam.gated_mlp(m, sd, p, act, {}, "")
    h = fam.rms_norm(h, sd["model.norm.weight"], s["eps"])
    return F.linear(h, sd["model.embed_tokens.weight"])


def prefill(config, sd, s, idx):
    """The cache of idx's positions, from the reference's rotated keys and values."""
    _, rec = fam.forward(config, sd, idx)
    return [(rec["blocks.%d.attn.hook_rot_k" % l].transpose(1, 2),
             rec["blocks.%d.attn.hook_v" % l].transpose(1, 2)) for l in range(s["L"])]


def timed(fn, runs):
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out)


def time_shape(name, d):
    config, sd = load(d)
    s = fam.llama_like(config)
    inv_freq = fam.inv_freq_of(s["theta"], s["D"], s["scaling"])
    V = config["vocab_size"]
    idx = torch.tensor([[(t * 7919) % V for t in range(512)]])
    with torch.no_grad():
        # the cached step against the whole forward's last logits
        past = prefill(config, sd, s, idx[:, :127])
        got = step(config, sd, s, int(idx[0, 127]), 127, past, inv_freq)
        want, _ = fam.forward(config, sd, idx[:, :128])
        assert torch.allclose(got[0, 0], want[0, -1], atol=1e-4, rtol=1e-3), "the step is wrong"
        best = {}
        for tt, bt in CONFIGS:
            torch.set_num_threads(tt)
            OPENBLAS.openblas_set_num_threads(bt)
            for T in (128, 512):
                ms = timed(lambda: fam.forward(config, sd, idx[:, :T]), 3 if T == 128 else 2)
                best["forward%d" % T] = min(best.get("forward%d" % T, 1e30), ms)
            cache = prefill(config, sd, s, idx[:, :127])

            def one():
                past = list(cache)
                step(config, sd, s, int(idx[0, 127]), 127, past, inv_freq)
            best["decode128"] = min(best.get("decode128", 1e30), timed(one, 9))
    for what, ms in best.items():
        print("torch %s %s %.2f" % (name, what, ms), flush=True)


def main():
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "make":
        make(out)
    else:
        for name in SHAPES:
            time_shape(name, os.path.join(out, name))


if __name__ == "__main__":
    main()
