"""Sample calls (format: `_spec`) of the shape functions: reshapes, transposes,
reorderings, triangles and diagonals, repetition, padding, stacking,
splitting and `np.linspace`. Each result is multiplied by a function of the
input, so the second derivatives the order-2 checks compare are not all zero."""
import numpy as np

from ._spec import F, S


def _split(x):
    a, b, c = np.split(x * x, 3)
    d, e = np.split(x, [1], axis=1)
    return a * b - c, d * e[:, :1]


def _array_split(x):
    a, b = np.array_split(x, 2)
    return a * a, np.sin(b)


def _hsplit(x):
    a, b = np.hsplit(x, 2)
    return a * b


def _vsplit(x):
    a, b = np.vsplit(x, 2)
    return a * b


def _dsplit(x):
    a, b = np.dsplit(x, 2)
    return a * b


def _linspace(a, b):
    return np.linspace(a, b, 5) * a + np.linspace(0.0, b, 3, endpoint=False)[1]


def _atleast(x, s):
    return (np.atleast_1d(s) * s, np.atleast_2d(x) * x, np.atleast_3d(x) * x[0])


SAMPLES = [
    S("np.reshape", lambda x: np.reshape(x, (3, 2)) * np.reshape(x, -1)[:2], (F(2, 3),)),
    S("np.ravel", lambda x: np.ravel(x) * x[0, 0], (F(2, 3),)),
    S("np.transpose", lambda x: np.transpose(x, (2, 0, 1)) * np.transpose(x)[0, 0, 0], (F(2, 3, 2),)),
    S("np.moveaxis", lambda x: np.moveaxis(x, 0, -1) * x[0, 0, 0], (F(2, 3, 2),)),
    S("np.swapaxes", lambda x: np.swapaxes(x, 0, 2) * x[1, 0, 0], (F(2, 3, 2),)),
    S("np.expand_dims", lambda x: np.expand_dims(x, 1) * x, (F(3),)),
    S("np.squeeze", lambda x: np.squeeze(x) * np.squeeze(x, axis=0)[0], (F(1, 3, 1),)),
    S("np.broadcast_to", lambda x: np.broadcast_to(x, (2, 3)) * x, (F(3),)),
    S("np.atleast_1d", _atleast, (F(3), F())),
    S("np.atleast_2d", _atleast, (F(3), F())),
    S("np.atleast_3d", _atleast, (F(3), F())),
    S("np.flip", lambda x: np.flip(x) * x + np.flip(x, axis=1), (F(2, 3),)),
    S("np.flipud", lambda x: np.flipud(x) * x, (F(3, 2),)),
    S("np.fliplr", lambda x: np.fliplr(x) * x, (F(2, 3),)),
    S("np.roll", lambda x: np.roll(x, 1) * x + np.roll(x, -1, axis=0), (F(3, 2),)),
    S("np.rot90", lambda x: np.rot90(x) * x[0, 0] + np.rot90(x, 2), (F(3, 3),)),
    S("np.tril", lambda x: np.tril(x) * x + np.tril(x, k=-1), (F(3, 3),)),
    S("np.triu", lambda x: np.triu(x, 1) * x, (F(3, 4),)),
    S("np.diag", lambda x, v: np.diag(x) * np.diag(v, k=1)[:3, :3] + np.diag(x, k=1)[0], (F(3, 3), F(3))),
    S("np.diagonal", lambda x: np.diagonal(x) * np.diagonal(x, offset=-1)[0], (F(3, 3),)),
    S("np.repeat", lambda x: np.repeat(x, 2) * np.repeat(x, [1, 2, 1], axis=1)[0, 0], (F(2, 3),)),
    S("np.tile", lambda x: np.tile(x, (2, 1)) * x, (F(3),)),
    S("np.pad", lambda x: np.pad(x, 1) * np.pad(x, (1, 2), mode="edge")[0]
      + np.pad(x, (2, 1), mode="reflect")[1], (F(4),)),
    S("np.append", lambda x, y: np.append(x, y * y) * np.append(x, y, axis=0)[0], (F(3), F(2))),
    S("np.concatenate", lambda x, y: np.concatenate([x, y * x], axis=1), (F(2, 2), F(2, 2))),
    S("np.stack", lambda x, y: np.stack([x, y * x]) + np.stack((x, y), axis=1), (F(2), F(2))),
    S("np.hstack", lambda x, y: np.hstack([x, y * y]), (F(2, 3), F(2, 1))),
    S("np.vstack", lambda x, y: np.vstack([x, y * x]), (F(3), F(3))),
    S("np.dstack", lambda x, y: np.dstack([x, y * x]), (F(2, 2), F(2, 2))),
    S("np.column_stack", lambda x, y: np.column_stack([x, y * x]), (F(3), F(3))),
    S("np.split", _split, (F(3, 2),)),
    S("np.array_split", _array_split, (F(5),)),
    S("np.hsplit", _hsplit, (F(2, 4),)),
    S("np.vsplit", _vsplit, (F(4, 2),)),
    S("np.dsplit", _dsplit, (F(1, 2, 4),)),
    S("np.linspace", _linspace, (F(), F())),
]
