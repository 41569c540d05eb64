"""The per-primitive table: every row of `pullback.ir.prims.TABLE` has every
rule, and each rule is checked on examples from its input domain.

`CASES` maps each primitive to example applications (argument specs, params,
tolerances). A primitive added to the table without an entry here fails
`test_every_primitive_is_covered`.

Each example becomes a one-statement IR function built with `Builder` (float
arguments are parameters; index arguments are i64 parameters or constants)
and is checked with:

- the type rule vs the impl (shape and dtype of every output), and the impl
  vs a NumPy reference;
- the cost rule (a non-negative int);
- the jvp (through `jvp_prog`) against central differences, and the vjp
  (through `vjp_prog`) with the dot-product test ``<u, J v> == <J^T u, v>``,
  on the interp backend and on pysource;
- zero_deriv rows with float outputs: central differences are zero.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest
import scipy.special as sp

from pullback.ir.builder import Builder
from pullback.ir.core import Const, Func, Prog, Var
from pullback.ir.prims import TABLE
from pullback.ir.types import StoreType, TensorType, dtype_of_np
from pullback.testing import check_prog, numerical_jvp


# -- argument specs ----------------------------------------------------------------

@dataclass(frozen=True)
class Arg:
    dtype: str
    shape: tuple = ()
    lo: float = -2.0
    hi: float = 2.0
    value: Any = None  # fixed value (ints, constants)
    const: bool = False  # an IR Const instead of a parameter

    def make(self, rng):
        if self.value is not None:
            v = np.asarray(self.value, dtype={"f64": np.float64, "i64": np.int64, "bool": np.bool_}[self.dtype])
        elif self.dtype == "bool":
            v = rng.random(self.shape) < 0.5
        elif self.dtype == "i64":
            v = rng.integers(-3, 4, self.shape)
        else:
            v = rng.uniform(self.lo, self.hi, self.shape)
            if self.dtype == "f32":
                v = v.astype(np.float32)
        if v.ndim == 0:
            return {"f64": float, "f32": np.float32, "i64": int, "bool": bool}[self.dtype](v[()])
        return v


def F(*shape, lo=-2.0, hi=2.0):
    """A float parameter drawn uniformly from [lo, hi]."""
    return Arg("f64", tuple(shape), lo, hi)


def P(*shape):
    """A positive float parameter (log, sqrt, pow base, denominators)."""
    return Arg("f64", tuple(shape), 0.5, 2.0)


def I(value, const=False):
    """An integer argument with a fixed value: an i64 parameter, or a Const."""
    return Arg("i64", np.shape(value), value=value, const=const)


def B(*shape):
    return Arg("bool", tuple(shape))


@dataclass
class Case:
    args: tuple = ()
    params: dict = field(default_factory=dict)
    rtol: float = 1e-6
    atol: float = 1e-8
    eps: float = 1e-6
    ref: Callable | None = None  # NumPy reference on the argument values (params as keywords)
    build: Callable | None = None  # custom program builder: rng -> (Prog, args)


# a well-conditioned matrix for the linear-algebra rows
WELL = np.array([[2.0, 0.3, -0.5], [0.1, 1.5, 0.4], [-0.3, 0.2, 1.8]])
SPD = WELL @ WELL.T + np.eye(3)
SYM = np.array([[1.0, 0.3, -0.2], [0.3, 2.5, 0.4], [-0.2, 0.4, 4.0]])  # well-separated eigenvalues

# -- the table -----------------------------------------------------------------------

UNARY_SHAPES = [(), (3,), (2, 3)]
BINARY_SHAPES = [((), ()), ((3,), (3,)), ((3, 1), (4,)), ((), (2, 3)), ((2, 3), ())]


def unary_cases(mk=F, **kw):
    return [Case((mk(*s),), **kw) for s in UNARY_SHAPES]


def binary_cases(mk1=F, mk2=F, **kw):
    return [Case((mk1(*s1), mk2(*s2)), **kw) for s1, s2 in BINARY_SHAPES]


def _np_index(spec, idx):
    it = iter(idx)
    return tuple(int(next(it)) if s[0] == "d" else slice(s[1], s[2], s[3]) for s in spec)


def _ref_index(x, *idx, spec):
    return np.asarray(x)[_np_index(spec, idx)]


def _ref_update(x, v, *idx, spec, mode):
    r = np.array(x, dtype=np.float64, copy=True)
    if mode == "set":
        r[_np_index(spec, idx)] = v
    else:
        r[_np_index(spec, idx)] += v
    return r


def _ref_take_add(x, i, v, axis):
    r = np.array(x, dtype=np.float64, copy=True)
    np.add.at(r, (slice(None),) * axis + (np.asarray(i),), v)
    return r


def _idx_cases(mode=None):
    """(x, v-shape, spec, index args) for index / index_update."""
    d = ("d",)
    return [
        ((4, 5), (5,), (d,), (I(2),)),
        ((4, 5), (), (d, d), (I(1), I(3, const=True))),
        ((4, 5), (3, 1), (("s", 1, 4, 1),), ()),
        ((4, 5), (2,), (("s", 0, 4, 2), d), (I(4, const=True),)),
        ((4, 5), (4, 2), (("s", None, None, -1), ("s", 1, 5, 2)), ()),
        ((2, 3, 4), (4,), (d, ("s", 0, 3, 2)), (I(1),)),
        ((2, 3, 4), (), (d, d, d), (I(1), I(2), I(3))),
    ]


def _index_cases():
    return [Case((F(*xs), *ix), {"spec": spec}, ref=_ref_index) for xs, _, spec, ix in _idx_cases()]


def _update_cases():
    return [Case((F(*xs), F(*vs), *ix), {"spec": spec, "mode": mode}, ref=_ref_update)
            for mode in ("set", "add") for xs, vs, spec, ix in _idx_cases()]


def _build_stores(rng, shape=()):
    """x, y -> push x, push y into a new store, pop both: returns (popped y, popped x, x*y)."""
    b = Builder()
    t = TensorType("f64", shape)
    x, y = Var("x", t), Var("y", t)
    b.supply.reserve("x")
    b.supply.reserve("y")
    s0 = b.emit("store_new", elem=t, name="s")
    s1 = b.store_push(s0, x, name="s")
    s2 = b.store_push(s1, y, name="s")
    s3, a = b.emit_multi("store_pop", s2, name="p")
    s4, c = b.emit_multi("store_pop", s3, name="q")
    prod = b.mul(a, c, name="prod")
    res = (a, c, prod)
    f = Func("f", (x, y), b.body(res), tuple(r.type for r in res))
    return Prog((f,), "f"), [Arg("f64", shape).make(rng), Arg("f64", shape).make(rng)]


def _build_store_zeros_like(rng):
    """x -> the top of store_zeros_like(store with x) (a zero) plus the popped x."""
    b = Builder()
    t = TensorType("f64", (3,))
    x = Var("x", t)
    b.supply.reserve("x")
    s0 = b.emit("store_new", elem=t, name="s")
    s1 = b.store_push(s0, x, name="s")
    z = b.store_zeros_like(s1, name="z")
    _, zv = b.emit_multi("store_pop", z, name="zv")
    _, xv = b.emit_multi("store_pop", s1, name="xv")
    out = b.add(zv, b.mul(xv, xv))
    f = Func("f", (x,), b.body((zv, out)), (t, t))
    return Prog((f,), "f"), [Arg("f64", (3,)).make(rng)]


def _build_store_copy(rng):
    """x, y -> push both, copy the store, pop both from the copy (a store is used
    linearly, so the original is not used again: the copy's independence from the
    original is tested in tests/checkpoint/test_whole_program.py)."""
    b = Builder()
    t = TensorType("f64", (3,))
    x, y = Var("x", t), Var("y", t)
    b.supply.reserve("x")
    b.supply.reserve("y")
    s0 = b.emit("store_new", elem=t, name="s")
    s1 = b.store_push(b.store_push(s0, x, name="s"), y, name="s")
    c = b.emit("store_copy", s1, name="c")
    c1, cy = b.emit_multi("store_pop", c, name="cy")
    _, cx = b.emit_multi("store_pop", c1, name="cx")
    out = b.add(b.mul(cx, cy), cy)
    f = Func("f", (x, y), b.body((cx, out)), (t, t))
    return Prog((f,), "f"), [Arg("f64", (3,)).make(rng), Arg("f64", (3,)).make(rng)]


STORE_CASES = [Case(build=_build_stores), Case(build=lambda rng: _build_stores(rng, (3,)))]

CASES: dict[str, list[Case]] = {
    # unary elementwise
    "neg": unary_cases() + [Case((I([1, -2, 3]),))],
    "sin": unary_cases(),
    "cos": unary_cases(),
    "tan": unary_cases(lambda *s: F(*s, lo=-1.0, hi=1.0)),
    "exp": unary_cases(),
    "log": unary_cases(P),
    "log1p": unary_cases(lambda *s: F(*s, lo=-0.5, hi=2.0)),
    "expm1": unary_cases(),
    "sqrt": unary_cases(P),
    "tanh": unary_cases(),
    "logistic": unary_cases(ref=lambda x: 1.0 / (1.0 + np.exp(-np.asarray(x)))),
    "abs": unary_cases() + [Case((I([1, -2, 3]),))],
    "sign": unary_cases(),
    "floor": unary_cases(),
    "ceil": unary_cases(),
    "round": unary_cases(),
    "isnan": unary_cases(),
    "not": [Case((B(),)), Case((B(3),))],
    # binary elementwise, with broadcasting
    "add": binary_cases() + [Case((F(3), I(2, const=True)))],
    "sub": binary_cases(),
    "mul": binary_cases() + [Case((F(3), I([1, 2, 3])))],
    "smul": binary_cases() + [Case((F(3), F(1)))],
    "smask": [Case((F(3), F(3), F(3))), Case((F(2, 3), F(3), F(2, 1))), Case((F(), F(), F())),
              Case((F(3), Arg("f64", (3,), value=[0.0, 1.0, np.inf], const=True),
                    Arg("f64", (3,), value=[np.inf, 0.0, 2.0], const=True)),
                   ref=lambda y, a, d: np.array([0.0, y[1], y[2]]))],   # only 0 * inf is rescued
    "div": binary_cases(F, P),
    "pow": binary_cases(P, F, rtol=1e-5) + [Case((F(3), I(3, const=True))), Case((P(2, 3), F(3)))],
    "maximum": binary_cases(),
    "minimum": binary_cases(),
    "mod": binary_cases(F, P),
    "floordiv": binary_cases(F, P),
    "atan2": binary_cases(),
    **{op: [Case((F(3), F(3))), Case((F(3, 1), F(4))), Case((F(), F(2)))]
       for op in ("lt", "le", "gt", "ge", "eq", "ne")},
    **{op: [Case((B(3), B(3))), Case((B(3, 1), B(4))), Case((B(), B()))] for op in ("and", "or", "xor")},
    "where": [Case((B(3), F(3), F(3))), Case((B(3, 1), F(4), F(3, 4))), Case((B(), F(2), F())),
              Case((B(2, 3), F(), F(3)))],
    "cast": [Case((F(3),), {"dtype": "f32"}, rtol=1e-3, atol=1e-4, eps=1e-3), Case((F(3),), {"dtype": "f64"}),
             Case((F(2, 3),), {"dtype": "i64"}), Case((I([1, 2]),), {"dtype": "f64"}),
             Case((B(3),), {"dtype": "f64"})],
    # reductions
    **{op: [Case((mk(3, 4),), {"axes": ax}) for ax in ((), (0,), (1,), (0, 1))]
       + [Case((mk(2, 3, 4),), {"axes": (0, 2)}), Case((mk(5),), {"axes": (0,)})]
       for op, mk in (("sum", F), ("prod", P), ("max", F), ("min", F))},
    "argmax": [Case((F(3, 4),), {"axis": 0}), Case((F(3, 4),), {"axis": 1}), Case((F(5),), {"axis": 0})],
    "argmin": [Case((F(3, 4),), {"axis": 0}), Case((F(3, 4),), {"axis": 1}), Case((F(5),), {"axis": 0})],
    "argsort": [Case((F(3, 4),)), Case((F(5),)), Case((I([3, 1, 3, 0]),))],
    "unique_indices": [Case((I([3, 0, -1, 7, 4, -2]),), {"n": 5}, ref=lambda i, n: i),   # pb.scatter's check
                       Case((I([]),), {"n": 0}, ref=lambda i, n: i)],
    "cumsum": [Case((F(5),), ref=lambda x: np.cumsum(x)), Case((I([3, -1, 2]),), ref=lambda x: np.cumsum(x))],
    "rcumsum": [Case((F(5),), ref=lambda x: np.cumsum(x[::-1])[::-1]),
                Case((F(1),), ref=lambda x: x)],
    "revolve_split": [Case((I(t), I(s)), ref=lambda t, s, m=m: np.int64(m))
                      for t, s, m in [(1, 3, 0), (2, 1, 1), (9, 1, 8), (10, 3, 4), (7, 2, 4), (20, 3, 10)]],
    "stop_gradient": [Case((F(3),)), Case((F(),))],
    # shapes
    "reshape": [Case((F(2, 3),), {"shape": (3, 2)}), Case((F(6),), {"shape": (2, 1, 3)}),
                Case((F(),), {"shape": (1,)}), Case((F(1, 1),), {"shape": ()})],
    "transpose": [Case((F(2, 3),), {"perm": (1, 0)}), Case((F(2, 3, 4),), {"perm": (2, 0, 1)})],
    "broadcast_to": [Case((F(3, 1),), {"shape": (2, 3, 4)}), Case((F(),), {"shape": (3,)}),
                     Case((F(4),), {"shape": (2, 4)})],
    "concatenate": [Case((F(2, 3), F(4, 3)), {"axis": 0}), Case((F(2, 3), F(2, 1), F(2, 2)), {"axis": 1}),
                    Case((F(3), F(2)), {"axis": 0}), Case((F(3), I([1, 2])), {"axis": 0})],
    "iota": [Case((), {"n": 5, "dtype": "i64"}, ref=lambda n, dtype: np.arange(n)),
             Case((), {"n": 4, "dtype": "f64"}, ref=lambda n, dtype: np.arange(n, dtype=float))],
    "full": [Case((F(),), {"shape": (2, 3)}, ref=lambda v, shape: np.full(shape, v)),
             Case((F(),), {"shape": ()}), Case((I(2),), {"shape": (3,)})],
    # indexing
    "index": _index_cases(),
    "index_update": _update_cases(),
    "take": [Case((F(5, 3), I([0, 2, 2, 4])), {"axis": 0}),
             Case((F(5, 3), I([[1, 0], [2, 2]])), {"axis": 1}),
             Case((F(5), I(3)), {"axis": 0}),
             Case((F(5), I([4, 4, 0], const=True)), {"axis": 0})],
    "take_add": [Case((F(5, 3), I([0, 2, 2, 4]), F(4, 3)), {"axis": 0}, ref=_ref_take_add),
                 Case((F(5, 3), I([1, 1]), F(5, 2)), {"axis": 1}, ref=_ref_take_add),
                 Case((F(5), I([[0, 1], [1, 4]]), F(2, 2)), {"axis": 0}, ref=_ref_take_add)],
    # linear algebra: all four rank combinations
    "matmul": [Case((F(3, 4), F(4, 2))), Case((F(4), F(4, 2))), Case((F(3, 4), F(4))), Case((F(4), F(4))),
               Case((F(2, 3, 4), F(4, 2))), Case((F(3, 4), F(2, 4, 2))), Case((F(2, 1, 3, 4), F(3, 4, 2))),
               Case((F(4), F(2, 4, 3))), Case((F(2, 3, 4), F(4)))],
    "cholesky": [Case((Arg("f64", (3, 3), value=SPD),)),
                 Case((Arg("f64", (2, 3, 3), value=np.stack([SPD, 2 * SPD])),))],
    "qr": [Case((F(4, 3),), {"complete": False}), Case((F(3, 5),), {"complete": False}),
           Case((F(2, 4, 3),), {"complete": False})],
    "eigh": [Case((Arg("f64", (3, 3), value=SYM),)), Case((Arg("f64", (2, 3, 3), value=np.stack([SYM, -SYM])),))],
    "svd": [Case((F(4, 3),), {"full": False}), Case((F(3, 4),), {"full": False}),
            Case((F(2, 3, 3),), {"full": False})],
    "pinv": [Case((F(4, 3),), {"rcond": 1e-15}), Case((F(2, 3, 4),), {"rcond": 1e-15})],
    "solve": [Case((Arg("f64", (3, 3), value=WELL), F(3))), Case((Arg("f64", (3, 3), value=WELL), F(3, 2))),
              Case((Arg("f64", (2, 3, 3), value=np.stack([WELL, WELL.T])), F(3, 2)))],
    "slogdet": [Case((Arg("f64", (3, 3), value=WELL),)), Case((Arg("f64", (3, 3), value=-WELL),)),
                Case((Arg("f64", (2, 3, 3), value=np.stack([WELL, -WELL])),))],
    # special functions (ir/prims/special.py); references are SciPy's
    "erf": unary_cases(ref=lambda x: sp.erf(x)),
    "erfc": unary_cases(ref=lambda x: sp.erfc(x)),
    "erfinv": unary_cases(lambda *s: F(*s, lo=-0.8, hi=0.8), ref=lambda x: sp.erfinv(x)),
    "gammaln": unary_cases(lambda *s: F(*s, lo=0.3, hi=4.0), ref=lambda x: sp.gammaln(x))
    + [Case((F(3, lo=-2.9, hi=-2.1),), ref=lambda x: sp.gammaln(x))],
    "gamma": unary_cases(lambda *s: F(*s, lo=0.3, hi=3.0), ref=lambda x: sp.gamma(x)),
    "log_ndtr": unary_cases(lambda *s: F(*s, lo=-5.0, hi=3.0), ref=lambda x: sp.log_ndtr(x)),
    "polygamma": [Case((F(*s, lo=0.5, hi=3.0),), {"n": n}, rtol=1e-5, ref=lambda x, n: sp.polygamma(n, x))
                  for n, s in ((0, ()), (0, (2, 3)), (1, (3,)), (2, (3,)), (3, ()))],
    # stores: whole programs (push two values, pop them)
    "store_new": STORE_CASES,
    "store_push": STORE_CASES,
    "store_pop": STORE_CASES,
    "store_zeros_like": [Case(build=_build_store_zeros_like)],
    "store_copy": [Case(build=_build_store_copy)],
}

# NumPy references for the elementwise rows (guards against mis-wired impls).
_UNARY_REF = {"neg": np.negative, "sin": np.sin, "cos": np.cos, "tan": np.tan, "exp": np.exp, "log": np.log,
              "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt, "tanh": np.tanh, "abs": np.abs,
              "sign": np.sign, "floor": np.floor, "ceil": np.ceil, "round": np.round, "isnan": np.isnan,
              "not": np.logical_not}
def _smul_ref(x, y):
    with np.errstate(all="ignore"):
        r = np.multiply(x, y)
        return np.where(np.isnan(r) & ((np.asarray(x) == 0) | (np.asarray(y) == 0)), 0.0, r)


def _smask_ref(y, a, d):
    with np.errstate(all="ignore"):
        return np.where(np.isnan(np.multiply(a, d)) & ((np.asarray(a) == 0) | (np.asarray(d) == 0)), 0.0, y)


_BINARY_REF = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "smul": _smul_ref, "div": np.true_divide, "pow": np.power,
               "maximum": np.maximum, "minimum": np.minimum, "mod": np.mod, "floordiv": np.floor_divide,
               "atan2": np.arctan2, "lt": np.less, "le": np.less_equal, "gt": np.greater,
               "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal, "and": np.logical_and,
               "or": np.logical_or, "xor": np.logical_xor}
_OTHER_REF = {
    "where": np.where,
    "smask": _smask_ref,
    "cast": lambda x, dtype: np.asarray(x).astype({"f64": np.float64, "f32": np.float32, "i64": np.int64}[dtype]),
    "sum": lambda x, axes: np.sum(x, axis=axes),
    "prod": lambda x, axes: np.prod(x, axis=axes),
    "max": lambda x, axes: np.max(x, axis=axes) if axes else np.asarray(x),
    "min": lambda x, axes: np.min(x, axis=axes) if axes else np.asarray(x),
    "argmax": lambda x, axis: np.argmax(x, axis=axis),
    "argmin": lambda x, axis: np.argmin(x, axis=axis),
    "argsort": lambda x: np.argsort(x, axis=-1, kind="stable"),
    "stop_gradient": lambda x: x,
    "solve": np.linalg.solve,
    "cholesky": np.linalg.cholesky,
    "qr": lambda a, complete: np.linalg.qr(a, mode="complete" if complete else "reduced")[0],
    "eigh": lambda a: np.linalg.eigh(a)[0],
    "svd": lambda a, full: np.linalg.svd(a, full_matrices=full)[0],
    "pinv": lambda a, rcond: np.linalg.pinv(a, rcond=rcond),
    "slogdet": lambda a: np.linalg.slogdet(a)[0],  # the first result (the sign)
    "reshape": lambda x, shape: np.reshape(x, shape),
    "transpose": lambda x, perm: np.transpose(x, perm),
    "broadcast_to": lambda x, shape: np.broadcast_to(x, shape),
    "concatenate": lambda *xs, axis: np.concatenate(xs, axis=axis),
    "take": lambda x, i, axis: np.take(x, i, axis=axis),
    "matmul": np.matmul,
}

# zero_deriv rows whose outputs are floats: piecewise constant (derivative zero
# wherever it exists), no inputs (iota), or stores that hold no input values.
ZERO_DERIV_FLOAT_OK = {"floor", "ceil", "round", "sign", "floordiv", "iota", "store_new", "store_zeros_like",
                      "stop_gradient"}


def _ref(name, case):
    if case.ref is not None:
        return case.ref
    for table in (_UNARY_REF, _BINARY_REF, _OTHER_REF):
        if name in table:
            return table[name]
    return None


# -- building one-statement programs ---------------------------------------------------

def _seed(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


def build(name, case, rng):
    """(prog, leaf args, const-folded arg values) for `case` applied to primitive `name`."""
    if case.build is not None:
        prog, args = case.build(rng)
        return prog, args, None
    b = Builder()
    params, vals, atoms, all_vals = [], [], [], []
    for k, a in enumerate(case.args):
        v = a.make(rng)
        all_vals.append(v)
        t = TensorType(a.dtype, tuple(np.shape(v)))
        if a.const:
            atoms.append(Const(v, t))
        else:
            p = Var(b.supply.fresh(f"x{k}"), t)
            params.append(p)
            vals.append(v)
            atoms.append(p)
    outs = b.emit_multi(name, *atoms, name="out", **case.params)
    f = Func("f", tuple(params), b.body(outs), tuple(o.type for o in outs))
    return Prog((f,), "f"), vals, all_vals


def _callback_key():
    from pullback.ir.prims import callback
    from pullback.pytree import flatten

    return callback.register(np.sin, flatten(((0.0,), {}))[1], flatten(0.0)[1])


# the callback row (pb.pure_callback) is opaque: no derivative rules to check (tests/test_pure_callback.py)
CASES["callback"] = [Case((F(3),), {"key": _callback_key(), "outs": (TensorType("f64", (3,)),)},
                          ref=lambda x, key, outs: np.sin(x))]
OPAQUE = {"callback"}

ALL_CASES = [(n, i) for n in TABLE.rows for i in range(len(CASES.get(n, ())))]
IDS = [f"{n}-{i}" for n, i in ALL_CASES]
DIFF_CASES = [(n, i) for n, i in ALL_CASES if not TABLE.get(n).zero_deriv and n not in OPAQUE]
DIFF_IDS = [f"{n}-{i}" for n, i in DIFF_CASES]


def _case(name, i):
    case = CASES[name][i]
    rng = np.random.default_rng(_seed(name, i))
    return case, rng


# -- the table is complete -----------------------------------------------------------

def test_every_primitive_is_covered():
    missing = sorted(n for n in TABLE.rows if not CASES.get(n))
    assert not missing, f"primitives without test cases in tests/test_prims.py CASES: {missing}"
    stale = sorted(n for n in CASES if n not in TABLE.rows)
    assert not stale, f"CASES entries for primitives that no longer exist: {stale}"


@pytest.mark.parametrize("name", list(TABLE.rows))
def test_every_primitive_has_every_rule(name):
    row = TABLE.get(name)
    assert row.name == name
    for rule in ("type", "impl", "cost"):
        assert callable(getattr(row, rule)), f"primitive '{name}' has no {rule} rule"
    if row.zero_deriv:
        assert row.jvp is None and row.vjp is None, f"zero_deriv primitive '{name}' should not carry jvp/vjp rules"
    else:
        assert callable(row.jvp), f"primitive '{name}' has no jvp rule (and is not zero_deriv)"
        assert callable(row.vjp), f"primitive '{name}' has no vjp rule (and is not zero_deriv)"


def test_missing_rule_error_names_the_primitive():
    from pullback.errors import MissingRuleError

    with pytest.raises(MissingRuleError, match="floor.*jvp"):
        TABLE.get("floor").rule("jvp")
    with pytest.raises(MissingRuleError, match="no_such_prim"):
        TABLE.get("no_such_prim")


# -- type, impl, cost ---------------------------------------------------------------------

def _outputs(prog, args):
    from pullback.backends.interp import run

    return run(prog, *args)


@pytest.mark.parametrize("name,i", ALL_CASES, ids=IDS)
def test_impl_matches_type_rule_and_numpy(name, i):
    case, rng = _case(name, i)
    prog, args, all_vals = build(name, case, rng)
    func = prog.main
    outs = _outputs(prog, args)
    assert len(outs) == len(func.ret_types)
    for o, t in zip(outs, func.ret_types):
        if isinstance(t, StoreType):
            continue
        assert tuple(np.shape(o)) == tuple(t.shape), f"{name}: impl shape {np.shape(o)} != type rule {t}"
        assert dtype_of_np(np.asarray(o).dtype) == t.dtype, \
            f"{name}: impl dtype {np.asarray(o).dtype} != type rule {t}"
    if case.build is not None:
        return
    row = TABLE.get(name)
    before = [np.copy(v) for v in all_vals]
    direct = row.impl(*all_vals, **case.params)
    for v, w in zip(all_vals, before):
        np.testing.assert_array_equal(v, w, err_msg=f"{name}: impl mutated its argument")
    direct = direct if row.multi else (direct,)
    for a, b in zip(direct, outs):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    ref = _ref(name, case)
    if ref is not None:
        with np.errstate(all="ignore"):
            want = ref(*all_vals, **case.params)
        np.testing.assert_allclose(np.asarray(outs[0], dtype=np.float64), np.asarray(want, dtype=np.float64),
                                   rtol=1e-12, atol=1e-12, err_msg=f"{name}: impl differs from NumPy")


def test_store_programs_pop_in_lifo_order():
    rng = np.random.default_rng(0)
    prog, (x, y) = _build_stores(rng, (3,))
    a, c, prod = _outputs(prog, [x, y])
    np.testing.assert_array_equal(a, y)
    np.testing.assert_array_equal(c, x)
    np.testing.assert_allclose(prod, x * y)
    prog, (x,) = _build_store_zeros_like(rng)
    zv, out = _outputs(prog, [x])
    np.testing.assert_array_equal(zv, np.zeros(3))
    np.testing.assert_allclose(out, x * x)


@pytest.mark.parametrize("name,i", ALL_CASES, ids=IDS)
def test_cost_rule(name, i):
    case, rng = _case(name, i)
    prog, _, _ = build(name, case, rng)
    for st in prog.main.body.stmts:
        row = TABLE.get(st.exp.op)
        cost = row.cost([a.type for a in st.exp.args], [v.type for v in st.pat], **dict(st.exp.params))
        assert isinstance(cost, (int, np.integer)) and not isinstance(cost, bool), \
            f"{row.name}: cost {cost!r} is not an int"
        assert cost >= 0, f"{row.name}: negative cost {cost}"


# -- derivatives ------------------------------------------------------------------------------

def _check(name, i, backend):
    case, rng = _case(name, i)
    prog, args, _ = build(name, case, rng)
    check_prog(prog, args, rtol=case.rtol, atol=case.atol, eps=case.eps, backend=backend,
               rng=np.random.default_rng(_seed(name, i, "dirs")))


@pytest.mark.parametrize("name,i", DIFF_CASES, ids=DIFF_IDS)
def test_jvp_and_vjp(name, i):
    """jvp vs central differences; vjp by the dot-product test (interp backend)."""
    _check(name, i, "interp")


@pytest.mark.parametrize("name,i", DIFF_CASES, ids=DIFF_IDS)
def test_jvp_and_vjp_pysource(name, i):
    """The same derivative programs, run by the pysource backend."""
    _check(name, i, "pysource")


@pytest.mark.parametrize("name,i", [(n, i) for n, i in ALL_CASES if TABLE.get(n).zero_deriv],
                         ids=[f"{n}-{i}" for n, i in ALL_CASES if TABLE.get(n).zero_deriv])
def test_zero_deriv_rows_have_zero_derivative(name, i):
    case, rng = _case(name, i)
    prog, args, _ = build(name, case, rng)
    float_outs = [t for t in prog.main.ret_types if t.is_float]
    if not float_outs:
        return  # non-float outputs: nothing to differentiate
    assert name in ZERO_DERIV_FLOAT_OK, (
        f"zero_deriv primitive '{name}' has float outputs; give it jvp/vjp rules, or add it to "
        f"ZERO_DERIV_FLOAT_OK if its derivative is really zero")
    if not args or case.build is not None:
        return  # no inputs (iota), or a whole store program (checked by test_jvp_and_vjp)
    if name == "stop_gradient":
        return  # its derivative is zero by definition, not by the numbers (tests/frontend/test_stop_gradient.py)
    from pullback.backends.interp import run

    def f(*xs):
        return tuple(o for o, t in zip(run(prog, *xs), prog.main.ret_types) if not isinstance(t, StoreType))

    tangents = [np.ones_like(a, dtype=np.float64) if isinstance(a, (float, np.ndarray))
                and np.issubdtype(np.asarray(a).dtype, np.floating) else a for a in args]
    fd = numerical_jvp(f, args, tangents, 1e-6)
    for d in fd:
        np.testing.assert_array_equal(np.asarray(d), 0.0)
