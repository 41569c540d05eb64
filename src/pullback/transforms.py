"""Staging-time implementations of the transformations (grad, jvp, vjp,
jacobian) on IR, used by `api` both at top level and inside staged code.

Contract: each function takes the frontend's `StagingContext` and staged
argument values, adds the derived IR functions to the program under
construction (memoised per function), emits a call, and returns staged values.
Because derivatives are separate IR functions with their own lexically scoped
tangent/adjoint variables, nested transformations cannot confuse
perturbations (note [nesting] in docs/design.md).
"""
from __future__ import annotations

import functools

from .errors import NonDifferentiableError, PullbackError
from .ir.core import Const, Prog
from .ir.types import I64, TensorType
from .passes.jvp import jvp_prog
from .passes.vjp import vjp_prog
from .passes.vjp.custom import opaque
from .pytree import TreeDef, unflatten

def _derive(ctx, kind: str, fname: str, checkpoint=None, active=None) -> str:
    """The derived function (`kind` "vjp" or "jvp") of `fname`; reverse mode under the
    `checkpoint` strategy (a `pullback.checkpointing.Strategy`, default "store");
    forward mode with tangent parameters for the float parameters `active` marks
    (None: all; `passes.jvp.jvp_prog`); reverse mode with adjoints for those only
    (the others' are zeros; `passes.vjp.vjp_prog`)."""
    from .checkpointing import DEFAULT

    memo = ctx.memo.setdefault("derived", {})
    checkpoint = checkpoint or DEFAULT
    if active is not None and all(active):
        active = None
    key = (kind, fname, checkpoint if kind == "vjp" else None, active)
    if key not in memo:
        # the passes call custom functions' rules and never read their bodies (note [custom-rules])
        prog = opaque(Prog(tuple(ctx.funcs()), fname))
        if kind == "vjp":
            new, name = vjp_prog(prog, fname, fresh=ctx.fresh_func_name, checkpoint=checkpoint, active=active)
        else:
            new, name = jvp_prog(prog, fname, fresh=ctx.fresh_func_name, active=active)
        have = {f.name for f in ctx.funcs()}
        for f in new.funcs:
            if f.name not in have:
                ctx.add_func(f)
        memo[key] = name
    return memo[key]


def _where(ctx, fun=None):
    """The user's location for an error: the staged call site, else `fun`'s definition."""
    loc = getattr(ctx, "loc", None)
    if loc is None and fun is not None:
        code = getattr(getattr(fun, "fun", fun), "__code__", None)
        if code is not None:
            from .ir.core import SrcLoc

            loc = SrcLoc(code.co_filename, code.co_firstlineno, f"def {code.co_name}(...)")
    return loc


def stage_fn(ctx, fun, args):
    """Stage `fun` on the staged pytree `args`; returns (fname, leaves, in_tree, out_tree, ret_types).

    `in_tree` describes `args`. A function value that reads traced values of the code being
    staged (a nested def or lambda, note [closures]) is closure-converted: `fname` takes those
    values as extra parameters, and `leaves` (the call's arguments) has them after the
    `in_tree.num_leaves` leaves of `args`; the derived functions differentiate with respect to
    them too, and each transformation ignores (zero tangents) or drops (cotangents) them."""
    fun, caps = ctx.capture(fun)
    leaves, in_tree = ctx.to_atoms(tuple(args))
    if caps is None:
        fname, out_tree, ret_types = ctx.stage_function(fun, [a.type for a in leaves], in_tree)
        return fname, leaves, in_tree, out_tree, list(ret_types)
    cleaves, full_tree = ctx.to_atoms(tuple(args) + (tuple(caps),))
    fname, out_tree, ret_types = ctx.stage_function(fun, [a.type for a in cleaves], full_tree)
    return fname, cleaves, in_tree, out_tree, list(ret_types)


def _arg_leaf_ranges(in_tree: TreeDef):
    """For the args tuple, the [start, stop) leaf range of each argument."""
    ranges, start = [], 0
    for c in in_tree.children:
        ranges.append((start, start + c.num_leaves))
        start += c.num_leaves
    return ranges


def _float_positions(leaves):
    return [i for i, a in enumerate(leaves) if a.type.is_float]


def _check_diff_args(ctx, leaves, in_tree, argnums, what, fun=None):
    ranges = _arg_leaf_ranges(in_tree)
    for n in argnums:
        if not -len(ranges) <= n < len(ranges):
            raise PullbackError(f"{what}: argnums={n} but the function got {len(ranges)} arguments",
                                loc=_where(ctx, fun),
                                hint=f"argnums are positions of the arguments passed (0 to {len(ranges) - 1})"
                                if ranges else "a function of no arguments has nothing to differentiate")
    if len({n % len(ranges) for n in argnums}) != len(argnums):
        raise PullbackError(f"{what}: argnums={tuple(argnums)} names one argument twice", loc=_where(ctx, fun),
                            hint="list each argument position once")
    for n in argnums:
        for i in range(*ranges[n]):
            t = leaves[i].type
            if not t.is_float:
                raise NonDifferentiableError(
                    f"{what}: argument {n} has {t} values; derivatives are only defined for float arguments",
                    loc=_where(ctx, fun),
                    hint="pass floats (e.g. np.asarray(x, dtype=float)), or leave this argument out of argnums")
    return ranges


def grad(ctx, fun, args, argnums, with_value=False, has_aux=False, checkpoint=None):
    fname, leaves, in_tree, out_tree, ret_types = stage_fn(ctx, fun, args)
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    ranges = _check_diff_args(ctx, leaves, in_tree, nums, "grad", fun)
    if out_tree.kind != "leaf" or ret_types[0].shape != () or not ret_types[0].is_float:
        raise PullbackError(
            f"grad needs a function that returns one float scalar; this one returns {_describe(out_tree, ret_types)}",
            loc=_where(ctx, fun), hint="reduce the output (e.g. np.sum) or use pb.jacobian / pb.vjp")
    fl = _float_positions(leaves)
    wanted = {i for n in nums for i in range(*ranges[n])}
    vname = _derive(ctx, "vjp", fname, checkpoint, active=tuple(i in wanted for i in fl))
    one = Const(1.0, TensorType(ret_types[0].dtype))
    outs = ctx.apply(vname, list(leaves) + [one], ret_types + [leaves[i].type for i in fl])
    value = outs[0]
    gpos = {i: outs[1 + j] for j, i in enumerate(fl)}
    grads = []
    for n in nums:
        lo, hi = ranges[n]
        sub = in_tree.children[n]
        grads.append(ctx.from_atoms([gpos[i] for i in range(lo, hi)], sub))
    g = grads[0] if single else tuple(grads)
    if with_value:
        return ctx.from_atoms([value], out_tree), g
    return g


def _describe(tree, types):
    if tree.kind == "leaf":
        return str(types[0])
    return f"a {tree.kind} of {len(types)} values"


def jvp(ctx, fun, primals, tangents):
    primals, tangents = tuple(primals), tuple(tangents)
    if len(tangents) == len(primals):
        # None for an argument: no tangent (integers, booleans) or a zero one (floats)
        tangents = tuple(_zero_tangent(ctx, p) if t is None else t for p, t in zip(primals, tangents))
    fname, leaves, in_tree, out_tree, ret_types = stage_fn(ctx, fun, primals)
    tleaves, t_tree = ctx.to_atoms(tangents)
    if t_tree != in_tree:
        raise PullbackError(f"jvp: tangents have structure {t_tree}, primals have {in_tree}", loc=_where(ctx),
                            hint="pass one tangent per primal, with the same structure")
    targs, active = [], []
    for p, t in zip(leaves, tleaves + [None] * (len(leaves) - len(tleaves))):
        if p.type.is_float:
            active.append(t is not None)
        if p.type.is_float and t is None:  # a captured value (note [closures]): not perturbed here
            continue
        elif p.type.is_float:
            if tuple(t.type.shape) != tuple(p.type.shape):
                raise PullbackError(f"jvp: tangent shape {t.type.shape} differs from primal shape {p.type.shape}",
                                    loc=_where(ctx), hint="each tangent has the shape of its primal")
            if t.type.dtype != p.type.dtype:
                t = ctx.builder.emit("cast", t, dtype=p.type.dtype, name="tangent")
            targs.append(t)
    jname = _derive(ctx, "jvp", fname, active=tuple(active))
    fo = [i for i, t in enumerate(ret_types) if t.is_float]
    outs = ctx.apply(jname, list(leaves) + targs, ret_types + [ret_types[i] for i in fo])
    prim = list(outs[:len(ret_types)])
    tans = {i: outs[len(ret_types) + j] for j, i in enumerate(fo)}
    tout = [tans[i] if i in tans else ctx.builder.zeros(ret_types[i].with_dtype("f64")) for i in range(len(ret_types))]
    return ctx.from_atoms(prim, out_tree), ctx.from_atoms(tout, out_tree)


def _zero_tangent(ctx, primal):
    """The tangent of an argument given as None: the value itself for integer and
    boolean leaves (their tangents are not used), zeros for float ones."""
    from .pytree import flatten, unflatten

    leaves, tree = flatten(primal)
    out = []
    for leaf in leaves:
        atoms, _ = ctx.to_atoms(leaf)
        t = atoms[0].type
        out.append(leaf if not t.is_float else ctx.from_atoms([ctx.builder.zeros(t)], TreeDef("leaf")))
    return unflatten(tree, out)


class VjpFn:
    """The pullback returned by `pb.vjp` inside staged code: `vjp_fn(ct) -> tuple of cotangents`.

    The cotangent of an integer or boolean primal is None (JAX returns float0 zeros; NumPy
    has no float0). `ct` may hold None for integer or boolean outputs (JAX wants float0
    there) and for float outputs, where it means a zero cotangent (note [custom-rules])."""

    def __init__(self, vname, leaves, in_tree, out_tree, ret_types, traced=None):
        from .frontend.values import Traced

        self.vname, self.leaves, self.in_tree = vname, leaves, in_tree
        self.out_tree, self.ret_types = out_tree, ret_types
        self.traced = list(traced) if traced is not None else [Traced(a) for a in leaves]

    def __pullback_traced__(self):
        """The staged values it holds (the primals): a closure that calls it and is staged as a
        function of its own captures them (note [closures])."""
        return self.traced

    def __pullback_with_traced__(self, vals):
        """The same pullback at the primals `vals` (`__pullback_traced__`, substituted)."""
        return VjpFn(self.vname, [v.atom for v in vals], self.in_tree, self.out_tree, self.ret_types, vals)

    def __pullback_stage__(self, ctx, args, kwargs):
        from .frontend.values import Traced

        if len(args) != 1:
            raise PullbackError("vjp_fn takes one cotangent (with the structure of the output)", loc=_where(ctx),
                                hint="call vjp_fn(ct) with one value shaped like the output")
        from .custom import leaves_for
        from .frontend.values import to_atom

        # None: no cotangent (integer/boolean outputs) or a zero one (float outputs), as JAX's float0
        leaves = leaves_for(args[0], self.out_tree, allow_none=True)
        if leaves is None:
            _, ct_tree = ctx.to_atoms(args[0])
            raise PullbackError(f"vjp_fn: cotangent structure {ct_tree} differs from output structure {self.out_tree}",
                                loc=_where(ctx), hint="the cotangent has the structure of the output "
                                                      "(None for an integer or boolean output, or for a zero)")
        ct_args = []
        for x, t in zip(leaves, self.ret_types):
            if t.is_float:
                if x is None:
                    ct_args.append(ctx.builder.zeros(t, name="cotangent"))
                    continue
                c = to_atom(ctx.builder, x)
                if tuple(c.type.shape) != tuple(t.shape):
                    raise PullbackError(f"vjp_fn: cotangent shape {c.type.shape} differs from output shape {t.shape}",
                                        loc=_where(ctx), hint="the cotangent has the shape of the output")
                if c.type.dtype != t.dtype:
                    c = ctx.builder.emit("cast", c, dtype=t.dtype, name="cotangent")
                ct_args.append(c)
        fl = _float_positions(self.leaves)
        outs = ctx.apply(self.vname, list(self.leaves) + ct_args,
                         list(self.ret_types) + [self.leaves[i].type for i in fl])
        g = {i: outs[len(self.ret_types) + j] for j, i in enumerate(fl)}
        # None for integer and boolean primals (JAX gives float0 zeros); captured values' are dropped
        res = [Traced(g[i]) if i in g else None for i in range(self.in_tree.num_leaves)]
        return unflatten(self.in_tree, res)  # a tuple, one cotangent per primal


def vjp(ctx, fun, primals, checkpoint=None):
    fname, leaves, in_tree, out_tree, ret_types = stage_fn(ctx, fun, tuple(primals))
    outs = ctx.apply(fname, list(leaves), ret_types)
    vname = _derive(ctx, "vjp", fname, checkpoint)
    return ctx.from_atoms(list(outs), out_tree), VjpFn(vname, leaves, in_tree, out_tree, ret_types)


def jacobian(ctx, fun, args, argnums, mode, checkpoint=None):
    """Jacobian of an array-valued function w.r.t. one array argument: shape out.shape + x.shape.

    Built as an IR loop over basis vectors: one vjp per output element
    (mode="rev") or one jvp per input element (mode="fwd"). A tuple of argnums
    gives a tuple of Jacobians, one per argument, as JAX does.
    """
    if isinstance(argnums, tuple):
        return tuple(jacobian(ctx, fun, args, a, mode, checkpoint) for a in argnums)
    if not isinstance(argnums, int):
        raise PullbackError("jacobian takes one argnum (an int)", loc=_where(ctx),
                            hint="call pb.jacobian once per argument")
    fname, leaves, in_tree, out_tree, ret_types = stage_fn(ctx, fun, args)
    ranges = _check_diff_args(ctx, leaves, in_tree, (argnums,), "jacobian", fun)
    lo, hi = ranges[argnums]
    if hi - lo != 1 or out_tree.kind != "leaf" or not ret_types[0].is_float:
        raise PullbackError("jacobian supports one array (or scalar) argument and one float array (or scalar) output",
                            loc=_where(ctx), hint="flatten pytrees into one array first")
    xt, yt = leaves[lo].type, ret_types[0]
    b = ctx.builder
    fl = _float_positions(leaves)
    jt = TensorType(yt.dtype, tuple(yt.shape) + tuple(xt.shape))
    nrow, ncol = yt.size, xt.size
    J = b.zeros(TensorType(yt.dtype, (nrow, ncol) if mode == "rev" else (ncol, nrow)), name="jac")
    if mode == "rev":
        dname = _derive(ctx, "vjp", fname, checkpoint)
    else:   # only x's tangent is nonzero: the other arguments get no tangent parameter
        dname = _derive(ctx, "jvp", fname, active=tuple(k == lo for k in fl))
    row = functools.partial(_jacobian_row, dname, leaves, ret_types, fl, lo, mode)
    if J.type.shape[0] <= UNROLL_JACOBIAN and _stmts_below(ctx, dname) <= UNROLL_JACOBIAN_STMTS:
        for k in range(J.type.shape[0]):   # a few basis vectors: static, so they fold (note [small-jacobians])
            J = row(b, J, Const(k, I64))
        Jf = J
    else:
        sb = b.child()
        i = sb.fresh("i", I64)
        Jp = sb.fresh("jac", J.type)
        (Jf,) = b.for_loop([Jp], [J], i, Const(J.type.shape[0], I64), sb.body([row(sb, Jp, i)]), names=["jac"])
    if mode == "fwd":
        Jf = b.transpose(Jf, perm=(1, 0), name="jac")
    Jf = b.reshape(Jf, shape=jt.shape, name="jac")
    return ctx.from_atoms([Jf], TreeDef("leaf"))


# Jacobians with at most this many basis vectors, whose row function (with its callees)
# has at most this many statements, are staged one row at a time, not as a loop: note
# [small-jacobians]
UNROLL_JACOBIAN = 4
UNROLL_JACOBIAN_STMTS = 150


def _stmts_below(ctx, name: str) -> int:
    """The statements of function `name` and of every function it calls, nested ones counted."""
    from .ir.traverse import iter_lets, reachable_funcs

    funcs = tuple(ctx.funcs())
    live = reachable_funcs(Prog(funcs, name))
    return sum(1 for f in funcs if f.name in live for _ in iter_lets(f.body))


def _jacobian_row(dname, leaves, ret_types, fl, lo, mode, sb, Jp, i):
    """`Jp` with row `i` set: the vjp `dname` of basis vector i of the output (mode
    "rev") or the jvp `dname` of basis vector i of argument `lo` (mode "fwd")."""
    xt, yt = leaves[lo].type, ret_types[0]
    nrow, ncol = yt.size, xt.size
    if mode == "rev":
        e = sb.index_update(sb.zeros(TensorType(yt.dtype, (nrow,))), Const(1.0, TensorType(yt.dtype)), i,
                            spec=(("d",),), mode="set", name="basis")
        e = sb.reshape(e, shape=tuple(yt.shape), name="basis")
        outs = _apply(sb, dname, list(leaves) + [e], ret_types + [leaves[k].type for k in fl])
        row = outs[len(ret_types) + fl.index(lo)]
    else:
        e = sb.index_update(sb.zeros(TensorType(xt.dtype, (ncol,))), Const(1.0, TensorType(xt.dtype)), i,
                            spec=(("d",),), mode="set", name="basis")
        targs = [sb.reshape(e, shape=tuple(xt.shape), name="basis")]
        fo = [k for k, t in enumerate(ret_types) if t.is_float]
        outs = _apply(sb, dname, list(leaves) + targs, ret_types + [ret_types[k] for k in fo])
        row = outs[len(ret_types)]
    row = sb.reshape(row, shape=(Jp.type.shape[1],), name="row")
    return sb.index_update(Jp, row, i, spec=(("d",),), mode="set", name="jac")


def _apply(b, name, args, ret_types):
    from .ir.core import Apply

    outs = tuple(b.fresh("r", t) for t in ret_types)
    b.let(outs, Apply(name, tuple(args)))
    return outs
