"""Unrolled gradient descent inside a differentiated function
(differentiate the final validation loss w.r.t. the init and learning rate)."""
import numpy as np
import pullback as pb

X_TRAIN = np.array([[1.0, 0.5], [0.3, -1.2], [-0.7, 0.8], [1.5, 0.1]])
Y_TRAIN = np.array([0.9, -0.4, 0.3, 1.1])
X_VAL = np.array([[0.2, 0.4], [-1.0, 0.6], [0.8, -0.3]])
Y_VAL = np.array([0.35, -0.2, 0.5])


def loss(w):
    r = X_TRAIN @ w - Y_TRAIN
    return 0.5 * np.mean(r ** 2) + 0.05 * np.sum(w ** 4)


def loss2(w):
    r = X_VAL @ w - Y_VAL
    return np.mean(r ** 2)


def f(w0, lr):
    w = w0
    for _ in range(20):
        w = w - lr * pb.grad(loss)(w)
    return loss2(w)


def _loss_grad(w):
    r = X_TRAIN @ w - Y_TRAIN
    return X_TRAIN.T @ r / X_TRAIN.shape[0] + 0.2 * w ** 3


def PYTHON_REF(w0, lr):
    w = w0
    for _ in range(20):
        w = w - lr * _loss_grad(w)
    return loss2(w)


def args():
    return (np.array([0.1, -0.2]), 0.3)


ARGNUMS = (0, 1)
ORDER = 1
TAGS = {"nested", "loop", "optimization"}
