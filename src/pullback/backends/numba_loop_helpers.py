"""Module-level loop helpers of the numba dialect: explicit loops that numba
compiles faster than its own library forms (note [compile-time]).

Contract: a mixin of `NumbaDialect`, which provides `helper(name, src)` (write a
helper once per module, return its name) and `deco` (the njit decorator).
Each method writes its helper on first use and returns the helper's name:
- `index_array_check()`: `_pb_check_idx(idx, n, k)`, every index of an array
  against an axis size n in one pass (note [run-time-checks]);
- `_take_add_helper(axis, ndim)`: `out[..., idx[k], ...] += v[..., k, ...]`;
- `_reduce_helper(op, dtype, nonempty)`: `np.<op>` of each row of a matrix
  (float min and max of non-empty rows by `numba_extrema`'s intrinsics,
  vectorised);
- `_sum_rows_helper()`: `_pb_sum_rows(x)`, the float64 sum of each row of a
  matrix in NumPy's pairwise order (note [pairwise-sums]);
- `_arg_extremum_rows_helper(op, dtype)`: np.argmax / np.argmin of each
  non-empty row of a float matrix (a vectorised extremum, then the first index
  holding it);
- `_reduce_lead_helper(op, dtype)` / `_reduce_all_helper(op, dtype)`: min or
  max over the first axis of a matrix, or of a whole vector; NaN wins, as in
  NumPy (floats through `numba_extrema`'s intrinsics, a loop LLVM vectorises;
  integers by comparisons).
- `few_helper(name, src)`: `helper(name, src)` for a helper that numba inlines
  (its decorator becomes `deco_inline`) where at most `FEW_SITES` sites of the
  module call it (these helpers); `count_sites(lines)`
  counts the calls in a function's final lines, `inline_few(name, src)` gives
  the source to print (note [compile-time], "Helpers at few sites"). In a
  mutually recursive module `deco_inline` is `deco` (calls). Where a helper of `SHARED` is not inlined, the module
  imports the process-wide overload instead of printing its own copy.
"""
from __future__ import annotations

import re

from . import pysource as ps

_ND = ps._NP_DTYPE

# numba compiles a helper as a function of its own, 0.05-0.2 s per module and process (typed,
# lowered, optimised, linked into the caller and optimised again); an inline="always" one is
# lowered at each site, about 30 ms each: inlined where at most this many sites call it
FEW_SITES = 2

# few-site helpers that a process-wide overload replaces where they are not inlined: the line
# importing it (`numba_checks`; note [compile-time], "One index check per process")
SHARED = {"_pb_check_idx": "from pullback.backends.numba_checks import _pb_check_idx"}


class LoopHelpers:
    def few_helper(self, name: str, src: str) -> str:
        self.few.add(name)
        return self.helper(name, src)

    def count_sites(self, lines: list[str]) -> None:
        """Add the calls of `few_helper`s in `lines` (a function's text) to `sites`."""
        if not self.few:
            return
        if self._few_re is None or self._few_re[0] != len(self.few):
            alts = "|".join(re.escape(n) for n in sorted(self.few, key=len, reverse=True))
            self._few_re = (len(self.few), re.compile(rf"(?<![\w.])({alts})\("))
        for t in lines:
            for m in self._few_re[1].finditer(t):
                self.sites[m.group(1)] = self.sites.get(m.group(1), 0) + 1

    def inline_few(self, name: str, src: str) -> str:
        """`src`, inlined by numba where few sites call it (module docstring); at
        more sites, a helper of `SHARED` is imported instead (compiled once per
        process, not once per module)."""
        if name not in self.few or self.sites.get(name, 0) > FEW_SITES or not src.startswith(self.deco + "\n"):
            return SHARED.get(name, src)
        return self.deco_inline + src[len(self.deco):]

    def index_array_check(self) -> str:
        """The helper that checks every index of an array against an axis size n
        in one pass, raising ``IndexError(K, i)`` at the first bad one."""
        return self.few_helper("_pb_check_idx", (
            f"{self.deco}\ndef _pb_check_idx(idx, n, k):\n"
            f"    for i in idx.flat:\n"
            f"        if i < -n or i >= n:\n"
            f"            raise IndexError(k, i)"))

    def _take_add_helper(self, axis: int, ndim: int) -> str:
        """`out[..., idx[k], ...] += v[..., k, ...]` (at `axis`) for every k, as an
        explicit loop nest over `out`'s other axes: numba compiles a slice assignment's
        error formatting, 1-3 s per process (gmm's gradient: 9.4 -> 6.9 s)."""
        name = f"_take_add{axis}_{ndim}"
        other = [d for d in range(ndim) if d != axis]
        lines = [f"{self.deco}", f"def {name}(out, idx, v):", "    for k in range(idx.shape[0]):",
                 "        j = idx[k]"]
        for depth, d in enumerate(other):
            lines.append(f"{'    ' * (depth + 2)}for i{d} in range(out.shape[{d}]):")
        ix_out = ", ".join("j" if d == axis else f"i{d}" for d in range(ndim))
        ix_v = ", ".join("k" if d == axis else f"i{d}" for d in range(ndim))
        lines.append(f"{'    ' * (len(other) + 2)}out[{ix_out}] += v[{ix_v}]")
        lines.append("    return out")
        return self.few_helper(name, "\n".join(lines))

    def _reduce_helper(self, op: str, out_dtype: str, nonempty: bool = False) -> str:
        name = f"_reduce_{op}_{out_dtype}"
        if op in ("min", "max") and nonempty and self._float_extrema(out_dtype):
            # each row's extremum by LLVM's maximum/minimum (NaN wins), a loop the vectoriser
            # takes as a reduction; numba's np.max of a row is a scalar loop (3.4x NumPy's time)
            return self._minmax_helper(f"_reduce_rows_{op}_{out_dtype}", op, (
                f"    out = np.empty(x.shape[0], dtype={_ND[out_dtype]})\n"
                "    for k in range(x.shape[0]):\n"
                "        m = x[k, 0]\n"
                "        for c in range(1, x.shape[1]):\n"
                "            m = {ext}(m, x[k, c])\n"
                "        out[k] = m\n"))
        return self.few_helper(name, (
            f"{self.deco}\ndef {name}(x):\n"
            f"    out = np.empty(x.shape[0], dtype={_ND[out_dtype]})\n"
            f"    for k in range(x.shape[0]):\n"
            f"        out[k] = np.{op}(x[k])\n"
            f"    return out"))

    def _reduce_lead_helper(self, op: str, dtype: str) -> str:
        """min or max over the first axis of a matrix, one row at a time (contiguous);
        NaN wins, as in np.min/np.max."""
        step = ("            out[c] = {ext}(out[c], x[r, c])\n" if self._float_extrema(dtype) else
                "            v = x[r, c]\n"
                "            if v {cmp} out[c]:\n"
                "                out[c] = v\n")
        return self._minmax_helper(f"_reduce_lead_{op}_{dtype}", op, (
            "    out = x[0].copy()\n"
            "    for r in range(1, x.shape[0]):\n"
            "        for c in range(x.shape[1]):\n" + step))

    def _reduce_all_helper(self, op: str, dtype: str) -> str:
        """min or max of a non-empty vector (any strides); NaN wins, as in np.min/np.max."""
        step = ("        out = {ext}(out, x[k])\n" if self._float_extrema(dtype) else
                "        v = x[k]\n"
                "        if v {cmp} out:\n"
                "            out = v\n")
        return self._minmax_helper(f"_reduce_all_{op}_{dtype}", op, (
            f'    """{op} of a non-empty vector; NaN wins."""\n'
            "    out = x[0]\n"
            "    for k in range(1, x.shape[0]):\n" + step))

    def _sum_rows_helper(self) -> str:
        """The float64 sum of each row of a matrix, each in NumPy's pairwise order
        (`numba_reduce._pb_sum_vec`, imported by the caller; note [pairwise-sums])."""
        return self.few_helper("_pb_sum_rows", (
            f"{self.deco}\ndef _pb_sum_rows(x):\n"
            "    out = np.empty(x.shape[0], dtype=np.float64)\n"
            "    for k in range(x.shape[0]):\n"
            "        out[k] = _pb_sum_vec(x[k])\n"
            "    return out"))

    def _arg_extremum_rows_helper(self, op: str, dtype: str) -> str:
        """np.argmax / np.argmin of each row of a float matrix with non-empty rows (a vector is
        one row): each row's extremum by `numba_extrema`'s intrinsics (a vectorised
        reduction; NaN wins), then the first index holding it (the first NaN where there is
        one), as NumPy answers; numba's np.argmax is a scalar loop (4.6-6.6x NumPy's time)."""
        self._float_extrema(dtype)
        ext = "_pb_fmax" if op == "argmax" else "_pb_fmin"
        name = f"_{op}_rows_{dtype}"
        return self.few_helper(name, (
            f"{self.deco}\ndef {name}(x):\n"
            "    out = np.empty(x.shape[0], dtype=np.int64)\n"
            "    for k in range(x.shape[0]):\n"
            "        m = x[k, 0]\n"
            "        for c in range(1, x.shape[1]):\n"
            f"            m = {ext}(m, x[k, c])\n"
            "        j = 0\n"
            "        if m != m:\n"
            "            while x[k, j] == x[k, j]:\n"
            "                j += 1\n"
            "        else:\n"
            "            while x[k, j] != m:\n"
            "                j += 1\n"
            "        out[k] = j\n"
            "    return out"))

    def _float_extrema(self, dtype: str) -> bool:
        """Whether min and max of `dtype` use `numba_extrema`'s intrinsics (floats: NaN wins,
        and LLVM vectorises the reduction); their import is written on first use."""
        if not dtype.startswith("f"):
            return False
        self.helper("_pb_extrema_import", "from pullback.backends.numba_extrema import _pb_fmax, _pb_fmin")
        return True

    def _minmax_helper(self, name: str, op: str, loop: str) -> str:
        cmp, ext = ("<", "_pb_fmin") if op == "min" else (">", "_pb_fmax")
        loop = loop.replace("{cmp}", cmp).replace("{ext}", ext)
        return self.few_helper(name, f"{self.deco}\ndef {name}(x):\n" + loop + "    return out")
