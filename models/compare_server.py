#!/usr/bin/python3
"""Asks a running attention-server for the demo model's logits and compares
them with PyTorch's on the same exported weights.

    build/attention-server &      (without --model it serves this model, built in)
    /usr/bin/python3 models/compare_server.py [URL] [TEXT]   (default http://127.0.0.1:8080, "ROMEO:")

POST /model/gpt2 {"model": "shakespeare", "text": TEXT, "return": ["idx", "tokens",
"logits", "next_token"]}; PyTorch runs seed 003's GPT2 (gelu_new) loaded from
models/shakespeare/ by train_shakespeare.load_exported. Prints the largest
absolute and relative difference of the logits and both next tokens; exits 1
when they differ by more than 1e-4 + 1e-3 |x| (the project's tolerance).
"""
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_shakespeare as ts  # noqa: E402
import torch  # noqa: E402


def main(argv):
    url = argv[0] if argv else "http://127.0.0.1:8080"
    text = argv[1] if len(argv) > 1 else "ROMEO:"
    body = json.dumps({"model": "shakespeare", "text": text,
                       "return": ["idx", "tokens", "logits", "next_token"]}).encode()
    req = urllib.request.Request(url + "/model/gpt2", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        reply = json.load(r)
    model = ts.load_exported(os.path.join(ts.HERE, "shakespeare"))
    idx = torch.tensor([list(text.encode("utf-8"))])
    assert reply["idx"] == idx[0].tolist(), (reply["idx"], idx[0].tolist())
    with torch.no_grad():
        want = model(idx)[0][0]
    got = torch.tensor(reply["logits"], dtype=torch.float32)
    diff = (got - want).abs()
    rel = (diff / want.abs().clamp_min(1e-6)).max().item()
    ok = bool((diff <= 1e-4 + 1e-3 * want.abs()).all())
    print("tokens %s" % reply["tokens"])
    print("logits [%d][%d]: max |server - PyTorch| %.3g, max relative %.3g, within 1e-4 + 1e-3|x|: %s"
          % (got.shape[0], got.shape[1], diff.max().item(), rel, ok))
    print("next token: server %d %r, PyTorch %d %r" % (
        reply["next_token"], chr(reply["next_token"]), int(want[-1].argmax()), chr(int(want[-1].argmax()))))
    return 0 if ok and reply["next_token"] == int(want[-1].argmax()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
