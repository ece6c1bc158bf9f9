"""The encoder families of Hugging Face transformers in float32 PyTorch, for the
goldens of tests/golden/encoders/ (generate_encoders.py): BERT (BertModel,
BertForMaskedLM), RoBERTa (RobertaForMaskedLM), DistilBERT
(DistilBertForMaskedLM), and sentence-transformers' pooling on top of them.
There is no transformers package here: each piece is transcribed from
transformers' modeling_bert.py, modeling_roberta.py and modeling_distilbert.py
(and sentence-transformers' models/Pooling.py and Normalize.py), read in their
repositories, and the comment above it names the class or function it
follows. Only what a forward pass in eval mode does is kept: no dropout, no
head mask, no cache, absolute positions only.

    out = forward(config, state_dict, idx, attention_mask, token_type_ids)

config is a config.json dict, state_dict maps the family's Hugging Face names
(with the base model's prefix: "bert.", "roberta.", "distilbert."; the bare
names of a BertModel folder are given that prefix first) to float32 tensors,
idx, attention_mask and token_type_ids are LongTensors [B][T]. out has
"logits" (the MLM head's, when the state_dict has it), "last_hidden_state",
"hidden_states" (the embeddings' output then every layer's), "pooler_output"
(with a pooler) and "hooks": TransformerLens's names for what a post-LN block
makes (HookedEncoder's BertBlock), batch axis first:

  blocks.L.hook_resid_pre             [B][T][C]    the block's input
  blocks.L.attn.hook_q/hook_k/hook_v  [B][T][H][D] the projections (with their biases)
  blocks.L.attn.hook_attn_scores      [B][H][T][T] q.k / sqrt(D), -inf at padded keys
  blocks.L.attn.hook_pattern          [B][H][T][T] the softmax (exactly 0 at padded keys)
  blocks.L.attn.hook_z                [B][T][H][D] each head's weighted sum of values
  blocks.L.hook_attn_out              [B][T][C]    the output projection (BertSelfOutput.dense)
  blocks.L.hook_resid_mid             [B][T][C]    resid_pre + attn_out
  blocks.L.ln1.hook_normalized        [B][T][C]    resid_mid normalised (the first LayerNorm's
                                                   input, before its weight and bias)
  blocks.L.mlp.hook_pre               [B][T][F]    the MLP's first layer, before the activation
  blocks.L.mlp.hook_post              [B][T][F]    after the activation
  blocks.L.hook_mlp_out               [B][T][C]    the MLP's second layer
  blocks.L.hook_resid_post            [B][T][C]    ln1(resid_mid) + mlp_out
  blocks.L.ln2.hook_normalized        [B][T][C]    resid_post normalised
  blocks.L.hook_normalized_resid_post [B][T][C]    ln2(resid_post): the block's output

Padded positions (attention_mask 0) are computed as transformers computes them
(their queries attend to the real keys); the goldens mark them, and the
service reports them as null.
"""
import math

import torch
import torch.nn.functional as F

import families as fam

# ==== Shared pieces ===========================================================


def layer_norm(x, sd, name, eps):
    """nn.LayerNorm(hidden_size, eps) with the state_dict's weight and bias."""
    return F.layer_norm(x, (x.shape[-1],), sd[name + ".weight"], sd[name + ".bias"], eps)


def extended_mask(attention_mask):
    """ModuleUtilsMixin.get_extended_attention_mask for an encoder:
    (1.0 - attention_mask[:, None, None, :]) * torch.finfo(float32).min, added
    to the scores ([B][1][1][T]): a padded key's weight is exactly 0."""
    m = attention_mask[:, None, None, :].to(torch.float32)
    return (1.0 - m) * torch.finfo(torch.float32).min


def heads(x, H):
    """BertSelfAttention.transpose_for_scores: [B][T][H*D] -> [B][H][T][D]."""
    B, T, _ = x.shape
    return x.view(B, T, H, -1).permute(0, 2, 1, 3)


def record_qkv(rec, pre, q, k, v):
    rec[pre + "attn.hook_q"] = q.transpose(1, 2)
    rec[pre + "attn.hook_k"] = k.transpose(1, 2)
    rec[pre + "attn.hook_v"] = v.transpose(1, 2)


def record_scores(rec, pre, scores, attention_mask):
    """The scaled scores with -inf where a key is padding (hook_attn_scores)."""
    pad = (attention_mask == 0)[:, None, None, :].expand_as(scores)
    rec[pre + "attn.hook_attn_scores"] = scores.masked_fill(pad, float("-inf"))


# ==== BERT and RoBERTa ========================================================


def bert_self_attention(x, sd, p, H, ext, attention_mask, rec, pre):
    """BertSelfAttention.forward (absolute positions, no cache): query, key and
    value Linear layers, matmul(q, k^T) / math.sqrt(attention_head_size) plus
    the extended mask, nn.Softmax(dim=-1), matmul with the values,
    permute(0, 2, 1, 3) and the heads concatenated. RobertaSelfAttention is
    a copy of it."""
    q = heads(fam.linear(x, sd, p + "attention.self.query"), H)
    k = heads(fam.linear(x, sd, p + "attention.self.key"), H)
    v = heads(fam.linear(x, sd, p + "attention.self.value"), H)
    record_qkv(rec, pre, q, k, v)
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    record_scores(rec, pre, scores, attention_mask)
    probs = torch.softmax(scores + ext, dim=-1)
    rec[pre + "attn.hook_pattern"] = probs
    z = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
    rec[pre + "attn.hook_z"] = z
    return z.view(x.shape[0], x.shape[1], -1)


def bert_layer(h, sd, p, config, ext, attention_mask, rec, pre):
    """BertLayer.forward = BertAttention (BertSelfAttention, then BertSelfOutput:
    LayerNorm(dense(z) + input)), then feed_forward_chunk: BertIntermediate
    (act(dense)) and BertOutput (LayerNorm(dense(i) + attention_output))."""
    eps = config.get("layer_norm_eps", 1e-12)
    act = fam.activation(config.get("hidden_act", "gelu"))
    rec[pre + "hook_resid_pre"] = h
    z = bert_self_attention(h, sd, p, config["num_attention_heads"], ext, attention_mask, rec, pre)
    attn_out = fam.linear(z, sd, p + "attention.output.dense")
    rec[pre + "hook_attn_out"] = attn_out
    mid = attn_out + h
    rec[pre + "hook_resid_mid"] = mid
    rec[pre + "ln1.hook_normalized"] = fam.layer_normalized(mid, eps)
    a = layer_norm(mid, sd, p + "attention.output.LayerNorm", eps)
    i = fam.linear(a, sd, p + "intermediate.dense")
    rec[pre + "mlp.hook_pre"] = i
    i = act(i)
    rec[pre + "mlp.hook_post"] = i
    mlp_out = fam.linear(i, sd, p + "output.dense")
    rec[pre + "hook_mlp_out"] = mlp_out
    post = mlp_out + a
    rec[pre + "hook_resid_post"] = post
    rec[pre + "ln2.hook_normalized"] = fam.layer_normalized(post, eps)
    out = layer_norm(post, sd, p + "output.LayerNorm", eps)
    rec[pre + "hook_normalized_resid_post"] = out
    return out


def create_position_ids_from_input_ids(input_ids, padding_idx):
    """modeling_roberta.create_position_ids_from_input_ids (past length 0):
    mask = input_ids.ne(padding_idx).int(); (cumsum(mask, dim=1) * mask) +
    padding_idx: real tokens count from padding_idx + 1, padding gets
    padding_idx."""
    mask = input_ids.ne(padding_idx).int()
    incremental_indices = torch.cumsum(mask, dim=1).type_as(mask) * mask
    return incremental_indices.long() + padding_idx


def bert_embeddings(config, sd, base, idx, token_type_ids):
    """BertEmbeddings.forward (position_embedding_type "absolute"):
    word_embeddings(input_ids) + token_type_embeddings(token_type_ids) +
    position_embeddings(position_ids), then LayerNorm. position_ids are
    arange(T) for BERT; RobertaEmbeddings.forward takes
    create_position_ids_from_input_ids(input_ids, padding_idx =
    config.pad_token_id) instead."""
    T = idx.shape[1]
    if config["model_type"] == "roberta":
        pos = create_position_ids_from_input_ids(idx, config.get("pad_token_id", 1))
    else:
        pos = torch.arange(T)[None, :].expand_as(idx)
    e = base + "embeddings."
    x = F.embedding(idx, sd[e + "word_embeddings.weight"])
    x = x + F.embedding(token_type_ids, sd[e + "token_type_embeddings.weight"])
    x = x + F.embedding(pos, sd[e + "position_embeddings.weight"])
    return layer_norm(x, sd, e + "LayerNorm", config.get("layer_norm_eps", 1e-12))


def bert_heads(config, sd, h, out):
    """BertPooler.forward: tanh(dense(hidden_states[:, 0])) when the state_dict
    has bert.pooler (roberta.pooler); BertLMPredictionHead.forward
    (BertPredictionHeadTransform: LayerNorm(act(dense(x))) with
    config.hidden_act, then decoder = word_embeddings tied, plus its bias) or
    RobertaLMHead.forward (dense, gelu (erf) whatever hidden_act says,
    layer_norm, decoder tied, plus bias)."""
    base = "roberta." if config["model_type"] == "roberta" else "bert."
    eps = config.get("layer_norm_eps", 1e-12)
    if base + "pooler.dense.weight" in sd:
        out["pooler_output"] = torch.tanh(fam.linear(h[:, 0], sd, base + "pooler.dense"))
    emb = sd[base + "embeddings.word_embeddings.weight"]
    if "cls.predictions.bias" in sd:
        t = fam.linear(h, sd, "cls.predictions.transform.dense")
        t = fam.activation(config.get("hidden_act", "gelu"))(t)
        t = layer_norm(t, sd, "cls.predictions.transform.LayerNorm", eps)
        out["logits"] = F.linear(t, emb, sd["cls.predictions.bias"])
    if "lm_head.bias" in sd:
        t = F.gelu(fam.linear(h, sd, "lm_head.dense"))
        t = layer_norm(t, sd, "lm_head.layer_norm", eps)
        out["logits"] = F.linear(t, emb, sd["lm_head.bias"])


def bert_forward(config, sd, idx, attention_mask, token_type_ids):
    """BertForMaskedLM.forward / RobertaForMaskedLM.forward = BertModel.forward
    (embeddings, the extended mask, BertEncoder: BertLayer per layer,
    hidden_states collected as output_hidden_states does), then the heads."""
    base = "roberta." if config["model_type"] == "roberta" else "bert."
    ext = extended_mask(attention_mask)
    rec, hidden = {}, []
    h = bert_embeddings(config, sd, base, idx, token_type_ids)
    for l in range(config["num_hidden_layers"]):
        hidden.append(h)
        h = bert_layer(h, sd, "%sencoder.layer.%d." % (base, l), config, ext, attention_mask,
                       rec, "blocks.%d." % l)
    hidden.append(h)
    out = {"hooks": rec, "hidden_states": hidden, "last_hidden_state": h}
    bert_heads(config, sd, h, out)
    return out


# ==== DistilBERT ==============================================================


def distil_attention(x, sd, p, H, attention_mask, rec, pre):
    """MultiHeadSelfAttention.forward: q_lin, k_lin, v_lin; q = q /
    math.sqrt(dim_per_head); scores = matmul(q, k^T), masked_fill(mask == 0,
    finfo.min); softmax; matmul with v; unshape; out_lin."""
    q = heads(fam.linear(x, sd, p + "attention.q_lin"), H)
    k = heads(fam.linear(x, sd, p + "attention.k_lin"), H)
    v = heads(fam.linear(x, sd, p + "attention.v_lin"), H)
    record_qkv(rec, pre, q, k, v)
    scores = torch.matmul(q / math.sqrt(q.shape[-1]), k.transpose(2, 3))
    record_scores(rec, pre, scores, attention_mask)
    pad = (attention_mask == 0)[:, None, None, :].expand_as(scores)
    weights = F.softmax(scores.masked_fill(pad, torch.finfo(torch.float32).min), dim=-1)
    rec[pre + "attn.hook_pattern"] = weights
    z = torch.matmul(weights, v).transpose(1, 2).contiguous()
    rec[pre + "attn.hook_z"] = z
    return fam.linear(z.view(x.shape[0], x.shape[1], -1), sd, p + "attention.out_lin")


def distil_block(x, sd, p, config, attention_mask, rec, pre):
    """TransformerBlock.forward: sa_layer_norm(attention(x) + x), then
    output_layer_norm(ffn(sa) + sa) with FFN.ff_chunk = lin2(act(lin1(x)));
    both LayerNorms eps=1e-12."""
    rec[pre + "hook_resid_pre"] = x
    attn_out = distil_attention(x, sd, p, config["n_heads"], attention_mask, rec, pre)
    rec[pre + "hook_attn_out"] = attn_out
    mid = attn_out + x
    rec[pre + "hook_resid_mid"] = mid
    rec[pre + "ln1.hook_normalized"] = fam.layer_normalized(mid, 1e-12)
    sa = layer_norm(mid, sd, p + "sa_layer_norm", 1e-12)
    i = fam.linear(sa, sd, p + "ffn.lin1")
    rec[pre + "mlp.hook_pre"] = i
    i = fam.activation(config.get("activation", "gelu"))(i)
    rec[pre + "mlp.hook_post"] = i
    mlp_out = fam.linear(i, sd, p + "ffn.lin2")
    rec[pre + "hook_mlp_out"] = mlp_out
    post = mlp_out + sa
    rec[pre + "hook_resid_post"] = post
    rec[pre + "ln2.hook_normalized"] = fam.layer_normalized(post, 1e-12)
    out = layer_norm(post, sd, p + "output_layer_norm", 1e-12)
    rec[pre + "hook_normalized_resid_post"] = out
    return out


def distil_forward(config, sd, idx, attention_mask, token_type_ids=None):
    """DistilBertForMaskedLM.forward: Embeddings.forward (word_embeddings +
    position_embeddings(arange(T)), LayerNorm eps=1e-12; no token types),
    Transformer.forward (TransformerBlock per layer), then vocab_transform,
    activation (config.activation), vocab_layer_norm (eps=1e-12) and
    vocab_projector (tied to word_embeddings, its own bias)."""
    e = "distilbert.embeddings."
    T = idx.shape[1]
    h = F.embedding(idx, sd[e + "word_embeddings.weight"]) + \
        F.embedding(torch.arange(T)[None, :].expand_as(idx), sd[e + "position_embeddings.weight"])
    h = layer_norm(h, sd, e + "LayerNorm", 1e-12)
    rec, hidden = {}, []
    for l in range(config["n_layers"]):
        hidden.append(h)
        h = distil_block(h, sd, "distilbert.transformer.layer.%d." % l, config, attention_mask,
                         rec, "blocks.%d." % l)
    hidden.append(h)
    out = {"hooks": rec, "hidden_states": hidden, "last_hidden_state": h}
    if "vocab_projector.bias" in sd:
        t = fam.activation(config.get("activation", "gelu"))(fam.linear(h, sd, "vocab_transform"))
        t = layer_norm(t, sd, "vocab_layer_norm", 1e-12)
        out["logits"] = F.linear(t, sd[e + "word_embeddings.weight"], sd["vocab_projector.bias"])
    return out


def base_prefix(config):
    """PreTrainedModel.base_model_prefix of the family."""
    return {"bert": "bert.", "roberta": "roberta.", "distilbert": "distilbert."}[config["model_type"]]


def with_prefix(config, sd):
    """A BertModel checkpoint's bare names as the MLM class names them: what
    from_pretrained does when the checkpoint lacks base_model_prefix."""
    base = base_prefix(config)
    heads = ("cls.", "lm_head.", "vocab_")
    return {k if k.startswith(base) or k.startswith(heads) else base + k: v for k, v in sd.items()}


def forward(config, sd, idx, attention_mask, token_type_ids):
    sd = with_prefix(config, sd)
    with torch.no_grad():
        if config["model_type"] == "distilbert":
            return distil_forward(config, sd, idx, attention_mask)
        return bert_forward(config, sd, idx, attention_mask, token_type_ids)


# ==== sentence-transformers ===================================================


def pool(pooling, token_embeddings, attention_mask):
    """sentence_transformers.models.Pooling.forward: the modes its config.json
    turns on, concatenated in its order (cls, max, mean, mean_sqrt_len,
    weightedmean, lasttoken). mean: sum(x * mask) / clamp(sum(mask), 1e-9);
    max: padded tokens set to -1e9 first; cls: token 0; mean_sqrt_len: the sum
    over sqrt(count); weightedmean: weights 1..T; lasttoken: the last real token."""
    x = token_embeddings.clone()
    m = attention_mask.unsqueeze(-1).expand(x.size()).float()
    out = []
    if pooling.get("pooling_mode_cls_token"):
        out.append(x[:, 0])
    if pooling.get("pooling_mode_max_tokens"):
        y = x.clone()
        y[m == 0] = -1e9
        out.append(torch.max(y, 1)[0])
    if pooling.get("pooling_mode_mean_tokens") or pooling.get("pooling_mode_mean_sqrt_len_tokens"):
        s = torch.sum(x * m, 1)
        n = torch.clamp(m.sum(1), min=1e-9)
        if pooling.get("pooling_mode_mean_tokens"):
            out.append(s / n)
        if pooling.get("pooling_mode_mean_sqrt_len_tokens"):
            out.append(s / torch.sqrt(n))
    if pooling.get("pooling_mode_weightedmean_tokens"):
        w = torch.arange(1, x.shape[1] + 1)[None, :, None].expand(x.size()).float() * m
        out.append(torch.sum(x * w, 1) / torch.clamp(w.sum(1), min=1e-9))
    if pooling.get("pooling_mode_lasttoken"):
        values, indices = torch.min(attention_mask, 1, keepdim=False)
        last = torch.clamp(torch.where(values == 0, indices, x.shape[1]) - 1, min=0)
        out.append((x * m)[torch.arange(x.shape[0]), last])
    return torch.cat(out, 1)


def normalize(x):
    """sentence_transformers.models.Normalize.forward: F.normalize(x, p=2, dim=1)."""
    return F.normalize(x, p=2, dim=1)
