"""Sample calls (format: `_spec`) of the contractions: dot, matmul (vectors,
matrices, stacks), inner, outer, vdot, kron, cross (of 3-vectors: 2-vectors
are refused), tensordot, einsum (several operands, batch indices, traces), and
polyval, convolve and interp. Products of the arguments, so the second
derivatives are the mixed ones. A function's first sample is the cheap one the
fast numba tests compile (vectors for inner, kron, einsum)."""
import numpy as np

from ._spec import F, S


def _einsum(a, b, c):
    return (np.einsum("ij,jk->ik", a, b), np.einsum("ij,jk,k->i", a, b, c), np.einsum("ii->", a @ b),
            np.einsum("i,i", c, c), np.einsum("bij,bjk->bik", np.stack([a, a * a]), np.stack([b, b])))


XP = np.array([-1.5, -0.4, 0.3, 1.5])  # np.interp's knots


def _convolve(a, v):
    return np.convolve(a, v) * a[0], np.convolve(a, v * v, mode="same"), np.convolve(v, a, mode="valid")


SAMPLES = [
    S("np.dot", lambda a, b, v: np.dot(a, b) + np.dot(v, v), (F(2, 3), F(3, 2), F(3))),
    S("np.matmul", lambda a, b: np.matmul(a, b) + a[:, :2] @ b[:2, :], (F(2, 3), F(3, 2))),
    S("np.matmul", lambda a, v: np.matmul(a, v) * np.matmul(v, a), (F(3, 3), F(3)), id="np.matmul(vector)"),
    S("np.matmul", lambda a, b: np.matmul(a, b) * a[:, :, :1], (F(2, 2, 3), F(2, 3, 2)), id="np.matmul(batched)"),
    S("np.inner", lambda a, b: np.inner(a, b) * a, (F(3), F(3)), id="np.inner(vectors)"),
    S("np.inner", lambda a, b: np.inner(a, b) * np.inner(a[0], a[1]), (F(2, 3), F(4, 3))),
    S("np.outer", lambda a, b: np.outer(a * a, b), (F(3), F(2))),
    S("np.vdot", lambda a, b: np.vdot(a, b) * a, (F(2, 2), F(2, 2))),
    S("np.kron", lambda a, b: np.kron(a, b * a[0]), (F(2), F(3)), id="np.kron(vectors)"),
    S("np.kron", lambda a, b: np.kron(a, b * a[0, 0]), (F(2, 2), F(2, 3))),
    S("np.cross", lambda a, b: np.cross(a, b) * a + np.cross(b, a * a), (F(3), F(3))),
    S("np.tensordot", lambda a, b: np.tensordot(a, b, axes=1) + np.tensordot(a, a, axes=([0, 1], [0, 1])),
      (F(2, 3), F(3, 2))),
    S("np.einsum", lambda a, b: np.einsum("i,i->", a, b) * a + np.einsum("i->", a * b), (F(3), F(3)),
      id="np.einsum(vectors)"),
    S("np.einsum", _einsum, (F(2, 3), F(3, 2), F(2))),
    S("np.polyval", lambda p, x: np.polyval(p, x) * x + np.polyval(p * p, 0.5), (F(3), F(4))),
    S("np.convolve", _convolve, (F(5), F(3))),
    S("np.interp", lambda x, fp: np.interp(x, XP, fp) * np.interp(x[0], XP, fp * fp), (F(5), F(4))),
]
