"""A PyTorch + FastAPI attention service with this server's request format,
for the modules bench/e2e.py sends it (the baseline of `make bench`).

It is written as such a service usually is: the seed chapter's
MultiHeadAttention built per request after torch.manual_seed(init.seed),
inputs through torch.tensor, outputs through .tolist() and FastAPI's JSON
response. Run: python3 -m uvicorn torch_server:app --port PORT (from bench/).
"""
import torch
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

import seed_modules

torch.set_num_threads(1)
app = FastAPI()


class MultiHeadAttention(seed_modules.MultiHeadAttention):
    return_weights = True


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
