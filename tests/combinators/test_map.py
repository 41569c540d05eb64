"""`pb.map` and `pb.vmap` against their unrolled plain-Python loops (issue 12, §4).

Each case is an ordinary function that calls `pb.map` / `pb.vmap`. Its
reference is *the same function* with `pb.map` replaced by a list
comprehension + `np.stack` and `pb.vmap` by a loop over slices (`unrolled`,
which rebinds `pb` in a copy of the module's globals). For every case and
backend:

- value: `pb.jit(f)` equals the unrolled function run as plain Python;
- reverse mode: `pb.grad` (or `pb.vjp` for non-scalar outputs) equals the
  unrolled function's `pb.grad` on the interpreter (a different IR: no `Map`,
  checked) and satisfies `<vjp(u), v> = <u, FD(v)>` with central differences;
- forward mode: `pb.jvp` equals central differences of the unrolled function
  and `<u, jvp(v)> = <vjp(u), v>`;
- order 2 for the cases marked so: `pb.hessian` equals the unrolled
  function's hessian and finite differences of its gradient.

numba compiles take seconds per function cold, so the numba parameters are
`slow` except a few.
"""
from __future__ import annotations

import types

import numpy as np
import pytest

import pullback as pb
from pullback.frontend import stage
from pullback.ir.printer import print_prog
from pullback.pytree import flatten, unflatten
from pullback.testing import numerical_jvp

HERE = __file__
NUMBA_FAST = {"lambda_scalar", "gather_one_element", "map_in_map"}


# -- the unrolled reference -----------------------------------------------------------------

def _elem(x, i):
    if isinstance(x, dict):
        return {k: x[k][i] for k in x}
    if isinstance(x, (list, tuple)):
        return [a[i] for a in x]
    return x[i]


def _zero_elem(x):
    if isinstance(x, dict):
        return {k: np.zeros(x[k].shape[1:]) for k in x}
    return np.zeros(x.shape[1:])


def _length(x):
    if isinstance(x, dict):
        return [x[k].shape[0] for k in x][0]
    if isinstance(x, (list, tuple)):
        return x[0].shape[0]
    return x.shape[0]


def _stack(outs, axis=0):
    if isinstance(outs[0], tuple):
        return tuple(np.moveaxis(np.stack([o[j] for o in outs]), 0, axis) for j in range(len(outs[0])))
    return np.moveaxis(np.stack(outs), 0, axis)


def _empty(probe):
    if isinstance(probe, tuple):
        return tuple(np.zeros((0,) + np.shape(o)) for o in probe)
    return np.zeros((0,) + np.shape(probe))


# these helpers are staged by pullback (the unrolled functions are differentiated
# too), so they handle the pytrees the cases use (dicts in, tuples out) by hand
def unrolled_map(f, *xs):
    """`pb.map` as a plain loop: a list comprehension and `np.stack` per output."""
    n = _length(xs[0])
    if n == 0:   # no iterations: the shapes of the (empty) results come from a probe call
        return _empty(f(*[_zero_elem(x) for x in xs]))
    return _stack([f(*[_elem(x, i) for x in xs]) for i in range(n)])


def unrolled_vmap(f, in_axes=0, out_axes=0):
    """`pb.vmap` as a plain loop over slices along each argument's axis."""
    def batched(*args):
        axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
        n = [np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None][0]
        outs = [f(*[a if ax is None else np.moveaxis(a, ax, 0)[i] for a, ax in zip(args, axes)])
                for i in range(n)]
        return _stack(outs, out_axes)
    return batched


class _UnrolledPb:
    """`pb` with `map` and `vmap` replaced by their loops; everything else is pullback's."""
    map = staticmethod(unrolled_map)
    vmap = staticmethod(unrolled_vmap)

    def __getattr__(self, name):
        return getattr(pb, name)


def unrolled(fn):
    """A copy of `fn` (and of every function of this module it reaches by name)
    whose `pb.map` / `pb.vmap` are the plain loops. Same source, same closure."""
    g = dict(fn.__globals__)
    g["pb"] = _UnrolledPb()
    for name, v in list(g.items()):
        if isinstance(v, types.FunctionType) and v.__globals__ is fn.__globals__ and v.__module__ == __name__:
            g[name] = types.FunctionType(v.__code__, g, v.__name__, v.__defaults__, v.__closure__)
    return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)


# -- the cases ---------------------------------------------------------------------------------

CASES = {}


def case(make_args, argnums=(0,), order2=False, staged_ref=True):
    """Register a case. `staged_ref=False`: pullback cannot stage the unrolled
    reference (see the case), so derivatives are checked against finite
    differences of it and the jvp/vjp identity only."""
    def register(fn):
        CASES[fn.__name__] = (fn, make_args, tuple(argnums), order2)
        if not staged_ref:
            PLAIN_REF.add(fn.__name__)
        return fn
    return register


PLAIN_REF = set()


def _rng(seed=0):
    return np.random.default_rng(seed)


def _away_from_zero(shape, seed):
    x = _rng(seed).normal(size=shape)
    return np.where(np.abs(x) < 0.2, x + np.sign(x + 1e-3) * 0.3, x)


def _glob_elem(a):
    return a * np.exp(-0.5 * a * a)


def _glob_row(r, w):
    t = np.dot(r, w)
    return np.tanh(t) + 0.1 * t * t


@case(lambda: (_rng(1).normal(size=5),), order2=True)
def lambda_scalar(x):
    return np.sum(pb.map(lambda a: np.sin(a) * a + 1.0, x))


@case(lambda: (_rng(2).normal(size=4), _rng(3).normal(size=4)), argnums=(0, 1))
def local_def(x, y):
    def g(a, b):
        t = a * b
        return np.tanh(t) + a * a

    return np.sum(pb.map(g, x, y) ** 2)


@case(lambda: (_rng(4).normal(size=5),))
def global_def(x):
    return np.sum(pb.map(_glob_elem, x) * x)


@case(lambda: (_rng(5).normal(size=(4, 3)), _rng(6).normal(size=3)), argnums=(0, 1))
def global_def_free_array(A, w):
    return np.sum(pb.map(lambda r: _glob_row(r, w), A))


@case(lambda: (_rng(7).normal(size=5),), order2=True)
def tuple_outputs(x):
    ys, zs = pb.map(lambda a: (np.sin(a), a * a * 0.5), x)
    return np.dot(ys, zs) + np.sum(zs)


@case(lambda: (_rng(8).normal(size=(4, 3)),))
def tuple_outputs_returned(A):
    return pb.map(lambda r: (np.sum(r * r), r * 2.0 + np.cos(r)), A)


@case(lambda: (_rng(9).normal(size=(4, 3)), _rng(10).normal(size=(4, 3)), _rng(11).normal(size=4)),
      argnums=(0, 1, 2))
def several_mapped(A, B, s):
    return np.sum(pb.map(lambda r, c, t: np.dot(r, c) * t + np.sin(t), A, B, s))


@case(lambda: (_rng(12).normal(size=(4, 3)), _rng(13).normal(size=3), 0.7), argnums=(0, 1, 2), order2=True)
def free_scalar_and_array(A, w, c):
    return np.sum(pb.map(lambda r: np.dot(r, w) * c + np.sum(w * w), A) ** 2)


@case(lambda: (_rng(14).normal(size=50), np.array([3, 41, 3, 0, 49, 17], dtype=np.int64), _rng(15).normal(size=6)),
      argnums=(0, 2), order2=True)
def gather_one_element(big, idx, vals):
    # idx repeats 3: the adjoint of big[3] gets two contributions
    return np.sum(pb.map(lambda j, v: big[j] * v + np.sin(big[j]), idx, vals))


@case(lambda: (_rng(16).normal(size=40), np.array([5, 0, 39, 5], dtype=np.int64), _rng(17).normal(size=4)),
      argnums=(0, 2))
def gather_through_free_index(big, idx, vals):
    # x[idx[i]]: the index array is free too, the map runs over an iota
    return np.sum(pb.map(lambda i, v: np.cos(big[idx[i]]) * v, np.arange(vals.shape[0]), vals))


@case(lambda: (_rng(18).normal(size=(3, 4)), _rng(19).normal(size=4)), argnums=(0, 1), order2=True)
def map_in_map(A, w):
    # the inner map reads r both as its mapped array and whole (r[0])
    return np.sum(pb.map(lambda r: pb.map(lambda a, b: np.sin(a) * b * r[0], r, w), A))


@case(lambda: (_rng(46).normal(size=(3, 4)), _rng(47).normal(size=4)), argnums=(0, 1), order2=True)
def map_in_map_free(A, w):
    return np.sum(pb.map(lambda r: pb.map(lambda a, b: np.sin(a) * b, r, w) * np.sum(r * w), A))


@case(lambda: (_rng(48).normal(size=5),), order2=True)
def mapped_and_read_whole(x):
    # x is mapped and read whole (x[0]) by the lambda: both adjoints add up
    return np.sum(pb.map(lambda a: np.sin(a) * x[0], x))


@case(lambda: (_rng(20).normal(size=(3, 4)), _rng(21).normal(size=(4, 2))), argnums=(0, 1))
def matmul_nested_maps(A, B):
    return pb.map(lambda row: pb.map(lambda col: np.sum(row * col), B.T), A)


@case(lambda: (_rng(22).normal(size=(4, 3)),))
def for_in_map(A):
    def g(r):
        s = 0.0
        for k in range(r.shape[0]):
            s = np.sin(s) + r[k] * (k + 1.0)
        return s

    return np.sum(pb.map(g, A) ** 2)


@case(lambda: (_rng(23).normal(size=5), 0.8), argnums=(0, 1))
def map_in_for(x, w):
    for k in range(3):
        x = pb.map(lambda a: np.tanh(a) * w + 0.1 * k, x)
    return np.sum(x * x)


@case(lambda: (_rng(24).uniform(0.3, 0.6, size=4),))
def map_in_while(x):
    n = 0
    while np.sum(x) < 20.0 and n < 8:
        x = pb.map(lambda a: a * 1.7 + np.sin(a), x)
        n += 1
    return np.sum(x * x)


@case(lambda: (_away_from_zero(6, 25), 1.3), argnums=(0, 1), order2=True)
def if_in_map(x, c):
    def g(a):
        if a > 0.0:
            y = a * a * c
        else:
            y = np.sin(a) - c
        return y

    return np.sum(pb.map(g, x))


@case(lambda: (np.zeros(0), _rng(26).normal(size=3)), argnums=(0, 1))
def empty_width(x, y):
    return np.sum(pb.map(lambda a: np.sin(a) * y[0], x)) + np.sum(y * y)


@case(lambda: (np.zeros((0, 3)), _rng(27).normal(size=3)), argnums=(0, 1))
def empty_width_returned(A, w):
    return pb.map(lambda r: r * w, A)


@case(lambda: (_rng(28).normal(size=(4, 3)),))
def rows_to_rows(A):
    return np.sum(pb.map(lambda r: r / (1.0 + np.sum(r * r)), A) ** 2)


@case(lambda: (_rng(29).normal(size=5),))
def mapped_int_array(x):
    return np.sum(pb.map(lambda k, a: a * k + np.cos(a * k), np.arange(x.shape[0]), x))


@case(lambda: ({"a": _rng(30).normal(size=4), "b": _rng(31).normal(size=4)},))
def mapped_pytree(d):
    return np.sum(pb.map(lambda e: e["a"] * np.sin(e["b"]), d))


@case(lambda: (_rng(49).normal(size=4), _rng(50).normal(size=(4, 3))), argnums=(0, 1))
def mapped_list(x, A):
    # a Python list is a pytree of its items: each iteration gets [x[i], A[i]]
    return np.sum(pb.map(lambda ab: ab[0] * np.sin(ab[1]), [x, A]) ** 2)


@case(lambda: (_rng(51).normal(size=(3, 2)),))
def matrix_out_inplace(A):
    def outer(r):
        m = np.outer(r, r)
        m[0, 1] = m[0, 1] * r[0]   # an in-place update of an array made inside the lambda
        return np.sin(m)

    return pb.map(outer, A)


def _repeat(x, n):
    if n == 0:
        return x
    return _repeat(pb.map(lambda a: np.sin(a) + 0.5 * a, x), n - 1)


@case(lambda: (_rng(52).normal(size=4),))
def map_in_recursion(x):
    return np.sum(_repeat(x, 3) ** 2)


@case(lambda: (_rng(32).normal(size=(2, 3, 4)),))
def map_over_3d(T):
    return np.sum(pb.map(lambda M: np.sum(np.tanh(M) * M[0]), T))


def _h(a):
    return np.sin(a) * a * a


@case(lambda: (_rng(33).normal(size=4),))
def map_of_grad(x):
    return np.sum(pb.map(pb.grad(_h), x) * x)


@case(lambda: (_rng(34).normal(size=(5, 3)), _rng(35).normal(size=3)), argnums=(0, 1), order2=True)
def vmap_in_axes_none(X, w):
    return np.sum(pb.vmap(_glob_row, in_axes=(0, None))(X, w) ** 2)


@case(lambda: (_rng(36).normal(size=(3, 5)), _rng(37).normal(size=3)), argnums=(0, 1))
def vmap_in_axes_1(X, w):
    return np.sum(pb.vmap(_glob_row, in_axes=(1, None))(X, w))


@case(lambda: (_rng(38).normal(size=(4, 3)), _rng(39).normal(size=(3, 4))), argnums=(0, 1))
def vmap_in_axes_tuple(X, Y):
    return pb.vmap(lambda r, c: r * np.sum(c * c), in_axes=(0, 1))(X, Y)


@case(lambda: (_rng(40).normal(size=(4, 3)),))
def vmap_out_axes_1(X):
    return pb.vmap(lambda r: np.sin(r) * r[0], out_axes=1)(X)


@case(lambda: (_rng(41).normal(size=(4, 3)), _rng(42).normal(size=3)), argnums=(0, 1))
def vmap_tuple_out(X, w):
    s, v = pb.vmap(lambda r: (np.dot(r, w), r * w))(X)
    return np.sum(s * s) + np.sum(np.sin(v))


def _loss(x, w):
    return np.sum(np.tanh(x * w)) + 0.5 * np.dot(w, w)


@case(lambda: (_rng(43).normal(size=(4, 3)), _rng(44).normal(size=3)), argnums=(0, 1))
def vmap_of_grad(X, w):
    return pb.vmap(pb.grad(_loss, argnums=1), in_axes=(0, None))(X, w)


@case(lambda: (_rng(45).normal(size=(2, 3, 4)),))
def vmap_of_vmap(T):
    return np.sum(pb.vmap(pb.vmap(lambda r: np.sum(np.sin(r) * r)))(T) ** 2)


NAMES = sorted(CASES)


# -- the checks ------------------------------------------------------------------------------------

def _backends():
    return [pytest.param(name, b, id=f"{name}-{b}",
                         marks=pytest.mark.slow if b == "numba" and name not in NUMBA_FAST else ())
            for name in NAMES for b in ("interp", "pysource", "numba")]


def _copy(args):
    out = []
    for a in args:
        leaves, tree = flatten(a)
        out.append(unflatten(tree, [np.copy(x) if isinstance(x, np.ndarray) else x for x in leaves]))
    return tuple(out)


def _close(a, b, rtol=1e-7, atol=1e-9, what=""):
    la, lb = flatten(a)[0], flatten(b)[0]
    assert len(la) == len(lb), (what, a, b)
    for x, y in zip(la, lb):
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        assert x.shape == y.shape, (what, x.shape, y.shape)
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, err_msg=what)


def _vdot(a, b):
    return sum(float(np.sum(np.asarray(x, float) * np.asarray(y, float)))
               for x, y in zip(flatten(a)[0], flatten(b)[0]))


def _direction(args, argnums, rng):
    """A random tangent on the float arguments in argnums, zero elsewhere (ints keep their dtype)."""
    out = []
    for k, a in enumerate(args):
        leaves, tree = flatten(a)
        if k in argnums:
            out.append(unflatten(tree, [rng.normal(size=np.shape(x)) if np.shape(x) else float(rng.normal())
                                        for x in leaves]))
        else:
            out.append(unflatten(tree, [np.zeros_like(x) if np.shape(x) else type(x)(0) for x in leaves]))
    return tuple(out)


def _cotangent(out, rng):
    leaves, tree = flatten(out)
    return unflatten(tree, [rng.normal(size=np.shape(x)) if np.shape(x) else float(rng.normal()) for x in leaves])


def _is_scalar(out):
    leaves, _ = flatten(out)
    return len(leaves) == 1 and np.shape(leaves[0]) == ()


def _reverse(fn, args, argnums, u, backend):
    """Cotangents of the arguments in argnums: pb.grad for a scalar output (u is 1.0), pb.vjp otherwise."""
    if isinstance(u, float) and u == 1.0:
        return pb.grad(fn, argnums=argnums, backend=backend)(*_copy(args))
    cts = pb.vjp(fn, *_copy(args), backend=backend)[1](u)
    return tuple(cts[k] for k in argnums)


@pytest.mark.parametrize("name", NAMES)
def test_case_stages_a_map_and_its_reference_does_not(name):
    """The comparison is between two different programs: a `Map` and its unrolled loop."""
    fn, make, _, _ = CASES[name]
    assert "map [" in print_prog(stage(fn, make()).prog), name
    if name not in PLAIN_REF:
        assert "map [" not in print_prog(stage(unrolled(fn), make()).prog), name


@pytest.mark.parametrize("name,backend", _backends())
def test_value(name, backend):
    fn, make, _, _ = CASES[name]
    args = make()
    want = unrolled(fn)(*_copy(args))
    _close(pb.jit(fn, backend=backend)(*_copy(args)), want, what=f"{name} on {backend}")
    if not name.startswith("empty"):   # eager pb.map over nothing cannot infer a shape (an error)
        _close(fn(*_copy(args)), want, what=f"{name}: eager pb.map")  # outside staged code too


@pytest.mark.parametrize("name,backend", _backends())
def test_reverse(name, backend):
    fn, make, argnums, _ = CASES[name]
    args = make()
    rng = _rng(100)
    out = unrolled(fn)(*_copy(args))
    u = 1.0 if _is_scalar(out) else _cotangent(out, rng)
    got = _reverse(fn, args, argnums, u, backend)
    if name not in PLAIN_REF:
        want = _reverse(unrolled(fn), args, argnums, u, "interp")
        _close(got, want, rtol=1e-7, atol=1e-9, what=f"{name}: reverse mode on {backend} vs the unrolled loop")
    v = _direction(args, argnums, rng)
    fd = numerical_jvp(unrolled(fn), _copy(args), v)
    lhs = _vdot(got, tuple(v[k] for k in argnums))
    rhs = _vdot(u, fd)
    assert abs(lhs - rhs) <= 1e-6 * (1.0 + abs(rhs)), (name, backend, lhs, rhs)


@pytest.mark.parametrize("name,backend", _backends())
def test_forward(name, backend):
    fn, make, argnums, _ = CASES[name]
    args = make()
    rng = _rng(200)
    v = _direction(args, argnums, rng)
    out, tan = pb.jvp(fn, _copy(args), v, backend=backend)
    ref = unrolled(fn)
    _close(out, ref(*_copy(args)), what=f"{name}: jvp primal on {backend}")
    _close(tan, numerical_jvp(ref, _copy(args), v), rtol=1e-5, atol=1e-6,
           what=f"{name}: jvp tangent on {backend} vs central differences")
    if name not in PLAIN_REF:
        _, tan_ref = pb.jvp(ref, _copy(args), v, backend="interp")
        _close(tan, tan_ref, what=f"{name}: jvp tangent on {backend} vs the unrolled loop's")
    u = _cotangent(out, rng)
    vk = tuple(v[k] for k in argnums)
    if _is_scalar(out):
        lhs = u * _vdot(_reverse(fn, args, argnums, 1.0, backend), vk)
    else:
        lhs = _vdot(_reverse(fn, args, argnums, u, backend), vk)
    rhs = _vdot(u, tan)
    assert abs(lhs - rhs) <= 1e-9 * (1.0 + abs(rhs)), (name, backend, "<vjp(u), v> != <u, jvp(v)>", lhs, rhs)


ORDER2 = [n for n in NAMES if CASES[n][3]]


@pytest.mark.parametrize("backend", ["interp", pytest.param("pysource", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", ORDER2)
def test_second_order(name, backend):
    fn, make, argnums, _ = CASES[name]
    args = make()
    k = argnums[0]
    h = pb.hessian(fn, argnums=k, backend=backend)(*_copy(args))
    _close(h, pb.hessian(unrolled(fn), argnums=k, backend="interp")(*_copy(args)),
           what=f"{name}: hessian vs the unrolled loop's")
    # grad of grad along a direction, against central differences of the gradient
    rng = _rng(300)
    v = _direction(args, (k,), rng)
    g = pb.grad(fn, argnums=k, backend=backend)
    fd = numerical_jvp(g, _copy(args), v, 1e-5)
    _close(np.tensordot(h, v[k], axes=np.ndim(v[k])) if np.ndim(v[k]) else h * v[k], fd, rtol=1e-5, atol=1e-6,
           what=f"{name}: hessian-vector product vs differences of pb.grad")
