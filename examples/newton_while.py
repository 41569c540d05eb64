"""Reverse mode through a data-dependent `while` loop.

Newton's method for the cube root runs until the residual is tiny, so the
number of iterations depends on the input.  pullback records exactly the
iterations that ran and differentiates through them; the result matches the
analytic derivative d/da a**(1/3) = 1 / (3 a**(2/3)).

Run:  python examples/newton_while.py
"""
import numpy as np

import pullback as pb


def cube_root(a):
    x = 1.0 + a / 3.0
    fx = x * x * x - a
    it = 0
    while abs(fx) > 1e-12 and it < 100:
        x = x - fx / (3.0 * x * x)
        fx = x * x * x - a
        it += 1
    return x


def weighted_roots(v):
    s = 0.0
    for i in range(v.shape[0]):
        s = s + cube_root(v[i]) * (i + 1.0)
    return s


def main():
    for a in [0.5, 2.0, 27.0, 1000.0]:
        root = cube_root(a)
        d_ad = pb.grad(cube_root)(a)
        d_exact = 1.0 / (3.0 * np.cbrt(a) ** 2)
        print(f"a={a:8.2f}  cbrt={root:.12f}  d/da: pullback={d_ad:.12e}  exact={d_exact:.12e}")
        assert abs(d_ad - d_exact) <= 1e-8 * abs(d_exact)

    # The loop inside a helper, called once per element of a vector:
    v = np.array([0.8, 2.0, 5.5])
    g = pb.grad(weighted_roots)(v)
    print("grad of sum_i (i+1) cbrt(v_i):", g)
    g_exact = np.arange(1, 4) / (3.0 * np.cbrt(v) ** 2)
    print("exact                       :", g_exact)
    assert np.allclose(g, g_exact, rtol=1e-8)


if __name__ == "__main__":
    main()
