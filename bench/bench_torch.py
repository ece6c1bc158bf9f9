"""Times PyTorch on the shapes of bench_core.c (same modules, eval mode, one
thread), prints "name ms" lines in the same format. Run by `make bench`."""
import math, sys, time
import torch
import torch.nn as nn

torch.set_num_threads(1)

class MultiHeadAttention(nn.Module):  # seed 000, 3.6.2
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
        return self.out_proj((w @ v).transpose(1, 2).contiguous().view(b, t, self.d_out))

class CausalSelfAttention(nn.Module):  # seed 003, gpt2_min.py
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        self.n_head, self.n_embd = n_head, n_embd
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        hd = C // self.n_head
        q = q.view(B, T, self.n_head, hd).transpose(1, 2)
        k = k.view(B, T, self.n_head, hd).transpose(1, 2)
        v = v.view(B, T, self.n_head, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = torch.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

def bench(name, module, x, iters):
    module.eval()
    best = 1e30
    with torch.no_grad():
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(iters):
                module(x)
            best = min(best, (time.perf_counter() - t0) * 1e3 / iters)
    print(f"{name} {best:.4f}", flush=True)

torch.manual_seed(123)
bench("seed_mha_b2_t6", MultiHeadAttention(3, 2, 6, 0.0, 2), torch.rand(2, 6, 3), 20000)
bench("mha_b1_t128_d256_h4", MultiHeadAttention(256, 256, 128, 0.0, 4), torch.rand(1, 128, 256), 200)
bench("gpt2_b1_t512_d768_h12", CausalSelfAttention(768, 12, 512), torch.rand(1, 512, 768), 10)
bench("gpt2_b4_t256_d768_h12", CausalSelfAttention(768, 12, 256), torch.rand(4, 256, 768), 10)
