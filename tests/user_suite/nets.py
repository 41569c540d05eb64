"""Small neural networks: MLPs, a tiny RNN, attention, layer norm, conv loops."""
import functools

import numpy as np

from ._cases import case

_r = np.random.default_rng(2)
X = _r.standard_normal((5, 3))
T = _r.standard_normal((5, 2))
W1 = _r.standard_normal((3, 4)) * 0.5
b1 = _r.standard_normal(4) * 0.1
W2 = _r.standard_normal((4, 2)) * 0.5
b2 = _r.standard_normal(2) * 0.1
PARAMS_LIST = [(W1, b1), (W2, b2)]
PARAMS_DICT = {"W1": W1, "b1": b1, "W2": W2, "b2": b2}


def relu(x):
    return np.maximum(0, x)


@case(W1, b1, W2, b2, X, T, argnums=(0, 1, 2, 3))
def mlp_tanh_mse(W1, b1, W2, b2, X, T):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - T) ** 2)


@case(W1, b1, W2, b2, X, T, argnums=(0, 2))
def mlp_relu_mse(W1, b1, W2, b2, X, T):
    h = relu(np.dot(X, W1) + b1)
    return 0.5 * np.sum((np.dot(h, W2) + b2 - T) ** 2)


def _predict(params, inputs):
    # autograd's neural_net.py example
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return outputs


@case(PARAMS_LIST, X, T, argnums=0)
def mlp_param_list(params, X, T):
    return np.sum((_predict(params, X) - T) ** 2)


@case(PARAMS_DICT, X, T, argnums=0)
def mlp_param_dict(p, X, T):
    h = np.tanh(X @ p["W1"] + p["b1"])
    logits = h @ p["W2"] + p["b2"]
    return np.sum(logits ** 2) - np.sum(logits * T)


@case(W1, X, hess=True, argnums=0)
def mlp_softplus(W, X):
    h = np.log1p(np.exp(X @ W))
    return np.sum(h ** 2) / h.size


@case(W1, X, argnums=0)
def mlp_leaky_relu(W, X):
    z = X @ W
    return np.sum(np.where(z > 0, z, 0.01 * z) ** 2)


@case(W1, X, argnums=0, hess=True)
def mlp_gelu_tanh(W, X):
    z = X @ W
    g = 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z ** 3)))
    return np.sum(g)


@case(W1, X, argnums=0, hess=True)
def mlp_swish(W, X):
    z = X @ W
    return np.sum(z / (1 + np.exp(-z)))


@case(W1, X, argnums=0)
def mlp_elu(W, X):
    z = X @ W
    return np.sum(np.where(z > 0, z, np.exp(z) - 1))


Wh = _r.standard_normal((3, 3)) * 0.4
Wx = _r.standard_normal((2, 3)) * 0.4
XS = _r.standard_normal((6, 2))


@case(Wh, Wx, XS, argnums=(0, 1), hess=True)
def rnn_loop(Wh, Wx, xs):
    h = np.zeros(3)
    for t in range(xs.shape[0]):
        h = np.tanh(h @ Wh + xs[t] @ Wx)
    return np.sum(h ** 2)


@case(Wh, Wx, XS, argnums=(0, 1))
def rnn_list_of_states(Wh, Wx, xs):
    hs = [np.zeros(3)]
    for x in xs:
        hs.append(np.tanh(np.dot(Wh, hs[-1]) + np.dot(x, Wx)))
    return sum(np.sum(h) for h in hs[1:])


@case(Wh, Wx, XS, argnums=(0, 1))
def gru_like_cell(Wh, Wx, xs):
    h = np.ones(3) * 0.1
    for x in xs:
        z = 1 / (1 + np.exp(-(h @ Wh + x @ Wx)))
        c = np.tanh(x @ Wx - h @ Wh)
        h = z * h + (1 - z) * c
    return h.sum()


@case(_r.standard_normal((4, 3)), _r.standard_normal((3, 3)), _r.standard_normal((3, 3)),
      _r.standard_normal((3, 3)), argnums=(0, 1, 2, 3))
def self_attention(x, Wq, Wk, Wv):
    q, k, v = x @ Wq, x @ Wk, x @ Wv
    s = q @ k.T / np.sqrt(q.shape[-1])
    s = s - s.max(axis=-1, keepdims=True)
    a = np.exp(s)
    a = a / a.sum(axis=-1, keepdims=True)
    return np.sum((a @ v) ** 2)


@case(_r.standard_normal((4, 5)), np.ones(5), np.zeros(5), hess=True, argnums=0)
def layer_norm(x, gamma, beta):
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + 1e-5) * gamma + beta
    return np.sum(y * np.arange(5.0))


@case(_r.standard_normal((6, 3)), argnums=0)
def batch_norm(x):
    mu = np.mean(x, axis=0)
    sd = np.std(x, axis=0)
    return np.sum(((x - mu) / (sd + 1e-5)) ** 3)


@case(_r.standard_normal(10), _r.standard_normal(3), hess=True)
def conv1d_loops(x, k):
    n = x.shape[0] - k.shape[0] + 1
    out = np.zeros(n)
    for i in range(n):
        for j in range(k.shape[0]):
            out[i] += x[i + j] * k[j]
    return np.sum(np.tanh(out))


@case(_r.standard_normal(10), _r.standard_normal(3))
def conv1d_window_dot(x, k):
    K = len(k)
    return sum(np.dot(x[i:i + K], k) ** 2 for i in range(len(x) - K + 1))


@case(_r.standard_normal((6, 6)), _r.standard_normal((3, 3)))
def conv2d_loops(img, k):
    H, W = img.shape
    kh, kw = k.shape
    out = np.zeros((H - kh + 1, W - kw + 1))
    for i in range(H - kh + 1):
        for j in range(W - kw + 1):
            out[i, j] = np.sum(img[i:i + kh, j:j + kw] * k)
    return np.sum(np.maximum(out, 0.0) ** 2)


@case(_r.standard_normal((4, 4)), argnums=0)
def maxpool_2x2(img):
    out = img.reshape(2, 2, 2, 2).max(axis=(1, 3))
    return np.sum(out ** 2)


@case(W1, X, argnums=0)
def dropout_fixed_mask(W, X):
    mask = (np.arange(12).reshape(3, 4) % 3 != 0).astype(float)
    return np.sum(np.tanh(X @ (W * mask)))


@case(_r.standard_normal((3, 4)), _r.standard_normal(4), argnums=(0, 1))
def functools_partial_model(W, b):
    def layer(x, W, b, act):
        return act(x @ W + b)
    f = functools.partial(layer, act=np.tanh)
    return np.sum(f(np.ones((2, 3)), W, b))


@case(np.array([0.5, -0.3]), argnums=0)
def mlp_embedding_lookup(v):
    E = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.2]])
    ids = [2, 0, 1, 2]
    return np.sum(np.tanh(E[ids] @ v))
