#!/usr/bin/python3
"""Golden vectors for core's sampling (core/sample.c, tests/test_core_sample.c):
PyTorch 1.13 (Debian's python3-torch) choosing tokens as the book's
generate() does (Raschka, ch. 5), with Hugging Face's TopPLogitsWarper.

    /usr/bin/python3 tests/golden/generate_sample.py [OUT]   (default tests/golden/sample.txt)
    /usr/bin/python3 tests/golden/generate_sample.py OUT --cases N   (a larger sweep, not committed)

Logits are not stored: each row is made from a recipe that core reproduces
bit for bit (torch.randn and torch.rand on a generator of its own, see
logits_of), so the file stays small. Sampling uses the default generator,
seeded with torch.manual_seed right before the step (or the sequence of
steps), as a notebook does.

Lines (whitespace-separated; floats as %.9g, which round-trip float32):
  exp SEED N CALLS H1 .. HCALLS V0 V1 V2
      torch.manual_seed(SEED), then CALLS times torch.empty(N).exponential_():
      the FNV-1a 64 hash of each call's float32 bytes, and the first call's
      first three values (fewer when N < 3)
  case ID V LSEED SCALE QUANT NINF TEMP TOPK TOPP SSEED NTOP RESULT ...
      RESULT is "ok ID LOGPROB HSOFT HSCALED HSAMPLE K id lp .. id lp" or
      "nonfinite" (PyTorch refuses the row: NaN probabilities after
      logits / TEMP). HSOFT is the hash of torch.softmax(logits), HSCALED of
      torch.softmax(logits / TEMP), HSAMPLE of the probabilities handed to
      torch.multinomial (both 0 when TEMP is 0), K the top-N count.
  seq ID V STEPS TEMP TOPK TOPP SSEED LSEED0 : id1 .. idSTEPS
      torch.manual_seed(SSEED) once, then STEPS steps, step s on the row of
      recipe (V, LSEED0 + s, scale 3, no quantisation, no -inf).
  sort PATTERN N HASH
      torch.sort(row, descending=False) of a patterned row (sort_pattern):
      the FNV-1a 64 hash of the indices as int32.
The summary printed at the end counts how often nanoGPT's order (divide,
then top-k) and Hugging Face's (temperature, top-k, top-p) pick another
token than the book's order: expected 0.
"""
import random
import sys

import numpy as np
import torch

from golden_io import fnv1a64
from reference import top_p_warper  # transformers' TopPLogitsWarper

torch.set_num_threads(1)


def fhash(t):
    return fnv1a64(t.detach().contiguous().numpy().astype("<f4").tobytes())


def logits_of(V, lseed, scale, quant, ninf):
    """The row of a recipe: randn(V) * scale, rounded to multiples of 1/quant
    when quant > 0, -inf where rand(V) < ninf (never all of them)."""
    g = torch.Generator().manual_seed(lseed)
    x = torch.randn(V, generator=g) * scale
    if quant > 0:
        x = torch.round(x * quant) / quant
    if ninf > 0:
        m = torch.rand(V, generator=g) < ninf
        if bool(m.all()):
            m[0] = False
        x[m] = float("-inf")
    return x


# ==== the three orders ======================================================


def book_step(row, temperature, top_k, top_p, keep=None):
    """One step of the book's generate() on logits [V], top-p (when < 1)
    between the temperature and the softmax. Returns the id; keep (a list)
    gets the probabilities handed to torch.multinomial."""
    logits = row.unsqueeze(0)
    if top_k:
        top_logits, _ = torch.topk(logits, min(top_k, logits.size(-1)))
        min_val = top_logits[:, -1]
        logits = torch.where(logits < min_val, torch.tensor(float("-inf")), logits)
    if temperature > 0.0:
        logits = logits / temperature
        if top_p < 1.0:
            logits = top_p_warper(logits, top_p)
        probs = torch.softmax(logits, dim=-1)
        if keep is not None:
            keep.append(probs.clone())
        idx_next = torch.multinomial(probs, num_samples=1)
    else:
        idx_next = torch.argmax(logits, dim=-1, keepdim=True)
    return int(idx_next.item())


def nanogpt_step(row, temperature, top_k, top_p):
    """nanoGPT's generate(): divide first, then top-k (top-p as above)."""
    logits = row.unsqueeze(0) / temperature
    if top_k is not None and top_k > 0:
        v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
        logits = logits.clone()
        logits[logits < v[:, [-1]]] = -float("Inf")
    if top_p < 1.0:
        logits = top_p_warper(logits, top_p)
    probs = torch.nn.functional.softmax(logits, dim=-1)
    return int(torch.multinomial(probs, num_samples=1).item())


def hf_step(row, temperature, top_k, top_p):
    """Hugging Face's warper order: temperature, top-k, top-p."""
    scores = row.unsqueeze(0) / temperature
    if top_k:
        k = min(max(top_k, 1), scores.size(-1))
        scores = scores.masked_fill(scores < torch.topk(scores, k)[0][..., -1, None], -float("Inf"))
    if top_p < 1.0:
        scores = top_p_warper(scores, top_p)
    probs = torch.softmax(scores, dim=-1)
    return int(torch.multinomial(probs, num_samples=1).item())


# ==== the cases =============================================================

SIZES = [1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 24, 31, 33, 64, 100, 257, 1000, 5003]
TEMPS = [0.0, 1e-6, 1e-3, 0.01, 0.1, 0.5, 0.7, 0.9, 1.0, 1.3, 2.0, 10.0]
SCALES = [0.5, 1.0, 3.0, 8.0, 30.0]
QUANTS = [0, 0, 0, 1, 4]
NINFS = [0, 0, 0, 0.25, 0.9375]
TOPPS = [1.0, 1.0, 0.95, 0.9, 0.5, 0.1, 1e-6, 0.0]


def random_case(rnd, cid):
    V = rnd.choice(SIZES) if rnd.random() < 0.97 else 50257
    top_k = rnd.choice([0, 0, 1, 2, 5, 40, V // 2, max(V - 1, 1), V, V + 5])
    return dict(id=cid, V=V, lseed=rnd.randrange(1 << 31), scale=rnd.choice(SCALES),
                quant=rnd.choice(QUANTS), ninf=rnd.choice(NINFS), temp=rnd.choice(TEMPS),
                top_k=top_k, top_p=rnd.choice(TOPPS), sseed=rnd.randrange(1 << 31),
                ntop=min(V, rnd.choice([0, 1, 5, 20] + ([V] if V <= 64 else []))))


# Cases the random draw might miss: tiny temperatures that overflow, every
# top-k at one size, exact ties at the top-p threshold, the vocabulary of GPT-2.
FIXED = [
    dict(V=7, lseed=1, scale=30.0, quant=0, ninf=0, temp=1e-38, top_k=0, top_p=1.0, sseed=5, ntop=7),
    dict(V=50257, lseed=2, scale=3.0, quant=0, ninf=0, temp=1.0, top_k=0, top_p=1.0, sseed=123, ntop=5),
    dict(V=50257, lseed=3, scale=3.0, quant=0, ninf=0, temp=0.7, top_k=50, top_p=1.0, sseed=123, ntop=5),
    dict(V=50257, lseed=4, scale=3.0, quant=0, ninf=0, temp=0.8, top_k=0, top_p=0.9, sseed=7, ntop=5),
    dict(V=50257, lseed=5, scale=3.0, quant=4, ninf=0.25, temp=1.1, top_k=200, top_p=0.95, sseed=9, ntop=20),
    dict(V=50257, lseed=6, scale=3.0, quant=0, ninf=0, temp=0.0, top_k=0, top_p=1.0, sseed=1, ntop=3),
] + [dict(V=12, lseed=10, scale=2.0, quant=1, ninf=0, temp=1.0, top_k=k, top_p=1.0, sseed=11 + k, ntop=12)
     for k in range(1, 13)] + [
    dict(V=40, lseed=20 + i, scale=1.0, quant=1, ninf=0, temp=1.0, top_k=0, top_p=p, sseed=30 + i, ntop=10)
    for i, p in enumerate([0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99])]


def top_p_edges():
    """top_p right at a cumulative probability of the sorted softmax (as
    TopPLogitsWarper computes it), one float32 step to either side, and a
    quarter step to either side, so that <= against <, or the rounding of
    1 - top_p to float32, decide."""
    out = []
    for i, (V, j) in enumerate([(40, 30), (200, 150), (200, 190), (1000, 900), (57, 10), (300, 280)]):
        row = logits_of(V, 700 + i, 2.0, 0, 0)
        srt = torch.sort(row.unsqueeze(0) / 0.8, descending=False)[0]
        c = float(srt.softmax(-1).cumsum(-1)[0, j])
        below, above = np.nextafter(np.float32(c), np.float32(0)), np.nextafter(np.float32(c), np.float32(1))
        quarter = (float(above) - c) / 4  # 1 - top_p a quarter step off c: float32 rounds it to c
        for k, lim in enumerate([c, float(below), float(above), c - quarter, c + quarter]):
            out.append(dict(V=V, lseed=700 + i, scale=2.0, quant=0, ninf=0, temp=0.8, top_k=0,
                            top_p=1.0 - lim, sseed=40 + 5 * i + k, ntop=3))
    return out


def run_case(c):
    row = logits_of(c["V"], c["lseed"], c["scale"], c["quant"], c["ninf"])
    hsoft = fhash(torch.softmax(row, -1))
    hscaled = fhash(torch.softmax(row / c["temp"], -1)) if c["temp"] > 0 else 0
    torch.manual_seed(c["sseed"])
    probs = []
    try:
        tid = book_step(row, c["temp"], c["top_k"], c["top_p"], probs)
    except RuntimeError as e:
        assert "probability tensor contains" in str(e), e
        return "nonfinite", None
    hsample = fhash(probs[0]) if probs else 0
    lp = torch.log_softmax(row, -1)
    order = sorted(range(c["V"]), key=lambda i: (-float(lp[i]), i))[:c["ntop"]]
    fields = ["ok", str(tid), "%.9g" % float(lp[tid]), "%016x" % hsoft, "%016x" % hscaled,
              "%016x" % hsample, str(len(order))]
    for i in order:
        fields += [str(i), "%.9g" % float(lp[i])]
    return " ".join(fields), (row, tid)


def other_orders(c, row, tid):
    """How many of nanoGPT's and Hugging Face's orders pick another token."""
    if c["temp"] <= 0:
        return 0, 0
    torch.manual_seed(c["sseed"])
    n = nanogpt_step(row, c["temp"], c["top_k"], c["top_p"])
    torch.manual_seed(c["sseed"])
    h = hf_step(row, c["temp"], c["top_k"], c["top_p"])
    return int(n != tid), int(h != tid)


def exp_lines():
    out = []
    for seed in [0, 123, 2024]:
        for n in [1, 2, 7, 16, 17, 100, 50257]:
            torch.manual_seed(seed)
            calls = [torch.empty(n).exponential_() for _ in range(3)]
            first = calls[0][:3].tolist()
            out.append("exp %d %d 3 %s %s" % (seed, n, " ".join("%016x" % fhash(q) for q in calls),
                                               " ".join("%.9g" % v for v in first)))
    # multinomial is argmax(p / q) with q drawn by exponential_: NOTES' 200 cases, again
    for s in range(200):
        g = torch.Generator().manual_seed(s)
        V = int(torch.randint(1, 300, (1,), generator=g))
        p = torch.softmax(torch.randn(V, generator=g) * 3, -1)
        torch.manual_seed(s + 1000)
        a = torch.multinomial(p, 1).item()
        torch.manual_seed(s + 1000)
        q = torch.empty_like(p).exponential_(1)
        assert a == torch.argmax(p / q).item()
    return out


def sort_pattern(name, n):
    """Rows for torch.sort's order of equal values (and its introsort's heap
    sort fallback, which organ pipes reach)."""
    if name == "sorted":
        v = [float(i) for i in range(n)]
    elif name == "reversed":
        v = [float(n - i) for i in range(n)]
    elif name == "organ":
        v = [float(i if i < n // 2 else n - i) for i in range(n)]
    elif name == "sawtooth":
        v = [float(i % 8) for i in range(n)]
    else:  # "hashed": 16 values, (i * 2654435761 mod 2^32) >> 28
        v = [float(((i * 2654435761) & 0xFFFFFFFF) >> 28) for i in range(n)]
    return torch.tensor(v, dtype=torch.float32)


def sort_lines():
    out = []
    for name in ["sorted", "reversed", "organ", "sawtooth", "hashed"]:
        for n in [1, 17, 100, 2000, 50257]:
            idx = torch.sort(sort_pattern(name, n).unsqueeze(0), descending=False)[1][0]
            out.append("sort %s %d %016x" % (name, n, fnv1a64(idx.numpy().astype("<i4").tobytes())))
    return out


SEQS = [(64, 20, 1.0, 0, 1.0), (257, 16, 0.8, 10, 1.0), (1000, 12, 1.2, 0, 0.9),
        (50257, 8, 0.9, 40, 0.95), (50257, 6, 1.0, 0, 1.0), (17, 30, 0.5, 3, 0.5)]


def seq_lines():
    out = []
    for k, (V, steps, temp, top_k, top_p) in enumerate(SEQS):
        sseed, lseed0 = 500 + k, 9000 + 100 * k
        torch.manual_seed(sseed)
        ids = [book_step(logits_of(V, lseed0 + s, 3.0, 0, 0), temp, top_k, top_p)
               for s in range(steps)]
        out.append("seq s%d %d %d %r %d %r %d %d : %s" % (k, V, steps, temp, top_k, top_p, sseed,
                                                         lseed0, " ".join(map(str, ids))))
    return out


def main():
    args = sys.argv[1:]
    n_cases = 700
    if "--cases" in args:
        i = args.index("--cases")
        n_cases = int(args[i + 1])
        del args[i:i + 2]
    out = args[0] if args else "tests/golden/sample.txt"
    rnd = random.Random(20261125 + n_cases)
    cases = [dict(c, id="f%d" % i) for i, c in enumerate(FIXED)]
    cases += [dict(c, id="e%d" % i) for i, c in enumerate(top_p_edges())]
    cases += [random_case(rnd, "r%d" % i) for i in range(n_cases)]
    lines = ["# made by tests/golden/generate_sample.py (torch %s); see its docstring" % torch.__version__]
    lines += exp_lines()
    diff_nano = diff_hf = sampled = 0
    for c in cases:
        result, ran = run_case(c)
        if ran is not None:
            dn, dh = other_orders(c, *ran)
            diff_nano += dn
            diff_hf += dh
            sampled += c["temp"] > 0
        lines.append("case %s %d %d %r %d %r %r %d %r %d %d %s" % (
            c["id"], c["V"], c["lseed"], c["scale"], c["quant"], c["ninf"], c["temp"], c["top_k"],
            c["top_p"], c["sseed"], c["ntop"], result))
    lines += seq_lines()
    lines += sort_lines()
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s: %d cases (%d sampled); nanoGPT's order differs in %d, Hugging Face's in %d"
          % (out, len(cases), sampled, diff_nano, diff_hf))


if __name__ == "__main__":
    main()
