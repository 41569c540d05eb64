"""One k-means step with the combinators: distances as nested maps, hard
assignments (argmin; the clusters are well separated, so they do not change
under small perturbations), centroids by pb.hist per coordinate (a map over the
coordinates), the cost by pb.reduce, and a running total by pb.associative_scan."""
import numpy as np
import pullback as pb


def f(X, C):
    k = C.shape[0]
    d2 = pb.map(lambda x: pb.map(lambda c: np.sum((x - c) ** 2), C), X)
    assign = np.argmin(d2, axis=1)
    counts = pb.hist(pb.add, 0.0, k, assign, np.ones(X.shape[0]))
    sums = pb.map(lambda col: pb.hist(pb.add, 0.0, k, assign, col), X.T)
    newC = (sums / counts).T
    per_point = pb.map(lambda x, a: np.sum((x - newC[a]) ** 2) + 0.1 * np.sum((x - C[a]) ** 2), X, assign)
    running = pb.associative_scan(pb.add, 0.0, per_point)
    return pb.reduce(pb.add, 0.0, per_point) + 0.01 * np.sum(running)


def PYTHON_REF(X, C):
    d2 = ((X[:, None, :] - C[None, :, :]) ** 2).sum(-1)
    a = d2.argmin(1)
    newC = np.array([X[a == j].mean(0) for j in range(C.shape[0])])
    per_point = ((X - newC[a]) ** 2).sum(1) + 0.1 * ((X - C[a]) ** 2).sum(1)
    return per_point.sum() + 0.01 * np.cumsum(per_point).sum()


def args():
    rng = np.random.default_rng(127)
    centres = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])
    X = np.concatenate([c + 0.4 * rng.normal(size=(3, 2)) for c in centres])
    return (X, centres + 0.2 * rng.normal(size=(3, 2)))


ARGNUMS = (0, 1)
TAGS = {"map", "nested_map", "hist", "reduce", "scan", "int_array"}
