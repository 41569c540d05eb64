"""ht: ADBench hand tracking (GradBench's "ht" eval).

Input: `theta` (26 pose parameters: global rotation, global translation, 20
finger angles), `data` = {`model`, `correspondences`, `points`} and `us`:
empty for the "simple" variant, one (u0, u1) pair per correspondence for the
"complicated" one. The model (`_ht_model.validate`) has bone_count bones with
names, parents (a parent comes before its child), base_relatives and
inverse_base_absolutes (4x4 each, row-major as sent), base_positions (one
homogeneous vertex per row), weights (vertex x bone), triangles and
is_mirrored.

- objective: the 3 * npts residuals point_i - hand point_i (row-major: point
  i's x, y, z), the hand point being the skinned vertex correspondences[i]
  (simple) or the (u0, u1, 1 - u0 - u1) combination of the skinned vertices of
  triangle correspondences[i] (complicated);
- jacobian: the dense (3 * npts) x 26 Jacobian with respect to theta (simple),
  or (3 * npts) x 28 with two leading columns d r / d u0, d r / d u1 of each
  point's own us (complicated: the us block is block-diagonal, so GradBench
  reports it compressed into two columns); one list per row.

The objective is written vectorised over bones and vertices. Like the
reference C++, it skins vertices and then reads them by correspondence, but
only the distinct vertices the residuals read (the reference skins all of
them; the result is the same): a vertex that many points or corners read is
skinned once, so the skinning, and each jvp of it, costs at most the model's
vertex count whatever the number of points.

The Jacobian is forward mode: `pb.vmap` over the 26 basis tangents of
`pb.jvp` (JAX's jacfwd), plus, for the complicated variant, two more
directions that perturb every point's u0 (or u1) at once: residual i reads
only its own us, so one jvp gives column k of every point's block.
"""
import numpy as np

import pullback as pb

from ..schema import Limits
from . import backend
from ._ht_model import NTHETA, SCHEMA, validate  # noqa: F401 - SCHEMA: the module's fields


def euler_rotations(a):
    """(b, 3, 3) rotations Rz(a[:, 1]) Ry(a[:, 2]) Rx(a[:, 0]) (ADBench's xzy order)."""
    cx, sx = np.cos(a[:, 0]), np.sin(a[:, 0])
    cz, sz = np.cos(a[:, 1]), np.sin(a[:, 1])
    cy, sy = np.cos(a[:, 2]), np.sin(a[:, 2])
    rows = [cz * cy, -sz * cx + cz * sy * sx, sz * sx + cz * sy * cx,
            sz * cy, cz * cx + sz * sy * sx, -cz * sx + sz * sy * cx,
            -sy, cy * sx, cy * cx]
    return np.stack(rows, axis=1).reshape(-1, 3, 3)


def angle_axis_rotation(r):
    """The 3x3 rotation of the angle-axis vector r (the identity when |r| < 1e-4)."""
    sq = np.sum(r * r)
    small = sq < 1e-8
    norm = np.sqrt(np.where(small, 1.0, sq))
    x, y, z = r[0] / norm, r[1] / norm, r[2] / norm
    s, c = np.sin(norm), np.cos(norm)
    R = np.stack([x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s,
                  x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s,
                  x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]).reshape(3, 3)
    return np.where(small, np.eye(3), R)


def skinned(theta, model, parents):
    """(k, 3) posed positions of the k vertices the residuals read, in order
    (`_ht_model.validate`: each distinct vertex is skinned once, then read)."""
    pose_index, base_relatives, inverse_base_absolutes, positions, weights, mirror, read = model
    nb = base_relatives.shape[0]
    pose = np.concatenate([theta, np.zeros(1), np.ones(1)])[pose_index]      # (bones + 3, 3)
    R = euler_rotations(pose[3:])                                            # (bones, 3, 3)
    rel = np.concatenate([base_relatives[:, :, :3] @ R, base_relatives[:, :, 3:]], axis=2)
    absolutes = []
    for i in range(nb):
        absolutes.append(rel[i] if parents[i] < 0 else absolutes[parents[i]] @ rel[i])
    transforms = np.stack(absolutes) @ inverse_base_absolutes                # (bones, 4, 4)
    # posed[k, b, :] = transforms[b, :3, :] @ positions[k]
    posed = (positions @ transforms[:, :3, :].reshape(nb * 3, 4).T).reshape(-1, nb, 3)
    verts = np.sum(posed * weights[:, :, None], axis=1) * mirror             # (distinct, 3)
    G = angle_axis_rotation(pose[0]) * pose[1]                               # columns scaled
    return (verts @ G.T + pose[2])[read]


def ht_simple(theta, model, parents, points):
    return (points - skinned(theta, model, parents)).reshape(-1)


def ht_complicated(theta, us, model, parents, points):
    v = skinned(theta, model, parents).reshape(-1, 3, 3)                     # (npts, corner, xyz)
    u0, u1 = us[:, 0:1], us[:, 1:2]
    hand = u0 * v[:, 0] + u1 * v[:, 1] + (1.0 - u0 - u1) * v[:, 2]
    return (points - hand).reshape(-1)


def ht_jac_simple(theta, model, parents, points):
    def column(e):
        return pb.jvp(lambda t: ht_simple(t, model, parents, points), (theta,), (e,))[1]
    return pb.vmap(column)(np.eye(NTHETA)).T


def ht_jac_complicated(theta, us, model, parents, points):
    npts = us.shape[0]

    def column(e):
        return pb.jvp(lambda t, u: ht_complicated(t, u, model, parents, points), (theta, us),
                      (e[2:], np.broadcast_to(e[:2], (npts, 2))))[1]
    return pb.vmap(column)(np.eye(NTHETA + 2)).T


# `parents` (a tuple of ints) is static: it drives the Python loop over bones
_obj_simple = pb.jit(ht_simple, backend=backend(), static_argnums=(2,))
_obj_complicated = pb.jit(ht_complicated, backend=backend(), static_argnums=(3,))
_jac_simple = pb.jit(ht_jac_simple, backend=backend(), static_argnums=(2,))
_jac_complicated = pb.jit(ht_jac_complicated, backend=backend(), static_argnums=(3,))


def objective(theta, us, model, parents, points):
    if us is None:
        return _obj_simple(theta, model, parents, points)
    return _obj_complicated(theta, us, model, parents, points)


def jacobian(theta, us, model, parents, points):
    if us is None:
        return _jac_simple(theta, model, parents, points)
    return _jac_complicated(theta, us, model, parents, points)


def prepare(inp, limits=None):
    """The arguments of FUNCTIONS for a GradBench input; raises InputError (see `_ht_model`)."""
    return validate(inp, limits or Limits())


FUNCTIONS = {"objective": objective, "jacobian": jacobian}
