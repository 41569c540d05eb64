"""The GradBench modules ba and ht (issue 13, section 3): sparse and structured Jacobians.

Through the subprocess protocol (tests/test_gradbench.py's `session`), each
module's outputs are checked against an independent NumPy reference written
here, following ADBench's C++ step by step with loops (ba's projection and
Rodrigues rotation; ht's pose parameters, Euler angles, bone chain, skinning
and global transform), and Jacobians against central finite differences of
that reference. Inputs are small and made here in GradBench's format. ba's
whole sparse Jacobian (GradBench's reply holds only its first entries) is
checked in-process on data that is not replicated (distinct cameras, points,
weights, a zero rotation). The numba runs are slow tests (compiling takes
minutes on this machine); the others run on the tests' pysource backend.
"""
import pathlib
import sys

import numpy as np
import pytest

from pullback.gradbench.modules import ba, ht
from pullback.gradbench.schema import InputError

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))
import test_gradbench  # the subprocess helpers of tests/test_gradbench.py
from test_gradbench import evaluate, session


def evaluate_numba(module, calls, monkeypatch):
    """`evaluate` on pullback's default backend (numba), allowing for compiles of minutes
    on a loaded machine (ht's staged programs take numba long to compile)."""
    real = test_gradbench.subprocess.run
    monkeypatch.setattr(test_gradbench.subprocess, "run", lambda *a, **kw: real(*a, **dict(kw, timeout=1800)))
    return evaluate(module, calls, default_backend=True)


def close(a, b, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=rtol, atol=atol)


# --- ba: reference ---------------------------------------------------------------------------------

def ref_reproj(cam, X, w, feat):
    """ADBench's computeReprojError for one observation, as scalar code."""
    rot, C = cam[0:3], cam[3:6]
    Xo = [X[i] - C[i] for i in range(3)]
    sqtheta = sum(r * r for r in rot)
    if sqtheta != 0:
        theta = np.sqrt(sqtheta)
        c, s = np.cos(theta), np.sin(theta)
        k = [r / theta for r in rot]
        cross = [k[1] * Xo[2] - k[2] * Xo[1], k[2] * Xo[0] - k[0] * Xo[2], k[0] * Xo[1] - k[1] * Xo[0]]
        tmp = (k[0] * Xo[0] + k[1] * Xo[1] + k[2] * Xo[2]) * (1 - c)
        Xc = [Xo[i] * c + cross[i] * s + k[i] * tmp for i in range(3)]
    else:
        cross = [rot[1] * Xo[2] - rot[2] * Xo[1], rot[2] * Xo[0] - rot[0] * Xo[2], rot[0] * Xo[1] - rot[1] * Xo[0]]
        Xc = [Xo[i] + cross[i] for i in range(3)]
    p = [Xc[0] / Xc[2], Xc[1] / Xc[2]]
    rsq = p[0] ** 2 + p[1] ** 2
    L = 1 + cam[9] * rsq + cam[10] * rsq * rsq
    return [w * (p[i] * L * cam[6] + cam[7 + i] - feat[i]) for i in range(2)]


def ref_ba(cams, X, w, obs, feats):
    """All 3p residuals: reprojection (2 per observation), then weights."""
    r = [e for i in range(len(w)) for e in ref_reproj(cams[obs[i][0]], X[obs[i][1]], w[i], feats[i])]
    return np.array(r + [1 - wi * wi for wi in w])


def ba_problem(n=3, m=4, p=7, seed=1):
    rng = np.random.default_rng(seed)
    cams = np.array([0.1, -0.2, 0.3, 1.0, 2.0, -10.0, 500.0, 3.0, 4.0, 1e-3, 1e-6]) + 0.05 * rng.normal(size=(n, 11))
    cams[1, :3] = 0.0                  # a zero rotation: Rodrigues' first-order branch
    X = rng.normal(size=(m, 3))
    w = 1 + 0.1 * rng.normal(size=p)
    obs = np.stack([np.arange(p) % n, rng.integers(0, m, p)], axis=1)
    return cams, X, w, obs, rng.normal(size=(p, 2))


def ba_fd_jacobian(cams, X, w, obs, feats):
    n, m = len(cams), len(X)
    x0 = np.concatenate([cams.ravel(), X.ravel(), w])

    def f(x):
        return ref_ba(x[:11 * n].reshape(n, 11), x[11 * n:11 * n + 3 * m].reshape(m, 3), x[11 * n + 3 * m:], obs, feats)

    J = np.zeros((3 * len(w), x0.size))
    for j in range(x0.size):
        h = 1e-6 * max(1.0, abs(x0[j]))
        e = np.zeros_like(x0)
        e[j] = h
        J[:, j] = (f(x0 + e) - f(x0 - e)) / (2 * h)
    return J


def dense(rows, cols, vals, shape):
    """A GradBench row-major sparse matrix as a dense array; each row's columns are distinct."""
    D = np.zeros(shape)
    for r in range(shape[0]):
        seen = cols[rows[r]:rows[r + 1]]
        assert len(set(seen.tolist())) == len(seen)
        D[r, seen] = vals[rows[r]:rows[r + 1]]
    return D


def ba_input(n, m, p, seed=0):
    rng = np.random.default_rng(seed)
    cam = np.array([0.1, -0.2, 0.3, 1.0, 2.0, -10.0, 500.0, 3.0, 4.0, 1e-3, 1e-6]) + 0.05 * rng.normal(size=11)
    return {"n": n, "m": m, "p": p, "cam": cam.tolist(), "x": rng.normal(size=3).tolist(),
            "w": float(1 + 0.1 * rng.normal()), "feat": rng.normal(size=2).tolist()}


def full_ba(inp):
    """GradBench's replication of a compressed ba input (as its C++ from_json)."""
    n, m, p = inp["n"], inp["m"], inp["p"]
    return (np.tile(inp["cam"], (n, 1)), np.tile(inp["x"], (m, 1)), np.full(p, inp["w"]),
            np.array([[i % n, i % m] for i in range(p)]), np.tile(inp["feat"], (p, 1)))


# --- ba: tests -------------------------------------------------------------------------------------

def test_ba_whole_sparse_jacobian_matches_finite_differences():
    cams, X, w, obs, feats = ba_problem()
    rows, cols, vals = ba.sparse_jacobian(cams, X, w, obs, feats)
    p = len(w)
    assert rows.shape == (3 * p + 1,) and cols.shape == vals.shape == (31 * p,)
    J = ba_fd_jacobian(cams, X, w, obs, feats)
    D = dense(rows, cols, vals, J.shape)
    close(D, J, rtol=1e-5, atol=1e-5 * np.abs(J).max())
    assert np.count_nonzero(J[np.abs(D) == 0]) == 0    # every nonzero of the Jacobian is in the pattern


def check_ba_outputs(inp, obj, jac):
    args = full_ba(inp)
    p = inp["p"]
    ref = ref_ba(*args)
    assert obj["reproj_error"]["repeated"] == p and obj["w_err"]["repeated"] == p
    close(obj["reproj_error"]["elements"], ref[:2])
    close(obj["w_err"]["element"], ref[2 * p])
    J = ba_fd_jacobian(*args)
    n, m = inp["n"], inp["m"]
    # GradBench's reply: the first 30 entries of rows, cols and vals (observation 0's two rows), then the last
    assert jac["rows"][:3] == [0, 15, 30] and jac["rows"][-1] == 31 * p
    assert all(isinstance(v, int) for v in jac["rows"] + jac["cols"])
    assert jac["cols"][:15] == list(range(11)) + [11 * n + k for k in range(3)] + [11 * n + 3 * m]
    assert jac["cols"][15:30] == jac["cols"][:15] and jac["cols"][30] == 11 * n + 3 * m + p - 1
    scale = np.abs(J).max()
    close(jac["vals"][:15], J[0, jac["cols"][:15]], rtol=1e-5, atol=1e-6 * scale)
    close(jac["vals"][15:30], J[1, jac["cols"][:15]], rtol=1e-5, atol=1e-6 * scale)
    close(jac["vals"][30], J[3 * p - 1, -1], rtol=1e-5)


def test_ba_protocol():
    inp = ba_input(2, 3, 11)
    obj, jac = evaluate("ba", [("objective", inp), ("jacobian", inp)])
    check_ba_outputs(inp, obj, jac)


@pytest.mark.slow
def test_ba_protocol_numba(monkeypatch):
    inp = ba_input(3, 5, 12, seed=2)
    obj, jac = evaluate_numba("ba", [("objective", inp), ("jacobian", inp)], monkeypatch)
    check_ba_outputs(inp, obj, jac)


def test_ba_errors():
    good = ba_input(2, 3, 11)
    msgs = [{"id": 0, "kind": "define", "module": "ba"}]
    bad = [dict(good, cam=good["cam"][:10]), dict(good, p=0), dict(good, w="1"),
           {k: v for k, v in good.items() if k != "feat"}]
    msgs += [{"id": 1 + i, "kind": "evaluate", "module": "ba", "function": "jacobian", "input": b}
             for i, b in enumerate(bad)]
    replies = session(msgs)
    assert replies[0]["success"] is True
    errors = [r["error"] for r in replies[1:]]
    assert all(r["success"] is False for r in replies[1:])
    assert "input.cam has length 10, expected 11" in errors[0]
    assert "input.p must be an integer in [1" in errors[1]
    assert "input.w must be a number" in errors[2]
    assert "input.feat is missing" in errors[3]


def test_ba_schema_bounds_elements():
    from pullback.gradbench.schema import Limits

    with pytest.raises(InputError, match="above the server's limit"):
        ba.prepare(ba_input(2, 3, 10 ** 6), Limits(max_elements=10 ** 6))


# --- ht: inputs and reference ----------------------------------------------------------------------

def rigid(rng, scale=0.3):
    """A random 4x4 rotation-and-translation."""
    a = rng.normal(size=3) * scale
    th = np.linalg.norm(a)
    k = a / th
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    M = np.eye(4)
    M[:3, :3] = np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K
    M[:3, 3] = rng.normal(size=3)
    return M


def ht_input(nverts=30, npts=8, complicated=False, bones=22, seed=0, mirrored=False):
    rng = np.random.default_rng(seed)
    parents = [-1] + [int(rng.integers(0, i)) for i in range(1, bones)]
    brel = np.stack([rigid(rng) for _ in range(bones)])
    iabs = np.stack([rigid(rng) for _ in range(bones)])
    pos = np.concatenate([rng.normal(size=(nverts, 3)), np.ones((nverts, 1))], axis=1)
    w = np.zeros((nverts, bones))
    for v in range(nverts):
        bs = rng.choice(bones, size=3, replace=False)
        w[v, bs] = rng.dirichlet(np.ones(3))
    ntris = max(2 * nverts, 1)
    tris = rng.integers(0, nverts, size=(ntris, 3))
    corr = rng.integers(0, ntris if complicated else nverts, size=npts)
    model = {"bone_count": bones, "bone_names": [f"b{i}" for i in range(bones)], "parents": parents,
             "base_relatives": brel.tolist(), "inverse_base_absolutes": iabs.tolist(),
             "base_positions": pos.tolist(), "weights": w.tolist(), "triangles": tris.tolist(),
             "is_mirrored": mirrored}
    us = rng.uniform(0, 0.5, size=(npts, 2)).tolist() if complicated else []
    theta = (0.3 * rng.normal(size=26)).tolist()
    return {"theta": theta, "us": us,
            "data": {"model": model, "correspondences": corr.tolist(), "points": rng.normal(size=(npts, 3)).tolist()}}


def ref_ht(inp, theta=None, us=None):
    """The residuals, following ADBench's C++ step by step (column-major 3 x n positions)."""
    m = inp["data"]["model"]
    theta = np.asarray(inp["theta"] if theta is None else theta, dtype=float)
    us = np.asarray(inp["us"] if us is None else us, dtype=float)
    nb = m["bone_count"]
    pp = np.zeros((3, nb + 3))
    pp[:, 0] = theta[0:3]; pp[:, 1] = 1.0; pp[:, 2] = theta[3:6]
    it, ip = 6, 5
    for _ in range(5):
        for i in range(2, 5):
            pp[0, ip] = theta[it]; it += 1
            if i == 2:
                pp[1, ip] = theta[it]; it += 1
            ip += 1
        ip += 1
    rel = []
    for i in range(nb):
        tx, ty, tz = pp[0, i + 3], pp[2, i + 3], pp[1, i + 3]
        Rx = np.eye(3); Rx[1, 1] = Rx[2, 2] = np.cos(tx); Rx[2, 1] = np.sin(tx); Rx[1, 2] = -np.sin(tx)
        Ry = np.eye(3); Ry[0, 0] = Ry[2, 2] = np.cos(ty); Ry[0, 2] = np.sin(ty); Ry[2, 0] = -np.sin(ty)
        Rz = np.eye(3); Rz[0, 0] = Rz[1, 1] = np.cos(tz); Rz[1, 0] = np.sin(tz); Rz[0, 1] = -np.sin(tz)
        tr = np.eye(4); tr[:3, :3] = Rz @ Ry @ Rx
        rel.append(np.asarray(m["base_relatives"][i]) @ tr)
    absolutes = []
    for i in range(nb):
        p = m["parents"][i]
        absolutes.append(rel[i] if p == -1 else absolutes[p] @ rel[i])
    base = np.asarray(m["base_positions"]).T          # 4 x nverts
    W = np.asarray(m["weights"]).T                    # bones x nverts
    positions = np.zeros((3, base.shape[1]))
    for i in range(nb):
        cur = absolutes[i] @ np.asarray(m["inverse_base_absolutes"][i]) @ base
        positions += cur[:3] * W[i]
    if m["is_mirrored"]:
        positions[0] *= -1
    aa = pp[:, 0]
    n = np.sqrt(np.sum(aa * aa))
    if n < 1e-4:
        R = np.eye(3)
    else:
        x, y, z = aa / n
        s, c = np.sin(n), np.cos(n)
        R = np.array([[x*x + (1-x*x)*c, x*y*(1-c) - z*s, x*z*(1-c) + y*s],
                      [x*y*(1-c) + z*s, y*y + (1-y*y)*c, y*z*(1-c) - x*s],
                      [x*z*(1-c) - y*s, z*y*(1-c) + x*s, z*z + (1-z*z)*c]])
    R = R * pp[:, 1][None, :]
    positions = R @ positions + pp[:, 2:3]
    pts = np.asarray(inp["data"]["points"]).T
    corr = inp["data"]["correspondences"]
    err = np.zeros(3 * len(corr))
    for i, k in enumerate(corr):
        if us.size == 0:
            hp = positions[:, k]
        else:
            v = m["triangles"][k]
            hp = us[i, 0] * positions[:, v[0]] + us[i, 1] * positions[:, v[1]] + (1 - us[i, 0] - us[i, 1]) * positions[:, v[2]]
        err[3 * i:3 * i + 3] = pts[:, i] - hp
    return err


def ht_fd_jacobian(inp, eps=1e-6):
    theta = np.asarray(inp["theta"], dtype=float)
    us = np.asarray(inp["us"], dtype=float)
    cols = []
    if us.size:
        for k in range(2):
            d = np.zeros_like(us); d[:, k] = eps
            cols.append((ref_ht(inp, theta, us + d) - ref_ht(inp, theta, us - d)) / (2 * eps))
    for j in range(theta.size):
        d = np.zeros_like(theta); d[j] = eps
        cols.append((ref_ht(inp, theta + d, us) - ref_ht(inp, theta - d, us)) / (2 * eps))
    return np.stack(cols, axis=1)


# --- ht: tests -------------------------------------------------------------------------------------

def check_ht(inp, obj, jac):
    ref = ref_ht(inp)
    close(obj, ref)
    assert np.abs(ref).max() > 0.1
    J = ht_fd_jacobian(inp)
    assert np.shape(jac) == J.shape
    close(jac, J, rtol=1e-5, atol=1e-6 * np.abs(J).max())


@pytest.mark.parametrize("complicated", [False, True], ids=["simple", "complicated"])
def test_ht_protocol(complicated):
    inp = ht_input(nverts=12, npts=5, complicated=complicated, mirrored=complicated, seed=3)
    obj, jac = evaluate("ht", [("objective", inp), ("jacobian", inp)])
    check_ht(inp, obj, jac)


def test_ht_small_rotation_is_the_identity():
    # ADBench takes the global rotation as the identity below |r| = 1e-4; its derivative is then 0
    inp = ht_input(nverts=10, npts=4, seed=4)
    inp["theta"][0:3] = [1e-5, -2e-5, 0.0]
    args = ht.prepare(inp)
    close(ht.objective(*args), ref_ht(inp))
    close(ht.jacobian(*args)[:, 0:3], 0.0)


@pytest.mark.slow
def test_ht_protocol_numba(monkeypatch):
    inp = ht_input(nverts=12, npts=5, complicated=True, seed=5)
    obj, jac = evaluate_numba("ht", [("objective", inp), ("jacobian", inp)], monkeypatch)
    check_ht(inp, obj, jac)


def test_ht_errors():
    good = ht_input(nverts=6, npts=3, seed=6)
    model = good["data"]["model"]

    def with_model(**kw):
        return dict(good, data=dict(good["data"], model=dict(model, **kw)))

    bad = [dict(good, theta=good["theta"][:25]),
           with_model(parents=[-1, 5] + model["parents"][2:]),
           with_model(base_relatives=model["base_relatives"][:21]),
           dict(good, data=dict(good["data"], correspondences=[0, 1, 6])),
           dict(good, us=[[0.1, 0.2]]),
           with_model(is_mirrored=0)]
    msgs = [{"id": 0, "kind": "define", "module": "ht"}]
    msgs += [{"id": 1 + i, "kind": "evaluate", "module": "ht", "function": "objective", "input": b}
             for i, b in enumerate(bad)]
    replies = session(msgs)
    assert all(r["success"] is False for r in replies[1:])
    errors = [r["error"] for r in replies[1:]]
    assert "input.theta has length 25, expected 26" in errors[0]
    assert "input.data.model.parents[1] = 5 must be -1 or an earlier bone" in errors[1]
    assert "input.data.model.base_relatives (axis 0) has length 21" in errors[2]
    assert "input.data.correspondences[2] = 6 must be an integer in [0, 6)" in errors[3]
    assert "input.us (axis 0) has length 1, expected npts = 3" in errors[4]
    assert "input.data.model.is_mirrored must be a boolean" in errors[5]


# --- cost: the structured Jacobians cost a constant times the objective ---------------------------
# (work ratios measured: ba 14 at p = 40 and 160, two reverse passes; ht 77 and 74 at 4 and 16 points,
# 28 forward directions. A Jacobian that grew with the size, a dense p x p one, would fail these.)

def work(jitted, *args, static=()):
    """Arithmetic work (the primitives' cost rules) of one interpreted run of a jitted function."""
    from pullback.backends import interp
    from pullback.pytree import flatten

    ops = interp.OpCount()
    leaves, _ = flatten(tuple(a for i, a in enumerate(args) if i not in static))
    interp.run(jitted.staged(*args).prog, *leaves, ops=ops)
    return ops.work


def test_ba_jacobian_work_is_linear_in_observations():
    ratios = []
    for p in (40, 160):
        cams, X, w, obs, feats = ba.prepare(ba_input(5, 7, p))
        camsT, XT, cam_of, pt_of, featsT = ba.soa(cams, X, obs, feats)
        obj = work(ba._objective, camsT, XT, w, cam_of, pt_of, featsT)
        jac = work(ba._rows, camsT, XT, w, cam_of, pt_of, featsT)
        ratios.append(jac / obj)
    assert ratios[1] < 1.1 * ratios[0] and ratios[1] < 20, ratios


def test_ht_jacobian_work_is_linear_in_points():
    ratios = []
    for npts in (4, 16):
        theta, us, model, parents, points = ht.prepare(ht_input(nverts=20, npts=npts, complicated=True, seed=7))
        obj = work(ht._obj_complicated, theta, us, model, parents, points, static=(3,))
        jac = work(ht._jac_complicated, theta, us, model, parents, points, static=(3,))
        ratios.append(jac / obj)
    assert ratios[1] < 1.1 * ratios[0] and ratios[1] < 3 * (ht.NTHETA + 2), ratios


def test_ht_skins_each_read_vertex_once():
    # many points on a small model: the skinning (and each of the jacobian's jvps of it) runs over the
    # distinct vertices read, so 8x the points costs far less than 8x the work (the residuals, the
    # reads and the Jacobian's rows still grow with the points)
    works = {}
    for npts in (50, 400):
        theta, us, model, parents, points = ht.prepare(ht_input(nverts=10, npts=npts, complicated=True, seed=8))
        assert model[3].shape[0] <= 10 and model[6].shape == (3 * npts,)
        works[npts] = (work(ht._obj_complicated, theta, us, model, parents, points, static=(3,)),
                       work(ht._jac_complicated, theta, us, model, parents, points, static=(3,)))
    obj = works[400][0] / works[50][0]
    jac = works[400][1] / works[50][1]
    assert obj < 2.5 and jac < 2.5, (obj, jac)
