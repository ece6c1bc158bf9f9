#!/usr/bin/python3
"""Golden steps for the penalties and min_p (core/penalty.c, core/sample.c;
tests/test_core_sample.c's test_penalties): PyTorch 1.13 making one step of
the book's generate() (as generate_sample.py's book_step) on logits that the
penalties changed first, with min_p after top_p.

    /usr/bin/python3 tests/golden/generate_penalties.py [OUT]   (default tests/golden/penalties.txt)

The definitions, transcribed below:
  repetition_penalty: transformers' RepetitionPenaltyLogitsProcessor
    (src/transformers/generation/logits_process.py): gather the scores of
    every id of the text (prompt and generated), score < 0 ? score * penalty
    : score / penalty, scatter them back;
  frequency_penalty, presence_penalty: OpenAI's definition as llama.cpp's
    penalties sampler (src/llama-sampling.cpp) applies it after its repeat
    penalty: logit -= float(count) * penalty_freq + float(count > 0) *
    penalty_present, count over the generated ids only;
  min_p: transformers' MinPLogitsWarper, after the temperature and top_p (its
    order in _get_logits_processor: temperature, top_k, top_p, min_p).

Lines (whitespace-separated):
  pen ID V LSEED SCALE TEMP TOPK TOPP MINP REP FREQ PRES SSEED NPROMPT NIDS : IDS = TOKEN HPEN HSAMPLE
      the row of generate_sample.py's recipe logits_of(V, LSEED, SCALE, 0, 0);
      IDS the text (its first NPROMPT the prompt); torch.manual_seed(SSEED)
      right before the step; TOKEN the id chosen, HPEN the FNV-1a 64 hash of
      the penalized logits (float32), HSAMPLE of the probabilities handed to
      torch.multinomial (0 when TEMP is 0: greedy, argmax of the penalized
      logits).
"""
import random
import sys

import torch

from generate_sample import fhash, logits_of
from reference import top_p_warper  # transformers' TopPLogitsWarper

torch.set_num_threads(1)


def repetition_penalty(scores, input_ids, penalty):
    """transformers' RepetitionPenaltyLogitsProcessor.__call__."""
    score = torch.gather(scores, 1, input_ids)
    score = torch.where(score < 0, score * penalty, score / penalty)
    return scores.scatter(1, input_ids, score)


def frequency_presence(scores, generated, freq, pres):
    """llama.cpp's penalties sampler (its frequency and presence part), over
    every id, on float32 counts of the generated ids."""
    counts = torch.zeros(scores.size(-1), dtype=torch.float32)
    for i in generated:
        counts[i] += 1
    return scores - (counts * freq + (counts > 0).float() * pres)


def min_p_warper(scores, min_p, min_tokens_to_keep=1):
    """transformers' MinPLogitsWarper.__call__."""
    probs = torch.softmax(scores, dim=-1)
    top_probs, _ = probs.max(dim=-1, keepdim=True)
    scaled_min_p = min_p * top_probs
    tokens_to_remove = probs < scaled_min_p
    sorted_indices = torch.argsort(scores, descending=True, dim=-1)
    sorted_indices_to_remove = torch.gather(tokens_to_remove, dim=-1, index=sorted_indices)
    sorted_indices_to_remove[..., :min_tokens_to_keep] = False
    indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
    return scores.masked_fill(indices_to_remove, -float("Inf"))


def step(c):
    """The penalties, then the book's step with min_p: (token, penalized, probs)."""
    scores = logits_of(c["V"], c["lseed"], c["scale"], 0, 0).unsqueeze(0)
    ids = c["ids"]
    if ids and c["rep"] != 1.0:
        scores = repetition_penalty(scores, torch.tensor([ids], dtype=torch.long), c["rep"])
    scores = frequency_presence(scores, ids[c["nprompt"]:], c["freq"], c["pres"])
    penalized = scores.clone()
    torch.manual_seed(c["sseed"])
    if c["temp"] <= 0.0:
        return int(torch.argmax(scores, dim=-1)), penalized, None
    if c["topk"]:
        top_logits, _ = torch.topk(scores, min(c["topk"], scores.size(-1)))
        scores = torch.where(scores < top_logits[:, -1], torch.tensor(float("-inf")), scores)
    scores = scores / c["temp"]
    if c["topp"] < 1.0:
        scores = top_p_warper(scores, c["topp"])
    if c["minp"] > 0.0:
        scores = min_p_warper(scores, c["minp"])
    probs = torch.softmax(scores, dim=-1)
    return int(torch.multinomial(probs, num_samples=1).item()), penalized, probs


def cases():
    rnd = random.Random(31)
    out = []
    for n in range(60):
        V = rnd.choice([2, 5, 17, 64, 257, 1000]) if n < 56 else 50257
        nids = rnd.choice([0, 1, 4, 12, 40])
        pool = min(V, rnd.choice([3, 8, V]))  # small pools repeat ids
        ids = [rnd.randrange(pool) for _ in range(nids)]
        out.append(dict(id="p%d" % n, V=V, lseed=rnd.randrange(1 << 31),
                        scale=rnd.choice([0.5, 1.0, 3.0, 8.0]),
                        temp=rnd.choice([0.0, 0.7, 1.0, 1.0, 1.5]),
                        topk=rnd.choice([0, 0, 2, 40]), topp=rnd.choice([1.0, 1.0, 0.9, 0.5]),
                        minp=rnd.choice([0.0, 0.05, 0.1, 0.3, 1.0]),
                        rep=rnd.choice([1.0, 1.3, 2.0, 0.7, 1e-3]),
                        freq=rnd.choice([0.0, 0.5, 2.0, -1.5]), pres=rnd.choice([0.0, 0.6, -2.0, 2.0]),
                        sseed=rnd.randrange(1 << 31), nprompt=rnd.randrange(nids + 1), ids=ids))
    # each option alone, where it surely changes the token: the top logits repeated
    for n, (key, val) in enumerate([("rep", 1e3), ("freq", 2.0), ("pres", 2.0), ("minp", 0.5)]):
        V = 64
        row = logits_of(V, 77 + n, 3.0, 0, 0)
        top = [int(i) for i in torch.topk(row, 3)[1]]
        c = dict(id="only_%s" % key, V=V, lseed=77 + n, scale=3.0, temp=1.0 if key == "minp" else 0.0,
                 topk=0, topp=1.0, minp=0.0, rep=1.0, freq=0.0, pres=0.0, sseed=5 + n,
                 nprompt=0 if key != "rep" else 2, ids=top + top)
        c[key] = val
        out.append(c)
    return out


def line(c):
    tok, pen, probs = step(c)
    return ("pen %s %d %d %r %r %d %r %r %r %r %r %d %d %d : %s = %d %016x %016x" % (
        c["id"], c["V"], c["lseed"], c["scale"], c["temp"], c["topk"], c["topp"], c["minp"],
        c["rep"], c["freq"], c["pres"], c["sseed"], c["nprompt"], len(c["ids"]),
        " ".join(map(str, c["ids"])), tok, fhash(pen[0]), fhash(probs[0]) if probs is not None else 0))


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "tests/golden/penalties.txt"
    lines = ["# made by tests/golden/generate_penalties.py (torch %s); see its docstring" % torch.__version__]
    lines += [line(c) for c in cases()]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%d cases -> %s" % (len(lines) - 1, path))


if __name__ == "__main__":
    main()
