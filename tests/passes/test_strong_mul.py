"""`passes.strong_mul` (note [strong-mul]): derivative code's guarded products
become one `smul` each, with the same values (0 * inf is 0), on numba too."""
import numpy as np

import pullback as pb
from pullback.backends import interp
from pullback.ir.core import Prim
from pullback.ir.traverse import iter_lets
from pullback.passes.strong_mul import strong_mul


def f(x, y):
    return np.sum(np.sin(x) * y * y)


def ops(prog):
    return [st.exp.op for fn in prog.funcs for st in iter_lets(fn.body) if isinstance(st.exp, Prim)]


def test_fold_and_values():
    x = np.array([0.0, 1.0, np.pi, 2.0])
    y = np.array([np.inf, 0.0, 3.0, -1.0])
    prog = pb.jit(pb.grad(f, argnums=(0, 1)), backend="interp").staged(x, y).prog
    out = strong_mul(prog)
    assert "smul" in ops(out) and ops(out).count("isnan") < ops(prog).count("isnan")
    for a, b in zip(interp.run(prog, x, y), interp.run(out, x, y)):
        np.testing.assert_array_equal(a, b)
    got = pb.jit(pb.grad(f, argnums=(0, 1)), backend="numba")(x, y)
    want = pb.jit(pb.grad(f, argnums=(0, 1)), backend="interp")(x, y)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


# -- masks: note [strong-mul], "Masks" --------------------------------------------------------

def _pot(x):
    return 1.0 / np.sqrt(np.sum(x * x))


def _second(x, v):
    """A Hessian-vector product by reverse over reverse: the inner gradient's strong
    products are differentiated, so their guards mask tangents and cotangents."""
    return pb.grad(lambda z: np.sum(pb.grad(_pot)(z) * v))(x)


def test_masks_fold_and_keep_values():
    x, v = np.array([0.5, -1.5, 2.0]), np.array([1.0, 0.0, -2.0])
    prog = pb.jit(_second, backend="interp").staged(x, v).prog
    out = strong_mul(prog)
    assert "smask" in ops(out) and ops(out).count("isnan") < ops(prog).count("isnan")
    np.testing.assert_array_equal(interp.run(prog, x, v)[0], interp.run(out, x, v)[0])
    for xs in (x, np.array([0.0, 0.0, 3.0]), np.array([np.inf, 1.0, 0.0])):
        with np.errstate(all="ignore"):
            want = pb.jit(_second, backend="interp")(xs, v)
        got = pb.jit(_second, backend="numba")(xs, v)
        np.testing.assert_array_equal(got, want)


def test_mask_is_not_folded_when_wider_than_its_value():
    from pullback.ir.builder import Builder
    from pullback.ir.core import Func, Prog, Var
    from pullback.ir.prims._util import smul
    from pullback.ir.types import TensorType

    b = Builder()
    ys, av = Var("y", TensorType("f64")), Var("a", TensorType("f64", (3,)))
    for v in (ys, av):
        b.supply.reserve(v.name)
    g = smul(b, av, av)                                  # the guarded form, shape (3,)
    guard = [st for st in b.stmts if st.exp.op == "and"][0].pat[0]
    w = b.where(guard, 0.0, ys)                          # masks a scalar: broadcasts it
    prog = Prog((Func("f", (ys, av), b.body((g, w)), (g.type, w.type)),), "f")
    assert "smask" not in ops(strong_mul(prog)) and "smul" in ops(strong_mul(prog))


def test_numba_mask_intrinsic_edges():
    from numba import njit

    from pullback.backends.numba_smul import _pb_smask_s

    f = njit(lambda y, a, d: _pb_smask_s(y, a, d))
    vals = [0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan]
    for y in (3.0, -0.0, np.nan):
        for a in vals:
            for d in vals:
                with np.errstate(all="ignore"):
                    want = 0.0 if np.isnan(a * d) and (a == 0 or d == 0) else y
                got = f(y, a, d)
                assert (np.isnan(got) and np.isnan(want)) or (got == want and np.signbit(got) == np.signbit(want))


def test_numba_mask_array_helper():
    from numba import njit

    from pullback.backends.libcalls.smul import _MASK

    ns = {"np": np, "njit": njit}
    exec(_MASK.format(deco="@njit"), ns)   # noqa: S102  (the helper's text as modules print it)
    y = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    a = np.array([0.0, 1.0, np.inf])
    d = np.array([[np.inf], [0.0]])
    got = ns["_pb_smask"](y, a, d)
    np.testing.assert_array_equal(got, [[0.0, 2.0, 3.0], [4.0, 5.0, 0.0]])
    same = ns["_pb_smask"](y, a + 1.0, d * 0.0 + 1.0)   # no NaN: a fresh copy of y
    np.testing.assert_array_equal(same, y)
    assert not np.shares_memory(same, y)


def test_masks_do_not_add_interpreted_work():
    """Cheap derivatives: a fold into `smask` only replaces statements; the
    interpreter's work on the folded program stays at or below the original's,
    at two sizes, and grows with the size as the original's does."""
    from pullback.backends.interp import OpCount

    works = []
    for n in (4, 64):
        x, v = np.linspace(0.5, 2.0, n), np.linspace(-1.0, 1.0, n)
        prog = pb.jit(_second, backend="interp").staged(x, v).prog
        pair = []
        for p in (prog, strong_mul(prog)):
            ops = OpCount()
            interp.run(p, x, v, ops=ops)
            pair.append(ops.work)
        assert pair[1] <= pair[0], (n, pair)
        works.append(pair)
    assert works[1][1] / works[0][1] <= 1.2 * works[1][0] / works[0][0]
