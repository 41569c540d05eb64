"""Quickstart: differentiate ordinary NumPy code with a loop and an if.

Run:  python examples/quickstart.py
"""
import numpy as np

import pullback as pb


def f(x):
    """A smooth function written the way you'd normally write it."""
    total = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            total = total + np.sin(x[i]) * x[i]
        else:
            total = total + x[i] ** 2
    return total * np.exp(-0.1 * np.sum(x))


def finite_differences(fun, x, h=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (fun(x + e) - fun(x - e)) / (2 * h)
    return g


def main():
    x = np.array([0.5, -1.2, 2.0, 0.3])

    g = pb.grad(f)(x)
    g_fd = finite_differences(f, x)
    value, g2 = pb.value_and_grad(f)(x)

    np.set_printoptions(precision=8, suppress=True)
    print("f(x)                =", f(x))
    print("value_and_grad value=", value)
    print("pb.grad(f)(x)       =", g)
    print("finite differences  =", g_fd)
    print("max abs difference  =", np.max(np.abs(g - g_fd)))
    assert np.allclose(g, g_fd, rtol=1e-5, atol=1e-7)
    assert np.allclose(g, g2)

    print()
    print("# The reverse-mode derivative pullback generated for f (readable Python):")
    print(pb.derivative_source(f, x))


if __name__ == "__main__":
    main()
