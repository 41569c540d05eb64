"""lstm by hand in Numba: the ADBench LSTM loss and its gradient w.r.t. (main_params,
extra_params) by a hand-written backward pass through time.

Forward per step t and layer i (all elementwise over b): f = sig(x W0 + B0), g = sig(h W1 + B1),
o = sig(x W2 + B2), u = tanh(h W3 + B3), c' = c f + g u, h' = o tanh(c'), x <- h'; then
ypred = x E1 + E2, total += sum(s_{t+1} (ypred - log(sum exp ypred + 2))); loss = -total / ((c-1) b).
The gradient's forward sweep stores x, h, c, f, g, o, u and tanh(c') per step and layer; the
backward sweep carries the adjoints of each layer's h and c from step t+1 to t.
"""
import math

import numba
import numpy as np


@numba.njit(cache=False, fastmath=False)
def _sig(v):
    return 1.0 / (1.0 + math.exp(-v))


@numba.njit(cache=False, fastmath=False)
def primal(main_params, extra_params, state, sequence):
    layers = main_params.shape[0] // 2
    c, b = sequence.shape
    st = state.copy()
    x = np.empty(b)
    total = 0.0
    for t in range(c - 1):
        for a in range(b):
            x[a] = sequence[t, a] * extra_params[0, a]
        for i in range(layers):
            W = main_params[2 * i]
            B = main_params[2 * i + 1]
            for a in range(b):
                h = st[2 * i, a]
                f = _sig(x[a] * W[a] + B[a])
                g = _sig(h * W[b + a] + B[b + a])
                o = _sig(x[a] * W[2 * b + a] + B[2 * b + a])
                u = math.tanh(h * W[3 * b + a] + B[3 * b + a])
                cell = st[2 * i + 1, a] * f + g * u
                hn = o * math.tanh(cell)
                st[2 * i, a] = hn
                st[2 * i + 1, a] = cell
                x[a] = hn
        s = 0.0
        for a in range(b):
            s += math.exp(x[a] * extra_params[1, a] + extra_params[2, a])
        lse = math.log(s + 2.0)
        for a in range(b):
            total += sequence[t + 1, a] * (x[a] * extra_params[1, a] + extra_params[2, a] - lse)
    return -total / ((c - 1) * b)


@numba.njit(cache=False, fastmath=False)
def gradient(main_params, extra_params, state, sequence):
    layers = main_params.shape[0] // 2
    c, b = sequence.shape
    T = c - 1
    # tape[t, i, slot, a]: 0 x, 1 h, 2 c (inputs), 3 f, 4 g, 5 o, 6 u, 7 tanh(c')
    tape = np.empty((T, layers, 8, b))
    top = np.empty((T, b))          # the top layer's output per step
    st = state.copy()
    x = np.empty(b)
    for t in range(T):
        for a in range(b):
            x[a] = sequence[t, a] * extra_params[0, a]
        for i in range(layers):
            W = main_params[2 * i]
            B = main_params[2 * i + 1]
            for a in range(b):
                h = st[2 * i, a]
                cp = st[2 * i + 1, a]
                f = _sig(x[a] * W[a] + B[a])
                g = _sig(h * W[b + a] + B[b + a])
                o = _sig(x[a] * W[2 * b + a] + B[2 * b + a])
                u = math.tanh(h * W[3 * b + a] + B[3 * b + a])
                cell = cp * f + g * u
                tc = math.tanh(cell)
                tape[t, i, 0, a] = x[a]
                tape[t, i, 1, a] = h
                tape[t, i, 2, a] = cp
                tape[t, i, 3, a] = f
                tape[t, i, 4, a] = g
                tape[t, i, 5, a] = o
                tape[t, i, 6, a] = u
                tape[t, i, 7, a] = tc
                hn = o * tc
                st[2 * i, a] = hn
                st[2 * i + 1, a] = cell
                x[a] = hn
        for a in range(b):
            top[t, a] = x[a]
    gm = np.zeros_like(main_params)
    ge = np.zeros_like(extra_params)
    hbar = np.zeros((layers, b))    # adjoint of each layer's h carried from step t+1
    cbar = np.zeros((layers, b))
    xbar = np.empty(b)
    ey = np.empty(b)
    scale = -1.0 / (T * b)
    for t in range(T - 1, -1, -1):
        # loss term of step t: sum_a s_a (y_a - log(sum exp y + 2))
        s = 0.0
        ssum = 0.0
        for a in range(b):
            ey[a] = math.exp(top[t, a] * extra_params[1, a] + extra_params[2, a])
            s += ey[a]
            ssum += sequence[t + 1, a]
        for a in range(b):
            ybar = scale * (sequence[t + 1, a] - ssum * ey[a] / (s + 2.0))
            ge[1, a] += ybar * top[t, a]
            ge[2, a] += ybar
            xbar[a] = ybar * extra_params[1, a]
        for i in range(layers - 1, -1, -1):
            W = main_params[2 * i]
            gW = gm[2 * i]
            gB = gm[2 * i + 1]
            for a in range(b):
                xa = tape[t, i, 0, a]
                h = tape[t, i, 1, a]
                cp = tape[t, i, 2, a]
                f = tape[t, i, 3, a]
                g = tape[t, i, 4, a]
                o = tape[t, i, 5, a]
                u = tape[t, i, 6, a]
                tc = tape[t, i, 7, a]
                hb = hbar[i, a] + xbar[a]
                ob = hb * tc
                cb = cbar[i, a] + hb * o * (1.0 - tc * tc)
                fp = cb * cp * f * (1.0 - f)
                gp = cb * u * g * (1.0 - g)
                op = ob * o * (1.0 - o)
                up = cb * g * (1.0 - u * u)
                gW[a] += fp * xa
                gB[a] += fp
                gW[b + a] += gp * h
                gB[b + a] += gp
                gW[2 * b + a] += op * xa
                gB[2 * b + a] += op
                gW[3 * b + a] += up * h
                gB[3 * b + a] += up
                cbar[i, a] = cb * f
                hbar[i, a] = gp * W[b + a] + up * W[3 * b + a]
                xbar[a] = fp * W[a] + op * W[2 * b + a]
        for a in range(b):
            ge[0, a] += xbar[a] * sequence[t, a]
    return gm, ge
