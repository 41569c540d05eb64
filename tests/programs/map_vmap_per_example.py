"""Per-example gradients with pb.vmap(pb.grad(loss)) (a batched gradient inside f),
then the squared norm of their mean: differentiating it is grad of vmap of grad."""
import numpy as np
import pullback as pb


def loss(w, x, t):
    return 0.5 * (np.tanh(np.dot(w, x)) - t) ** 2


def f(w, X, T):
    G = pb.vmap(pb.grad(loss), in_axes=(None, 0, 0))(w, X, T)
    g = np.mean(G, axis=0)
    return np.dot(g, g) + 0.1 * np.sum(G[0] * G[1])


def PYTHON_REF(w, X, T):
    G = []
    for x, t in zip(X, T):
        p = np.tanh(np.dot(w, x))
        G.append((p - t) * (1 - p * p) * x)
    G = np.array(G)
    g = np.mean(G, axis=0)
    return np.dot(g, g) + 0.1 * np.sum(G[0] * G[1])


def args():
    rng = np.random.default_rng(125)
    return (rng.normal(size=3) * 0.5, rng.normal(size=(5, 3)), rng.normal(size=5) * 0.5)


ARGNUMS = (0, 1, 2)
TAGS = {"map", "vmap", "nested"}
