"""Embedding lookup inside a map: each iteration reads one row table[ids[i]] of a
free table (repeated ids), so the adjoint of the table is sparse per iteration."""
import numpy as np
import pullback as pb


def f(table, ids, weights, proj):
    def score(j, w):
        e = table[j]
        return w * np.tanh(np.dot(e, proj))

    return np.sum(pb.map(score, ids, weights) ** 2) + 0.1 * np.sum(table[ids[0]])


def PYTHON_REF(table, ids, weights, proj):
    s = np.array([w * np.tanh(np.dot(table[j], proj)) for j, w in zip(ids, weights)])
    return np.sum(s ** 2) + 0.1 * np.sum(table[ids[0]])


def args():
    rng = np.random.default_rng(121)
    return (rng.normal(size=(12, 3)), np.array([4, 0, 11, 4, 7], dtype=np.int64), rng.normal(size=5),
            rng.normal(size=3))


ARGNUMS = (0, 2, 3)
ORDER = 2
TAGS = {"map", "gather", "int_array"}
