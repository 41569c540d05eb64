"""The reference interpreter: the definition of the IR's semantics.

Contract: `run(prog, *args, fname=None) -> list` evaluates the entry function
(or `fname`) on leaf values and returns its results. Every other backend is
tested against it. `Meter` tracks the bytes held in stores (saved loop state,
undo logs) so `memory_report` can give the peak; `OpCount` counts the
operations executed (the cheap-gradient tests).

Run-time errors are located at the user's line (`checks`): an index out of
bounds (``-n <= i < n`` is valid, negative indices wrap as in NumPy) raises
`checks.IndexOutOfBoundsError`, integer ``//`` or ``%`` by zero
`checks.IntegerDivisionError`, recursion deeper than the Python stack
`checks.RecursionDepthError`. `run` is safe to call from many threads: the
meter is per thread and the recursion limit is raised with
`runtime.deep_recursion`.
"""
from __future__ import annotations

import numpy as np

from ..errors import PullbackError
from ..ir.core import Apply, Const, ForForm, If, Loop, Map, Prim
from ..ir.prims import TABLE
from ..ir.types import np_dtype
from ..ir.prims import stores as _stores
from . import checks
from .runtime import deep_recursion

_NP_SCALAR = {"f64": np.float64, "f32": np.float32, "i64": np.int64, "bool": np.bool_}


class Meter:
    """Counts live store bytes and remembers the peak."""

    def __init__(self):
        self.live = 0
        self.peak = 0

    def alloc(self, n):
        self.live += n
        if self.live > self.peak:
            self.peak = self.live

    def free(self, n):
        self.live -= n


class OpCount:
    """Counts what a run executes: `work` sums the rows' cost rules (arithmetic
    operations, elements written), `stmts` the statements. The cheap-gradient
    tests compare these between a function and its derivative at two sizes."""

    def __init__(self):
        self.work = 0
        self.stmts = 0
        self.primal_work = 0   # `work` of statements of the user's code (not adjoint code)

    def prim(self, row, e, outs, loc=None) -> None:
        self.stmts += 1
        if row.cost is None:
            return
        w = int(row.cost([a.type for a in e.args], [v.type for v in outs], **dict(e.params)))
        self.work += w
        if loc is not None and loc.role != "adjoint":
            self.primal_work += w


class Interpreter:
    def __init__(self, prog, ops: OpCount | None = None):
        self.prog = prog
        self.funcs = {f.name: f for f in prog.funcs}
        self.ops = ops

    def call(self, fname, args):
        f = self.funcs[fname]
        if len(args) != len(f.params):
            raise PullbackError(f"{fname} takes {len(f.params)} arguments, got {len(args)}")
        env = {p: v for p, v in zip(f.params, args)}
        return self.body(f.body, env)

    def atom(self, a, env):
        if isinstance(a, Const):
            # a scalar constant has its declared dtype (an f32 constant stays f32)
            return a.value if a.type.shape else _NP_SCALAR[a.type.dtype](a.value)
        return env[a]

    def body(self, body, env):
        for st in body.stmts:
            e = st.exp
            if self.ops is not None:
                if isinstance(e, Prim):
                    self.ops.prim(TABLE.get(e.op), e, st.pat, st.loc)
                else:
                    self.ops.stmts += 1
            try:
                vals = self.exp(e, env, len(st.pat))
            except (IndexError, ZeroDivisionError) as err:
                if not isinstance(e, Prim) or isinstance(err, PullbackError):
                    raise
                located = checks.from_exception(err, st.loc, e.op)
                if located is None:
                    raise
                raise located from None
            except RecursionError as err:
                # remember the innermost call's line; the error is made once the stack has unwound
                if isinstance(e, Apply) and getattr(err, "pullback_loc", None) is None:
                    err.pullback_loc = st.loc
                raise
            for v, x in zip(st.pat, vals):
                env[v] = x
        return [self.atom(a, env) for a in body.result]

    def exp(self, e, env, nout):
        if isinstance(e, Prim):
            row = TABLE.get(e.op)
            r = row.impl(*[self.atom(a, env) for a in e.args], **dict(e.params))
            return r if row.multi else (r,)
        if isinstance(e, If):
            c = bool(self.atom(e.cond, env))
            return self.body(e.then if c else e.else_, dict(env))
        if isinstance(e, Loop):
            vals = [self.atom(a, env) for a in e.init]
            inner = dict(env)
            if isinstance(e.form, ForForm):
                n = int(self.atom(e.form.bound, env))
                for i in range(n):
                    inner.update(zip(e.params, vals))
                    inner[e.form.index] = i
                    vals = self.body(e.body, inner)
            else:
                ci = e.params.index(e.form.cond)
                while bool(vals[ci]):
                    inner.update(zip(e.params, vals))
                    vals = self.body(e.body, inner)
            return vals
        if isinstance(e, Apply):
            return self.call(e.func, [self.atom(a, env) for a in e.args])
        if isinstance(e, Map):
            return self.map(e, env)
        raise TypeError(f"unknown expression {type(e).__name__}")


    def map(self, e: Map, env):
        """The reference semantics of `map`: iterations in order, accumulators threaded."""
        n = int(e.width.value)
        arrays = [self.atom(a, env) for a in e.arrays]
        accs = [self.atom(a, env) for a in e.accs]
        k = e.n_out
        outs = [np.empty((n,) + r.type.shape, dtype=np_dtype(r.type.dtype)) for r in e.lam.body.result[:k]]
        inner = dict(env)
        for i in range(n):
            inner[e.index] = i
            inner.update(zip(e.elems, (x[i] for x in arrays)))
            inner.update(zip(e.acc_params, accs))
            vals = self.body(e.lam.body, inner)
            for o, v in zip(outs, vals[:k]):
                o[i] = v
            accs = vals[k:]
        return outs + list(accs)


def run(prog, *args, fname=None, meter: Meter | None = None, ops: OpCount | None = None) -> list:
    """`meter` counts store bytes, `ops` the operations executed."""
    try:
        with _stores.metering(meter), deep_recursion():
            return Interpreter(prog, ops).call(fname or prog.entry, list(args))
    except RecursionError as err:
        raise checks.recursion_error(getattr(err, "pullback_loc", None)) from None
