"""The TreeLSTM of examples/treelstm.py in PyTorch eager, written the usual way.

The usual way (as in the TreeLSTMSentiment code Lantern compares with): a tree
is a Python object per node, the model recurses over those objects, the
sentence's words are looked up once in an `nn.Embedding` and each leaf takes
its row, each node adds an `F.cross_entropy` term, and a step is
`zero_grad(); loss.backward(); optimizer.step()` with `optim.SGD`. The
embedding's gradient is dense (`nn.Embedding(sparse=False)`, the default), so
SGD updates the whole table, as users' code does.

The same arithmetic as the pullback model (one bias b shared by leaves and
internal nodes; a leaf computes W x + b, an internal node U [h_l; h_r] + b),
started from the same weights, so the two trainings agree to rounding.
Importing this module needs torch; the runner imports it only when torch is
installed.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Node:
    """One parse-tree node: children (None at a leaf), the leaf's position in its sentence, a label."""

    __slots__ = ("left", "right", "pos", "label")

    def __init__(self, left, right, pos, label):
        self.left, self.right, self.pos, self.label = left, right, pos, label


class TorchTree:
    """A tree as Python node objects plus the sentence's word ids, built from the array form."""

    def __init__(self, t):
        words = []

        def build(i):
            if t.left[i] < 0:
                words.append(int(t.word[i]))
                return Node(None, None, len(words) - 1, torch.tensor([int(t.label[i])]))
            left, right = build(int(t.left[i])), build(int(t.right[i]))
            return Node(left, right, -1, torch.tensor([int(t.label[i])]))

        self.root = build(int(t.root))        # data preparation, not timed
        self.words = torch.tensor(words)


class TreeLSTM(nn.Module):
    def __init__(self, E, p, dtype=torch.float64):
        super().__init__()
        hidden = p["V"].shape[1]
        self.H = hidden
        self.emb = nn.Embedding(E.shape[0], E.shape[1], dtype=dtype)
        self.W = nn.Linear(E.shape[1], 5 * hidden, dtype=dtype)
        self.U = nn.Linear(2 * hidden, 5 * hidden, bias=False, dtype=dtype)
        self.out = nn.Linear(hidden, 5, dtype=dtype)
        with torch.no_grad():
            for param, value in ((self.emb.weight, E), (self.W.weight, p["W"]), (self.W.bias, p["b"]),
                                 (self.U.weight, p["U"]), (self.out.weight, p["V"]), (self.out.bias, p["v"])):
                param.copy_(torch.as_tensor(value))

    def node(self, t, embs):
        H = self.H
        if t.left is None:
            z = self.W(embs[t.pos])
            c = torch.sigmoid(z[:H]) * torch.tanh(z[4 * H:])
            loss = 0.0
        else:
            loss_l, h_l, c_l = self.node(t.left, embs)
            loss_r, h_r, c_r = self.node(t.right, embs)
            z = self.U(torch.cat((h_l, h_r))) + self.W.bias
            g = torch.sigmoid(z[:3 * H])
            c = g[:H] * torch.tanh(z[4 * H:]) + g[H:2 * H] * c_l + g[2 * H:] * c_r
            loss = loss_l + loss_r
        h = torch.sigmoid(z[3 * H:4 * H]) * torch.tanh(c)
        logits = self.out(h)
        return loss + F.cross_entropy(logits.unsqueeze(0), t.label, reduction="sum"), h, c

    def forward(self, tree):
        return self.node(tree.root, self.emb(tree.words))[0]


def make_trainer(E, p, lr, dtype=torch.float64):
    """(model, step): `step(tree)` does one SGD step and returns the loss before it."""
    model = TreeLSTM(E, p, dtype)
    opt = torch.optim.SGD(model.parameters(), lr=lr)

    def step(tree):
        opt.zero_grad()
        loss = model(tree)
        loss.backward()
        opt.step()
        return loss.item()

    return model, step


def params_of(model):
    """The weights as the pullback example names them (E, {W, U, b, V, v}), as NumPy arrays."""
    d = lambda t: t.detach().numpy().copy()
    return d(model.emb.weight), {"W": d(model.W.weight), "U": d(model.U.weight), "b": d(model.W.bias),
                                 "V": d(model.out.weight), "v": d(model.out.bias)}
