"""A sum over some but not all axes that no elementwise statement feeds is a
fused loop of its own on numba (`numba_fusion._partial_sum`, note
[numba-fusion], "Lone partial sums"), not numba's `np.sum(x, axis=k)`, whose
axis check compiles numba's string formatting in every process. Values are the
interpreter's, for floats and int64s, leading, middle, trailing and several
axes, inside loops, in gradients, and at a second shape (shape-generic code)."""
import inspect
import re

import numpy as np
import pytest

pytest.importorskip("numba")

import pullback as pb  # noqa: E402
from pullback.backends import numba_backend as nb  # noqa: E402
from pullback.backends import numba_fusion  # noqa: E402

pytestmark = pytest.mark.usefixtures("private_cache")   # conftest.py

RNG = np.random.default_rng(5)
AXIS_SUM = re.compile(r"^[^#\n]*np\.sum\([^#\n]*axis", re.MULTILINE)   # code, not provenance comments


def source(f, *args):
    return nb.emit_prog(nb.lower(pb.jit(f, backend="numba").staged(*args).prog), parallel=False)


def lead(x):
    return np.sum(x, axis=0)


def trail(x):
    return np.sum(x, axis=-1)


def middle(x):
    return np.sum(x, axis=1)


def two_axes(x):
    return np.sum(x, axis=(0, 2))


def keepdims(x):
    return x - np.sum(x, axis=0, keepdims=True)


def in_loop(x, n):
    acc = np.zeros(x.shape[1])
    for _ in range(n):
        acc = acc + np.sum(x, axis=0)
        x = x[::-1] * 0.5
    return acc


def after_matmul(x, w):            # a sum of a product: nothing elementwise before it
    return np.sum(np.tanh(np.sum(x @ w, axis=0)))


CASES = [(lead, (RNG.standard_normal((7, 5)),)), (trail, (RNG.standard_normal((7, 5)),)),
         (middle, (RNG.standard_normal((3, 4, 5)),)), (two_axes, (RNG.standard_normal((3, 4, 5)),)),
         (keepdims, (RNG.standard_normal((6, 3)),)), (lead, (RNG.integers(-9, 9, (7, 5)),)),
         (middle, (RNG.integers(-9, 9, (3, 4, 5)),)), (in_loop, (RNG.standard_normal((4, 3)), 3)),
         (lead, (RNG.standard_normal((0, 5)),)), (trail, (RNG.standard_normal((0, 5)),))]
IDS = [f"{f.__name__}-{a[0].dtype}-{'x'.join(map(str, a[0].shape))}" for f, a in CASES]


@pytest.mark.parametrize("f, args", CASES, ids=IDS)
def test_lone_partial_sums_are_loops(f, args):
    src = source(f, *args)
    assert not AXIS_SUM.search(src), src
    got = pb.jit(f, backend="numba")(*args)
    want = pb.jit(f, backend="interp")(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def test_numba_sum_without_the_group():
    """The check above can fail: without the lone groups the module prints numba's form."""
    x = RNG.standard_normal((7, 5))
    src = source(lead, x)
    orig = numba_fusion._partial_sum
    try:
        numba_fusion._partial_sum = lambda st: False
        assert AXIS_SUM.search(source(lead, x)) and not AXIS_SUM.search(src)
    finally:
        numba_fusion._partial_sum = orig


def test_gradient_and_a_second_shape():
    x, w = RNG.standard_normal((6, 4)), RNG.standard_normal((4, 3))
    g = pb.grad(after_matmul, argnums=(0, 1), backend="numba")
    ref = pb.grad(after_matmul, argnums=(0, 1), backend="interp")
    for a in ((x, w), (RNG.standard_normal((9, 4)), w)):   # the second shape: shape-generic reuse
        for got, want in zip(g(*a), ref(*a)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    assert not AXIS_SUM.search(source(after_matmul, x, w))


def test_no_axis_check_is_compiled(tmp_path):
    """The point: a fresh process compiling a lone axis sum compiles no axis check
    and no string formatting (with numba's `np.sum(x, axis=0)` it compiled both)."""
    from _compile_events import compiled_names, formatting

    names = compiled_names(tmp_path, "import numpy as np\n\n\n" + inspect.getsource(lead),
                           "pb.jit(lead, backend='numba')(np.ones((5, 7)))")
    assert "lead" in names                     # the listener saw the compile
    assert not formatting(names), names
