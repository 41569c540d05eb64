"""numba forms of the dense linear-algebra primitives (see `libcalls` for the
contract): `matmul` (BLAS), `solve`, `slogdet`, `cholesky`, `qr`, `eigh`, `svd`
and `pinv` (LAPACK through numba's `np.linalg`).

numba's `np.linalg` takes one contiguous 2-D matrix (and few keyword
arguments), so:

- a 2-D operand is passed through `np.ascontiguousarray` (transposes are views),
  except `matmul`'s: a 2-D float product is `numba_operands._pb_matmul` (or
  `_pb_matmul_out` into a store's slot), other products go through
  `numba_operands._pb_blas` (C- and F-contiguous operands as they are, note
  [blas-operands]);
- a stack ``(..., m, n)`` goes through a generated helper that broadcasts the
  operands to the result's batch shape, flattens the batch and calls the 2-D
  function once per matrix (one helper per shape signature, so every shape in
  it is a literal);
- `matmul` of a stack by a single matrix is one 2-D BLAS call on the stack
  folded into rows; other stacks loop in a helper calling 2-D ``@``, except
  small ones whose operands have the result's batch axes: those call
  `numba_bmm._pb_bmm`, one overload for every module of the process (note
  [small-matmul], "Shared batched products");
- `matmul` of at most `SMALL_MATMUL` multiply-adds, or of integers, or of mixed
  dtypes below that size, is loops instead, and so is a 2-D float product whose
  inner axis has at most `SMALL_K` entries (`numba_narrow._pb_mmk`, note
  [small-matmul]);
- complete QR (m > n), which numba's `qr` lacks, is the reduced QR of A padded
  with zero columns to a square matrix: the extra Householder reflections are
  identities, so Q and R are LAPACK's complete factors, as NumPy's.

pysource prints NumPy's own functions (they take stacks natively).
"""
from __future__ import annotations

import zlib

import numpy as np

from . import register


def _nd(dtype):
    return {"f64": "np.float64", "f32": "np.float32", "i64": "np.int64", "bool": "np.bool_"}[dtype]


def _tup(shape) -> str:
    shape = tuple(int(d) for d in shape)
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _c(text):
    return f"np.ascontiguousarray({text})"


def _blas(dialect, text):
    """A 2-D matmul operand: copied only when numba cannot pass it to BLAS as it is
    (`backends.numba_operands`, note [blas-operands])."""
    dialect.blas_operands = True
    return f"_pb_blas({text})"


def _mm(dialect, name):
    """`name`, one of `numba_operands`' product intrinsics, imported by the module."""
    dialect.helper("_pb_matmul_import", "from pullback.backends.numba_operands import _pb_matmul, _pb_matmul_out")
    return name


def _helper(dialect, stem, body):
    """Add a module-level njit helper whose name is unique to its text."""
    name = f"_pb_{stem}_{zlib.crc32(body.encode()):08x}"
    return dialect.helper(name, f"{dialect.deco}\ndef {name}" + body)


def _batched(dialect, stem, call, args, pat, batch):
    """A helper mapping the 2-D `call` (argument texts -> expression text) over the
    flattened `batch` of the outputs `pat`; argument i, (atom, core axes), is
    broadcast to the batch first."""
    nb = int(np.prod(batch, dtype=np.int64))
    lines = [f"({', '.join(f'a{i}' for i in range(len(args)))}):"]
    for i, (atom, core) in enumerate(args):
        lines.append(f"    f{i} = np.ascontiguousarray(np.broadcast_to(a{i}, {_tup(batch + core)}))"
                     f".reshape({_tup((nb,) + core)})")
    for j, v in enumerate(pat):
        core = tuple(v.type.shape[len(batch):])
        lines.append(f"    o{j} = np.empty({_tup((nb,) + core)}, dtype={_nd(v.type.dtype)})")
    lines.append(f"    for i in range({nb}):")
    res = ", ".join(f"r{j}" for j in range(len(pat)))
    lines.append(f"        {res} = {call([f'f{i}[i]' for i in range(len(args))])}")
    for j in range(len(pat)):
        lines.append(f"        o{j}[i] = r{j}")
    lines.append(f"    return {', '.join(f'o{j}.reshape({_tup(v.type.shape)})' for j, v in enumerate(pat))}")
    return _helper(dialect, stem, "\n".join(lines))


def _lapack(stem, call, core_rank, operand_cores=None):
    """The numba form of a decomposition: `call` on 2-D operands, a batched helper on
    stacks. `core_rank`: how many trailing axes of the first output belong to one matrix."""
    def numba(dialect, fe, e, pat):
        if all(a.type.ndim <= 2 for a in e.args):
            return call([_c(fe.a(a)) for a in e.args], e.p, dialect)
        cores = operand_cores(e) if operand_cores else [tuple(a.type.shape[-2:]) for a in e.args]
        out0 = tuple(pat[0].type.shape)
        batch = out0[:len(out0) - core_rank]
        h = _batched(dialect, stem, lambda xs: call(xs, e.p, dialect), list(zip(e.args, cores)), pat, batch)
        return f"{h}({', '.join(fe.a(a) for a in e.args)})"
    return numba


def _py(name, **kw):
    def py(fe, e, pat):
        extra = "".join(f", {k}={v(e.p)!r}" for k, v in kw.items())
        return f"np.linalg.{name}({', '.join(fe.a(a) for a in e.args)}{extra})"
    return py


# -- solve, slogdet, cholesky, eigh, pinv, svd, qr ----------------------------------------------

def _solve_cores(e):
    a, b = e.args
    return [tuple(a.type.shape[-2:]), tuple(b.type.shape[-2:])]


register("solve", _lapack("solve", lambda xs, p, d: f"np.linalg.solve({xs[0]}, {xs[1]})", 2, _solve_cores),
         _py("solve"))
register("slogdet", _lapack("slogdet", lambda xs, p, d: f"np.linalg.slogdet({xs[0]})", 0), _py("slogdet"))
register("cholesky", _lapack("cholesky", lambda xs, p, d: f"np.linalg.cholesky({xs[0]})", 2),
         _py("cholesky"))
register("eigh", _lapack("eigh", lambda xs, p, d: f"np.linalg.eigh({xs[0]})", 1), _py("eigh"))
register("pinv", _lapack("pinv", lambda xs, p, d: f"np.linalg.pinv({xs[0]}, {float(p['rcond'])!r})", 2),
         _py("pinv", rcond=lambda p: float(p["rcond"])))
register("svd", _lapack("svd", lambda xs, p, d: f"np.linalg.svd({xs[0]}, {bool(p['full'])})", 2),
         _py("svd", full_matrices=lambda p: bool(p["full"])))


def _qr_call(xs, p, dialect):
    if not p["complete"]:
        return f"np.linalg.qr({xs[0]})"
    h = _helper(dialect, "qr_complete", (
        "(a):\n"
        "    m, n = a.shape\n"
        "    sq = np.zeros((m, m), dtype=a.dtype)\n"
        "    sq[:, :n] = a\n"
        "    q, r = np.linalg.qr(sq)\n"
        "    return q, np.ascontiguousarray(r[:, :n])"))
    return f"{h}({xs[0]})"


register("qr", _lapack("qr", _qr_call, 2),
         _py("qr", mode=lambda p: "complete" if p["complete"] else "reduced"))


# -- matmul ---------------------------------------------------------------------------------------

# a product of at most this many multiply-adds is an explicit loop nest instead of a
# BLAS call: note [small-matmul]
SMALL_MATMUL = 512
_LOOP_DTYPES = ("f64", "f32", "i64")


def _loops(shapes, dtypes, want) -> bool:
    """Loops for a product of operands of these shapes and dtypes: small float
    products, and integer ones of any size (numba's `@` has none)."""
    if want not in _LOOP_DTYPES or not set(dtypes) <= set(_LOOP_DTYPES):
        return False
    xs, ys = shapes
    m = xs[-2] if len(xs) >= 2 else 1
    n = ys[-1] if len(ys) >= 2 else 1
    return want == "i64" or m * xs[-1] * n <= SMALL_MATMUL


# a 2-D product whose inner axis has at most this many entries is loops with that axis a
# literal, at any other size: note [small-matmul], "Narrow inner axes"
SMALL_K = 4
_NARROW_MAX = 1 << 20      # ... up to this many multiply-adds (above: BLAS, which may use threads)
_LITERAL_N = 16            # a column count below this is a literal too (as numba_generic.SMALL keeps it)


def _narrow(shapes, dtypes, want) -> bool:
    """Loops with literal inner sizes for a float product of these 2-D shapes and dtypes."""
    (m, k), (_, n) = shapes
    return (want in ("f64", "f32") and set(dtypes) <= set(_LOOP_DTYPES)
            and all(isinstance(d, int) for d in (m, k, n)) and k <= SMALL_K and m * k * n <= _NARROW_MAX)


def _narrow_mm(dialect, xt, yt, k, n):
    """The call of `numba_narrow._pb_mmk` for the 2-D product of operand texts `xt`
    and `yt` with inner size `k` and `n` columns (a literal when small; 0 for
    "from the operand", so the text does not depend on it and shape-generic reuse
    is kept)."""
    dialect.helper("_pb_mmk_import", "from pullback.backends.numba_narrow import _pb_mmk")
    return f"_pb_mmk({xt}, {yt}, {int(k)}, {int(n) if n < _LITERAL_N else 0})"


def _small_mm(dialect, rx, ry, dx, dy, want):
    """The helper computing a 2-D (or matrix-vector, vector-matrix, vector-vector)
    product by loops: each entry sums its products left to right from zero, in the
    result's dtype (operands of another dtype are converted element by element)."""
    nd = _nd(want)
    xi = "x[i, l]" if rx == 2 else "x[l]"
    yi = "y[l, j]" if ry == 2 else "y[l]"
    xi, yi = (t if d == want else f"{nd}({t})" for t, d in ((xi, dx), (yi, dy)))
    if rx == ry == 1:   # a dot product: one sum, returned after the loop
        return _helper(dialect, "mm11", "\n".join([
            "(x, y):", f"    s = {nd}(0)", "    for l in range(x.shape[0]):", f"        s += {xi} * {yi}",
            "    return s"]))
    lines = ["(x, y):", f"    k = x.shape[{rx - 1}]"]
    lines.append("    m = x.shape[0]" if rx == 2 else "    m = 1")
    lines.append("    n = y.shape[1]" if ry == 2 else "    n = 1")
    shape = {(2, 2): "(m, n)", (2, 1): "(m,)", (1, 2): "(n,)"}[(rx, ry)]
    store = {(2, 2): "out[i, j] = s", (2, 1): "out[i] = s", (1, 2): "out[j] = s"}[(rx, ry)]
    lines += [f"    out = np.empty({shape}, dtype={nd})",
              "    for i in range(m):",
              "        for j in range(n):",
              f"            s = {nd}(0)",
              "            for l in range(k):",
              f"                s += {xi} * {yi}",
              f"            {store}",
              "    return out"]
    return _helper(dialect, f"mm{rx}{ry}", "\n".join(lines))


def _flat_batch(name, batch, core, nb):
    """Argument `name` as a C-ordered (nb, *core) array: broadcast only where its
    batch axes are not already the result's (numba's `broadcast_to` compiles error
    formatting, note [compile-time])."""
    return (f"np.ascontiguousarray(np.broadcast_to({name}, {_tup(batch + core)}))"
            f".reshape({_tup((nb,) + core)})")


def _matmul_numba(dialect, fe, e, pat):
    x, y = e.args
    out = pat[0].type
    want = out.dtype
    rx, ry = x.type.ndim, y.type.ndim
    dts = (x.type.dtype, y.type.dtype)
    if rx <= 2 and ry <= 2 and _loops((x.type.shape, y.type.shape), dts, want):   # note [small-matmul]
        return f"{_small_mm(dialect, rx, ry, *dts, want)}({fe.a(x)}, {fe.a(y)})"
    if rx == ry == 2 and _narrow((x.type.shape, y.type.shape), dts, want):   # note [small-matmul]
        return _narrow_mm(dialect, fe.a(x), fe.a(y), x.type.shape[1], y.type.shape[1])
    if rx == ry == 2 and want == "f64" and dts == ("f64", "f64"):
        slot = dialect.slot_text(fe, pat[0]) if hasattr(dialect, "slot_text") else None
        if slot is not None:   # saved by the push that follows: written in its slot (numba_stores)
            return f"{_mm(dialect, '_pb_matmul_out')}({fe.a(x)}, {fe.a(y)}, {slot})"
    if rx <= 2 and ry <= 2:   # BLAS on C or F operands (transposes are views): note [blas-operands]
        xt, yt = (fe.a(a) if a.type.dtype == want or want not in ("f64", "f32") else f"{fe.a(a)}.astype({_nd(want)})"
                  for a in (x, y))   # numba's `@` takes one float dtype
        if rx + ry >= 3 and want in ("f64", "f32"):   # note [compile-time], "Products in place"
            text = f"{_mm(dialect, '_pb_matmul')}({xt}, {yt})"
        else:
            text = f"{_blas(dialect, xt)} @ {_blas(dialect, yt)}"
        dts = set(dts)
        if want == "f32" or "bool" in dts or want not in dts:
            text = f"({text}).astype({_nd(want)})" if out.ndim else f"{_nd(want)}({text})"
        return text

    def operand(a):
        t = fe.a(a)
        return t if a.type.dtype == want else f"{t}.astype({_nd(want)})"

    k = x.type.shape[-1]
    xs = tuple(x.type.shape) if rx >= 2 else (1, k)
    ys = tuple(y.type.shape) if ry >= 2 else (k, 1)
    # C-ordered operands of these shapes: `_pb_reshape` copies only a non-C operand, in
    # the caller's code, where numba's `np.ascontiguousarray` is a function compiled per
    # signature and process (note [compile-time], "Contiguous operands")
    yt = dialect.reshaped(operand(y), ys)
    if len(ys) == 2:   # a stack times one matrix: one BLAS call (or loops) on the folded stack
        rows = int(np.prod(xs[:-1], dtype=np.int64))
        xt = dialect.reshaped(operand(x), (rows, k))
        if _loops(((rows, k), ys), (want, want), want):
            h = _small_mm(dialect, 2, 2, want, want, want)
            return dialect.reshaped(f"{h}({xt}, {yt})", out.shape)
        if _narrow(((rows, k), ys), (want, want), want):
            return dialect.reshaped(_narrow_mm(dialect, xt, yt, k, ys[1]), out.shape)
        return dialect.reshaped(f"{xt} @ {yt}", out.shape)
    batch = tuple(np.broadcast_shapes(xs[:-2], ys[:-2]))
    nb = int(np.prod(batch, dtype=np.int64))
    m, n = xs[-2], ys[-1]
    if xs[:-2] == ys[:-2] == batch and _loops((xs, ys), (want, want), want):
        # one overload for every module of the process: note [small-matmul], "Shared batched products"
        dialect.helper("_pb_bmm_import", "from pullback.backends.numba_bmm import _pb_bmm")
        call = (f"_pb_bmm({dialect.reshaped(operand(x), (nb, m, k))}, {dialect.reshaped(operand(y), (nb, k, n))}, "
                f"{nb}, {m}, {k}, {n})")
        return call if tuple(out.shape) == (nb, m, n) else dialect.reshaped(call, out.shape)
    xt = dialect.reshaped(operand(x), xs)
    body = ["(x, y):",
            f"    xf = {_flat_batch('x', batch, (m, k), nb) if xs[:-2] != batch else f'x.reshape({_tup((nb, m, k))})'}",
            f"    yf = {_flat_batch('y', batch, (k, n), nb) if ys[:-2] != batch else f'y.reshape({_tup((nb, k, n))})'}",
            f"    out = np.empty({_tup((nb, m, n))}, dtype={_nd(want)})",
            f"    for b in range({nb}):"]
    if _loops((xs, ys), (want, want), want):   # note [small-matmul]
        body += [f"        for i in range({m}):",
                 f"            for j in range({n}):",
                 f"                s = {_nd(want)}(0)",
                 f"                for l in range({k}):",
                 "                    s += xf[b, i, l] * yf[b, l, j]",
                 "                out[b, i, j] = s"]
    else:
        body.append("        out[b] = xf[b] @ yf[b]")
    body.append(f"    return out.reshape({_tup(out.shape)})")
    h = _helper(dialect, "bmatmul", "\n".join(body))
    return f"{h}({xt}, {yt})"


register("matmul", _matmul_numba)
