"""Sample calls (format: `_spec`) of the contractions: dot, matmul (rank 1 and 2;
batched matmul on rank > 2 is not supported yet), inner, outer, vdot, kron,
cross (of 3-vectors), tensordot and einsum (one or two operands). Products of
the arguments, so the second derivatives are the mixed ones."""
import numpy as np

from ._spec import F, S


def _einsum(a, b, c):
    return (np.einsum("ij,jk->ik", a, b), np.einsum("ij,jk->i", a, b) * c, np.einsum("ij,ij->", a, a),
            np.einsum("i,i", c, c))


SAMPLES = [
    S("np.dot", lambda a, b, v: np.dot(a, b) + np.dot(v, v), (F(2, 3), F(3, 2), F(3))),
    S("np.matmul", lambda a, b: np.matmul(a, b) + a[:, :2] @ b[:2, :], (F(2, 3), F(3, 2))),
    S("np.matmul", lambda a, v: np.matmul(a, v) * np.matmul(v, a), (F(3, 3), F(3)), id="np.matmul(vector)"),
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
]
