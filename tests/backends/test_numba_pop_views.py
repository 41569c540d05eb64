"""A pop from a numba buffer store gives a view of its slot; a pop whose value
may still be read after a later push to the same store copies the slot instead
(`numba_stores.pop_copies`, note [numba-stores] "Popped views").

The first programs read a popped value after a push into its slot: with the
view they compute with the pushed value instead (the silently wrong gradients
of whole-program checkpointing on numba, whose step adjoint pops an adjoint and
then pushes another). The last ones keep the view: no push follows while the
value is live."""
from __future__ import annotations

import numpy as np
import pytest

from pullback.backends import interp
from pullback.backends import numba_backend as nb
from pullback.ir.parser import parse_prog

HEAD = """entry def f(x: f64[2,3], y: f64[2,3], c: bool) -> (f64[2,3]) {
  let s: store<f64[2,3]> = store_new() {elem=f64[2,3]}
  let s2: store<f64[2,3]> = store_push(s, x)
  let (s3: store<f64[2,3]>, a: f64[2,3]) = store_pop(s2)
"""
TAIL = """  let (s5: store<f64[2,3]>, d: f64[2,3]) = store_pop(s4)
  let e: f64[2,3] = mul(r, d)
  return (e)
}
"""

COPIED = {
    # read after a push into its slot
    "push_then_read": """  let s4: store<f64[2,3]> = store_push(s3, y)
  let r: f64[2,3] = add(a, a)
""",
    # a view of the popped value, read after the push
    "view_then_read": """  let row: f64[3] = index(a, 0:i64) {spec=(('d',),)}
  let s4: store<f64[2,3]> = store_push(s3, y)
  let r: f64[2,3] = add(a, row)
""",
    # a branch may push
    "branch_pushes": """  let s4: store<f64[2,3]> = if c {
    let t: store<f64[2,3]> = store_push(s3, y)
    yield (t)
  } else {
    let t2: store<f64[2,3]> = store_push(s3, x)
    yield (t2)
  }
  let r: f64[2,3] = add(a, a)
""",
    # the value and the store leave a branch together; the push follows it
    "leaves_with_store": """  let (s6: store<f64[2,3]>, b: f64[2,3]) = if c {
    let t0: store<f64[2,3]> = store_push(s3, y)
    let (t: store<f64[2,3]>, v: f64[2,3]) = store_pop(t0)
    yield (t, v)
  } else {
    let t1: store<f64[2,3]> = store_push(s3, a)
    let (t2: store<f64[2,3]>, v2: f64[2,3]) = store_pop(t1)
    yield (t2, v2)
  }
  let s4: store<f64[2,3]> = store_push(s6, x)
  let r: f64[2,3] = add(b, a)
""",
}

VIEWED = {
    # the value is dead before the push
    "read_then_push": """  let r: f64[2,3] = add(a, a)
  let s4: store<f64[2,3]> = store_push(s3, y)
""",
    # pushed back (copied into its own slot), then dead
    "push_back": """  let r: f64[2,3] = sin(a)
  let s4: store<f64[2,3]> = store_push(s3, a)
""",
}


def _args(c: bool):
    rng = np.random.default_rng(0)
    return rng.normal(size=(2, 3)), rng.normal(size=(2, 3)), np.bool_(c)


def _popped_copies(src: str) -> int:
    return sum(1 for ln in src.splitlines() if "pb:store_pop" in ln and ".copy()" in ln)


@pytest.mark.parametrize("name", sorted(COPIED))
def test_a_value_read_after_a_push_is_a_copy(name):
    prog = parse_prog(HEAD + COPIED[name] + TAIL)
    for c in (True, False):
        want = interp.run(prog, *_args(c))[0]
        np.testing.assert_array_equal(nb.run(prog, *_args(c))[0], want)
    assert _popped_copies(nb.emit_prog(prog)) >= 1


@pytest.mark.parametrize("name", sorted(VIEWED))
def test_a_value_dead_before_the_push_stays_a_view(name):
    prog = parse_prog(HEAD + VIEWED[name] + TAIL)
    assert _popped_copies(nb.emit_prog(prog)) == 0
    want = interp.run(prog, *_args(True))[0]
    np.testing.assert_array_equal(nb.run(prog, *_args(True))[0], want)


def test_a_loop_that_pops_and_pushes_keeps_views():
    """A return sweep's shape: each iteration pops a saved row, computes with it
    and pushes a new one; the popped value is dead at the end of the body."""
    prog = parse_prog("""entry def f(x: f64[3], n: i64) -> (f64[3]) {
  let s: store<f64[3]> = store_new() {elem=f64[3]}
  let s2: store<f64[3]> = store_push(s, x)
  let (s3: store<f64[3]>, acc: f64[3]) = loop (t: store<f64[3]> = s2, z: f64[3] = x) for i: i64 < n {
    let (t2: store<f64[3]>, v: f64[3]) = store_pop(t)
    let w: f64[3] = sin(v)
    let z2: f64[3] = add(z, w)
    let t3: store<f64[3]> = store_push(t2, w)
    yield (t3, z2)
  }
  return (acc)
}
""")
    assert _popped_copies(nb.emit_prog(prog)) == 0
    x = np.array([0.3, -1.0, 2.0])
    np.testing.assert_array_equal(nb.run(prog, x, np.int64(5))[0], interp.run(prog, x, np.int64(5))[0])


# g and h recurse into each other: numba cannot link inlined helpers into such a
# module, so every store operation is a call of its helper (`_st_pop0(...)`), and
# the copy is a statement after the call
MUTUAL = """def g(x: f64, n: i64) -> (f64) {
  let c: bool = gt(n, 0:i64)
  let (r: f64) = if c {
    let m: i64 = sub(n, 1:i64)
    let y: f64 = call h(x, m)
    yield (y)
  } else {
    yield (x)
  }
  return (r)
}
def h(x: f64, n: i64) -> (f64) {
  let y: f64 = call g(x, n)
  let z: f64 = sin(y)
  return (z)
}
"""


@pytest.mark.parametrize("name", ["push_then_read", "leaves_with_store"])
def test_called_store_helpers_copy_too(name):
    prog = parse_prog(MUTUAL + HEAD + COPIED[name] + "  let q: f64 = call g(1.5:f64, 2:i64)\n" + TAIL)
    src = nb.emit_prog(prog)
    assert "= _st_pop0(" in src and _popped_copies(src) >= 1
    for c in (True, False):
        want = interp.run(prog, *_args(c))[0]
        np.testing.assert_array_equal(nb.run(prog, *_args(c))[0], want)
