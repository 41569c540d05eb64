"""Per-call overhead of a warm transformed function (a 3-element sum), in
microseconds, on the numba and pysource backends: with two array arguments
(`jit`, `grad`), and with a tuple of six arrays and a static tuple of 22 ints
(`tree`: GradBench ht's model and parents), with an array and a Python float
(`scal`), `value_and_grad` of two arrays (`vg`: a result tree), and `grad` with
respect to a dict of two arrays (`dict`); and top-level `pb.jvp` and `pb.vjp` with its
pullback called once (`jvp`, `vjp`), and `pb.jvp` of the ufunc `np.sin` itself (`ufjvp`).

    python benchmarks/call_overhead.py [SRC_DIR]

SRC_DIR (default: this checkout's src/) selects the pullback to measure, so two
checkouts can be compared side by side in one shell loop, e.g. before and after a
change to the API layer or the entry wrappers. Best of 5 batches of 20000 calls.
"""
import os
import sys
import time

os.environ.setdefault("PULLBACK_TIERED", "0")   # first calls here are numba's whole compile (note [tiered-compile])

src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
sys.path.insert(0, os.path.abspath(src))

import numpy as np  # noqa: E402

import pullback as pb  # noqa: E402


def f(x, y):
    return np.sum(x * y)


def g(x, model, parents):
    return np.sum(x * model[parents[0]])


def h(x, s):
    return np.sum(x) * s


def k(p, x):
    return np.sum(x * p["w"] + p["b"])


def sine(x):
    return np.sin(x)


def main():
    x, y = np.ones(3), np.ones(3)
    model, parents = tuple(np.ones(3) for _ in range(6)), (-1,) + tuple(range(21))
    for backend in ("numba", "pysource"):
        cases = (("jit", pb.jit(f, backend=backend), (x, y)),
                 ("grad", pb.grad(f, backend=backend), (x, y)),
                 ("tree", pb.jit(g, backend=backend, static_argnums=(2,)), (x, model, parents)),
                 ("scal", pb.jit(h, backend=backend), (x, 2.0)),
                 ("vg", pb.value_and_grad(f, backend=backend), (x, y)),
                 ("dict", pb.grad(k, backend=backend), ({"w": x, "b": y}, x)),
                 ("jvp", lambda a, t: pb.jvp(sine, (a,), (t,), backend=backend), (x, y)),
                 ("vjp", lambda a, t: pb.vjp(sine, a, backend=backend)[1](t), (x, y)),
                 ("ufjvp", lambda a, t: pb.jvp(np.sin, (a,), (t,), backend=backend), (x, y)))
        for name, fn, args in cases:
            fn(*args)
            best = float("inf")
            for _ in range(5):
                t = time.perf_counter()
                for _ in range(20000):
                    fn(*args)
                best = min(best, (time.perf_counter() - t) / 20000)
            print(f"{backend:9s} {name:5s} {best * 1e6:6.2f} us/call")


if __name__ == "__main__":
    main()
