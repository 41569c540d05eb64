"""ba: ADBench bundle adjustment (GradBench's "ba" eval).

Input (GradBench's compressed form): sizes n (cameras), m (points), p
(observations) and one camera `cam` (11: Rodrigues rotation, centre, focal
length, principal point, two radial distortion terms), one point `x` (3), one
weight `w` and one feature `feat` (2). As GradBench's reference tools do, the
full problem replicates them: n cameras, m points, p weights and features,
and observation i sees camera i % n and point i % m (`expand`, untimed).

- objective: the 2p reprojection residuals w_i (proj(cam, X) - feat_i) and the
  p weight residuals 1 - w_i^2, all computed, reported as GradBench's
  compressed output {"reproj_error": {"elements": the first two, "repeated": p},
  "w_err": {"element": the first, "repeated": p}}.
- jacobian: the sparse (3p) x (11n + 3m + p) Jacobian in GradBench's row-major
  layout (rows, cols, vals: row 2i and 2i+1 hold observation i's 15 entries,
  camera then point then weight; row 2p + i holds d w_err_i / d w_i), all of it
  computed; reported as GradBench's tools do: the first 30 entries of each of
  rows, cols and vals, then their last entry (fewer when p < 10, where the
  reference C++ reads past its arrays).

How the Jacobian is taken: residual row 2i+k depends only on observation i's
camera, point and weight, so the gradient of sum_i r_i[k] with respect to the
per-observation (gathered) cameras, points and weights is, column by column,
the k-th row of every observation's block: two reverse passes (`pb.grad`) of
the vectorised residual give the whole Jacobian. 15 forward directions
(`pb.vmap` of `pb.jvp` over basis tangents) cost about 10x more, and
`pb.vmap(pb.jacfwd(...))` of one observation's residual far more (small-array
code per observation). The residual takes one parameter per row ((11, p)
cameras, (3, p) points), so that each quantity it computes is a contiguous
length-p vector (`soa`); column slices of (p, 11) arrays are strided vectors,
2-4x slower. The sparse arrays are assembled inside `pb.jit` too (`ba_sparse`), so
that the compiler writes each entry once into its place (note [concat-slots]). See
benchmarks/gradbench_jac.py and note [gradbench-jacobians].
"""
import numpy as np

import pullback as pb

from ..schema import Array, Float, Int, Limits, Schema
from . import backend

NCAM = 11


def reproject(cam, X, w, feat):
    """Weighted reprojection residuals (2, p) for per-observation cameras (11, p),
    points (3, p), weights (p,) and features (2, p): one row per coordinate, so
    each quantity below is a contiguous length-p vector."""
    r0, r1, r2 = cam[0], cam[1], cam[2]
    x0 = X[0] - cam[3]
    x1 = X[1] - cam[4]
    x2 = X[2] - cam[5]
    # Rodrigues' rotation; a zero rotation vector takes the first-order form
    sq = r0 * r0 + r1 * r1 + r2 * r2
    nz = sq != 0.0
    theta = np.sqrt(np.where(nz, sq, 1.0))
    c = np.cos(theta)
    s = np.sin(theta)
    k0, k1, k2 = r0 / theta, r1 / theta, r2 / theta
    t = (k0 * x0 + k1 * x1 + k2 * x2) * (1.0 - c)
    y0 = np.where(nz, x0 * c + (k1 * x2 - k2 * x1) * s + k0 * t, x0 + r1 * x2 - r2 * x1)
    y1 = np.where(nz, x1 * c + (k2 * x0 - k0 * x2) * s + k1 * t, x1 + r2 * x0 - r0 * x2)
    y2 = np.where(nz, x2 * c + (k0 * x1 - k1 * x0) * s + k2 * t, x2 + r0 * x1 - r1 * x0)
    # projection, radial distortion, focal length and principal point
    u = y0 / y2
    v = y1 / y2
    rsq = u * u + v * v
    scale = (1.0 + cam[9] * rsq + cam[10] * rsq * rsq) * cam[6]
    e0 = w * (u * scale + cam[7] - feat[0])
    e1 = w * (v * scale + cam[8] - feat[1])
    return np.stack([e0, e1])


def ba_objective(camsT, XT, w, cam_of, pt_of, featsT):
    """Residuals (2p,) and (p,); the inputs one parameter per row (`soa`)."""
    r = reproject(camsT[:, cam_of], XT[:, pt_of], w, featsT)
    return r.T.reshape(-1), 1.0 - w * w


def ba_rows(camsT, XT, w, cam_of, pt_of, featsT):
    """Row k of every observation's 2 x 15 block, k = 0, 1, as gradients
    (d/d camera (11, p), d/d point (3, p), d/d weight (p,))."""
    cam, pt = camsT[:, cam_of], XT[:, pt_of]
    row0 = pb.grad(lambda c, x, u: np.sum(reproject(c, x, u, featsT)[0]), argnums=(0, 1, 2))(cam, pt, w)
    row1 = pb.grad(lambda c, x, u: np.sum(reproject(c, x, u, featsT)[1]), argnums=(0, 1, 2))(cam, pt, w)
    return row0, row1


def ba_sparse(camsT, XT, w, cam_of, pt_of, featsT):
    """The whole Jacobian as GradBench's row-major sparse arrays (rows, cols, vals):
    rows 2i and 2i + 1 hold observation i's 15 entries (camera, point, weight),
    then row 2p + i holds d w_err_i / d w_i. Assembled here, inside `pb.jit`, so
    that the compiler writes each entry once, into its place (note
    [concat-slots])."""
    n, m, p = camsT.shape[1], XT.shape[1], w.shape[0]
    (gc0, gx0, gw0), (gc1, gx1, gw1) = ba_rows(camsT, XT, w, cam_of, pt_of, featsT)
    entries = ([gc0[j] for j in range(NCAM)] + [gx0[j] for j in range(3)] + [gw0]
               + [gc1[j] for j in range(NCAM)] + [gx1[j] for j in range(3)] + [gw1])
    vals = np.concatenate([np.stack(entries, axis=1).reshape(-1), -2.0 * w])
    wcol = np.arange(p) + (NCAM * n + 3 * m)
    ccol = NCAM * cam_of[:, None] + np.arange(NCAM)
    pcol = (NCAM * n + 3 * pt_of)[:, None] + np.arange(3)
    block = np.concatenate([ccol, pcol, wcol[:, None], ccol, pcol, wcol[:, None]], axis=1)
    cols = np.concatenate([block.reshape(-1), wcol])
    per = NCAM + 4
    rows = np.concatenate([np.arange(2 * p + 1) * per, 2 * p * per + np.arange(1, p + 1)])
    return rows, cols, vals


_objective = pb.jit(ba_objective, backend=backend())
_rows = pb.jit(ba_rows, backend=backend())
_sparse = pb.jit(ba_sparse, backend=backend())


def soa(cams, X, obs, feats):
    """One parameter per row, so that every vector the residuals compute from is
    contiguous (a transposed view would make each a strided one)."""
    return (np.ascontiguousarray(cams.T), np.ascontiguousarray(X.T), np.ascontiguousarray(obs[:, 0]),
            np.ascontiguousarray(obs[:, 1]), np.ascontiguousarray(feats.T))


def residuals(cams, X, w, obs, feats):
    """(reprojection residuals (2p,), weight residuals (p,))."""
    camsT, XT, cam_of, pt_of, featsT = soa(cams, X, obs, feats)
    return _objective(camsT, XT, w, cam_of, pt_of, featsT)


def sparse_jacobian(cams, X, w, obs, feats):
    """The whole Jacobian as GradBench's row-major sparse arrays (rows, cols, vals)."""
    camsT, XT, cam_of, pt_of, featsT = soa(cams, X, obs, feats)
    return _sparse(camsT, XT, w, cam_of, pt_of, featsT)


def _compressed(a):
    return np.concatenate([a[:30], a[-1:]])


def objective(cams, X, w, obs, feats):
    reproj, werr = residuals(cams, X, w, obs, feats)
    return {"reproj_error": {"elements": reproj[:2], "repeated": int(w.shape[0])},
            "w_err": {"element": werr[0], "repeated": int(w.shape[0])}}


def jacobian(cams, X, w, obs, feats):
    rows, cols, vals = sparse_jacobian(cams, X, w, obs, feats)
    return {"rows": _compressed(rows), "cols": _compressed(cols), "vals": _compressed(vals)}


# the Jacobian's gradients keep about 100 values per observation (its reverse-mode tape included)
SCHEMA = Schema("ba", [
    Int("n", min=1, max=1 << 31), Int("m", min=1, max=1 << 31), Int("p", min=1, max=1 << 31),
    Array("cam", NCAM), Array("x", 3), Float("w"), Array("feat", 2),
], elements=("11*n + 3*m + 200*p", lambda z: NCAM * z["n"] + 3 * z["m"] + 200 * z["p"]))


def expand(n, m, p, cam, x, w, feat):
    """The full problem GradBench's compressed input stands for (module docstring)."""
    i = np.arange(p, dtype=np.int64)
    return (np.tile(cam, (n, 1)), np.tile(x, (m, 1)), np.full(p, float(w)),
            np.stack([i % n, i % m], axis=1), np.tile(feat, (p, 1)))


def prepare(inp, limits=None):
    """The arguments of FUNCTIONS for a GradBench input; raises InputError (see SCHEMA)."""
    v = SCHEMA.validate(inp, limits or Limits())
    return expand(v["n"], v["m"], v["p"], v["cam"], v["x"], v["w"], v["feat"])


FUNCTIONS = {"objective": objective, "jacobian": jacobian}
