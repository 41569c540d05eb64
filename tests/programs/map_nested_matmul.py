"""A matrix product written as nested maps (a map over the rows of A of a map over
the columns of B), followed by a smooth loss."""
import numpy as np
import pullback as pb


def f(A, B):
    C = pb.map(lambda row: pb.map(lambda col: np.sum(row * col), B.T), A)
    return np.sum(np.sin(C)) + 0.5 * np.sum(C * C)


def args():
    rng = np.random.default_rng(122)
    return (rng.normal(size=(3, 4)) * 0.5, rng.normal(size=(4, 2)) * 0.5)


def EXPECTED(a):
    return np.sum(np.sin(a[0] @ a[1])) + 0.5 * np.sum((a[0] @ a[1]) ** 2)


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"map", "nested_map"}
