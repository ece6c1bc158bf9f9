"""Seed 000's MultiHeadAttention (3.6.2) as the PyTorch baseline service
runs it (torch_server.py): the same operations as the chapter's class
(tests/golden/reference.py), written to also return the attention weights.
bench_torch.py runs seed 003's CausalSelfAttention from reference.py."""
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):  # seed 000, 3.6.2
    return_weights = False  # True: forward returns (context, attention weights)

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, t, _ = x.shape
        k = self.W_key(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        q = self.W_query(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        s = q @ k.transpose(2, 3)
        s.masked_fill_(self.mask.bool()[:t, :t], -torch.inf)
        w = self.dropout(torch.softmax(s / k.shape[-1] ** 0.5, dim=-1))
        ctx = self.out_proj((w @ v).transpose(1, 2).contiguous().view(b, t, self.d_out))
        return (ctx, w) if self.return_weights else ctx
