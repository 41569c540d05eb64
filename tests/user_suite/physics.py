"""Physics: ODE steppers, springs, n-body potentials, Hamiltonians."""
import math

import numpy as np

from ._cases import case

_r = np.random.default_rng(4)


@case(0.8, 0.1, hess=True)
def pendulum_euler(theta0, omega0):
    th, om = theta0, omega0
    dt = 0.05
    for _ in range(40):
        th, om = th + dt * om, om - dt * 9.81 * np.sin(th)
    return th


@case(0.8, 0.1, 9.81, hess=True)
def pendulum_symplectic(theta0, omega0, g):
    th, om = theta0, omega0
    for _ in range(30):
        om = om - 0.05 * g * math.sin(th)
        th = th + 0.05 * om
    return 0.5 * om ** 2 - g * math.cos(th)


def _f_pend(s):
    return np.array([s[1], -np.sin(s[0]) - 0.1 * s[1]])


@case(np.array([1.0, 0.0]), hess=True)
def pendulum_rk4(s):
    h = 0.1
    for _ in range(20):
        k1 = _f_pend(s)
        k2 = _f_pend(s + h / 2 * k1)
        k3 = _f_pend(s + h / 2 * k2)
        k4 = _f_pend(s + h * k3)
        s = s + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return s[0] ** 2 + s[1]


@case(np.array([1.0, 0.5]), 0.3)
def damped_oscillator_trajectory(x0, c):
    x, v = x0[0], x0[1]
    xs = []
    for _ in range(10):
        a = -x - c * v
        v = v + 0.1 * a
        x = x + 0.1 * v
        xs.append(x)
    return np.array(xs)


@case(1.0, 0.5, 0.2, hess=True)
def lotka_volterra_euler(x0, y0, a):
    x, y = x0, y0
    t = 0.0
    while t < 1.0:
        dx = a * x - x * y
        dy = x * y - y
        x, y = x + 0.05 * dx, y + 0.05 * dy
        t += 0.05
    return x * y


@case(_r.standard_normal((4, 2)), hess=True)
def spring_chain_energy(pos):
    k, L = 2.0, 1.0
    e = 0.0
    for i in range(pos.shape[0] - 1):
        d = np.linalg.norm(pos[i + 1] - pos[i])
        e = e + 0.5 * k * (d - L) ** 2
    return e


@case(_r.standard_normal((5, 3)), hess=True)
def nbody_potential(x):
    n = x.shape[0]
    U = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            r = np.sqrt(np.sum((x[i] - x[j]) ** 2))
            U -= 1.0 / r
    return U


@case(_r.standard_normal((5, 3)) * 1.5, hess=True)
def nbody_vectorized(x):
    d = x[:, None, :] - x[None, :, :]
    r2 = np.sum(d ** 2, axis=-1) + np.eye(x.shape[0])
    inv = 1.0 / np.sqrt(r2)
    return -0.5 * (np.sum(inv) - x.shape[0])


@case(_r.uniform(0, 3, (4, 2)) + np.arange(4.0)[:, None] * 1.5, hess=True)
def lennard_jones(x):
    E = 0.0
    for i in range(len(x)):
        for j in range(i):
            r2 = np.sum((x[i] - x[j]) ** 2)
            ir6 = 1.0 / r2 ** 3
            E += 4 * (ir6 ** 2 - ir6)
    return E


@case(_r.standard_normal((5, 3)))
def nbody_forces_grad_inside(x):
    import pullback as pb

    def potential(x):
        d = x[:, None, :] - x[None, :, :]
        r2 = np.sum(d ** 2, axis=-1) + np.eye(x.shape[0])
        return -0.5 * (np.sum(1.0 / np.sqrt(r2)) - x.shape[0])
    F = -pb.grad(potential)(x)
    return np.sum(F * x)


@case(np.array([1.0, 0.0]), np.array([0.0, 1.0]))
def leapfrog_kepler(q, p):
    dt = 0.01
    for _ in range(25):
        r3 = np.sum(q ** 2) ** 1.5
        p = p - 0.5 * dt * q / r3
        q = q + dt * p
        r3 = np.sum(q ** 2) ** 1.5
        p = p - 0.5 * dt * q / r3
    return 0.5 * np.dot(p, p) - 1.0 / np.linalg.norm(q)


@case(np.linspace(0, 1, 8) ** 2, 0.1, hess=True)
def heat_equation_explicit(u0, alpha):
    u = u0.copy()
    for _ in range(10):
        lap = np.zeros_like(u)
        lap[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
        u = u + alpha * lap
    return np.sum(u ** 2)


@case(np.sin(np.linspace(0, np.pi, 10)), hess=True)
def wave_equation_roll(u0):
    u_prev = u0
    u = u0
    c = 0.3
    for _ in range(8):
        u_next = 2 * u - u_prev + c * (np.roll(u, 1) - 2 * u + np.roll(u, -1))
        u_prev, u = u, u_next
    return np.sum(u ** 2)


@case(10.0, 0.7, hess=True)
def projectile_range(v0, angle):
    g = 9.81
    vx, vy = v0 * np.cos(angle), v0 * np.sin(angle)
    t_flight = 2 * vy / g
    return vx * t_flight


@case(10.0, 0.7, 0.05)
def projectile_drag_while(v0, angle, k):
    x, y = 0.0, 0.0
    vx, vy = v0 * np.cos(angle), v0 * np.sin(angle)
    dt = 0.01
    while y >= 0.0:
        v = np.sqrt(vx * vx + vy * vy)
        vx = vx - dt * k * v * vx
        vy = vy - dt * (9.81 + k * v * vy)
        x = x + dt * vx
        y = y + dt * vy
    return x


@case(np.array([0.3, -0.2, 0.5]), np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 3.0]]), hess=True)
def harmonic_energy(x, K):
    return 0.5 * x @ K @ x


@case(1.0, 0.5, hess=True)
def double_well_langevin_deterministic(x0, T):
    x = x0
    noise = np.sin(np.arange(20) * 1.3)
    for i in range(20):
        x = x - 0.01 * (4 * x ** 3 - 4 * x) + np.sqrt(2 * 0.01 * T) * noise[i]
    return x


@case(np.array([0.1, 0.2, 0.3]), hess=True)
def ising_meanfield(m):
    J = 1.0
    h = 0.1
    e = -J * (m[0] * m[1] + m[1] * m[2] + m[2] * m[0]) - h * np.sum(m)
    s = np.sum((1 + m) / 2 * np.log((1 + m) / 2) + (1 - m) / 2 * np.log((1 - m) / 2))
    return e + 0.5 * s


@case(np.array([1.0, 2.0, 0.5]), 0.3)
def van_der_pol_rk2(s0, mu):
    x, v = s0[0], s0[1]
    h = 0.05
    for _ in range(20):
        ax = v
        av = mu * (1 - x ** 2) * v - x
        xm, vm = x + 0.5 * h * ax, v + 0.5 * h * av
        x = x + h * vm
        v = v + h * (mu * (1 - xm ** 2) * vm - xm)
    return x + s0[2] * v
