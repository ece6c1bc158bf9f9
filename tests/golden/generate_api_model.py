#!/usr/bin/python3
"""Golden replies of POST /model/gpt2 for both model families, made by
PyTorch 1.13 (Debian's python3-torch) with the classes themselves: the book's
chapter-4 GPTModel and seed 003's GPT2 (reference.py's copies, verbatim).

    /usr/bin/python3 tests/golden/generate_api_model.py tests/golden/api_model   (or `make golden`)

Each case is one request as a client sends it ("module", the config in the
family's own names, "init": {"seed": N} or a "state_dict", idx [T] or
[B][T], "training", "dropout_seed") and what PyTorch gives for it:

  init.seed     torch.manual_seed(N); model = GPTModel(cfg) (or GPT2); the
                forward continues that generator (training mode), or
                torch.manual_seed(dropout_seed) comes first
  state_dict    random tensors (not an initialisation: LayerNorm scales and
                shifts, biases, every weight drawn from a normal), loaded
                with load_state_dict into the model; the mask buffers left
                out of the request in some cases, given in others

and `expect`: logits [B][T][V], attn_weights [L][B][H][T][T] (the softmax
outputs), hidden_states [L + 1][B][T][C] (the input of every block, then the
final norm's output), dropout_masks (each dropout call's multipliers, named
after its nn.Dropout module, recorded by record.py) and params (the
model's state_dict; GPT2's lm_head.weight included, it is wte.weight). A
[T] request's tensors have no batch axis. Floats are written with 9
significant digits: they read back as the same float32.

tests/test_api_model_golden.c sends each request through api_handle and
compares: logits, maps and hidden states within 1e-4 + 1e-3 relative, masks
and params bit for bit. The configs, seeds and token ids are drawn from
random.Random(2026), so the file set is the same on every run.
"""
import json
import os
import random
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from record import ForwardRecorder  # noqa: E402
import reference as ref  # noqa: E402

torch.set_num_threads(1)


def as_json(a):
    a = np.asarray(a, dtype=np.float32)
    return {"shape": list(a.shape), "data": [float("%.9g" % x) for x in a.ravel().tolist()]}


# ==== the two families ======================================================

class Family:
    def __init__(self, name, keys, make, blocks, first_drop, last_norm, drop_names):
        self.name, self.keys, self.make = name, keys, make
        self.blocks, self.first_drop, self.last_norm = blocks, first_drop, last_norm
        self.drop_names = drop_names  # names of the dropout calls of block l


GPTMODEL = Family("GPTModel", ref.BOOK_KEYS, lambda c: ref.GPTModel(c),
                  lambda m: list(m.trf_blocks), lambda m: m.drop_emb, lambda m: m.final_norm,
                  lambda l: ["trf_blocks.%d.att.dropout" % l, "trf_blocks.%d.drop_shortcut.0" % l,
                             "trf_blocks.%d.drop_shortcut.1" % l])
GPT2 = Family("GPT2", ref.GPT2_KEYS,
              lambda c: ref.GPT2(ref.GPTConfig(**c)), lambda m: list(m.h),
              lambda m: m.drop, lambda m: m.ln_f,
              lambda l: ["h.%d.attn.resid_drop" % l, "h.%d.mlp.drop" % l])


def forward(fam, model, idx):
    """logits, maps, hidden states and dropout masks of one call."""
    blocks = fam.blocks(model)
    with ForwardRecorder(fam.first_drop(model), blocks, fam.last_norm(model)) as r, torch.no_grad():
        out = model(idx)
    logits = out[0] if isinstance(out, tuple) else out
    names = ["drop_emb" if fam is GPTMODEL else "drop"]
    for l in range(len(blocks)):
        names += fam.drop_names(l)
    assert len(r.masks) == len(names) and len(r.hidden) == len(blocks) + 1
    return logits, r.maps, r.hidden, dict(zip(names, r.masks))


def random_state_dict(model, g):
    """Every parameter from a normal (scales around 1), buffers as registered."""
    sd = {}
    for k, v in model.state_dict().items():
        if k.endswith(".mask") or k.endswith(".attn.bias"):
            sd[k] = v.clone()
        elif k.endswith(("scale", "ln_1.weight", "ln_2.weight", "ln_f.weight")):
            sd[k] = 1.0 + 0.2 * torch.randn(v.shape, generator=g)
        else:
            sd[k] = 0.4 * torch.randn(v.shape, generator=g)
    if "lm_head.weight" in sd:  # GPT2's head is wte itself
        sd["lm_head.weight"] = sd["wte.weight"]
    return sd


def case(fam, cfg, source, training, B, T, unbatched, keep_buffers, r):
    """One request and PyTorch's reply to it."""
    req = {"module": fam.name}
    req.update(cfg)
    idx = torch.randint(0, cfg["vocab_size"], (B, T), generator=torch.Generator().manual_seed(r.randrange(1 << 30)))
    seed = r.randrange(1 << 31)
    torch.manual_seed(seed)
    model = fam.make(cfg)
    if source == "seed":
        req["init"] = {"seed": seed}
    else:
        sd = random_state_dict(model, torch.Generator().manual_seed(r.randrange(1 << 30)))
        model.load_state_dict(sd)
        req["state_dict"] = {k: as_json(v) for k, v in sd.items()
                             if keep_buffers or not (k.endswith(".mask") or k.endswith(".attn.bias"))
                             if k != "lm_head.weight" or keep_buffers}
    model.train(training)
    if training and (source != "seed" or r.random() < 0.5):
        req["dropout_seed"] = r.randrange(1 << 31)
        torch.manual_seed(req["dropout_seed"])
    req["training"] = training
    req["idx"] = idx[0].tolist() if unbatched else idx.tolist()
    logits, maps, hidden, masks = forward(fam, model, idx)
    squeeze = (lambda t, axis: t.squeeze(axis)) if unbatched else (lambda t, axis: t)
    expect = {
        "logits": as_json(squeeze(logits, 0)),
        "attn_weights": as_json(squeeze(torch.stack(maps), 1) if maps else np.zeros((0,))),
        "hidden_states": as_json(squeeze(torch.stack(hidden), 1)),
        "dropout_masks": {k: as_json(squeeze(m, 0)) for k, m in masks.items()},
        "params": {k: as_json(v) for k, v in model.state_dict().items()},
    }
    return {"request": req, "expect": expect}


def random_config(fam, r, with_layers):
    H = r.choice([1, 2, 3, 4])
    values = {"vocab": r.randrange(5, 60), "context": r.randrange(4, 14), "layers": r.choice([1, 2, 3] if with_layers else [1, 1, 2, 2, 3, 0]),
              "heads": H, "width": H * r.choice([1, 2, 4, 6]), "dropout": r.choice([0.1, 0.25, 0.5, 0.1, 0.0, 1.0])}
    cols = ["vocab", "context", "width", "heads", "layers", "dropout"] if fam is GPTMODEL else \
        ["vocab", "context", "layers", "heads", "width", "dropout"]
    cfg = {k: values[c] for k, c in zip(fam.keys, cols)}
    if fam is GPTMODEL:
        cfg["qkv_bias"] = r.random() < 0.5
    return cfg


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "api_model")
    print("torch", torch.__version__, "OPENBLAS_CORETYPE", os.environ.get("OPENBLAS_CORETYPE"))
    r = random.Random(2026)
    cases = []
    # family, source, training, unbatched, buffers kept, count
    plan = [(GPTMODEL, "seed", False, False, False, 3), (GPTMODEL, "seed", True, False, False, 3),
            (GPTMODEL, "state_dict", False, True, False, 2), (GPTMODEL, "state_dict", True, False, True, 2),
            (GPTMODEL, "seed", True, True, False, 1),
            (GPT2, "seed", True, False, False, 2), (GPT2, "state_dict", False, True, True, 1),
            (GPT2, "state_dict", True, False, False, 1)]
    for fam, source, training, unbatched, keep, count in plan:
        for i in range(count):
            cfg = random_config(fam, r, source == "state_dict")
            if fam is GPTMODEL:  # both ways in every kind of case
                cfg["qkv_bias"] = i % 2 == 1
            T = r.randrange(1, cfg[fam.keys[1]] + 1)
            B = 1 if unbatched else r.randrange(1, 4)
            name = "%s_%s%s_%d" % (fam.name.lower(), source, "_train" if training else "", len(cases))
            c = case(fam, cfg, source, training, B, T, unbatched, keep, r)
            c["name"] = name
            cases.append(c)
    os.makedirs(out, exist_ok=True)
    for c in cases:
        with open(os.path.join(out, c["name"] + ".json"), "w") as f:
            json.dump(c, f, separators=(",", ":"))
            f.write("\n")
        print("wrote", c["name"])


if __name__ == "__main__":
    main()
