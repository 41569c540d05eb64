"""GradBench's ba and ht evals: pullback's modules against JAX and a hand-derived Numba baseline.

    PYTHONPATH=src python benchmarks/gradbench_jac.py [--evals ba,ht] [--p 31843] [--npts 100,1600]

Single-threaded throughout (the process is pinned to one core and every thread
pool, BLAS included, set to one thread before anything is imported). For each
eval and size it times, side by side in one process, the objective and the
Jacobian of:

- pullback: the GradBench module's FUNCTIONS (`pullback.gradbench.modules.ba`
  and `.ht`), exactly what the server times;
- jax (if installed, float64): ba by `vmap(jacfwd(one observation))`, ht by
  `jacfwd` of the vectorised objective (us columns by two more batched jvps);
- numba-hand: hand-derived derivatives in Numba loops (no AD), standing in
  for GradBench's manual C++: ba one observation at a time, ht (`numba_ht`)
  by the derivatives of the bone transforms down the kinematic chain, then
  skinning the points over their nonzero weights;
- numba-hand-dense (ht only, tool name `dense`): the same, skinning over every
  bone's weight as GradBench's manual C++ does (it skips no zero weight);
- pb-loop (ba only): the straightforward user code issue 13 measured, a
  per-observation `pb.jacobian` in a Python loop, timed on the first 500
  observations and scaled to p.

Every result is checked against pullback's. Each time is the median of
`--runs` runs after one warm-up call, as wall time and (in parentheses) as the
process's CPU time, all threads: on a shared, loaded machine the CPU time is
the steadier figure, since it does not count the time other processes hold the
core. The first call's wall and CPU time, which include compiling, are
reported separately (with an empty PULLBACK_CACHE_DIR: cold compiles). Sizes: ba at GradBench's ba1 (n = 49,
m = 7776, p = 31843) with a synthetic camera; ht on a synthetic 22-bone model
with 544 vertices and 1084 triangles (ADBench's small model's sizes) at the
given numbers of correspondences, simple and complicated.
"""
import os
import sys

os.environ.setdefault("PULLBACK_TIERED", "0")   # first calls here are numba's whole compile (note [tiered-compile])

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
           "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_v] = "1"
os.environ["PULLBACK_PARALLEL"] = "0"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("JAX_ENABLE_X64", "1")
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

import argparse
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pullback as pb
from pullback.gradbench.modules import ba, ht
from programs.ht import ht_input  # noqa: E402 - the synthetic model, shared with compile_time.py


def timed(f, runs):
    """(result, (first call's wall seconds, its CPU seconds), median wall seconds, median CPU
    seconds of the process). CPU time (all threads) does not count the time other processes hold
    the core, so it is the steadier figure on a shared machine (the first call's includes compiling)."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = f()
    first = (time.perf_counter() - t0, time.process_time() - c0)
    wall, cpu = [], []
    for _ in range(runs):
        c0, t0 = time.process_time(), time.perf_counter()
        f()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return out, first, float(np.median(wall)), float(np.median(cpu))


# --- ba -------------------------------------------------------------------------------------------

BA_CAM = [0.0157, -0.0127, -0.0044, -0.0341, -0.1076, 1.1201, 399.75, 0.0, 0.0, -3.18e-7, 5.88e-13]
BA_X = [-0.612, 0.572, -1.847]
BA_FEAT = [-332.65, 262.09]


def ba_input(n, m, p):
    return {"n": n, "m": m, "p": p, "cam": BA_CAM, "x": BA_X, "w": 1.0, "feat": BA_FEAT}


def numba_ba():
    """Hand-derived BA: objective and the 2 x 15 blocks, one observation at a time."""
    import numba

    @numba.njit(cache=True)
    def project(cam, X, out):
        r0, r1, r2 = cam[0], cam[1], cam[2]
        x0, x1, x2 = X[0] - cam[3], X[1] - cam[4], X[2] - cam[5]
        sq = r0 * r0 + r1 * r1 + r2 * r2
        if sq != 0.0:
            th = np.sqrt(sq)
            c, s = np.cos(th), np.sin(th)
            k0, k1, k2 = r0 / th, r1 / th, r2 / th
            t = (k0 * x0 + k1 * x1 + k2 * x2) * (1.0 - c)
            y0 = x0 * c + (k1 * x2 - k2 * x1) * s + k0 * t
            y1 = x1 * c + (k2 * x0 - k0 * x2) * s + k1 * t
            y2 = x2 * c + (k0 * x1 - k1 * x0) * s + k2 * t
        else:
            y0, y1, y2 = x0 + r1 * x2 - r2 * x1, x1 + r2 * x0 - r0 * x2, x2 + r0 * x1 - r1 * x0
        u, v = y0 / y2, y1 / y2
        rsq = u * u + v * v
        L = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq
        out[0] = u * L * cam[6] + cam[7]
        out[1] = v * L * cam[6] + cam[8]

    @numba.njit(cache=True)
    def objective(cams, X, w, obs, feats):
        p = w.shape[0]
        r = np.empty(2 * p)
        pr = np.empty(2)
        for i in range(p):
            project(cams[obs[i, 0]], X[obs[i, 1]], pr)
            r[2 * i] = w[i] * (pr[0] - feats[i, 0])
            r[2 * i + 1] = w[i] * (pr[1] - feats[i, 1])
        return r, 1.0 - w * w

    @numba.njit(cache=True)
    def jacobian(cams, X, w, obs, feats):
        p = w.shape[0]
        J = np.empty((p, 2, 15))
        dy = np.empty((3, 3))     # d y / d rot
        R = np.empty((3, 3))      # d y / d (X - C)
        xo, y, k, cr, dk, dcr = np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3), np.empty(3)
        B, M = np.empty((2, 3)), np.empty((2, 3))   # d (u, v) / d y, d e / d y
        for i in range(p):
            cam = cams[obs[i, 0]]
            Xi = X[obs[i, 1]]
            wi = w[i]
            r = cam[0:3]
            for a in range(3):
                xo[a] = Xi[a] - cam[3 + a]
            sq = r[0] * r[0] + r[1] * r[1] + r[2] * r[2]
            if sq != 0.0:
                th = np.sqrt(sq)
                c, s = np.cos(th), np.sin(th)
                for a in range(3):
                    k[a] = r[a] / th
                kx = k[0] * xo[0] + k[1] * xo[1] + k[2] * xo[2]
                cr[0], cr[1], cr[2] = k[1] * xo[2] - k[2] * xo[1], k[2] * xo[0] - k[0] * xo[2], k[0] * xo[1] - k[1] * xo[0]
                for a in range(3):
                    y[a] = xo[a] * c + cr[a] * s + k[a] * kx * (1.0 - c)
                # R = c I + s [k]x + (1 - c) k k^T
                for a in range(3):
                    for b in range(3):
                        R[a, b] = (1.0 - c) * k[a] * k[b] + (c if a == b else 0.0)
                R[0, 1] -= s * k[2]
                R[0, 2] += s * k[1]
                R[1, 0] += s * k[2]
                R[1, 2] -= s * k[0]
                R[2, 0] -= s * k[1]
                R[2, 1] += s * k[0]
                for j in range(3):       # direction rot_j
                    dth = k[j]
                    for a in range(3):
                        dk[a] = ((1.0 if a == j else 0.0) - k[a] * k[j]) / th
                    dc, ds = -s * dth, c * dth
                    dcr[0] = dk[1] * xo[2] - dk[2] * xo[1]
                    dcr[1] = dk[2] * xo[0] - dk[0] * xo[2]
                    dcr[2] = dk[0] * xo[1] - dk[1] * xo[0]
                    dkx = dk[0] * xo[0] + dk[1] * xo[1] + dk[2] * xo[2]
                    for a in range(3):
                        dy[a, j] = (xo[a] * dc + dcr[a] * s + cr[a] * ds + dk[a] * kx * (1.0 - c)
                                    + k[a] * (dkx * (1.0 - c) - kx * dc))
            else:
                y[0] = xo[0] + r[1] * xo[2] - r[2] * xo[1]
                y[1] = xo[1] + r[2] * xo[0] - r[0] * xo[2]
                y[2] = xo[2] + r[0] * xo[1] - r[1] * xo[0]
                R[:] = 0.0
                R[0, 0] = R[1, 1] = R[2, 2] = 1.0
                R[0, 1], R[0, 2], R[1, 0], R[1, 2], R[2, 0], R[2, 1] = -r[2], r[1], r[2], -r[0], -r[1], r[0]
                dy[0, 0], dy[0, 1], dy[0, 2] = 0.0, xo[2], -xo[1]
                dy[1, 0], dy[1, 1], dy[1, 2] = -xo[2], 0.0, xo[0]
                dy[2, 0], dy[2, 1], dy[2, 2] = xo[1], -xo[0], 0.0
            u, v = y[0] / y[2], y[1] / y[2]
            rsq = u * u + v * v
            L = 1.0 + cam[9] * rsq + cam[10] * rsq * rsq
            dL = cam[9] + 2.0 * cam[10] * rsq
            f = cam[6]
            # d e / d (u, v) = w f (L I + 2 dL (u, v)^T (u, v))
            A00 = wi * f * (L + 2.0 * dL * u * u)
            A01 = wi * f * 2.0 * dL * u * v
            A11 = wi * f * (L + 2.0 * dL * v * v)
            iz = 1.0 / y[2]
            # d (u, v) / d y
            B[0, 0], B[0, 1], B[0, 2], B[1, 0], B[1, 1], B[1, 2] = iz, 0.0, -u * iz, 0.0, iz, -v * iz
            # M = A B : d e / d y (2 x 3)
            for b in range(3):
                M[0, b] = A00 * B[0, b] + A01 * B[1, b]
                M[1, b] = A01 * B[0, b] + A11 * B[1, b]
            for a in range(2):
                for j in range(3):
                    J[i, a, j] = M[a, 0] * dy[0, j] + M[a, 1] * dy[1, j] + M[a, 2] * dy[2, j]
                    g = M[a, 0] * R[0, j] + M[a, 1] * R[1, j] + M[a, 2] * R[2, j]
                    J[i, a, 3 + j] = -g
                    J[i, a, 11 + j] = g
            J[i, 0, 6], J[i, 1, 6] = wi * u * L, wi * v * L
            J[i, 0, 7], J[i, 1, 7], J[i, 0, 8], J[i, 1, 8] = wi, 0.0, 0.0, wi
            J[i, 0, 9], J[i, 1, 9] = wi * f * u * rsq, wi * f * v * rsq
            J[i, 0, 10], J[i, 1, 10] = wi * f * u * rsq * rsq, wi * f * v * rsq * rsq
            J[i, 0, 14] = u * L * f + cam[7] - feats[i, 0]
            J[i, 1, 14] = v * L * f + cam[8] - feats[i, 1]
        return J, -2.0 * w

    @numba.njit(cache=True)
    def sparse(cams, X, w, obs, feats):
        """The whole Jacobian in GradBench's row-major arrays, as the manual C++ builds it."""
        n, m, p = cams.shape[0], X.shape[0], w.shape[0]
        J, wd = jacobian(cams, X, w, obs, feats)
        rows = np.empty(3 * p + 1, dtype=np.int64)
        cols = np.empty(31 * p, dtype=np.int64)
        vals = np.empty(31 * p)
        rows[0] = 0
        k = 0
        for i in range(p):
            for a in range(2):
                for j in range(15):
                    cols[k] = (11 * obs[i, 0] + j if j < 11 else
                               11 * n + 3 * obs[i, 1] + j - 11 if j < 14 else 11 * n + 3 * m + i)
                    vals[k] = J[i, a, j]
                    k += 1
                rows[2 * i + a + 1] = k
        for i in range(p):
            cols[k] = 11 * n + 3 * m + i
            vals[k] = wd[i]
            k += 1
            rows[2 * p + i + 1] = k
        return rows, cols, vals

    return objective, sparse


def jax_ba():
    import jax
    import jax.numpy as jnp

    def res_one(v, feat):
        cam, X, w = v[0:11], v[11:14], v[14]
        rot, xo = cam[0:3], X - cam[3:6]
        sq = jnp.sum(rot * rot)
        nz = sq != 0
        th = jnp.sqrt(jnp.where(nz, sq, 1.0))
        k = rot / th
        c, s = jnp.cos(th), jnp.sin(th)
        y = jnp.where(nz, xo * c + jnp.cross(k, xo) * s + k * jnp.dot(k, xo) * (1 - c), xo + jnp.cross(rot, xo))
        p = y[0:2] / y[2]
        rsq = jnp.sum(p * p)
        proj = p * (1 + cam[9] * rsq + cam[10] * rsq * rsq) * cam[6] + cam[7:9]
        return w * (proj - feat)

    @jax.jit
    def objective(cams, X, w, obs, feats):
        v = jnp.concatenate([cams[obs[:, 0]], X[obs[:, 1]], w[:, None]], axis=1)
        return jax.vmap(res_one)(v, feats).reshape(-1), 1 - w * w

    @jax.jit
    def jacobian(cams, X, w, obs, feats):
        v = jnp.concatenate([cams[obs[:, 0]], X[obs[:, 1]], w[:, None]], axis=1)
        return jax.vmap(jax.jacfwd(res_one))(v, feats), -2 * w

    def block(f):
        def run(*a):
            return jax.block_until_ready(f(*a))
        return run
    return block(objective), block(jacobian)


def bench_ba(n, m, p, runs, tools):
    args = ba.prepare(ba_input(n, m, p))
    rows = []
    _, f0, ot, omin = timed(lambda: ba.FUNCTIONS["objective"](*args), runs)
    (_, _, ref), f1, jt, jmin = timed(lambda: ba.sparse_jacobian(*args), runs)
    rows.append(("pullback", ot, jt, f0, f1, omin, jmin))
    blocks = ref[:30 * p].reshape(p, 2, 15)
    if "numba" in tools:
        o, j = numba_ba()
        _, f0, ot, omin = timed(lambda: o(*args), runs)
        (_, _, V), f1, jt, jmin = timed(lambda: j(*args), runs)
        np.testing.assert_allclose(V, ref, rtol=1e-6, atol=1e-9 * np.abs(blocks).max())
        rows.append(("numba-hand", ot, jt, f0, f1, omin, jmin))
    if "jax" in tools:
        try:
            o, j = jax_ba()
        except ImportError as e:
            print(f"jax skipped: {e}")
        else:
            _, f0, ot, omin = timed(lambda: o(*args), runs)
            (J, _), f1, jt, jmin = timed(lambda: j(*args), runs)
            np.testing.assert_allclose(np.asarray(J), blocks, rtol=1e-6, atol=1e-9 * np.abs(blocks).max())
            rows.append(("jax", ot, jt, f0, f1, omin, jmin))
    if "loop" in tools:
        jac1 = pb.jacobian(lambda v, f: ba.reproject(v[0:11, None], v[11:14, None], v[14:15], f[:, None])[:, 0])
        cams, X, w, obs, feats = args
        k = min(p, 500)

        def loop():
            return [jac1(np.concatenate([cams[obs[i, 0]], X[obs[i, 1]], w[i:i + 1]]), feats[i]) for i in range(k)]
        out, f1, jt, jmin = timed(loop, max(1, runs // 3))
        np.testing.assert_allclose(out[0], blocks[0], rtol=1e-6, atol=1e-9 * np.abs(blocks).max())
        nan = float("nan")
        rows.append((f"pb-loop (x{p / k:.0f})", nan, jt * p / k, (nan, nan), f1, nan, jmin * p / k))
    return rows


# --- ht -------------------------------------------------------------------------------------------

def numba_ht(parents, skip_zero_weights=True):
    """Hand-derived ht, objective and Jacobian: ADBench's manual hand_d.cpp restructured.

    `skip_zero_weights`: skin each point over its nonzero weights only (numba-hand), or over every
    bone as GradBench's manual C++ does (numba-hand-dense: `ht_d.hpp` multiplies each bone's
    transform, and each of its derivatives, into every vertex and weights the result).

    The bone transforms are computed once; then, for each pose parameter, the derivative of every
    bone's transform it moves (its own bone and the bones below it, or all of them for the global
    rotation), with the global rotation and mirror folded in: out = sum_b w_b M_b q + t with
    M_b = G diag(mirror) T_b[:3]. Each point then sums w_b dM_b q over its corners' nonzero
    weights. Each returned function takes (theta, us, model, points); us is None (simple) or
    (npts, 2) (complicated: two leading Jacobian columns d r / d u0, d r / d u1)."""
    import numba
    nt = 26
    par = np.asarray(parents, dtype=np.int64)
    SKIP = bool(skip_zero_weights)   # a compile-time constant of the njit functions below

    @numba.njit(cache=False)
    def mm(A, B, out):
        for i in range(A.shape[0]):
            for j in range(B.shape[1]):
                s = 0.0
                for k in range(A.shape[1]):
                    s += A[i, k] * B[k, j]
                out[i, j] = s

    @numba.njit(cache=False)
    def forward(theta, pidx, brel, iabs, mirror, par):
        """pose (bones + 3, 3), R (bones, 3, 3) Euler rotations, rel, A (absolutes), T[:, :3]
        (transforms), G (global rotation, columns scaled by scale * mirror), dG[j] = dG / d r_j,
        and M[b] = G T[b, :3]."""
        nb = brel.shape[0]
        pose = np.empty((nb + 3, 3))
        for r in range(nb + 3):
            for a in range(3):
                k = pidx[r, a]
                pose[r, a] = theta[k] if k < nt else (0.0 if k == nt else 1.0)
        # global rotation: Rodrigues R = c I + s [k]x + (1 - c) k k^T and its derivatives in r
        G, dG = np.eye(3), np.zeros((3, 3, 3))
        r = pose[0]
        sq = r[0] * r[0] + r[1] * r[1] + r[2] * r[2]
        if sq >= 1e-8:                       # else the identity, derivative 0, as the module
            th = np.sqrt(sq)
            c, s = np.cos(th), np.sin(th)
            kv = r / th
            for x in range(3):
                for y in range(3):
                    G[x, y] = (1.0 - c) * kv[x] * kv[y] + (c if x == y else 0.0)
            G[0, 1] -= s * kv[2]
            G[0, 2] += s * kv[1]
            G[1, 0] += s * kv[2]
            G[1, 2] -= s * kv[0]
            G[2, 0] -= s * kv[1]
            G[2, 1] += s * kv[0]
            for j in range(3):               # d th = k_j, d k = (e_j - k k_j) / th
                dk = -kv * kv[j] / th
                dk[j] += 1.0 / th
                dc, ds = -s * kv[j], c * kv[j]
                D = dG[j]
                for x in range(3):
                    for y in range(3):
                        D[x, y] = (-dc * kv[x] * kv[y] + (1.0 - c) * (dk[x] * kv[y] + kv[x] * dk[y])
                                   + (dc if x == y else 0.0))
                D[0, 1] -= ds * kv[2] + s * dk[2]
                D[0, 2] += ds * kv[1] + s * dk[1]
                D[1, 0] += ds * kv[2] + s * dk[2]
                D[1, 2] -= ds * kv[0] + s * dk[0]
                D[2, 0] -= ds * kv[1] + s * dk[1]
                D[2, 1] += ds * kv[0] + s * dk[0]
        for y in range(3):                   # columns times scale and mirror
            f = pose[1, y] * mirror[y]
            for x in range(3):
                G[x, y] *= f
                for j in range(3):
                    dG[j, x, y] *= f
        R = np.empty((nb, 3, 3))
        rel, A = np.empty((nb, 4, 4)), np.empty((nb, 4, 4))
        T, M = np.empty((nb, 3, 4)), np.empty((nb, 3, 4))
        for b in range(nb):
            # R = Rz(a1) Ry(a2) Rx(a0), ADBench's xzy order
            cx, sx = np.cos(pose[3 + b, 0]), np.sin(pose[3 + b, 0])
            cz, sz = np.cos(pose[3 + b, 1]), np.sin(pose[3 + b, 1])
            cy, sy = np.cos(pose[3 + b, 2]), np.sin(pose[3 + b, 2])
            Rb = R[b]
            Rb[0, 0], Rb[0, 1], Rb[0, 2] = cz * cy, -sz * cx + cz * sy * sx, sz * sx + cz * sy * cx
            Rb[1, 0], Rb[1, 1], Rb[1, 2] = sz * cy, cz * cx + sz * sy * sx, -cz * sx + sz * sy * cx
            Rb[2, 0], Rb[2, 1], Rb[2, 2] = -sy, cy * sx, cy * cx
            rel[b, :, 3] = brel[b, :, 3]
            mm(brel[b, :, :3], Rb, rel[b, :, :3])
            if par[b] < 0:
                A[b] = rel[b]
            else:
                mm(A[par[b]], rel[b], A[b])
            mm(A[b, :3], iabs[b], T[b])
            mm(G, T[b], M[b])
        return pose, R, rel, A, T, G, dG, M

    @numba.njit(cache=False)
    def derivs(pidx, brel, iabs, par, pose, R, rel, A, T, G, dG):
        """dM[b, j] = d M[b] / d theta_j, and plist[b, :pc[b]] the j with dM[b, j] != 0."""
        nb = brel.shape[0]
        dM = np.zeros((nb, nt, 3, 4))
        plist, pc = np.empty((nb, nt), dtype=np.int64), np.zeros(nb, dtype=np.int64)
        for a in range(3):                   # global rotation: every bone
            j = pidx[0, a]
            for b in range(nb):
                mm(dG[a], T[b], dM[b, j])
                plist[b, pc[b]] = j
                pc[b] += 1
        dA = np.empty((nb, 4, 4))
        drel, dR, dT = np.zeros((4, 4)), np.empty((3, 3)), np.empty((3, 4))
        hit = np.zeros(nb, dtype=np.bool_)
        w = np.empty(3)
        for b in range(nb):
            Rb = R[b]
            for a in range(3):
                j = pidx[3 + b, a]
                if j >= nt:
                    continue
                # d R / d angle = [w]x R, w the angle's axis in the bone's parent frame:
                # x: R e_x (Rx is applied first), z: e_z (Rz last), y: Rz e_y
                if a == 0:
                    w[0], w[1], w[2] = Rb[0, 0], Rb[1, 0], Rb[2, 0]
                elif a == 1:
                    w[0], w[1], w[2] = 0.0, 0.0, 1.0
                else:
                    w[0], w[1], w[2] = -np.sin(pose[3 + b, 1]), np.cos(pose[3 + b, 1]), 0.0
                for k in range(3):
                    dR[0, k] = w[1] * Rb[2, k] - w[2] * Rb[1, k]
                    dR[1, k] = w[2] * Rb[0, k] - w[0] * Rb[2, k]
                    dR[2, k] = w[0] * Rb[1, k] - w[1] * Rb[0, k]
                mm(brel[b, :, :3], dR, drel[:, :3])      # drel[:, 3] = 0
                if par[b] < 0:
                    dA[b] = drel
                else:
                    mm(A[par[b]], drel, dA[b])
                hit[:] = False
                for c in range(b, nb):       # down the chain: dA[c] = dA[parent] rel[c]
                    if c > b:
                        if par[c] < 0 or not hit[par[c]]:
                            continue
                        mm(dA[par[c]], rel[c], dA[c])
                    hit[c] = True
                    mm(dA[c, :3], iabs[c], dT)
                    mm(G, dT, dM[c, j])
                    plist[c, pc[c]] = j
                    pc[c] += 1
        return dM, plist, pc

    @numba.njit(cache=False)
    def objective(theta, us, pidx, brel, iabs, pos, wts, mirror, points, par):
        pose, R, rel, A, T, G, dG, M = forward(theta, pidx, brel, iabs, mirror, par)
        npts, nb = points.shape[0], brel.shape[0]
        nc = 3 if us.shape[0] > 0 else 1
        r = np.empty(3 * npts)
        for i in range(npts):
            o0, o1, o2 = pose[2, 0], pose[2, 1], pose[2, 2]
            for k in range(nc):
                f = 1.0 if nc == 1 else (us[i, k] if k < 2 else 1.0 - us[i, 0] - us[i, 1])
                q = pos[nc * i + k]
                for b in range(nb):
                    wb = wts[nc * i + k, b]
                    if SKIP and wb == 0.0:
                        continue
                    wb *= f
                    Mb = M[b]
                    o0 += wb * (Mb[0, 0] * q[0] + Mb[0, 1] * q[1] + Mb[0, 2] * q[2] + Mb[0, 3] * q[3])
                    o1 += wb * (Mb[1, 0] * q[0] + Mb[1, 1] * q[1] + Mb[1, 2] * q[2] + Mb[1, 3] * q[3])
                    o2 += wb * (Mb[2, 0] * q[0] + Mb[2, 1] * q[1] + Mb[2, 2] * q[2] + Mb[2, 3] * q[3])
            r[3 * i], r[3 * i + 1], r[3 * i + 2] = points[i, 0] - o0, points[i, 1] - o1, points[i, 2] - o2
        return r

    @numba.njit(cache=False)
    def jacobian(theta, us, pidx, brel, iabs, pos, wts, mirror, points, par):
        pose, R, rel, A, T, G, dG, M = forward(theta, pidx, brel, iabs, mirror, par)
        dM, plist, pc = derivs(pidx, brel, iabs, par, pose, R, rel, A, T, G, dG)
        npts, nb = points.shape[0], brel.shape[0]
        nc = 3 if us.shape[0] > 0 else 1
        off = 2 if nc == 3 else 0
        J = np.zeros((3 * npts, off + nt))
        v = np.empty(3)
        for i in range(npts):
            Ji = J[3 * i:3 * i + 3]
            for k in range(nc):
                f = 1.0 if nc == 1 else (us[i, k] if k < 2 else 1.0 - us[i, 0] - us[i, 1])
                q0, q1, q2, q3 = pos[nc * i + k, 0], pos[nc * i + k, 1], pos[nc * i + k, 2], pos[nc * i + k, 3]
                v[:] = 0.0                   # the corner, less the translation
                for b in range(nb):
                    wb = wts[nc * i + k, b]
                    if SKIP and wb == 0.0:
                        continue
                    for x in range(3):
                        v[x] += wb * (M[b, x, 0] * q0 + M[b, x, 1] * q1 + M[b, x, 2] * q2 + M[b, x, 3] * q3)
                    s = -f * wb
                    p0, p1, p2, p3 = s * q0, s * q1, s * q2, s * q3
                    for m in range(pc[b]):
                        j = plist[b, m]
                        D = dM[b, j]
                        e0 = D[0, 0] * p0 + D[0, 1] * p1 + D[0, 2] * p2 + D[0, 3] * p3
                        e1 = D[1, 0] * p0 + D[1, 1] * p1 + D[1, 2] * p2 + D[1, 3] * p3
                        e2 = D[2, 0] * p0 + D[2, 1] * p1 + D[2, 2] * p2 + D[2, 3] * p3
                        Ji[0, off + j] += e0
                        Ji[1, off + j] += e1
                        Ji[2, off + j] += e2
                if nc == 3:                  # d r / d u0 = v2 - v0, d r / d u1 = v2 - v1
                    for x in range(3):
                        if k < 2:
                            Ji[x, k] -= v[x]
                        else:
                            Ji[x, 0] += v[x]
                            Ji[x, 1] += v[x]
            for x in range(3):
                Ji[x, off + pidx[2, x]] = -1.0
        return J

    none = np.empty((0, 2))

    def call(f):
        def run(theta, us, model, points):
            pidx, brel, iabs, pos, wts, mirror = model
            return f(theta, none if us is None else us, pidx, brel, iabs, pos, wts, mirror, points, par)
        return run

    def per_point(model):
        """The module's model (distinct vertices and `read`) with the vertex data gathered per
        point or corner, once, outside the timed calls: the hand code reads it point by point."""
        pidx, brel, iabs, pos, wts, mirror, read = model
        return pidx, brel, iabs, np.ascontiguousarray(pos[read]), np.ascontiguousarray(wts[read]), mirror
    return call(objective), call(jacobian), per_point


def jax_ht(parents):
    import jax
    import jax.numpy as jnp

    def euler(a):
        cx, sx, cz, sz, cy, sy = (jnp.cos(a[:, 0]), jnp.sin(a[:, 0]), jnp.cos(a[:, 1]), jnp.sin(a[:, 1]),
                                  jnp.cos(a[:, 2]), jnp.sin(a[:, 2]))
        return jnp.stack([cz * cy, -sz * cx + cz * sy * sx, sz * sx + cz * sy * cx, sz * cy, cz * cx + sz * sy * sx,
                          -cz * sx + sz * sy * cx, -sy, cy * sx, cy * cx], axis=1).reshape(-1, 3, 3)

    def skinned(theta, model):
        pidx, brel, iabs, pos, wts, mirror, read = model
        nb = brel.shape[0]
        pose = jnp.concatenate([theta, jnp.zeros(1), jnp.ones(1)])[pidx]
        rel = jnp.concatenate([brel[:, :, :3] @ euler(pose[3:]), brel[:, :, 3:]], axis=2)
        absolutes = []
        for i in range(nb):
            absolutes.append(rel[i] if parents[i] < 0 else absolutes[parents[i]] @ rel[i])
        T = jnp.stack(absolutes) @ iabs
        posed = (pos @ T[:, :3, :].reshape(nb * 3, 4).T).reshape(-1, nb, 3)
        verts = jnp.sum(posed * wts[:, :, None], axis=1) * mirror
        r = pose[0]
        sq = jnp.sum(r * r)
        small = sq < 1e-8
        n = jnp.sqrt(jnp.where(small, 1.0, sq))
        x, y, z = r[0] / n, r[1] / n, r[2] / n
        s, c = jnp.sin(n), jnp.cos(n)
        R = jnp.stack([x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s,
                       x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s,
                       x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]).reshape(3, 3)
        G = jnp.where(small, jnp.eye(3), R) * pose[1]
        return (verts @ G.T + pose[2])[read]

    def simple(theta, model, points):
        return (points - skinned(theta, model)).reshape(-1)

    def comp(theta, us, model, points):
        v = skinned(theta, model).reshape(-1, 3, 3)
        u0, u1 = us[:, 0:1], us[:, 1:2]
        return (points - (u0 * v[:, 0] + u1 * v[:, 1] + (1 - u0 - u1) * v[:, 2])).reshape(-1)

    def jac_simple(theta, model, points):
        return jax.jacfwd(simple)(theta, model, points)

    def jac_comp(theta, us, model, points):
        f = jax.jit(comp)
        Jt = jax.jacfwd(f)(theta, us, model, points)
        ju = jax.vmap(lambda e: jax.jvp(lambda u: f(theta, u, model, points), (us,),
                                         (jnp.broadcast_to(e, us.shape),))[1])(jnp.eye(2)).T
        return jnp.concatenate([ju, Jt], axis=1)

    def wrap(f):
        g = jax.jit(f)

        def run(*a):
            return jax.block_until_ready(g(*a))
        return run
    return {"objective": (wrap(simple), wrap(comp)), "jacobian": (wrap(jac_simple), wrap(jac_comp))}


def bench_ht(npts, complicated, runs, tools):
    inp = ht_input(544, 1084, npts, complicated)
    args = ht.prepare(inp)
    theta, us, model, parents, points = args
    rows = []
    _, f0, ot, omin = timed(lambda: ht.FUNCTIONS["objective"](*args), runs)
    ref, f1, jt, jmin = timed(lambda: ht.FUNCTIONS["jacobian"](*args), runs)
    rows.append(("pullback", ot, jt, f0, f1, omin, jmin))
    if "numba" in tools:
        o, j, per_point = numba_ht(parents)
        hargs = (theta, us, per_point(model), points)
        _, f0, ot, omin = timed(lambda: o(*hargs), runs)
        J, f1, jt, jmin = timed(lambda: j(*hargs), runs)
        np.testing.assert_allclose(J, ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max())
        rows.append(("numba-hand", ot, jt, f0, f1, omin, jmin))
    if "dense" in tools:
        o, j, per_point = numba_ht(parents, skip_zero_weights=False)
        hargs = (theta, us, per_point(model), points)
        _, f0, ot, omin = timed(lambda: o(*hargs), runs)
        J, f1, jt, jmin = timed(lambda: j(*hargs), runs)
        np.testing.assert_allclose(J, ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max())
        rows.append(("numba-hand-dense", ot, jt, f0, f1, omin, jmin))
    if "jax" in tools:
        try:
            fs = jax_ht(parents)
        except ImportError as e:
            print(f"jax skipped: {e}")
            return rows
        k = 1 if complicated else 0
        jargs = (theta, us, model, points) if complicated else (theta, model, points)
        _, f0, ot, omin = timed(lambda: fs["objective"][k](*jargs), runs)
        J, f1, jt, jmin = timed(lambda: fs["jacobian"][k](*jargs), runs)
        np.testing.assert_allclose(np.asarray(J), ref, rtol=1e-6, atol=1e-9 * np.abs(ref).max())
        rows.append(("jax", ot, jt, f0, f1, omin, jmin))
    return rows


def show(title, rows):
    """Median wall (and CPU) times in ms; ratios pullback / tool of them."""
    base = rows[0]
    print(f"\n{title}")
    print(f"{'tool':16s} {'obj ms (cpu)':>16s} {'jac ms (cpu)':>16s} {'pb/tool obj':>12s} {'pb/tool jac':>12s} "
          f"{'first obj s (cpu)':>17s} {'first jac s (cpu)':>17s}")
    for name, ot, jt, f0, f1, omin, jmin in rows:
        print(f"{name:16s} {ot * 1e3:8.3f} ({omin * 1e3:6.3f}) {jt * 1e3:8.2f} ({jmin * 1e3:6.2f}) "
              f"{base[1] / ot:5.2f} ({base[5] / omin:4.2f}) {base[2] / jt:5.2f} ({base[6] / jmin:4.2f}) "
              f"{f0[0]:9.1f} ({f0[1]:5.1f}) {f1[0]:9.1f} ({f1[1]:5.1f})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--evals", default="ba,ht")
    ap.add_argument("--tools", default="numba,dense,jax,loop")
    ap.add_argument("--p", type=int, default=31843)
    ap.add_argument("--npts", default="100,1600")
    ap.add_argument("--runs", type=int, default=9)
    a = ap.parse_args()
    tools = set(a.tools.split(","))
    if "ba" in a.evals:
        n, m = (49, 7776) if a.p == 31843 else (max(1, a.p // 650), max(1, a.p // 4))
        show(f"ba n={n} m={m} p={a.p}", bench_ba(n, m, a.p, a.runs, tools))
    if "ht" in a.evals:
        for npts in [int(x) for x in a.npts.split(",")]:
            for comp in (False, True):
                show(f"ht {'complicated' if comp else 'simple'} npts={npts} (544 vertices)",
                     bench_ht(npts, comp, a.runs, tools))


if __name__ == "__main__":
    main()
