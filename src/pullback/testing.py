"""Gradient checking utilities (like ``jax.test_util.check_grads``).

Contract:

- `numerical_jvp(f, args, tangents, eps)`: central finite differences of
  ``f(*args)`` along the direction ``tangents`` (a tuple of pytrees shaped like
  ``args``). Only float leaves are perturbed; the result is a pytree shaped like
  ``f``'s output, with zeros for non-float output leaves.
- `check_jvp(f, args, ...)`: for a random input direction ``v`` (float leaves
  only), asserts ``pb.jvp(f, args, v)`` returns the primal output of ``f`` and a
  tangent that matches central differences along ``v``.
- `check_vjp(f, args, ...)`: for random ``v`` and a random output cotangent
  ``u``, asserts ``<vjp(u), v> ~= <u, FD(v)>`` and, unless ``use_jvp=False``,
  the tighter dot-product identity ``<vjp(u), v> ~= <u, jvp(v)>``.
- `check_grads(f, args, modes=("fwd", "rev"), order=2, ...)`: runs the checks
  for each requested mode and, for ``order > 1``, recursively checks the
  derivative functions ``a -> jvp(f, a, v)[1]`` (fwd) and ``a -> vjp(f, *a)[1](u)``
  (rev), so order 2 covers fwd-over-fwd, rev-over-fwd, fwd-over-rev and
  rev-over-rev. Failures raise `AssertionError` naming the check, the mode chain
  (e.g. ``"VJP of JVP"``), the backend and the error.
- `check_prog(prog, args, ...)`: the same checks one level down, on IR: the
  function's ``jvp_prog``/``vjp_prog`` derivatives run on a backend's ``run``.

Integer and boolean leaves are held fixed: they get zero tangents (of their own
dtype) and their cotangents are ignored. ``argnums`` restricts the directions
to the given positional arguments; the others are held fixed the same way.
The jvp/vjp implementations can be replaced (``jvp=``, ``vjp=`` keywords) so
the checker can be tested against hand-written derivatives.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .pytree import flatten, unflatten

__all__ = [
    "numerical_jvp",
    "check_jvp",
    "check_vjp",
    "check_grads",
    "check_prog",
    "random_like",
    "is_float_leaf",
]

DEFAULT_EPS = 1e-6
DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-6


# -- leaves ---------------------------------------------------------------------

def is_float_leaf(x) -> bool:
    """A leaf that gets a direction: a Python/NumPy float or a float array."""
    if isinstance(x, bool):
        return False
    if isinstance(x, float):  # includes np.float64
        return True
    if isinstance(x, (np.ndarray, np.generic)):
        return np.issubdtype(x.dtype, np.floating)
    return False


def _is_none(x):
    return x is None


def _like(x, value):
    """`value` (an ndarray) cast to the kind of leaf `x` is."""
    if isinstance(x, np.ndarray):
        return np.asarray(value, dtype=x.dtype).reshape(x.shape)
    if isinstance(x, np.generic):
        return x.dtype.type(np.asarray(value).reshape(()))
    if isinstance(x, float):
        return float(np.asarray(value).reshape(()))
    return value


def _zero_like(x):
    if x is None:
        return None
    if isinstance(x, (np.ndarray, np.generic)):
        return _like(x, np.zeros(np.shape(x), dtype=x.dtype))
    if isinstance(x, bool):
        return False
    if isinstance(x, int):
        return 0
    if isinstance(x, float):
        return 0.0
    return np.zeros_like(x)


def random_like(x, rng, active: bool = True):
    """A random normal leaf shaped and typed like float leaf `x`, else a zero."""
    if active and is_float_leaf(x):
        return _like(x, rng.standard_normal(np.shape(x)))
    return _zero_like(x)


def _rng(rng):
    if rng is None:
        return np.random.default_rng(0)
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, np.random.RandomState):
        return np.random.default_rng(rng.randint(2**31))
    return np.random.default_rng(rng)


def _active(args, argnums):
    if argnums is None:
        return [True] * len(args)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    nums = {n % len(args) for n in nums}
    return [i in nums for i in range(len(args))]


def random_tangents(args, rng, argnums=None) -> tuple:
    """A random direction for each float leaf of the active args (zeros elsewhere)."""
    act = _active(args, argnums)
    return tuple(
        unflatten(tree, [random_like(x, rng, a) for x in leaves])
        for a, (leaves, tree) in zip(act, (flatten(x) for x in args))
    )


def random_cotangent(out, rng):
    leaves, tree = flatten(out)
    return unflatten(tree, [random_like(x, rng) for x in leaves])


def _float_pairs(x, y, what=""):
    """Matching float leaves of pytrees x (reference structure) and y."""
    xl, xt = flatten(x, is_leaf=_is_none)
    yl, yt = flatten(y, is_leaf=_is_none)
    if len(xl) != len(yl):
        raise AssertionError(
            f"{what}structure mismatch: expected a pytree like {xt}, got {yt}")
    return [(a, b) for a, b in zip(xl, yl) if is_float_leaf(a)]


def _vdot(pairs) -> float:
    tot = 0.0
    for a, b in pairs:
        if a is None or b is None:
            continue
        tot += float(np.sum(np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)))
    return tot


# -- finite differences ------------------------------------------------------------

def numerical_jvp(f: Callable, args: Sequence, tangents: Sequence, eps: float = DEFAULT_EPS):
    """Central difference ``(f(args + eps*t) - f(args - eps*t)) / (2*eps)``.

    Non-float leaves of ``args`` are passed unchanged; non-float leaves of the
    output are returned as zeros.
    """
    args = tuple(args)
    tangents = tuple(tangents)

    def shifted(sign):
        out = []
        for x, t in zip(args, tangents):
            xl, xt = flatten(x)
            tl, _ = flatten(t, is_leaf=_is_none)
            if len(tl) != len(xl):
                raise ValueError(f"tangent structure does not match argument {xt}")
            new = []
            for a, d in zip(xl, tl):
                if is_float_leaf(a) and d is not None:
                    val = np.asarray(a, dtype=np.float64) + sign * eps * np.asarray(d, dtype=np.float64)
                    # float32 inputs are evaluated in float64, so the differences are a precise reference
                    new.append(val if np.asarray(a).dtype == np.float32 else _like(a, val))
                else:
                    new.append(_copy(a))
            out.append(unflatten(xt, new))
        return out

    hi = f(*shifted(+1.0))
    lo = f(*shifted(-1.0))
    hl, ht = flatten(hi)
    ll, _ = flatten(lo)
    res = []
    for a, b in zip(hl, ll):
        if is_float_leaf(a):
            d = (np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)) / (2 * eps)
            res.append(_like(a, d) if not isinstance(a, np.ndarray) else d)
        else:
            res.append(_zero_like(a))
    return unflatten(ht, res)


def _copy(x):
    return x.copy() if isinstance(x, np.ndarray) else x


def _copy_args(args):
    return tuple(unflatten(t, [_copy(v) for v in lv]) for lv, t in (flatten(a) for a in args))


# -- comparisons ----------------------------------------------------------------

def _where(msg, backend):
    parts = [p for p in (msg, f"backend={backend}" if backend else "") if p]
    return f" [{', '.join(parts)}]" if parts else ""


def _assert_trees_close(actual, expected, rtol, atol, check, where):
    pairs = _float_pairs(expected, actual, f"{check}{where}: ")
    worst = (0.0, 0.0, None)
    for e, a in pairs:
        e = np.asarray(e, dtype=np.float64)
        if a is None:
            a = np.zeros_like(e)
        a = np.asarray(a, dtype=np.float64)
        if a.shape != e.shape and a.size == e.size == 1:
            a = a.reshape(e.shape)
        if a.shape != e.shape:
            raise AssertionError(f"{check}{where}: shape {a.shape} != expected {e.shape}")
        err = np.abs(a - e)
        bad = ~(err <= atol + rtol * np.abs(e))  # NaN counts as bad
        if bad.any():
            i = np.unravel_index(int(np.argmax(np.where(bad, np.nan_to_num(err, nan=np.inf), -1))), e.shape)
            raise AssertionError(
                f"{check} failed{where}: max abs error {np.nanmax(err) if not np.isnan(err).all() else np.nan:.3g} "
                f"(rtol={rtol:g}, atol={atol:g}); at index {tuple(int(k) for k in i)}: "
                f"got {a[i]!r}, expected {e[i]!r}\n  got:      {_short(a)}\n  expected: {_short(e)}")
        if err.size:
            worst = max(worst, (float(err.max()), float(np.abs(e).max()), None))
    return worst


def _short(x):
    return np.array2string(np.asarray(x), precision=6, threshold=20)


def _assert_scalars_close(a, b, rtol, atol, check, where, detail=""):
    scale = max(abs(a), abs(b))
    if not (abs(a - b) <= atol + rtol * scale):
        raise AssertionError(
            f"{check} failed{where}: {a!r} != {b!r} (abs error {abs(a - b):.3g}, "
            f"rtol={rtol:g}, atol={atol:g}){detail}")


# -- the default transforms ----------------------------------------------------------

def _pb():
    import pullback

    return pullback


def _default_jvp(backend):
    def jvp(f, primals, tangents):
        return _pb().jvp(f, tuple(primals), tuple(tangents), backend=backend)
    return jvp


def _default_vjp(backend):
    def vjp(f, *primals):
        return _pb().vjp(f, *primals, backend=backend)
    return vjp


# -- the checks --------------------------------------------------------------------

def check_jvp(f, args, *, argnums=None, rtol=DEFAULT_RTOL, atol=DEFAULT_ATOL, eps=DEFAULT_EPS,
              backend="interp", rng=None, jvp=None, err_msg="JVP", tangents=None):
    """Check forward mode against central finite differences along a random direction."""
    args = tuple(args)
    rng = _rng(rng)
    jvp = jvp or _default_jvp(backend)
    where = _where(err_msg, backend)
    v = tuple(tangents) if tangents is not None else random_tangents(args, rng, argnums)
    expected_out = f(*_copy_args(args))
    out, tan = jvp(f, _copy_args(args), v)
    _assert_trees_close(out, expected_out, rtol, atol, "primal output of jvp", where)
    fd = numerical_jvp(f, args, v, eps)
    _assert_trees_close(tan, fd, rtol, atol, "JVP vs central finite differences", where)
    return out, tan


def check_vjp(f, args, *, argnums=None, rtol=DEFAULT_RTOL, atol=DEFAULT_ATOL, eps=DEFAULT_EPS,
              backend="interp", rng=None, vjp=None, jvp=None, use_jvp=True, err_msg="VJP",
              tangents=None, cotangent=None):
    """Check reverse mode with the dot-product identity ``<u, J v> == <J^T u, v>``.

    ``J v`` is taken from central differences and, when ``use_jvp``, also from
    forward mode (the tight check).
    """
    args = tuple(args)
    rng = _rng(rng)
    vjp = vjp or _default_vjp(backend)
    where = _where(err_msg, backend)
    act = _active(args, argnums)
    v = tuple(tangents) if tangents is not None else random_tangents(args, rng, argnums)
    expected_out = f(*_copy_args(args))
    out, vjp_fn = vjp(f, *_copy_args(args))
    _assert_trees_close(out, expected_out, rtol, atol, "primal output of vjp", where)
    u = cotangent if cotangent is not None else random_cotangent(expected_out, rng)
    cts = vjp_fn(u)
    if not isinstance(cts, (tuple, list)) or len(cts) != len(args):
        raise AssertionError(
            f"VJP{where}: vjp_fn must return one cotangent per primal ({len(args)}), got {type(cts).__name__}"
            + (f" of length {len(cts)}" if isinstance(cts, (tuple, list)) else ""))
    ct_v = 0.0
    for a, x, ct, t in zip(act, args, cts, v):
        if not a or not any(is_float_leaf(l) for l in flatten(x)[0]):
            continue
        if ct is None:
            continue  # a symbolic zero
        xl, _ = flatten(x)
        cl, ctree = flatten(ct, is_leaf=_is_none)
        tl, _ = flatten(t, is_leaf=_is_none)
        if len(cl) != len(xl):
            raise AssertionError(f"VJP{where}: cotangent structure {ctree} does not match its primal")
        for xv, cv, tv in zip(xl, cl, tl):
            if not is_float_leaf(xv) or cv is None:
                continue
            cv = np.asarray(cv, dtype=np.float64)
            if cv.shape != np.shape(xv):
                raise AssertionError(f"VJP{where}: cotangent shape {cv.shape} != primal shape {np.shape(xv)}")
            ct_v += _vdot([(cv, tv)])
    fd = numerical_jvp(f, args, v, eps)
    u_fd = _vdot(_float_pairs(u, fd, f"VJP{where}: "))
    _assert_scalars_close(ct_v, u_fd, rtol, atol, "VJP dot-product test against finite differences "
                          "(<vjp(u), v> vs <u, FD(v)>)", where)
    if use_jvp:
        jvp = jvp or _default_jvp(backend)
        _, tan = jvp(f, _copy_args(args), v)
        u_tan = _vdot(_float_pairs(u, tan, f"VJP{where}: "))
        _assert_scalars_close(ct_v, u_tan, rtol, atol, "VJP dot-product test (<vjp(u), v> vs <u, jvp(v)>)",
                              where, f"; <u, FD(v)> = {u_fd!r}")
    return out, cts


def check_grads(f, args, modes=("fwd", "rev"), order=2, argnums=None, rtol=DEFAULT_RTOL,
                atol=DEFAULT_ATOL, eps=DEFAULT_EPS, backend="interp", rng=None, *, jvp=None,
                vjp=None, err_msg=""):
    """Check derivatives of ``f`` at ``args`` up to ``order`` in the given modes.

    ``modes`` is a subset of ``("fwd", "rev")``. For order > 1 the derivative
    functions themselves are checked (see the module docstring). Raises
    `AssertionError` on the first failure.
    """
    if isinstance(modes, str):
        modes = (modes,)
    bad = set(modes) - {"fwd", "rev"}
    if bad:
        raise ValueError(f"unknown modes {sorted(bad)}; use 'fwd' and/or 'rev'")
    if order < 1:
        raise ValueError("order must be >= 1")
    args = tuple(args)
    rng = _rng(rng)
    jvp_t = jvp or _default_jvp(backend)
    vjp_t = vjp or _default_vjp(backend)
    tol = dict(rtol=rtol, atol=atol, eps=eps, backend=backend, argnums=argnums)

    def name(kind):
        return f"{kind} of {err_msg}" if err_msg else kind

    if "fwd" in modes:
        check_jvp(f, args, rng=rng, jvp=jvp_t, err_msg=name("JVP"), **tol)
    if "rev" in modes:
        check_vjp(f, args, rng=rng, vjp=vjp_t, jvp=jvp_t, use_jvp="fwd" in modes,
                  err_msg=name("VJP"), **tol)
    if order > 1:
        if "fwd" in modes:
            v = random_tangents(args, rng, argnums)
            f_jvp = _jvp_derivative(f, v, len(args), backend, jvp)
            check_grads(f_jvp, args, modes, order - 1, rng=rng, jvp=jvp, vjp=vjp,
                        err_msg=name("JVP"), **tol)
        if "rev" in modes:
            u = random_cotangent(f(*_copy_args(args)), rng)
            f_vjp = _vjp_derivative(f, u, len(args), backend, vjp)
            check_grads(f_vjp, args, modes, order - 1, rng=rng, jvp=jvp, vjp=vjp,
                        err_msg=name("VJP"), **tol)


# The derivative functions checked at order > 1. pullback stages them from their
# source, so they are written out with plain positional parameters (no *args) and
# call `pb.jvp` / `pb.vjp` directly.

def _jvp_derivative(f, v, n, backend, jvp=None):
    if jvp is not None:
        def f_jvp(*a):
            return jvp(f, a, v)[1]
        return f_jvp
    pb = _pb()
    if n == 1:
        def f_jvp(a0):
            return pb.jvp(f, (a0,), v, backend=backend)[1]
    elif n == 2:
        def f_jvp(a0, a1):
            return pb.jvp(f, (a0, a1), v, backend=backend)[1]
    elif n == 3:
        def f_jvp(a0, a1, a2):
            return pb.jvp(f, (a0, a1, a2), v, backend=backend)[1]
    elif n == 4:
        def f_jvp(a0, a1, a2, a3):
            return pb.jvp(f, (a0, a1, a2, a3), v, backend=backend)[1]
    else:
        def f_jvp(*a):
            return pb.jvp(f, a, v, backend=backend)[1]
    return f_jvp


def _vjp_derivative(f, u, n, backend, vjp=None):
    if vjp is not None:
        def f_vjp(*a):
            return vjp(f, *a)[1](u)
        return f_vjp
    pb = _pb()
    if n == 1:
        def f_vjp(a0):
            return pb.vjp(f, a0, backend=backend)[1](u)
    elif n == 2:
        def f_vjp(a0, a1):
            return pb.vjp(f, a0, a1, backend=backend)[1](u)
    elif n == 3:
        def f_vjp(a0, a1, a2):
            return pb.vjp(f, a0, a1, a2, backend=backend)[1](u)
    elif n == 4:
        def f_vjp(a0, a1, a2, a3):
            return pb.vjp(f, a0, a1, a2, a3, backend=backend)[1](u)
    else:
        def f_vjp(*a):
            return pb.vjp(f, *a, backend=backend)[1](u)
    return f_vjp


# -- IR level --------------------------------------------------------------------------

def _run_fn(backend):
    if callable(backend):
        return backend
    if backend == "interp":
        from .backends.interp import run
    elif backend == "pysource":
        from .backends.pysource import run
    else:
        import importlib

        run = importlib.import_module(f"pullback.backends.{backend}").run
    return run


def check_prog(prog, args, *, fname=None, rtol=DEFAULT_RTOL, atol=DEFAULT_ATOL, eps=DEFAULT_EPS,
               backend="interp", rng=None, modes=("fwd", "rev")):
    """Check the derivatives of IR function ``fname`` (default: the entry).

    ``args`` are leaf values, one per parameter. Float parameters (`TensorType`
    with a float dtype) get random directions; the jvp function is
    ``jvp_prog``'s ``f_jvp(params..., tangents of float params...) -> (results...,
    tangents of float results...)`` and the vjp function is ``vjp_prog``'s
    ``f_vjp(params..., cotangents of float results...) -> (results..., cotangents
    of float params...)``. Checks: the primal results of both, jvp vs central
    differences, and ``<u, jvp(v)> == <vjp(u), v> == <u, FD(v)>``.
    """
    from .ir.types import TensorType

    rng = _rng(rng)
    run = _run_fn(backend)
    fname = fname or prog.entry
    func = prog.func(fname)
    args = list(args)
    fparams = [i for i, p in enumerate(func.params) if isinstance(p.type, TensorType) and p.type.is_float]
    fres = [i for i, t in enumerate(func.ret_types) if isinstance(t, TensorType) and t.is_float]
    nres = len(func.ret_types)
    where = _where(f"IR function {fname}", backend if isinstance(backend, str) else "")

    def f(*xs):
        return tuple(run(prog, *xs, fname=fname))

    out = f(*_copy_args(args))
    v = [None] * len(args)
    for i in fparams:
        v[i] = random_like(args[i], rng)
    fd = numerical_jvp(f, args, [x if x is not None else _zero_like(a) for x, a in zip(v, args)], eps)
    fd_f = [fd[i] for i in fres]
    u = [random_like(out[i], rng) for i in fres]
    u_fd = _vdot(zip(u, fd_f))
    u_tan = None
    if "fwd" in modes:
        from .passes.jvp import jvp_prog

        jprog, jname = jvp_prog(prog, fname)
        res = run(jprog, *_copy_args(args), *[v[i] for i in fparams], fname=jname)
        if len(res) != nres + len(fres):
            raise AssertionError(f"{jname}{where}: returned {len(res)} values, expected "
                                 f"{nres} results + {len(fres)} tangents")
        _assert_trees_close(tuple(res[:nres]), out, rtol, atol, "primal results of the jvp function", where)
        tans = tuple(res[nres:])
        _assert_trees_close(tans, tuple(fd_f), rtol, atol, "JVP vs central finite differences", where)
        u_tan = _vdot(zip(u, tans))
    if "rev" in modes:
        from .passes.vjp import vjp_prog

        vprog, vname = vjp_prog(prog, fname)
        res = run(vprog, *_copy_args(args), *u, fname=vname)
        if len(res) != nres + len(fparams):
            raise AssertionError(f"{vname}{where}: returned {len(res)} values, expected "
                                 f"{nres} results + {len(fparams)} cotangents")
        _assert_trees_close(tuple(res[:nres]), out, rtol, atol, "primal results of the vjp function", where)
        cts = res[nres:]
        for i, ct in zip(fparams, cts):
            if np.shape(ct) != np.shape(args[i]):
                raise AssertionError(f"VJP{where}: cotangent of parameter {func.params[i].name} has shape "
                                     f"{np.shape(ct)}, expected {np.shape(args[i])}")
        ct_v = _vdot(zip(cts, [v[i] for i in fparams]))
        _assert_scalars_close(ct_v, u_fd, rtol, atol,
                              "VJP dot-product test against finite differences (<vjp(u), v> vs <u, FD(v)>)", where)
        if u_tan is not None:
            _assert_scalars_close(ct_v, u_tan, rtol, atol,
                                  "VJP dot-product test (<vjp(u), v> vs <u, jvp(v)>)", where)
    return out
