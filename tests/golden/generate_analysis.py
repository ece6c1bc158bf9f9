#!/usr/bin/python3
"""Golden vectors for the analyses of a run (attn_lm_outputs.analysis and
loss; POST /model's "analysis"): written independently of the C code from
the published definitions, on PyTorch 1.13 with forward hooks, over the two
model families of the other model goldens (seed 003's GPT2, the book's
GPTModel; generate_hooks.make_model's models, LayerNorms randomised).

    OPENBLAS_CORETYPE=Haswell /usr/bin/python3 tests/golden/generate_analysis.py tests/golden/analysis

For each batch row b of the run (each row's scores are what that text alone
gives):

  entropy[b][l][h]          -(P * log P) summed over keys (0 log 0 = 0), mean over queries
  sink[b][l][h]             P[1:, 0].mean()
  previous_token, duplicate_token, induction [b][l][h]
                            TransformerLens's head_detector.py with its defaults
                            (error_measure "mul", exclude_bos and
                            exclude_current_token False): the detection patterns
                            of get_*_detection_pattern over row b's tokens, then
                            compute_head_attention_similarity_score:
                            (P * D).sum() / P.sum()
  rollout[b][l]             Abnar & Zuidema's compute_joint_attention (their
                            attention_graph_util.py, add_residual=True) over the
                            heads' mean of row b's maps (att.sum(axis=1) / n_heads),
                            in numpy as they wrote it
  loss[b]                   F.cross_entropy(logits[b, :-1], idx[b, 1:])
  importance[b][l][h]       loss[b] of the model with head h of block l's hook_z
                            zeroed (a forward pre-hook on the output projection:
                            generate_hooks.run's ablation) minus loss[b]; one
                            whole forward per head, TransformerLens's way
  importance_ablated        the same with the case's own ablations in every run
                            (they apply first, as the request's "ablate" does)

File format: golden_io.write_gpt2's (`*.gpt2`): the family's config keys,
`family`, B, T, `ablate` ("l h method; ..."), and tensors idx, params,
logits, loss, then analysis.NAME for each analysis above and
importance_ablated.

families/NAME.gpt2: the same for a decoder family's model folder of
tests/golden/families/ (families.py's forward, GQA and a sliding window),
its path in the header's `folder` instead of the config and the params;
heads are knocked out by a hook on o_proj's input (family_run).
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

import generate_families as gf
import generate_hooks as hk
from golden_io import write_gpt2

torch.set_num_threads(1)


# ==== TransformerLens's detection patterns (head_detector.py) ===============

def previous_token_pattern(tokens):
    d = torch.zeros(tokens.shape[-1], tokens.shape[-1])
    d[1:, :-1] = torch.eye(tokens.shape[-1] - 1)
    return torch.tril(d)


def duplicate_token_pattern(tokens):
    token_pattern = tokens.repeat(tokens.shape[-1], 1).numpy()
    eq_mask = np.equal(token_pattern, token_pattern.T).astype(int)
    np.fill_diagonal(eq_mask, 0)
    return torch.tril(torch.as_tensor(eq_mask.astype(int)).float())


def induction_pattern(tokens):
    dup = duplicate_token_pattern(tokens)
    shifted = torch.roll(dup, shifts=1, dims=1)
    zeros = torch.zeros(dup.shape[0], 1)
    return torch.tril(torch.cat((zeros, shifted[:, 1:]), dim=1))


def similarity(pattern, detection):
    """compute_head_attention_similarity_score, error_measure "mul"."""
    return ((pattern * detection).sum() / pattern.sum()).item()


DETECTORS = {"previous_token": previous_token_pattern, "duplicate_token": duplicate_token_pattern,
             "induction": induction_pattern}


# ==== Abnar & Zuidema's rollout (attention_graph_util.py) ====================

def compute_joint_attention(att_mat, add_residual=True):
    if add_residual:
        residual_att = np.eye(att_mat.shape[1])[None, ...]
        aug_att_mat = att_mat + residual_att
        aug_att_mat = aug_att_mat / aug_att_mat.sum(axis=-1)[..., None]
    else:
        aug_att_mat = att_mat
    joint_attentions = np.zeros(aug_att_mat.shape)
    layers = joint_attentions.shape[0]
    joint_attentions[0] = aug_att_mat[0]
    for i in np.arange(1, layers):
        joint_attentions[i] = aug_att_mat[i].dot(joint_attentions[i - 1])
    return joint_attentions


# ==== The analyses of one model on idx =======================================

def losses(logits, idx):
    return np.array([F.cross_entropy(logits[b, :-1], idx[b, 1:]).item() for b in range(idx.shape[0])])


def map_analyses(fam, idx, H):
    """Every analysis of the maps, [B][L][H] (rollout [B][L][T][T])."""
    _, cache = hk.run(fam, idx, H, capture=True)
    return of_patterns(cache, len(fam.blocks), idx, H)


def of_patterns(cache, L, idx, H):
    """The analyses of the hooks' blocks.L.attn.hook_pattern [B][H][T][T]."""
    B, T = idx.shape
    pats = torch.stack([cache[f"blocks.{l}.attn.hook_pattern"] for l in range(L)], dim=1)  # [B][L][H][T][T]
    out = {}
    plogp = torch.where(pats > 0, pats * torch.log(pats), torch.zeros_like(pats))
    out["entropy"] = (-plogp.sum(-1)).mean(-1).numpy()
    out["sink"] = pats[..., 1:, 0].mean(-1).numpy()
    for name, make in DETECTORS.items():
        score = np.zeros((B, L, H), dtype=np.float64)
        for b in range(B):
            d = make(idx[b:b + 1])
            for l in range(L):
                for h in range(H):
                    score[b, l, h] = similarity(pats[b, l, h].clone(), d)
        out[name] = score
    out["rollout"] = np.stack([compute_joint_attention(pats[b].numpy().sum(axis=1) / H) for b in range(B)])
    return out


def importance(fam, idx, H, own):
    """loss with each head's hook_z zeroed (after own ablations) minus loss with own alone."""
    L = len(fam.blocks)
    base, _ = hk.run(fam, idx, H, ablate=own)
    clean = losses(base, idx)
    out = np.zeros((idx.shape[0], L, H))
    for l in range(L):
        for h in range(H):
            logits, _ = hk.run(fam, idx, H, ablate=list(own) + [(l, h, "zero")])
            out[:, l, h] = losses(logits, idx) - clean
    return out


def make_ids(V, B, T, seed):
    """Row 0 a random half repeated (duplicates and induction to find), the
    others random."""
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, V, (B, T), generator=g)
    half = (T + 1) // 2
    idx[0, half:] = idx[0, :T - half]
    return idx


def make_case(family, cfg_t, seed_, B, T, idx_seed, own):
    fam, H, V, keys, names, params = hk.make_model(family, cfg_t, seed_)
    idx = make_ids(V, B, T, idx_seed)
    logits, _ = hk.run(fam, idx, H)
    tensors = [("params", params), ("logits", logits.numpy()), ("loss", losses(logits, idx))]
    for name, value in map_analyses(fam, idx, H).items():
        tensors.append(("analysis." + name, value))
    tensors.append(("analysis.importance", importance(fam, idx, H, ())))
    tensors.append(("importance_ablated", importance(fam, idx, H, own)))
    head = [("family", family)] + keys + [("seed", seed_), ("B", B), ("T", T),
                                          ("ablate", "; ".join("%d %d %s" % a for a in own))]
    return idx, ["%s %s" % (k, v) for k, v in head], tensors


# ==== A decoder family (tests/golden/families/, families.py) ==================

def family_run(config, sd, idx, ablate):
    """families.forward with heads knocked out: a hook on each o_proj's input
    (hook_z, [B][T][H * D]) zeroing a head, or setting it to its mean over
    the positions, as generate_hooks.run does on GPT2's c_proj."""
    real, H = gf.fam.linear, config["num_attention_heads"]
    outs = ("model.layers.%d.self_attn.o_proj", "gpt_neox.layers.%d.attention.dense")

    def linear(x, sd_, name):
        D = x.shape[-1] // H
        for (l, h, method) in ablate:
            if name in [o % l for o in outs]:
                x = x.clone()
                z = x[..., h * D:(h + 1) * D]
                x[..., h * D:(h + 1) * D] = 0 if method == "zero" else z.mean(dim=1, keepdim=True)
        return real(x, sd_, name)

    gf.fam.linear = linear
    try:
        return gf.fam.forward(config, sd, idx)
    finally:
        gf.fam.linear = real


def family_importance(config, sd, idx, H, L, own):
    clean = losses(family_run(config, sd, idx, own)[0], idx)
    out = np.zeros((idx.shape[0], L, H))
    for l in range(L):
        for h in range(H):
            out[:, l, h] = losses(family_run(config, sd, idx, list(own) + [(l, h, "zero")])[0], idx) - clean
    return out


def make_family_case(folder, B, T, idx_seed, own):
    """The analyses of a model folder of tests/golden/families/ (its
    config.json and model.safetensors, read as generate_families reads them
    back) on ids with a repeated half."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "families", folder)
    config = json.load(open(os.path.join(path, "config.json")))
    sd = gf.read_safetensors(os.path.join(path, "model.safetensors"))
    H, L = config["num_attention_heads"], config["num_hidden_layers"]
    idx = make_ids(config["vocab_size"], B, T, idx_seed)
    logits, rec = family_run(config, sd, idx, ())
    tensors = [("loss", losses(logits, idx))]
    for name, value in of_patterns(rec, L, idx, H).items():
        tensors.append(("analysis." + name, value))
    tensors.append(("analysis.importance", family_importance(config, sd, idx, H, L, ())))
    tensors.append(("importance_ablated", family_importance(config, sd, idx, H, L, own)))
    head = [("family", config["model_type"]), ("folder", "tests/golden/families/" + folder), ("B", B),
            ("T", T), ("ablate", "; ".join("%d %d %s" % a for a in own))]
    return idx, ["%s %s" % (k, v) for k, v in head], tensors


# folder of tests/golden/families/, B, T, idx seed, own ablations: every
# decoder family's folder (Llama, Mistral, Qwen, SmolLM2, Pythia, Gemma 3;
# grouped queries scored per query head)
FAMILY_CASES = [("mistral_window4_gqa4x2_f32", 2, 10, 64, [(0, 3, "mean")]),
                ("gemma3_layertypes_w4_bf16", 1, 9, 65, [(1, 0, "zero")]),
                ("gemma3_mha_w5_f16", 1, 8, 66, []),
                ("gemma3_pattern2_linear_f32", 2, 7, 67, [(0, 1, "mean")]),
                ("gemma3_tokenizer_f32", 1, 8, 68, []),
                ("llama2_mha_untied_f32", 2, 8, 69, [(1, 1, "zero")]),
                ("llama32_rope3_gqa6x2_tied_f16", 1, 9, 70, []),
                ("llama_bias_gqa4x2_untied_f32", 2, 7, 71, [(0, 2, "mean")]),
                ("mistral_nowindow_hd16_bf16", 1, 8, 72, []),
                ("pythia_parallel_h3_f16", 2, 8, 73, [(0, 2, "zero")]),
                ("pythia_sequential_h2_f32", 1, 9, 74, [(1, 1, "mean")]),
                ("qwen25_gqa6x2_tied_bf16", 1, 8, 75, []),
                ("qwen2_gqa3x1_untied_f16", 2, 7, 76, [(0, 0, "zero")]),
                ("qwen3_hd16_gqa4x2_tied_f32", 1, 8, 77, []),
                ("qwen3_hd8_gqa6x3_untied_bf16", 2, 8, 78, [(1, 5, "mean")]),
                ("smollm2_gqa3x1_tied_bf16", 1, 9, 79, []),
                ("smollm2_tokenizer_bf16", 1, 8, 80, [])]

# name, family, config (the family's order), seed, B, T, idx seed, own ablations
CASES = [
    ("gpt2_l2_h3_b2_t7", "GPT2", (13, 8, 2, 3, 12, 0.1), 31, 2, 7, 61, [(1, 0, "mean")]),
    ("gptmodel_l3_h2_t8_qkv", "GPTModel", (9, 10, 16, 2, 3, 0.1, True), 32, 1, 8, 62,
     [(0, 1, "zero"), (2, 1, "mean")]),
    ("gptmodel_l2_h4_b2_t5", "GPTModel", (11, 5, 16, 4, 2, 0.0, False), 33, 2, 5, 63, [(1, 3, "zero")]),
]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "analysis")
    print("torch", torch.__version__, "OPENBLAS_CORETYPE", os.environ.get("OPENBLAS_CORETYPE"))
    made = [(c[0], make_case(*c[1:])) for c in CASES]
    only = sys.argv[2:]  # folder names: those families alone (the others' files stay)
    made = [] if only else made
    made_families = [(c[0], make_family_case(*c)) for c in FAMILY_CASES if not only or c[0] in only]
    os.makedirs(os.path.join(out, "families"), exist_ok=True)
    for name, (idx, head, tensors) in made:
        write_gpt2(os.path.join(out, name + ".gpt2"), name, head, idx, tensors)
        print("wrote", name)
    for name, (idx, head, tensors) in made_families:
        write_gpt2(os.path.join(out, "families", name + ".gpt2"), name, head, idx, tensors)
        print("wrote families/" + name)


if __name__ == "__main__":
    main()
