"""`passes.vectorize`: maps as whole-array code, contractions as matmul (issue 12, §2 map).

Every case runs the interpreter on the pass's output and on its input (the
primal program and its gradient program) and compares; the output must type
check. Then: which maps were vectorised and which were left alone, that the
nested-map matrix product's primal and adjoint hold a `matmul` and no n^3
array, that op counts stay within a constant of the loop's, the memory guard,
the opt-out variable, the pysource hook, and located errors from vectorised
code.
"""
from __future__ import annotations

import linecache

import numpy as np
import pytest

import pullback as pb
from pullback.backends import interp
from pullback.errors import PullbackError
from pullback.ir.core import Map, Prim
from pullback.ir.traverse import iter_lets
from pullback.ir.typecheck import check_prog
from pullback.passes import vectorize as vec
from pullback.pytree import flatten

RNG = np.random.default_rng(12)


def R(*shape):
    return RNG.standard_normal(shape)


# -- programs --------------------------------------------------------------------------

def map_matmul(A, BT):
    return pb.map(lambda a: pb.map(lambda b: np.sum(a * b), BT), A)


def dot_rows(X, w):
    return pb.map(lambda x: np.sum(x * w), X)


def elementwise(xs, c):
    return pb.map(lambda x: np.sin(x) * c + x ** 2 / (1.0 + np.exp(-x)), xs)


def gather(w, idx, xs):
    return pb.map(lambda j, x: w[j] * x + w[j - 1], idx, xs)


def gather_2d(W, I, J, xs):
    return pb.map(lambda i, j, x: W[i, j] * x, I, J, xs)


def row_gather(W, idx, xs):
    return pb.map(lambda j, x: np.sum(W[j] * x), idx, xs)


def column_gather(W, idx, xs):
    return pb.map(lambda j, x: np.sum(W[:, j] * np.tanh(x)), idx, xs)


def tuple_results(X):
    return pb.map(lambda x: (np.max(x), np.sum(x[::-1] * x), x.reshape(2, 2).T), X)


def mat_vec(W, X):
    return pb.map(lambda x: np.tanh(W @ x) @ W, X)


def per_row_update(X):
    def body(x):
        z = np.zeros(3)
        z[1] = x[0] * 2.0
        z[2] += x[1]
        return z * x[2]
    return pb.map(body, X)


def stacked_products(As, Bs):
    return pb.map(lambda a, b: a @ b + a.T @ b, As, Bs)


def concat_where(X):
    return pb.map(lambda x: np.concatenate([np.where(x > 0, x, 0.1 * x), x[:1]]), X)


def loop_body(X):
    def body(x):
        s = x[0]
        for k in range(int(x.shape[0])):
            s = s * 0.5 + x[k]
        return s
    return pb.map(body, X)


def logistic(w, x, y):
    return np.log1p(np.exp(-y * (x @ w)))


def linear(w, x, y):
    return (x @ w - y) ** 2


def _scalar(f):
    def loss(*args):
        out = f(*args)
        if isinstance(out, tuple):
            return sum(np.sum(np.sin(o)) for o in out)
        return np.sum(np.sin(out))
    loss.__name__ = f"loss_{f.__name__}"
    return loss


def _gather_args(n=5, m=7):
    return (R(m), RNG.integers(-m + 1, m, n), R(n))


CASES = {
    "map_matmul": (map_matmul, (R(5, 4), R(6, 4))),
    "dot_rows": (dot_rows, (R(6, 3), R(3))),
    "elementwise": (elementwise, (R(7, 2), 0.7)),
    "gather": (gather, _gather_args()),
    "gather_2d": (gather_2d, (R(3, 4), RNG.integers(-3, 3, 6), RNG.integers(0, 4, 6), R(6))),
    "row_gather": (row_gather, (R(4, 3), RNG.integers(0, 4, 5), R(5, 3))),
    "column_gather": (column_gather, (R(3, 4), RNG.integers(0, 4, 5), R(5, 3))),
    "tuple_results": (tuple_results, (R(3, 4),)),
    "mat_vec": (mat_vec, (R(3, 3), R(5, 3))),
    "per_row_update": (per_row_update, (R(4, 3),)),
    "stacked_products": (stacked_products, (R(3, 2, 2), R(3, 2, 2))),
    "concat_where": (concat_where, (R(4, 3),)),
}
ARGNUMS = {"gather": (0, 2), "gather_2d": (0, 3), "row_gather": (0, 2), "column_gather": (0, 2),
           "elementwise": (0,)}


def _progs(f, args, argnums):
    primal = pb.jit(f).staged(*args).prog
    grad = pb.grad(_scalar(f), argnums=argnums)._jit.staged(*args).prog
    return primal, grad


def _agree(prog, args):
    out = vec.vectorize(prog)
    check_prog(out)
    leaves, _ = flatten(tuple(args))
    want = interp.run(prog, *leaves)
    got = interp.run(out, *leaves)
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=1e-10, atol=1e-12)
    return out


def _maps(prog):
    return sum(1 for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Map))


def _reachable_maps(prog):
    from pullback.ir.traverse import prune_prog

    return _maps(prune_prog(prog))


@pytest.mark.parametrize("name", sorted(CASES))
def test_vectorised_equals_loops(name):
    f, args = CASES[name]
    argnums = ARGNUMS.get(name, tuple(range(len(args))))
    for prog in _progs(f, args, argnums):
        out = _agree(prog, args)
        assert _reachable_maps(prog) > 0
        assert _reachable_maps(out) == 0, f"{name}: a map was left\n" + _print(out)


def _print(p):
    from pullback.ir.printer import print_prog

    return print_prog(p)


@pytest.mark.parametrize("loss", [logistic, linear])
def test_vmap_of_grad_is_batched_array_code(loss):
    X, y, w = R(8, 3), R(8), R(3)
    g = pb.vmap(pb.grad(loss), in_axes=(None, 0, 0))
    prog = g._jit.staged(w, X, y).prog
    out = _agree(prog, (w, X, y))
    assert _reachable_maps(out) == 0
    ops = {st.exp.op for f in out.funcs if f.name == out.entry for st in iter_lets(f.body)
           if isinstance(st.exp, Prim)}
    assert "matmul" in ops and not any(isinstance(st.exp, Map) for st in iter_lets(out.main.body))
    # and through the pysource backend: the per-example gradients
    got = pb.vmap(pb.grad(loss), in_axes=(None, 0, 0), backend="pysource")(w, X, y)
    want = np.stack([pb.grad(loss, backend="interp")(w, X[i], y[i]) for i in range(8)])
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_left_alone_when_a_statement_has_no_rule():
    X = R(4, 3)
    prog = pb.jit(loop_body).staged(X).prog
    out = _agree(prog, (X,))
    assert _reachable_maps(out) == _reachable_maps(prog) == 1


def _sizes(prog):
    return [v.type.size for f in prog.funcs for st in iter_lets(f.body) for v in st.pat
            if hasattr(v.type, "size")]


@pytest.mark.parametrize("n", [12, 20])
def test_map_matmul_primal_and_adjoint_are_contractions(n):
    A, BT, G = R(n, n + 1), R(n + 2, n + 1), R(n, n + 2)

    def loss(A, BT, G):
        return np.sum(map_matmul(A, BT) * G)

    primal = pb.jit(map_matmul).staged(A, BT).prog
    grad = pb.grad(loss, argnums=(0, 1))._jit.staged(A, BT, G).prog
    for prog, args in ((primal, (A, BT)), (grad, (A, BT, G))):
        out = _agree(prog, args)
        assert max(_sizes(out)) < n ** 3, "an n^3 intermediate is built"
        ops = [st.exp.op for f in out.funcs for st in iter_lets(f.body) if isinstance(st.exp, Prim)]
        assert ops.count("matmul") >= (1 if prog is primal else 2)
    got = pb.grad(loss, argnums=(0, 1), backend="pysource")(A, BT, G)
    np.testing.assert_allclose(got[0], G @ BT, rtol=1e-10)
    np.testing.assert_allclose(got[1], G.T @ A, rtol=1e-10)


def _work(prog, args):
    ops = interp.OpCount()
    leaves, _ = flatten(tuple(args))
    interp.run(prog, *leaves, ops=ops)
    return ops.work


@pytest.mark.parametrize("name", ["map_matmul", "gather", "row_gather", "mat_vec", "per_row_update"])
def test_op_counts_stay_within_a_constant_of_the_loops(name):
    f, _ = CASES[name]
    ratios = []
    for scale in (1, 3):
        args = {
            "map_matmul": lambda s: (R(4 * s, 5), R(3 * s, 5)),
            "gather": lambda s: _gather_args(5 * s, 7 * s),
            "row_gather": lambda s: (R(4 * s, 3), RNG.integers(0, 4 * s, 5 * s), R(5 * s, 3)),
            "mat_vec": lambda s: (R(3, 3), R(5 * s, 3)),
            "per_row_update": lambda s: (R(4 * s, 3),),
        }[name](scale)
        argnums = ARGNUMS.get(name, tuple(range(len(args))))
        for prog in _progs(f, args, argnums):
            w0, w1 = _work(prog, args), _work(vec.vectorize(prog), args)
            ratios.append(w1 / max(w0, 1))
    assert max(ratios) <= 3.0, ratios


def test_contraction_in_code_without_maps():
    def f(A, B):
        return np.sum(A[:, :, None] * B[None, :, :], axis=1)

    A, B = R(9, 10), R(10, 11)
    for prog in (pb.jit(f).staged(A, B).prog,
                 pb.grad(lambda A, B: np.sum(np.sin(f(A, B))), argnums=(0, 1))._jit.staged(A, B).prog):
        out = _agree(prog, (A, B))
        assert max(_sizes(out)) < 9 * 10 * 11
    np.testing.assert_allclose(pb.jit(f, backend="pysource")(A, B), A @ B, rtol=1e-12)


def test_batch_index_contraction():
    """A summed index shared by both operands, a batch index both keep, an index
    summed in one operand only and one in neither."""
    def f(X, Y):
        y = np.broadcast_to(Y[:, None, :, :, None, None], (4, 1, 6, 7, 3, 1))
        return np.sum(X[:, :, :, None, None, :] * y, axis=(2, 4, 5))

    X, Y = R(4, 5, 6, 2), R(4, 6, 7)
    out = _agree(pb.jit(f).staged(X, Y).prog, (X, Y))
    assert any(st.exp.op == "matmul" for st in iter_lets(out.main.body) if isinstance(st.exp, Prim))
    np.testing.assert_allclose(pb.jit(f, backend="pysource")(X, Y), 3 * np.einsum("bikl,bkj->bij", X, Y),
                               rtol=1e-12)


def test_memory_guard_keeps_the_map(monkeypatch):
    def f(X, w):
        return pb.map(lambda x: np.sum(np.exp(x[:, None] * w[None, :])), X)

    X, w = R(20, 30), R(40)
    prog = pb.jit(f).staged(X, w).prog
    monkeypatch.setattr(vec, "FLOOR", 100)
    assert _reachable_maps(_agree(prog, (X, w))) == 1          # 20*30*40 > 4 * (600 + 40 + 20)
    monkeypatch.setattr(vec, "FLOOR", 10 ** 6)
    assert _reachable_maps(_agree(prog, (X, w))) == 0


def test_opt_out_variable(monkeypatch):
    f, args = CASES["dot_rows"]
    prog = pb.jit(f).staged(*args).prog
    monkeypatch.setenv("PULLBACK_VECTORIZE", "0")
    assert vec.vectorize(prog) is prog
    monkeypatch.setenv("PULLBACK_VECTORIZE", "1")
    assert vec.vectorize(prog) is not prog
    plain = pb.jit(lambda x, w: np.sum(np.sin(x) * w)).staged(*args).prog   # nothing to do: the same program
    assert vec.vectorize(plain) is plain


def test_pysource_runs_vectorised_code_and_derivative_source_shows_maps():
    from pullback.backends.pysource.runner import compile_prog

    f, args = CASES["map_matmul"]
    prog = pb.jit(f).staged(*args).prog
    src = compile_prog(prog).source
    assert "for " not in src and ("matmul" in src or "@" in src), src
    shown = pb.derivative_source(lambda A, BT: np.sum(map_matmul(A, BT)), *args)
    assert "# map over" in shown


def test_out_of_range_gather_is_a_located_error():
    f = gather
    w, idx, xs = _gather_args()
    idx = idx.copy()
    idx[2] = 40
    with pytest.raises(PullbackError) as ei:
        pb.jit(f, backend="pysource")(w, idx, xs)
    msg = str(ei.value)
    assert "out of bounds" in msg or "out of range" in msg, msg
    assert __file__.rsplit("/", 1)[-1] in msg, msg


def test_out_of_range_scatter_in_the_adjoint_is_a_located_error():
    W, I, J, xs = CASES["gather_2d"][1]
    J = J.copy()
    J[1] = 9      # W has 4 columns: W[i, 9] is out of range, though i*4 + 9 is inside W
    loss = _scalar(gather_2d)
    with pytest.raises(PullbackError) as ei:
        pb.grad(loss, argnums=(0,), backend="pysource")(W, I, J, xs)
    assert __file__.rsplit("/", 1)[-1] in str(ei.value), str(ei.value)


# -- random programs -----------------------------------------------------------------------

_UNARY = ["np.sin({})", "np.exp(0.3 * {})", "np.tanh({})", "({} * {})", "np.abs({})"]
_BINARY = ["({} + {})", "({} * {})", "({} - 0.5 * {})", "np.maximum({}, {})"]


def _random_program(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 4))
    terms = ["x", "w", "x[0]", "w[1]", "np.sum(x * w)", "x[::-1]"]
    exprs = list(terms)
    for _ in range(int(rng.integers(3, 7))):
        if rng.random() < 0.5:
            a = exprs[int(rng.integers(len(exprs)))]
            e = _UNARY[int(rng.integers(len(_UNARY)))].format(a, a)
        else:
            a, b = (exprs[int(rng.integers(len(exprs)))] for _ in range(2))
            e = _BINARY[int(rng.integers(len(_BINARY)))].format(a, b)
        exprs.append(e)
    body = exprs[-1]
    if rng.random() < 0.5:
        body = f"np.sum({body})"
    inner = rng.random() < 0.4
    if inner:
        src = f"def prog(X, w):\n    return pb.map(lambda r: pb.map(lambda x: {body}, r), X)\n"
        shape = (3, 2, d)
    else:
        src = f"def prog(X, w):\n    return pb.map(lambda x: {body}, X)\n"
        shape = (4, d)
    ns = {"pb": pb, "np": np}
    name = f"<vectorize-random-{seed}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)   # pullback reads the source
    exec(compile(src, name, "exec"), ns)
    return ns["prog"], (rng.standard_normal(shape), rng.standard_normal(d)), src


@pytest.mark.parametrize("seed", range(12))
def test_random_programs(seed):
    f, args, src = _random_program(seed)
    for prog in _progs(f, args, (0, 1)):
        out = _agree(prog, args)
        assert _reachable_maps(out) == 0, src
