"""Inlining small functions (passes/inline.py), as the numba backend does before codegen."""
import numpy as np

import pullback as pb
from pullback.backends import interp
from pullback.ir.core import Apply
from pullback.ir.traverse import iter_lets
from pullback.passes.inline import inline_small

from ._irprogs import recursive


def sq(v):
    return v * v


def scaled(v, c):
    return sq(v) * c, c + 1.0


def looped(x):
    s = 0.0
    for i in range(x.shape[0]):
        a, b = scaled(x[i], 2.0)
        s = s + a + b
    return s


def _calls(prog):
    return [st.exp.func for f in [prog.func(prog.entry)] for st in iter_lets(f.body) if isinstance(st.exp, Apply)]


def test_small_calls_in_loops_are_inlined_and_results_unchanged():
    x = np.array([0.5, -1.0, 2.0])
    prog = pb.jit(looped, backend="interp").staged(x).prog
    assert _calls(prog)  # the staged program calls scaled
    out = inline_small(prog)
    assert not _calls(out)
    assert interp.run(out, x) == interp.run(prog, x)
    assert np.isclose(interp.run(out, x)[0], np.sum(2 * x * x + 3.0))


def test_recursive_functions_stay_calls():
    prog = recursive()  # g(x, n) calls itself: a small body, but never inlined
    assert inline_small(prog) == prog
    assert np.isclose(interp.run(prog, 0.3, 3)[0], interp.run(inline_small(prog, max_stmts=100), 0.3, 3)[0])


def test_numba_gradient_through_inlined_helpers():
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(pb.grad(looped, backend="numba")(x), 4 * x)


def medium(v, w):
    """About 20 statements: over MAX_STMTS, within MAX_FEW_STMTS."""
    a = v * w + 1.0
    b = a * a - v
    c = b * w + a
    d = c * c - b
    e = d * v + c
    f = e * e - d
    g = f * w + e
    h = g * g - f
    return np.sum(h * a + b * c + d * e + f * g)


def medium_in_loop(x, w):
    s = 0.0
    for i in range(3):
        s = s + medium(x * i, w) + medium(x + i, w)
    return s


def medium_outside(x, w):
    return medium(x, w) + medium(x * 2.0, w)


def _n_stmts(prog, name):
    return sum(1 for _ in iter_lets(prog.func(name).body))


def test_medium_functions_called_in_loops_are_inlined():
    """A function over MAX_STMTS statements, called only inside loops, with few copies
    (sites x statements <= MAX_COPIES) is inlined; the same function called outside
    loops is not, nor is it with a smaller copy budget."""
    from pullback.passes import inline

    x, w = np.linspace(0.1, 0.5, 4), np.linspace(-0.2, 0.3, 4)
    prog = pb.jit(medium_in_loop, backend="interp").staged(x, w).prog
    callee = next(f.name for f in prog.funcs if f.name.startswith("medium") and f.name != prog.entry
                  and "loop" not in f.name)
    n = _n_stmts(prog, callee)
    assert inline.MAX_STMTS < n <= inline.MAX_FEW_STMTS and 2 * n <= inline.MAX_COPIES
    calls_in = lambda p: [st.exp.func for f in p.funcs for st in iter_lets(f.body) if isinstance(st.exp, Apply)]
    out = inline_small(prog)
    assert callee not in calls_in(out)
    assert np.allclose(interp.run(out, x, w), interp.run(prog, x, w), rtol=0, atol=0)
    assert callee in calls_in(inline_small(prog, max_copies=n))        # two sites need 2n
    top = pb.jit(medium_outside, backend="interp").staged(x, w).prog
    assert any(c.startswith("medium") for c in calls_in(inline_small(top)))


def big(v, w):
    """Over MAX_FEW_STMTS statements (a loop over a tuple is unrolled)."""
    for c in (0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5):
        v = np.sin(v) * w + v * c - w
        w = np.cos(w) + v * c
    return np.sum(v * w)


def thin_wrapper(x, w):
    return big(x, w) * 2.0 + 1.0


def forwarder(x, w):
    return big(x, w)


def thick_caller(x, w):
    s = big(x, w)
    for c in (1.5, 2.5, 3.5, 4.5, 5.5, 6.5):     # more statements: not a thin wrapper
        x = x * c + w
        w = w - x * c
    return s + np.sum(x * w)


def twice(x, w):
    return big(x, w) + big(w, x)


def _callees(p):
    return {st.exp.func for f in p.funcs for st in iter_lets(f.body) if isinstance(st.exp, Apply)}


def test_a_function_called_once_from_a_thin_wrapper_is_inlined():
    """numba optimises a callee's LLVM module once on its own and again inside each
    caller's: the only call of a function, from a wrapper of a few statements, is
    inlined whatever the callee's size (ht's `points - skinned(theta)`, a seed and
    then the vjp); a caller that only forwards, a larger caller and a second call
    site keep the call (note [inline], "thin wrappers")."""
    from pullback.passes import inline

    x, w = np.linspace(0.1, 0.5, 4), np.linspace(-0.2, 0.3, 4)
    prog = pb.jit(thin_wrapper, backend="interp").staged(x, w).prog
    callee = next(f.name for f in prog.funcs if f.name.startswith("big"))
    assert _n_stmts(prog, callee) > inline.MAX_FEW_STMTS and _n_stmts(prog, prog.entry) <= inline.MAX_STMTS
    out = inline_small(prog)
    assert callee not in _callees(out)
    assert interp.run(out, x, w) == interp.run(prog, x, w)
    for f in (forwarder, thick_caller, twice):
        p = pb.jit(f, backend="interp").staged(x, w).prog
        assert any(c.startswith("big") for c in _callees(inline_small(p))), f.__name__


def huge(v, w):
    """Over 4 x the statements of `middling_caller` (ht's `skinned` in its residual)."""
    for c in np.linspace(0.5, 9.5, 30).tolist():
        v = np.sin(v) * w + v * c - w
        w = np.cos(w) + v * c
    return np.sum(v * w)


def middling_caller(x, w):
    s = huge(x, w)
    for c in (1.5, 2.5, 3.5, 4.5):
        x = x * c + w
        w = w - x * c
    return s + np.sum(x * w)


def test_a_caller_much_smaller_than_its_single_site_callee_is_thin_too():
    """A caller over MAX_STMTS statements but at most 1 / WRAPPER_RATIO of its callee's
    size (ht's complicated residual, about 20 statements around `skinned`'s 200) is thin
    too: the callee is optimised once, inlined, instead of on its own and again inside
    the caller (note [inline], "thin wrappers")."""
    from pullback.passes import inline

    x, w = np.linspace(0.1, 0.5, 4), np.linspace(-0.2, 0.3, 4)
    prog = pb.jit(middling_caller, backend="interp").staged(x, w).prog
    callee = next(f.name for f in prog.funcs if f.name.startswith("huge"))
    n_caller, n_callee = _n_stmts(prog, prog.entry), _n_stmts(prog, callee)
    assert inline.MAX_STMTS < n_caller and inline.WRAPPER_RATIO * n_caller <= n_callee
    out = inline_small(prog)
    assert callee not in _callees(out)
    assert interp.run(out, x, w) == interp.run(prog, x, w)
    # `thick_caller` is over a quarter of `big`'s size: it keeps its call (the test above)
    p = pb.jit(thick_caller, backend="interp").staged(x, w).prog
    big_name = next(f.name for f in p.funcs if f.name.startswith("big"))
    assert inline.WRAPPER_RATIO * _n_stmts(p, p.entry) > _n_stmts(p, big_name)


SCALAR_SITES = """def g(x: f64[2]) -> (f64[2]) {
  let a: f64[2] = mul(x, x)
  let b: f64[2] = add(a, x)
  let c: f64[2] = sin(b)
  let d: f64[2] = mul(c, 2.0:f64)
  let e: f64[2] = sub(d, a)
  return (e)
}

def dead(x: f64[2]) -> (f64[2]) {
  let r1: f64[2] = call g(x)
  let r2: f64[2] = call g(r1)
  let r3: f64[2] = call g(r2)
  let r4: f64[2] = call g(r3)
  return (r4)
}

entry def f(x: f64[2]) -> (f64[2]) {
  let y: f64[2] = call g(x)
  let z: f64[2] = call g(y)
  return (z)
}
"""


def test_scalar_calls_count_the_sites_of_functions_still_called():
    """A copy that an earlier inlining left uncalled (`dead`) is never compiled: its sites do
    not count against the budget (particle's force had 39 sites, 12 of them live)."""
    from pullback.ir.parser import parse_prog
    from pullback.passes.inline import inline_scalar_calls

    prog = parse_prog(SCALAR_SITES)
    out = inline_scalar_calls(prog, max_copies=20)   # live: 2 sites x 5 statements; with dead: 30
    assert _calls(out) == []
    x = np.array([0.3, -0.7])
    np.testing.assert_array_equal(interp.run(out, x)[0], interp.run(prog, x)[0])
    assert _calls(inline_scalar_calls(prog, max_copies=20, roots=["f", "dead"])) == ["g", "g"]


LOOPING_HELPER = """def g(x: f64[2]) -> (f64[2]) {
  let y: f64[2] = loop (a: f64[2] = x) for i: i64 < 3:i64 {
    let b: f64[2] = sin(a)
    yield (b)
  }
  return (y)
}

entry def f(x: f64[2]) -> (f64[2]) {
  let y: f64[2] = call g(x)
  let z: f64[2] = call g(y)
  return (z)
}
"""


def test_scalar_calls_keep_the_calls_of_a_helper_that_loops():
    """A loop's work dwarfs packing its small arguments once per call: the helper stays a
    function (saddle's inner descent, copied at its three sites, cost 0.4-0.6 s of compile
    and no time per call)."""
    from pullback.ir.parser import parse_prog
    from pullback.passes.inline import inline_scalar_calls

    prog = parse_prog(LOOPING_HELPER)
    assert _calls(inline_scalar_calls(prog)) == ["g", "g"]
    assert _calls(inline_scalar_calls(parse_prog(LOOPING_HELPER.replace(
        "let y: f64[2] = loop (a: f64[2] = x) for i: i64 < 3:i64 {\n    let b: f64[2] = sin(a)\n    yield (b)\n  }",
        "let y: f64[2] = sin(x)")))) == []
