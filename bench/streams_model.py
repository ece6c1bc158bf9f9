"""Random-weight checkpoints for bench/run_streams.sh, written once into DIR:
DIR/gpt2-124m (GPT-2 124M's shape, Hugging Face's names) and
DIR/smollm2-135m (SmolLM2-135M's shape), those named (default: gpt2-124m).

    /usr/bin/python3 bench/streams_model.py DIR [gpt2-124m] [smollm2-135m]
"""
import json, os, sys

import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "golden"))
from generate_checkpoint import write_safetensors  # noqa: E402

GPT2 = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 50257,
        "n_positions": 1024, "n_ctx": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
        "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5}


def gpt2_tensors(c):
    C, F = c["n_embd"], 4 * c["n_embd"]
    t = [("wte.weight", [c["vocab_size"], C]), ("wpe.weight", [c["n_positions"], C]),
         ("ln_f.weight", [C]), ("ln_f.bias", [C])]
    for i in range(c["n_layer"]):
        p = "h.%d." % i
        t += [(p + "ln_1.weight", [C]), (p + "ln_1.bias", [C]), (p + "attn.c_attn.weight", [C, 3 * C]),
              (p + "attn.c_attn.bias", [3 * C]), (p + "attn.c_proj.weight", [C, C]),
              (p + "attn.c_proj.bias", [C]), (p + "ln_2.weight", [C]), (p + "ln_2.bias", [C]),
              (p + "mlp.c_fc.weight", [C, F]), (p + "mlp.c_fc.bias", [F]),
              (p + "mlp.c_proj.weight", [F, C]), (p + "mlp.c_proj.bias", [C])]
    return t


def write(d, config, tensors):
    if os.path.exists(os.path.join(d, "model.safetensors")):
        return
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(0)
    out = []
    for k, shape in tensors:
        norm = k.endswith("norm.weight") or ".ln_" in k and k.endswith("weight") or k == "ln_f.weight"
        out.append((k, "F32", torch.ones(shape) if norm else torch.randn(shape) * 0.02))
    write_safetensors(os.path.join(d, "model.safetensors"), sorted(out), {"format": "pt"})
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)


def main():
    root, names = sys.argv[1], sys.argv[2:] or ["gpt2-124m"]
    if "gpt2-124m" in names:
        write(os.path.join(root, "gpt2-124m"), GPT2, gpt2_tensors(GPT2))
    if "smollm2-135m" not in names:
        return
    try:
        import families as fam
        sys.path.insert(0, here)
        from bench_families_torch import SHAPES
        c = SHAPES["smollm2-135m"]
        write(os.path.join(root, "smollm2-135m"), c,
              [(k, shape) for k, shape, kind in fam.tensor_table(c)])
    except ImportError as e:
        print("smollm2-135m skipped:", e, file=sys.stderr)


main()
