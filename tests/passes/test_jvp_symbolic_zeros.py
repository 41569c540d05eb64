"""Forward mode never computes with zero tangents across calls (issue 13): a
helper called with an argument that is not differentiated gets a jvp without
that argument's tangent, instead of a materialised `zeros` multiplied through."""
import numpy as np
import pytest

import pullback as pb
from pullback.ir.core import Apply, Prim
from pullback.ir.traverse import iter_lets


def _helper(x, table):
    return np.sin(x) * table


def _f(x, table):
    return _helper(x, table) * 2.0 + _helper(x * x, table)


X, TABLE = np.linspace(0.1, 0.9, 6), np.linspace(1.0, 2.0, 6)


def _zero_args(prog):
    """Arguments of calls of derived jvp functions that are made by `full(0)`."""
    zeros = {st.pat[0] for f in prog.funcs for st in iter_lets(f.body)
             if isinstance(st.exp, Prim) and st.exp.op == "full"
             and float(getattr(st.exp.args[0], "value", 1.0)) == 0.0}
    return [a for f in prog.funcs for st in iter_lets(f.body) if isinstance(st.exp, Apply)
            and "jvp" in st.exp.func for a in st.exp.args if a in zeros]


@pytest.mark.parametrize("argnums", [0, 1])
def test_jacfwd_passes_no_zero_tangents(argnums):
    st = pb.jacfwd(_f, argnums=argnums)._jit.staged(X, TABLE)
    assert _zero_args(st.prog) == []
    helpers = [f for f in st.prog.funcs if f.name.startswith("_helper") and "jvp" in f.name]
    assert helpers and all(len(f.params) == 3 for f in helpers)   # x, table, one tangent


@pytest.mark.parametrize("backend", ["interp", "pysource"])
def test_values_unchanged(backend):
    J0 = pb.jacfwd(_f, backend=backend)(X, TABLE)
    J1 = pb.jacfwd(_f, argnums=1, backend=backend)(X, TABLE)
    np.testing.assert_allclose(J0, np.diag(np.cos(X) * TABLE * 2 + np.cos(X * X) * 2 * X * TABLE), rtol=1e-12)
    np.testing.assert_allclose(J1, np.diag(np.sin(X) * 2 + np.sin(X * X)), rtol=1e-12)
    t = pb.jvp(lambda x: _f(x, TABLE), (X,), (np.ones(6),), backend=backend)[1]
    np.testing.assert_allclose(t, np.diag(J0), rtol=1e-12)


def test_fewer_operations():
    """The work of the Jacobian drops: no multiplications by a zero table tangent."""
    from pullback.backends import interp

    st = pb.jacfwd(_f)._jit.staged(X, TABLE)
    ops = interp.OpCount()
    interp.run(st.prog, X, TABLE, ops=ops)
    n = X.size
    # per column: two helper jvps (sin, cos, 2 products + guards each) and f's own; a zero table
    # tangent would add a product, its guards and a sum per helper call
    assert ops.work <= 60 * n * n, ops.work
