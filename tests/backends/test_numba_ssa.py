"""Variables defined once held as LLVM values (`backends/numba_ssa.py`, note [compile-time],
"Values, not slots"): while pullback's modules compile, a variable assigned once and read in
later blocks that its definition dominates is no stack slot; the function's values are
numba's own; variables rebound in a loop, read after a loop that may not run, deleted twice
(NRT's allocation counts balance), deleted past a branch that skips their definition (a range iterator in an `if`: without the dominance test
LLVM's verifier rejects the function), or in a function with a ``try`` block keep their
slots; outside pullback's compiles numba's rule is back."""
import numpy as np
import pytest

numba = pytest.importorskip("numba")

from numba.core.lowering import Lower  # noqa: E402

from pullback.backends import numba_ssa  # noqa: E402
from pullback.backends.numba_opt import numba_opt  # noqa: E402

_SRC = """
def before_loop(x, k):
    c = np.cos(k) * 2.0          # defined once, read in the loop's blocks
    d = x.shape[0] - 1
    t = np.empty_like(x)
    for i in range(x.shape[0]):
        if x[i] > c:
            t[i] = x[i] * c + d
        else:
            t[i] = -c
    return t

def rebound(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i]             # rebound: numba's SSA gives it a phi (two definitions)
    return s

def after_loop(x):
    y = 0.0
    for i in range(x.shape[0]):
        y = x[i] * 2.0           # the loop may not run: its block does not dominate the return
    return y

def cond_def(x, k):
    if k > 0:
        y = x * 2.0              # assigned once, in a block that does not dominate its use
    if k > 1:
        return y
    return 0.0

@numba.njit(inline="always")
def check(idx, n):               # inlined, as pullback's few-site index check
    for i in idx.flat:
        if i < -n or i >= n:
            raise IndexError(i)

def inlined(x, idx):
    check(idx, x.shape[0])
    return np.sum(x[idx])

def while_and(src, dest):        # a while loop with a short-circuit test (numba's _broadcast_onto)
    i = 0
    j = dest.shape[0] - src.shape[0]
    while i < src.shape[0]:
        a = src[i]
        b = dest[j]
        if b != 1:
            if a != b and a != 1:
                return -(j + 1)
        elif a != 1:
            dest[j] = a
        i += 1
        j += 1
    return j

def loop_in_branch(x, k):       # numba deletes the range iterator at the join, past the branch
    s = 0.0
    if k > 0:
        for i in range(x.shape[0]):
            s += x[i] * k
    return s * 2.0

def unpack_rebind(n):            # a growing store, as pullback prints it: numba deletes `buf`
    saved = (np.empty(4), 0)     # in the branch and again at the join after it
    total = 0
    k = 0
    while k < n:
        buf, m = saved
        if m + 1 > buf.shape[0]:
            buf = np.empty(2 * buf.shape[0])
            saved = (buf, m)
        saved = (saved[0], saved[1] + 1)
        total += saved[0].shape[0]
        k += 1
    return total

def with_try(x, k):
    c = k * 2.0
    try:
        for i in range(x.shape[0]):
            x[i] = x[i] * c
    except Exception:  # noqa: BLE001
        return -1.0
    return c
"""


def _compile(name):
    """A fresh njit of `name` from _SRC, compiled inside pullback's context, and the
    variables the rule added while it compiled."""
    ns = {"np": np, "numba": numba}
    exec(compile(_SRC, "<numba_ssa test>", "exec"), ns)   # our own text
    f = numba.njit(cache=False)(ns[name])
    before = dict(numba_ssa.STATS)
    with numba_opt(3):
        f.compile(_SIGS[name])
    return f, ns[name], numba_ssa.STATS["variables"] - before["variables"]


_ARR = numba.types.float64[::1]
_SIGS = {"before_loop": (_ARR, numba.types.float64), "rebound": (_ARR,), "after_loop": (_ARR,),
         "with_try": (_ARR, numba.types.float64), "cond_def": (numba.types.float64, numba.types.float64),
         "inlined": (_ARR, numba.types.int64[::1]),
         "while_and": (numba.types.int64[::1], numba.types.int64[::1]),
         "loop_in_branch": (_ARR, numba.types.float64),
         "unpack_rebind": (numba.types.int64,)}


def test_values_read_in_later_blocks_are_not_slots():
    f, py, added = _compile("before_loop")
    assert added >= 2                     # c and d at least
    x = np.linspace(-1.0, 3.0, 9)
    np.testing.assert_array_equal(f(x, 0.4), py(x, 0.4))
    (ir,) = f.inspect_llvm().values()
    assert ir                             # verified by LLVM: every value dominates its uses


def test_rebound_and_possibly_unset_variables_keep_their_slots():
    for name in ("rebound", "after_loop"):
        f, py, _ = _compile(name)
        x = np.linspace(-1.0, 3.0, 9)
        assert f(x) == py(x)
        assert f(x[:0]) == py(x[:0])
    f, py, _ = _compile("cond_def")
    assert f(1.5, 2.0) == py(1.5, 2.0) == 3.0 and f(1.5, 0.0) == 0.0


def test_a_function_with_a_try_block_is_left_alone():
    f, py, added = _compile("with_try")
    assert added == 0
    x = np.linspace(-1.0, 3.0, 9)
    y = x.copy()
    assert f(x, 1.5) == py(y, 1.5) and np.array_equal(x, y)


def test_numbas_rule_outside_pullbacks_compiles():
    assert getattr(Lower._find_singly_assigned_variable, "__wrapped__", None) is None
    with numba_opt(3):
        assert Lower._find_singly_assigned_variable.__wrapped__ is not None
    assert getattr(Lower._find_singly_assigned_variable, "__wrapped__", None) is None


def test_loops_in_branches_and_inlined_helpers():
    """Variables defined once that a block their definition does not dominate reads or
    deletes keep their slots (else LLVM's verifier rejects the function)."""
    f, py, _ = _compile("inlined")
    x, idx = np.linspace(-1.0, 1.0, 6), np.array([0, 5, -1, 2])
    assert f(x, idx) == py(x, idx)
    with pytest.raises(IndexError):
        f(x, np.array([7]))
    f, py, _ = _compile("loop_in_branch")
    assert f(x, 1.5) == py(x, 1.5) and f(x, -1.0) == 0.0
    f, py, _ = _compile("while_and")
    for src, dest in (([3, 1], [1, 1, 1]), ([2, 3], [1, 2, 4]), ([5], [1, 5])):
        a, b = np.array(dest), np.array(dest)
        assert f(np.array(src), a) == py(np.array(src), b) and np.array_equal(a, b)


def test_a_variable_deleted_twice_keeps_its_slot(private_cache):
    """numba deletes some variables in a branch and again at the join after it (a slot is
    null by then; a value would be freed twice: the store's buffer `st_buf` of a growing
    store, unpacked and rebound in a branch). NRT's allocation counts balance."""
    from numba.core.runtime import _nrt_python, rtsys
    from test_compile_forms import grow_rows   # its gradient saves a row per iteration into a growing store

    import pullback as pb

    x = np.linspace(-1.0, 1.0, 64)
    g = pb.jit(pb.grad(grow_rows), backend="numba")
    want = pb.grad(grow_rows, backend="interp")(x, 300)
    was = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        np.testing.assert_allclose(g(x, 300), want, rtol=1e-12)   # compiles
        before = rtsys.get_allocation_stats()
        for n in (300, 5, 130):
            g(x, n)
        after = rtsys.get_allocation_stats()
    finally:
        if not was:
            _nrt_python.memsys_disable_stats()
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free > 0
