#!/usr/bin/python3
"""Golden vectors for core's look inside the models (attn_gpt2_run's
captures, ablations and patches, attn_gpt2_logit_lens): PyTorch 1.13 with
forward hooks on the same two model families as the other model goldens,
seed 003's GPT2 (generate_gpt2.py) and the book's GPTModel
(generate_gptmodel.py), whose classes are imported from reference.py.

    OPENBLAS_CORETYPE=Haswell /usr/bin/python3 tests/golden/generate_hooks.py tests/golden/hooks

The hook points are TransformerLens's for GPT-2 (transformer_lens/components:
abstract_attention.py, layer_norm.py, mlps/mlp.py, transformer_block.py),
placed on the modules of each family:

  blocks.L.hook_resid_pre       the block's input             (pre-hook on the block)
  blocks.L.ln1.hook_normalized  TransformerLens's LayerNorm:   x - mean, divided by
                                sqrt(mean(x^2) + eps), before the weight and bias
                                (of ln_1 / norm1's input)
  blocks.L.attn.hook_q/k/v      the projections' outputs as [B][T][H][D]
  blocks.L.attn.hook_attn_scores  the softmax's input: scaled, masked with -inf
  blocks.L.attn.hook_pattern    the softmax's output
  blocks.L.attn.hook_z          the output projection's input as [B][T][H][D]
  blocks.L.hook_attn_out        the attention's output (what is added to x)
  blocks.L.hook_resid_mid       ln_2 / norm2's input
  blocks.L.ln2.hook_normalized
  blocks.L.mlp.hook_pre         the first MLP layer's output
  blocks.L.mlp.hook_post        the second MLP layer's input (after GELU)
  blocks.L.hook_mlp_out         the MLP's output
  blocks.L.hook_resid_post      the block's output
  ln_final.hook_normalized      ln_f / final_norm's input, normalised

Interventions are hooks that return a changed tensor: an ablation replaces
head h of the output projection's input (hook_z) by zeros or by its mean
over positions (per batch row); a patch replaces, in a run on the corrupted
ids, head h of hook_z (every position) or one position of hook_resid_pre,
hook_attn_out or hook_mlp_out (every batch row) by the clean run's. The
logit lens is the model's own final LayerNorm and head on each block's
input and on the last block's output.

File format: generate_gpt2.py's (`*.gpt2`, golden_io.py: `key value` lines, then
`tensor NAME DTYPE COUNT` and raw little-endian values), with the family's
config keys, `family`, and tensors: idx, corrupted_idx, params, logits
(clean), then every hook by its full name, `ablate.L.H.zero|mean` (the
ablated run's logits), `patch.SITE.L.INDEX` (the patched corrupted run's
logits), `lens` ([n_layer + 1][B][T][V]).
"""
import os
import sys

import torch
import torch.nn.functional as F

from golden_io import flat, write_gpt2
import reference as ref

torch.set_num_threads(1)

HOOKS = ["hook_resid_pre", "ln1.hook_normalized", "attn.hook_q", "attn.hook_k", "attn.hook_v",
         "attn.hook_attn_scores", "attn.hook_pattern", "attn.hook_z", "hook_attn_out",
         "hook_resid_mid", "ln2.hook_normalized", "mlp.hook_pre", "mlp.hook_post",
         "hook_mlp_out", "hook_resid_post"]


def tl_normalized(x, eps):
    """TransformerLens's LayerNorm up to hook_normalized."""
    x = x - x.mean(-1, keepdim=True)
    scale = (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()
    return x / scale


class Family:
    """Where each hook point lives in one family's modules."""

    def __init__(self, name, model):
        self.name, self.model = name, model
        if name == "GPT2":
            self.blocks, self.final = list(model.h), model.ln_f
            self.head = model.lm_head
        else:
            self.blocks, self.final = list(model.trf_blocks), model.final_norm
            self.head = model.out_head

    def parts(self, block):
        """ln1, ln2, attention, q/k/v modules (or the fused one), out proj,
        mlp, mlp first layer, mlp second layer"""
        if self.name == "GPT2":
            return dict(ln1=block.ln_1, ln2=block.ln_2, attn=block.attn, qkv=block.attn.c_attn,
                        out=block.attn.c_proj, mlp=block.mlp, fc=block.mlp.fc,
                        proj=block.mlp.proj)
        return dict(ln1=block.norm1, ln2=block.norm2, attn=block.att,
                    q=block.att.W_query, k=block.att.W_key, v=block.att.W_value,
                    out=block.att.out_proj, mlp=block.ff, fc=block.ff.layers[0],
                    proj=block.ff.layers[2])

    def softmax_owner(self):
        return (F, "softmax") if self.name == "GPT2" else (torch, "softmax")


def eps_of(ln):
    return ln.eps


def run(fam, idx, H, capture=False, ablate=(), patch=None):
    """model(idx) with hooks. Returns logits and the captured hooks
    ({name: tensor}). ablate: [(l, h, method)]; patch: (site, l, index,
    clean_hooks)."""
    cache, handles = {}, []
    B, T = idx.shape

    def keep(name, t):
        if capture:
            cache[name] = t.detach().clone()

    for l, block in enumerate(fam.blocks):
        p = fam.parts(block)
        pre = f"blocks.{l}."

        def block_pre(m, inp, l=l, pre=pre):
            x = inp[0]
            if patch and patch[0] == "resid_pre" and patch[1] == l:
                x = x.clone()
                x[:, patch[2]] = patch[3][pre + "hook_resid_pre"][:, patch[2]]
            keep(pre + "hook_resid_pre", x)
            return (x,)

        handles.append(block.register_forward_pre_hook(block_pre))
        def ln_pre(m, inp, name, pre=pre):
            keep(pre + name + ".hook_normalized", tl_normalized(inp[0], eps_of(m)))
            if name == "ln2":
                keep(pre + "hook_resid_mid", inp[0])

        for ln, name in ((p["ln1"], "ln1"), (p["ln2"], "ln2")):
            handles.append(ln.register_forward_pre_hook(
                lambda m, inp, name=name, f=ln_pre: f(m, inp, name)))
        if "qkv" in p:
            def qkv_hook(m, inp, out, pre=pre):
                q, k, v = out.split(out.shape[-1] // 3, dim=2)
                for n, t in (("q", q), ("k", k), ("v", v)):
                    keep(pre + "attn.hook_" + n, t.reshape(B, T, H, -1))
            handles.append(p["qkv"].register_forward_hook(qkv_hook))
        else:
            for n in ("q", "k", "v"):
                handles.append(p[n].register_forward_hook(
                    lambda m, inp, out, n=n, pre=pre: keep(pre + "attn.hook_" + n,
                                                           out.reshape(B, T, H, -1))))

        def z_pre(m, inp, l=l, pre=pre):
            z = inp[0].reshape(B, T, H, -1).clone()
            for (al, ah, method) in ablate:
                if al == l:
                    z[:, :, ah] = 0 if method == "zero" else z[:, :, ah].mean(dim=1, keepdim=True)
            if patch and patch[0] == "attn_head" and patch[1] == l:
                z[:, :, patch[2]] = patch[3][pre + "attn.hook_z"][:, :, patch[2]]
            keep(pre + "attn.hook_z", z)
            return (z.reshape(B, T, -1),)

        handles.append(p["out"].register_forward_pre_hook(z_pre))

        def out_hook(site, name):
            def f(m, inp, out, l=l, pre=pre):
                if patch and patch[0] == site and patch[1] == l:
                    out = out.clone()
                    out[:, patch[2]] = patch[3][pre + name][:, patch[2]]
                keep(pre + name, out)
                return out
            return f

        handles.append(p["attn"].register_forward_hook(out_hook("attn_out", "hook_attn_out")))
        handles.append(p["mlp"].register_forward_hook(out_hook("mlp_out", "hook_mlp_out")))
        handles.append(p["fc"].register_forward_hook(
            lambda m, inp, out, pre=pre: keep(pre + "mlp.hook_pre", out)))
        handles.append(p["proj"].register_forward_pre_hook(
            lambda m, inp, pre=pre: keep(pre + "mlp.hook_post", inp[0])))
        handles.append(block.register_forward_hook(
            lambda m, inp, out, pre=pre: keep(pre + "hook_resid_post", out)))
    handles.append(fam.final.register_forward_pre_hook(
        lambda m, inp: keep("ln_final.hook_normalized", tl_normalized(inp[0], eps_of(m)))))

    owner, attr = fam.softmax_owner()
    real = getattr(owner, attr)
    layer = [0]

    def softmax(x, *a, **k):
        out = real(x, *a, **k)
        keep(f"blocks.{layer[0]}.attn.hook_attn_scores", x)
        keep(f"blocks.{layer[0]}.attn.hook_pattern", out)
        layer[0] += 1
        return out

    setattr(owner, attr, softmax)
    try:
        with torch.no_grad():
            out = fam.model(idx)
    finally:
        setattr(owner, attr, real)
        for h in handles:
            h.remove()
    logits = out[0] if isinstance(out, tuple) else out
    return logits, cache


def lens(fam, clean):
    L = len(fam.blocks)
    rows = [clean[f"blocks.{l}.hook_resid_pre"] for l in range(L)]
    rows.append(clean[f"blocks.{L - 1}.hook_resid_post"])
    with torch.no_grad():
        return torch.stack([fam.head(fam.final(r)) for r in rows])


def make_model(family, cfg_t, seed_):
    torch.manual_seed(seed_)
    if family == "GPT2":
        cfg = ref.GPTConfig(*cfg_t)
        model = ref.GPT2(cfg)
        H, V = cfg.n_head, cfg.vocab_size
        keys = [("vocab_size", cfg.vocab_size), ("block_size", cfg.block_size),
                ("n_layer", cfg.n_layer), ("n_head", cfg.n_head), ("n_embd", cfg.n_embd),
                ("dropout", cfg.dropout)]
    else:
        cfg = ref.book_config(cfg_t)
        model = ref.GPTModel(cfg)
        H, V = cfg["n_heads"], cfg["vocab_size"]
        keys = [(k, int(cfg[k]) if k == "qkv_bias" else cfg[k]) for k in ref.BOOK_KEYS]
    model.eval()
    # LayerNorms away from ones and zeros, so that hook_normalized (before
    # the weight and bias) differs from the LayerNorm's output
    g = torch.Generator().manual_seed(seed_ + 1000)
    with torch.no_grad():
        for name, prm in model.named_parameters():
            if any(k in name for k in ("ln_", "norm")):
                base = 1.0 if name.endswith(("weight", "scale")) else 0.0
                prm.copy_(base + 0.5 * torch.randn(prm.shape, generator=g))
    sd = model.state_dict()
    names = [k for k in sd if k != "lm_head.weight"]
    params = flat([sd[k] for k in names])
    return Family(family, model), H, V, keys, names, params


def make_case(family, cfg_t, seed_, B, T, idx_seed, ablations, patches):
    """The clean run's hooks, the ablated and patched runs' logits, the
    lens; the model is torch.manual_seed(seed_)'s with its LayerNorms
    randomised (make_model)."""
    fam, H, V, keys, names, params = make_model(family, cfg_t, seed_)
    g = torch.Generator().manual_seed(idx_seed)
    idx = torch.randint(0, V, (B, T), generator=g)
    corrupted = torch.randint(0, V, (B, T), generator=g)
    logits, clean = run(fam, idx, H, capture=True)
    with torch.no_grad():
        assert torch.equal(fam.model(idx)[0] if family == "GPT2" else fam.model(idx), logits)
    L = len(fam.blocks)
    assert len(clean) == L * len(HOOKS) + 1, sorted(clean)
    tensors = [("corrupted_idx", corrupted.numpy().astype("<i4")), ("params", params),
               ("logits", logits.numpy())]
    tensors += [(f"blocks.{l}.{h}", clean[f"blocks.{l}.{h}"].numpy())
                for l in range(L) for h in HOOKS]
    tensors.append(("ln_final.hook_normalized", clean["ln_final.hook_normalized"].numpy()))
    for (l, h, method) in ablations:
        out, _ = run(fam, idx, H, ablate=[(l, h, method)])
        tensors.append((f"ablate.{l}.{h}.{method}", out.numpy()))
    for (site, l, index) in patches:
        out, _ = run(fam, corrupted, H, patch=(site, l, index, clean))
        tensors.append((f"patch.{site}.{l}.{index}", out.numpy()))
    tensors.append(("lens", lens(fam, clean).numpy()))
    head = [("family", family)] + keys + [("seed", seed_), ("B", B), ("T", T),
                                          ("names", " ".join(names))]
    return idx, [f"{k} {v}" for k, v in head], tensors


# name, family, config (the family's order), seed, B, T, idx seed, ablations, patches
CASES = [
    ("gpt2_l2_h3_b2_t6", "GPT2", (37, 8, 2, 3, 12, 0.1), 21, 2, 6, 51,
     [(0, 1, "zero"), (1, 2, "mean"), (1, 0, "zero")],
     [("attn_head", 0, 2), ("attn_head", 1, 0), ("resid_pre", 1, 3), ("resid_pre", 0, 0),
      ("attn_out", 0, 5), ("mlp_out", 1, 2)]),
    ("gptmodel_l3_h2_t7_qkv", "GPTModel", (41, 9, 16, 2, 3, 0.1, True), 22, 1, 7, 52,
     [(2, 1, "mean"), (0, 0, "zero")],
     [("attn_head", 2, 1), ("attn_head", 0, 0), ("resid_pre", 2, 6), ("attn_out", 1, 1),
      ("mlp_out", 0, 4), ("mlp_out", 2, 6)]),
    ("gptmodel_l2_h4_b2_t5", "GPTModel", (29, 5, 16, 4, 2, 0.0, False), 23, 2, 5, 53,
     [(1, 3, "zero"), (0, 2, "mean")],
     [("attn_head", 1, 3), ("resid_pre", 0, 2), ("attn_out", 1, 4), ("mlp_out", 0, 0)]),
]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "hooks")
    print("torch", torch.__version__, "OPENBLAS_CORETYPE", os.environ.get("OPENBLAS_CORETYPE"))
    made = [(c[0], make_case(*c[1:])) for c in CASES]
    os.makedirs(out, exist_ok=True)
    for name, (idx, head, tensors) in made:
        write_gpt2(os.path.join(out, name + ".gpt2"), name, head, idx, tensors)
        print("wrote", name)


if __name__ == "__main__":
    main()
