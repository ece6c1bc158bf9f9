#!/usr/bin/python3
"""Golden vectors for core/: every attention module of the seed chapters run
by PyTorch, with its inputs, state_dict and every intermediate tensor.

    /usr/bin/python3 tests/golden/generate.py tests/golden      (or `make golden`)

Each case builds the module exactly as the seeds do (torch.manual_seed(seed),
then the constructor), optionally reseeds with dropout_seed right before the
forward call, and runs an instrumented copy of the module's forward (the same
operations in the same order, plus the extra masks core supports). Whenever
the real module can run the same call, its output is checked to be bit-equal
to the instrumented copy's, so the intermediates are PyTorch's own.

Project definitions applied on top of PyTorch (see README.md):
  - a query row whose keys are all masked gets all-zero weights (PyTorch: NaN);
  - -inf (masked scores, additive masks) is written as null.
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# the modules, verbatim from the seeds (seed 000's chapter 3, seed 003's gpt2_min.py)
from reference import (CausalAttention, CausalSelfAttention, GPTConfig, MultiHeadAttention,
                       MultiHeadAttentionWrapper, SelfAttention_v1, SelfAttention_v2)

torch.set_num_threads(1)

# =========================================================================
# Instrumented pieces
# =========================================================================

NEG_INF = float("-inf")


def dropout_op(t, p, training):
    """nn.Dropout / F.dropout on CPU in torch 1.13 (aten _dropout_impl):
    returns (result, multipliers)."""
    if not training or p == 0.0:
        return t, torch.ones_like(t)
    if p == 1.0:
        return t.mul(torch.zeros((), dtype=t.dtype)), torch.zeros_like(t)
    noise = torch.empty_like(t)
    noise.bernoulli_(1 - p)
    noise.div_(1 - p)
    return t * noise, noise


def zero_full_rows(w, mask4):
    """Project definition: rows whose keys are all masked are all zero."""
    full = mask4.all(dim=-1, keepdim=True)
    return w.masked_fill(full, 0.0)


def renorm_weights(unmasked_scaled, mask4):
    """3.5.1, first way: softmax over every key, zero the masked ones, divide
    by the row sums (seed: attn_weights*mask_simple / row_sums)."""
    w = torch.softmax(unmasked_scaled, dim=-1)
    w = w * (~mask4).to(w.dtype)
    row_sums = w.sum(dim=-1, keepdim=True)
    w = w / row_sums
    return zero_full_rows(w, mask4)


class Extra:
    """The masks of one call: [B][L][S] bool (causal | attn_mask_bool |
    key_padding | additive == -inf) and the additive mask broadcast to
    [B][L][S] (or None)."""

    def __init__(self, B, L, S, causal, mask_bool, mask_add, kpm):
        m = torch.zeros(B, L, S, dtype=torch.bool)
        if causal:
            m |= torch.triu(torch.ones(L, S, dtype=torch.bool), diagonal=1)
        if mask_bool is not None:
            m |= mask_bool.bool() if mask_bool.dim() == 3 else mask_bool.bool().unsqueeze(0)
        if kpm is not None:
            m |= kpm.bool()[:, None, :]
        add = None
        if mask_add is not None:
            add = mask_add if mask_add.dim() == 3 else mask_add.unsqueeze(0).expand(B, L, S)
            m |= add == NEG_INF
        self.causal, self.mask_bool, self.mask_add, self.kpm = causal, mask_bool, mask_add, kpm
        self.mask = m          # [B][L][S]
        self.add = add         # [B][L][S] or None
        self.plain = mask_bool is None and mask_add is None and kpm is None

    def m4(self):
        return self.mask[:, None, :, :]

    def a4(self):
        return None if self.add is None else self.add[:, None, :, :]


def seed_attend(queries, keys, values, m, a, cfg):
    """The seed classes' attention in the module's own rank ([T][d] for
    SelfAttention_v1/v2, [B][T][d] for CausalAttention, [B][H][T][hd] for
    MultiHeadAttention; m and a are the bool and additive masks shaped to
    broadcast): scores.masked_fill_(mask, -inf); softmax(scores / hd**0.5);
    dropout; @ v. Additive masks are added to the scaled scores."""
    rec = {}
    attn_scores = queries @ keys.transpose(-2, -1)
    rec["scores"] = attn_scores.clone()
    if cfg["scale"] is None:
        scale_div = keys.shape[-1]**0.5
        scaled_unmasked = attn_scores / scale_div
        masked = attn_scores.masked_fill(m, -torch.inf) / scale_div
    else:
        scaled_unmasked = attn_scores * cfg["scale"]
        masked = attn_scores.masked_fill(m, -torch.inf) * cfg["scale"]
    if a is not None:
        scaled_unmasked = scaled_unmasked + a
        masked = masked + a
    rec["masked_scores"] = masked
    if cfg["mask_method"] == "renorm":
        w = renorm_weights(scaled_unmasked, m)
    else:
        w = zero_full_rows(torch.softmax(masked, dim=-1), m)
    return w, rec


def scaled_weights(raw, head_dim, ex, cfg, rec, softmax):
    """GPT2's and scaled dot-product attention's order on raw = q @ kᵀ
    [B][H][L][S]: times the scale (1/sqrt(head_dim) unless cfg gives one),
    plus the additive mask, masked_fill(-inf) (recorded as masked_scores),
    then the weights: renorm, or softmax with fully masked rows zeroed."""
    scale = (1.0 / math.sqrt(head_dim)) if cfg["scale"] is None else cfg["scale"]
    s = raw * scale
    if ex.a4() is not None:
        s = s + ex.a4()
    masked = s.masked_fill(ex.m4(), float("-inf"))
    rec["masked_scores"] = masked
    if cfg["mask_method"] == "renorm":
        return renorm_weights(s, ex.m4())
    return zero_full_rows(softmax(masked, dim=-1), ex.m4())


def finish_heads(w, values, rec, cfg):
    w, noise = dropout_op(w, cfg["dropout"], cfg["training"])
    rec["weights"] = w
    rec["dropout_mask"] = noise
    return w @ values


# ---- per module ------------------------------------------------------------

def fwd_simple(x, ex, cfg):
    q = x[:, None]                           # [B][1][T][d]
    rec = {"queries": q, "keys": q, "values": q}
    scores = q @ q.transpose(-2, -1)
    rec["scores"] = scores.clone()
    scale = 1.0 if cfg["scale"] is None else cfg["scale"]
    m4, a4 = ex.m4(), ex.a4()
    s = scores * scale if scale != 1.0 else scores
    if a4 is not None:
        s = s + a4
    masked = s.masked_fill(m4, -torch.inf)
    rec["masked_scores"] = masked
    if cfg["normalization"] == "sum":
        w = masked.masked_fill(m4, 0.0)
        w = w / w.sum(dim=-1, keepdim=True)
        w = zero_full_rows(w, m4)
    elif cfg["mask_method"] == "renorm":
        w = renorm_weights(s, m4)
    else:
        w = zero_full_rows(torch.softmax(masked, dim=-1), m4)
    ctx = finish_heads(w, q, rec, cfg)
    rec["context_heads"] = ctx[:, 0]
    rec["context"] = ctx[:, 0]
    return rec


def single_head(project, x, ex, cfg, per_sequence):
    """SelfAttention_v1/v2 (per_sequence: the seed classes take one 2-D
    sequence, keys.T) and CausalAttention (3-D batch). Returns the record
    with a head axis of 1 added."""
    if per_sequence:
        recs = []
        for b in range(x.shape[0]):
            queries, keys, values = project(x[b])
            w, rec = seed_attend(queries, keys, values, ex.mask[b],
                                 None if ex.add is None else ex.add[b], cfg)
            rec["context"] = finish_heads(w, values, rec, cfg)
            rec.update(queries=queries, keys=keys, values=values)
            recs.append(rec)
        rec = {key: torch.stack([r[key] for r in recs]) for key in recs[0]}
    else:
        queries, keys, values = project(x)
        w, rec = seed_attend(queries, keys, values, ex.mask, ex.add, cfg)
        rec["context"] = finish_heads(w, values, rec, cfg)
        rec.update(queries=queries, keys=keys, values=values)
    for key in ("queries", "keys", "values", "scores", "masked_scores", "weights", "dropout_mask"):
        rec[key] = rec[key][:, None]
    rec["context_heads"] = rec["context"]
    return rec


def fwd_v1(mod, x, ex, cfg):
    def project(x):
        keys = x @ mod.W_key
        queries = x @ mod.W_query
        values = x @ mod.W_value
        return queries, keys, values
    return single_head(project, x, ex, cfg, per_sequence=True)


def fwd_linear3(mod, x, ex, cfg, per_sequence=False):
    """SelfAttention_v2 (per sequence) and CausalAttention: W_key, W_query, W_value."""
    def project(x):
        keys = mod.W_key(x)
        queries = mod.W_query(x)
        values = mod.W_value(x)
        return queries, keys, values
    return single_head(project, x, ex, cfg, per_sequence)


def fwd_wrapper(mod, x, ex, cfg):
    heads = [fwd_linear3(h, x, ex, cfg) for h in mod.heads]  # one after another
    rec = {}
    for key in ("queries", "keys", "values", "scores", "masked_scores", "weights", "dropout_mask"):
        rec[key] = torch.cat([h[key] for h in heads], dim=1)
    rec["context"] = torch.cat([h["context"] for h in heads], dim=-1)
    rec["context_heads"] = rec["context"]
    return rec


def fwd_mha(mod, x, ex, cfg):
    b, num_tokens, d_in = x.shape
    keys = mod.W_key(x)
    queries = mod.W_query(x)
    values = mod.W_value(x)
    keys = keys.view(b, num_tokens, mod.num_heads, mod.head_dim).transpose(1, 2)
    values = values.view(b, num_tokens, mod.num_heads, mod.head_dim).transpose(1, 2)
    queries = queries.view(b, num_tokens, mod.num_heads, mod.head_dim).transpose(1, 2)
    w, rec = seed_attend(queries, keys, values, ex.m4(), ex.a4(), cfg)
    rec.update(queries=queries, keys=keys, values=values)
    context_vec = finish_heads(w, values, rec, cfg).transpose(1, 2)
    context_vec = context_vec.contiguous().view(b, num_tokens, mod.d_out)
    rec["context_heads"] = context_vec
    rec["context"] = mod.out_proj(context_vec)
    return rec


def fwd_gpt2(mod, x, ex, cfg):
    B, T, C = x.size()
    head_dim = C // mod.n_head
    q, k, v = [t.view(B, T, mod.n_head, head_dim).transpose(1, 2)
               for t in mod.c_attn(x).split(mod.n_embd, dim=2)]
    rec = {"queries": q, "keys": k, "values": v}
    raw = q @ k.transpose(-2, -1)
    rec["scores"] = raw
    att = scaled_weights(raw, head_dim, ex, cfg, rec, F.softmax)
    rec["weights"] = att
    y = att @ v
    y = y.transpose(1, 2).contiguous().view(B, T, C)
    rec["context_heads"] = y
    out, noise = dropout_op(mod.c_proj(y), cfg["dropout"], cfg["training"])
    rec["context"] = out
    rec["dropout_mask"] = noise
    return rec


def tmha_masks(ex, B, H):
    """The attn_mask and key_padding_mask handed to torch.nn.MultiheadAttention
    (torch 1.13: bool True = not allowed; no is_causal, so causal goes into
    attn_mask; a 3-D mask is [B*H][L][S])."""
    L, S = ex.mask.shape[1:]
    bool_part = None
    if ex.causal or ex.mask_bool is not None:
        bool_part = torch.zeros(L, S, dtype=torch.bool)
        if ex.causal:
            bool_part = bool_part | torch.triu(torch.ones(L, S, dtype=torch.bool), diagonal=1)
        if ex.mask_bool is not None:
            bool_part = bool_part | ex.mask_bool.bool()
    attn_mask = None
    if ex.mask_add is not None:
        attn_mask = ex.mask_add.clone()
        if bool_part is not None:
            attn_mask = attn_mask.masked_fill(bool_part, float("-inf"))
    elif bool_part is not None:
        attn_mask = bool_part
    if attn_mask is not None and attn_mask.dim() == 3:
        attn_mask = attn_mask.repeat_interleave(H, dim=0)
    kpm = ex.kpm.bool() if ex.kpm is not None else None
    return attn_mask, kpm


def fwd_torch_mha(mod, x, xk, xv, ex, cfg):
    """torch.nn.functional.multi_head_attention_forward (1.13), batch_first."""
    H, E = mod.num_heads, mod.embed_dim
    if xk is None:
        query = key = value = x.transpose(1, 0)
    else:
        query, key, value = [t.transpose(1, 0) for t in (x, xk, xv)]
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    head_dim = embed_dim // H
    if mod._qkv_same_embed_dim:
        q, k, v = F._in_projection_packed(query, key, value, mod.in_proj_weight, mod.in_proj_bias)
    else:
        if mod.in_proj_bias is None:
            b_q = b_k = b_v = None
        else:
            b_q, b_k, b_v = mod.in_proj_bias.chunk(3)
        q, k, v = F._in_projection(query, key, value, mod.q_proj_weight, mod.k_proj_weight,
                                   mod.v_proj_weight, b_q, b_k, b_v)
    attn_mask, key_padding_mask = tmha_masks(ex, bsz, H)
    if attn_mask is not None and attn_mask.dim() == 2:
        attn_mask = attn_mask.unsqueeze(0)
    q = q.contiguous().view(tgt_len, bsz * H, head_dim).transpose(0, 1)
    k = k.contiguous().view(k.shape[0], bsz * H, head_dim).transpose(0, 1)
    v = v.contiguous().view(v.shape[0], bsz * H, head_dim).transpose(0, 1)
    if key_padding_mask is not None:
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len). \
            expand(-1, H, -1, -1).reshape(bsz * H, 1, src_len)
        if attn_mask is None:
            attn_mask = key_padding_mask
        elif attn_mask.dtype == torch.bool:
            attn_mask = attn_mask.logical_or(key_padding_mask)
        else:
            attn_mask = attn_mask.masked_fill(key_padding_mask, float("-inf"))
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        new_attn_mask = torch.zeros_like(attn_mask, dtype=q.dtype)
        new_attn_mask.masked_fill_(attn_mask, float("-inf"))
        attn_mask = new_attn_mask
    rec = {"queries": q.view(bsz, H, tgt_len, head_dim),
           "keys": k.view(bsz, H, src_len, head_dim),
           "values": v.view(bsz, H, src_len, head_dim)}
    rec["scores"] = torch.bmm(q, k.transpose(-2, -1)).view(bsz, H, tgt_len, src_len)
    B_, Nt, E_ = q.shape
    q_scaled = q / math.sqrt(E_)
    if attn_mask is not None:
        w = torch.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
    else:
        w = torch.bmm(q_scaled, k.transpose(-2, -1))
    rec["masked_scores"] = w.view(bsz, H, tgt_len, src_len)
    w = F.softmax(w, dim=-1)
    w = zero_full_rows(w.view(bsz, H, tgt_len, src_len), ex.m4()).view(bsz * H, tgt_len, src_len)
    w, noise = dropout_op(w, cfg["dropout"], cfg["training"])
    rec["dropout_mask"] = noise.view(bsz, H, tgt_len, src_len)
    out = torch.bmm(w, v)
    rec["context_heads"] = out.view(bsz, H, tgt_len, head_dim).transpose(1, 2).reshape(bsz, tgt_len, E)
    out = out.transpose(0, 1).contiguous().view(tgt_len * bsz, embed_dim)
    out = F.linear(out, mod.out_proj.weight, mod.out_proj.bias)
    out = out.view(tgt_len, bsz, out.size(1))
    rec["context"] = out.transpose(1, 0)
    w4 = w.view(bsz, H, tgt_len, src_len)
    rec["weights"] = w4
    rec["weights_avg"] = w4.sum(dim=1) / H
    return rec


def fwd_sdpa(q, k, v, ex, cfg):
    """Scaled dot-product attention by hand (torch 1.13 has no
    F.scaled_dot_product_attention): q @ kᵀ * scale, masks, softmax, dropout
    on the weights, @ v. Grouped-query: query head h uses K/V head h // (H/Hkv)."""
    H, Hkv = q.shape[1], k.shape[1]
    kk = k.repeat_interleave(H // Hkv, dim=1)
    vv = v.repeat_interleave(H // Hkv, dim=1)
    rec = {"queries": q, "keys": k, "values": v}
    raw = q @ kk.transpose(-2, -1)
    rec["scores"] = raw
    w = scaled_weights(raw, q.shape[-1], ex, cfg, rec, torch.softmax)
    ctx = finish_heads(w, vv, rec, cfg)              # [B][H][L][Ev]
    B, L = q.shape[0], q.shape[2]
    ctx = ctx.transpose(1, 2).reshape(B, L, -1)
    rec["context_heads"] = rec["context"] = ctx
    return rec


# =========================================================================
# Cases
# =========================================================================

SEED_INPUTS = torch.tensor(
    [[0.43, 0.15, 0.89],  # Your     (x^1)
     [0.55, 0.87, 0.66],  # journey  (x^2)
     [0.57, 0.85, 0.64],  # starts   (x^3)
     [0.22, 0.58, 0.33],  # with     (x^4)
     [0.77, 0.25, 0.10],  # one      (x^5)
     [0.05, 0.80, 0.55]]  # step     (x^6)
)

SDPA_A = torch.tensor([[[[0.2745, 0.6584, 0.2775, 0.8573],
                         [0.8993, 0.0390, 0.9268, 0.7388],
                         [0.7179, 0.7058, 0.9156, 0.4340]],
                        [[0.0772, 0.3565, 0.1479, 0.5331],
                         [0.4066, 0.2318, 0.4545, 0.9737],
                         [0.4606, 0.5159, 0.4220, 0.5786]]]])

MODULES = {
    "simple": "simple",
    "v1": "SelfAttention_v1",
    "v2": "SelfAttention_v2",
    "causal": "CausalAttention",
    "wrapper": "MultiHeadAttentionWrapper",
    "mha": "MultiHeadAttention",
    "gpt2": "GPT2CausalSelfAttention",
    "torch_mha": "torch.nn.MultiheadAttention",
    "sdpa": "scaled_dot_product_attention",
}


def randn(gen, *shape):
    return torch.randn(*shape, generator=gen)


def make_case(name, description, module, *, B=1, T=4, d_in=3, d_out=2, H=1, S=0, Hkv=0,
              kdim=0, vdim=0, context_length=0, bias=False, causal=False,
              normalization="softmax", mask_method="neg_inf", scale=None, dropout=0.0,
              training=False, seed=None, dropout_seed=None, data_seed=0, x=None,
              query=None, key=None, value=None, mask_bool=None, mask_add=None,
              kpm=None, xk=None, xv=None, notes=None):
    # attn_inputs has one attn_mask_batched flag for both masks
    assert mask_bool is None or mask_add is None or mask_bool.dim() == mask_add.dim(), name
    return dict(name=name, description=description, module=module, B=B, T=T, d_in=d_in,
                d_out=d_out, H=H, S=S, Hkv=Hkv, kdim=kdim, vdim=vdim,
                context_length=context_length, bias=bias, causal=causal,
                normalization=normalization, mask_method=mask_method, scale=scale,
                dropout=dropout, training=training, seed=seed, dropout_seed=dropout_seed,
                data_seed=data_seed, x=x, query=query, key=key, value=value,
                mask_bool=mask_bool, mask_add=mask_add, kpm=kpm, xk=xk, xv=xv, notes=notes)


def float_mask(gen, shape, p_inf=0.0):
    m = randn(gen, *shape) * 0.5
    if p_inf:
        m = m.masked_fill(torch.rand(*shape, generator=gen) < p_inf, float("-inf"))
    return m


def bool_mask(gen, shape, p=0.3):
    return (torch.rand(*shape, generator=gen) < p).to(torch.uint8)


def cases():
    out = []
    batch2 = torch.stack((SEED_INPUTS, SEED_INPUTS), dim=0)
    seed1 = SEED_INPUTS[None]

    # ---- the seed chapters' own calls -------------------------------------
    out.append(make_case("seed_simple", "seed 000 3.3.2: softmax(inputs @ inputs.T) @ inputs",
                         "simple", B=1, T=6, d_in=3, d_out=0, x=seed1))
    out.append(make_case("seed_simple_sum", "seed 000 3.3.1: scores / scores.sum (the first try)",
                         "simple", B=1, T=6, d_in=3, d_out=0, normalization="sum", x=seed1))
    out.append(make_case("seed_v1_123", "seed 000 3.4.2: torch.manual_seed(123); SelfAttention_v1(3, 2)",
                         "v1", B=1, T=6, seed=123, x=seed1))
    out.append(make_case("seed_v2_789", "seed 000 3.4.2: torch.manual_seed(789); SelfAttention_v2(3, 2)",
                         "v2", B=1, T=6, seed=789, x=seed1))
    out.append(make_case("seed_causal_789_masked",
                         "seed 000 3.5.1: the -inf-masked weights of sa_v2 (seed 789) == CausalAttention seed 789",
                         "causal", B=1, T=6, seed=789, context_length=6, causal=True, x=seed1))
    out.append(make_case("seed_causal_789_renorm",
                         "seed 000 3.5.1: softmax, zero above the diagonal, renormalise (first way)",
                         "causal", B=1, T=6, seed=789, context_length=6, causal=True,
                         mask_method="renorm", x=seed1))
    out.append(make_case("seed_causal_789_dropout",
                         "seed 000 3.5.2: torch.manual_seed(123); Dropout(0.5)(causal weights of seed 789)",
                         "causal", B=1, T=6, seed=789, context_length=6, causal=True, dropout=0.5,
                         training=True, dropout_seed=123, x=seed1))
    out.append(make_case("seed_causal_123_batch",
                         "seed 000 3.5.3: torch.manual_seed(123); CausalAttention(3, 2, 6, 0.0)(batch)",
                         "causal", B=2, T=6, seed=123, context_length=6, causal=True,
                         training=True, x=batch2))
    out.append(make_case("seed_wrapper_123",
                         "seed 000 3.6.1: torch.manual_seed(123); MultiHeadAttentionWrapper(3, 2, 6, 0.0, 2)",
                         "wrapper", B=2, T=6, H=2, seed=123, context_length=6, causal=True,
                         training=True, x=batch2))
    out.append(make_case("seed_mha_123",
                         "seed 000 3.6.2: torch.manual_seed(123); MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)",
                         "mha", B=2, T=6, H=2, seed=123, context_length=6, causal=True,
                         training=True, x=batch2))
    out.append(make_case("seed_heads_matmul",
                         "seed 000 3.6.2: a @ a.transpose(2, 3) for a of shape (1, 2, 3, 4), as SDPA scores",
                         "sdpa", B=1, T=3, d_in=4, d_out=0, H=2, query=SDPA_A, key=SDPA_A,
                         value=SDPA_A))
    crane_k = torch.tensor([[[[0.7, 0.7], [0.9, 0.1], [0.9, 0.1]]],
                            [[[0.7, 0.7], [0.1, 0.9], [0.1, 0.9]]]])
    crane_v = torch.tensor([[[[0.5, 0.5], [0.9, 0.1], [0.8, 0.2]]],
                            [[[0.5, 0.5], [0.1, 0.9], [0.2, 0.8]]]])
    out.append(make_case("seed_crane",
                         "seed 003 ch. 4: 'Crane ate fish' (batch 0) and 'Crane lifted steel' (batch 1), "
                         "scale 1; the other tokens' queries, not given by the text, are their keys",
                         "sdpa", B=2, T=3, d_in=2, d_out=0, H=1, scale=1.0, query=crane_k,
                         key=crane_k, value=crane_v))

    # ---- simple -------------------------------------------------------------
    out.append(make_case("simple_b2_t5_d4", "batch 2", "simple", B=2, T=5, d_in=4, d_out=0, data_seed=1))
    out.append(make_case("simple_t1", "a single token", "simple", B=1, T=1, d_in=3, d_out=0, data_seed=2))
    out.append(make_case("simple_sum_b2", "sum normalisation, positive inputs", "simple", B=2, T=4,
                         d_in=3, d_out=0, normalization="sum", data_seed=3,
                         x=torch.rand(2, 4, 3, generator=torch.Generator().manual_seed(3)) + 0.1))
    out.append(make_case("simple_scale_causal", "custom scale 0.5, causal", "simple", B=2, T=4, d_in=3,
                         d_out=0, scale=0.5, causal=True, data_seed=4))

    # ---- SelfAttention_v1 -----------------------------------------------------
    out.append(make_case("v1_s1_t4_d3_o5", "d_out > d_in", "v1", B=1, T=4, d_in=3, d_out=5, seed=1, data_seed=10))
    out.append(make_case("v1_s7_b3_t1", "batch 3 of one token", "v1", B=3, T=1, d_in=4, d_out=2, seed=7, data_seed=11))
    out.append(make_case("v1_s42_b2_t5_d6_o3", "batch 2, d_out < d_in", "v1", B=2, T=5, d_in=6, d_out=3,
                         seed=42, data_seed=12))

    # ---- SelfAttention_v2 -----------------------------------------------------
    out.append(make_case("v2_s3_b2_t5_d4_o4_bias", "qkv_bias", "v2", B=2, T=5, d_in=4, d_out=4, bias=True,
                         seed=3, data_seed=20))
    out.append(make_case("v2_s11_t1", "one token", "v2", B=1, T=1, d_in=3, d_out=2, seed=11, data_seed=21))
    out.append(make_case("v2_s5_kpm", "key padding mask (core extension)", "v2", B=2, T=4, d_in=3, d_out=3,
                         seed=5, data_seed=22, kpm=torch.tensor([[0, 0, 1, 0], [1, 0, 0, 0]], dtype=torch.uint8)))

    # ---- CausalAttention -------------------------------------------------------
    out.append(make_case("causal_s5_b2_t5_d4_o3_cl8", "context_length 8 > T", "causal", B=2, T=5, d_in=4,
                         d_out=3, context_length=8, causal=True, seed=5, data_seed=30))
    out.append(make_case("causal_s6_t1", "one token", "causal", B=2, T=1, d_in=3, d_out=2, context_length=4,
                         causal=True, seed=6, data_seed=31))
    out.append(make_case("causal_s8_bias_dropout_noseed",
                         "qkv_bias, dropout 0.3 in training, generator continued from construction",
                         "causal", B=2, T=5, d_in=4, d_out=3, context_length=5, causal=True, bias=True,
                         dropout=0.3, training=True, seed=8, data_seed=32))
    out.append(make_case("causal_s9_dropout_seeded", "dropout 0.2 with dropout_seed 77", "causal", B=2, T=4,
                         d_in=3, d_out=4, context_length=6, causal=True, dropout=0.2, training=True,
                         seed=9, dropout_seed=77, data_seed=33))
    out.append(make_case("causal_s10_eval_dropout", "dropout 0.5 but eval mode: inactive", "causal", B=1,
                         T=4, d_in=3, d_out=2, context_length=4, causal=True, dropout=0.5, training=False,
                         seed=10, data_seed=34))
    g = torch.Generator().manual_seed(35)
    out.append(make_case("causal_s12_bool_mask", "extra bool attn_mask [L][S]", "causal", B=2, T=5, d_in=3,
                         d_out=2, context_length=5, causal=True, seed=12, data_seed=35,
                         mask_bool=bool_mask(g, (5, 5))))
    g = torch.Generator().manual_seed(36)
    out.append(make_case("causal_s13_add_mask_batched", "float additive attn_mask [B][L][S] with -inf entries",
                         "causal", B=2, T=4, d_in=3, d_out=3, context_length=4, causal=True, seed=13,
                         data_seed=36, mask_add=float_mask(g, (2, 4, 4), p_inf=0.2)))
    out.append(make_case("causal_s14_kpm_full_row",
                         "key padding of key 0 in batch 1: query 0 has no key left (fully masked row -> zeros)",
                         "causal", B=2, T=4, d_in=3, d_out=2, context_length=4, causal=True, seed=14,
                         data_seed=37, kpm=torch.tensor([[0, 0, 0, 1], [1, 0, 0, 0]], dtype=torch.uint8)))
    out.append(make_case("causal_s15_renorm_kpm", "renorm mask method with key padding", "causal", B=2, T=5,
                         d_in=4, d_out=3, context_length=5, causal=True, mask_method="renorm", seed=15,
                         data_seed=38, kpm=torch.tensor([[0, 0, 0, 0, 1], [0, 1, 0, 0, 0]], dtype=torch.uint8)))

    out.append(make_case("causal_s16_dropout_one", "dropout 1.0 in training: PyTorch multiplies by zero and "
                         "draws nothing", "causal", B=1, T=3, d_in=3, d_out=2, context_length=3, causal=True,
                         dropout=1.0, training=True, seed=16, data_seed=39))

    # ---- MultiHeadAttentionWrapper ------------------------------------------------
    out.append(make_case("wrapper_s1_b2_t4_h3", "3 heads", "wrapper", B=2, T=4, d_in=3, d_out=2, H=3,
                         context_length=4, causal=True, seed=1, data_seed=40))
    out.append(make_case("wrapper_s2_h1", "one head", "wrapper", B=1, T=3, d_in=4, d_out=3, H=1,
                         context_length=5, causal=True, seed=2, data_seed=41))
    out.append(make_case("wrapper_s3_dropout_noseed",
                         "dropout 0.25 in training: head 0 draws its whole [B][T][T] mask first",
                         "wrapper", B=2, T=4, d_in=3, d_out=2, H=2, context_length=4, causal=True,
                         dropout=0.25, training=True, seed=3, data_seed=42))
    g = torch.Generator().manual_seed(43)
    out.append(make_case("wrapper_s4_bias_mask_dropout_seeded", "qkv_bias, bool mask, dropout_seed",
                         "wrapper", B=2, T=3, d_in=2, d_out=2, H=2, context_length=3, causal=True,
                         bias=True, dropout=0.4, training=True, dropout_seed=5, seed=4, data_seed=43,
                         mask_bool=bool_mask(g, (3, 3))))

    # ---- MultiHeadAttention ------------------------------------------------------
    out.append(make_case("mha_s1_b2_t5_d6_o6_h3", "3 heads of 2", "mha", B=2, T=5, d_in=6, d_out=6, H=3,
                         context_length=5, causal=True, seed=1, data_seed=50))
    out.append(make_case("mha_s8_medium", "odd medium sizes: T 17, d_in 20, d_out 24, 3 heads, qkv_bias",
                         "mha", B=2, T=17, d_in=20, d_out=24, H=3, context_length=20, causal=True, bias=True,
                         seed=8, data_seed=57))
    out.append(make_case("mha_s2_h1", "one head", "mha", B=1, T=4, d_in=3, d_out=4, H=1, context_length=6,
                         causal=True, seed=2, data_seed=51))
    out.append(make_case("mha_s3_heads_eq_dout", "num_heads == d_out (head_dim 1)", "mha", B=2, T=3, d_in=5,
                         d_out=4, H=4, context_length=3, causal=True, seed=3, data_seed=52))
    out.append(make_case("mha_s4_bias_dropout_seeded", "qkv_bias, dropout 0.1, dropout_seed 9", "mha", B=2,
                         T=4, d_in=4, d_out=4, H=2, context_length=4, causal=True, bias=True, dropout=0.1,
                         training=True, dropout_seed=9, seed=4, data_seed=53))
    out.append(make_case("mha_s5_dropout_noseed", "dropout 0.5, generator continued", "mha", B=1, T=5,
                         d_in=3, d_out=4, H=2, context_length=5, causal=True, dropout=0.5, training=True,
                         seed=5, data_seed=54))
    g = torch.Generator().manual_seed(55)
    out.append(make_case("mha_s6_add_mask_t1", "float mask [L][S] (with T = 1)", "mha", B=2, T=1, d_in=3,
                         d_out=2, H=2, context_length=2, causal=True, seed=6, data_seed=55,
                         mask_add=float_mask(g, (1, 1))))
    g = torch.Generator().manual_seed(56)
    out.append(make_case("mha_s7_bool_batched_scale", "bool mask [B][L][S], custom scale 0.25", "mha", B=2,
                         T=4, d_in=4, d_out=4, H=2, context_length=4, causal=True, scale=0.25, seed=7,
                         data_seed=56, mask_bool=bool_mask(g, (2, 4, 4))))

    # ---- GPT2 CausalSelfAttention ----------------------------------------------------
    out.append(make_case("gpt2_s1_b2_t5_c8_h2", "n_embd 8, 2 heads, eval", "gpt2", B=2, T=5, d_in=8, d_out=0,
                         H=2, context_length=6, causal=True, dropout=0.1, training=False, seed=1, data_seed=60))
    out.append(make_case("gpt2_s2_t1", "one token, block_size 4", "gpt2", B=1, T=1, d_in=4, d_out=0, H=4,
                         context_length=4, causal=True, dropout=0.0, seed=2, data_seed=61))
    out.append(make_case("gpt2_s3_resid_drop_noseed", "resid_drop 0.2 on the output, generator continued",
                         "gpt2", B=2, T=4, d_in=6, d_out=0, H=3, context_length=4, causal=True, dropout=0.2,
                         training=True, seed=3, data_seed=62))
    out.append(make_case("gpt2_s4_resid_drop_seeded", "resid_drop 0.5 with dropout_seed 123", "gpt2", B=1,
                         T=3, d_in=4, d_out=0, H=1, context_length=8, causal=True, dropout=0.5, training=True,
                         seed=4, dropout_seed=123, data_seed=63))
    out.append(make_case("gpt2_s5_kpm", "key padding (core extension)", "gpt2", B=2, T=4, d_in=4, d_out=0, H=2,
                         context_length=4, causal=True, seed=5, data_seed=64,
                         kpm=torch.tensor([[0, 1, 0, 0], [0, 0, 0, 1]], dtype=torch.uint8)))

    # ---- torch.nn.MultiheadAttention ----------------------------------------------------
    out.append(make_case("tmha_s1_b2_t5_e8_h2", "self-attention, biases", "torch_mha", B=2, T=5, d_in=8,
                         d_out=0, H=2, bias=True, seed=1, data_seed=70))
    out.append(make_case("tmha_s2_nobias", "bias=False", "torch_mha", B=1, T=4, d_in=6, d_out=0, H=3,
                         bias=False, seed=2, data_seed=71))
    g = torch.Generator().manual_seed(72)
    out.append(make_case("tmha_s3_cross_kdim_vdim", "kdim 4, vdim 5, 7 keys for 3 queries", "torch_mha", B=2,
                         T=3, d_in=6, d_out=0, H=2, S=7, kdim=4, vdim=5, bias=True, seed=3, data_seed=72,
                         xk=randn(g, 2, 7, 4), xv=randn(g, 2, 7, 5)))
    g = torch.Generator().manual_seed(73)
    out.append(make_case("tmha_s4_cross_same_dim", "separate key and value tensors, 6 keys for 4 queries",
                         "torch_mha", B=2, T=4, d_in=4, d_out=0, H=2, S=6, bias=True, seed=4, data_seed=73,
                         xk=randn(g, 2, 6, 4), xv=randn(g, 2, 6, 4)))
    out.append(make_case("tmha_s5_causal", "causal (a bool attn_mask, torch 1.13 has no is_causal)",
                         "torch_mha", B=2, T=4, d_in=4, d_out=0, H=2, causal=True, bias=True, seed=5,
                         data_seed=74))
    g = torch.Generator().manual_seed(75)
    out.append(make_case("tmha_s6_mask_kpm_full_row",
                         "bool attn_mask and key padding; query 1 of batch 0 has every key masked",
                         "torch_mha", B=2, T=3, d_in=4, d_out=0, H=2, bias=True, seed=6, data_seed=75,
                         mask_bool=torch.tensor([[0, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=torch.uint8),
                         kpm=torch.tensor([[0, 0, 1], [0, 0, 0]], dtype=torch.uint8)))
    g = torch.Generator().manual_seed(76)
    out.append(make_case("tmha_s7_add_batched", "float attn_mask [B][L][S]", "torch_mha", B=2, T=4, d_in=6,
                         d_out=0, H=3, bias=True, seed=7, data_seed=76, mask_add=float_mask(g, (2, 4, 4), 0.15)))
    out.append(make_case("tmha_s8_dropout_noseed", "dropout 0.3 in training, generator continued", "torch_mha",
                         B=2, T=3, d_in=4, d_out=0, H=2, bias=True, dropout=0.3, training=True, seed=8,
                         data_seed=77))
    out.append(make_case("tmha_s9_heads_eq_e_seeded", "num_heads == embed_dim, dropout_seed 1", "torch_mha",
                         B=1, T=4, d_in=4, d_out=0, H=4, bias=False, dropout=0.5, training=True,
                         dropout_seed=1, seed=9, data_seed=78))

    g = torch.Generator().manual_seed(79)
    kv = randn(g, 2, 5, 4)
    out.append(make_case("tmha_s10_cross_kv_same_tensor",
                         "key is value (one tensor, 5 keys for 3 queries): the packed encoder-decoder split",
                         "torch_mha", B=2, T=3, d_in=4, d_out=0, H=2, S=5, bias=True, seed=10, data_seed=79,
                         xk=kv, xv=kv))
    g = torch.Generator().manual_seed(90)
    out.append(make_case("tmha_s11_causal_add_kpm", "causal + float mask [L][S] + key padding", "torch_mha",
                         B=2, T=4, d_in=4, d_out=0, H=2, causal=True, bias=True, seed=11, data_seed=90,
                         mask_add=float_mask(g, (4, 4)),
                         kpm=torch.tensor([[0, 0, 1, 0], [0, 0, 0, 0]], dtype=torch.uint8)))

    # ---- scaled dot-product attention --------------------------------------------------
    out.append(make_case("sdpa_b2_h2_t4_e3", "plain", "sdpa", B=2, T=4, d_in=3, d_out=0, H=2, data_seed=80))
    out.append(make_case("sdpa_l3_s5_causal", "L 3, S 5, causal top-left aligned", "sdpa", B=1, T=3, S=5,
                         d_in=4, d_out=0, H=2, causal=True, data_seed=81))
    out.append(make_case("sdpa_l5_s3_causal", "L 5, S 3, causal top-left aligned", "sdpa", B=2, T=5, S=3,
                         d_in=2, d_out=0, H=1, causal=True, data_seed=82))
    out.append(make_case("sdpa_gqa_h4_hkv2", "grouped-query: 4 query heads, 2 K/V heads, Ev 2", "sdpa", B=2,
                         T=3, S=6, d_in=4, vdim=2, d_out=0, H=4, Hkv=2, data_seed=83))
    g = torch.Generator().manual_seed(84)
    out.append(make_case("sdpa_scale_add_mask", "custom scale 0.3, float mask", "sdpa", B=1, T=4, S=4, d_in=3,
                         d_out=0, H=2, scale=0.3, data_seed=84, mask_add=float_mask(g, (4, 4))))
    out.append(make_case("sdpa_dropout_seed", "dropout 0.4, generator from torch.manual_seed(21)", "sdpa",
                         B=2, T=3, d_in=2, d_out=0, H=2, dropout=0.4, training=True, seed=21, data_seed=85))
    out.append(make_case("sdpa_dropout_dropout_seed", "dropout 0.2 with dropout_seed 4", "sdpa", B=1, T=4,
                         d_in=3, d_out=0, H=3, Hkv=1, dropout=0.2, training=True, seed=0, dropout_seed=4,
                         data_seed=86))
    g = torch.Generator().manual_seed(87)
    out.append(make_case("sdpa_bool_batched_kpm_full_row",
                         "bool mask [B][L][S] + key padding, query 0 of batch 1 fully masked", "sdpa", B=2, T=3,
                         S=4, d_in=3, d_out=0, H=2, data_seed=87,
                         mask_bool=torch.tensor([[[0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0]],
                                                 [[1, 1, 0, 0], [0, 0, 0, 1], [0, 0, 0, 0]]], dtype=torch.uint8),
                         kpm=torch.tensor([[0, 0, 0, 1], [0, 0, 1, 1]], dtype=torch.uint8)))
    g = torch.Generator().manual_seed(89)
    out.append(make_case("sdpa_bool_add_causal", "bool and float masks [B][L][S] + causal, L 4 S 6", "sdpa",
                         B=2, T=4, S=6, d_in=3, d_out=0, H=1, causal=True, data_seed=89,
                         mask_bool=bool_mask(g, (2, 4, 6), 0.2), mask_add=float_mask(g, (2, 4, 6), 0.1)))
    out.append(make_case("sdpa_renorm_causal", "renorm mask method, causal", "sdpa", B=1, T=4, d_in=3, d_out=0,
                         H=2, causal=True, mask_method="renorm", data_seed=88))
    return out


# =========================================================================
# Running a case
# =========================================================================

def build_module(c):
    m = c["module"]
    if m == "v1":
        return SelfAttention_v1(c["d_in"], c["d_out"])
    if m == "v2":
        return SelfAttention_v2(c["d_in"], c["d_out"], qkv_bias=c["bias"])
    if m == "causal":
        return CausalAttention(c["d_in"], c["d_out"], c["context_length"], c["dropout"], c["bias"])
    if m == "wrapper":
        return MultiHeadAttentionWrapper(c["d_in"], c["d_out"], c["context_length"], c["dropout"],
                                         c["H"], c["bias"])
    if m == "mha":
        return MultiHeadAttention(c["d_in"], c["d_out"], c["context_length"], c["dropout"], c["H"],
                                  c["bias"])
    if m == "gpt2":
        cfg = GPTConfig(vocab_size=1, block_size=c["context_length"], n_layer=1, n_head=c["H"],
                        n_embd=c["d_in"], dropout=c["dropout"])
        return CausalSelfAttention(cfg)
    if m == "torch_mha":
        return nn.MultiheadAttention(c["d_in"], c["H"], dropout=c["dropout"], bias=c["bias"],
                                     kdim=c["kdim"] or None, vdim=c["vdim"] or None, batch_first=True)
    return None


def check_torch_mha_init(c, mod):
    """torch.nn.MultiheadAttention draws out_proj (Linear: kaiming weight,
    uniform bias) in __init__, then xavier_uniform_ of the input projections,
    then zeroes both biases. Rebuild that by hand, tensor by tensor."""
    torch.manual_seed(c["seed"])
    E = c["d_in"]
    lin = nn.Linear(E, E, bias=c["bias"])
    if mod._qkv_same_embed_dim:
        w = torch.empty(3 * E, E)
        nn.init.xavier_uniform_(w)
        expect = {"in_proj_weight": w}
    else:
        expect = {}
        for name, width in (("q_proj_weight", E), ("k_proj_weight", c["kdim"] or E),
                            ("v_proj_weight", c["vdim"] or E)):
            w = torch.empty(E, width)
            nn.init.xavier_uniform_(w)
            expect[name] = w
    if c["bias"]:
        expect["in_proj_bias"] = torch.zeros(3 * E)
        expect["out_proj.bias"] = torch.zeros(E)
    expect["out_proj.weight"] = lin.weight.detach()
    sd = mod.state_dict()
    assert list(sd.keys()) == [k for k in sd.keys() if k in expect] and set(sd) == set(expect), \
        (list(sd.keys()), list(expect))
    for k, v in expect.items():
        assert torch.equal(sd[k], v), ("torch MHA init differs", c["name"], k)


def run_case(c):
    gen = torch.Generator().manual_seed(c["data_seed"])
    B, T, H = c["B"], c["T"], c["H"]
    S = c["S"] or T
    m = c["module"]
    x = c["x"]
    q = k = v = None
    if m == "sdpa":
        q, k, v = c["query"], c["key"], c["value"]
        Hkv = c["Hkv"] or H
        if q is None:
            q = randn(gen, B, H, T, c["d_in"])
            k = randn(gen, B, Hkv, S, c["d_in"])
            v = randn(gen, B, Hkv, S, c["vdim"] or c["d_in"])
    elif x is None:
        x = randn(gen, B, T, c["d_in"])
    ex = Extra(B, T, S, c["causal"], c["mask_bool"], c["mask_add"], c["kpm"])
    cfg = {"scale": c["scale"], "mask_method": c["mask_method"], "normalization": c["normalization"],
           "dropout": c["dropout"], "training": c["training"]}

    mod = None
    if c["seed"] is not None:
        torch.manual_seed(c["seed"])
    mod = build_module(c)
    if mod is not None:
        mod.train(c["training"])
        if m == "torch_mha":
            check_torch_mha_init(c, mod)
            torch.manual_seed(c["seed"])
            mod = build_module(c)
            mod.train(c["training"])
    if c["dropout_seed"] is not None:
        torch.manual_seed(c["dropout_seed"])
    state = torch.get_rng_state()

    with torch.enable_grad():
        if m == "simple":
            rec = fwd_simple(x, ex, cfg)
        elif m == "v1":
            rec = fwd_v1(mod, x, ex, cfg)
        elif m == "v2":
            rec = fwd_linear3(mod, x, ex, cfg, per_sequence=True)
        elif m == "causal":
            rec = fwd_linear3(mod, x, ex, cfg)
        elif m == "wrapper":
            rec = fwd_wrapper(mod, x, ex, cfg)
        elif m == "mha":
            rec = fwd_mha(mod, x, ex, cfg)
        elif m == "gpt2":
            rec = fwd_gpt2(mod, x, ex, cfg)
        elif m == "torch_mha":
            rec = fwd_torch_mha(mod, x, c["xk"], c["xv"], ex, cfg)
        else:
            rec = fwd_sdpa(q, k, v, ex, cfg)
    rec = {key: val.detach() for key, val in rec.items()}
    rec["mask"] = ex.mask.to(torch.uint8)
    if "weights_avg" not in rec:
        rec["weights_avg"] = rec["weights"].mean(dim=1)
    verified = verify_against_module(c, mod, x, ex, cfg, state, rec)
    return x, q, k, v, mod, rec, verified


def verify_against_module(c, mod, x, ex, cfg, state, rec):
    """Runs the real module from the same generator state and checks that the
    instrumented copy gave the same bits. Returns how it was verified."""
    m = c["module"]
    full = ex.mask.all(dim=-1)  # [B][L]: rows PyTorch turns into NaN
    standard = cfg["scale"] is None and cfg["mask_method"] == "neg_inf"
    if m in ("simple", "sdpa"):
        return "instrumented only (no PyTorch module)"
    if m == "torch_mha":
        if not standard:
            return "instrumented only"
        torch.set_rng_state(state)
        attn_mask, kpm = tmha_masks(ex, c["B"], c["H"])
        xk = x if c["xk"] is None else c["xk"]
        xv = x if c["xv"] is None else c["xv"]
        out, w = mod(x, xk, xv, key_padding_mask=kpm, attn_mask=attn_mask, need_weights=True,
                     average_attn_weights=False)
        out, w = out.detach(), w.detach()
        ok_rows = ~full
        assert torch.equal(out[ok_rows], rec["context"][ok_rows]), c["name"]
        assert torch.isnan(out[full]).all(), c["name"]
        wrows = ok_rows[:, None, :].expand(-1, c["H"], -1)
        assert torch.equal(w[wrows], rec["weights"][wrows]), c["name"]
        out2, wavg = mod(x, xk, xv, key_padding_mask=kpm, attn_mask=attn_mask) if not c["training"] else (None, None)
        if wavg is not None:
            wavg = wavg.detach()
            assert torch.equal(wavg[ok_rows], rec["weights_avg"][ok_rows]), c["name"]
        return "bit-equal to torch.nn.MultiheadAttention (fully masked rows: NaN there, zeros here)"
    if not (standard and ex.plain and c["causal"] == (m not in ("v1", "v2"))):
        return "instrumented only (masks or options the seed class does not take)"
    torch.set_rng_state(state)
    with torch.enable_grad():
        if m in ("v1", "v2"):
            out = torch.stack([mod(x[b]) for b in range(x.shape[0])])  # the seed classes use keys.T: 2-D only
        else:
            out = mod(x)
    assert torch.equal(out.detach(), rec["context"]), ("instrumented copy differs", c["name"])
    return "bit-equal to the seed's module"


# =========================================================================
# JSON
# =========================================================================

def fnum(v):
    """A float32 value as the shortest decimal that reads back to it."""
    f = np.float32(v)
    if np.isnan(f):
        raise ValueError("NaN in a golden tensor")
    if np.isinf(f):
        if f < 0:
            return None
        raise ValueError("+inf in a golden tensor")
    s = float(str(f))
    assert np.float32(s) == f
    return s


def tensor_json(t, ints=False):
    t = t.detach().contiguous()
    flat = t.reshape(-1).tolist()
    if ints:
        data = [int(v) for v in flat]
    else:
        data = [fnum(v) for v in flat]
    return {"shape": list(t.shape), "data": data}


def case_json(c, x, q, k, v, mod, rec, verified):
    m = c["module"]
    has_dropout_rng = c["training"] and c["dropout"] > 0
    config = {
        "batch": c["B"], "tokens": c["T"], "d_in": c["d_in"], "d_out": c["d_out"],
        "num_heads": c["H"], "kv_tokens": c["S"], "kv_heads": c["Hkv"], "kdim": c["kdim"],
        "vdim": c["vdim"], "context_length": c["context_length"], "bias": int(c["bias"]),
        "causal": int(c["causal"]), "normalization": c["normalization"],
        "mask_method": c["mask_method"], "scale": c["scale"], "dropout": c["dropout"],
        "training": int(c["training"]),
        "seed": c["seed"] if (mod is not None or has_dropout_rng) else c["seed"],
        "dropout_seed": c["dropout_seed"],
    }
    inputs = {}
    if m == "sdpa":
        inputs["query"], inputs["key"], inputs["value"] = tensor_json(q), tensor_json(k), tensor_json(v)
    else:
        inputs["x"] = tensor_json(x)
        if c["xk"] is not None:
            inputs["x_key"], inputs["x_value"] = tensor_json(c["xk"]), tensor_json(c["xv"])
    if c["mask_bool"] is not None:
        inputs["attn_mask_bool"] = tensor_json(c["mask_bool"], ints=True)
    if c["mask_add"] is not None:
        inputs["attn_mask_add"] = tensor_json(c["mask_add"])
    if c["kpm"] is not None:
        inputs["key_padding_mask"] = tensor_json(c["kpm"], ints=True)
    params = []
    if mod is not None:
        buffers = {name for name, _ in mod.named_buffers()}
        for name, t in mod.state_dict().items():
            params.append({"name": name, "shape": list(t.shape), "data": tensor_json(t)["data"],
                           "buffer": name in buffers})
    outputs = {}
    for key in ("context", "context_heads", "queries", "keys", "values", "scores", "masked_scores",
                "mask", "weights", "weights_avg", "dropout_mask"):
        outputs[key] = tensor_json(rec[key], ints=(key == "mask"))
    notes = ["generated by tests/golden/generate.py with torch " + torch.__version__,
             "verification: " + verified]
    if bool(rec["mask"].bool().all(dim=-1).any()):
        notes.append("a query row has every key masked: PyTorch gives NaN there; weights and "
                     "context_heads rows are zeros by the project's definition (context = "
                     "out_proj bias where there is an output projection)")
    if c["notes"]:
        notes.append(c["notes"])
    return {"name": c["name"], "description": c["description"], "module": MODULES[m],
            "config": config, "inputs": inputs, "params": params, "outputs": outputs,
            "notes": notes}


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    os.makedirs(outdir, exist_ok=True)
    files = {}  # everything is computed (and verified) before any file is touched
    for c in cases():
        obj = case_json(c, *run_case(c))
        files[c["name"] + ".json"] = json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n"
        print(f"{c['name']:40s} {len(files[c['name'] + '.json']):7d} B  {obj['notes'][1]}")
    for old in os.listdir(outdir):
        if old.endswith(".json") and old not in files:
            os.remove(os.path.join(outdir, old))
    for name, text in files.items():
        with open(os.path.join(outdir, name), "w") as f:
            f.write(text)
    print(f"{len(files)} cases, {sum(len(t) for t in files.values())} bytes, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")


if __name__ == "__main__":
    main()
