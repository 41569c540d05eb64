"""pb.map over a dict of arrays returning a tuple, and pb.vmap with in_axes=1 and
out_axes=1 (columns in, columns out)."""
import numpy as np
import pullback as pb


def f(d, M, c):
    lo, hi = pb.map(lambda e: (np.minimum(e["a"], 0.0) * c, np.exp(0.3 * e["b"]) * e["a"]), d)
    cols = pb.vmap(lambda col: col * np.sum(col * col), in_axes=1, out_axes=1)(M)
    return np.sum(lo * hi) + np.sum(np.cos(cols)) + np.sum(cols[0])


def PYTHON_REF(d, M, c):
    lo = np.minimum(d["a"], 0.0) * c
    hi = np.exp(0.3 * d["b"]) * d["a"]
    cols = M * np.sum(M * M, axis=0)
    return np.sum(lo * hi) + np.sum(np.cos(cols)) + np.sum(cols[0])


def args():
    rng = np.random.default_rng(126)
    a = np.array([-0.8, 0.5, -0.3, 1.1])
    return ({"a": a, "b": rng.normal(size=4)}, rng.normal(size=(2, 3)) * 0.7, 1.4)


ARGNUMS = (0, 1, 2)
TAGS = {"map", "vmap", "pytree"}
