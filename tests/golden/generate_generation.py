#!/usr/bin/python3
"""Golden vectors for generation (api/generate/, POST /model/gpt2 with
"generate", /v1/completions): the generate loops of the book (Raschka,
"Build a Large Language Model (From Scratch)": chapter 4's
generate_text_simple, chapter 5's generate with temperature, top-k and
eos_id) and of nanoGPT (model.py's GPT.generate, and sample.py's
torch.manual_seed before the model is built), run by PyTorch 1.13 (Debian's
python3-torch) on seed 003's GPT2 and the book's GPTModel, built from a seed.

    /usr/bin/python3 tests/golden/generate_generation.py tests/golden/generation   (or `make golden`)

The loops are the originals, verbatim: the book's in reference.py (its
generate with transformers' top-p between the temperature and the softmax
for "book_top_p"), nanoGPT's below but for two lines marked "(adapter)":
it calls self(idx_cond) on its own GPT, here on either family. The logits
of each step are recorded by a forward hook (no operation changes), so the
log-probabilities (log_softmax of the raw logits, before temperature and
top-k) and the top alternatives of every written token come with the tokens.

Writes cases.json: a list of cases, each
  name, family ("GPT2" | "GPTModel"), config (the family's own keys),
  activation, init_seed (torch.manual_seed(init_seed); Model(config); eval),
  loop ("book_simple" | "book_generate" | "nanogpt" | "book_top_p" |
  "book_penalties": tiny_hf.json only),
  prompt [B][T0], generate {max_new_tokens, temperature, top_k, top_p,
  context_size, eos_token_id, seed (torch.manual_seed right before the loop;
  absent: the generator left by the constructor, as nanoGPT's sample.py)},
  tokens [B][n] (the written ids), logprobs [B][n], top [B][n][5][id, lp],
  stopped (the loop met eos_id).
And tiny_hf.safetensors + tiny_hf.json: a GPT-2 checkpoint in Hugging Face's
layout (vocabulary of 257: GPT-2's 256 byte symbols and <|endoftext|>, the
byte-level tokenizer the tests write), with completions of it as
/v1/completions computes them (generate_checkpoint.py's forward, the book's
sampling order): greedy, sampled with n = 2 rows, and with logprobs.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from reference import (GPT2, BOOK_KEYS, GPT2_KEYS, GPTConfig, GPTModel,  # noqa: E402
                       generate, generate_text_simple)
import generate_checkpoint as ckpt  # noqa: E402  Hugging Face's layout and forward
import generate_penalties as pen  # noqa: E402  the penalties and min_p
from reference import top_p_warper  # noqa: E402

torch.set_num_threads(1)


# ==== nanoGPT's GPT.generate (model.py), verbatim but the adapter =========


@torch.no_grad()
def nanogpt_generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
    block_size = self.block_size  # (adapter) self.config.block_size
    for _ in range(max_new_tokens):
        # if the sequence context is growing too long we must crop it at block_size
        idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
        # forward the model to get the logits for the index in the sequence
        logits = self.logits(idx_cond)  # (adapter) logits, _ = self(idx_cond)
        # pluck the logits at the final step and scale by desired temperature
        logits = logits[:, -1, :] / temperature
        # optionally crop the logits to only the top k options
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float('Inf')
        # apply softmax to convert logits to (normalized) probabilities
        probs = F.softmax(logits, dim=-1)
        # sample from the distribution
        idx_next = torch.multinomial(probs, num_samples=1)
        # append sampled index to the running sequence and continue
        idx = torch.cat((idx, idx_next), dim=1)

    return idx


# ==== the models, and the logits of each step ===============================


class Recorded(torch.nn.Module):
    """The model as the loops call it, keeping each call's last-position logits."""

    def __init__(self, model, block_size):
        super().__init__()
        self.model, self.block_size, self.steps = model, block_size, []

    def logits(self, idx):
        out = self.model(idx)
        out = out[0] if isinstance(out, tuple) else out  # GPT2 returns (logits, loss)
        self.steps.append(out[:, -1, :].clone())
        return out

    def forward(self, idx):
        return self.logits(idx)


def build(family, cfg, seed):
    torch.manual_seed(seed)
    if family == "GPT2":
        model = GPT2(GPTConfig(**cfg))
        block = cfg["block_size"]
    else:
        model = GPTModel(cfg)
        block = cfg["context_length"]
    model.eval()
    return Recorded(model, block)


def run_loop(m, loop, idx, g):
    if loop == "book_simple":
        return generate_text_simple(m, idx, g["max_new_tokens"], g["context_size"])
    if loop == "book_generate":
        return generate(m, idx, g["max_new_tokens"], g["context_size"], g["temperature"],
                        g.get("top_k"), g.get("eos_token_id"))
    if loop == "book_top_p":
        return generate(m, idx, g["max_new_tokens"], g["context_size"], g["temperature"],
                        g.get("top_k"), top_p=g["top_p"])
    if loop == "book_penalties":
        return penalized_generate(m, idx, g)
    return nanogpt_generate(m, idx, g["max_new_tokens"], g["temperature"], g.get("top_k"))


@torch.no_grad()
def penalized_generate(model, idx, g):
    """The book's generate() (top_k, temperature, top_p as book_top_p) with
    the penalties first on each row's raw logits and min_p after top_p, as
    generate_penalties.py transcribes them (transformers' repetition penalty
    over the row's whole text, llama.cpp's frequency and presence penalties
    over its generated ids)."""
    n_prompt = idx.size(1)
    for _ in range(g["max_new_tokens"]):
        logits = model(idx[:, -g["context_size"]:])[:, -1, :]
        rows = []
        for b in range(idx.size(0)):
            row = logits[b:b + 1]
            if g.get("repetition_penalty", 1.0) != 1.0:
                row = pen.repetition_penalty(row, idx[b:b + 1], g["repetition_penalty"])
            rows.append(pen.frequency_presence(row, idx[b, n_prompt:].tolist(),
                                               g.get("frequency_penalty", 0.0),
                                               g.get("presence_penalty", 0.0)))
        logits = torch.cat(rows, 0)
        if g["temperature"] > 0.0:
            if g.get("top_k"):
                top_logits, _ = torch.topk(logits, g["top_k"])
                logits = torch.where(logits < top_logits[:, -1:], torch.tensor(float("-inf")), logits)
            logits = logits / g["temperature"]
            if g.get("top_p", 1.0) < 1.0:
                logits = top_p_warper(logits, g["top_p"])
            if g.get("min_p", 0.0) > 0.0:
                logits = pen.min_p_warper(logits, g["min_p"])
            idx_next = torch.multinomial(torch.softmax(logits, dim=-1), num_samples=1)
        else:
            idx_next = torch.argmax(logits, dim=-1, keepdim=True)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


def scores(steps, written):
    """Per row: each written token's log-probability and the top 5."""
    B = written.size(0)
    lps, tops = [[] for _ in range(B)], [[] for _ in range(B)]
    for s in range(written.size(1)):
        lp = torch.log_softmax(steps[s], dim=-1)
        v, i = torch.topk(lp, 5)
        for b in range(B):
            lps[b].append(float("%.9g" % lp[b, written[b, s]].item()))
            tops[b].append([[int(i[b, k]), float("%.9g" % v[b, k].item())] for k in range(5)])
    return lps, tops


def case(name, family, cfg_t, init_seed, loop, prompt, gen, activation="gelu"):
    keys = GPT2_KEYS if family == "GPT2" else BOOK_KEYS
    cfg = dict(zip(keys, cfg_t))
    m = build(family, cfg, init_seed)
    if activation == "gelu_new":
        raise SystemExit("gelu_new cases are the checkpoint's")
    g = dict(gen)
    if "seed" in g:
        torch.manual_seed(g["seed"])
    idx = torch.tensor(prompt)
    out = run_loop(m, loop, idx, g)
    written = out[:, idx.size(1):]
    lps, tops = scores(m.steps, written)
    stopped = written.size(1) < g["max_new_tokens"]
    print("%-24s %s %s %d tokens%s" % (name, family, loop, written.size(1), " (eos)" if stopped else ""))
    return {"name": name, "family": family, "config": cfg, "activation": activation,
            "init_seed": init_seed, "loop": loop, "prompt": prompt, "generate": g,
            "tokens": written.tolist(), "logprobs": lps, "top": tops, "stopped": stopped}


GPT2_SMALL = (97, 24, 2, 3, 24, 0.1)
BOOK_SMALL = (97, 16, 16, 2, 2, 0.1, False)
BOOK_QKV = (97, 16, 16, 2, 2, 0.1, True)
BOOK_124M = (50257, 256, 768, 12, 12, 0.1, False)  # ch05's GPT_CONFIG_124M (context_length 256)


def cases():
    P5, P10 = [[5, 17, 33, 2, 60]], [[3, 1, 4, 1, 5, 9, 2, 6, 5, 3]]
    out = [
        # ch04: greedy past the context (5 + 30 > 24: idx[:, -24:] from step 20 on)
        case("gpt2_simple_crop", "GPT2", GPT2_SMALL, 123, "book_simple", P5,
             {"max_new_tokens": 30, "context_size": 24}),
        # ch05: torch.manual_seed(123); generate(top_k=25, temperature=...) (seed 003's GPT2 with its
        # N(0, 1) embeddings is sure of itself: high temperatures make the draws matter)
        case("gpt2_book_topk", "GPT2", GPT2_SMALL, 123, "book_generate", P5,
             {"max_new_tokens": 12, "context_size": 24, "temperature": 6.0, "top_k": 25, "seed": 123}),
        # nanoGPT: divides first, then top-k; crops at block_size
        case("gpt2_nanogpt_crop", "GPT2", GPT2_SMALL, 7, "nanogpt", P10,
             {"max_new_tokens": 20, "context_size": 24, "temperature": 5.0, "top_k": 10, "seed": 42}),
        # nanoGPT's sample.py: torch.manual_seed(1337) before the model is built, no other seed
        case("gpt2_nanogpt_sample_py", "GPT2", GPT2_SMALL, 1337, "nanogpt", P5,
             {"max_new_tokens": 8, "context_size": 24, "temperature": 8.0, "top_k": 200}),
        # two rows: torch.multinomial's draws over [2][V], row after row
        case("gpt2_nanogpt_batch", "GPT2", GPT2_SMALL, 5, "nanogpt", [[1, 2, 3], [40, 50, 60]],
             {"max_new_tokens": 6, "context_size": 24, "temperature": 6.0, "seed": 9}),
        case("book_simple_crop", "GPTModel", BOOK_SMALL, 123, "book_simple", P5,
             {"max_new_tokens": 20, "context_size": 16}),
        # context_size below context_length: the book's own crop
        case("book_generate_ctx8", "GPTModel", BOOK_QKV, 123, "book_generate", P5,
             {"max_new_tokens": 14, "context_size": 8, "temperature": 1.4, "top_k": 25, "seed": 123}),
        case("book_top_p", "GPTModel", BOOK_SMALL, 11, "book_top_p", P10,
             {"max_new_tokens": 10, "context_size": 16, "temperature": 0.9, "top_k": 50,
              "top_p": 0.9, "seed": 7}),
    ]
    # eos_id: the same loop again, stopped by the fifth token it wrote
    first = out[6]
    eos = first["tokens"][0][4]
    g = dict(first["generate"], eos_token_id=eos)
    out.append(case("book_generate_eos", "GPTModel", BOOK_QKV, 123, "book_generate", P5, g))
    return out


def book_124m():
    """ch05: torch.manual_seed(123), generate(model, "Every effort moves you",
    max_new_tokens=15, context_size=256, top_k=25, temperature=1.4), on the
    124M model built from torch.manual_seed(123) (the book's own seed)."""
    return case("book_124m_ch05", "GPTModel", BOOK_124M, 123, "book_generate",
                [[6109, 3626, 6100, 345]],
                {"max_new_tokens": 15, "context_size": 256, "temperature": 1.4, "top_k": 25,
                 "seed": 123})


# ==== a Hugging Face checkpoint for the server's tests =====================


class HF(torch.nn.Module):
    """generate_checkpoint.py's GPT2LMHeadModel forward on a state_dict."""

    def __init__(self, sd, n_head):
        super().__init__()
        self.sd, self.n_head = sd, n_head

    def forward(self, idx):
        return ckpt.forward(self.sd, idx, self.n_head)


HF_V, HF_P, HF_L, HF_C, HF_H = 257, 64, 2, 32, 2


def hf_case(m, name, prompt, gen, loop):
    m.steps = []
    g = dict(gen)
    torch.manual_seed(g.get("seed", 0))
    idx = torch.tensor(prompt)
    out = run_loop(m, loop, idx, dict(g, context_size=HF_P))
    written = out[:, idx.size(1):]
    lps, tops = scores(m.steps, written)
    with torch.no_grad():  # the prompt's own log-probabilities (OpenAI's echo)
        lp = torch.log_softmax(m.model(idx), dim=-1)
    plp = [[None] + [float("%.9g" % lp[b, t - 1, idx[b, t]].item()) for t in range(1, idx.size(1))]
           for b in range(idx.size(0))]
    print("%-24s hf %s %d tokens" % (name, loop, written.size(1)))
    return {"name": name, "loop": loop, "prompt": prompt, "generate": g, "tokens": written.tolist(),
            "logprobs": lps, "top": tops, "prompt_logprobs": plp}


def hf_checkpoint(out):
    g = torch.Generator().manual_seed(2024)
    sd = ckpt.random_state_dict(g, HF_V, HF_P, HF_L, HF_C)
    ckpt.write_safetensors(os.path.join(out, "tiny_hf.safetensors"),
                           [(k, "F32", v) for k, v in sd.items()], {"format": "pt", "n_head": str(HF_H)})
    m = Recorded(HF(sd, HF_H), HF_P)
    hello = [list(b"Hello")]
    completions = [
        hf_case(m, "hf_greedy", hello, {"max_new_tokens": 12, "temperature": 0.0}, "book_generate"),
        hf_case(m, "hf_sampled_n2", hello * 2,
                {"max_new_tokens": 10, "temperature": 0.8, "top_p": 0.95, "seed": 5}, "book_top_p"),
        hf_case(m, "hf_topk_seed", [list(b"The ")],
                {"max_new_tokens": 8, "temperature": 1.0, "top_k": 40, "seed": 77}, "book_generate"),
        hf_case(m, "hf_penalties_greedy", hello,
                {"max_new_tokens": 12, "temperature": 0.0, "repetition_penalty": 1.5,
                 "frequency_penalty": 1.0, "presence_penalty": 0.5}, "book_penalties"),
        hf_case(m, "hf_penalties_n2", hello * 2,
                {"max_new_tokens": 10, "temperature": 0.9, "top_k": 40, "top_p": 0.95, "min_p": 0.05,
                 "repetition_penalty": 1.3, "frequency_penalty": 0.5, "presence_penalty": 0.4,
                 "seed": 9}, "book_penalties"),
        # the prompt ends as greedy goes on: frequency and presence count only what is written
        hf_case(m, "hf_freq_prompt", [list(b"Hello") + [45, 200, 200, 200, 30, 30]],
                {"max_new_tokens": 12, "temperature": 0.0, "frequency_penalty": 1.0,
                 "presence_penalty": 1.0}, "book_penalties"),
    ]
    ref = {"file": "tiny_hf.safetensors",
           "config": {"vocab_size": HF_V, "block_size": HF_P, "n_layer": HF_L, "n_head": HF_H, "n_embd": HF_C},
           "completions": completions}
    with open(os.path.join(out, "tiny_hf.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"))
        f.write("\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "generation")
    print("torch", torch.__version__, "OPENBLAS_CORETYPE", os.environ.get("OPENBLAS_CORETYPE"))
    os.makedirs(out, exist_ok=True)
    all_cases = cases() + [book_124m()]
    with open(os.path.join(out, "cases.json"), "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(c, separators=(",", ":")) for c in all_cases) + "\n]\n")
    hf_checkpoint(out)


if __name__ == "__main__":
    main()
