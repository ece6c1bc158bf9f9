"""F.dropout recorded while a model runs (shared by the model generators).

    with DropoutRecorder() as d:
        model(idx)
    d.masks   # every dropout's multipliers, in call (= draw) order

The wrapper calls the real F.dropout, then rewinds the generator and redraws
the mask as ATen's CPU dropout does (`empty_like(x).bernoulli_(1 - p)
.div_(1 - p)`; p = 1 multiplies by zero and draws nothing), and checks that
the redraw leaves the generator where the real call did and that the real
output is x times it, bit for bit. Inactive dropouts (eval, p = 0) record
ones. nn.Dropout calls F.dropout through the module attribute, so patching
it reaches every nn.Dropout."""
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
