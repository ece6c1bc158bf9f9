"""The decoder families of Hugging Face transformers in float32 PyTorch, for
the goldens of tests/golden/families/ (generate_families.py): Llama (2, 3.x,
SmolLM2, TinyLlama), Mistral, Qwen2, Qwen3, GPT-NeoX (Pythia) and Gemma 3
(text). There is no transformers package here: each piece is transcribed
from transformers' own modeling files, read in the huggingface/transformers
repository (4.4x-4.5x, the versions released checkpoints' config.json files
come from), and the comment above it names the class or function it
follows. Only what a forward pass in eval mode does is kept: no dropout, no
cache, no padding mask, no tensor parallelism.

    logits, hooks = forward(config, state_dict, idx)

config is a config.json dict as a released checkpoint writes it, state_dict
maps the family's Hugging Face tensor names to float32 tensors (a file's
F16/BF16 values widened exactly), idx is a LongTensor [B][T]. hooks maps
TransformerLens's hook names ("blocks.0.attn.hook_rot_q") to tensors with
the batch axis first, each recorded where the forward pass makes it:

  blocks.L.hook_resid_pre        [B][T][C]    the block's input
  blocks.L.ln1.hook_normalized   [B][T][C]    the first norm's input normalised, before
                                              its weight (and bias): RMSNorm
                                              x * rsqrt(mean(x^2) + eps), LayerNorm
                                              (x - mean) / sqrt(var + eps)
  blocks.L.attn.hook_q           [B][T][H][D]   q_proj (with its bias), before any norm or RoPE
  blocks.L.attn.hook_k/hook_v    [B][T][Hkv][D] the same for k_proj and v_proj
  blocks.L.attn.hook_rot_q       [B][T][H][D]   what the scores use: after q_norm and RoPE
  blocks.L.attn.hook_rot_k       [B][T][Hkv][D] the same for the keys
  blocks.L.attn.hook_attn_scores [B][H][T][T] scaled scores, -inf where masked (causal,
                                              and the sliding window of local layers)
  blocks.L.attn.hook_pattern     [B][H][T][T] the softmax
  blocks.L.attn.hook_z           [B][T][H][D] each head's weighted sum of values
  blocks.L.hook_attn_out         [B][T][C]    what the block adds to the residual (o_proj,
                                              then Gemma's post_attention_layernorm)
  blocks.L.hook_resid_mid        [B][T][C]    resid_pre + attn_out (not with GPT-NeoX's
                                              parallel residual, which has none)
  blocks.L.ln2.hook_normalized   [B][T][C]    the second norm's input normalised
  blocks.L.mlp.hook_pre          [B][T][F]    the MLP's first layer before the activation
                                              (gated MLPs: gate_proj(x))
  blocks.L.mlp.hook_pre_linear   [B][T][F]    gated MLPs only: up_proj(x)
  blocks.L.mlp.hook_post         [B][T][F]    act(pre); gated: act(gate) * up
  blocks.L.hook_mlp_out          [B][T][C]    the MLP's output added to the residual (after
                                              Gemma's post_feedforward_layernorm)
  blocks.L.hook_resid_post       [B][T][C]    the block's output
  ln_final.hook_normalized       [B][T][C]    the final norm's input normalised

Where transformers computes in the weights' dtype, this computes in
float32 throughout (the goldens' weights are float32 values, the rounded
ones of an F16/BF16 file widened exactly); the softmax is float32 in both.
"""
import math

import torch
import torch.nn.functional as F

# ==== Norms ===================================================================


def rms_normalized(x, eps):
    """LlamaRMSNorm.forward (and Qwen2/Qwen3/Mistral's copies, Gemma3RMSNorm._norm)
    up to the weight: hidden_states * torch.rsqrt(variance + eps), variance =
    hidden_states.pow(2).mean(-1, keepdim=True), in float32."""
    x = x.to(torch.float32)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rms_norm(x, w, eps):
    """LlamaRMSNorm.forward: self.weight * hidden_states."""
    return w * rms_normalized(x, eps)


def gemma_rms_norm(x, w, eps):
    """Gemma3RMSNorm.forward: output * (1.0 + self.weight.float()); the weight is
    stored centred on 0 (Gemma3PreTrainedModel._init_weights zeroes it)."""
    return rms_normalized(x, eps) * (1.0 + w.float())


def layer_normalized(x, eps):
    """TransformerLens's LayerNorm up to hook_normalized: x - mean, divided by
    sqrt(mean((x - mean)^2) + eps); nn.LayerNorm normalises the same way."""
    x = x - x.mean(-1, keepdim=True)
    return x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()


def layer_norm(x, w, b, eps):
    """nn.LayerNorm(hidden_size, eps=config.layer_norm_eps) (GPTNeoXLayer's
    input_layernorm and post_attention_layernorm, GPTNeoXModel.final_layer_norm)."""
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


# ==== Rotary position embeddings ==============================================


def inv_freq_default(base, dim):
    """_compute_default_rope_parameters (modeling_rope_utils.py): 1.0 / (base **
    (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)), dim =
    int(head_dim * partial_rotary_factor)."""
    return 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))


def inv_freq_linear(base, dim, factor):
    """_compute_linear_scaling_rope_parameters: the default frequencies / factor."""
    inv_freq = inv_freq_default(base, dim)
    inv_freq /= factor
    return inv_freq


def inv_freq_llama3(base, dim, scaling):
    """_compute_llama3_parameters (Llama 3.1's frequency bands): wavelengths
    above original_max_position_embeddings / low_freq_factor divided by factor,
    below original / high_freq_factor unchanged, smoothed in between."""
    inv_freq = inv_freq_default(base, dim)
    factor = scaling["factor"]
    low_freq_factor = scaling["low_freq_factor"]
    high_freq_factor = scaling["high_freq_factor"]
    old_context_len = scaling["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / \
        (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + \
        smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)


def inv_freq_of(base, dim, scaling):
    """ROPE_INIT_FUNCTIONS[rope_type] for the types these families' released
    configs use; rope_scaling's "rope_type" (or the older "type")."""
    kind = "default" if scaling is None else scaling.get("rope_type", scaling.get("type"))
    if kind == "default":
        return inv_freq_default(base, dim)
    if kind == "linear":
        return inv_freq_linear(base, dim, scaling["factor"])
    if kind == "llama3":
        return inv_freq_llama3(base, dim, scaling)
    raise ValueError("rope_type %r is not written here" % kind)


def rope_cos_sin(inv_freq, T):
    """LlamaRotaryEmbedding.forward for position_ids 0..T-1: freqs = inv_freq @
    positions in float32, emb = cat(freqs, freqs), cos and sin ([T][dim]);
    attention_scaling is 1 for default, linear and llama3."""
    positions = torch.arange(T, dtype=torch.int64).float()
    freqs = (inv_freq[:, None].float() @ positions[None, :]).transpose(0, 1)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    """rotate_half: cat(-x2, x1) of the two halves of the last axis."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin):
    """apply_rotary_pos_emb on [B][heads][T][dim] (unsqueeze_dim=1):
    (q * cos) + (rotate_half(q) * sin)."""
    cos, sin = cos[None, None], sin[None, None]
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


# ==== Attention ===============================================================


def causal_allowed(T, window=None):
    """masking_utils.causal_mask_function (kv_idx <= q_idx), and with a window
    sliding_window_causal_mask_function = and_masks(sliding_window_overlay(w),
    causal): kv_idx > q_idx - sliding_window, so a query sees itself and the
    window - 1 keys before it. [T][T] bool, True = attended."""
    q = torch.arange(T)[:, None]
    kv = torch.arange(T)[None, :]
    allowed = kv <= q
    if window is not None:
        allowed = allowed & (kv > q - window)
    return allowed


def repeat_kv(x, n_rep):
    """repeat_kv: [B][Hkv][T][D] -> [B][Hkv * n_rep][T][D], each key/value head
    repeated for n_rep consecutive query heads (query head h reads h // n_rep)."""
    B, Hkv, T, D = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(B, Hkv, n_rep, T, D).reshape(B, Hkv * n_rep, T, D)


def eager_attention(q, k, v, allowed, scaling, rec, pre):
    """eager_attention_forward (modeling_llama.py and the others' copies):
    matmul(query, key_states^T) * scaling, plus the mask (finfo.min where not
    allowed, from the masking utilities), softmax in float32, @ value_states,
    transposed to [B][T][H][D]. q [B][H][T][D], k and v [B][Hkv][T][D]."""
    n_rep = q.shape[1] // k.shape[1]
    key_states = repeat_kv(k, n_rep)
    value_states = repeat_kv(v, n_rep)
    attn_weights = torch.matmul(q, key_states.transpose(2, 3)) * scaling
    rec[pre + "attn.hook_attn_scores"] = attn_weights.masked_fill(~allowed, float("-inf"))
    mask = torch.zeros(allowed.shape).masked_fill(~allowed, torch.finfo(torch.float32).min)
    attn_weights = attn_weights + mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32)
    rec[pre + "attn.hook_pattern"] = attn_weights
    attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).contiguous()
    rec[pre + "attn.hook_z"] = attn_output
    return attn_output


def linear(x, sd, name):
    """nn.Linear: x @ weight^T + bias (the bias when the state_dict has one)."""
    return F.linear(x, sd[name + ".weight"], sd.get(name + ".bias"))


# ==== MLPs ====================================================================


def activation(name):
    """ACT2FN (activations.py): "silu" SiLUActivation = F.silu, "gelu"
    GELUActivation = F.gelu (erf), "gelu_pytorch_tanh" PytorchGELUTanh =
    F.gelu(approximate="tanh"), "gelu_new" NewGELUActivation (the same tanh
    formula written out)."""
    if name in ("silu", "swish"):
        return F.silu
    if name == "gelu":
        return F.gelu
    if name == "gelu_pytorch_tanh":
        return lambda x: F.gelu(x, approximate="tanh")
    if name == "gelu_new":
        return lambda x: 0.5 * x * (1.0 + torch.tanh(
            math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    raise ValueError("activation %r is not written here" % name)


def gated_mlp(x, sd, p, act, rec, pre):
    """LlamaMLP.forward (Mistral, Qwen2, Qwen3 and Gemma3MLP the same):
    down_proj(act_fn(gate_proj(x)) * up_proj(x))."""
    gate = linear(x, sd, p + "mlp.gate_proj")
    up = linear(x, sd, p + "mlp.up_proj")
    rec[pre + "mlp.hook_pre"] = gate
    rec[pre + "mlp.hook_pre_linear"] = up
    post = act(gate) * up
    rec[pre + "mlp.hook_post"] = post
    return linear(post, sd, p + "mlp.down_proj")


# ==== Llama, Mistral, Qwen2, Qwen3 ============================================


def llama_like(config):
    """What a llama/mistral/qwen2/qwen3 config.json says, with the defaults of
    LlamaConfig, MistralConfig, Qwen2Config and Qwen3Config for keys left out."""
    mt = config["model_type"]
    C, H = config["hidden_size"], config["num_attention_heads"]
    s = {"C": C, "H": H, "L": config["num_hidden_layers"],
         "Hkv": config.get("num_key_value_heads") or H,
         # LlamaAttention: getattr(config, "head_dim", hidden_size // num_attention_heads);
         # Qwen3Config's head_dim defaults to 128
         "D": config.get("head_dim") or (128 if mt == "qwen3" else C // H),
         "eps": config.get("rms_norm_eps", 1e-6), "theta": config.get("rope_theta", 10000.0),
         "scaling": config.get("rope_scaling"), "act": config.get("hidden_act", "silu"),
         "tied": config.get("tie_word_embeddings", False), "qk_norm": mt == "qwen3"}
    # LlamaAttention / Qwen3Attention: config.attention_bias on q, k, v and o;
    # Qwen2Attention: bias=True on q, k, v, none on o; MistralAttention: none.
    # LlamaMLP: config.mlp_bias on gate, up and down; the others: none
    bias = bool(config.get("attention_bias", False)) and mt in ("llama", "qwen3")
    s["qkv_bias"], s["o_bias"] = bias or mt == "qwen2", bias
    s["mlp_bias"] = bool(config.get("mlp_bias", False)) and mt == "llama"
    s["F"], s["V"] = config["intermediate_size"], config["vocab_size"]
    s["windows"] = [None] * s["L"]
    if mt == "mistral":
        # MistralModel: create_sliding_window_causal_mask when config.sliding_window
        # is set (MistralConfig's default 4096), else create_causal_mask
        s["windows"] = [config.get("sliding_window", 4096)] * s["L"]
    elif mt in ("qwen2", "qwen3") and config.get("use_sliding_window", False):
        # Qwen2Config / Qwen3Config layer_types: "sliding_attention" for layers
        # i >= max_window_layers when use_sliding_window
        first = config.get("max_window_layers", 28)
        s["windows"] = [config.get("sliding_window", 4096) if i >= first else None
                        for i in range(s["L"])]
    return s


def llama_attention(x, sd, p, s, cos, sin, window, rec, pre):
    """LlamaAttention.forward (Qwen2Attention, MistralAttention the same;
    Qwen3Attention adds q_norm/k_norm per head before RoPE): q/k/v projections
    viewed as [B][T][heads][D], RoPE, eager attention, o_proj."""
    B, T, _ = x.shape
    q = linear(x, sd, p + "self_attn.q_proj").view(B, T, -1, s["D"])
    k = linear(x, sd, p + "self_attn.k_proj").view(B, T, -1, s["D"])
    v = linear(x, sd, p + "self_attn.v_proj").view(B, T, -1, s["D"])
    rec[pre + "attn.hook_q"], rec[pre + "attn.hook_k"], rec[pre + "attn.hook_v"] = q, k, v
    if s["qk_norm"]:
        # Qwen3Attention.forward: self.q_norm(self.q_proj(hidden_states).view(hidden_shape))
        q = rms_norm(q, sd[p + "self_attn.q_norm.weight"], s["eps"])
        k = rms_norm(k, sd[p + "self_attn.k_norm.weight"], s["eps"])
    q, k = apply_rotary_pos_emb(q.transpose(1, 2), k.transpose(1, 2), cos, sin)
    rec[pre + "attn.hook_rot_q"] = q.transpose(1, 2)
    rec[pre + "attn.hook_rot_k"] = k.transpose(1, 2)
    z = eager_attention(q, k, v.transpose(1, 2), causal_allowed(T, window),
                        s["D"] ** -0.5, rec, pre)
    return linear(z.reshape(B, T, -1), sd, p + "self_attn.o_proj")


def llama_forward(config, sd, idx):
    """LlamaForCausalLM.forward = LlamaModel.forward (embed_tokens, the shared
    rotary_emb, LlamaDecoderLayer.forward per layer, norm) then lm_head (or
    embed_tokens' weight when tie_word_embeddings); Mistral, Qwen2 and Qwen3 are
    the same model with the differences llama_like() reads."""
    s = llama_like(config)
    rec = {}
    h = F.embedding(idx, sd["model.embed_tokens.weight"])
    # LlamaRotaryEmbedding.__init__: rope_init_fn(config) with dim = head_dim
    cos, sin = rope_cos_sin(inv_freq_of(s["theta"], s["D"], s["scaling"]), idx.shape[1])
    act = activation(s["act"])
    for l in range(s["L"]):
        p, pre = "model.layers.%d." % l, "blocks.%d." % l
        # LlamaDecoderLayer.forward: residual + self_attn(input_layernorm(x)),
        # then residual + mlp(post_attention_layernorm(x))
        rec[pre + "hook_resid_pre"] = h
        rec[pre + "ln1.hook_normalized"] = rms_normalized(h, s["eps"])
        a = rms_norm(h, sd[p + "input_layernorm.weight"], s["eps"])
        attn_out = llama_attention(a, sd, p, s, cos, sin, s["windows"][l], rec, pre)
        rec[pre + "hook_attn_out"] = attn_out
        h = h + attn_out
        rec[pre + "hook_resid_mid"] = h
        rec[pre + "ln2.hook_normalized"] = rms_normalized(h, s["eps"])
        m = rms_norm(h, sd[p + "post_attention_layernorm.weight"], s["eps"])
        mlp_out = gated_mlp(m, sd, p, act, rec, pre)
        rec[pre + "hook_mlp_out"] = mlp_out
        h = h + mlp_out
        rec[pre + "hook_resid_post"] = h
    rec["ln_final.hook_normalized"] = rms_normalized(h, s["eps"])
    h = rms_norm(h, sd["model.norm.weight"], s["eps"])
    head = sd["model.embed_tokens.weight"] if s["tied"] else sd["lm_head.weight"]
    return F.linear(h, head), rec


# ==== GPT-NeoX (Pythia) =======================================================


def neox_attention(x, sd, p, config, cos, sin, rec, pre):
    """GPTNeoXAttention (_attn_projections_and_rope, _attn): query_key_value
    viewed as [B][T][H][3 * head_size] (per head q, k, v), RoPE on the first
    rotary_ndims = int(head_size * rotary_pct) dims of q and k, the rest passed
    through; scores by baddbmm with alpha = norm_factor = head_size ** -0.5,
    torch.where(causal_mask, scores, finfo.min), softmax, @ value; dense."""
    B, T, C = x.shape
    H = config["num_attention_heads"]
    D = C // H
    rot = int(D * config.get("rotary_pct", 0.25))
    qkv = linear(x, sd, p + "attention.query_key_value").view(B, T, H, 3 * D)
    q, k, v = qkv[..., :D], qkv[..., D:2 * D], qkv[..., 2 * D:]
    rec[pre + "attn.hook_q"], rec[pre + "attn.hook_k"], rec[pre + "attn.hook_v"] = q, k, v
    q, k, v = q.permute(0, 2, 1, 3), k.permute(0, 2, 1, 3), v.permute(0, 2, 1, 3)
    q_rot, k_rot = apply_rotary_pos_emb(q[..., :rot], k[..., :rot], cos, sin)
    q = torch.cat((q_rot, q[..., rot:]), dim=-1)
    k = torch.cat((k_rot, k[..., rot:]), dim=-1)
    rec[pre + "attn.hook_rot_q"] = q.transpose(1, 2)
    rec[pre + "attn.hook_rot_k"] = k.transpose(1, 2)
    scores = torch.baddbmm(torch.zeros(B * H, T, T), q.reshape(B * H, T, D),
                           k.reshape(B * H, T, D).transpose(1, 2), beta=1.0, alpha=D ** -0.5)
    scores = scores.view(B, H, T, T)
    allowed = causal_allowed(T)
    rec[pre + "attn.hook_attn_scores"] = scores.masked_fill(~allowed, float("-inf"))
    scores = torch.where(allowed, scores, torch.tensor(torch.finfo(torch.float32).min))
    weights = F.softmax(scores, dim=-1)
    rec[pre + "attn.hook_pattern"] = weights
    z = torch.matmul(weights, v).permute(0, 2, 1, 3).contiguous()
    rec[pre + "attn.hook_z"] = z
    return linear(z.view(B, T, C), sd, p + "attention.dense")


def neox_mlp(x, sd, p, act, rec, pre):
    """GPTNeoXMLP.forward: dense_4h_to_h(act(dense_h_to_4h(x)))."""
    h = linear(x, sd, p + "mlp.dense_h_to_4h")
    rec[pre + "mlp.hook_pre"] = h
    h = act(h)
    rec[pre + "mlp.hook_post"] = h
    return linear(h, sd, p + "mlp.dense_4h_to_h")


def neox_forward(config, sd, idx):
    """GPTNeoXForCausalLM.forward = GPTNeoXModel.forward (embed_in,
    GPTNeoXLayer.forward per layer, final_layer_norm) then embed_out."""
    eps = config.get("layer_norm_eps", 1e-5)
    parallel = config.get("use_parallel_residual", True)
    act = activation(config.get("hidden_act", "gelu"))
    D = config["hidden_size"] // config["num_attention_heads"]
    rot = int(D * config.get("rotary_pct", 0.25))
    # GPTNeoXRotaryEmbedding(rotary_ndims, base=config.rotary_emb_base)
    cos, sin = rope_cos_sin(inv_freq_of(config.get("rotary_emb_base", 10000), rot,
                                        config.get("rope_scaling")), idx.shape[1])
    rec = {}
    h = F.embedding(idx, sd["gpt_neox.embed_in.weight"])
    for l in range(config["num_hidden_layers"]):
        p, pre = "gpt_neox.layers.%d." % l, "blocks.%d." % l
        rec[pre + "hook_resid_pre"] = h
        rec[pre + "ln1.hook_normalized"] = layer_normalized(h, eps)
        a = layer_norm(h, sd[p + "input_layernorm.weight"], sd[p + "input_layernorm.bias"], eps)
        attn_out = neox_attention(a, sd, p, config, cos, sin, rec, pre)
        rec[pre + "hook_attn_out"] = attn_out
        # GPTNeoXLayer.forward (use_parallel_residual): x + attn(ln1(x)) + mlp(ln2(x)),
        # summed as mlp_output + attn_output + hidden_states; otherwise
        # attn_output = attn_output + hidden_states, then mlp_output + attn_output
        mid = h if parallel else attn_out + h
        if not parallel:
            rec[pre + "hook_resid_mid"] = mid
        rec[pre + "ln2.hook_normalized"] = layer_normalized(mid, eps)
        m = layer_norm(mid, sd[p + "post_attention_layernorm.weight"],
                       sd[p + "post_attention_layernorm.bias"], eps)
        mlp_out = neox_mlp(m, sd, p, act, rec, pre)
        rec[pre + "hook_mlp_out"] = mlp_out
        h = mlp_out + attn_out + h if parallel else mlp_out + mid
        rec[pre + "hook_resid_post"] = h
    rec["ln_final.hook_normalized"] = layer_normalized(h, eps)
    h = layer_norm(h, sd["gpt_neox.final_layer_norm.weight"],
                   sd["gpt_neox.final_layer_norm.bias"], eps)
    head = sd["gpt_neox.embed_in.weight"] if config.get("tie_word_embeddings", False) \
        else sd["embed_out.weight"]
    return F.linear(h, head), rec


# ==== Gemma 3 (text) ==========================================================


def gemma3_layer_types(config):
    """Gemma3TextConfig: layer_types as given, else from sliding_window_pattern
    (default 6): "sliding_attention" if bool((i + 1) % pattern) else
    "full_attention" (4.50's Gemma3Attention.is_sliding, the same rule)."""
    if config.get("layer_types"):
        return list(config["layer_types"])
    pattern = config.get("sliding_window_pattern", config.get("_sliding_window_pattern", 6))
    return ["sliding_attention" if (i + 1) % pattern else "full_attention"
            for i in range(config["num_hidden_layers"])]


def gemma3_attention(x, sd, p, config, cos, sin, window, rec, pre):
    """Gemma3Attention.forward: q/k/v projections, q_norm and k_norm
    (Gemma3RMSNorm over head_dim) before RoPE, eager attention with scaling
    query_pre_attn_scalar ** -0.5 and the layer's mask, o_proj."""
    B, T, _ = x.shape
    D, eps = config.get("head_dim", 256), config.get("rms_norm_eps", 1e-6)
    q = linear(x, sd, p + "self_attn.q_proj").view(B, T, -1, D)
    k = linear(x, sd, p + "self_attn.k_proj").view(B, T, -1, D)
    v = linear(x, sd, p + "self_attn.v_proj").view(B, T, -1, D)
    rec[pre + "attn.hook_q"], rec[pre + "attn.hook_k"], rec[pre + "attn.hook_v"] = q, k, v
    q = gemma_rms_norm(q, sd[p + "self_attn.q_norm.weight"], eps)
    k = gemma_rms_norm(k, sd[p + "self_attn.k_norm.weight"], eps)
    q, k = apply_rotary_pos_emb(q.transpose(1, 2), k.transpose(1, 2), cos, sin)
    rec[pre + "attn.hook_rot_q"] = q.transpose(1, 2)
    rec[pre + "attn.hook_rot_k"] = k.transpose(1, 2)
    scaling = config.get("query_pre_attn_scalar", 256) ** -0.5
    z = eager_attention(q, k, v.transpose(1, 2), causal_allowed(T, window), scaling, rec, pre)
    return linear(z.reshape(B, T, -1), sd, p + "self_attn.o_proj")


def gemma3_block(h, sd, l, config, ropes, kind, rec):
    """Gemma3DecoderLayer.forward: residual + post_attention_layernorm(
    self_attn(input_layernorm(x))), then residual + post_feedforward_layernorm(
    mlp(pre_feedforward_layernorm(x)))."""
    p, pre = "model.layers.%d." % l, "blocks.%d." % l
    eps = config.get("rms_norm_eps", 1e-6)
    window = config.get("sliding_window", 4096) if kind == "sliding_attention" else None
    cos, sin = ropes[kind]
    rec[pre + "hook_resid_pre"] = h
    rec[pre + "ln1.hook_normalized"] = rms_normalized(h, eps)
    a = gemma_rms_norm(h, sd[p + "input_layernorm.weight"], eps)
    a = gemma3_attention(a, sd, p, config, cos, sin, window, rec, pre)
    attn_out = gemma_rms_norm(a, sd[p + "post_attention_layernorm.weight"], eps)
    rec[pre + "hook_attn_out"] = attn_out
    h = h + attn_out
    rec[pre + "hook_resid_mid"] = h
    rec[pre + "ln2.hook_normalized"] = rms_normalized(h, eps)
    m = gemma_rms_norm(h, sd[p + "pre_feedforward_layernorm.weight"], eps)
    m = gated_mlp(m, sd, p, activation(config.get("hidden_activation", "gelu_pytorch_tanh")),
                  rec, pre)
    mlp_out = gemma_rms_norm(m, sd[p + "post_feedforward_layernorm.weight"], eps)
    rec[pre + "hook_mlp_out"] = mlp_out
    h = h + mlp_out
    rec[pre + "hook_resid_post"] = h
    return h


def gemma3_forward(config, sd, idx):
    """Gemma3ForCausalLM.forward = Gemma3TextModel.forward (embed_tokens, a
    Gemma3TextScaledWordEmbedding, times hidden_size ** 0.5 as a float32
    scalar; the global rotary_emb with rope_theta and rope_scaling for
    "full_attention" layers, rotary_emb_local with rope_local_base_freq and
    default RoPE for "sliding_attention" layers; the layers; norm), then
    lm_head, tied to embed_tokens."""
    for key in ("attn_logit_softcapping", "final_logit_softcapping"):
        if config.get(key) is not None:
            raise ValueError("%s is not written here (Gemma 3's released configs: null)" % key)
    C, T = config["hidden_size"], idx.shape[1]
    D, eps = config.get("head_dim", 256), config.get("rms_norm_eps", 1e-6)
    ropes = {
        "full_attention": rope_cos_sin(inv_freq_of(config.get("rope_theta", 1e6), D,
                                                   config.get("rope_scaling")), T),
        "sliding_attention": rope_cos_sin(inv_freq_default(
            config.get("rope_local_base_freq", 10000.0), D), T),
    }
    rec = {}
    embed = sd["model.embed_tokens.weight"]
    # Gemma3TextScaledWordEmbedding.forward: embedding * embed_scale.to(weight.dtype)
    h = F.embedding(idx, embed) * torch.tensor(C ** 0.5, dtype=torch.float32)
    for l, kind in enumerate(gemma3_layer_types(config)):
        h = gemma3_block(h, sd, l, config, ropes, kind, rec)
    rec["ln_final.hook_normalized"] = rms_normalized(h, eps)
    h = gemma_rms_norm(h, sd["model.norm.weight"], eps)
    head = embed if config.get("tie_word_embeddings", True) else sd["lm_head.weight"]
    return F.linear(h, head), rec


# ==== State dicts =============================================================
#
# The tensors of each family's checkpoint under its Hugging Face names, in
# the modules' registration order, each with its shape and what kind of
# tensor it is ("embed", "linear", "bias", "norm": weight near 1, "norm0":
# Gemma's weight near 0 used as 1 + w, "norm_bias"). The forward passes
# refuse a state_dict with other names.


def _llama_table(config):
    s = llama_like(config)
    C, D, F_, V = s["C"], s["D"], s["F"], s["V"]
    QD, KVD = s["H"] * D, s["Hkv"] * D
    t = [("model.embed_tokens.weight", [V, C], "embed")]
    for l in range(s["L"]):
        p = "model.layers.%d." % l
        for name, out, inp, has_bias in (("q_proj", QD, C, s["qkv_bias"]),
                                         ("k_proj", KVD, C, s["qkv_bias"]),
                                         ("v_proj", KVD, C, s["qkv_bias"]),
                                         ("o_proj", C, QD, s["o_bias"])):
            t.append((p + "self_attn.%s.weight" % name, [out, inp], "linear"))
            if has_bias:
                t.append((p + "self_attn.%s.bias" % name, [out], "bias"))
        if s["qk_norm"]:
            t += [(p + "self_attn.q_norm.weight", [D], "norm"),
                  (p + "self_attn.k_norm.weight", [D], "norm")]
        for name, out, inp in (("gate_proj", F_, C), ("up_proj", F_, C), ("down_proj", C, F_)):
            t.append((p + "mlp.%s.weight" % name, [out, inp], "linear"))
            if s["mlp_bias"]:
                t.append((p + "mlp.%s.bias" % name, [out], "bias"))
        t += [(p + "input_layernorm.weight", [C], "norm"),
              (p + "post_attention_layernorm.weight", [C], "norm")]
    t.append(("model.norm.weight", [C], "norm"))
    if not s["tied"]:
        t.append(("lm_head.weight", [V, C], "linear"))
    return t


def _neox_table(config):
    C, F_, V = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    bias = config.get("attention_bias", True)
    t = [("gpt_neox.embed_in.weight", [V, C], "embed")]
    for l in range(config["num_hidden_layers"]):
        p = "gpt_neox.layers.%d." % l
        t += [(p + "input_layernorm.weight", [C], "norm"),
              (p + "input_layernorm.bias", [C], "norm_bias"),
              (p + "post_attention_layernorm.weight", [C], "norm"),
              (p + "post_attention_layernorm.bias", [C], "norm_bias"),
              (p + "attention.query_key_value.weight", [3 * C, C], "linear")]
        if bias:
            t.append((p + "attention.query_key_value.bias", [3 * C], "bias"))
        t.append((p + "attention.dense.weight", [C, C], "linear"))
        if bias:
            t.append((p + "attention.dense.bias", [C], "bias"))
        t += [(p + "mlp.dense_h_to_4h.weight", [F_, C], "linear"),
              (p + "mlp.dense_h_to_4h.bias", [F_], "bias"),
              (p + "mlp.dense_4h_to_h.weight", [C, F_], "linear"),
              (p + "mlp.dense_4h_to_h.bias", [C], "bias")]
    t += [("gpt_neox.final_layer_norm.weight", [C], "norm"),
          ("gpt_neox.final_layer_norm.bias", [C], "norm_bias")]
    if not config.get("tie_word_embeddings", False):
        t.append(("embed_out.weight", [V, C], "linear"))
    return t


def _gemma3_table(config):
    C, F_, V = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    D, H = config.get("head_dim", 256), config["num_attention_heads"]
    Hkv = config.get("num_key_value_heads") or H
    if config.get("attention_bias", False):
        raise ValueError("attention_bias is not written here (Gemma 3's released configs: false)")
    t = [("model.embed_tokens.weight", [V, C], "embed")]
    for l in range(config["num_hidden_layers"]):
        p = "model.layers.%d." % l
        t += [(p + "self_attn.q_proj.weight", [H * D, C], "linear"),
              (p + "self_attn.k_proj.weight", [Hkv * D, C], "linear"),
              (p + "self_attn.v_proj.weight", [Hkv * D, C], "linear"),
              (p + "self_attn.o_proj.weight", [C, H * D], "linear"),
              (p + "self_attn.q_norm.weight", [D], "norm0"),
              (p + "self_attn.k_norm.weight", [D], "norm0"),
              (p + "mlp.gate_proj.weight", [F_, C], "linear"),
              (p + "mlp.up_proj.weight", [F_, C], "linear"),
              (p + "mlp.down_proj.weight", [C, F_], "linear")]
        t += [(p + n + ".weight", [C], "norm0") for n in (
            "input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
            "post_feedforward_layernorm")]
    t.append(("model.norm.weight", [C], "norm0"))
    if not config.get("tie_word_embeddings", True):
        t.append(("lm_head.weight", [V, C], "linear"))
    return t


TABLES = {"llama": _llama_table, "mistral": _llama_table, "qwen2": _llama_table,
          "qwen3": _llama_table, "gpt_neox": _neox_table, "gemma3_text": _gemma3_table}


def tensor_table(config):
    """[(name, shape, kind)]: the state_dict a checkpoint of this config holds."""
    return TABLES[config["model_type"]](config)


# ==== Entry point =============================================================

FORWARDS = {"llama": llama_forward, "mistral": llama_forward, "qwen2": llama_forward,
            "qwen3": llama_forward, "gpt_neox": neox_forward, "gemma3_text": gemma3_forward}


def forward(config, sd, idx):
    """The family's forward pass in eval mode: (logits [B][T][V], hooks)."""
    want = {(name, tuple(shape)) for name, shape, _ in tensor_table(config)}
    got = {(name, tuple(t.shape)) for name, t in sd.items()}
    if want != got:
        raise ValueError("state_dict differs from the config's: %s" % sorted(want ^ got))
    with torch.no_grad():
        return FORWARDS[config["model_type"]](config, sd, idx)


def greedy(config, sd, ids, n):
    """n tokens after ids ([T]) by argmax of the last position's logits (the
    first index on ties, as torch.argmax), the whole forward pass recomputed
    at each step (no cache). Returns the n ids and each step's top-2 gap."""
    ids, out, gaps = list(ids), [], []
    for _ in range(n):
        logits, _ = forward(config, sd, torch.tensor([ids]))
        last = logits[0, -1]
        top = torch.topk(last, 2).values
        nxt = int(torch.argmax(last))
        out.append(nxt)
        gaps.append(float(top[0] - top[1]))
        ids.append(nxt)
    return out, gaps
