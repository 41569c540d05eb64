"""A buffer store's push needs no growth check when the loop's static trip count
is the store's size and the loop pushes once per iteration into a store made just
before it (`numba_stores.fitting_pushes`, note [numba-stores], "Pushes that fit"):
the check, never taken, cost LLVM about a fifth of lstm's gradient compile."""
import dataclasses

import numpy as np

import pullback as pb
from pullback.backends import numba_backend as nb
from pullback.backends.numba_stores import fitting_pushes
from pullback.ir.core import Body, Let, Loop, Prim
from pullback.ir.traverse import iter_lets, use_counts


def steps(x):
    for _ in range(6):
        x = np.sin(x) * 1.5 + x * x[::-1]
    return np.sum(x)


def until(x):
    i = 0
    while i < 6 and np.sum(x) < 1e6:
        x = np.sin(x) * 1.5 + x * x[::-1]
        i += 1
    return np.sum(x)


X = np.linspace(0.1, 0.7, 3)


def source(fun):
    return nb.emit_prog(nb.lower(pb.jit(pb.grad(fun), backend="numba").staged(X).prog))


def test_static_trip_count_pushes_have_no_check():
    assert "_st_grow" not in source(steps)
    np.testing.assert_allclose(pb.jit(pb.grad(steps), backend="numba")(X),
                               pb.jit(pb.grad(steps), backend="interp")(X), rtol=1e-13)


def test_while_loop_pushes_keep_the_check():
    assert "_st_grow" in source(until)
    np.testing.assert_allclose(pb.jit(pb.grad(until), backend="numba")(X),
                               pb.jit(pb.grad(until), backend="interp")(X), rtol=1e-13)


def _forward_loop_body(fun):
    """The body holding the gradient's forward loop, and that loop's statement."""
    prog = nb.lower(pb.jit(pb.grad(fun), backend="numba").staged(X).prog)
    for f in prog.funcs:
        for body in [f.body] + [b for st in iter_lets(f.body) for b in _bodies(st)]:
            for st in body.stmts:
                if isinstance(st.exp, Loop) and any(s.exp.op == "store_push" for s in st.exp.body.stmts
                                                    if isinstance(s.exp, Prim)):
                    return f, body, st
    raise AssertionError("no forward loop")


def _bodies(st):
    from pullback.ir.traverse import exp_scopes

    return [b for _, b in exp_scopes(st.exp)]


def test_too_small_a_store_or_a_second_reader_keeps_the_check():
    f, body, loop = _forward_loop_body(steps)
    uses = use_counts(f.body)
    assert fitting_pushes(body, uses)
    # a store made with room for fewer values than the trip count
    small = Body(tuple(Let(s.pat, dataclasses.replace(s.exp, params=tuple(
        (k, (v - 1 if k == "cap" else v)) for k, v in s.exp.params)), s.loc)
        if isinstance(s.exp, Prim) and s.exp.op == "store_new" else s for s in body.stmts), body.result)
    assert not fitting_pushes(small, uses)
    # the store's initial value read elsewhere too
    news = [v for s in body.stmts if isinstance(s.exp, Prim) and s.exp.op == "store_new" for v in s.pat]
    assert not fitting_pushes(body, {**uses, **{v: 2 for v in news}})
