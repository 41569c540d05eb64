"""The input of GradBench's "ht" eval, checked and converted (used by `ht.py`).

Contract: `validate(inp, limits)` takes the decoded "input" object and either
returns the arguments of ht's FUNCTIONS, (theta, us, model, parents, points),
or raises `schema.InputError` naming the field by its path
("input.data.model.parents[3]") and saying what is wrong. `us` is None for the
simple variant (an empty "us"), else an (npts, 2) array; `model` is the tuple
(pose_index, base_relatives, inverse_base_absolutes, positions, weights,
mirror, read) of arrays: positions and weights of the distinct vertices the
residuals read (each once, in vertex order), and `read`, which of them each
point reads (npts entries, or 3 * npts corners for the complicated
variant); `parents` is a tuple of Python ints (a static argument: it drives
the loop over bones). Sizes are bounded (`SIZES`) and the elements the
Jacobian needs are checked against `limits.max_elements` before converting.
`SCHEMA` has `fields` (the input's top-level names) as schemas do.
"""
from __future__ import annotations

import numpy as np

from ..schema import Array, InputError, Int, Schema, json_type, show

NTHETA = 26
MIN_BONES = 22    # the pose layout (ADBench's to_pose_params) uses bones 0..21
SIZES = {"bones": (MIN_BONES, 1024), "verts": (1, 1 << 24), "tris": (0, 1 << 24), "npts": (1, 1 << 24)}


def pose_index(bones: int) -> np.ndarray:
    """(bones + 3, 3) ints: where each pose parameter comes from in
    concat([theta, [0.0], [1.0]]): row 0 global rotation, row 1 scale (ones),
    row 2 translation, row 3 + b bone b's (x, z, y) Euler angles (ADBench's
    to_pose_params: three finger bones of each of five fingers move, the first
    in two angles)."""
    zero, one = NTHETA, NTHETA + 1
    idx = np.full((bones + 3, 3), zero, dtype=np.int64)
    idx[0] = [0, 1, 2]
    idx[1] = one
    idx[2] = [3, 4, 5]
    k, row = 6, 5
    for _finger in range(5):
        for j in range(3):
            idx[row, 0] = k
            k += 1
            if j == 0:
                idx[row, 1] = k
                k += 1
            row += 1
        row += 1
    return idx


class _Fields:
    """The input's top-level fields, as a schema lists them."""

    def __init__(self, names):
        self.fields = tuple(type("Field", (), {"name": n})() for n in names)


SCHEMA = _Fields(["theta", "us", "data"])

_MODEL = Schema("ht", [
    Int("bone_count", min=SIZES["bones"][0], max=SIZES["bones"][1]),
    Array("parents", "bone_count"),
    Array("base_relatives", "bone_count", 4, 4), Array("inverse_base_absolutes", "bone_count", 4, 4),
    Array("base_positions", "verts", 4), Array("weights", "verts", "bone_count"),
    Array("triangles", "tris", 3),
], sizes={"verts": SIZES["verts"], "tris": SIZES["tris"]})


def _within(prefix, schema, obj, limits):
    """`schema.validate` on a nested object, its messages naming fields under `prefix`."""
    try:
        return schema.validate(obj, limits)
    except InputError as e:
        raise InputError(e.msg.replace("input.", prefix), hint=e.hint) from None


def _object(path, v, keys):
    if not isinstance(v, dict):
        raise InputError(f"{path} must be an object, got {json_type(v)} {show(v)}")
    for k in keys:
        if k not in v:
            raise InputError(f"{path}.{k} is missing", hint=f"{path} needs " + ", ".join(keys))
    return v


def _ints(path, a, lo, hi, what):
    """`a` (float64, from the schema) as int64, each an integer in [lo, hi)."""
    bad = np.argwhere((a != np.floor(a)) | (a < lo) | (a >= hi))
    if len(bad):
        i = tuple(int(j) for j in bad[0])
        x = a[i].item()
        raise InputError(f"{path}{''.join(f'[{j}]' for j in i)} = {show(int(x) if x == int(x) else x)} must be an integer "
                         f"in [{lo}, {hi}) ({what})")
    return a.astype(np.int64)


def validate(inp, limits):
    _object("input", inp, ("theta", "us", "data"))
    data = _object("input.data", inp["data"], ("model", "correspondences", "points"))
    model = _object("input.data.model", data["model"],
                    ("bone_count", "bone_names", "parents", "base_relatives", "inverse_base_absolutes",
                     "base_positions", "weights", "triangles", "is_mirrored"))
    m = _within("input.data.model.", _MODEL, model, limits)
    nb, nv, nt = m["bone_count"], m["verts"], m["tris"]
    names = model["bone_names"]
    if not isinstance(names, list) or len(names) != nb or not all(isinstance(s, str) for s in names):
        raise InputError(f"input.data.model.bone_names must be a list of {nb} strings (bone_count), "
                         f"got {show(names)}")
    mirrored = model["is_mirrored"]
    if not isinstance(mirrored, bool):
        raise InputError(f"input.data.model.is_mirrored must be a boolean, got {json_type(mirrored)} {show(mirrored)}")
    parents = _ints("input.data.model.parents", m["parents"], -1, nb, "-1 or an earlier bone")
    for i, p in enumerate(parents):
        if p >= i:
            raise InputError(f"input.data.model.parents[{i}] = {p} must be -1 or an earlier bone (below {i})")
    complicated = inp["us"] != []
    top = Schema("ht", [Array("theta", NTHETA), Array("correspondences", "npts"), Array("points", "npts", 3)]
                 + ([Array("us", "npts", 2)] if complicated else []),
                 sizes={"npts": SIZES["npts"]},
                 elements=("(npts * corners) * (bones + 1) * 28", lambda z: z["npts"] * (3 if complicated else 1)
                           * (nb + 1) * (NTHETA + 3)))
    flat = {"theta": inp["theta"], "us": inp["us"], "correspondences": data["correspondences"],
            "points": data["points"]}
    try:
        v = top.validate(flat, limits)
    except InputError as e:
        msg = e.msg.replace("input.correspondences", "input.data.correspondences")
        raise InputError(msg.replace("input.points", "input.data.points"), hint=e.hint) from None
    if complicated:
        if nt == 0:
            raise InputError("input.data.model.triangles is empty, but the complicated variant (a non-empty "
                             "\"us\") indexes triangles")
        corr = _ints("input.data.correspondences", v["correspondences"], 0, nt, "a triangle of the model")
        tris = _ints("input.data.model.triangles", m["triangles"], 0, nv, "a vertex of the model")
        verts = tris[corr].reshape(-1)
    else:
        verts = _ints("input.data.correspondences", v["correspondences"], 0, nv, "a vertex of the model")
    mirror = np.array([-1.0 if mirrored else 1.0, 1.0, 1.0])
    # each vertex the residuals read is skinned once, then read back per point or corner
    used, read = np.unique(verts, return_inverse=True)
    arrays = (pose_index(nb), m["base_relatives"], m["inverse_base_absolutes"],
              np.ascontiguousarray(m["base_positions"][used]), np.ascontiguousarray(m["weights"][used]), mirror,
              np.ascontiguousarray(read.reshape(-1), dtype=np.int64))
    return v["theta"], (v["us"] if complicated else None), arrays, tuple(int(p) for p in parents), v["points"]
