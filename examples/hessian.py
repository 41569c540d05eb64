"""Second derivatives and Jacobians: pb.hessian and pb.jacobian.

Run:  python examples/hessian.py
"""
import numpy as np

import pullback as pb


def rosenbrock(x):
    total = 0.0
    for i in range(x.shape[0] - 1):
        total = total + 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return total


def rosenbrock_hessian(x):
    """Hand-derived Hessian, for comparison."""
    n = x.shape[0]
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200.0 * x[i] ** 2 - 400.0 * x[i + 1] + 2.0
        H[i, i + 1] += -400.0 * x[i]
        H[i + 1, i] += -400.0 * x[i]
        H[i + 1, i + 1] += 200.0
    return H


def step(x):
    """A vector-valued map: one explicit Euler step of a small nonlinear system."""
    return x + 0.1 * np.array([x[1] * x[2], -np.sin(x[0]), x[0] ** 2 - x[2]])


def main():
    np.set_printoptions(precision=5, suppress=True)
    x = np.array([0.5, -0.3, 1.2, 0.8])

    H = pb.hessian(rosenbrock)(x)
    H_ref = rosenbrock_hessian(x)
    print("pb.hessian(rosenbrock)(x) =\n", H)
    print("max abs difference vs hand-derived:", np.max(np.abs(H - H_ref)))
    assert np.allclose(H, H_ref, rtol=1e-9, atol=1e-9)

    y = np.array([0.3, 0.7, -0.2])
    J_rev = pb.jacobian(step, mode="rev")(y)
    J_fwd = pb.jacobian(step, mode="fwd")(y)
    J_ref = np.eye(3) + 0.1 * np.array([
        [0.0, y[2], y[1]],
        [-np.cos(y[0]), 0.0, 0.0],
        [2.0 * y[0], 0.0, -1.0],
    ])
    print("pb.jacobian(step, mode='rev')(y) =\n", J_rev)
    print("pb.jacobian(step, mode='fwd')(y) =\n", J_fwd)
    assert np.allclose(J_rev, J_ref) and np.allclose(J_fwd, J_ref)

    # Hessian-vector product without forming H: jvp of the gradient.
    v = np.array([1.0, 0.0, -1.0, 0.5])
    _, hv = pb.jvp(pb.grad(rosenbrock), (x,), (v,))
    print("H @ v via jvp(grad):", hv, " vs  H_ref @ v:", H_ref @ v)
    assert np.allclose(hv, H_ref @ v)


if __name__ == "__main__":
    main()
