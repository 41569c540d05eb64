"""Numerical methods: Newton, fixed points, bisection, polynomials, quadrature."""
import math

import numpy as np

from ._cases import case

_r = np.random.default_rng(5)


@case(2.0, hess=True)
def newton_sqrt_while(a):
    x = a
    while abs(x * x - a) > 1e-12:
        x = 0.5 * (x + a / x)
    return x


@case(3.0, hess=True)
def newton_cbrt_fixed_iters(a):
    x = 1.0
    for _ in range(30):
        x = x - (x ** 3 - a) / (3 * x ** 2)
    return x


@case(0.5, hess=True)
def newton_kepler_equation(M):
    e = 0.3
    E = M
    for i in range(50):
        dE = (E - e * np.sin(E) - M) / (1 - e * np.cos(E))
        E = E - dE
        if abs(dE) < 1e-13:
            break
    return E


@case(2.0, hess=True)
def newton_while_true_return(a):
    x = 1.0
    while True:
        fx = x * x * x - a
        if abs(fx) < 1e-12:
            return x
        x = x - fx / (3 * x * x)


@case(0.7, hess=True)
def fixed_point_cos(c):
    x = 0.0
    for _ in range(200):
        x = np.cos(c * x)
    return x


@case(0.5, hess=True)
def fixed_point_while(c):
    x = 1.0
    x_new = c * np.cos(x)
    while abs(x_new - x) > 1e-14:
        x = x_new
        x_new = c * np.cos(x)
    return x_new


@case(2.0)
def bisection_root(a):
    lo, hi = 0.0, 3.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if mid * mid - a > 0:
            hi = mid
        else:
            lo = mid
    # bisection alone has zero derivative; the user adds one Newton step
    x = 0.5 * (lo + hi)
    return x - (x * x - a) / (2 * x)


@case(np.array([1.0, -2.0, 0.5, 3.0]), 0.7, hess=True)
def horner(coeffs, x):
    r = 0.0
    for c in coeffs:
        r = r * x + c
    return r


@case(np.array([1.0, -2.0, 0.5, 3.0]), np.linspace(-1, 1, 5), argnums=(0, 1))
def horner_vector(c, x):
    p = np.zeros_like(x)
    for k in range(len(c)):
        p = p * x + c[k]
    return p


@case(np.array([0.5, 0.2, -0.3, 0.1]), 0.3, hess=True)
def chebyshev_recurrence(c, x):
    t0, t1 = 1.0, x
    s = c[0] * t0 + c[1] * t1
    for k in range(2, len(c)):
        t0, t1 = t1, 2 * x * t1 - t0
        s = s + c[k] * t1
    return s


@case(np.array([0.5, 0.2, -0.3, 0.1]), np.linspace(-0.9, 0.9, 4), argnums=(0, 1))
def chebyshev_trig(c, x):
    th = np.arccos(x)
    return np.sum(c[:, None] * np.cos(np.arange(len(c))[:, None] * th[None, :]), axis=0)


@case(1.3, hess=True)
def trapezoid_integral(a):
    xs = np.linspace(0.0, 2.0, 41)
    ys = np.exp(-a * xs ** 2)
    return np.sum((ys[1:] + ys[:-1]) * np.diff(xs)) / 2


@case(1.3, hess=True)
def trapezoid_loop(a):
    n = 40
    h = 1.0 / n
    s = 0.5 * (np.sin(a * 0.0) + np.sin(a * 1.0))
    for i in range(1, n):
        s += np.sin(a * i * h)
    return s * h


@case(0.8, hess=True)
def simpson_integral(k):
    n = 20
    x = np.linspace(0, np.pi, n + 1)
    y = np.sin(k * x) ** 2
    h = x[1] - x[0]
    return h / 3 * (y[0] + 4 * np.sum(y[1:-1:2]) + 2 * np.sum(y[2:-1:2]) + y[-1])


@case(0.8, hess=True)
def simpson_weights_vector(k):
    n = 10
    x = np.linspace(0, 1, n + 1)
    w = np.ones(n + 1)
    w[1:-1:2] = 4
    w[2:-1:2] = 2
    return (x[1] - x[0]) / 3 * np.dot(w, np.exp(k * x))


@case(1.1, hess=True)
def gauss_legendre(a):
    x, w = np.polynomial.legendre.leggauss(5)
    return np.sum(w * np.cos(a * x))


@case(np.array([0.3, 0.1]), hess=True)
def gradient_descent_inner(x0):
    x = x0
    for _ in range(20):
        g = np.array([2 * (x[0] - 1.0) + x[1], 4 * x[1] + x[0]])
        x = x - 0.1 * g
    return np.sum(x ** 2)


@case(np.array([-1.2, 1.0]), hess=True)
def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


@case(np.array([-1.2, 1.0, 0.5, 0.3]), hess=True)
def rosenbrock_loop(x):
    s = 0.0
    for i in range(len(x) - 1):
        s += 100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
    return s


@case(np.array([0.3, -0.4]), hess=True)
def himmelblau(v):
    x, y = v
    return (x ** 2 + y - 11) ** 2 + (x + y ** 2 - 7) ** 2


@case(np.array([0.5, 1.5]))
def beale_unpack(p):
    x, y = p[0], p[1]
    return (1.5 - x + x * y) ** 2 + (2.25 - x + x * y ** 2) ** 2 + (2.625 - x + x * y ** 3) ** 2


@case(2.0, hess=True)
def taylor_exp_series(x):
    s, term = 1.0, 1.0
    for n in range(1, 25):
        term = term * x / n
        s = s + term
    return s


@case(0.5, hess=True)
def continued_fraction_tan(x):
    d = 0.0
    for k in range(12, 0, -1):
        d = x * x / ((2 * k + 1) - d)
    return x / (1 - d)


@case(0.6, hess=True)
def power_series_while(x):
    s = 0.0
    term = x
    n = 1
    while abs(term) > 1e-16:
        s += term / n
        n += 1
        term = term * x
    return s  # -log(1 - x)


@case(1.7, hess=True)
def agm(a):
    b = 1.0
    for _ in range(8):
        a, b = 0.5 * (a + b), math.sqrt(a * b)
    return a


@case(np.array([[4.0, 1.0], [1.0, 3.0]]), hess=True)
def power_iteration(A):
    v = np.ones(2) / np.sqrt(2)
    for _ in range(60):
        w = A @ v
        v = w / np.linalg.norm(w)
    return v @ A @ v


@case(np.array([2.0, 1.0]), hess=True)
def secant_method(p):
    a, b = p[0], p[1]
    x0, x1 = 0.0, 2.0
    for _ in range(30):
        f0 = a * x0 ** 3 - b - x0
        f1 = a * x1 ** 3 - b - x1
        if f1 == f0:
            break
        x0, x1 = x1, x1 - f1 * (x1 - x0) / (f1 - f0)
    return x1


@case(np.array([1.0, 2.0, 3.0, 4.0]), 2.5, hess=True)
def lagrange_interp(ys, x):
    xs = np.array([0.0, 1.0, 2.0, 3.0])
    total = 0.0
    for i in range(4):
        li = 1.0
        for j in range(4):
            if i != j:
                li = li * (x - xs[j]) / (xs[i] - xs[j])
        total = total + ys[i] * li
    return total


@case(np.linspace(0, 1, 6) ** 2, 0.37)
def linear_interp_manual(ys, x):
    xs = np.linspace(0, 1, 6)
    i = int(x * 5)
    t = (x - xs[i]) / (xs[i + 1] - xs[i])
    return (1 - t) * ys[i] + t * ys[i + 1]


@case(np.array([1.0, 2.0, 0.5]), 0.37)
def polyval_np(c, x):
    return np.polyval(c, x)


@case(np.linspace(0, 1, 6) ** 2, 0.37)
def interp_np(ys, x):
    return np.interp(x, np.linspace(0, 1, 6), ys)


@case(0.5, hess=True)
def euler_maclaurin_sum(s):
    return np.sum(1.0 / np.arange(1, 30) ** (s + 1.5))
