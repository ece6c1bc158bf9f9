#!/usr/bin/python3
"""Model folders of the decoder families and what PyTorch computes from
them (families.py, transcribed from transformers), for the C test that
loads each folder and compares:

    OPENBLAS_CORETYPE=Haswell /usr/bin/python3 tests/golden/generate_families.py \
        tests/golden/families

writes tests/golden/families/<case>/ (or: make golden):

  config.json        as a released checkpoint of the family writes it (transformers
                     4.x keys: "architectures", "model_type", rope_theta and
                     rope_scaling at the top level, torch_dtype, tie_word_embeddings;
                     Pythia's rotary_pct, rotary_emb_base, use_parallel_residual;
                     Gemma 3's layer_types or sliding_window_pattern), json.dumps with
                     indent 2 and sorted keys as save_pretrained does
  model.safetensors  the state_dict under the family's Hugging Face names (no tied
                     head), written by hand (no PyPI here): 8-byte little-endian
                     header length, the JSON header with "__metadata__" {"format":
                     "pt"} padded with spaces to a multiple of 8, the tensors' bytes
                     in sorted name order, F32, F16 or BF16
  expected.gpt2      golden_io.write_gpt2's format: header lines `family <class>`,
                     `model_type`, `dtype`, `B`, `T`, `generate N`, `seed`; tensors idx
                     [B][T] (i32), logits [B][T][V], every hook of families.py for
                     every block under its TransformerLens name ("blocks.1.attn.hook_rot_q"),
                     ln_final.hook_normalized, and generated (i32 [N]): the greedy
                     continuation of idx's first row, the forward pass recomputed
                     at each step

The reference computes in float32 from the weights as the file stores them
(F16/BF16 values widened exactly). Random weights from a fixed seed, scaled
like real initialisations so that logits and attention maps are not
saturated. Before writing anything the generator checks the reference
(check_* below): transformers' own printed RoPE frequencies, the identities
between hooks, grouped-query attention against the same model with its
key/value heads copied out, an independent Llama written in Meta's layout
(interleaved complex RoPE, permuted q/k rows), the file read back, and a
margin between the top two logits of every greedy step.
"""
import json
import math
import os
import shutil
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import families as fam  # noqa: E402
from generate_checkpoint import write_safetensors  # noqa: E402
from golden_io import write_gpt2  # noqa: E402

torch.set_num_threads(1)

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
TORCH_DTYPE = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}

# every hook of a block, in the order the file lists them
HOOKS = ["hook_resid_pre", "ln1.hook_normalized", "attn.hook_q", "attn.hook_k", "attn.hook_v",
         "attn.hook_rot_q", "attn.hook_rot_k", "attn.hook_attn_scores", "attn.hook_pattern",
         "attn.hook_z", "hook_attn_out", "hook_resid_mid", "ln2.hook_normalized", "mlp.hook_pre",
         "mlp.hook_pre_linear", "mlp.hook_post", "hook_mlp_out", "hook_resid_post"]


# ==== Configs as released checkpoints write them ==============================


def llama_config(V, C, H, Hkv, F_, L, dtype, **extra):
    """TinyLlama / Llama 2's config.json keys (transformers 4.35-4.45)."""
    c = {"architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
         "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": C,
         "initializer_range": 0.02, "intermediate_size": F_, "max_position_embeddings": 2048,
         "model_type": "llama", "num_attention_heads": H, "num_hidden_layers": L,
         "num_key_value_heads": Hkv, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
         "rope_scaling": None, "rope_theta": 10000.0, "tie_word_embeddings": False,
         "torch_dtype": TORCH_DTYPE[dtype], "transformers_version": "4.35.0", "use_cache": True,
         "vocab_size": V}
    c.update(extra)
    return c


def mistral_config(V, C, H, Hkv, F_, L, dtype, **extra):
    """Mistral-7B-v0.1's config.json keys."""
    c = {"architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
         "hidden_act": "silu", "hidden_size": C, "initializer_range": 0.02,
         "intermediate_size": F_, "max_position_embeddings": 32768, "model_type": "mistral",
         "num_attention_heads": H, "num_hidden_layers": L, "num_key_value_heads": Hkv,
         "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
         "tie_word_embeddings": False, "torch_dtype": TORCH_DTYPE[dtype],
         "transformers_version": "4.34.0.dev0", "use_cache": True, "vocab_size": V}
    c.update(extra)
    return c


def qwen2_config(V, C, H, Hkv, F_, L, dtype, **extra):
    """Qwen2.5-0.5B's config.json keys."""
    c = {"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
         "bos_token_id": 3, "eos_token_id": 3, "hidden_act": "silu", "hidden_size": C,
         "initializer_range": 0.02, "intermediate_size": F_, "max_position_embeddings": 32768,
         "max_window_layers": L, "model_type": "qwen2", "num_attention_heads": H,
         "num_hidden_layers": L, "num_key_value_heads": Hkv, "rms_norm_eps": 1e-06,
         "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": True,
         "torch_dtype": TORCH_DTYPE[dtype], "transformers_version": "4.40.1", "use_cache": True,
         "use_sliding_window": False, "vocab_size": V}
    c.update(extra)
    return c


def qwen3_config(V, C, H, Hkv, D, F_, L, dtype, **extra):
    """Qwen3-0.6B's config.json keys."""
    c = {"architectures": ["Qwen3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
         "bos_token_id": 3, "eos_token_id": 4, "head_dim": D, "hidden_act": "silu",
         "hidden_size": C, "initializer_range": 0.02, "intermediate_size": F_,
         "max_position_embeddings": 40960, "max_window_layers": L, "model_type": "qwen3",
         "num_attention_heads": H, "num_hidden_layers": L, "num_key_value_heads": Hkv,
         "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000,
         "sliding_window": None, "tie_word_embeddings": True, "torch_dtype": TORCH_DTYPE[dtype],
         "transformers_version": "4.51.0", "use_cache": True, "use_sliding_window": False,
         "vocab_size": V}
    c.update(extra)
    return c


def pythia_config(V, C, H, F_, L, dtype, **extra):
    """Pythia's config.json keys (EleutherAI/pythia-70m, transformers 4.24)."""
    c = {"architectures": ["GPTNeoXForCausalLM"], "bos_token_id": 0, "eos_token_id": 0,
         "hidden_act": "gelu", "hidden_size": C, "initializer_range": 0.02,
         "intermediate_size": F_, "layer_norm_eps": 1e-05, "max_position_embeddings": 2048,
         "model_type": "gpt_neox", "num_attention_heads": H, "num_hidden_layers": L,
         "rotary_emb_base": 10000, "rotary_pct": 0.25, "tie_word_embeddings": False,
         "torch_dtype": TORCH_DTYPE[dtype], "transformers_version": "4.24.0", "use_cache": True,
         "use_parallel_residual": True, "vocab_size": V}
    c.update(extra)
    return c


def gemma3_config(V, C, H, Hkv, D, F_, L, dtype, **extra):
    """gemma-3-270m's config.json keys (transformers 4.55: layer_types); a
    case may drop layer_types for gemma-3-1b's sliding_window_pattern."""
    c = {"architectures": ["Gemma3ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
         "attn_logit_softcapping": None, "bos_token_id": 2, "eos_token_id": 1,
         "final_logit_softcapping": None, "head_dim": D, "hidden_activation": "gelu_pytorch_tanh",
         "hidden_size": C, "initializer_range": 0.02, "intermediate_size": F_,
         "max_position_embeddings": 32768, "model_type": "gemma3_text", "num_attention_heads": H,
         "num_hidden_layers": L, "num_key_value_heads": Hkv, "pad_token_id": 0,
         "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0,
         "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": 512,
         "torch_dtype": TORCH_DTYPE[dtype], "transformers_version": "4.55.0.dev0",
         "use_bidirectional_attention": False, "use_cache": True, "vocab_size": V}
    c.update(extra)
    return c


def gemma3_pattern(c, pattern):
    """gemma-3-1b's form (transformers 4.50): sliding_window_pattern, no layer_types."""
    c = dict(c)
    c.pop("layer_types", None)
    c.pop("_sliding_window_pattern", None)
    c.pop("use_bidirectional_attention", None)
    c.update({"sliding_window_pattern": pattern, "cache_implementation": "hybrid",
              "transformers_version": "4.50.0.dev0", "eos_token_id": [1, 6]})
    return c


SLIDE, FULL = "sliding_attention", "full_attention"
LLAMA3 = {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
          "original_max_position_embeddings": 256, "rope_type": "llama3"}

# name, config.json, file dtype, seed, B, T, tokens generated, embeddings' std (tied
# heads smaller: a tied model's logits favour the last token itself; Gemma's
# embeddings are also scaled by sqrt(hidden_size))
CASES = [
    ("llama2_mha_untied_f32", llama_config(96, 32, 4, 4, 48, 2, "F32"), "F32", 101, 2, 8, 6, 0.3),
    ("smollm2_gqa3x1_tied_bf16",
     llama_config(128, 36, 3, 1, 96, 3, "BF16", rope_theta=100000, tie_word_embeddings=True,
                  bos_token_id=0, eos_token_id=0, is_llama_config=True, rope_interleaved=False,
                  mlp_bias=False, initializer_range=0.041666666666666664,
                  max_position_embeddings=8192, transformers_version="4.42.3"),
     "BF16", 102, 1, 10, 6, 0.15),
    ("llama32_rope3_gqa6x2_tied_f16",
     llama_config(160, 48, 6, 2, 96, 2, "F16", head_dim=8, rope_theta=500000.0,
                  rope_scaling=LLAMA3, tie_word_embeddings=True, mlp_bias=False,
                  max_position_embeddings=4096, bos_token_id=5, eos_token_id=6,
                  transformers_version="4.45.0.dev0"),
     "F16", 203, 1, 9, 5, 0.15),
    ("llama_bias_gqa4x2_untied_f32",
     llama_config(80, 32, 4, 2, 48, 2, "F32", attention_bias=True, mlp_bias=True,
                  rms_norm_eps=1e-06, transformers_version="4.45.0"),
     "F32", 104, 1, 8, 6, 0.3),
    ("mistral_window4_gqa4x2_f32", mistral_config(96, 32, 4, 2, 64, 2, "F32", sliding_window=4),
     "F32", 105, 2, 9, 5, 0.3),
    ("mistral_nowindow_hd16_bf16",
     mistral_config(112, 40, 4, 1, 80, 2, "BF16", head_dim=16, sliding_window=None,
                    rope_theta=1000000.0, transformers_version="4.42.0.dev0"),
     "BF16", 106, 1, 10, 6, 0.3),
    ("qwen25_gqa6x2_tied_bf16",
     qwen2_config(144, 48, 6, 2, 96, 2, "BF16", sliding_window=4, max_window_layers=0),
     "BF16", 107, 1, 10, 6, 0.15),
    ("qwen2_gqa3x1_untied_f16",
     qwen2_config(100, 24, 3, 1, 64, 3, "F16", tie_word_embeddings=False, sliding_window=131072,
                  max_window_layers=3, rope_theta=10000.0, transformers_version="4.43.1"),
     "F16", 108, 2, 8, 6, 0.3),
    ("qwen3_hd16_gqa4x2_tied_f32", qwen3_config(128, 40, 4, 2, 16, 64, 2, "F32"),
     "F32", 709, 2, 8, 5, 0.15),
    ("qwen3_hd8_gqa6x3_untied_bf16",
     qwen3_config(96, 36, 6, 3, 8, 64, 3, "BF16", tie_word_embeddings=False),
     "BF16", 110, 1, 11, 6, 0.3),
    ("pythia_parallel_h3_f16", pythia_config(96, 48, 3, 96, 2, "F16"), "F16", 211, 2, 8, 6, 0.3),
    ("pythia_sequential_h2_f32",
     pythia_config(96, 32, 2, 128, 2, "F32", use_parallel_residual=False),
     "F32", 112, 1, 10, 6, 0.3),
    ("gemma3_layertypes_w4_bf16",
     gemma3_config(128, 32, 4, 1, 16, 64, 3, "BF16", query_pre_attn_scalar=24, sliding_window=4,
                   layer_types=[SLIDE, SLIDE, FULL], _sliding_window_pattern=3),
     "BF16", 213, 1, 10, 6, 0.1),
    ("gemma3_pattern2_linear_f32",
     gemma3_pattern(gemma3_config(96, 24, 2, 1, 16, 48, 3, "F32", query_pre_attn_scalar=16,
                                  sliding_window=3,
                                  rope_scaling={"factor": 8.0, "rope_type": "linear"}), 2),
     "F32", 314, 2, 10, 5, 0.15),
    ("gemma3_mha_w5_f16",
     gemma3_config(64, 48, 3, 3, 16, 96, 2, "F16", query_pre_attn_scalar=16, sliding_window=5,
                   layer_types=[FULL, SLIDE], _sliding_window_pattern=6),
     "F16", 2315, 2, 8, 5, 0.1),
    # folders with a tokenizer (tests/tokjson's, trained by npm tokenizers): text requests,
    # /tokenize and /v1/completions on the families; Gemma's <image_soft_token> is id 1048,
    # one past the model's vocab_size, as in gemma-3 (262144 in config.json)
    ("smollm2_tokenizer_bf16",
     llama_config(1305, 32, 4, 2, 64, 2, "BF16", tie_word_embeddings=True,
                  max_position_embeddings=64),
     "BF16", 419, 1, 8, 6, 0.1, "smollm2"),
    ("gemma3_tokenizer_f32",
     gemma3_config(1048, 32, 2, 1, 16, 64, 2, "F32", query_pre_attn_scalar=16, sliding_window=4,
                   layer_types=[SLIDE, FULL], max_position_embeddings=64),
     "F32", 521, 1, 8, 6, 0.1, "gemma3"),
]


# ==== Weights ================================================================


def random_state_dict(config, seed, embed_std):
    """Every tensor of families.tensor_table from one generator: Linear weights
    N(0, gain / sqrt(in)) (gain 1.5 for the query and key projections, so that
    the maps are neither flat nor one-hot; 2 for an untied head), embeddings
    N(0, embed_std), biases
    N(0, 0.1), norm weights 1 + N(0, 0.1) (Gemma's, used as 1 + w, N(0, 0.1)),
    LayerNorm biases N(0, 0.05)."""
    g = torch.Generator().manual_seed(seed)
    sd = {}
    for name, shape, kind in fam.tensor_table(config):
        x = torch.randn(*shape, generator=g)
        if kind == "linear":
            gain = 1.5 if any(k in name for k in ("q_proj", "k_proj", "query_key_value")) else 1.0
            if name in ("lm_head.weight", "embed_out.weight"):
                gain = 2.0
            x = x * (gain / math.sqrt(shape[1]))
        elif kind == "embed":
            x = x * embed_std
        elif kind == "bias" or kind == "norm0":
            x = x * 0.1
        elif kind == "norm":
            x = 1.0 + 0.1 * x
        elif kind == "norm_bias":
            x = x * 0.05
        sd[name] = x
    return sd


def stored(sd, dtype):
    """The weights as the file holds them, widened back to float32."""
    return {k: v.to(DTYPES[dtype]).to(torch.float32) for k, v in sd.items()}


def read_safetensors(path):
    """An independent reader of the file written (numpy, not torch): {name:
    float32 tensor}; F16 by numpy's float16, BF16 as the high half of a float32."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    assert n % 8 == 0, "header not padded to 8 bytes"
    header = json.loads(raw[8:8 + n].decode())
    assert header.pop("__metadata__") == {"format": "pt"}
    data, out, end = raw[8 + n:], {}, 0
    for name, info in header.items():
        b, e = info["data_offsets"]
        assert b == end, "gap or overlap before " + name
        end = e
        buf = data[b:e]
        if info["dtype"] == "F32":
            a = np.frombuffer(buf, "<f4")
        elif info["dtype"] == "F16":
            a = np.frombuffer(buf, "<f2").astype(np.float32)
        else:
            a = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(np.float32)
        out[name] = torch.from_numpy(a.reshape(info["shape"]).copy())
    assert end == len(data), "trailing bytes"
    return out


# ==== Checks of the reference =================================================


def check_rope_snapshots():
    """transformers' tests/utils/test_modeling_rope_utils.py prints the inverse
    frequencies of LlamaConfig() (head_dim 128, rope_theta 10000): default
    RoPE (test_default_rope_numerically) and llama3 with factor 10,
    original_max_position_embeddings 2048, low 1, high 4
    (test_llama3_rope_numerically). Some of those printed values (5 digits),
    at indices across the three llama3 bands."""
    default = {0: 1.0000e+00, 1: 8.6596e-01, 16: 1.0000e-01, 31: 1.1548e-02, 40: 3.1623e-03,
               63: 1.1548e-04}
    llama3 = {0: 1.0000e+00, 30: 1.3335e-02, 31: 1.0730e-02, 32: 7.7785e-03, 35: 2.8248e-03,
              39: 5.7363e-04, 40: 3.4539e-04, 41: 2.7384e-04, 63: 1.1548e-05}
    d = fam.inv_freq_default(10000.0, 128)
    l3 = fam.inv_freq_llama3(10000.0, 128, {
        "factor": 10.0, "original_max_position_embeddings": 2048, "low_freq_factor": 1,
        "high_freq_factor": 4})
    for got, want in ((d, default), (l3, llama3)):
        for i, v in want.items():
            assert abs(float(got[i]) - v) <= 5e-5 * v, (i, float(got[i]), v)
    lin = fam.inv_freq_linear(10000.0, 128, 8.0)
    assert torch.equal(lin, d / 8.0)
    print("check: RoPE inverse frequencies equal transformers' printed snapshots "
          "(default, llama3; linear = default / factor)")


def layer_windows(config):
    """Each layer's sliding window (None: full causal), as families.py decides."""
    mt = config["model_type"]
    if mt == "gemma3_text":
        return [config.get("sliding_window") if k == SLIDE else None
                for k in fam.gemma3_layer_types(config)]
    if mt == "gpt_neox":
        return [None] * config["num_hidden_layers"]
    return fam.llama_like(config)["windows"]


def check_hooks(config, sd, idx, logits, rec, generated):
    """Identities between the recorded hooks, each from its own definition."""
    L, T = config["num_hidden_layers"], idx.shape[1]
    mt = config["model_type"]
    close = lambda a, b, tol=2e-5: torch.allclose(a, b, atol=tol, rtol=tol)
    for l, window in enumerate(layer_windows(config)):
        p = "blocks.%d." % l
        q, k, v = rec[p + "attn.hook_q"], rec[p + "attn.hook_k"], rec[p + "attn.hook_v"]
        rq, rk = rec[p + "attn.hook_rot_q"], rec[p + "attn.hook_rot_k"]
        # RoPE at position 0 is the identity (on q after its norm, if any)
        if mt == "qwen3":
            eps = config["rms_norm_eps"]
            q = fam.rms_norm(q, sd["model.layers.%d.self_attn.q_norm.weight" % l], eps)
            k = fam.rms_norm(k, sd["model.layers.%d.self_attn.k_norm.weight" % l], eps)
        if mt == "gemma3_text":
            eps = config["rms_norm_eps"]
            q = fam.gemma_rms_norm(q, sd["model.layers.%d.self_attn.q_norm.weight" % l], eps)
            k = fam.gemma_rms_norm(k, sd["model.layers.%d.self_attn.k_norm.weight" % l], eps)
        assert torch.equal(rq[:, 0], q[:, 0]) and torch.equal(rk[:, 0], k[:, 0]), p
        if mt == "gpt_neox":  # partial rotary: the dims after rotary_ndims pass through
            rot = int(q.shape[-1] * config["rotary_pct"])
            assert torch.equal(rq[..., rot:], q[..., rot:])
            assert torch.equal(rk[..., rot:], k[..., rot:])
            assert not torch.equal(rq[:, 1:, :, :rot], q[:, 1:, :, :rot])
        # the mask: -inf exactly where causal (and the window) forbid
        s, pat = rec[p + "attn.hook_attn_scores"], rec[p + "attn.hook_pattern"]
        qi, ki = torch.arange(T)[:, None], torch.arange(T)[None, :]
        allowed = (ki <= qi) & ((ki > qi - window) if window else True)
        assert torch.equal(torch.isinf(s), ~allowed.expand_as(s)), p
        assert torch.all(pat.masked_select(~allowed.expand_as(pat)) == 0), p
        assert close(pat.sum(-1), torch.ones(pat.shape[:-1]), 1e-6)
        assert close(pat, torch.softmax(s, dim=-1), 1e-6)
        # z = pattern @ v, query head h reading key/value head h // (H / Hkv)
        H, Hkv = q.shape[2], v.shape[2]
        vh = v.permute(0, 2, 1, 3).repeat_interleave(H // Hkv, dim=1)
        assert close(rec[p + "attn.hook_z"], (pat @ vh).transpose(1, 2)), p
        # the residual stream
        pre, a, m, post = (rec[p + n] for n in ("hook_resid_pre", "hook_attn_out",
                                                "hook_mlp_out", "hook_resid_post"))
        if p + "hook_resid_mid" in rec:
            assert torch.equal(rec[p + "hook_resid_mid"], pre + a)
            assert torch.equal(post, rec[p + "hook_resid_mid"] + m)
        else:  # GPT-NeoX's parallel residual
            assert torch.equal(post, m + a + pre)
        if l + 1 < L:
            assert torch.equal(post, rec["blocks.%d.hook_resid_pre" % (l + 1)])
    assert torch.equal(generated[:1], logits[0, -1].argmax().view(1))
    print("  hooks: RoPE identity at position 0, masks, softmax, z, residual sums hold")


def check_gqa(config, sd, idx, logits):
    """Grouped-query attention equals the same model with each key/value head
    copied out for its H / Hkv query heads (num_key_value_heads = H): so query
    head h reads key/value head h // (H / Hkv), repeat_kv's grouping."""
    mt = config["model_type"]
    H = config["num_attention_heads"]
    Hkv = config.get("num_key_value_heads") or H
    if mt == "gpt_neox" or Hkv == H:
        return
    D = config.get("head_dim") or config["hidden_size"] // H
    mha = dict(config, num_key_value_heads=H)
    sd2 = dict(sd)
    for name in sd:
        if any(".self_attn.%s." % n in name for n in ("k_proj", "v_proj")):
            t = sd[name].view(Hkv, D, *sd[name].shape[1:])
            sd2[name] = t.repeat_interleave(H // Hkv, dim=0).reshape(H * D, *sd[name].shape[1:])
    got, _ = fam.forward(mha, sd2, idx)
    assert torch.allclose(got, logits, atol=1e-5, rtol=1e-5), float((got - logits).abs().max())
    print("  GQA: equals the model with its %d key/value heads copied to %d" % (Hkv, H))


def meta_rope(x, theta_freqs):
    """Meta's llama model.py apply_rotary_emb: consecutive pairs of a head's
    dims as complex numbers times exp(i * pos * freq). x [B][T][heads][D]."""
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    pos = torch.arange(x.shape[1]).float()
    freqs = torch.polar(torch.ones(x.shape[1], theta_freqs.numel()), torch.outer(pos, theta_freqs))
    return torch.view_as_real(xc * freqs[None, :, None, :]).flatten(3)


def to_meta(w, heads):
    """The inverse of convert_llama_weights_to_hf.py's permute: Hugging Face
    keeps each head's RoPE pairs as (first half, second half), Meta as
    consecutive pairs. Rows [heads * D] (a weight's first axis, a bias, a
    per-head norm when heads = 1)."""
    D = w.shape[0] // heads
    return w.reshape(heads, 2, D // 2, *w.shape[1:]).transpose(1, 2).reshape(w.shape)


def meta_llama(config, sd, idx):
    """An independent Llama forward in Meta's layout (llama/model.py:
    RMSNorm, complex RoPE on consecutive pairs, -inf causal mask, softmax,
    SwiGLU) on the permuted weights, with Mistral's window, Qwen's biases
    and Qwen3's per-head norms: what convert_llama_weights_to_hf.py promises
    equals the Hugging Face model."""
    s = fam.llama_like(config)
    H, Hkv, D, eps = s["H"], s["Hkv"], s["D"], s["eps"]
    freqs = fam.inv_freq_of(s["theta"], D, s["scaling"])
    B, T = idx.shape
    norm = lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

    def lin(x, n, rows=None):  # x W^T + b, W's rows (and b) put in Meta's order
        meta = (lambda t: to_meta(t, rows)) if rows else (lambda t: t)
        y = x @ meta(sd[n + ".weight"]).t()
        return y + meta(sd[n + ".bias"]) if n + ".bias" in sd else y

    h = sd["model.embed_tokens.weight"][idx]
    for l in range(s["L"]):
        p = "model.layers.%d." % l
        x = norm(h, sd[p + "input_layernorm.weight"])
        q = lin(x, p + "self_attn.q_proj", H).view(B, T, H, D)
        k = lin(x, p + "self_attn.k_proj", Hkv).view(B, T, Hkv, D)
        v = lin(x, p + "self_attn.v_proj").view(B, T, Hkv, D)
        if s["qk_norm"]:
            q = norm(q, to_meta(sd[p + "self_attn.q_norm.weight"], 1))
            k = norm(k, to_meta(sd[p + "self_attn.k_norm.weight"], 1))
        q, k = meta_rope(q, freqs), meta_rope(k, freqs)
        k = torch.repeat_interleave(k, H // Hkv, dim=2)
        v = torch.repeat_interleave(v, H // Hkv, dim=2)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(D)
        qi, ki = torch.arange(T)[:, None], torch.arange(T)[None, :]
        bad = (ki > qi) | ((ki <= qi - s["windows"][l]) if s["windows"][l] else False)
        scores = scores.masked_fill(bad, float("-inf"))
        out = torch.einsum("bhqk,bkhd->bqhd", torch.softmax(scores, -1), v).reshape(B, T, H * D)
        h = h + lin(out, p + "self_attn.o_proj")
        x = norm(h, sd[p + "post_attention_layernorm.weight"])
        gated = F.silu(lin(x, p + "mlp.gate_proj")) * lin(x, p + "mlp.up_proj")
        h = h + lin(gated, p + "mlp.down_proj")
    h = norm(h, sd["model.norm.weight"])
    head = sd["model.embed_tokens.weight"] if s["tied"] else sd["lm_head.weight"]
    return h @ head.t()


def check_meta(config, sd, idx, logits):
    if config["model_type"] not in ("llama", "mistral", "qwen2", "qwen3"):
        return
    with torch.no_grad():
        got = meta_llama(config, sd, idx)
    err = float((got - logits).abs().max())
    assert err < 1e-4, err
    print("  Meta's layout (interleaved RoPE, permuted rows): max |diff| %.2g" % err)


def check_gemma(config, sd, idx, rec):
    if config["model_type"] != "gemma3_text":
        return
    C = config["hidden_size"]
    want = sd["model.embed_tokens.weight"][idx] * torch.tensor(math.sqrt(C), dtype=torch.float32)
    assert torch.equal(rec["blocks.0.hook_resid_pre"], want)
    print("  Gemma: block 0's input is embed_tokens times float32(sqrt(%d)); layer types %s"
          % (C, fam.gemma3_layer_types(config)))


def saturation(logits, rec):
    """How peaked the maps and logits are (printed, to keep them unsaturated)."""
    pats = [v for k, v in rec.items() if k.endswith("hook_pattern")]
    peak = torch.cat([p[..., 2:, :].max(-1).values.flatten() for p in pats])
    return "logits std %.2f, pattern row max median %.2f (max %.3f)" % (
        float(logits.std()), float(peak.median()), float(peak.max()))


# ==== Cases ===================================================================


def make_case(name, config, dtype, seed, B, T, n_gen, embed_std, tokenizer=None):
    sd = stored(random_state_dict(config, seed, embed_std), dtype)
    g = torch.Generator().manual_seed(seed + 1000)
    idx = torch.randint(0, config["vocab_size"], (B, T), generator=g)
    logits, rec = fam.forward(config, sd, idx)
    gen, gaps = fam.greedy(config, sd, idx[0].tolist(), n_gen)
    generated = torch.tensor(gen)
    print("%s: %s, %s; greedy %s, least top-2 gap %.3f" % (
        name, config["architectures"][0], saturation(logits, rec), gen, min(gaps)))
    assert min(gaps) > 0.01, "a near tie in the greedy steps: change the seed"
    mlp_gated = config["model_type"] != "gpt_neox"
    parallel = config.get("use_parallel_residual", False)
    names = [h for h in HOOKS if not (h == "mlp.hook_pre_linear" and not mlp_gated)
             and not (h == "hook_resid_mid" and parallel)]
    L = config["num_hidden_layers"]
    assert set(rec) == {"blocks.%d.%s" % (l, h) for l in range(L) for h in names} | \
        {"ln_final.hook_normalized"}, sorted(rec)
    check_hooks(config, sd, idx, logits, rec, generated)
    check_gqa(config, sd, idx, logits)
    check_meta(config, sd, idx, logits)
    check_gemma(config, sd, idx, rec)
    tensors = [("logits", logits.numpy())]
    tensors += [("blocks.%d.%s" % (l, h), rec["blocks.%d.%s" % (l, h)].contiguous().numpy())
                for l in range(L) for h in names]
    tensors.append(("ln_final.hook_normalized", rec["ln_final.hook_normalized"].numpy()))
    tensors.append(("generated", generated.numpy().astype("<i4")))
    head = ["family %s" % config["architectures"][0], "model_type %s" % config["model_type"],
            "dtype %s" % dtype, "B %d" % B, "T %d" % T, "generate %d" % n_gen, "seed %d" % seed]
    return dict(name=name, config=config, dtype=dtype, sd=sd, idx=idx, head=head, tensors=tensors,
                tokenizer=tokenizer)


def write_case(c, out):
    d = os.path.join(out, c["name"])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        f.write(json.dumps(c["config"], indent=2, sort_keys=True) + "\n")
    path = os.path.join(d, "model.safetensors")
    write_safetensors(path, [(k, c["dtype"], c["sd"][k]) for k in sorted(c["sd"])],
                      {"format": "pt"})
    back = read_safetensors(path)
    assert back.keys() == c["sd"].keys() and all(torch.equal(back[k], c["sd"][k]) for k in back)
    write_gpt2(os.path.join(d, "expected.gpt2"), c["name"], c["head"], c["idx"], c["tensors"])
    if c["tokenizer"]:
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tokjson",
                           c["tokenizer"])
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(os.path.join(src, f), os.path.join(d, f))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "families")
    print("torch", torch.__version__, "OPENBLAS_CORETYPE", os.environ.get("OPENBLAS_CORETYPE"))
    check_rope_snapshots()
    made = [make_case(*c) for c in CASES]
    for c in made:
        write_case(c, out)
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(out) for f in fs)
    print("wrote %d cases to %s, %d bytes (files read back and compared)" % (len(made), out, total))


if __name__ == "__main__":
    main()
