"""examples/treelstm.py: the TreeLSTM gradient agrees with central finite differences,
one compiled SGD step lowers the loss and touches only the tree's embedding rows,
one staging serves trees of different shapes, and the example runs end to end.

Tiny sizes throughout (the suite runs on the pysource backend, conftest.py).
"""
import pathlib
import runpy

import numpy as np
import pytest

import pullback as pb

ROOT = pathlib.Path(__file__).resolve().parents[1]
tl = runpy.run_path(str(ROOT / "examples" / "treelstm.py"), run_name="treelstm_example")

VOCAB, EMBED, HIDDEN, CAP = 12, 4, 3, 16


def _tree(seed, leaves):
    rng = np.random.default_rng(seed)
    polarity = rng.integers(-2, 3, size=VOCAB)
    return tl["random_tree"](rng, leaves, CAP, polarity)


def _params(seed):
    rng = np.random.default_rng(seed)
    E, p = tl["init_params"](rng, VOCAB, EMBED, HIDDEN)
    p = {k: v + 0.3 * rng.normal(size=v.shape) for k, v in p.items()}   # non-zero biases too
    return E, p


def _loss(X, p, t):
    return tl["tree_loss"](X, p, t.left, t.right, t.label, t.root)


def _numpy_loss(X, p, t):
    """The same model written directly over the arrays in NumPy, as an independent reference."""
    H = HIDDEN
    sig = lambda z: 1.0 / (1.0 + np.exp(-z))

    def rec(i):
        if t.left[i] < 0:
            z = p["W"] @ X[i] + p["b"]
            c, loss = sig(z[:H]) * np.tanh(z[4 * H:]), 0.0
        else:
            ll, hl, cl = rec(t.left[i])
            lr, hr, cr = rec(t.right[i])
            z = p["U"] @ np.concatenate((hl, hr)) + p["b"]
            c = sig(z[:H]) * np.tanh(z[4 * H:]) + sig(z[H:2 * H]) * cl + sig(z[2 * H:3 * H]) * cr
            loss = ll + lr
        h = sig(z[3 * H:4 * H]) * np.tanh(c)
        logits = p["V"] @ h + p["v"]
        return loss + np.log(np.sum(np.exp(logits))) - logits[t.label[i]], h, c

    return rec(int(t.root))[0]


@pytest.mark.parametrize("backend", ["pysource", "interp"])
def test_loss_matches_a_plain_numpy_model(backend):
    t = _tree(1, 5)
    E, p = _params(2)
    X = E[t.word]
    got = pb.jit(tl["tree_loss"], backend=backend)(X, p, t.left, t.right, t.label, t.root)
    assert np.isclose(got, _numpy_loss(X, p, t), rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_gradient_matches_central_differences(seed):
    t = _tree(10 + seed, 6)
    E, p = _params(20 + seed)
    X = E[t.word]
    gX, gp = pb.grad(tl["tree_loss"], argnums=(0, 1))(X, p, t.left, t.right, t.label, t.root)
    rng = np.random.default_rng(30 + seed)
    eps = 1e-6
    for _ in range(3):
        dX = rng.normal(size=X.shape)
        dp = {k: rng.normal(size=v.shape) for k, v in p.items()}
        plus = _numpy_loss(X + eps * dX, {k: p[k] + eps * dp[k] for k in p}, t)
        minus = _numpy_loss(X - eps * dX, {k: p[k] - eps * dp[k] for k in p}, t)
        fd = (plus - minus) / (2 * eps)
        ad = np.sum(gX * dX) + sum(np.sum(gp[k] * dp[k]) for k in p)
        assert np.isclose(ad, fd, rtol=1e-6, atol=1e-8), (ad, fd)
    # only the tree's leaves get an embedding gradient; padding and internal nodes none
    leaf = (t.left < 0) & (np.arange(CAP) < t.n_nodes)
    assert np.all(gX[~leaf] == 0) and np.all(np.abs(gX[leaf]).sum(axis=1) > 0)


def test_one_sgd_step_lowers_the_loss_and_updates_only_the_trees_rows():
    t = _tree(3, 7)
    E, p = _params(4)
    E0, p0 = E.copy(), {k: v.copy() for k, v in p.items()}
    step = tl["make_step"]()
    loss, E1, p1 = step(E, p, t.left, t.right, t.word, t.label, t.root, t.n_nodes, 0.05)
    assert np.isclose(loss, _numpy_loss(E[t.word], p, t), rtol=1e-12)
    assert np.array_equal(E, E0) and all(np.array_equal(p[k], p0[k]) for k in p)   # arguments untouched
    assert _numpy_loss(E1[t.word], p1, t) < loss
    used = np.unique(t.word[:t.n_nodes][t.left[:t.n_nodes] < 0])
    changed = np.flatnonzero(np.any(E1 != E0, axis=1))
    assert np.array_equal(changed, used)
    # the update is the gradient step, with repeated words' rows adding up
    gX, gp = pb.grad(tl["tree_loss"], argnums=(0, 1))(E[t.word], p, t.left, t.right, t.label, t.root)
    want = E0.copy()
    np.add.at(want, t.word, -0.05 * gX)
    assert np.allclose(E1, want, rtol=0, atol=1e-14)
    assert all(np.allclose(p1[k], p0[k] - 0.05 * gp[k], rtol=0, atol=1e-14) for k in p)


def test_one_staging_serves_trees_of_every_shape():
    E, p = _params(5)
    step = tl["make_step"]()
    for seed, leaves in ((6, 2), (7, 5), (8, 8)):
        t = _tree(seed, leaves)
        want = _numpy_loss(E[t.word], p, t)
        loss, E, p = step(E, p, t.left, t.right, t.word, t.label, t.root, t.n_nodes, 0.01)
        assert np.isclose(loss, want, rtol=1e-12)
    assert len(step._cache) == 1


def test_capacity_too_small_is_refused():
    with pytest.raises(ValueError, match="capacity"):
        tl["random_tree"](np.random.default_rng(0), 9, CAP, np.zeros(VOCAB, np.int64))


def test_example_trains_end_to_end(capsys):
    first, last = tl["main"](tl["QUICK"])
    out = capsys.readouterr().out
    assert "mean loss per node" in out and "ms per step" in out
    assert last < first


@pytest.mark.slow
def test_numba_step_agrees_with_pysource():
    t = _tree(9, 6)
    E, p = _params(10)
    args = (E, p, t.left, t.right, t.word, t.label, t.root, t.n_nodes, 0.05)
    want = tl["make_step"]("pysource")(*args)
    got = tl["make_step"]("numba")(*args)
    assert np.isclose(got[0], want[0], rtol=1e-12)
    assert np.allclose(got[1], want[1], rtol=1e-12, atol=1e-15)
    assert all(np.allclose(got[2][k], want[2][k], rtol=1e-12, atol=1e-15) for k in p)
