"""Reports on a function's derivative: its readable source, its derived IR
and what its return sweep stores and recomputes.

Contract:
- `derivative_source(fun, *args, mode=, argnums=, checkpoint=)`: the pysource
  text of `fun`'s vjp (mode "rev") or jvp (mode "fwd") for these arguments,
  with respect to the arguments `argnums` (None: every float argument).
- `derived_prog(prog, mode, cp)`: the derivative program of a staged program,
  pruned to what its entry uses (the CLI's ``--ir``).
- `memory_report(fun, *args, checkpoint=, backend=)` -> `MemoryReport`: peak
  and final store bytes of one gradient evaluation and, on the interpreter,
  the recompute factor.
- Public functions are API boundaries (`boundary._api`): they raise only
  located `PullbackError`s. They stage, so they import the frontend and the
  passes when called; importing this module imports neither.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import checkpointing
from .boundary import _api, _check_callable
from .errors import PullbackError, short_repr
from .pytree import flatten


@_api
def derivative_source(fun, *args, mode: str = "rev", argnums=None, checkpoint="store") -> str:
    """The readable Python source of `fun`'s derivative for these arguments.

    mode="rev" shows the vjp (forward sweep, then the return sweep with
    provenance comments); mode="fwd" shows the jvp (tangent statements next to
    primal ones). `argnums` (an int or a tuple, None: every float argument)
    selects the arguments differentiated, as `pb.grad` does: the others get
    zero adjoints (or tangents) and what depends on them alone is not varied.
    """
    from .backends.pysource import emit_prog
    from .frontend import stage

    _check_callable(fun, "derivative_source")
    if mode not in ("rev", "fwd"):
        raise PullbackError(f"mode must be 'rev' or 'fwd', got {short_repr(mode)}",
                            hint="mode='rev' shows the vjp, mode='fwd' the jvp")
    cp = checkpointing.parse(checkpoint, "derivative_source")
    st = stage(fun, args)
    active = None if argnums is None else _active(st, argnums, fun)
    return emit_prog(derived_prog(st.prog, mode, cp, active))


def _active(st, argnums, fun) -> tuple:
    """One flag per float parameter of the staged entry: is it (a leaf of) an
    argument in `argnums`?"""
    nums = (argnums,) if isinstance(argnums, int) and not isinstance(argnums, bool) else argnums
    if not isinstance(nums, (tuple, list)) or not all(isinstance(n, int) and not isinstance(n, bool) for n in nums):
        raise PullbackError(f"derivative_source: argnums must be an int or a tuple of ints, got {short_repr(argnums)}",
                            hint="argnums=0 differentiates with respect to the first argument")
    ranges, start = [], 0
    for c in st.in_tree.children:
        ranges.append((start, start + c.num_leaves))
        start += c.num_leaves
    wanted = set()
    for n in nums:
        if not -len(ranges) <= n < len(ranges):
            raise PullbackError(f"derivative_source: argnums={n} but {getattr(fun, '__name__', 'the function')} "
                                f"got {len(ranges)} arguments", hint="argnums are positions of the arguments passed")
        wanted.update(range(*ranges[n]))
    params = st.prog.func(st.prog.entry).params
    return tuple(i in wanted for i, p in enumerate(params) if p.type.is_float)


def derived_prog(prog, mode: str, cp=None, active=None):
    """The derivative program (`mode` "rev": the vjp, "fwd": the jvp) of a staged
    program, pruned to what its entry uses, as `derivative_source` and the CLI's
    ``--ir`` show it: custom functions (note [custom-rules]) call their rules.
    `active`: one flag per float parameter of the entry (None: all), as the
    passes take it (note [entry-activity])."""
    from .ir.traverse import prune_prog
    from .passes.jvp import jvp_prog
    from .passes.vjp import vjp_prog
    from .passes.vjp.custom import opaque

    base = opaque(prog)  # custom functions: their rules are called, their bodies not read
    out, name = vjp_prog(base, checkpoint=cp, active=active) if mode == "rev" else jvp_prog(base, active=active)
    real = {f.name: f for f in prog.funcs}
    return prune_prog(out.with_funcs([real.get(f.name, f) for f in out.funcs], entry=name))


@dataclass
class MemoryReport:
    """What the return sweep held and recomputed, in one gradient evaluation:

    - `peak_bytes`: the peak of bytes in stores (saved loop values, undo logs,
      the residuals split-mode calls keep, and checkpointed loops' snapshots);
    - `recompute_factor`: the work of the user's statements the gradient
      executes (its forward sweep and every re-execution, not adjoint code),
      divided by the primal's own work, both by the primitives' cost rules;
    - `schedule`: the checkpoint strategy used."""

    peak_bytes: int
    final_bytes: int
    recompute_factor: float | None = 1.0
    schedule: str = '"store"'

    def __str__(self):
        rf = "None" if self.recompute_factor is None else f"{self.recompute_factor:.2f}"
        return f"MemoryReport(peak_bytes={self.peak_bytes}, recompute_factor={rf}, schedule={self.schedule})"


@_api
def memory_report(fun, *args, checkpoint="store", backend: str = "interp") -> MemoryReport:
    """Run `fun`'s reverse pass (a vjp with an all-ones cotangent) under the
    `checkpoint` strategy and report the bytes its stores held. On the
    interpreter (the default) it also counts the work (`recompute_factor`); on
    `backend="numba"` a metered build counts store bytes only (fast enough for
    long runs: t = 10**6 loop iterations, determinants of order hundreds), and
    `recompute_factor` is None."""
    from .api import _Transformed
    from .backends.interp import Meter, OpCount, run
    from .frontend import stage

    _check_callable(fun, "memory_report")
    cp = checkpointing.parse(checkpoint, "memory_report")
    if backend not in ("interp", "numba"):
        raise PullbackError(f"memory_report: backend={short_repr(backend)} is not supported",
                            hint='use backend="interp" (bytes and work) or backend="numba" (bytes)')
    st = stage(_Transformed(lambda ctx, f, a: _ones_vjp(ctx, f, a, cp), fun, backend, "vjp"), args)
    meter = Meter()
    leaves, _ = flatten(tuple(args))
    if backend == "numba":
        from .backends import numba_backend

        numba_backend.run(st.prog, *leaves, meter=meter)
        return MemoryReport(meter.peak, meter.live, None, repr(cp))
    ops = OpCount()
    run(st.prog, *leaves, meter=meter, ops=ops)
    primal, pops = stage(fun, args), OpCount()
    run(primal.prog, *leaves, ops=pops)
    factor = ops.primal_work / pops.primal_work if pops.primal_work else 1.0
    return MemoryReport(meter.peak, meter.live, factor, repr(cp))


def _ones_vjp(ctx, fun, args, cp=None):
    from . import transforms
    from .ir.core import Const

    out, vfn = transforms.vjp(ctx, fun, args, cp)
    atoms, tree = ctx.to_atoms(out)
    ones = [ctx.builder.emit("full", Const(1.0, a.type.with_shape(())), shape=tuple(a.type.shape), name="ones")
            for a in atoms]
    return vfn.__pullback_stage__(ctx, (ctx.from_atoms(ones, tree),), {})
