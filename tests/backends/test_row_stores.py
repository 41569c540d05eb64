"""A map's array rows on numba are copied by loops over their elements, not
assigned to a slice (`NumbaDialect.row_store`, note [compile-time], "Row
stores"): numba's slice assignment compiles its shape-error message
formatting. Values are the interpreter's (to rounding: numba's tanh), sequential and
parallel, for rows of rank 1 and 2, float and integer, constant rows included.
A constant mapped array is made writeable once, before the loop."""
import re

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend as nb  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py

RNG = np.random.default_rng(11)
# a one-index store of a bare name, `ys[i] = y`, untagged (a map's row): the form numba lowers
# through fancy_setslice when y is an array (fused loops store their scalars, `..._k`, alike;
# primitives' scalar stores carry a `# pb:` tag)
SLICE_STORE = re.compile(r"^\s*\w+\[\w+\] = (?!\w+_k\b)\w+\s*$")


def source(f, *args, parallel=False):
    return nb.emit_prog(nb.lower(pb.jit(f, backend="numba").staged(*args).prog), parallel=parallel)


def slice_stores(src, fname):
    """The one-index stores of a bare name in function `fname` and the map helpers
    of a parallel map (the shared product helpers store scalars `out[i] = s`)."""
    funcs = re.split(r"\n(?=@njit)", src)
    body = "\n".join(f for f in funcs if f"def {fname}(" in f or "def _pb_map" in f)
    return [ln for ln in body.splitlines() if SLICE_STORE.match(ln)]


def _chain(r, m):                  # enough work per row that the map stays a loop
    a = r
    for _ in range(3):
        a = np.tanh(m @ a) + r
    return a


def rows(x, m):                    # (5, 7) -> (5, 7)
    return pb.vmap(lambda r: _chain(r, m))(x)


def matrices(x, m):                # (4, 3) -> (4, 3, 3): rank-2 rows
    return pb.vmap(lambda r: np.outer(_chain(r, m), r))(x)


def constant_rows(x, m):           # a row that is a constant array (bound once per iteration)
    return pb.vmap(lambda r: (np.arange(3.0), _chain(r, m)))(x)


def int_rows(k, m):                # integer rows
    def row(r):
        a = r
        for _ in range(3):
            a = m @ a + r
        return a
    return pb.vmap(row)(k)


def _args(n, d, integer=False):
    if integer:
        return RNG.integers(-3, 3, (n, d)), RNG.integers(-2, 2, (d, d))
    return RNG.standard_normal((n, d)), 0.5 * RNG.standard_normal((d, d))


CASES = [(rows, _args(5, 7)), (matrices, _args(4, 3)), (constant_rows, _args(6, 3)),
         (int_rows, _args(5, 4, integer=True))]


@pytest.mark.parametrize("f, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_rows_are_element_loops(f, args):
    src = source(f, *args)
    assert not slice_stores(src, f.__name__), src
    got = pb.jit(f, backend="numba", parallel=False)(*args)
    want = pb.jit(f, backend="interp")(*args)
    for g, w in zip(*(o if isinstance(o, tuple) else (o,) for o in (got, want))):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("f, args", CASES[:2], ids=[c[0].__name__ for c in CASES[:2]])
def test_parallel_maps_store_rows_by_loops(f, args):
    big = (np.tile(args[0], (400, 1)), args[1])   # wide enough to run in parallel
    src = source(f, *big, parallel=True)
    assert "_pb_parallel_for(" in src and not slice_stores(src, f.__name__), src
    got = pb.jit(f, backend="numba", parallel=True)(*big)
    np.testing.assert_allclose(got, pb.jit(f, backend="interp")(*big), rtol=1e-13, atol=1e-13)


def test_no_shape_error_formatting_is_compiled(tmp_path):
    """The point of the loops: a fresh process compiling a map with array rows does
    not make numba compile `raise_with_shape_context` (and its string formatting)."""
    import inspect

    from _compile_events import compiled_names, formatting

    src = "import numpy as np\nimport pullback as pb\n\n\n" + inspect.getsource(_chain) + "\n\n" + inspect.getsource(rows)
    names = compiled_names(tmp_path, src, "pb.jit(rows, backend='numba', parallel=False)"
                                          "(np.ones((5, 7)), 0.5 * np.eye(7))")
    assert any(n == "rows" for n in names)          # the listener saw the compile
    assert not formatting(names), names


def over_identity(m):              # a map over a constant array (jacfwd's basis directions)
    return pb.vmap(lambda e: _chain(e, m))(np.eye(5))


def test_a_constant_mapped_array_is_evaluated_once():
    """A mapped array whose text is an expression (a constant's writeable copy,
    `_c0.copy()`) is bound once before the loop, not copied in every iteration."""
    m = 0.5 * RNG.standard_normal((5, 5))
    src = source(over_identity, m)
    loop = src.index("for i in range(5):")
    assert ".copy()" in src[:loop] and ".copy()[" not in src, src
    np.testing.assert_allclose(pb.jit(over_identity, backend="numba", parallel=False)(m),
                               pb.jit(over_identity, backend="interp")(m), rtol=1e-13, atol=1e-13)


def partial_sums(xs, w):           # a parallel map whose vjp accumulates w's adjoint: an array
    return np.sum(pb.map(lambda x: np.sum(np.tanh(x * w)), xs))


def test_parallel_partial_sums_are_stored_by_loops(tmp_path):
    """A chunk's partial sums of an array accumulator go back into their row of the
    partials by loops too, so the parallel vjp compiles no shape-error formatting."""
    from _compile_events import compiled_names, formatting

    xs, w = RNG.standard_normal((400, 6)), RNG.standard_normal(6)
    g = pb.grad(partial_sums, argnums=(0, 1), backend="numba", parallel=True)
    got = g(xs, w)
    src = g._jit.staged(xs, w).runner.source
    assert "(parallel), accumulating" in src and not slice_stores(src, "partial_sums"), src
    for a, b in zip(got, pb.grad(partial_sums, argnums=(0, 1), backend="interp")(xs, w)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    import inspect

    names = compiled_names(tmp_path, "import numpy as np\nimport pullback as pb\n\n\n" + inspect.getsource(partial_sums),
                           "pb.grad(partial_sums, argnums=(0, 1), backend='numba', parallel=True)"
                           "(np.ones((400, 6)), np.ones(6))")
    assert any(n.startswith("_pb_map") for n in names)   # the listener saw the chunks compile
    assert not formatting(names), names
