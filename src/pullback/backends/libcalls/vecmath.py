"""Vectorisable `exp`, `log`, `log1p`, `expm1`, `tanh` and `logistic` for the
numba backend (note [vecmath]).

Contract: registers numba forms (`libcalls` contract) for the primitives in
`OPS`. Each prints, for a float64 or float32 value, a call of a branch-free
njit helper written into the generated module as source text (so the module
hash covers it): ``_pb_vm_<op>(x)`` for a scalar (also inside fused loops),
``_pb_vm_map_<op>(x)`` for an array. Float32 values are computed in double
and rounded once. The helpers are plain arithmetic, integer bit operations
(bit casts through `numba_bits`) and selects, inlined into the caller
(``dialect.deco_inline``), so LLVM's loop vectoriser can vectorise a loop
that calls them; numba's own forms call
scalar libm (numba >= 0.62 has no SVML), which blocks vectorisation. Other
dtypes, and everything when ``PULLBACK_VECMATH=0``, print NumPy's form
(libm), as before. pysource is unaffected (its own forms come first). The
setting is read when a program is compiled (pb.jit's in-process caches do not
key on it; the warm cache does). A loop that numba_fusion accumulates into
`lanes[i & 7]` (a fused full sum) is not vectorised, and there the scalar
helper is slower than libm (note [vecmath]).

Accuracy (measured by tests/backends/test_vecmath.py and
benchmarks/vecmath.py against mpmath): below 1 ulp for exp, log, log1p and
expm1 (largest seen 0.69, 0.76, 0.75, 0.89) and 1.5 ulp for tanh (1.27),
over the whole double range; logistic is pysource's formula, within 2 ulp
of 1 of NumPy's evaluation of it. Special values (+-0, +-inf, nan, subnormal inputs and results, the
overflow and underflow thresholds, the domain edges of log and log1p) give
exactly NumPy's results, signs of zeros included.

Methods (no tables):
- exp: k = round(x / ln 2) by the 1.5 * 2^52 trick, r = x - k ln2 in two
  parts (Cody-Waite, the low part's rounding error carried), exp(r) - 1 =
  r + r^2 P(r) as hi + lo, 1 + hi + lo with the rounding error of 1 + hi
  carried (a two-sum), scaled by 2^k in two halves (overflow to inf and
  gradual underflow round once). The input is clamped to +-1100 first.
- expm1: the same reduction, and 2 (2^(k-1) expm1(r) + (2^(k-1) - 1/2)) with
  the rounding errors of the difference and the sum carried (two-sum); x
  itself where |x| < 2^-54 (zeros and subnormals keep their value and sign).
- log: x = 2^k m with m in [sqrt(2)/2, sqrt(2)) by integer operations on the
  bits (subnormals scaled by 2^54 first), f = m - 1, s = f / (2 + f), and
  log(1 + f) = f - f^2/2 + s (f^2/2 + z Q(z)), z = s^2 (fdlibm's
  arrangement).
- log1p: u = 1 + x and its exact rounding error c (two-sum); log(u) + c/u,
  the correction added to the low part.
- tanh: with t = expm1(2|x|), tanh|x| = 1 - 2/(t+2) above ln(3)/2 and
  t/(t+2) above ln(5/3)/2 (musl's ranges); below, |x| + |x|^3 T(x^2). Both
  are computed and one selected; one division; the sign is copied from x.
- logistic: 0.5 (tanh(x/2) + 1), the pysource form.
Polynomials are evaluated by Estrin's scheme (short dependency chains).
P, Q and T are Chebyshev fits (mpmath `chebyfit`, 50 digits) of
(exp(r)-1-r)/r^2 on [-0.35, 0.35] (11 terms), (log((1+s)/(1-s)) - 2s)/(s z)
on [0, 0.0295] (8 terms) and (tanh(a) - a)/a^3 on a^2 in [0, 0.0653]
(8 terms), rounded to double; `fit_coefficients()` recomputes them (a test
checks they match).
"""
from __future__ import annotations

import os

from . import register

OPS = ("exp", "log", "log1p", "expm1", "tanh", "logistic")

# (exp(r) - 1 - r) / r^2 on [-0.35, 0.35], lowest degree first
EXP_P = (0.5, 0.1666666666666667, 0.04166666666666667, 0.008333333333325551, 0.0013888888888883332,
         0.00019841269876840357, 2.480158732699005e-05, 2.755725286336732e-06, 2.755727183153613e-07,
         2.5106262550879078e-08, 2.0915433598076003e-09)
# (log((1+s)/(1-s)) - 2s) / (s z), z = s^2, on z in [0, 0.0295], lowest degree first
LOG_Q = (0.6666666666666666, 0.4000000000000089, 0.2857142857079543, 0.2222222239356661,
         0.18181795442371984, 0.1538625044794019, 0.13268485680654427, 0.13089629160674623)
# (tanh(a) - a) / a^3 on z = a^2 in [0, 0.0653], lowest degree first
TANH_T = (-0.3333333333333333, 0.13333333333332908, -0.05396825396688273, 0.02186948836781846,
          -0.008863225367655785, 0.003591794148998051, -0.001449730813826239, 0.000531309169362065)


def fit_coefficients() -> tuple[tuple, tuple, tuple]:
    """(EXP_P, LOG_Q, TANH_T) computed again with mpmath (about a second)."""
    import mpmath as mp

    with mp.workdps(50):
        def p(r):
            return mp.mpf(1) / 2 + r / 6 if abs(r) < mp.mpf("1e-20") else (mp.exp(r) - 1 - r) / r ** 2

        def q(z):
            if z == 0:
                return mp.mpf(2) / 3
            s = mp.sqrt(z)
            return (mp.log((1 + s) / (1 - s)) - 2 * s) / s / z

        def t(z):
            a = mp.sqrt(z)
            return -mp.mpf(1) / 3 if z == 0 else (mp.tanh(a) - a) / a ** 3

        fits = (mp.chebyfit(p, [-0.35, 0.35], len(EXP_P)), mp.chebyfit(q, [0, 0.0295], len(LOG_Q)),
                mp.chebyfit(t, [0, 0.0653], len(TANH_T)))
        return tuple(tuple(float(c) for c in cs[::-1]) for cs in fits)


def enabled() -> bool:
    """False when ``PULLBACK_VECMATH=0``: the numba backend then prints libm calls."""
    return os.environ.get("PULLBACK_VECMATH", "1").strip() != "0"


def _estrin(var: str, coefs: tuple, out: str, indent: str = "    ") -> str:
    """Lines computing the polynomial sum(coefs[i] var^i) into `out` by Estrin's
    scheme: pairs c0 + c1 v, then pairs of pairs with v^2, v^4, ... A dependency
    chain of about 2 log2(n) operations instead of Horner's 2n: the helpers'
    latency bounds them where a loop is not vectorised (a fused sum), and
    shortens the vector code's chains too."""
    lines, terms, k, pw = [], [], 0, var
    for i in range(0, len(coefs), 2):
        if i + 1 < len(coefs):
            terms.append(f"({coefs[i]!r} + {coefs[i + 1]!r} * {var})")
        else:
            terms.append(repr(coefs[i]))
    while len(terms) > 1:
        sq = f"{out}_{var}{2 ** (k + 1)}"
        lines.append(f"{indent}{sq} = {pw} * {pw}")
        nxt = []
        for i in range(0, len(terms), 2):
            if i + 1 < len(terms):
                name = f"{out}_{k}_{i // 2}"
                lines.append(f"{indent}{name} = {terms[i]} + {terms[i + 1]} * {sq}")
                nxt.append(name)
            else:
                nxt.append(terms[i])
        terms, pw, k = nxt, sq, k + 1
    lines.append(f"{indent}{out} = {terms[0]}")
    return "\n".join(lines)


_LN2_HI = 6.93147180369123816490e-01   # 0x3fe62e42fee00000: k * _LN2_HI is exact for |k| < 2^21
_LN2_LO = 1.90821492927058770002e-10   # ln 2 - _LN2_HI

# expm1(r) = hi + lo after the reduction x = k ln2 + r, for x already clamped (shared by exp
# and expm1); k as int64 and as float
_REDUCE = f'''{{deco}}
def _pb_vm_reduce(x):
    t = x * 1.4426950408889634 + 6755399441055744.0
    kf = t - 6755399441055744.0
    k = _pb_f64_bits(t) - 4843621399236968448
    hi = x - kf * {_LN2_HI!r}
    lo = -(kf * {_LN2_LO!r})
    r = hi + lo
    dr = (hi - r) + lo
{_estrin("r", EXP_P, "p")}
    u = r * r * p + dr
    qh = r + u
    ql = (r - qh) + u
    return qh, ql, k'''

_EXP = '''{deco}
def _pb_vm_exp(x):
    x = 1100.0 if x > 1100.0 else x
    x = -1100.0 if x < -1100.0 else x
    qh, ql, k = _pb_vm_reduce(x)
    s = 1.0 + qh
    y = s + (((1.0 - s) + qh) + ql)
    k1 = k >> 1
    s1 = _pb_bits_f64((k1 + 1023) << 52)
    s2 = _pb_bits_f64((k - k1 + 1023) << 52)
    return y * s1 * s2'''

_EXPM1 = '''{deco}
def _pb_vm_expm1(x):
    xc = 710.0 if x > 710.0 else x
    xc = -40.0 if xc < -40.0 else xc
    qh, ql, k = _pb_vm_reduce(xc)
    h = _pb_bits_f64((k + 1022) << 52)
    a = h * qh
    b = h - 0.5
    bl = (h - b) - 0.5
    s = a + b
    bb = s - a
    y = 2.0 * (s + (((a - (s - bb)) + (b - bb)) + (h * ql + bl)))
    return x if abs(x) < 5.551115123125783e-17 else y'''

# log(x) + c (c a small correction, |c| <= ulp(log x)) for x > 0 normal or subnormal; the
# callers select the special values
_LOGC = f'''{{deco}}
def _pb_vm_logc(x, c):
    sub = x < 2.2250738585072014e-308
    xs = x * 18014398509481984.0 if sub else x
    ix = _pb_f64_bits(xs)
    tmp = ix - 4604544271217802189
    k = (tmp >> 52) - (54 if sub else 0)
    m = _pb_bits_f64(ix - (tmp & -4503599627370496))
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
{_estrin("z", LOG_Q, "q")}
    hfsq = 0.5 * f * f
    kf = np.float64(k)
    return kf * {_LN2_HI!r} - ((hfsq - (s * (hfsq + z * q) + (kf * {_LN2_LO!r} + c))) - f)'''

_LOG = '''{deco}
def _pb_vm_log(x):
    y = _pb_vm_logc(x, 0.0)
    y = -np.inf if x == 0.0 else y
    y = np.nan if x < 0.0 else y
    return x if (x != x or x == np.inf) else y'''

_LOG1P = '''{deco}
def _pb_vm_log1p(x):
    u = 1.0 + x
    c = (1.0 - (u - x)) if x > 1.0 else (x - (u - 1.0))
    y = _pb_vm_logc(u, c / u)
    y = -np.inf if x == -1.0 else y
    y = np.nan if x < -1.0 else y
    return x if (x != x or x == np.inf or x == 0.0) else y'''

_TANH = f'''{{deco}}
def _pb_vm_tanh(x):
    a = abs(x)
    big = a > 0.5493061443340549
    t = _pb_vm_expm1(2.0 * a)
    q = (2.0 if big else t) / (t + 2.0)
    y = 1.0 - q if big else q
    z = a * a
{_estrin("z", TANH_T, "p")}
    y = a + a * z * p if a < 0.2554128118829953 else y
    return x if (x != x or x == 0.0) else (-y if x < 0.0 else y)'''

_LOGISTIC = '''{deco}
def _pb_vm_logistic(x):
    return 0.5 * (_pb_vm_tanh(0.5 * x) + 1.0)'''

# helper name -> (source, helpers it calls)
_HELPERS = {
    "_pb_vm_reduce": (_REDUCE, ()),
    "_pb_vm_exp": (_EXP, ("_pb_vm_reduce",)),
    "_pb_vm_expm1": (_EXPM1, ("_pb_vm_reduce",)),
    "_pb_vm_logc": (_LOGC, ()),
    "_pb_vm_log": (_LOG, ("_pb_vm_logc",)),
    "_pb_vm_log1p": (_LOG1P, ("_pb_vm_logc",)),
    "_pb_vm_tanh": (_TANH, ("_pb_vm_expm1",)),
    "_pb_vm_logistic": (_LOGISTIC, ("_pb_vm_tanh",)),
}

_MAP = '''{deco}
def _pb_vm_map_{op}(x):
    f = np.ascontiguousarray(x).reshape(-1)
    out = np.empty(f.size, dtype=f.dtype)
    for i in range(f.size):
        out[i] = _pb_vm_{op}(np.float64(f[i]))
    return out.reshape(x.shape)'''


def _add(dialect, name: str) -> str:
    """Write helper `name` (after the helpers it calls) into the dialect's module."""
    src, deps = _HELPERS[name]
    from ..numba_bits import IMPORT   # the bit casts ("Bit casts" in note [vecmath])

    dialect.helper("_pb_bits_import", IMPORT)
    for d in deps:
        _add(dialect, d)
    return dialect.helper(name, src.format(deco=dialect.deco_inline))


def _numba(op):
    def numba(dialect, fe, e, pat):
        out_t = pat[0].type
        if not enabled() or out_t.dtype not in ("f64", "f32"):
            return None   # NumPy's form (libm)
        (x,) = e.args
        fn = _add(dialect, f"_pb_vm_{op}")
        if not out_t.shape:   # a scalar (also inside fused loops)
            if x.type.dtype == "f64":
                return f"{fn}({fe.a(x)})"
            return f"np.{'float32' if out_t.dtype == 'f32' else 'float64'}({fn}(np.float64({fe.a(x)})))"
        h = dialect.helper(f"_pb_vm_map_{op}", _MAP.format(deco=dialect.deco, op=op))
        return f"{h}({fe.a(x)})"
    return numba


for _op in OPS:
    register(_op, _numba(_op))


def compiled(op: str, array: bool = False):
    """The njit helper for `op` (`array`: the array form), compiled here without
    numba's disk cache: for tests and benchmarks."""
    import numpy as np
    from numba import njit

    class _D:   # the part of the dialect `_add` uses
        deco = deco_inline = '@njit(error_model="numpy", inline="always")'
        helpers: dict = {}

        def helper(self, name, src):
            self.helpers.setdefault(name, src)
            return name

    d = _D()
    d.helpers = {}
    name = _add(d, f"_pb_vm_{op}")
    if array:
        name = d.helper(f"_pb_vm_map_{op}", _MAP.format(deco=d.deco, op=op))
    ns = {"np": np, "njit": njit}
    exec(compile("\n\n".join(d.helpers.values()), f"<pullback vecmath {op}>", "exec"), ns)  # noqa: S102
    return ns[name]
