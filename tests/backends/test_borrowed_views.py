"""Borrowed views (`pullback.backends.numba_borrow`, note [borrowed-views]): static slices
of a function's parameters that stay in their body print without a reference of their
own; a slice that is returned, or of a fresh array, keeps numba's; results, reference
counts and the arrays handed back are unchanged. Also `numba_scratch`'s loop-carried
sharing (a small array carried through an inner loop and saved is scratch)."""
import gc
import re

import numpy as np
import pytest

import pullback as pb
from pullback.backends import numba_backend as nb

pytest.importorskip("numba")

BORROWED = re.compile(r"_pb_view_[ac]b\(")


def sliced_sum(W, x):                 # slices of a parameter read in a loop: borrowed
    s = 0.0
    for t in range(x.shape[0]):
        a = W[0:3]
        b = W[3:6]
        s = s + np.sum(np.sin(a * x[t]) + b)
    return s


def row_sum(M, x):                   # rows of a parameter read in a loop, some from the end: borrowed
    s = 0.0
    for t in range(x.shape[0]):
        s = s + np.sum(np.sin(M[t] * x[t]) + M[-1] * M[t - M.shape[0]])
    return s


def returns_slice(W):                 # the slice is the result: numba's reference
    return W[1:4]


def fresh_base(W, x):                 # a slice of a fresh array: numba's reference
    V = W * 2.0
    s = 0.0
    for t in range(x.shape[0]):
        s = s + np.sum(V[0:3] * x[t])
    return s


def _src(f, *args):
    return nb.emit_prog(nb.lower(pb.jit(f, backend="numba").staged(*args).prog), parallel=False)


W, X = np.linspace(-1.0, 1.0, 6), np.linspace(0.5, 2.0, 5)


def test_parameter_slices_in_a_loop_are_borrowed_and_give_the_same_values():
    assert BORROWED.search(_src(sliced_sum, W, X))
    assert pb.jit(sliced_sum, backend="numba")(W, X) == pytest.approx(sliced_sum(W, X), rel=1e-14)
    g = pb.grad(sliced_sum, argnums=(0, 1), backend="numba")(W, X)
    want = pb.grad(sliced_sum, argnums=(0, 1), backend="interp")(W, X)
    for a, b in zip(g, want):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    assert BORROWED.search(_src(pb.grad(sliced_sum, argnums=(0, 1)), W, X))   # the gradient's slices too


def test_parameter_rows_in_a_loop_are_borrowed_and_give_the_same_values():
    M = np.linspace(-1.0, 1.0, 30).reshape(6, 5)
    src = _src(row_sum, M, X)
    assert "_pb_row_b(" in src
    assert pb.jit(row_sum, backend="numba")(M, X) == pytest.approx(row_sum(M, X), rel=1e-14)
    g = pb.grad(row_sum, argnums=(0, 1), backend="numba")(M, X)
    want = pb.grad(row_sum, argnums=(0, 1), backend="interp")(M, X)
    for a, b in zip(g, want):
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_a_returned_slice_keeps_its_reference():
    assert not BORROWED.search(_src(returns_slice, W))
    base = np.arange(6.0)
    out = pb.jit(returns_slice, backend="numba")(base)
    del base
    gc.collect()
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])   # still the base's memory, kept alive


def test_a_slice_of_a_fresh_array_keeps_its_reference():
    assert not BORROWED.search(_src(fresh_base, W, X))
    assert pb.jit(fresh_base, backend="numba")(W, X) == pytest.approx(fresh_base(W, X), rel=1e-14)


def test_reference_counts_balance():
    from numba.core.runtime import _nrt_python, rtsys

    f, g = pb.jit(sliced_sum, backend="numba"), pb.grad(sliced_sum, backend="numba")
    f(W, X), g(W, X)   # compiles
    was = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats()
        for _ in range(3):
            f(W, X), g(W, X)
        after = rtsys.get_allocation_stats()
    finally:
        if not was:
            _nrt_python.memsys_disable_stats()
    assert after.alloc - before.alloc == after.free - before.free > 0
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free


def test_a_small_array_carried_through_an_inner_loop_and_saved_is_scratch():
    # lstm's gradient: per step, rows filled in the layer loop and pushed to the tape
    from pullback.gradbench.modules import lstm

    rng = np.random.default_rng(0)
    args = (rng.normal(size=(4, 56)), rng.normal(size=(3, 14)), rng.normal(size=(4, 14)), rng.normal(size=(6, 14)))
    src = _src(pb.grad(lstm.lstm_objective, argnums=(0, 1)), *args)
    # the saved rows are scratch arrays, written by name (no alias: `numba_scratch.bind`), not
    # arrays allocated per step
    assert re.search(r"\bscratch_\d+\[i_\d+, i0\w*\] = ", src) and not re.search(r"\brows(_\d+)? = (_pb_empty|_pb_full|np\.)", src), src
    # every row is set in the layer loop before it is read: the scratch array is not zeroed first
    # (numba_fill.unobserved_fills)
    assert not re.search(r"\bscratch\w*\[j0\w*, j1\w*\] = np\.float64\(0\.0\)", src), src
    # no scratch array is read through an alias (a reference taken per step)
    assert not re.search(r"(?m)^\s+\w+ = scratch\w*(  # pb:\w+)?$", src), src
    got = pb.grad(lstm.lstm_objective, argnums=(0, 1), backend="numba")(*args)
    want = pb.grad(lstm.lstm_objective, argnums=(0, 1), backend="interp")(*args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12)


# --- store buffers (note [borrowed-views], "Store buffers") ---------------------------------

LSTM_ARGS = tuple(np.random.default_rng(1).normal(size=s) for s in ((4, 56), (3, 14), (4, 14), (6, 14)))
OWNED_STORE = re.compile(r"= \((_pb_empty|np\.empty)\(\(\d+, [\d, ]+\), (dtype=)?np\.float64\), 0\)  # pb:store_new")
# a store of known size views its owner with a static shape, one of unknown size the whole owner
BORROWED_STORE = re.compile(r"= \((_pb_view_cb\(scratch\w*, [^)]*\), [^)]*\), [^)]*\)\)|_pb_borrow\(scratch\w*\)), 0\)"
                            r"  # pb:store_new")


def test_local_store_buffers_are_borrowed_and_give_the_same_bits(monkeypatch):
    from pullback.backends import numba_borrow
    from pullback.gradbench.modules import lstm

    grad = pb.grad(lstm.lstm_objective, argnums=(0, 1))
    src = _src(grad, *LSTM_ARGS)
    assert len(BORROWED_STORE.findall(src)) >= 7 and not OWNED_STORE.search(src), src
    assert "_pb_borrow(scratch" not in src   # stores of known size: static views (LLVM knows the extents)
    assert src.count("_pb_keep(scratch") == len(BORROWED_STORE.findall(src))
    prog = pb.jit(grad).staged(*LSTM_ARGS).prog
    got = nb.compile_prog(prog, parallel=False)(*LSTM_ARGS)
    monkeypatch.setattr(numba_borrow, "local_stores", lambda *a: set())
    plain = nb.compile_prog(prog, parallel=False)
    assert not BORROWED_STORE.search(plain.source) and OWNED_STORE.search(plain.source)
    for a, b in zip(got, plain(*LSTM_ARGS)):
        assert a.tobytes() == b.tobytes()


def rchain(x, d):
    if d == 0:
        return x
    return np.sin(rchain(x, d - 1)) * 1.01


def rchain_loss(x, d):
    return np.sum(rchain(x, d) ** 2)


def test_a_tape_handed_to_a_call_keeps_its_own_buffer():
    """The recursion's tape goes through the calls of `rchain_fwd`: its buffer is owned."""
    x, d = np.linspace(0.1, 0.9, 4), np.int64(5)
    src = _src(pb.grad(rchain_loss), x, d)
    assert OWNED_STORE.search(src) and not BORROWED_STORE.search(src) and "_pb_keep" not in src
    np.testing.assert_allclose(pb.grad(rchain_loss, backend="numba")(x, d),
                               pb.grad(rchain_loss, backend="interp")(x, d), rtol=1e-14)


KEEP_SCRIPT = r'''
import numpy as np, pullback as pb
from pullback.backends import interp, numba_backend as nb

HELD = []


def hog(i):   # memory the size of the tape's buffer, filled with NaN, between the pushes and the pops
    for n in range(4090, 4110):
        HELD.append(np.full(n, np.nan))
    return np.float64(0.0)


def f(x):
    y = x
    for i in range(64):
        z = pb.pure_callback(hog, pb.ShapeDtypeStruct((), np.float64), np.float64(i))
        y = np.sin(y) * 0.5 + 0.1 + z
    return np.sum(y * y)


x = np.linspace(0.1, 0.9, 64)
prog = pb.jit(pb.grad(f)).staged(x).prog
fn = nb.compile_prog(prog, parallel=False)
assert "_pb_view_cb(scratch" in fn.source and "_pb_keep(scratch" in fn.source, fn.source
for _ in range(3):
    got = fn(x)
    got = got[0] if isinstance(got, (list, tuple)) else got
    HELD.clear()
    want = interp.run(prog, x)[0]
    HELD.clear()
    assert np.array_equal(got, want), (got, want)
print("same")
'''


def test_a_borrowed_store_buffer_lives_until_the_return(tmp_path):
    """Released early (without `_pb_keep`), the buffer's memory goes to the callback's
    arrays: the popped values are NaN, or the heap is corrupted (the process aborts)."""
    import os
    import subprocess
    import sys

    script = tmp_path / "keep_script.py"   # (pullback stages functions from their source file)
    script.write_text(KEEP_SCRIPT)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"), PULLBACK_TIERED="0")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "same", r.stdout + r.stderr


STORE_HEAD = """{callee}entry def f(x: f64[2,40]) -> ({rets}) {{
  let s: store<f64[2,40]> = store_new() {{cap=2, elem=f64[2,40]}}
  let s2: store<f64[2,40]> = store_push(s, x)
{rest}
}}
"""
CALLEE = """def g(t: store<f64[2,40]>) -> (f64[2,40]) {
  let (t2: store<f64[2,40]>, v: f64[2,40]) = store_pop(t)
  let w: f64[2,40] = mul(v, 2.0:f64)
  return (w)
}

"""
STORES = {   # name -> (callee, results, the rest of f, borrowed)
    "popped and read": ("", "f64[2,40]", """  let (s3: store<f64[2,40]>, a: f64[2,40]) = store_pop(s2)
  let r: f64[2,40] = add(a, a)
  return (r)""", True),
    # the popped value is a view of the buffer: returned, the buffer must be owned
    "popped and returned": ("", "f64[2,40]", """  let (s3: store<f64[2,40]>, a: f64[2,40]) = store_pop(s2)
  return (a)""", False),
    "popped row returned": ("", "f64[40]", """  let (s3: store<f64[2,40]>, a: f64[2,40]) = store_pop(s2)
  let row: f64[40] = index(a, 1:i64) {spec=(('d',),)}
  return (row)""", False),
    # the store after the push goes to a small callee, which lowering inlines: no call is
    # left (a tape handed to a call that stays: `test_a_tape_handed_to_a_call_keeps_its_own_buffer`)
    "pushed store to an inlined call": (CALLEE, "f64[2,40]", """  let r: f64[2,40] = call g(s2)
  return (r)""", True),
    # popped in a loop whose body also branches on another carried value (the shape of a
    # while loop's reverse sweep): only the store's own values are followed into the loop
    "popped in a loop with a branch": ("", "f64", """  let (t: store<f64[2,40]>, acc: f64) = loop (u: store<f64[2,40]> = s2, a: f64 = 0.0:f64) for i: i64 < 1:i64 {
    let (u2: store<f64[2,40]>, v: f64[2,40]) = store_pop(u)
    let e: f64 = index(v, 1:i64, 3:i64) {spec=(('d',), ('d',))}
    let c: bool = lt(a, e)
    let a2: f64 = if c {
      let a3: f64 = add(a, e)
      yield (a3)
    } else {
      let a4: f64 = mul(a, 2.0:f64)
      yield (a4)
    }
    yield (u2, a2)
  }
  return (acc)""", True),
    # a row of the value popped in a loop goes to Python: Python could keep it
    "popped in a loop and handed to a callback": ("", "f64", """  let (t: store<f64[2,40]>, acc: f64) = loop (u: store<f64[2,40]> = s2, a: f64 = 0.0:f64) for i: i64 < 1:i64 {
    let (u2: store<f64[2,40]>, v: f64[2,40]) = store_pop(u)
    let row: f64[40] = index(v, 1:i64) {spec=(('d',),)}
    let cb: f64 = callback(row) {key=KEY, outs=(f64,)}
    let a2: f64 = add(a, cb)
    yield (u2, a2)
  }
  return (acc)""", False),
}


def _kept_first(v):
    KEPT.append(v)   # (a borrowed view kept here would point into freed memory)
    return np.float64(v[3])


KEPT: list = []


def _callback_key() -> int:
    """The key of `_kept_first` called with one array (registered by staging a call)."""
    prog = pb.jit(lambda v: pb.pure_callback(_kept_first, pb.ShapeDtypeStruct((), np.float64), v)).staged(
        np.zeros(40)).prog
    return next(st.exp.p["key"] for st in prog.funcs[0].body.stmts if getattr(st.exp, "op", None) == "callback")


@pytest.mark.parametrize("name", list(STORES))
def test_only_stores_that_stay_in_their_body_are_borrowed(name):
    import gc

    from pullback.backends import interp
    from pullback.ir.parser import parse_prog

    callee, rets, rest, borrowed = STORES[name]
    prog = parse_prog(STORE_HEAD.format(callee=callee, rets=rets, rest=rest.replace("KEY", str(_callback_key()))))
    fn = nb.compile_prog(prog, parallel=False)
    assert bool(BORROWED_STORE.search(fn.source)) == borrowed, fn.source
    x = np.arange(80.0).reshape(2, 40) + 0.5
    got = fn(x)
    got = got[0] if isinstance(got, (list, tuple)) else got
    gc.collect()
    junk = [np.full(80, np.nan) for _ in range(100)]   # reuse of freed memory would show here
    np.testing.assert_array_equal(got, interp.run(prog, x)[0])
    del junk


# --- growing store buffers (note [borrowed-views], "Store buffers") ---------------------------

GROWN_OWNER = re.compile(r"\n\s*scratch\w* = _st_grow_\w+\(")


def _drift(w, n):   # a while loop of n steps: its tape outgrows the store's first buffer
    x = w
    i = 0
    while i < n:
        x = x + 0.001 * np.sin(x) + pb.pure_callback(_fill_freed, pb.ShapeDtypeStruct((), np.float64), i)
        i += 1
    return np.sum(x * x)


def _fill_freed(i):   # memory freed by a growth would be filled with NaN here
    FILLER.extend(np.full(n, np.nan) for n in range(30, 40))
    return np.float64(0.0)


FILLER: list = []


def _drifts(w, n):   # the same gradient in a loop: its store is made again each iteration
    total = 0.0
    for k in range(3):
        total = total + np.sum(pb.grad(_drift)(w * (1.0 + k), n))
    return total


@pytest.mark.parametrize("f", [pb.grad(_drift), _drifts], ids=["function body", "loop body"])
def test_a_local_store_grows_into_its_owner(f):
    """Past its first buffer a local store grows into its owner array and keeps a borrowed
    view of it, where a grown buffer used to be an array of its own (references again)."""
    from pullback.backends import interp

    args = (np.array([0.3, 0.7]), np.int64(3000))
    prog = pb.jit(f).staged(*args).prog
    fn = nb.compile_prog(prog, parallel=False)
    assert BORROWED_STORE.search(fn.source) and GROWN_OWNER.search(fn.source), fn.source
    assert "= (_pb_borrow(scratch" in fn.source   # unknown size: the whole owner, as it has grown
    got = fn(*args)
    FILLER.clear()
    want = interp.run(prog, *args)[0]
    FILLER.clear()
    got = got[0] if isinstance(got, (list, tuple)) else got
    assert np.array_equal(got, want)


SELF_PUSH = """entry def f(x: f64[2,40]) -> (f64[2,40]) {
  let s: store<f64[2,40]> = store_new() {elem=f64[2,40]}
  let s2: store<f64[2,40]> = store_push(s, x)
  let t: store<f64[2,40]> = loop (u: store<f64[2,40]> = s2) for i: i64 < 300:i64 {
    let (u2: store<f64[2,40]>, a: f64[2,40]) = store_pop(u)
    let b: f64[2,40] = mul(a, 1.01:f64)
    let u3: store<f64[2,40]> = store_push(u2, a)
    let u4: store<f64[2,40]> = store_push(u3, b)
    yield (u4)
  }
  let (t2: store<f64[2,40]>, r: f64[2,40]) = store_pop(t)
  let r2: f64[2,40] = add(r, r)
  return (r2)
}
"""


def test_a_store_that_saves_its_own_slot_grows_a_buffer_of_its_own():
    """A push of a popped slot copies from the buffer: a growth there keeps the old buffer
    alive (`numba_borrow.store_versions` refuses the store)."""
    from pullback.backends import interp
    from pullback.ir.parser import parse_prog

    prog = parse_prog(SELF_PUSH)
    fn = nb.compile_prog(prog, parallel=False)
    assert BORROWED_STORE.search(fn.source) and not GROWN_OWNER.search(fn.source), fn.source
    assert "st_buf = _st_grow_float64(" in fn.source
    x = np.arange(80.0).reshape(2, 40) + 0.5
    got = fn(x)
    got = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_array_equal(got, interp.run(prog, x)[0])
