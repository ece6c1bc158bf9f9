"""Per-token decode time in PyTorch 1.13 on bench_decode.c's cases: the
GPT-2 124M shape (12 layers, 12 heads, 768 wide, vocab 50,257, context
1024) of both families built from torch.manual_seed(0) (seed 003's GPT2 and
the book's GPTModel: the same weights core's bench builds, bit for bit),
batch 1, eval, torch.no_grad(), at context 128 and 512:

  kv    the obvious past_key_values loop on the model's own modules, as
        Hugging Face's GPT2Attention does it: each block's keys and values
        of the positions so far kept per layer, the new token's q, k, v
        projected, torch.cat onto the cache, one query's softmax(q kᵀ / √d) v,
        the output projection and the MLP; the head on the new position;
  full  the books' loop (generate_text_simple, generate): the whole window
        idx[:, -context_size:] through model(idx) for each new token.

Each step is timed as bench_decode times it: the cache holds context - 1
positions and one token goes in; the cached step is checked against the
whole forward's last logits first. Prints "side family context ms" lines,
each the best over the thread configurations (PyTorch's threads and
OpenBLAS's, as bench_gpt2_torch.py) of the median of RUNS steps (RUNS / 3
whole forwards).

    /usr/bin/python3 bench/bench_decode_torch.py [RUNS]
"""
import ctypes, math, os, statistics, sys, time
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "golden"))
from reference import GPT2, GPTConfig, GPTModel  # noqa: E402  seed 003's gpt2_min.py, the book's ch04

OPENBLAS = ctypes.CDLL("libopenblas.so.0")
CONFIGS = [(1, 1), (1, 2), (2, 1), (2, 2)]  # (torch threads, OpenBLAS threads)
RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 7   # steps timed per configuration (kv)
FULL_RUNS = max(1, RUNS // 3)                          # whole forwards (seconds each at 512)
V, CTX, L, H, C = 50257, 1024, 12, 12, 768
D = C // H


# ==== one step with a cache, on each family's own modules ===================


def heads(t):  # [1, T, C] -> [1, H, T, D]
    return t.view(1, -1, H, D).transpose(1, 2)


def attend(q, k, v):  # one query against every cached key
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
    return (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(1, -1, C)


def gpt2_step(m, token, pos, past):
    """GPT2: one token at position pos; past[l] = (k, v) of the positions before."""
    x = m.wte(token) + m.wpe(pos)
    for l, b in enumerate(m.h):
        q, k, v = b.attn.c_attn(b.ln_1(x)).split(C, dim=2)
        k = torch.cat((past[l][0], heads(k)), dim=2)
        v = torch.cat((past[l][1], heads(v)), dim=2)
        past[l] = (k, v)
        x = x + b.attn.c_proj(attend(heads(q), k, v))
        x = x + b.mlp.proj(F.gelu(b.mlp.fc(b.ln_2(x))))
    return m.lm_head(m.ln_f(x))


def book_step(m, token, pos, past):
    """GPTModel: the same on the book's modules."""
    x = m.tok_emb(token) + m.pos_emb(pos)
    for l, b in enumerate(m.trf_blocks):
        h = b.norm1(x)
        k = torch.cat((past[l][0], heads(b.att.W_key(h))), dim=2)
        v = torch.cat((past[l][1], heads(b.att.W_value(h))), dim=2)
        past[l] = (k, v)
        x = x + b.att.out_proj(attend(heads(b.att.W_query(h)), k, v))
        x = x + b.ff(b.norm2(x))
    return m.out_head(m.final_norm(x))


def prefill(m, family, idx):
    """The cache of idx's positions: each block's keys and values from one
    forward pass over them (forward hooks on the projections)."""
    got, hooks = [], []
    if family == "GPT2":
        for b in m.h:
            hooks.append(b.attn.c_attn.register_forward_hook(
                lambda mod, i, o: got.append(tuple(heads(t) for t in o.split(C, dim=2)[1:]))))
    else:
        for b in m.trf_blocks:
            kv = []
            hooks.append(b.att.W_key.register_forward_hook(lambda mod, i, o, kv=kv: kv.append(heads(o))))
            hooks.append(b.att.W_value.register_forward_hook(
                lambda mod, i, o, kv=kv: got.append((kv.pop(), heads(o)))))
    m(idx)
    for h in hooks:
        h.remove()
    return got


def build(family):
    torch.manual_seed(0)
    if family == "GPT2":
        return GPT2(GPTConfig(V, CTX, L, H, C, 0.1)).eval()
    return GPTModel({"vocab_size": V, "context_length": CTX, "emb_dim": C, "n_heads": H, "n_layers": L,
                     "drop_rate": 0.1, "qkv_bias": False}).eval()


def median_ms(fn, runs):
    fn()  # warm up
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def bench(family):
    m = build(family)
    step = gpt2_step if family == "GPT2" else book_step
    idx = torch.tensor([[(t * 7919) % V for t in range(CTX)]])
    with torch.no_grad():
        for ctx in (128, 512):
            past = prefill(m, family, idx[:, :ctx - 1])
            token, pos = idx[:, ctx - 1:ctx], torch.tensor([ctx - 1])
            full = m(idx[:, :ctx])
            full = (full[0] if isinstance(full, tuple) else full)[0, -1]
            diff = (step(m, token, pos, list(past))[0, -1] - full).abs().max().item()
            assert diff < 1e-3, f"the cached step is not the model ({diff})"
            best = {"kv": 1e30, "full": 1e30}
            for tt, bt in CONFIGS:
                torch.set_num_threads(tt)
                OPENBLAS.openblas_set_num_threads(bt)
                kv = median_ms(lambda: step(m, token, pos, list(past)), RUNS)
                full = median_ms(lambda: m(idx[:, :ctx]), FULL_RUNS)
                best["kv"], best["full"] = min(best["kv"], kv), min(best["full"], full)
            for side in ("kv", "full"):
                print(f"torch_{side} {family} {ctx} {best[side]:.3f}", flush=True)


for family in ("GPT2", "GPTModel"):
    bench(family)
