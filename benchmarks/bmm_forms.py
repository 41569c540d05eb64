"""Warm speed of the forms of a small batched product on numba (note [small-matmul],
"Shared batched products"), side by side in one process, one core:

    python benchmarks/bmm_forms.py [--reps 15] [--calls 20000]

- ``helper``: the module helper `libcalls.linalg` printed before (operands reshaped
  with numba's ``.reshape`` to literal extents, then loops);
- ``shared``: `numba_bmm._pb_bmm`, the overload every module shares (the operands
  indexed as they are, literal loop bounds);
- ``pb_reshape``: the shared overload's loops reading `numba_views._pb_reshape`
  views of the operands instead.

Each form runs inside a numba loop of `--calls` products (ht's Jacobian makes 2 per
direction); the table gives ns per product (min and median over `--reps` rounds,
forms interleaved) and the ratio to ``helper``'s median, for ht's two stacks
(22 x 4 x 3 by 22 x 3 x 3 and 22 x 4 x 4 by 22 x 4 x 4).
"""
import argparse
import os
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402
from numba.core import types  # noqa: E402
from numba.extending import overload  # noqa: E402

from pullback.backends.numba_alloc import _pb_empty  # noqa: E402
from pullback.backends.numba_bmm import _pb_bmm  # noqa: E402
from pullback.backends.numba_views import _pb_reshape  # noqa: E402


def _helper_form(x, y, nb, m, k, n):
    pass


def _reshape_form(x, y, nb, m, k, n):
    pass


@njit(inline="always")
def _numba_reshape(x, shape):
    return x.reshape(shape)


def _loops_reading(form, reshape):
    """Overload `form` with the product's loops over `reshape(operand, literal extents)`."""
    @overload(form, prefer_literal=True, jit_options={"error_model": "numpy"})
    def _numba(x, y, nb, m, k, n):
        sizes = (nb, m, k, n)
        if not all(isinstance(s, types.IntegerLiteral) for s in sizes):
            return None
        NB, M, K, N = (int(s.literal_value) for s in sizes)

        def impl(x, y, nb, m, k, n):
            xf = reshape(x, (NB, M, K))
            yf = reshape(y, (NB, K, N))
            out = _pb_empty((NB, M, N), np.float64)
            for b in range(NB):
                for i in range(M):
                    for j in range(N):
                        s = np.float64(0)
                        for l in range(K):
                            s += xf[b, i, l] * yf[b, l, j]
                        out[b, i, j] = s
            return out
        return impl


_loops_reading(_helper_form, _numba_reshape)      # numba's `.reshape`, as the module helper did
_loops_reading(_reshape_form, _pb_reshape)        # the views of `numba_views`


def _runner(form, shape):
    nb, m, k, n = shape

    @njit(error_model="numpy")
    def run(x, y, calls):
        acc = 0.0
        for r in range(calls):
            acc += form(x, y, nb, m, k, n)[r % nb, 1, 2]
        return acc
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--calls", type=int, default=20000)
    a = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    rng = np.random.default_rng(0)
    print("| shape (nb, m, k, n) | form | min ns | median ns | median / helper |\n|---|---|---|---|---|")
    for shape in ((22, 4, 3, 3), (22, 4, 4, 4)):
        nb, m, k, n = shape
        x, y = rng.standard_normal((nb, m, k)), rng.standard_normal((nb, k, n))
        forms = {"helper": _runner(_helper_form, shape), "shared": _runner(_pb_bmm, shape),
                 "pb_reshape": _runner(_reshape_form, shape)}
        vals = {name: f(x, y, 50) for name, f in forms.items()}
        assert len(set(vals.values())) == 1, vals   # the same bits
        times = {name: [] for name in forms}
        for _ in range(a.reps):
            for name, f in forms.items():
                t = time.perf_counter()
                f(x, y, a.calls)
                times[name].append((time.perf_counter() - t) / a.calls * 1e9)
        base = sorted(times["helper"])[len(times["helper"]) // 2]
        for name, ts in times.items():
            med = sorted(ts)[len(ts) // 2]
            print(f"| {shape} | {name} | {min(ts):.0f} | {med:.0f} | {med / base:.2f} |")


if __name__ == "__main__":
    main()
