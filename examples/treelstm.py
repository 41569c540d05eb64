"""TreeLSTM sentiment model (Tai et al. 2015), trained with SGD, as Lantern evaluates it.

A binary Tree-LSTM with separate forget gates for the left and right child
(Tai et al.'s N-ary Tree-LSTM with N = 2). Each node i computes, from its
input x_i and its children's states (h_l, c_l), (h_r, c_r):

    z   = W x_i + U [h_l; h_r] + b                      (5H pre-activations)
    i, f_l, f_r, o = sigmoid(z[:H]), ..., sigmoid(z[3H:4H]);  u = tanh(z[4H:])
    c   = i * u + f_l * c_l + f_r * c_r
    h   = o * tanh(c)
    loss_i = cross-entropy(softmax(V h + v), label_i)   (5 sentiment classes)

and the tree's loss is the sum over its nodes. As in Lantern's benchmark, a
leaf's input is its word's embedding and its children's states are zero, and
an internal node's input is zero; so a leaf computes `W x + b` and an internal
node `U [h_l; h_r] + b` (the terms that are zero are not computed).

**Trees are arrays.** A tree is held the way users hold parse trees: `left[i]`,
`right[i]` (child ids, -1 at a leaf), `word[i]` (word id, read at leaves) and
`label[i]` (class 0..4), plus the root id. `node` recurses over *traced* node
ids (`node(left[i], ...)`), so pullback stages and compiles it once per array
shape, not once per tree. Every tree is padded to the same node capacity
(`--capacity`, default 128 >= 2 * 60 - 1 nodes), so one compilation serves the
whole data set; the padding nodes are never visited.

**The training step is compiled.** `make_step()` is `pb.jit(sgd_step)`, which
gathers the tree's embedding rows (`X = E[word]`), calls `pb.value_and_grad`
of the tree loss with respect to X and the weights, and applies the SGD update.
Differentiating with respect to the gathered rows X, not the 5000 x 300 table,
keeps the adjoints the recursion carries small (capacity x 300); the update is
then scattered into the table by a loop over the tree's leaves
(`E[word[k]] -= lr * gX[k]`), which adds correctly when a word occurs twice.
Only those rows are updated. pullback never modifies its arguments, so
`E[...] -= ...` on the argument E first copies E (one memcpy of the table per
step) and the step returns the new table.

The data are synthetic: random binary bracketings of 10-60 words (fixed
seed); each word has a hidden polarity in {-2, ..., 2} and a node's label is
the clipped sum of its words' polarities, shifted to 0..4, so there is
something to learn.

Run:  python examples/treelstm.py [--steps 60] [--hidden 150] [--backend pysource]
"""
import argparse
import sys
import time

import numpy as np

import pullback as pb

CLASSES = 5


# --------------------------------------------------------------------------- the model

def sigmoid(z):
    return 0.5 * (np.tanh(0.5 * z) + 1.0)


def node(i, left, right, label, X, p):
    """(summed loss of the subtree rooted at node i, h_i, c_i)."""
    H = p["V"].shape[1]
    if left[i] < 0:                                    # leaf: input = embedding, children = 0
        z = p["W"] @ X[i] + p["b"]
        c = sigmoid(z[:H]) * np.tanh(z[4 * H:])
        return head(0.0, z, c, label[i], p["V"], p["v"])
    loss_l, h_l, c_l = node(left[i], left, right, label, X, p)
    loss_r, h_r, c_r = node(right[i], left, right, label, X, p)
    z = p["U"] @ np.concatenate((h_l, h_r)) + p["b"]   # internal: input = 0
    g = sigmoid(z[:3 * H])
    c = g[:H] * np.tanh(z[4 * H:]) + g[H:2 * H] * c_l + g[2 * H:] * c_r
    return head(loss_l + loss_r, z, c, label[i], p["V"], p["v"])


def head(loss_children, z, c, y, V, v):
    """Output gate, hidden state and this node's softmax cross-entropy."""
    H = V.shape[1]
    h = sigmoid(z[3 * H:4 * H]) * np.tanh(c)
    logits = V @ h + v
    m = np.max(logits)
    lse = m + np.log(np.sum(np.exp(logits - m)))
    return loss_children + (lse - logits[y]), h, c


def tree_loss(X, p, left, right, label, root):
    """Sum over the tree's nodes of the per-node cross-entropy; X[i] is node i's embedding."""
    return node(root, left, right, label, X, p)[0]


def sgd_step(E, p, left, right, word, label, root, n_nodes, lr):
    """One SGD step on one tree: (loss before the step, new E, new p)."""
    X = E[word]
    loss, (gX, gp) = pb.value_and_grad(tree_loss, argnums=(0, 1))(X, p, left, right, label, root)
    for k in range(n_nodes):                           # nodes 0..n_nodes-1 are the tree's
        if left[k] < 0:
            E[word[k]] -= lr * gX[k]                    # only the rows of the tree's words
    new_p = {name: p[name] - lr * gp[name] for name in p}
    return loss, E, new_p


def make_step(backend=None):
    """The compiled training step (`pb.jit(sgd_step)`), on `backend` (default: pullback's)."""
    return pb.jit(sgd_step, backend=backend)


def init_params(rng, vocab=5000, embed=300, hidden=150):
    """(E, p): the embedding table (vocab x embed) and the weights, float64."""
    E = rng.normal(size=(vocab, embed)) * 0.1
    p = {"W": rng.normal(size=(5 * hidden, embed)) / np.sqrt(embed),
         "U": rng.normal(size=(5 * hidden, 2 * hidden)) / np.sqrt(2 * hidden),
         "b": np.zeros(5 * hidden),
         "V": rng.normal(size=(CLASSES, hidden)) / np.sqrt(hidden),
         "v": np.zeros(CLASSES)}
    return E, p


# --------------------------------------------------------------------------- data

class Tree:
    """One parse tree as arrays padded to `capacity` nodes; nodes 0..n_nodes-1 are used."""

    def __init__(self, left, right, word, label, root, n_nodes):
        self.left, self.right, self.word, self.label = left, right, word, label
        self.root, self.n_nodes = np.int64(root), np.int64(n_nodes)

    def arrays(self):
        return self.left, self.right, self.word, self.label, self.root, self.n_nodes


def random_tree(rng, n_leaves, capacity, polarity):
    """A random binary bracketing of `n_leaves` random words (ids into `polarity`)."""
    if 2 * n_leaves - 1 > capacity:
        raise ValueError(f"a tree of {n_leaves} leaves has {2 * n_leaves - 1} nodes, "
                         f"more than the capacity {capacity}")
    left = np.full(capacity, -1, np.int64)
    right = np.full(capacity, -1, np.int64)
    word = np.zeros(capacity, np.int64)
    label = np.zeros(capacity, np.int64)
    count = 0

    def build(n):                                      # returns (node id, polarity sum)
        nonlocal count
        i = count
        count += 1
        if n == 1:
            word[i] = rng.integers(len(polarity))
            s = int(polarity[word[i]])
        else:
            k = int(rng.integers(1, n))
            left[i], sl = build(k)
            right[i], sr = build(n - k)
            s = sl + sr
        label[i] = min(max(s, -2), 2) + 2
        return i, s

    root, _ = build(n_leaves)
    return Tree(left, right, word, label, root, count)


def make_data(rng, n_trees, vocab, capacity, min_leaves=10, max_leaves=60):
    polarity = rng.integers(-2, 3, size=vocab) * (rng.random(vocab) < 0.3)   # most words neutral
    return [random_tree(rng, int(rng.integers(min_leaves, max_leaves + 1)), capacity, polarity)
            for _ in range(n_trees)]


# --------------------------------------------------------------------------- training

def train(step, E, p, trees, steps, lr, log=print, every=10):
    """SGD over `trees` in order, `steps` steps; returns (E, p, losses per node)."""
    per_node = []
    for s in range(steps):
        t = trees[s % len(trees)]
        loss, E, p = step(E, p, t.left, t.right, t.word, t.label, t.root, t.n_nodes, lr)
        per_node.append(float(loss) / int(t.n_nodes))
        if log and (s + 1) % every == 0:
            log(f"step {s + 1:4d}  mean loss per node over the last {every} steps: "
                f"{np.mean(per_node[-every:]):.4f}")
    return E, p, per_node


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=60, help="SGD steps (one tree each)")
    ap.add_argument("--trees", type=int, default=20, help="size of the synthetic training set")
    ap.add_argument("--hidden", type=int, default=150)
    ap.add_argument("--embed", type=int, default=300)
    ap.add_argument("--vocab", type=int, default=5000)
    ap.add_argument("--min-leaves", type=int, default=10)
    ap.add_argument("--max-leaves", type=int, default=60)
    ap.add_argument("--capacity", type=int, default=128, help="node capacity every tree is padded to")
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--every", type=int, default=10, help="print the mean loss every this many steps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", default=None, help="numba (default), pysource or interp")
    return ap.parse_args(argv)


def main(argv=None):
    a = parse_args(argv)
    step = make_step(a.backend)
    rng = np.random.default_rng(a.seed)
    trees = make_data(rng, a.trees, a.vocab, a.capacity, a.min_leaves, a.max_leaves)
    E, p = init_params(rng, a.vocab, a.embed, a.hidden)
    t0 = time.perf_counter()
    E, p, per_node = train(step, E, p, trees[:1], 1, 0.0, log=None)    # lr 0: compiles, changes nothing
    t1 = time.perf_counter()
    E, p, per_node = train(step, E, p, trees, a.steps, a.lr, every=a.every)
    t2 = time.perf_counter()
    k = max(1, min(a.every, len(per_node) // 2))
    first, last = np.mean(per_node[:k]), np.mean(per_node[-k:])
    print(f"mean loss per node: first {k} steps {first:.4f}, last {k} steps {last:.4f}")
    print(f"first call (staging and compilation) {t1 - t0:.1f} s; then {a.steps} steps in {t2 - t1:.1f} s "
          f"({1e3 * (t2 - t1) / max(a.steps, 1):.1f} ms per step)")
    return first, last


# A quick small run (tests/test_treelstm.py runs the example with it).
QUICK = ["--steps", "20", "--trees", "2", "--hidden", "6", "--embed", "5", "--vocab", "20",
         "--min-leaves", "3", "--max-leaves", "6", "--capacity", "16", "--lr", "0.2", "--every", "10"]

if __name__ == "__main__":
    main(sys.argv[1:])
