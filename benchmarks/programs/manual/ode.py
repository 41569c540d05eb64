"""ode by hand in Numba: s RK4 steps of y'_0 = x_0, y'_i = x_i y_{i-1} on [0, 2], y(0) = 0.

Gradient of y_last(2) w.r.t. x by a hand-written adjoint: the forward sweep stores y before
each step (s * n doubles); the reverse sweep recomputes that step's four stages from it and
propagates the adjoints of y and x through the stages in reverse
(f(x, u)_0 = x_0, f(x, u)_i = x_i u_{i-1}: d/dx_i += fbar_i u_{i-1}, d/du_{i-1} += fbar_i x_i).
"""
import numba
import numpy as np


@numba.njit(cache=False, fastmath=False)
def _rhs(x, u, out):
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = x[i] * u[i - 1]


@numba.njit(cache=False, fastmath=False)
def _stages(x, y, h, u2, u3, u4, k1, k2, k3, k4):
    n = x.shape[0]
    _rhs(x, y, k1)
    for i in range(n):
        u2[i] = y[i] + (0.5 * h) * k1[i]
    _rhs(x, u2, k2)
    for i in range(n):
        u3[i] = y[i] + (0.5 * h) * k2[i]
    _rhs(x, u3, k3)
    for i in range(n):
        u4[i] = y[i] + h * k3[i]
    _rhs(x, u4, k4)


@numba.njit(cache=False, fastmath=False)
def primal(x, s):
    n = x.shape[0]
    h = 2.0 / s
    y = np.zeros(n)
    u2, u3, u4 = np.empty(n), np.empty(n), np.empty(n)
    k1, k2, k3, k4 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    for _ in range(s):
        _stages(x, y, h, u2, u3, u4, k1, k2, k3, k4)
        for i in range(n):
            y[i] = y[i] + (h / 6.0) * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
    return y


@numba.njit(cache=False, fastmath=False)
def _rhs_adjoint(x, u, kbar, xbar, ubar):
    # ubar = adjoint of u from this f (overwritten); xbar accumulated
    n = x.shape[0]
    xbar[0] += kbar[0]
    for i in range(1, n):
        xbar[i] += kbar[i] * u[i - 1]
        ubar[i - 1] = kbar[i] * x[i]
    ubar[n - 1] = 0.0


@numba.njit(cache=False, fastmath=False)
def gradient(x, s):
    n = x.shape[0]
    h = 2.0 / s
    ys = np.empty((s, n))
    y = np.zeros(n)
    u2, u3, u4 = np.empty(n), np.empty(n), np.empty(n)
    k1, k2, k3, k4 = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    for step in range(s):
        ys[step] = y
        _stages(x, y, h, u2, u3, u4, k1, k2, k3, k4)
        for i in range(n):
            y[i] = y[i] + (h / 6.0) * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
    xbar = np.zeros(n)
    ybar = np.zeros(n)
    ybar[n - 1] = 1.0
    kb1, kb2, kb3, kb4, ub = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    for step in range(s - 1, -1, -1):
        yv = ys[step]
        _stages(x, yv, h, u2, u3, u4, k1, k2, k3, k4)
        for i in range(n):
            kb1[i] = (h / 6.0) * ybar[i]
            kb2[i] = (h / 3.0) * ybar[i]
            kb3[i] = (h / 3.0) * ybar[i]
            kb4[i] = (h / 6.0) * ybar[i]
        # k4 = f(x, u4), u4 = y + h k3
        _rhs_adjoint(x, u4, kb4, xbar, ub)
        for i in range(n):
            ybar[i] += ub[i]
            kb3[i] += h * ub[i]
        # k3 = f(x, u3), u3 = y + h/2 k2
        _rhs_adjoint(x, u3, kb3, xbar, ub)
        for i in range(n):
            ybar[i] += ub[i]
            kb2[i] += (0.5 * h) * ub[i]
        # k2 = f(x, u2), u2 = y + h/2 k1
        _rhs_adjoint(x, u2, kb2, xbar, ub)
        for i in range(n):
            ybar[i] += ub[i]
            kb1[i] += (0.5 * h) * ub[i]
        # k1 = f(x, y)
        _rhs_adjoint(x, yv, kb1, xbar, ub)
        for i in range(n):
            ybar[i] += ub[i]
    return xbar
