#!/usr/bin/python3
"""Trains the demo model: a small GPT-2 on Tiny Shakespeare, byte by byte, and
exports it as a Hugging Face GPT-2 folder the server loads with --model and
--tokenizer.

    /usr/bin/python3 models/train_shakespeare.py [OUT_DIR]     (default models/shakespeare)
    /usr/bin/python3 models/train_shakespeare.py --stages N [OUT_DIR]   the first N
        stages (1 text, 2 and copy (also --copy), 3 and heads)
    /usr/bin/python3 models/train_shakespeare.py --from DIR --stages N [OUT_DIR]
        goes on from DIR, the exported folder of a run of the first stages
        (--text-from DIR: --from DIR --stages 2): the same weights as the
        whole run, a stage starting from its weights alone
    /usr/bin/python3 models/train_shakespeare.py --eval [OUT_DIR]   only the held-out figures
    /usr/bin/python3 models/train_shakespeare.py --steps N OUT_DIR  a shorter run (checks):
        at most N steps a stage (each cosine ends at its stage's last step)

Stages (STAGES). Stage text: 2,000 steps on windows of the text alone; it
alone made the committed models/shakespeare (commit 1b65f1f, 1,508 s). Stage
copy (--copy): a fresh AdamW from stage text's weights, half the windows
holding a random sequence written several times with the loss left out on
its first copy (random_batch), the usual way to grow a previous-token head
and an induction head. Stage heads (--stages 3): a fresh AdamW from stage
copy's weights, random sequences and text passages written again and text
with a random byte after each byte (skip_row). Issue 32 asks for both heads
in the demo model (see RUN_STAGES for where it stands). A finished stage
that is not the last is kept in OUT_DIR/stage-NAME while the run lasts; a
stopped stage goes on from OUT_DIR/checkpoint.pt (written every
CHECKPOINT_EVERY steps) when started again.

Debian's python3-torch 1.13.1 on the CPU, one thread. The run is deterministic
for a given PyTorch build, BLAS kernel set and thread count: the seed, the
batches (a generator of their own), the initialisation and the optimiser are
fixed below, and the script pins one thread (torch and OpenBLAS) and, where the
CPU has AVX2 and nothing is set, OpenBLAS's Haswell kernels (those the
committed run used), before torch is imported.

The model is seed 003's GPT2 (gpt2_min.py, the classes of
tests/golden/reference.py, which the golden generators run too) with one
change: the MLP's activation is gelu_new (GPTConfig.activation), the tanh
approximation the released GPT-2 checkpoints use, which is what the server
runs for a model loaded from a model.safetensors (api/checkpoint.c). Its
initialisation is GPT-2's (normal std 0.02, zero biases, the residual
projections scaled by 1/sqrt(2 n_layer)), as nanoGPT does, instead of
PyTorch's defaults (wte ~ N(0, 1) tied to lm_head makes the first logits
huge and the first steps slow).

Vocabulary: the 256 byte values, token id = byte value. Exported as GPT-2's
byte-level BPE with no merges: vocab.json maps bytes_to_unicode's symbol of
each byte to the byte, merges.txt holds only "#version: 0.2", so GPT-2's
tokenizer (api/bpe.c, Hugging Face's GPT2Tokenizer) encodes any text to its
UTF-8 bytes and decodes them back.

Data: models/data/tinyshakespeare.txt (see models/data/README.md). The first
90% trains; the last 10% (the end of the corpus, never seen in training) is
the validation text, as nanoGPT splits it. models/data/heldout_poems.txt holds
two public-domain poems that are not in the corpus.

Figures (--eval, training_run.json's heldout): next-byte loss on the held-out
text and poems; each head's mean weight on position i-1; and each head's
induction score by TransformerLens's head detector (error_measure "mul":
sum(P * D) / sum(P) over its weights P, D[q][k] = 1 where 1 <= k <= q and the
byte at k-1 is an earlier occurrence of the byte at q) on 64 bytes drawn
uniformly from the 65 byte values of the corpus (torch.Generator seeded
INDUCTION_SEED = 0) written twice: a random sequence as a user would type it
from the model's alphabet (a byte that never occurs in the corpus has an
untrained embedding). The history logs the best induction score as it logs
the best previous-token head.
"""
import json
import math
import os
import struct
import sys
import time


def _pin_threads_and_kernels():
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    if "OPENBLAS_CORETYPE" not in os.environ:
        try:
            with open("/proc/cpuinfo") as f:
                if " avx2" in f.read():
                    os.environ["OPENBLAS_CORETYPE"] = "Haswell"
        except OSError:
            pass


_pin_threads_and_kernels()

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "golden"))
from reference import GPT2, GPTConfig, generate  # noqa: E402  seed 003's GPT2, the book's ch05 generate
from record import SoftmaxRecorder  # noqa: E402  the attention maps of a forward

THREADS = 1
torch.set_num_threads(THREADS)

CORPUS = os.path.join(HERE, "data", "tinyshakespeare.txt")
POEMS = os.path.join(HERE, "data", "heldout_poems.txt")

# ==== the run ================================================================

SEED = 1337
MODEL = dict(vocab_size=256, block_size=128, n_layer=4, n_head=4, n_embd=128, dropout=0.0)
BATCH = 32            # sequences of block_size bytes per step
WEIGHT_DECAY = 0.1    # on the matrices only (not biases, LayerNorms, embeddings' wpe)
BETAS = (0.9, 0.99)
GRAD_CLIP = 1.0
LR_MIN = 1e-4         # each stage: AdamW, linear warm-up to its lr_max then cosine decay to LR_MIN
# Stage "text": the text alone (the demo model of commit 1b65f1f, 1,508 s).
# Stage "copy": a fresh AdamW from stage text's weights, half the windows
# holding a random sequence written several times (see random_batch).
# Stage "heads": a fresh AdamW from stage copy's, at half the learning rate;
# of the windows 0.3 random sequences written again, 0.2 passages of the text
# written again, 0.3 text with a random byte after each (skip_row), 0.2 text.
STAGES = [dict(name="text", steps=2000, lr_max=2e-3, warmup=100, copy=0.0, seed=SEED + 1, batch=BATCH),
          dict(name="copy", steps=1200, lr_max=2e-3, warmup=50, copy=0.5, seed=SEED + 2, batch=16),
          dict(name="heads", steps=1200, lr_max=1e-3, warmup=50, copy=0.3, passage=0.2, skip=0.3,
               seed=SEED + 3, batch=16)]
TRAIN_FRACTION = 0.9
EVAL_EVERY = 100
EVAL_BATCHES = 10     # train and validation loss: the same 10 x 32 windows each time
COPY_MIN, COPY_MAX = 8, 64  # the copied sequence's length (see random_batch)
# The three stages are not the default: they reach issue 32's induction head
# (>= 0.4) but not its previous-token head (>= 0.6 on held-out text), and
# their language model is a little worse than stage text's. Measured on a
# shared 2-core machine (one thread), --from stage copy's folder (stage copy
# alone: best induction 0.19, previous-token 0.42, held-out 1.65 nats/byte,
# 2,279 s), 1,200 steps of stage heads (1,384 s at a load average of 4-11),
# through the server: best induction head 0.504 (layer 3 head 3; 0.494 layer
# 3 head 1), best previous-token head 0.421 (layer 0 head 2, whose weights
# over distances 0, 1, 2, 3 are 0.18, 0.42, 0.21, 0.10: a blur of the last
# bytes, as after stage text), held-out 1.67 nats/byte (stage text's 1.59).
# Other stage heads tried (1,200 steps from stage copy): copy 0.4 and passage
# 0.4 without skip: induction 0.526, previous-token 0.389, held-out 1.72;
# with associative-recall windows (pairs key value, then the keys in another
# order): previous-token 0.420 at step 200, stopped for skip. Skip alone
# (every window, 300 steps): previous-token 0.418 -> 0.455 and still rising
# (layer 0 head 2's weight on distance 1 0.42 -> 0.45), but induction 0.19 ->
# 0.04 and held-out 1.68: the lever pulls, weakly, and not at 0.3 of a mix.
RUN_STAGES = 1  # the stages a run without --stages trains (the committed model: stage text)
CHECKPOINT_EVERY = 100  # steps; OUT_DIR/checkpoint.pt, removed when the stage ends
INDUCTION_SEED = 0    # the random sequence of the induction score (see induction_sequence)

# ==== data ===================================================================


def load_bytes(path):
    with open(path, "rb") as f:
        return torch.tensor(list(f.read()), dtype=torch.long)


def split_corpus():
    data = load_bytes(CORPUS)
    n = int(TRAIN_FRACTION * len(data))
    return data[:n], data[n:]


def windows(data, starts, T):
    x = torch.stack([data[s:s + T] for s in starts])
    y = torch.stack([data[s + 1:s + 1 + T] for s in starts])
    return x, y


def random_batch(data, gen, T, copy=0.0, batch=BATCH, passage=0.0, skip=0.0):
    """batch windows of T bytes of the text (and their next bytes) at random
    places. With copy > 0 that fraction of them holds, at a random place, a
    sequence of n random bytes (COPY_MIN <= n <= COPY_MAX, each uniform over
    the corpus's alphabet) written r times (2 <= r <= (T + 1) // n, uniform).
    The first copy and the byte after it cannot be predicted and are left out
    of the loss (target -100, which cross_entropy ignores); every later copy
    can only be predicted by finding the byte before in an earlier copy and
    reading the byte after it, the circuit of a previous-token head and an
    induction head. With skip > 0 that fraction of the windows holds text
    with a random byte after each byte (skip_row). With passage > 0 that
    fraction of the windows holds, the
    same way, a passage of n bytes of the text (from a random place) written
    r times, its first copy left in the loss (text to predict) but for its
    first byte: induction on the text itself, so the previous-token head
    that serves it is trained on text, where it is measured."""
    starts = torch.randint(0, len(data) - T - 1, (batch,), generator=gen).tolist()
    x, y = windows(data, starts, T)
    if copy + passage + skip <= 0:
        return x, y
    alphabet = torch.tensor(corpus_alphabet())
    flips = torch.rand(batch, generator=gen).tolist()
    lens = torch.randint(COPY_MIN, COPY_MAX + 1, (batch,), generator=gen).tolist()
    reps = torch.rand(batch, generator=gen).tolist()
    places = torch.rand(batch, generator=gen).tolist()
    seqs = alphabet[torch.randint(0, len(alphabet), (batch, COPY_MAX), generator=gen)]
    if passage > 0:
        froms = torch.randint(0, len(data) - COPY_MAX, (batch,), generator=gen).tolist()
    if skip > 0:
        skip_froms = torch.randint(0, len(data) - COPY_MAX, (batch,), generator=gen).tolist()
    for b in range(batch):
        if copy + passage <= flips[b] < copy + passage + skip:
            t = data[skip_froms[b]:skip_froms[b] + lens[b]]
            skip_row(x[b], y[b], t, seqs[b, :lens[b]], places[b])
            continue
        text = copy <= flips[b] < copy + passage
        if flips[b] >= copy and not text:
            continue
        n = lens[b]
        seq = data[froms[b]:froms[b] + n] if text else seqs[b, :n]
        r = 2 + int(reps[b] * ((T + 1) // n - 1))  # 2 .. (T + 1) // n copies
        a = int(places[b] * (T + 2 - r * n))  # 0 <= a <= T + 1 - rn: all copies in the T + 1 bytes
        w = torch.cat([x[b], y[b, -1:]])
        for i in range(r):
            w[a + i * n:a + (i + 1) * n] = seq
        x[b], y[b] = w[:-1], w[1:]
        if text:
            y[b, max(0, a - 1)] = -100  # the passage's first byte
        else:
            y[b, max(0, a - 1):a + n] = -100  # targets a .. a + n: the first copy and the second's first byte
    return x, y


def skip_row(x, y, text, noise, place):
    """Writes into a window (x, y) at a random place n bytes of the text with
    a random byte after each (t0 r0 t1 r1 ...), the loss on the text bytes
    that follow a random one alone: the byte to predict depends on the byte
    before the current one (and the text before that, at odd distances), the
    current byte and the one two back are noise. Meant to make a layer-0
    head read the previous byte sharply (the blur of the last few bytes that
    plain text grows mixes noise in here, and a layer-0 query knows only the
    byte and its place, so a sharp head would be sharp on text too); in the
    run of RUN_STAGES's note it did not: layer 0's heads kept their blur."""
    n, T = text.numel(), x.numel()
    a = int(place * (T + 2 - 2 * n))  # 0 <= a <= T + 1 - 2n: the 2n bytes in the T + 1
    w = torch.cat([x, y[-1:]])
    w[a:a + 2 * n:2], w[a + 1:a + 2 * n:2] = text, noise
    x.copy_(w[:-1])
    y.copy_(w[1:])
    y[max(0, a - 1):a + 2 * n - 1] = -100
    y[a + 1:a + 2 * n - 1:2] = w[a + 2:a + 2 * n:2]  # at each random byte: the next text byte


def poems():
    """The poems of heldout_poems.txt: (title, text) for each block between
    '=== ' header lines (comment lines '#' before the first are skipped)."""
    out, title, lines = [], None, []
    with open(POEMS, encoding="utf-8") as f:
        for line in f:
            if line.startswith("=== "):
                if title:
                    out.append((title, "".join(lines).strip("\n") + "\n"))
                title, lines = line[4:].strip(), []
            elif title:
                lines.append(line)
    if title:
        out.append((title, "".join(lines).strip("\n") + "\n"))
    return out

# ==== training ===============================================================


def sinusoids(T, C):
    """The position table of Vaswani et al. (2017): sin and cos of pos / 10000^(2i/C)."""
    pos = torch.arange(T, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(torch.arange(0, C, 2, dtype=torch.float32) * (-math.log(10000.0) / C))
    pe = torch.zeros(T, C)
    pe[:, 0::2] = torch.sin(pos * freq)
    pe[:, 1::2] = torch.cos(pos * freq)
    return pe


def init_gpt2_(model):
    """GPT-2's initialisation (nanoGPT's _init_weights and c_proj scaling),
    except wpe: the sinusoidal table scaled to the same spread (std 0.02),
    learned from there like any weight. A shift by one position is then a
    fixed linear map of the table, which a head can learn to attend with."""
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            nn.init.zeros_(p)
        elif "ln_" in name:
            nn.init.ones_(p)
        elif name.endswith("c_proj.weight") or name.endswith("mlp.proj.weight"):
            nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * model.config.n_layer))
        else:
            nn.init.normal_(p, 0.0, 0.02)
    with torch.no_grad():
        model.wpe.weight.copy_(sinusoids(model.config.block_size, model.config.n_embd) *
                               (0.02 * math.sqrt(2.0)))


def lr_at(step, stage):
    steps, warmup, lr_max = stage["steps"], stage["warmup"], stage["lr_max"]
    if step < warmup:
        return lr_max * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - 1 - warmup)
    return LR_MIN + 0.5 * (lr_max - LR_MIN) * (1.0 + math.cos(math.pi * t))


def make_optimizer(model, weight_decay=WEIGHT_DECAY):
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and n != "wpe.weight"]
    other = [p for n, p in model.named_parameters() if not (p.dim() == 2 and n != "wpe.weight")]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": other, "weight_decay": 0.0}],
                             lr=LR_MIN, betas=BETAS, foreach=False)


@torch.no_grad()
def eval_loss(model, data, T, n_batches, seed):
    """Mean loss over n_batches fixed batches, and the largest mean
    attention weight on position i-1 of any head (queries 1 .. T-1)."""
    gen = torch.Generator().manual_seed(seed)
    model.eval()
    total = 0.0

    def prev_weight(out):  # a map [B][H][T][T] -> [H]: the mean weight on position i-1
        return torch.diagonal(out, offset=-1, dim1=-2, dim2=-1).mean(dim=(0, 2))

    with SoftmaxRecorder(prev_weight) as rec:
        for _ in range(n_batches):
            x, y = random_batch(data, gen, T)
            total += model(x, y)[1].item()
    prev = torch.stack(rec.maps).view(n_batches, model.config.n_layer, -1).mean(0).max().item()
    model.train()
    return total / n_batches, prev


_ALPHABET = []


def corpus_alphabet():
    """The byte values that occur in the corpus (65 of them), in order."""
    if not _ALPHABET:
        _ALPHABET.extend(sorted(set(load_bytes(CORPUS).tolist())))
    return list(_ALPHABET)


def induction_sequence(T):
    """A random sequence of T // 2 bytes, each drawn uniformly from the
    corpus's alphabet (torch.Generator seeded INDUCTION_SEED), written twice."""
    alphabet = corpus_alphabet()
    gen = torch.Generator().manual_seed(INDUCTION_SEED)
    half = [alphabet[i] for i in torch.randint(0, len(alphabet), (T // 2,), generator=gen).tolist()]
    return half + half


def induction_pattern(idx):
    """TransformerLens's induction detection pattern D [T][T] for idx: D[q][k]
    = 1 where 1 <= k <= q and idx[k-1] == idx[q] with k-1 < q."""
    t = torch.tensor(idx)
    dup = ((t.unsqueeze(1) == t.unsqueeze(0)).double()).tril(-1)  # k < q, same token
    D = torch.zeros(len(idx), len(idx), dtype=torch.float64)
    D[:, 1:] = dup[:, :-1]
    return D.tril()


@torch.no_grad()
def head_scores(model, idx, D):
    """Each head's TransformerLens head-detector score ("mul"): sum(P * D) /
    sum(P) over its weights P for idx, as [layers][heads]."""
    was = model.training
    model.eval()
    with SoftmaxRecorder() as rec:
        model(torch.tensor([idx]))
    model.train(was)
    return [((m[0].double() * D).sum((-1, -2)) / m[0].double().sum((-1, -2))).tolist()
            for m in rec.maps]


def new_model():
    torch.manual_seed(SEED)
    model = GPT2(GPTConfig(**MODEL, activation="gelu_new"))
    init_gpt2_(model)
    return model


def train(model, stage, log, out_dir):
    """One stage: stage["steps"] steps of a fresh AdamW on random_batch's
    windows (a generator seeded stage["seed"]). Every CHECKPOINT_EVERY steps
    the model, the optimiser, the generator and the history go to
    OUT_DIR/checkpoint.pt; the stage started again goes on from there (the
    same bytes as a run without a stop)."""
    train_data, val_data = split_corpus()
    opt = make_optimizer(model, stage.get("weight_decay", WEIGHT_DECAY))
    gen = torch.Generator().manual_seed(stage["seed"])
    steps = stage["steps"]
    history, first, before = [], 0, 0.0
    ckpt = os.path.join(out_dir, "checkpoint.pt")
    if os.path.exists(ckpt):
        state = torch.load(ckpt)
        assert state["stage"] == stage, "%s is a checkpoint of %r" % (ckpt, state["stage"])
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        gen.set_state(state["gen"])
        history, first, before = state["history"], state["step"], state["seconds"]
        log("resumed from %s at step %d (%.0f s)" % (ckpt, first, before))
    t0 = time.time() - before
    T = model.config.block_size
    rep = induction_sequence(T)
    rep_D = induction_pattern(rep)
    model.train()
    for step in range(first, steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, stage)
        x, y = random_batch(train_data, gen, T, stage["copy"], stage["batch"], stage.get("passage", 0.0),
                            stage.get("skip", 0.0))
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        opt.step()
        if step % EVAL_EVERY == 0 or step == steps - 1:
            tr, _ = eval_loss(model, train_data, T, EVAL_BATCHES, 7)
            va, prev = eval_loss(model, val_data, T, EVAL_BATCHES, 8)
            ind = max(max(r) for r in head_scores(model, rep, rep_D))
            row = {"step": step, "lr": lr_at(step, stage), "batch_loss": loss.item(), "train": tr,
                   "val": va, "best_prev_token_head": prev, "best_induction_head": ind,
                   "seconds": time.time() - t0}
            history.append(row)
            log("%s step %5d  lr %.2e  batch %.4f  train %.4f  val %.4f  prev %.3f  induction %.3f  %.0f s" %
                (stage["name"], step, row["lr"], row["batch_loss"], tr, va, prev, ind, row["seconds"]))
        if (step + 1) % CHECKPOINT_EVERY == 0 and step + 1 < steps:
            os.makedirs(out_dir, exist_ok=True)
            torch.save({"stage": stage, "step": step + 1, "model": model.state_dict(),
                        "opt": opt.state_dict(), "gen": gen.get_state(), "history": history,
                        "seconds": time.time() - t0}, ckpt + ".tmp")
            os.replace(ckpt + ".tmp", ckpt)
    if os.path.exists(ckpt):
        os.remove(ckpt)
    return dict(stage, history=history, seconds=time.time() - t0)


def finished_stages(folder):
    """The stages an exported folder's training_run.json records (a folder of
    stage text alone, as the committed model of 1b65f1f, records one)."""
    with open(os.path.join(folder, "training_run.json")) as f:
        run = json.load(f)["run"]
    if "stages" in run:
        return run["stages"]
    return [dict(STAGES[0], history=run["history"], seconds=run["seconds"])]


def run_stages(log, out_dir, from_dir, steps, n_stages):
    """The first n_stages of STAGES, each from the one before's weights. A
    finished stage that is not the last is exported to OUT_DIR/stage-NAME
    (removed when the run ends), where a stopped run goes on from; from_dir,
    the exported folder of a run of the first stages (--from), skips them:
    a stage's start is its weights alone (a fresh AdamW, its own generator),
    so the run gives the same weights either way. steps (--steps) shortens
    every stage, for checks."""
    stages = [dict(s, steps=min(s["steps"], steps)) for s in STAGES[:n_stages]]
    saved = [os.path.join(out_dir, "stage-" + s["name"]) for s in stages[:-1]]
    here = [d for d in saved if os.path.exists(os.path.join(d, "training_run.json"))]
    start = from_dir or (here[-1] if here else None)
    done, model = [], new_model()
    if start:
        model, done = load_exported(start), finished_stages(start)
        assert [s["name"] for s in done] == [s["name"] for s in stages[:len(done)]], (start, done)
        log("stages %s: the folder %s (%.0f s)" % (", ".join(s["name"] for s in done), start,
                                                 sum(s["seconds"] for s in done)))
    for i in range(len(done), len(stages)):
        done.append(train(model, stages[i], log, out_dir))
        if i + 1 < len(stages):
            export(model, saved[i])
            with open(os.path.join(saved[i], "training_run.json"), "w") as f:
                json.dump({"run": {"stages": done}}, f)
    for d in saved:
        if os.path.isdir(d):
            for name in os.listdir(d):
                os.remove(os.path.join(d, name))
            os.rmdir(d)
    return model, done

# ==== export: a Hugging Face GPT-2 folder ====================================


def bytes_to_unicode():
    """GPT-2's map of the 256 bytes to printable symbols (encoder.py)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def hf_state_dict(model):
    """transformers' GPT2LMHeadModel names ("transformer." prefix, lm_head
    tied and left out as save_pretrained leaves it out), Conv1D weights
    [in][out]: the nn.Linear weights transposed."""
    sd = {k: v.detach().float() for k, v in model.state_dict().items()}
    out = {"transformer.wte.weight": sd["wte.weight"], "transformer.wpe.weight": sd["wpe.weight"]}
    rename = {"ln_1.weight": "ln_1.weight", "ln_1.bias": "ln_1.bias",
              "attn.c_attn.weight": "attn.c_attn.weight", "attn.c_attn.bias": "attn.c_attn.bias",
              "attn.c_proj.weight": "attn.c_proj.weight", "attn.c_proj.bias": "attn.c_proj.bias",
              "ln_2.weight": "ln_2.weight", "ln_2.bias": "ln_2.bias",
              "mlp.fc.weight": "mlp.c_fc.weight", "mlp.fc.bias": "mlp.c_fc.bias",
              "mlp.proj.weight": "mlp.c_proj.weight", "mlp.proj.bias": "mlp.c_proj.bias"}
    for l in range(model.config.n_layer):
        for src, dst in rename.items():
            t = sd["h.%d.%s" % (l, src)]
            out["transformer.h.%d.%s" % (l, dst)] = t.t() if src.endswith("weight") and t.dim() == 2 else t
    out["transformer.ln_f.weight"] = sd["ln_f.weight"]
    out["transformer.ln_f.bias"] = sd["ln_f.bias"]
    return out


def write_safetensors(path, tensors, metadata):
    header, offset, blobs = {"__metadata__": metadata}, 0, []
    for name, t in tensors.items():
        data = t.contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    import numpy as np
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = f.tell()
        out = {}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            b, e = info["data_offsets"]
            f.seek(base + b)
            arr = np.frombuffer(f.read(e - b), dtype="<f4").reshape(info["shape"])
            out[name] = torch.from_numpy(arr.copy())
    return out


def export(model, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    c = model.config
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
              "vocab_size": c.vocab_size, "n_positions": c.block_size, "n_ctx": c.block_size,
              "n_embd": c.n_embd, "n_layer": c.n_layer, "n_head": c.n_head, "n_inner": None,
              "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
              "resid_pdrop": c.dropout, "embd_pdrop": c.dropout, "attn_pdrop": c.dropout,
              "initializer_range": 0.02, "bos_token_id": 10, "eos_token_id": 10,
              "tie_word_embeddings": True, "torch_dtype": "float32"}
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(out_dir, "model.safetensors"), hf_state_dict(model),
                      {"format": "pt", "n_head": str(c.n_head)})
    vocab = {sym: b for b, sym in sorted(bytes_to_unicode().items())}
    with open(os.path.join(out_dir, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(out_dir, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n")


def load_exported(out_dir):
    """The exported folder back into seed 003's GPT2 (checks the export)."""
    with open(os.path.join(out_dir, "config.json")) as f:
        c = json.load(f)
    cfg = GPTConfig(c["vocab_size"], c["n_positions"], c["n_layer"], c["n_head"], c["n_embd"], 0.0,
                    c["activation_function"])
    model = GPT2(cfg)
    st = read_safetensors(os.path.join(out_dir, "model.safetensors"))
    sd = {}
    for name, t in st.items():
        n = name[len("transformer."):]
        n = n.replace("mlp.c_fc.", "mlp.fc.").replace("mlp.c_proj.", "mlp.proj.")
        sd[n] = t.t().contiguous() if t.dim() == 2 and n.startswith("h.") else t
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert not unexpected and all(m.endswith("attn.bias") or m == "lm_head.weight" for m in missing), \
        (missing, unexpected)
    model.eval()
    return model

# ==== held-out figures =======================================================


@torch.no_grad()
def text_figures(model, data):
    """Next-token loss (nats per byte) of data cut into windows of block_size
    (each position predicted once, with the context of its window), and each
    head's mean attention weight on the previous position (queries 1 .. T-1)."""
    T, L, H = model.config.block_size, model.config.n_layer, model.config.n_head
    total, count = 0.0, 0
    prev = torch.zeros(L, H, dtype=torch.float64)
    n_prev = 0
    with SoftmaxRecorder(lambda out: out) as maps_of:
        maps = maps_of.maps
        for s in range(0, len(data) - 1, T):
            x = data[s:s + T].unsqueeze(0)
            y = data[s + 1:s + 1 + T].unsqueeze(0)
            x = x[:, :y.size(1)]
            maps.clear()
            logits, _ = model(x)
            total += F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1), reduction="sum").item()
            count += y.numel()
            t = x.size(1)
            if t > 1:
                for l in range(L):
                    sub = torch.diagonal(maps[l][0], offset=-1, dim1=-2, dim2=-1)  # [H][t-1]
                    prev[l] += sub.double().sum(-1)
                n_prev += t - 1
    return total / count, (prev / max(1, n_prev)).tolist(), count


TEST_WINDOWS = 64  # the windows tests/test_model_shakespeare.c sends to the server


def test_subset(val, T):
    """TEST_WINDOWS whole windows of the validation text, evenly spaced: the
    bytes from start to start + T + 1 (T inputs, their T next bytes)."""
    stride = ((len(val) - 1) // T) // TEST_WINDOWS
    return [val[j * stride * T:j * stride * T + T + 1] for j in range(TEST_WINDOWS)]


@torch.no_grad()
def subset_figures(model, windows):
    total, count, prev, n_prev = 0.0, 0, None, 0
    for w in windows:
        loss, p, n = text_figures(model, w)
        total += loss * n
        count += n
        p = torch.tensor(p, dtype=torch.float64) * (n - 1)
        prev = p if prev is None else prev + p
        n_prev += n - 1
    return total / count, (prev / n_prev).tolist(), count


SAMPLE = {"prompt": "ROMEO:\n", "seed": 123, "temperature": 0.8, "top_k": 40, "max_new_tokens": 300}


def sample_text(model):
    """torch.manual_seed(seed), then generate() from the prompt (the model's
    logits only: GPT2.forward returns (logits, loss))."""
    class LogitsOnly(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, idx):
            return self.m(idx)[0]

    prompt = torch.tensor([list(SAMPLE["prompt"].encode())])
    torch.manual_seed(SAMPLE["seed"])
    out = generate(LogitsOnly(model), prompt, SAMPLE["max_new_tokens"], model.config.block_size,
                   SAMPLE["temperature"], SAMPLE["top_k"])
    ids = out[0].tolist()
    return dict(SAMPLE, idx=ids, text=bytes(ids).decode("utf-8", errors="replace"))


def evaluate(out_dir, log):
    model = load_exported(out_dir)
    _, val = split_corpus()
    figures = {"chance_nats": math.log(256)}
    loss, prev, n = text_figures(model, val)
    figures["validation"] = {"bytes": n, "loss_nats": loss, "prev_token_attention": prev}
    log("validation (last 10%%, %d bytes): %.4f nats/byte (chance %.4f)" % (n, loss, math.log(256)))
    loss_s, prev_s, n_s = subset_figures(model, test_subset(val, model.config.block_size))
    figures["test_subset"] = {"windows": TEST_WINDOWS, "bytes": n_s, "loss_nats": loss_s,
                              "prev_token_attention": prev_s}
    log("the test's %d validation windows (%d bytes): %.4f nats/byte" % (TEST_WINDOWS, n_s, loss_s))
    for title, text in poems():
        data = torch.tensor(list(text.encode("utf-8")), dtype=torch.long)
        loss_p, prev_p, n_p = text_figures(model, data)
        figures.setdefault("poems", []).append({"title": title, "bytes": n_p, "loss_nats": loss_p,
                                                "prev_token_attention": prev_p})
        log("%s (%d bytes): %.4f nats/byte" % (title, n_p, loss_p))
    idx = induction_sequence(model.config.block_size)
    scores = head_scores(model, idx, induction_pattern(idx))
    figures["induction"] = {
        "what": "TransformerLens's induction head detector (error_measure mul): "
                "sum(P * D) / sum(P) over each head's weights P for idx",
        "alphabet": "the %d byte values of the corpus" % len(corpus_alphabet()),
        "seed": INDUCTION_SEED, "idx": idx, "scores": scores}
    figures["sample"] = sample_text(model)
    log("sample (seed %d, temperature %r, top_k %d):\n%s" % (
        SAMPLE["seed"], SAMPLE["temperature"], SAMPLE["top_k"], figures["sample"]["text"]))
    log("mean attention weight on position i-1 (validation text), layer x head:")
    for l, row in enumerate(prev):
        log("  layer %d: %s" % (l, "  ".join("%.3f" % v for v in row)))
    log("induction score on %d random bytes of the corpus's alphabet written twice (seed %d):" %
        (len(idx) // 2, INDUCTION_SEED))
    for l, row in enumerate(scores):
        log("  layer %d: %s" % (l, "  ".join("%.3f" % v for v in row)))
    return figures


def parse_args(argv):
    """[--eval] [--steps N] [--stages N | --copy] [--from DIR | --text-from DIR]
    [OUT_DIR]: eval only, the number of steps, how many of STAGES (--copy:
    text and copy), the exported folder of a run of the first stages to go on
    from, the folder."""
    eval_only, steps, from_dir, n_stages, rest, args = False, 10 ** 9, None, RUN_STAGES, [], iter(argv)
    for a in args:
        if a == "--eval":
            eval_only = True
        elif a == "--copy":
            n_stages = 2
        elif a == "--stages":
            n_stages = int(next(args))
        elif a == "--steps":
            steps = int(next(args))
        elif a in ("--from", "--text-from"):
            from_dir = next(args)
            n_stages = max(n_stages, 2) if a == "--text-from" else n_stages
        else:
            rest.append(a)
    return eval_only, steps, from_dir, n_stages, rest[0] if rest else os.path.join(HERE, "shakespeare")


def main(argv):
    eval_only, steps, from_dir, n_stages, out_dir = parse_args(argv)
    lines = []

    def log(s):
        print(s, flush=True)
        lines.append(s)

    log("torch %s, %d thread(s), OPENBLAS_CORETYPE=%s" %
        (torch.__version__, torch.get_num_threads(), os.environ.get("OPENBLAS_CORETYPE")))
    run = None
    if not eval_only:
        model, stages = run_stages(log, out_dir, from_dir, steps, n_stages)
        export(model, out_dir)
        # the exported weights must give the trained model's logits
        check = load_exported(out_dir)
        model.eval()
        x = split_corpus()[1][:model.config.block_size].unsqueeze(0)
        with torch.no_grad():
            assert torch.equal(model(x)[0], check(x)[0])
        run = {"seed": SEED, "model": MODEL, "batch": BATCH, "lr_min": LR_MIN,
               "weight_decay": WEIGHT_DECAY, "betas": BETAS, "grad_clip": GRAD_CLIP,
               "copy_length": [COPY_MIN, COPY_MAX], "threads": THREADS,
               "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
               "torch": torch.__version__, "seconds": sum(s["seconds"] for s in stages),
               "stages": stages}
    figures = evaluate(out_dir, log)
    path = os.path.join(out_dir, "training_run.json")
    if run is None and os.path.exists(path):
        with open(path) as f:
            run = json.load(f).get("run")
    with open(path, "w") as f:
        json.dump({"run": run, "heldout": figures}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
