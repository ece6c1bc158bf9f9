#!/usr/bin/python3
"""Model folders of the encoder families and what PyTorch computes from them
(encoders.py, transcribed from transformers and sentence-transformers), for
the C test that loads each folder and compares (tests/test_api_encoders.c):

    OPENBLAS_CORETYPE=Haswell /usr/bin/python3 tests/golden/generate_encoders.py \
        tests/golden/encoders

writes tests/golden/encoders/<case>/ (or: make golden):

  config.json        as a released checkpoint of the family writes it (bert-base-uncased's,
                     all-MiniLM-L6-v2's, roberta-base's, distilbert-base-uncased's keys),
                     json.dumps with indent 2 and sorted keys
  model.safetensors  written by hand (no PyPI here), F32, F16 or BF16: the MLM class's
                     names ("bert.", "roberta.", "distilbert." and the head's), or
                     BertModel's bare names (sentence-transformers); some with what
                     released checkpoints also carry (bert.pooler and
                     cls.seq_relationship of BertForPreTraining, an I64
                     embeddings.position_ids buffer, LayerNorm.gamma/beta names,
                     roberta.pooler, lm_head.decoder.bias)
  modules.json, 1_Pooling/config.json, 2_Normalize/
                     sentence-transformers' files (all-MiniLM-L6-v2's layout), where
                     the case has them
  vocab.json, merges.txt
                     the RoBERTa case's byte-level tokenizer: <s> <pad> </s> <unk>, the
                     256 byte symbols (ids 4..259 in byte order), one merge "Ġ t" (260),
                     <mask> (261)
  expected.gpt2      golden_io.write_gpt2's format: header lines `family <class>`,
                     `model_type`, `dtype`, `B`, `T`, `mask_id`, `top_k`, `pooling`
                     (the modes and normalize); tensors idx [B][T] (i32, padding
                     filled with pad_token_id), attention_mask and token_type_ids (i32),
                     logits [B][T][V] (with an MLM head), hidden_states [L+1][B][T][C],
                     every hook of encoders.py for every block, pooler_output [B][C]
                     (with a pooler), embeddings [B][dim] (the folder's pooling, or
                     mean over real tokens without sentence-transformers' files),
                     fill_pos [M][2] (batch row, position of each mask token), fill_ids
                     and fill_probs [M][top_k] (softmax over the vocabulary, the k most
                     likely)

Random weights from a fixed seed, scaled so that logits and attention maps are
not saturated; padded batches of rows of different lengths. Before writing,
the generator checks the reference: the identities between the hooks, exact
zeros at padded keys, each row of a padded batch equal to the row alone, the
pooling against a plain mean, and the file read back.
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import encoders as enc  # noqa: E402
from generate_checkpoint import bytes_to_unicode, write_safetensors  # noqa: E402
from generate_families import DTYPES, TORCH_DTYPE  # noqa: E402
from golden_io import write_gpt2  # noqa: E402

torch.set_num_threads(1)

HOOKS = ["hook_resid_pre", "attn.hook_q", "attn.hook_k", "attn.hook_v", "attn.hook_attn_scores",
         "attn.hook_pattern", "attn.hook_z", "hook_attn_out", "hook_resid_mid", "ln1.hook_normalized",
         "mlp.hook_pre", "mlp.hook_post", "hook_mlp_out", "hook_resid_post", "ln2.hook_normalized",
         "hook_normalized_resid_post"]
TOP_K = 5

# ==== Configs as released checkpoints write them ==============================


def bert_config(V, C, H, F_, L, P, dtype, **extra):
    """bert-base-uncased's config.json keys (transformers 4.6)."""
    c = {"architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1,
         "gradient_checkpointing": False, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
         "hidden_size": C, "initializer_range": 0.02, "intermediate_size": F_,
         "layer_norm_eps": 1e-12, "max_position_embeddings": P, "model_type": "bert",
         "num_attention_heads": H, "num_hidden_layers": L, "pad_token_id": 0,
         "position_embedding_type": "absolute", "torch_dtype": TORCH_DTYPE[dtype],
         "transformers_version": "4.6.0.dev0", "type_vocab_size": 2, "use_cache": True,
         "vocab_size": V}
    c.update(extra)
    return c


def roberta_config(V, C, H, F_, L, P, dtype, **extra):
    """roberta-base's config.json keys."""
    c = {"architectures": ["RobertaForMaskedLM"], "attention_probs_dropout_prob": 0.1,
         "bos_token_id": 0, "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
         "hidden_size": C, "initializer_range": 0.02, "intermediate_size": F_,
         "layer_norm_eps": 1e-05, "max_position_embeddings": P, "model_type": "roberta",
         "num_attention_heads": H, "num_hidden_layers": L, "pad_token_id": 1,
         "torch_dtype": TORCH_DTYPE[dtype], "type_vocab_size": 1, "vocab_size": V}
    c.update(extra)
    return c


def distil_config(V, C, H, F_, L, P, dtype, **extra):
    """distilbert-base-uncased's config.json keys."""
    c = {"activation": "gelu", "architectures": ["DistilBertForMaskedLM"],
         "attention_dropout": 0.1, "dim": C, "dropout": 0.1, "hidden_dim": F_,
         "initializer_range": 0.02, "max_position_embeddings": P, "model_type": "distilbert",
         "n_heads": H, "n_layers": L, "pad_token_id": 0, "qa_dropout": 0.1,
         "seq_classif_dropout": 0.2, "sinusoidal_pos_embds": False, "tie_weights_": True,
         "torch_dtype": TORCH_DTYPE[dtype], "transformers_version": "4.6.0", "vocab_size": V}
    c.update(extra)
    return c


MEAN_NORM = {"pooling_mode_cls_token": False, "pooling_mode_max_tokens": False,
             "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_mean_tokens": True,
             "normalize": True}
CLS_MAX = {"pooling_mode_cls_token": True, "pooling_mode_max_tokens": True,
           "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_mean_tokens": False,
           "normalize": False}

# ==== Weights ================================================================


def tensor_table(config, layout):
    """(name, shape, kind) of every tensor, under the names the file uses:
    layout "mlm" (the MLM class: prefixed, its head), "pretraining" (that and
    BertForPreTraining's pooler and next-sentence head), "base" (BertModel's
    bare names with the pooler)."""
    mt = config["model_type"]
    if mt == "distilbert":
        C, F_, L = config["dim"], config["hidden_dim"], config["n_layers"]
    else:
        C, F_, L = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    V, P = config["vocab_size"], config["max_position_embeddings"]
    base = "" if layout == "base" else enc.base_prefix(config)
    t = [(base + "embeddings.word_embeddings.weight", (V, C), "embed"),
         (base + "embeddings.position_embeddings.weight", (P, C), "embed")]
    if mt != "distilbert":
        t.append((base + "embeddings.token_type_embeddings.weight", (config["type_vocab_size"], C),
                  "embed"))
    t += [(base + "embeddings.LayerNorm.weight", (C,), "norm"),
          (base + "embeddings.LayerNorm.bias", (C,), "bias")]

    def lin(name, o, i):
        return [(name + ".weight", (o, i), "linear"), (name + ".bias", (o,), "bias")]

    def ln(name):
        return [(name + ".weight", (C,), "norm"), (name + ".bias", (C,), "bias")]

    for l in range(L):
        if mt == "distilbert":
            p = "%stransformer.layer.%d." % (base, l)
            t += lin(p + "attention.q_lin", C, C) + lin(p + "attention.k_lin", C, C) + \
                lin(p + "attention.v_lin", C, C) + lin(p + "attention.out_lin", C, C) + \
                ln(p + "sa_layer_norm") + lin(p + "ffn.lin1", F_, C) + lin(p + "ffn.lin2", C, F_) + \
                ln(p + "output_layer_norm")
        else:
            p = "%sencoder.layer.%d." % (base, l)
            t += lin(p + "attention.self.query", C, C) + lin(p + "attention.self.key", C, C) + \
                lin(p + "attention.self.value", C, C) + lin(p + "attention.output.dense", C, C) + \
                ln(p + "attention.output.LayerNorm") + lin(p + "intermediate.dense", F_, C) + \
                lin(p + "output.dense", C, F_) + ln(p + "output.LayerNorm")
    if layout in ("base", "pretraining") or (mt == "roberta"):
        t += lin(base + "pooler.dense", C, C)
    if layout != "base":
        if mt == "bert":
            t += lin("cls.predictions.transform.dense", C, C) + \
                ln("cls.predictions.transform.LayerNorm") + [("cls.predictions.bias", (V,), "bias")]
        elif mt == "roberta":
            t += lin("lm_head.dense", C, C) + ln("lm_head.layer_norm") + [("lm_head.bias", (V,), "bias")]
        else:
            t += lin("vocab_transform", C, C) + ln("vocab_layer_norm") + \
                [("vocab_projector.bias", (V,), "bias")]
    if layout == "pretraining":
        t += lin("cls.seq_relationship", 2, C)
    return t


def random_state_dict(config, layout, seed):
    """Linear weights N(0, 1.5 / sqrt(in)) (queries and keys 2 / sqrt(in), so that
    the maps are neither flat nor one-hot), embeddings N(0, 0.5), biases N(0, 0.1),
    LayerNorm weights 1 + N(0, 0.1)."""
    g = torch.Generator().manual_seed(seed)
    sd = {}
    for name, shape, kind in tensor_table(config, layout):
        x = torch.randn(*shape, generator=g)
        if kind == "linear":
            qk = any(k in name for k in ("self.query", "self.key", "q_lin", "k_lin"))
            x = x * ((2.0 if qk else 1.5) / math.sqrt(shape[1]))
        elif kind == "embed":
            x = x * 0.5
        elif kind == "bias":
            x = x * 0.1
        elif kind == "norm":
            x = 1.0 + 0.1 * x
        sd[name] = x
    return sd


def stored(sd, dtype):
    """The weights as the file holds them, widened back to float32."""
    return {k: v.to(DTYPES[dtype]).to(torch.float32) for k, v in sd.items()}


# ==== Inputs ==================================================================


def batch(config, rows, types=None):
    """rows: lists of ids of different lengths, padded on the right with
    pad_token_id: idx, attention_mask, token_type_ids (types' rows, or 0)."""
    T, pad = max(len(r) for r in rows), config.get("pad_token_id", 0)
    idx = torch.full((len(rows), T), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), T), dtype=torch.long)
    tt = torch.zeros((len(rows), T), dtype=torch.long)
    for b, r in enumerate(rows):
        idx[b, :len(r)] = torch.tensor(r)
        mask[b, :len(r)] = 1
        if types:
            tt[b, :len(r)] = torch.tensor(types[b])
    return idx, mask, tt


def random_rows(g, lengths, lo, hi, cls, sep, mask_id, masks):
    """Rows of random ids in [lo, hi) between cls and sep, with a mask token
    at the positions masks names (row, position)."""
    rows = []
    for b, n in enumerate(lengths):
        r = [cls] + torch.randint(lo, hi, (n - 2,), generator=g).tolist() + [sep]
        rows.append(r)
    for b, t in masks:
        rows[b][t] = mask_id
    return rows


def pair_rows(g, shapes, lo, hi, mask_id, masks):
    """[CLS] A [SEP] B [SEP] rows with token types 0 for A (and its [CLS] and
    [SEP]) and 1 for B and its [SEP]: BertTokenizer's pair template (ids 2 and 3
    stand for [CLS] and [SEP])."""
    rows, types = [], []
    for na, nb in shapes:
        a = torch.randint(lo, hi, (na,), generator=g).tolist()
        b = torch.randint(lo, hi, (nb,), generator=g).tolist()
        rows.append([2] + a + [3] + b + [3])
        types.append([0] * (na + 2) + [1] * (nb + 1))
    for b, t in masks:
        rows[b][t] = mask_id
    return rows, types


# ==== Checks of the reference =================================================


def check_hooks(config, out, mask):
    """Identities between the recorded hooks, and the padding: a padded key's
    weight is exactly 0 for every query."""
    rec, L = out["hooks"], len(out["hidden_states"]) - 1
    close = lambda a, b, tol=2e-5: torch.allclose(a, b, atol=tol, rtol=tol)
    pad = (mask == 0)
    for l in range(L):
        p = "blocks.%d." % l
        s, pat = rec[p + "attn.hook_attn_scores"], rec[p + "attn.hook_pattern"]
        padk = pad[:, None, None, :].expand_as(s)
        assert torch.equal(torch.isinf(s), padk), p
        assert torch.all(pat.masked_select(padk) == 0), p
        assert close(pat.sum(-1), torch.ones(pat.shape[:-1]), 1e-6)
        assert close(pat, torch.softmax(s, dim=-1), 1e-6)
        v = rec[p + "attn.hook_v"].permute(0, 2, 1, 3)
        assert close(rec[p + "attn.hook_z"], (pat @ v).transpose(1, 2)), p
        assert torch.equal(rec[p + "hook_resid_mid"], rec[p + "hook_resid_pre"] + rec[p + "hook_attn_out"])
        assert torch.equal(out["hidden_states"][l], rec[p + "hook_resid_pre"])
        assert torch.equal(out["hidden_states"][l + 1], rec[p + "hook_normalized_resid_post"])
    print("  hooks: padded keys -inf / weight 0, softmax, z, residual sums, hidden states hold")


def check_rows_alone(config, sd, idx, mask, tt, out):
    """Each row of the padded batch equals the row run alone, unpadded (the
    padding changes nothing the real tokens see)."""
    worst = 0.0
    for b in range(idx.shape[0]):
        n = int(mask[b].sum())
        one = enc.forward(config, sd, idx[b:b + 1, :n], mask[b:b + 1, :n], tt[b:b + 1, :n])
        for key in ("last_hidden_state", "logits"):
            if key in out:
                d = float((one[key][0] - out[key][b, :n]).abs().max())
                worst = max(worst, d)
    assert worst < 1e-4, worst
    print("  padding: every row equals the row alone (max |diff| %.2g)" % worst)


def check_pooling(pooling, h, mask, emb):
    """Mean pooling as a plain loop over each row's real tokens."""
    if not pooling.get("pooling_mode_mean_tokens") or pooling.get("pooling_mode_cls_token"):
        return
    for b in range(h.shape[0]):
        n = int(mask[b].sum())
        m = h[b, :n].mean(0)
        if pooling.get("normalize"):
            m = m / m.norm()
        assert torch.allclose(m, emb[b, :h.shape[2]], atol=1e-6), b
    print("  pooling: the mean over each row's real tokens%s" %
          (", normalised" if pooling.get("normalize") else ""))


def fill_mask(logits, idx, mask_id):
    """Each mask token's top_k ids and probabilities (softmax over the vocabulary):
    what transformers' FillMaskPipeline computes (top_k)."""
    pos = [(b, t) for b in range(idx.shape[0]) for t in range(idx.shape[1]) if idx[b, t] == mask_id]
    ids, probs = [], []
    for b, t in pos:
        p = torch.softmax(logits[b, t], dim=-1)
        v, i = torch.topk(p, TOP_K)
        probs.append(v)
        ids.append(i)
        gap = float(v[TOP_K - 1] - (torch.topk(p, TOP_K + 1).values[TOP_K]))
        assert gap > 1e-4, "a near tie in the top tokens: change the seed"
    return torch.tensor(pos, dtype=torch.int32), torch.stack(ids).int(), torch.stack(probs)


# ==== Cases ===================================================================


def roberta_vocab():
    """The RoBERTa case's tokenizer: vocab.json and merges.txt text."""
    u = bytes_to_unicode()
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for b in range(256):
        vocab[u[b]] = 4 + b
    vocab[u[32] + "t"] = 260
    vocab["<mask>"] = 261
    return json.dumps(vocab, ensure_ascii=False), "#version: 0.2\n%s t\n" % u[32]


def cases():
    g = torch.Generator().manual_seed(7)
    out = []
    # BertForPreTraining's checkpoint under BertForMaskedLM: pairs with token types
    c = bert_config(120, 32, 4, 64, 2, 40, "F32")
    rows, types = pair_rows(g, [(3, 4), (2, 2), (4, 1)], 5, 120, 4, [(0, 2), (1, 4), (2, 7)])
    out.append(dict(name="bert_mlm_pairs_f32", config=c, dtype="F32", layout="pretraining",
                    seed=11, rows=rows, types=types, mask_id=4, pooling=None, gamma=True))
    # all-MiniLM-L6-v2's layout: BertModel's bare names, mean pooling, normalised
    c = bert_config(100, 48, 4, 96, 3, 64, "BF16", architectures=["BertModel"],
                    gradient_checkpointing=False, transformers_version="4.8.2")
    rows = random_rows(g, [7, 4, 9, 5], 5, 100, 1, 2, 4, [])
    out.append(dict(name="minilm_st_mean_norm_bf16", config=c, dtype="BF16", layout="base",
                    seed=12, rows=rows, types=None, mask_id=None, pooling=MEAN_NORM))
    # RoBERTa: positions past padding_idx, a byte-level tokenizer, cls + max pooling
    c = roberta_config(262, 32, 2, 96, 2, 34, "F16")
    rows = random_rows(g, [8, 5, 6], 4, 260, 0, 2, 261, [(0, 3), (2, 4)])
    out.append(dict(name="roberta_mlm_f16", config=c, dtype="F16", layout="mlm", seed=13,
                    rows=rows, types=None, mask_id=261, pooling=CLS_MAX, tokenizer=True))
    # DistilBERT
    c = distil_config(90, 32, 4, 80, 2, 24, "BF16")
    rows = random_rows(g, [6, 9], 5, 90, 2, 3, 4, [(0, 1), (1, 5), (1, 6)])
    out.append(dict(name="distilbert_mlm_bf16", config=c, dtype="BF16", layout="mlm", seed=14,
                    rows=rows, types=None, mask_id=4, pooling=None))
    return out


def make_case(k):
    config, layout = k["config"], k["layout"]
    sd = stored(random_state_dict(config, layout, k["seed"]), k["dtype"])
    idx, mask, tt = batch(config, k["rows"], k["types"])
    out = enc.forward(config, sd, idx, mask, tt)
    pats = torch.cat([v[..., :, :].max(-1).values.flatten() for n, v in out["hooks"].items()
                      if n.endswith("hook_pattern")])
    print("%s: %s, B %d T %d, logits std %.2f, pattern row max median %.2f" % (
        k["name"], config["architectures"][0], idx.shape[0], idx.shape[1],
        float(out["logits"].std()) if "logits" in out else 0.0, float(pats.median())))
    check_hooks(config, out, mask)
    check_rows_alone(config, sd, idx, mask, tt, out)
    pooling = k["pooling"] or {"pooling_mode_mean_tokens": True}
    emb = enc.pool(pooling, out["last_hidden_state"], mask)
    if pooling.get("normalize"):
        emb = enc.normalize(emb)
    check_pooling(pooling, out["last_hidden_state"], mask, emb)
    L = len(out["hidden_states"]) - 1
    tensors = [("attention_mask", mask.numpy().astype("<i4")),
               ("token_type_ids", tt.numpy().astype("<i4"))]
    if "logits" in out:
        tensors.append(("logits", out["logits"].numpy()))
    tensors.append(("hidden_states", torch.stack(out["hidden_states"]).numpy()))
    tensors += [("blocks.%d.%s" % (l, h), out["hooks"]["blocks.%d.%s" % (l, h)].contiguous().numpy())
                for l in range(L) for h in HOOKS]
    if "pooler_output" in out:
        tensors.append(("pooler_output", out["pooler_output"].numpy()))
    tensors.append(("embeddings", emb.numpy()))
    if k["mask_id"] is not None and "logits" in out:
        pos, ids, probs = fill_mask(out["logits"], idx, k["mask_id"])
        tensors += [("fill_pos", pos.numpy()), ("fill_ids", ids.numpy()), ("fill_probs", probs.numpy())]
    modes = [m for m in ("cls_token", "max_tokens", "mean_tokens") if pooling.get("pooling_mode_" + m)]
    head = ["family %s" % config["architectures"][0], "model_type %s" % config["model_type"],
            "dtype %s" % k["dtype"], "B %d" % idx.shape[0], "T %d" % idx.shape[1],
            "mask_id %d" % (k["mask_id"] if k["mask_id"] is not None else -1), "top_k %d" % TOP_K,
            "pooling %s%s" % ("+".join(modes), " normalize" if pooling.get("normalize") else "")]
    return dict(k, sd=sd, idx=idx, head=head, tensors=tensors)


def file_tensors(c):
    """The file's tensors: the weights in sorted name order, LayerNorm.gamma and
    .beta names where the case keeps the old spelling, the I64 position_ids
    buffer of the pretraining checkpoint, RoBERTa's tied decoder bias."""
    out = []
    for k in sorted(c["sd"]):
        name = k
        if c.get("gamma") and ".LayerNorm." in k:
            name = k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        out.append((name, c["dtype"], c["sd"][k]))
    if c["layout"] == "pretraining":
        P = c["config"]["max_position_embeddings"]
        out.append(("bert.embeddings.position_ids", "I64", torch.arange(P)[None, :]))
    if c["config"]["model_type"] == "roberta":
        out.append(("lm_head.decoder.bias", c["dtype"], c["sd"]["lm_head.bias"]))
    return out


def write_pooling(d, pooling, C):
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if pooling.get("normalize"):
        # the hub's folders have no 2_Normalize directory (it holds no file): the
        # module's type in modules.json is what says so
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                        "type": "sentence_transformers.models.Normalize"})
    with open(os.path.join(d, "modules.json"), "w") as f:
        json.dump(modules, f, indent=2)
    os.makedirs(os.path.join(d, "1_Pooling"), exist_ok=True)
    cfg = {"word_embedding_dimension": C}
    cfg.update({k: v for k, v in pooling.items() if k.startswith("pooling_mode")})
    with open(os.path.join(d, "1_Pooling", "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(d, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": 16, "do_lower_case": False}, f, indent=2)


def write_case(c, out):
    d = os.path.join(out, c["name"])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write(json.dumps(c["config"], indent=2, sort_keys=True) + "\n")
    path = os.path.join(d, "model.safetensors")
    tensors = file_tensors(c)
    write_safetensors(path, tensors, {"format": "pt"})
    back = read_back(path)
    for name, _, t in tensors:
        assert torch.equal(back[name], t.to(back[name].dtype)), name
    if c["pooling"]:
        C = c["config"].get("hidden_size", c["config"].get("dim"))
        write_pooling(d, c["pooling"], C)
    if c.get("tokenizer"):
        vocab, merges = roberta_vocab()
        with open(os.path.join(d, "vocab.json"), "w") as f:
            f.write(vocab)
        with open(os.path.join(d, "merges.txt"), "w") as f:
            f.write(merges)
    write_gpt2(os.path.join(d, "expected.gpt2"), c["name"], c["head"], c["idx"], c["tensors"])


def read_back(path):
    """An independent reader of the file written (numpy, not torch): F32, F16
    (numpy's float16), BF16 (the high half of a float32) and I64."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    assert n % 8 == 0, "header not padded to 8 bytes"
    header = json.loads(raw[8:8 + n].decode())
    assert header.pop("__metadata__") == {"format": "pt"}
    data, out, end = raw[8 + n:], {}, 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = info["data_offsets"]
        assert b == end, "gap or overlap before " + name
        end = e
        kind = {"F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8"}[info["dtype"]]
        a = np.frombuffer(data[b:e], kind)
        if info["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        out[name] = torch.from_numpy(a.astype(np.int64 if kind == "<i8" else np.float32)
                                     .reshape(info["shape"]).copy())
    assert end == len(data), "trailing bytes"
    return out


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "encoders")
    print("torch", torch.__version__, "OPENBLAS_CORETYPE", os.environ.get("OPENBLAS_CORETYPE"))
    made = [make_case(k) for k in cases()]
    for c in made:
        write_case(c, out)
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(out) for f in fs)
    print("wrote %d cases to %s, %d bytes (files read back and compared)" % (len(made), out, total))


if __name__ == "__main__":
    main()
