"""Stage a function, run the IR, compare with running the Python function on NumPy."""
from __future__ import annotations

import numpy as np

from pullback.frontend import stage
from pullback.pytree import flatten, unflatten

try:
    from pullback.backends.interp import run
except Exception:  # the reference interpreter is not there yet
    from _eval import run


def well_formed(prog):
    """Type-check the staged program (and round-trip it through the printer) when those exist."""
    try:
        from pullback.ir.typecheck import check_prog
    except Exception:
        return
    check_prog(prog)


def run_staged(fn, *args, static_argnums=()):
    st = stage(fn, args, static_argnums=static_argnums)
    well_formed(st.prog)
    static = set(static_argnums)
    leaves, _ = flatten(tuple(a for i, a in enumerate(args) if i not in static))
    out = run(st.prog, *leaves)
    return unflatten(st.out_tree, list(out)), st


def check(fn, *args, static_argnums=(), rtol=1e-9, atol=1e-12, dtype=True):
    got, st = run_staged(fn, *args, static_argnums=static_argnums)
    want = fn(*args)
    gl, gt = flatten(got)
    wl, wt = flatten(want)
    assert gt == wt, (gt, wt)
    for g, w in zip(gl, wl):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        if dtype:
            assert _kind(g.dtype) == _kind(w.dtype), (g.dtype, w.dtype)
        np.testing.assert_allclose(g.astype(float) if g.dtype == bool else g,
                                   w.astype(float) if w.dtype == bool else w, rtol=rtol, atol=atol)
    return st


def _kind(dt):
    dt = np.dtype(dt)
    if dt == np.float32:
        return "f32"
    if dt.kind == "f":
        return "f64"
    if dt.kind in "iu":
        return "i"
    return dt.kind


def ops_of(st):
    """All op names / expression kinds in the program (walks nested bodies)."""
    from pullback.ir.core import If, Loop, Prim

    out = []

    def body(b):
        for s in b.stmts:
            e = s.exp
            if isinstance(e, Prim):
                out.append(e.op)
            else:
                out.append(type(e).__name__)
            if isinstance(e, If):
                body(e.then)
                body(e.else_)
            if isinstance(e, Loop):
                out.append(type(e.form).__name__)
                body(e.body)

    for f in st.prog.funcs:
        body(f.body)
    return out
