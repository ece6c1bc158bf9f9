"""What a model's forward computes, recorded without changing an operation
(shared by the model generators and models/train_shakespeare.py):

    with DropoutRecorder() as d:
        model(idx)
    d.masks   # every dropout's multipliers, in call (= draw) order

    with SoftmaxRecorder() as s:    # F.softmax and torch.softmax
        model(idx)
    s.maps    # every softmax output (or keep(output)), in call order

    with ForwardRecorder(model.drop, list(model.h), model.ln_f) as r:
        model(idx)
    r.hidden, r.maps, r.masks   # the hidden states besides the two above

DropoutRecorder calls the real F.dropout, then rewinds the generator and
redraws the mask as ATen's CPU dropout does (`empty_like(x).bernoulli_(1 - p)
.div_(1 - p)`; p = 1 multiplies by zero and draws nothing), and checks that
the redraw leaves the generator where the real call did and that the real
output is x times it, bit for bit. Inactive dropouts (eval, p = 0) record
ones. nn.Dropout calls F.dropout through the module attribute, so patching
it reaches every nn.Dropout; likewise the softmaxes."""
import torch
import torch.nn.functional as F


class DropoutRecorder:
    def __init__(self):
        self.masks = []

    def dropout(self, input, p=0.5, training=True, inplace=False):
        if not training or p == 0:
            self.masks.append(torch.ones_like(input))
            return self._dropout(input, p, training, inplace)
        before = torch.get_rng_state()
        x = input.detach().clone()
        out = self._dropout(input, p, training, inplace)
        after = torch.get_rng_state()
        torch.set_rng_state(before)
        if p == 1:
            noise = torch.zeros_like(x)
        else:
            noise = torch.empty_like(x).bernoulli_(1 - p).div_(1 - p)
        assert torch.equal(torch.get_rng_state(), after), "the redrawn mask used other draws"
        assert torch.equal(out, x * noise), "the redrawn mask is not the one F.dropout used"
        self.masks.append(noise)
        return out

    def __enter__(self):
        self._dropout = F.dropout
        F.dropout = self.dropout
        return self

    def __exit__(self, *exc):
        F.dropout = self._dropout


class SoftmaxRecorder:
    """F.softmax and torch.softmax wrapped: keep(output) of every call, in
    call order, in maps (keep: a detached copy unless given)."""

    def __init__(self, keep=lambda out: out.detach().clone()):
        self.maps, self.keep = [], keep

    def wrap(self, real):
        def softmax(*args, **kwargs):
            out = real(*args, **kwargs)
            self.maps.append(self.keep(out))
            return out
        return softmax

    def __enter__(self):
        self._real = (F.softmax, torch.softmax)
        F.softmax, torch.softmax = self.wrap(F.softmax), self.wrap(torch.softmax)
        return self

    def __exit__(self, *exc):
        F.softmax, torch.softmax = self._real


class ForwardRecorder:
    """One forward's hidden states, softmax maps and dropout multipliers.
    hidden: the outputs of first (when there are blocks), of every block but
    the last, and of last: Hugging Face's hidden states, the input of every
    block, then the final norm's output."""

    def __init__(self, first, blocks, last):
        self.modules = ([first] if blocks else []) + list(blocks[:-1]) + [last]
        self.hidden, self.softmax, self.dropout = [], SoftmaxRecorder(), DropoutRecorder()

    def __enter__(self):
        keep = lambda m, i, o: self.hidden.append(o.detach().clone())  # noqa: E731
        self.hooks = [m.register_forward_hook(keep) for m in self.modules]
        self.softmax.__enter__()
        self.dropout.__enter__()
        return self

    def __exit__(self, *exc):
        self.dropout.__exit__(*exc)
        self.softmax.__exit__(*exc)
        for h in self.hooks:
            h.remove()

    @property
    def maps(self):
        return self.softmax.maps

    @property
    def masks(self):
        return self.dropout.masks
