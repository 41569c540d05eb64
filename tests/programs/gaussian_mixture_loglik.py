"""Log-likelihood of 1-D data under a Gaussian mixture (logsumexp over components)."""
import numpy as np


def f(logits, means, log_sigmas, data):
    lw = logits - np.max(logits)
    lw = lw - np.log(np.sum(np.exp(lw)))
    sig = np.exp(log_sigmas)
    z = (data[:, None] - means[None, :]) / sig[None, :]
    comp = lw[None, :] - 0.5 * z * z - log_sigmas[None, :] - 0.5 * np.log(2.0 * np.pi)
    m = np.max(comp, axis=1, keepdims=True)
    ll = m[:, 0] + np.log(np.sum(np.exp(comp - m), axis=1))
    return np.sum(ll)


def args():
    rng = np.random.default_rng(24)
    data = np.concatenate([rng.normal(-1.0, 0.5, size=4), rng.normal(1.5, 0.7, size=4)])
    return (np.array([0.1, -0.2, 0.3]), np.array([-1.0, 0.2, 1.4]),
            np.array([-0.5, 0.0, -0.3]), data)


ARGNUMS = (0, 1, 2)
ORDER = 2
TAGS = {"logsumexp", "broadcast", "keepdims", "max"}
