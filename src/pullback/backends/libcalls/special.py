"""numba forms of the special-function primitives (`ir/prims/special.py`): see
`libcalls` for the contract. All are elementwise: a scalar call inside fused
loops, a small map helper over a flattened array otherwise.

- ``erf``, ``erfc``, ``erfinv``, ``gammaln``, ``gamma``, ``log_ndtr`` and
  digamma (``polygamma`` with n = 0): the C functions that
  `scipy.special.cython_special` exports, so numba computes the same numbers
  as SciPy (numba's own `math.lgamma(-inf)` is +inf where SciPy's is -inf, and
  `math.erfc` gives subnormals where SciPy's flushes to 0).
- ``polygamma`` with n >= 1: (-1)^(n+1) n! zeta(n+1, x) with the Hurwitz zeta
  function of Cephes (which SciPy uses) written as an njit helper; SciPy's
  `cython_special` does not export `zeta`.

A C function is reached as a numba `ExternalFunction` bound by *symbol name*
(``pb_sf_<name>``), never as a ctypes object: numba bakes a ctypes function's
address into the machine code as a literal, and then refuses to cache the
function ("uses dynamic globals"), so every process would compile again (and a
cached address would be wrong in the next process anyway, with SciPy loaded
elsewhere). `external(name)` registers the symbol with LLVM
(`llvmlite.binding.add_symbol`) at the address `get_cython_function_address`
gives in *this* process; the generated module calls it at module level, so
every process that executes the module (before numba loads its cached code)
binds the symbol afresh, and the cached code holds only the name (note
[numba-cache-safety]).
"""
from __future__ import annotations

from . import register

# symbol -> (cython_special export, argument count); every export takes a trailing
# `int __pyx_skip_dispatch` (pass 0)
_EXPORTS = {
    "erf": ("__pyx_fuse_1erf", 1),
    "erfc": ("__pyx_fuse_1erfc", 1),
    "gammaln": ("gammaln", 1),
    "psi": ("__pyx_fuse_1psi", 1),
    "erfinv": ("__pyx_fuse_0erfinv", 1),
    "gamma": ("__pyx_fuse_1gamma", 1),
    "log_ndtr": ("__pyx_fuse_1log_ndtr", 1),
}
_BOUND: dict = {}


def external(name: str):
    """The numba `ExternalFunction` ``pb_sf_<name>`` (float64 args, int skip flag),
    its symbol bound to SciPy's C function in this process."""
    fn = _BOUND.get(name)
    if fn is None:
        import llvmlite.binding as ll
        from numba.core import types
        from numba.extending import get_cython_function_address

        export, nargs = _EXPORTS[name]
        sym = f"pb_sf_{name}"
        ll.add_symbol(sym, get_cython_function_address("scipy.special.cython_special", export))
        fn = _BOUND[name] = types.ExternalFunction(sym, types.float64(*([types.float64] * nargs), types.intc))
    return fn


def _ext(dialect, name: str) -> str:
    dialect.helper("_pb_sf_import", "from pullback.backends.libcalls.special import external as _pb_sf_external")
    return dialect.helper(f"_pb_sf_{name}", f"_pb_sf_{name} = _pb_sf_external({name!r})")


# Cephes' Hurwitz zeta (Euler-Maclaurin summation); A[i] = (2i+2)! / B_{2i+2}
_ZETA_SRC = '''{deco}
def _pb_sf_zeta(x, q):
    A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
         -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
         1.8152105401943546773e17, -7.1661652561756670113e18)
    if x == 1.0:
        return np.inf
    if x < 1.0:
        return np.nan
    if q <= 0.0:
        if q == np.floor(q):
            return np.inf
        if x != np.floor(x):
            return np.nan
    if q > 1e8:
        return (1.0 / (x - 1.0) + 1.0 / (2.0 * q)) * q ** (1.0 - x)
    s = q ** -x
    a = q
    i = 0
    b = 0.0
    while i < 9 or a <= 9.0:
        i += 1
        a += 1.0
        b = a ** -x
        s += b
        if abs(b / s) < 1.11022302462515654042e-16:
            return s
    w = a
    s += b * w / (x - 1.0)
    s -= 0.5 * b
    a = 1.0
    k = 0.0
    for j in range(12):
        a *= x + k
        b /= w
        t = a * b / A[j]
        s = s + t
        if abs(t / s) < 1.11022302462515654042e-16:
            return s
        k += 1.0
        a *= x + k
        b /= w
        k += 1.0
    return s'''

_POLYGAMMA_SRC = '''{deco}
def _pb_sf_polygamma(n, x):
    if n == 0:
        return _pb_sf_psi(x, 0)
    s = n + 1.0
    sign = 1.0 if n % 2 == 1 else -1.0
    return sign * math.gamma(s) * _pb_sf_zeta(s, x)'''


def _scalar_fn(dialect, op) -> str:
    """The name (or dotted name) of a scalar function computing `op`."""
    if op == "polygamma":
        _ext(dialect, "psi")
        dialect.helper("_pb_math", "import math")
        dialect.helper("_pb_sf_zeta", _ZETA_SRC.format(deco=dialect.deco))
        return dialect.helper("_pb_sf_polygamma", _POLYGAMMA_SRC.format(deco=dialect.deco))
    return _ext(dialect, op)


def _call(fn, op, args, p) -> str:
    if op == "polygamma":
        return f"{fn}({int(p['n'])}, {args})"
    return f"{fn}({args}, 0)"


def _map_helper(dialect, op, fn) -> str:
    name = f"_pb_sf_map_{op}"
    extra = "n, " if op == "polygamma" else ""
    call = f"{fn}(n, f[i])" if op == "polygamma" else _call(fn, op, "f[i]", {})
    src = (f"{dialect.deco}\ndef {name}({extra}x):\n"
           f"    f = np.ascontiguousarray(x).reshape(-1)\n"
           f"    out = np.empty(f.size, dtype=f.dtype)\n"
           f"    for i in range(f.size):\n"
           f"        out[i] = {call}\n"
           f"    return out.reshape(x.shape)")
    return dialect.helper(name, src)


def _numba(op):
    def numba(dialect, fe, e, pat):
        (x,) = e.args
        fn = _scalar_fn(dialect, op)
        out_t = pat[0].type
        if not out_t.shape:   # a scalar (also inside fused loops)
            text = _call(fn, op, fe.a(x), e.p)
            return f"np.float32({text})" if out_t.dtype == "f32" else text
        h = _map_helper(dialect, op, fn)
        return f"{h}({int(e.p['n'])}, {fe.a(x)})" if op == "polygamma" else f"{h}({fe.a(x)})"
    return numba


for _op in ("erf", "erfc", "erfinv", "gammaln", "gamma", "log_ndtr", "polygamma"):
    register(_op, _numba(_op), elementwise=True)
