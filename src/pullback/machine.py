"""The slides' interface to a run as a step machine: a step counter and
interrupt/resume capsules (issue 11, note [loop-checkpointing]).

Contract: for a function `f` pullback can stage and arguments `args`,

- `primops(f, *args) -> int`: the number of steps the run of `f(*args)` takes
  on its step machine (`passes.cps`: one step runs one basic block, so a
  loop iteration or a call is at least one step);
- `interrupt(f, *args, steps=l) -> Capsule`: run `l` steps (or to the end,
  if sooner) and return the machine state as a `Capsule`;
- `resume(capsule)`: continue that run to its end and return `f`'s result.
  A capsule can be resumed any number of times (its stores are copied first).

The machine runs on the interpreter or pysource (`backend=`). This is the
mechanism the whole-program checkpointing builds on; `pb.grad(f,
checkpoint=pb.Bisection())` uses the same machine inside compiled derivative
code, a capsule being a snapshot of the loop state there.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import PullbackError, short_repr

_BACKENDS = ("interp", "pysource")


@dataclass
class Capsule:
    """A machine state mid-run: `steps` taken so far, `done` once the entry
    returned. Opaque otherwise; pass it to `resume`."""

    steps: int
    done: bool
    _state: tuple
    _machine: object
    _out_tree: object
    _backend: str

    def __repr__(self):
        return f"Capsule(steps={self.steps}, done={self.done})"


def _machine(f, args):
    from .frontend import stage
    from .passes.cps import cps_machine

    st = stage(f, tuple(args))
    return cps_machine(st.prog), st.out_tree


def _run(func, backend, *vals):
    from .ir.core import Prog

    prog = Prog((func,), func.name)
    if backend == "interp":
        from .backends.interp import run
    else:
        from .backends.pysource import run
    return run(prog, *vals)


def _check(backend, what):
    if backend not in _BACKENDS:
        raise PullbackError(f"{what}: backend={short_repr(backend)} is not supported",
                            hint='use backend="interp" or backend="pysource"')


def _counting(m, limit: bool):
    """The machine's loop with a step counter; with `limit`, it also stops after
    `limit` steps (an extra i64 parameter) and returns the whole state."""
    from .ir.builder import Builder
    from .ir.core import Const
    from .ir.names import NameSupply
    from .ir.traverse import all_names
    from .ir.types import I64

    b = Builder(NameSupply(all_names(m.init) | all_names(m.step) | {v.name for v in m.state}
                           | {p.name for p in m.params}))
    lim = b.fresh("limit", I64) if limit else None
    b.stmts.extend(m.init.stmts)
    return _loop(b, m, list(m.init.result), lim, Const(0, I64), list(m.params) + ([lim] if limit else []))


def _loop(b, m, init, lim, steps0, params):
    """``while go: state = step(state); steps += 1`` as a function of `params`,
    returning the final state and the step count."""
    from .ir.core import Const, Func
    from .ir.traverse import rename_body
    from .ir.types import BOOL, I64
    from .passes.cps import RUNNING

    lb = b.child()
    ps = [lb.fresh(v.name, v.type) for v in m.state]
    n = lb.fresh("steps", I64)
    go = lb.fresh("go", BOOL)
    body = rename_body(m.step, b.supply, dict(zip(m.state, ps)))
    lb.stmts.extend(body.stmts)
    n2 = lb.emit("add", n, Const(1, I64), name="steps")
    nxt = list(body.result)
    go2 = nxt[RUNNING] if lim is None else lb.emit("and", nxt[RUNNING], lb.emit("lt", n2, lim, name="t"),
                                                    name="go")
    go0 = init[RUNNING] if lim is None else b.emit("and", init[RUNNING], b.emit("lt", steps0, lim, name="t"),
                                                   name="go")
    outs = b.while_loop(ps + [n, go], init + [steps0, go0], go, lb.body(nxt + [n2, go2]))
    res = list(outs[:len(ps)]) + [outs[len(ps)]]
    return Func("machine", tuple(params), b.body(res), tuple(v.type for v in m.state) + (I64,), m.loc)


def _api(fn):
    from .api import _api as boundary

    return boundary(fn)


@_api
def primops(f, *args, backend: str = "interp") -> int:
    """The number of steps `f(*args)` takes on its step machine."""
    _check(backend, "primops")
    m, _ = _machine(f, args)
    out = _run(_counting(m, False), backend, *_leaves(args))
    return int(out[-1])


@_api
def interrupt(f, *args, steps: int, backend: str = "interp") -> Capsule:
    """Run `f(*args)` for `steps` steps (or to its end) and return the state."""
    _check(backend, "interrupt")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise PullbackError(f"interrupt: steps={short_repr(steps)} must be an int >= 0",
                            hint="steps counts machine steps; pb.machine.primops(f, *args) gives the total")
    from .passes.cps import RUNNING

    m, out_tree = _machine(f, args)
    out = _run(_counting(m, True), backend, *_leaves(args), steps)
    state = tuple(out[:-1])
    return Capsule(int(out[-1]), not bool(state[RUNNING]), state, m, out_tree, backend)


@_api
def resume(capsule: Capsule):
    """Continue the run of `capsule` to its end; `f`'s result."""
    from .ir.builder import Builder
    from .ir.core import Const
    from .ir.names import NameSupply
    from .ir.prims.stores import StoreValue, _copy_impl
    from .ir.traverse import all_names
    from .ir.types import I64
    from .pytree import unflatten

    if not isinstance(capsule, Capsule):
        raise PullbackError(f"resume needs a Capsule from pb.machine.interrupt, got {short_repr(capsule)}")
    m = capsule._machine
    b = Builder(NameSupply(all_names(m.step) | {v.name for v in m.state}))
    ps = [b.fresh(v.name, v.type) for v in m.state]
    fn = _loop(b, m, ps, None, Const(0, I64), ps)
    # the state's stores are copied: the run mutates them, the capsule stays resumable
    state = [_copy_impl(v) if isinstance(v, StoreValue) else v for v in capsule._state]
    out = _run(fn, capsule._backend, *state)
    from .api import _to_output
    from .ir.types import np_dtype

    leaves = [_to_output(out[k], np_dtype(m.ret_types[j].dtype)) for j, k in enumerate(m.results)]
    return unflatten(capsule._out_tree, leaves)


def _leaves(args):
    from .pytree import flatten

    leaves, _ = flatten(tuple(args))
    return leaves
