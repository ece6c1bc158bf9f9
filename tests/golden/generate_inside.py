#!/usr/bin/python3
"""Golden replies for the look inside a model over the API (POST /model/gpt2
with hook names in "return", "ablate", "patch" and "logit_lens"): PyTorch
1.13 with forward hooks on the same weights, both model families, the
classes and hooks of generate_hooks.py (itself importing seed 003's GPT2
from generate_gpt2.py and the book's GPTModel from generate_gptmodel.py).

    OPENBLAS_CORETYPE=Haswell /usr/bin/python3 tests/golden/generate_inside.py tests/golden/inside

Each file is one model (a family, its config, torch.manual_seed(seed), its
LayerNorms randomised as generate_hooks.make_model does) and a list of
requests, each with the reply fields it must hold:

  {"family", "batched", "model": {...}, "requests": [{"name", "request": {...},
   "expect": {...}}]}

A request is "model"'s fields and its own. The model is given by its state_dict (seed 003's names for GPT2;
the book's for GPTModel, with "module": "GPTModel" and the chapter's config
keys), the ids as [T] or [B][T] (the batch axis then stays in every reply
tensor), and:

  hooks          every TransformerLens hook of every block ("blocks.*.NAME")
                 and ln_final.hook_normalized: "cache" and "logits"
  ablate         two heads knocked out (zero and mean): "logits" and part of
                 the cache, from the ablated run
  patch_SITE     a full sweep of one site (attn_head: every layer and head;
                 resid_pre, attn_out, mlp_out, resid_mid, resid_post: every
                 layer and position): "patch": {"result", "clean", "corrupted"}
  patch_ablated  a sweep with an ablation, which applies to every run
  lens           "logit_lens": {"ids", "probs"} (k = 3)

Masked entries of hook_attn_scores are -inf in PyTorch, null here (JSON).
resid_mid and resid_post patches are hooks of this script (generate_hooks'
run() has the other four): the block's output replaced at one position,
and the attention's output replaced by clean resid_mid - resid_pre there.
"""
import json
import os
import sys

import numpy as np
import torch

import generate_hooks as hk

torch.set_num_threads(1)


def tolist(a, batched):
    """A float tensor as nested lists, -inf as None; without its batch axis
    (the first) unless batched."""
    a = np.asarray(a, dtype=np.float32)
    if not batched:
        a = a[0]
    out = a.astype(np.float64).tolist()

    def fix(x):
        if isinstance(x, list):
            return [fix(v) for v in x]
        return None if x == float("-inf") else x

    return fix(out)


def state_dict(fam):
    sd = fam.model.state_dict()
    skip = ("lm_head.weight",)
    return {k: v.numpy().astype(np.float64).tolist() for k, v in sd.items()
            if k not in skip and not k.endswith((".attn.bias", ".att.mask"))}


def extra_patch_run(fam, idx, H, site, l, index, clean, ablate):
    """A run with resid_mid or resid_post of block l at position `index`
    taken from the clean run (hooks of this script)."""
    block = fam.blocks[l]
    attn = fam.parts(block)["attn"]
    pre = f"blocks.{l}."
    seen = {}
    handles = [block.register_forward_pre_hook(lambda m, inp: seen.__setitem__("x", inp[0]))]
    if site == "resid_post":
        def post(m, inp, out):
            out = out.clone()
            out[:, index] = clean[pre + "hook_resid_post"][:, index]
            return out
        handles.append(block.register_forward_hook(post))
    else:
        def mid(m, inp, out):
            out = out.clone()
            out[:, index] = clean[pre + "hook_resid_mid"][:, index] - seen["x"][:, index]
            return out
        handles.append(attn.register_forward_hook(mid))
    try:
        logits, _ = hk.run(fam, idx, H, ablate=ablate)
    finally:
        for h in handles:
            h.remove()
    return logits


def patched_logits(fam, idx, H, site, l, index, clean, ablate):
    if site in ("resid_mid", "resid_post"):
        return extra_patch_run(fam, idx, H, site, l, index, clean, ablate)
    logits, _ = hk.run(fam, idx, H, ablate=ablate, patch=(site, l, index, clean))
    return logits


def sweep(fam, idx, corrupted, H, site, diff, ablate):
    """clean, corrupted [B] and result [B][L][H or T]: last position's
    logit[a] - logit[b]."""
    a, b = diff
    metric = lambda lg: (lg[:, -1, a] - lg[:, -1, b]).numpy()
    clean_logits, clean = hk.run(fam, idx, H, capture=True, ablate=ablate)
    corr_logits, _ = hk.run(fam, corrupted, H, ablate=ablate)
    L, (B, T) = len(fam.blocks), idx.shape
    X = H if site == "attn_head" else T
    result = np.zeros((B, L, X), dtype=np.float32)
    for l in range(L):
        for x in range(X):
            result[:, l, x] = metric(patched_logits(fam, corrupted, H, site, l, x, clean, ablate))
    return metric(clean_logits), metric(corr_logits), result


def lens_top(fam, idx, H, k):
    _, clean = hk.run(fam, idx, H, capture=True)
    probs = torch.softmax(hk.lens(fam, clean), dim=-1)  # [L + 1][B][T][V]
    top = torch.topk(probs, k, dim=-1)
    return top.indices.numpy(), top.values.numpy()


def model_fields(family, keys, fam, idx, batched):
    req = {} if family == "GPT2" else {"module": "GPTModel"}
    req.update({k: (bool(v) if k == "qkv_bias" else v) for k, v in keys})
    req["state_dict"] = state_dict(fam)
    ids = idx.tolist()
    req["idx"] = ids if batched else ids[0]
    return req


def requests(fam, H, idx, corrupted, batched, ablate, diff):
    L = len(fam.blocks)
    base = {}
    cor = corrupted.tolist() if batched else corrupted.tolist()[0]
    out = []
    names = [f"blocks.*.{h}" for h in hk.HOOKS] + ["ln_final.hook_normalized"]
    logits, clean = hk.run(fam, idx, H, capture=True)
    out.append({"name": "hooks", "request": dict(base, **{"return": ["logits"] + names}),
                "expect": {"logits": tolist(logits, batched),
                           "cache": {n: tolist(t, batched) for n, t in clean.items()}}})
    logits, abl = hk.run(fam, idx, H, capture=True, ablate=ablate)
    keep = [n for n in abl if n.endswith(("attn.hook_z", "hook_resid_post", "hook_pattern"))]
    abl_json = [{"layer": l, "head": h, "method": m} for l, h, m in ablate]
    out.append({"name": "ablate",
                "request": dict(base, ablate=abl_json, **{"return": ["logits", "blocks.*.attn.hook_z",
                                                                      "blocks.*.hook_resid_post",
                                                                      "blocks.*.attn.hook_pattern"]}),
                "expect": {"logits": tolist(logits, batched),
                           "cache": {n: tolist(abl[n], batched) for n in keep}}})
    for site in ("attn_head", "resid_pre", "attn_out", "mlp_out", "resid_mid", "resid_post"):
        c, r, res = sweep(fam, idx, corrupted, H, site, diff, [])
        patch = {"corrupted_idx": cor, "site": site, "logit_diff": list(diff)}
        out.append({"name": "patch_" + site,
                    "request": dict(base, patch=patch, **{"return": ["next_token"]}),
                    "expect": {"patch": {"result": tolist(res, batched), "clean": tolist(c, batched),
                                         "corrupted": tolist(r, batched)}}})
    c, r, res = sweep(fam, idx, corrupted, H, "attn_head", diff, ablate[:1])
    patch = {"corrupted_idx": cor, "site": "attn_head", "logit_diff": list(diff)}
    out.append({"name": "patch_ablated",
                "request": dict(base, patch=patch, ablate=abl_json[:1], **{"return": []}),
                "expect": {"patch": {"result": tolist(res, batched), "clean": tolist(c, batched),
                                     "corrupted": tolist(r, batched)}}})
    ids, probs = lens_top(fam, idx, H, 3)
    lens_ids = ids.tolist() if batched else ids[:, 0].tolist()
    lens_probs = probs.astype(np.float64).tolist() if batched else probs[:, 0].astype(np.float64).tolist()
    out.append({"name": "lens", "request": dict(base, logit_lens={"k": 3}, **{"return": []}),
                "expect": {"logit_lens": {"ids": lens_ids, "probs": lens_probs}}})
    assert L == len(fam.blocks)
    return out


def make_file(family, cfg_t, seed_, B, T, batched, idx_seed, ablate, diff):
    fam, H, V, keys, _, _ = hk.make_model(family, cfg_t, seed_)
    if family == "GPT2":
        keys = [kv for kv in keys]
    g = torch.Generator().manual_seed(idx_seed)
    idx = torch.randint(0, V, (B, T), generator=g)
    corrupted = idx.clone()
    corrupted[:, T // 2] = (idx[:, T // 2] + 1) % V  # one token changed, as in IOI
    corrupted[:, 1] = torch.randint(0, V, (B,), generator=g)
    return {"family": family, "batched": batched,
            "model": model_fields(family, keys, fam, idx, batched),
            "requests": requests(fam, H, idx, corrupted, batched, ablate, diff)}


# name, family, config (the family's order), seed, B, T, batched, idx seed, ablations, logit_diff
CASES = [
    ("gpt2_l2_h3_t6", "GPT2", (37, 8, 2, 3, 12, 0.1), 31, 1, 6, False, 61,
     [(0, 1, "zero"), (1, 2, "mean")], (3, 5)),
    ("gpt2_l3_h2_b2_t5", "GPT2", (23, 7, 3, 2, 8, 0.0), 32, 2, 5, True, 62,
     [(2, 0, "mean"), (0, 1, "zero")], (0, 7)),
    ("gptmodel_l2_h2_t6_qkv", "GPTModel", (29, 8, 12, 2, 2, 0.1, True), 33, 1, 6, False, 63,
     [(1, 1, "zero"), (0, 0, "mean")], (2, 9)),
    ("gptmodel_l3_h4_b2_t4", "GPTModel", (31, 6, 16, 4, 3, 0.0, False), 34, 2, 4, True, 64,
     [(0, 3, "zero"), (2, 1, "mean")], (4, 1)),
]


def short(x):
    """A float32 value with the fewest digits that read back to it."""
    f = np.float32(x)
    for digits in range(6, 10):
        t = "%.*g" % (digits, f)
        if np.float32(t) == f:
            return t
    return repr(float(x))


def dump(v):
    """JSON text with every float as a float32's shortest text."""
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k) + ":" + dump(x) for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(dump(x) for x in v) + "]"
    if isinstance(v, float):
        return short(v)
    return json.dumps(v)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "inside")
    print("torch", torch.__version__, "OPENBLAS_CORETYPE", os.environ.get("OPENBLAS_CORETYPE"))
    os.makedirs(out, exist_ok=True)
    for c in CASES:
        data = make_file(*c[1:])
        text = dump(data) + "\n"
        with open(os.path.join(out, c[0] + ".json"), "w") as f:
            f.write(text)
            f.write("\n")
        print("wrote", c[0], len(data["requests"]), "requests")


if __name__ == "__main__":
    main()
