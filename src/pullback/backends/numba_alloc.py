"""New arrays in numba code without numba's array-constructor functions (note
[compile-time], "Allocations in place").

Contract:
- `_pb_empty(shape, dtype)`, `_pb_zeros(shape, dtype)`, `_pb_full(shape,
  value)`: numba intrinsics, the values of ``np.empty(shape, dtype=dtype)``,
  ``np.zeros(shape, dtype=dtype)`` and ``np.full(shape, value)`` (a C-ordered
  array; `shape` an integer or a tuple of integers; `dtype` a NumPy scalar
  type such as ``np.float64`` or an array's ``.dtype``; `value` a number or a
  boolean, whose numba type is the array's dtype, as numba's ``np.full``
  without a dtype). A negative extent raises ValueError, as numba's. Each is
  lowered in the caller's code (numba's allocation, then ``memset`` or a
  store loop), where numba compiles ``np.empty``, ``np.zeros`` and
  ``np.full`` as separate functions, 0.05-0.15 s each per signature and
  process, and links each into every caller.
- `rewrite(src) -> str`: the generated module `src` with every call
  ``np.empty(S)``, ``np.empty(S, dtype=D)`` (or ``D`` positional),
  ``np.zeros(...)`` likewise and ``np.full(S, V)`` in its code (not in
  comments or strings) printed as the intrinsic's call, where ``D`` is
  ``np.NAME`` or ``NAME.dtype``; any other form (another dtype, keywords, a
  call not closed on its line) is left as numba's. Lines without such a call
  are not tokenised. Pure text to text; adds nothing else (the caller
  imports the names in `NAMES` when the result uses them).
- `_pb_concat(pieces, axis)`: numba intrinsic, ``np.concatenate(pieces,
  axis=axis)`` for a tuple of one or more arrays of one rank and one dtype
  (the result's) and a literal integer `axis` in range; the caller guarantees
  that the extents agree off `axis` (the IR's static shapes). A C-ordered new
  array, written in one pass in C order: a loop nest over the axes before
  `axis`, inside it one loop nest per piece over the rest (note
  [compile-time], "Concatenations in place"): numba's `np.concatenate` is a
  generic function compiled per signature and process and inlined by LLVM at
  every site, about 10 ms of LLVM work per site in det's modules.
- `concatenated(context, builder, arrty, tys, values, axis)`: the codegen of
  `_pb_concat` for other intrinsics (`numba_views._pb_reshape` copies a
  non-C operand with it): a new reference to the C-ordered result.
- Only code printed by the numba dialect uses the intrinsics; the cache key
  is the generated source, so a change to their code generation needs a new
  `numba_backend._VERSION`.
"""
from __future__ import annotations

import io
import re
import tokenize

from numba.core import cgutils, types
from numba.core.typing.npydecl import parse_dtype, parse_shape
from numba.extending import intrinsic
from numba.np.arrayobj import _empty_nd_impl, _parse_shape

from .numba_views import fields, items

NAMES = ("_pb_empty", "_pb_zeros", "_pb_full")
IMPORT = "from pullback.backends.numba_alloc import " + ", ".join(NAMES)
CONCAT_IMPORT = "from pullback.backends.numba_alloc import _pb_concat"


def _new(context, builder, arrty, shape_ty, shape):
    return _empty_nd_impl(context, builder, arrty, _parse_shape(context, builder, shape_ty, shape))


def _typed(shape, dtype):
    ndim, dt = parse_shape(shape), parse_dtype(dtype)
    if ndim is None or dt is None:
        return None
    return types.Array(dt, ndim, "C")


def _constructor(zero: bool):
    """The intrinsic `_pb_zeros` (`zero`) or `_pb_empty`."""
    def typer(typingctx, shape, dtype):
        arrty = _typed(shape, dtype)
        if arrty is None:
            return None

        def codegen(context, builder, sig, args):
            ary = _new(context, builder, arrty, sig.args[0], args[0])
            if zero:
                cgutils.memset(builder, ary.data, builder.mul(ary.itemsize, ary.nitems), 0)
            return ary._getvalue()

        return arrty(shape, dtype), codegen

    typer.__name__ = "_pb_zeros" if zero else "_pb_empty"
    return intrinsic(typer)


_pb_empty = _constructor(False)
_pb_zeros = _constructor(True)


@intrinsic
def _pb_full(typingctx, shape, value):
    ndim = parse_shape(shape)
    if ndim is None or not isinstance(value, (types.Number, types.Boolean)):
        return None
    dt = value.literal_type if isinstance(value, types.Literal) else value
    arrty = types.Array(dt, ndim, "C")

    def codegen(context, builder, sig, args):
        ary = _new(context, builder, arrty, sig.args[0], args[0])
        v = context.cast(builder, args[1], sig.args[1], dt)
        v = context.get_value_as_data(builder, dt, v)
        with cgutils.for_range(builder, ary.nitems) as loop:
            builder.store(v, builder.gep(ary.data, [loop.index]))
        return ary._getvalue()

    return arrty(shape, value), codegen


def concatenated(context, builder, arrty, tys, values, ax):
    """Codegen: a new C-ordered array `arrty` (a new reference; numba's array proxy) holding the
    arrays `values` (numba types `tys`, one rank and dtype) end to end along axis `ax`, written
    in one pass in C order (`_pb_concat`; one piece: a C-ordered copy)."""
    intp = context.get_value_type(types.intp)
    pieces = [fields(context, builder, t, v, "data", "shape", "strides") for t, v in zip(tys, values)]
    shapes = [items(builder, p[1]) for p in pieces]
    shape = list(shapes[0])
    for s in shapes[1:]:
        shape[ax] = builder.add(shape[ax], s[ax])
    out = _empty_nd_impl(context, builder, arrty, shape)
    strides = cgutils.unpack_tuple(builder, out.strides)
    with cgutils.loop_nest(builder, shape[:ax], intp) as lead:   # one pass over the result
        offset = context.get_constant(types.intp, 0)
        for t, (data, _, strides_a), s in zip(tys, pieces, shapes):
            with cgutils.loop_nest(builder, s[ax:], intp) as rest:
                idx = list(lead) + list(rest)
                src = cgutils.get_item_pointer2(context, builder, data, s, items(builder, strides_a), t.layout, idx)
                idx[ax] = builder.add(idx[ax], offset)
                dst = cgutils.get_item_pointer2(context, builder, out.data, shape, strides, "C", idx)
                builder.store(builder.load(src), dst)
            offset = builder.add(offset, s[ax])
    return out


@intrinsic
def _pb_concat(typingctx, pieces, axis):
    if not (isinstance(pieces, types.BaseTuple) and len(pieces) >= 1 and isinstance(axis, types.IntegerLiteral)):
        return None
    first = pieces[0]
    if not (isinstance(first, types.Array) and 0 <= axis.literal_value < first.ndim
            and all(isinstance(t, types.Array) and t.ndim == first.ndim and t.dtype == first.dtype
                    for t in pieces)):
        return None
    ax, arrty = axis.literal_value, types.Array(first.dtype, first.ndim, "C")

    def codegen(context, builder, sig, args):
        return concatenated(context, builder, arrty, sig.args[0], cgutils.unpack_tuple(builder, args[0]),
                            ax)._getvalue()

    return arrty(pieces, axis), codegen


# -- the text rewrite ---------------------------------------------------------

_CALL = re.compile(r"\bnp\.(empty|zeros|full)\(")
_DTYPE = re.compile(r"(np\.[A-Za-z_][A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_]*\.dtype)$")


def _args(toks, i):
    """The top-level arguments of the call whose '(' is `toks[i]`, as lists of
    tokens, and the index of its ')' (None when not closed)."""
    depth, args, cur = 0, [], []
    for j in range(i, len(toks)):
        t = toks[j]
        if t.type == tokenize.OP and t.string in "([{":
            depth += 1
            if depth == 1:
                continue
        elif t.type == tokenize.OP and t.string in ")]}":
            depth -= 1
            if depth == 0:
                if cur:
                    args.append(cur)
                return args, j
        elif t.type == tokenize.OP and t.string == "," and depth == 1:
            args.append(cur)
            cur = []
            continue
        if depth >= 1:
            cur.append(t)
    return args, None


def _text(line, toks):
    return line[toks[0].start[1]:toks[-1].end[1]] if toks else ""


def _form(kind, line, args):
    """The intrinsic's argument text for `np.KIND(args)`, or None to keep it."""
    texts = [_text(line, a) for a in args]
    if kind == "full":
        if len(args) == 2 and not any(t.string == "=" for t in args[1] if t.type == tokenize.OP):
            return f"_pb_full({texts[0]}, {texts[1]})"
        return None
    if len(args) == 1:
        return f"_pb_{kind}({texts[0]}, np.float64)"
    if len(args) == 2:
        dt = args[1]
        if len(dt) >= 2 and dt[0].string == "dtype" and dt[1].string == "=":
            dt = dt[2:]
        d = _text(line, dt)
        if _DTYPE.match(d):
            return f"_pb_{kind}({texts[0]}, {d})"
    return None


def _line(line: str) -> str:
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(line).readline)
                if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                  tokenize.ENDMARKER)]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        toks = None
    if not toks:
        return line
    edits = []   # (start col, end col, text), innermost calls rewritten first
    for i in range(len(toks) - 3):
        a, dot, name, par = toks[i:i + 4]
        if (a.type == tokenize.NAME and a.string == "np" and dot.string == "."
                and name.string in ("empty", "zeros", "full") and par.string == "("
                and (i == 0 or toks[i - 1].string != ".")):
            args, end = _args(toks, i + 3)
            if end is None:
                continue
            new = _form(name.string, line, args)
            if new is not None:
                edits.append((a.start[1], toks[end].end[1], new))
    # outermost calls first; a call nested in a rewritten one is left for the next pass
    out, pos, nested = [], 0, False
    for s, e, new in edits:
        if s < pos:
            nested = True
            continue
        out += [line[pos:s], new]
        pos = e
    res = "".join(out) + line[pos:]
    return _line(res) if nested else res


def rewrite(src: str) -> str:
    """`src` with numba's array constructors printed as the intrinsics (see the
    module's contract)."""
    lines = src.split("\n")
    for k, line in enumerate(lines):
        code = line.split("#", 1)[0] if "'" not in line and '"' not in line else line
        if _CALL.search(code):
            lines[k] = _line(line)
    return "\n".join(lines)
