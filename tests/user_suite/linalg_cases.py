"""Linear algebra: least squares, ridge, log-det, quadratic forms, Gram matrices, GPs."""
import numpy as np

from ._cases import case

_r = np.random.default_rng(6)
A = _r.standard_normal((6, 3))
b = _r.standard_normal(6)
M = _r.standard_normal((3, 3))
SPD = M @ M.T + 3 * np.eye(3)
Xg = np.linspace(-1, 1, 5)[:, None] + 0.1 * _r.standard_normal((5, 1))
yg = np.sin(3 * Xg[:, 0])


@case(A, b, hess=True)
def least_squares_normal_eq(A, b):
    x = np.linalg.solve(A.T @ A, A.T @ b)
    return np.sum(x ** 2)


@case(A, b)
def least_squares_lstsq(A, b):
    x, res, rank, sv = np.linalg.lstsq(A, b, rcond=None)
    return np.sum(x * np.arange(1.0, 4.0))


@case(A, b, 0.5, hess=True)
def ridge_solution(A, b, lam):
    n = A.shape[1]
    w = np.linalg.solve(A.T @ A + lam * np.eye(n), A.T @ b)
    return np.sum((A @ w - b) ** 2)


@case(A, b)
def least_squares_pinv(A, b):
    return np.sum(np.linalg.pinv(A) @ b)


@case(SPD, hess=True)
def logdet_cholesky(S):
    L = np.linalg.cholesky(S)
    return 2 * np.sum(np.log(np.diag(L)))


@case(SPD, hess=True)
def logdet_slogdet(S):
    sign, ld = np.linalg.slogdet(S)
    return ld


@case(SPD, hess=True)
def logdet_det(S):
    return np.log(np.linalg.det(S))


@case(SPD, _r.standard_normal(3), hess=True)
def quadratic_form_inv(S, x):
    return x @ np.linalg.inv(S) @ x


@case(SPD, _r.standard_normal(3), hess=True)
def quadratic_form_solve(S, x):
    return np.dot(x, np.linalg.solve(S, x))


@case(_r.standard_normal((4, 3)), hess=True)
def gram_matrix_trace(X):
    G = X @ X.T
    return np.trace(G @ G)


@case(_r.standard_normal((4, 2)), 0.7, hess=True)
def rbf_gram(X, ell):
    sq = np.sum(X ** 2, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2 * X @ X.T
    K = np.exp(-0.5 * d2 / ell ** 2)
    return np.sum(K)


@case(_r.standard_normal((4, 2)), 0.7)
def rbf_gram_loops(X, ell):
    n = X.shape[0]
    K = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            K[i, j] = np.exp(-np.sum((X[i] - X[j]) ** 2) / (2 * ell ** 2))
    return np.sum(K * np.arange(n * n).reshape(n, n))


def _gp_nll(log_ell, log_sf, log_sn, X, y):
    ell, sf2, sn2 = np.exp(log_ell), np.exp(2 * log_sf), np.exp(2 * log_sn)
    d2 = (X[:, None, 0] - X[None, :, 0]) ** 2
    K = sf2 * np.exp(-0.5 * d2 / ell ** 2) + sn2 * np.eye(len(y))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, y))
    return 0.5 * y @ alpha + np.sum(np.log(np.diag(L))) + 0.5 * len(y) * np.log(2 * np.pi)


@case(-0.5, 0.1, -1.0, Xg, yg, argnums=(0, 1, 2), hess=True)
def gp_log_marginal_likelihood(log_ell, log_sf, log_sn, X, y):
    return _gp_nll(log_ell, log_sf, log_sn, X, y)


@case(np.array([-0.5, 0.1, -1.0]), Xg, yg, argnums=0)
def gp_lml_slogdet(theta, X, y):
    ell, sf, sn = np.exp(theta)
    diff = X - X.T
    K = sf ** 2 * np.exp(-diff ** 2 / (2 * ell ** 2)) + sn ** 2 * np.eye(X.shape[0])
    sign, logdet = np.linalg.slogdet(K)
    return 0.5 * y @ np.linalg.solve(K, y) + 0.5 * logdet


@case(SPD, hess=True)
def eigh_largest(S):
    w, V = np.linalg.eigh(S)
    return w[-1]


@case(SPD)
def eigh_vectors(S):
    w, V = np.linalg.eigh(S)
    return np.sum(V[:, 0] ** 4)


@case(_r.standard_normal((4, 3)), hess=True)
def svd_nuclear_norm(X):
    return np.sum(np.linalg.svd(X, compute_uv=False))


@case(_r.standard_normal((4, 3)))
def svd_reduced_reconstruct(X):
    U, s, Vt = np.linalg.svd(X, full_matrices=False)
    return np.sum((U[:, :2] * s[:2]) @ Vt[:2] * X)


@case(_r.standard_normal((4, 3)))
def qr_r_diag(X):
    Q, R = np.linalg.qr(X)
    return np.sum(np.log(np.abs(np.diag(R))))


@case(M, hess=True)
def frobenius_norm(M):
    return np.linalg.norm(M)


@case(M, hess=True)
def matrix_power_trace(M):
    return np.trace(np.linalg.matrix_power(M, 3))


@case(M * 0.3, hess=True)
def matrix_exp_taylor(M):
    E = np.eye(3)
    term = np.eye(3)
    for k in range(1, 15):
        term = term @ M / k
        E = E + term
    return np.trace(E)


@case(np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]), np.array([1.0, 2.0, 3.0]), hess=True)
def jacobi_iteration(A, b):
    x = np.zeros(3)
    D = np.diag(A)
    R = A - np.diag(D)
    for _ in range(40):
        x = (b - R @ x) / D
    return np.sum(x)


@case(np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]), np.array([1.0, 2.0, 3.0]))
def conjugate_gradient(A, b):
    x = np.zeros_like(b)
    r = b - A @ x
    p = r.copy()
    rs = r @ r
    for _ in range(3):
        Ap = A @ p
        alpha = rs / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        rs_new = r @ r
        p = r + rs_new / rs * p
        rs = rs_new
    return np.sum(x ** 2)


@case(np.array([[2.0, 0.0, 0.0], [1.0, 3.0, 0.0], [0.5, -1.0, 4.0]]), np.array([1.0, 2.0, 3.0]), hess=True)
def forward_substitution(L, b):
    n = b.shape[0]
    x = np.zeros(n)
    for i in range(n):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return np.sum(x)


@case(_r.standard_normal((3, 3)) + 3 * np.eye(3), hess=True)
def gaussian_elimination_det(A):
    A = A.copy()
    n = A.shape[0]
    det = 1.0
    for k in range(n):
        det *= A[k, k]
        for i in range(k + 1, n):
            A[i, k:] -= A[i, k] / A[k, k] * A[k, k:]
    return det


@case(_r.standard_normal((3, 2)), _r.standard_normal((2, 4)), _r.standard_normal((4, 3)), hess=True)
def einsum_trace_chain(A, B, C):
    return np.einsum("ij,jk,ki->", A, B, C)


@case(_r.standard_normal((2, 3, 4)), _r.standard_normal((2, 4, 3)))
def batched_matmul(A, B):
    return np.sum(np.tanh(A @ B))


@case(_r.standard_normal(3), _r.standard_normal(3), hess=True)
def outer_and_kron(u, v):
    return np.sum(np.outer(u, v) ** 2) + np.sum(np.kron(u, v))


@case(_r.standard_normal(3), _r.standard_normal(3), hess=True)
def cross_product_norm(u, v):
    return np.linalg.norm(np.cross(u, v))


@case(_r.standard_normal((3, 3)), hess=True)
def orthogonality_penalty(W):
    return np.sum((W.T @ W - np.eye(3)) ** 2)


@case(SPD, hess=True)
def trace_inverse(S):
    return np.trace(np.linalg.inv(S))


@case(_r.standard_normal((5, 2)), _r.standard_normal(5))
def projection_residual(A, y):
    P = A @ np.linalg.inv(A.T @ A) @ A.T
    r = y - P @ y
    return r @ r
