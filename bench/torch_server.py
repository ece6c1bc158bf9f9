"""A PyTorch + FastAPI attention service with this server's request format,
for the modules bench/e2e.py sends it (the baseline of `make bench`).

It is written as such a service usually is: the seed chapter's
MultiHeadAttention built per request after torch.manual_seed(init.seed),
inputs through torch.tensor, outputs through .tolist() and FastAPI's JSON
response. Run: python3 -m uvicorn torch_server:app --port PORT (from bench/).
"""
import math

import torch
import torch.nn as nn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

torch.set_num_threads(1)
app = FastAPI()


class MultiHeadAttention(nn.Module):  # seed 000, 3.6.2, returning its weights too
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
        ctx = (w @ v).transpose(1, 2).contiguous().view(b, t, self.d_out)
        return self.out_proj(ctx), w


@app.post("/attention/multihead")
async def multihead(request: Request):
    rq = await request.json()
    x = torch.tensor(rq["inputs"], dtype=torch.float32)
    batched = x.dim() == 3
    if not batched:
        x = x.unsqueeze(0)
    torch.manual_seed(rq.get("init", {}).get("seed", 0))
    m = MultiHeadAttention(x.shape[-1], rq["d_out"], rq.get("context_length", x.shape[1]),
                           rq.get("dropout", 0.0), rq["num_heads"], rq.get("qkv_bias", False))
    m.eval()
    with torch.no_grad():
        ctx, w = m(x)
    if not batched:
        ctx, w = ctx[0], w[0]
    out = {"module": "MultiHeadAttention"}
    want = rq.get("return", ["context", "attn_weights"])
    if "context" in want:
        out["context"] = ctx.tolist()
    if "attn_weights" in want:
        out["attn_weights"] = w.tolist()
    return JSONResponse(out)
