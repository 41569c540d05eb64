"""Gradient of a determinant computed by Gaussian elimination with in-place
row updates.

The analytic gradient is d det(A) / dA = det(A) * inv(A).T.  pullback
differentiates the loops and the `A[j, k] -= ...` updates directly; to do
that it must save the values that the in-place updates overwrite, and
`pb.memory_report` says how many bytes that took.

Run:  python examples/det_inplace.py
"""
import numpy as np

import pullback as pb


def det(A):
    A = A.copy()
    n = A.shape[0]
    d = 1.0
    for i in range(n):
        pivot = A[i, i]
        d = d * pivot
        for j in range(i + 1, n):
            factor = A[j, i] / pivot
            for k in range(i, n):
                A[j, k] -= factor * A[i, k]
    return d


def main():
    rng = np.random.default_rng(0)
    n = 4
    A = rng.normal(size=(n, n)) + 4.0 * np.eye(n)   # diagonally dominant: no pivoting needed

    g = pb.grad(det)(A)
    g_exact = np.linalg.det(A) * np.linalg.inv(A).T

    np.set_printoptions(precision=6, suppress=True)
    print("det(A) (loops)  =", det(A))
    print("np.linalg.det   =", np.linalg.det(A))
    print("pb.grad(det)(A) =\n", g)
    print("det(A) inv(A).T =\n", g_exact)
    print("max abs difference:", np.max(np.abs(g - g_exact)))
    assert np.allclose(g, g_exact, rtol=1e-8, atol=1e-10)

    report = pb.memory_report(det, A)
    print(f"peak bytes held by the reverse sweep: {report.peak_bytes}"
          f"  (A itself is {A.nbytes} bytes)")


if __name__ == "__main__":
    main()
