"""Sample calls (format: `_spec`) of np.linalg and stacked matmul: solve, inv,
det, slogdet, cholesky, qr, eigh, eigvalsh, svd, svdvals, pinv, lstsq,
matrix_power, multi_dot, cond, the SVD-based norms, and NumPy 2's array-API
names (matmul, matrix_transpose, diagonal, trace, vecdot, outer, tensordot,
cross, matrix_norm, vector_norm). Inputs are made well
conditioned (a multiple of the identity added, symmetric positive definite
where needed); eigen- and singular vectors enter through sign-invariant
products, so finite differences see a smooth function."""
import numpy as np

from ._spec import F, S

I3 = np.eye(3)


def _spd(a):
    return a @ np.swapaxes(a, -1, -2) + 3.0 * np.eye(a.shape[-1])


def _sym(a):
    return a + np.swapaxes(a, -1, -2)


def _eigh(a):
    w, v = np.linalg.eigh(_sym(a) + np.diag([0.0, 4.0, 8.0]))   # well-separated eigenvalues
    return w + np.sum(v * v[..., :1, :], axis=-2)


def _svd(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(u * np.expand_dims(vh[..., 0], -2), axis=-2) * s


def _qr(a):
    q, r = np.linalg.qr(a)
    return np.sum(q, axis=-1) + np.sum(r, axis=-2)[..., :1]


def _lstsq(a, b):
    x, res, rank, s = np.linalg.lstsq(a, b)
    return x * np.sum(res) + s[0]


SAMPLES = [
    S("np.linalg.solve", lambda a, b: np.linalg.solve(a + 4 * I3, b), (F(3, 3), F(3))),
    S("np.linalg.solve", lambda a, b: np.linalg.solve(a + 4 * I3, b), (F(2, 3, 3), F(3, 2)), id="solve(stack)"),
    S("np.linalg.inv", lambda a: np.linalg.inv(a + 4 * I3), (F(3, 3),)),
    S("np.linalg.inv", lambda a: np.linalg.inv(a + 4 * I3), (F(2, 3, 3),), id="inv(stack)"),
    S("np.linalg.det", lambda a: np.linalg.det(a + 2 * I3), (F(3, 3),)),
    S("np.linalg.det", lambda a: np.linalg.det(a + 2 * I3), (F(2, 3, 3),), id="det(stack)"),
    S("np.linalg.slogdet", lambda a: np.linalg.slogdet(a + 4 * I3)[1], (F(3, 3),)),
    S("np.linalg.cholesky", lambda a: np.linalg.cholesky(_spd(a)), (F(3, 3),)),
    S("np.linalg.cholesky", lambda a: np.linalg.cholesky(_spd(a)), (F(2, 3, 3),), id="cholesky(stack)"),
    S("np.linalg.qr", _qr, (F(4, 3),), rtol=1e-4),
    S("np.linalg.qr", _qr, (F(2, 3, 4),), rtol=1e-4, id="qr(wide stack)"),
    S("np.linalg.eigh", _eigh, (F(3, 3),), rtol=1e-4),
    S("np.linalg.eigvalsh", lambda a: np.linalg.eigvalsh(a + np.diag([0.0, 4.0, 8.0])), (F(3, 3),), rtol=1e-4),
    S("np.linalg.eigvalsh", lambda a: np.linalg.eigvalsh(_sym(a)), (F(2, 3, 3),), rtol=1e-4, id="eigvalsh(stack)"),
    S("np.linalg.svd", _svd, (F(4, 3),), rtol=1e-4),
    S("np.linalg.svd", lambda a: np.linalg.svd(a, compute_uv=False), (F(2, 3, 4),), rtol=1e-4, id="svd(values)"),
    S("np.linalg.svdvals", lambda a: np.linalg.svdvals(a), (F(3, 2),), rtol=1e-4),
    S("np.linalg.pinv", lambda a: np.linalg.pinv(a), (F(4, 3),), rtol=1e-4),
    S("np.linalg.lstsq", _lstsq, (F(4, 3), F(4)), rtol=1e-4),
    S("np.linalg.matrix_power", lambda a: np.linalg.matrix_power(a, 3) + np.linalg.matrix_power(a + 4 * I3, -2),
      (F(3, 3, lo=-1.0, hi=1.0),)),
    S("np.linalg.norm", lambda a: np.linalg.norm(a, 2) + np.linalg.norm(a, "nuc") + np.linalg.norm(a, -2),
      (F(4, 3),), rtol=1e-4, id="norm(2, nuc, -2)"),
    S("np.linalg.matmul", lambda a, b: np.linalg.matmul(a, b), (F(3, 4), F(4, 2))),
    S("np.linalg.matmul", lambda a, b: np.linalg.matmul(a, b), (F(2, 3, 4), F(4, 2)), id="linalg.matmul(stack)"),
    S("np.linalg.multi_dot", lambda a, b, c: np.linalg.multi_dot([a, b, c]), (F(2, 3), F(3, 4), F(4))),
    S("np.linalg.cond", lambda a: np.linalg.cond(a + 4 * I3) + np.linalg.cond(a + 4 * I3, "fro"), (F(3, 3),),
      rtol=1e-4),
    S("np.linalg.matrix_transpose", lambda a: np.linalg.matrix_transpose(a) * a[0, 0], (F(3, 2),)),
    S("np.linalg.diagonal", lambda a: np.linalg.diagonal(a, offset=1) ** 2, (F(3, 3),)),
    S("np.linalg.diagonal", lambda a: np.linalg.diagonal(a, offset=-1) ** 2, (F(2, 3, 3),), id="diagonal(stack)"),
    S("np.linalg.trace", lambda a: np.linalg.trace(a) ** 2, (F(2, 3, 3),)),
    S("np.linalg.vecdot", lambda a, b: np.linalg.vecdot(a, b), (F(2, 3), F(2, 3))),
    S("np.linalg.outer", lambda a, b: np.linalg.outer(a, b * a[0]), (F(3), F(2))),
    S("np.linalg.tensordot", lambda a, b: np.linalg.tensordot(a, b, axes=1), (F(2, 3), F(3, 2))),
    S("np.linalg.cross", lambda a, b: np.linalg.cross(a, b), (F(3), F(3))),
    S("np.linalg.matrix_norm", lambda a: np.linalg.matrix_norm(a) + np.linalg.matrix_norm(a, ord="nuc"),
      (F(3, 2),), rtol=1e-4),
    S("np.linalg.vector_norm", lambda a: np.linalg.vector_norm(a, axis=1, ord=3), (F(2, 3), )),
    S("np.matmul", lambda a, b: a @ b + np.matmul(a, b[0]), (F(2, 3, 3), F(2, 3, 3)), id="matmul(stacks)"),
]
