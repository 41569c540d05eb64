"""ht: GradBench's hand tracking on a synthetic model (a compile-time case, not in `NAMES`).

`compile_time.py --cases ht:simple-100` profiles the cold compile of the GradBench module's
objective (the "primal") and dense Jacobian (the "derivative"), exactly the functions the
GradBench server calls (`pullback.gradbench.modules.ht.FUNCTIONS`). Throughput against JAX and
the hand-derived Numba is `gradbench_jac.py`'s job (its `ht_input` is this module's), so only
`tool_pullback` is defined and `run.py` does not list this program.

The model: 22 bones in GradBench's finger layout, 544 vertices and 1084 triangles (ADBench's
small model's sizes), three random bones per vertex, `npts` correspondences.
"""
import numpy as np

from pullback.gradbench.modules import ht

DESCRIPTION = "hand tracking residuals (GradBench ht); derivative = dense Jacobian by 26 jvps"

SIZES = {"small": {"npts": 10, "complicated": 0}, "default": {"npts": 100, "complicated": 0},
         "simple-100": {"npts": 100, "complicated": 0}, "complicated-100": {"npts": 100, "complicated": 1}}
GRADBENCH = ("simple-100", "complicated-100")
BUMP = ("npts", 10)


def ht_input(nverts, ntris, npts, complicated, seed=0):
    rng = np.random.default_rng(seed)
    bones = 22
    parents = [-1, 0] + [1 + 4 * (i // 4) if i % 4 == 2 else i - 1 for i in range(2, bones)]

    def rigid():
        a = rng.normal(size=3) * 0.3
        th = np.linalg.norm(a)
        k = a / th
        K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
        M = np.eye(4)
        M[:3, :3] = np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K
        M[:3, 3] = rng.normal(size=3) * 0.1
        return M.tolist()
    w = np.zeros((nverts, bones))
    for v in range(nverts):
        bs = rng.choice(bones, size=3, replace=False)
        w[v, bs] = rng.dirichlet(np.ones(3))
    model = {"bone_count": bones, "bone_names": [f"b{i}" for i in range(bones)], "parents": parents,
             "base_relatives": [rigid() for _ in range(bones)],
             "inverse_base_absolutes": [rigid() for _ in range(bones)],
             "base_positions": np.concatenate([rng.normal(size=(nverts, 3)), np.ones((nverts, 1))], 1).tolist(),
             "weights": w.tolist(), "triangles": rng.integers(0, nverts, size=(ntris, 3)).tolist(),
             "is_mirrored": False}
    corr = rng.integers(0, ntris if complicated else nverts, size=npts)
    return {"theta": (0.3 * rng.normal(size=26)).tolist(),
            "us": rng.uniform(0, 0.5, size=(npts, 2)).tolist() if complicated else [],
            "data": {"model": model, "correspondences": corr.tolist(), "points": rng.normal(size=(npts, 3)).tolist()}}


def make_input(p, rng):
    del rng   # the model's own seed: the same model for every case
    return ht_input(544, 1084, p["npts"], bool(p["complicated"]))


def tool_pullback(inp, backend):
    del backend   # the module's own (PULLBACK_GRADBENCH_BACKEND, else pullback's default: numba)
    return ht.FUNCTIONS["objective"], ht.FUNCTIONS["jacobian"], ht.prepare(inp)
