"""Edge numerics: the points where a naive AD gives NaN (issue 10, section 3).

Where the derivative is defined, finite differences check it; at kinks and
singular points the expected value is the documented convention (note
[edge-numerics]): sqrt'(0) = +inf, abs'(0) = 0, norm/std at 0 get the 0
subgradient, ties split evenly (so np.maximum(x, 0) at 0 gives 1/2, as in JAX), the unselected branch of where gets 0.
"""
import numpy as np
from scipy.special import logsumexp, xlogy

from ._cases import case

inf = np.inf


@case(np.array([0.0, 4.0]), grad=np.array([inf, 0.25]))
def sqrt_at_zero(x):
    return np.sum(np.sqrt(x))


@case(np.array([0.0, -2.0, 3.0]), grad=np.array([0.0, -1.0, 1.0]))
def abs_at_zero(x):
    return np.sum(np.abs(x))


@case(np.zeros(3), grad=np.zeros(3))
def norm_at_zero(x):
    return np.linalg.norm(x)


@case(np.zeros(3), grad=np.zeros(3))
def norm_manual_at_zero(x):
    return np.sqrt(np.sum(x ** 2))


@case(np.array([-1.0, 4.0]), grad=np.array([0.0, 0.25]))
def where_sqrt_double_where_trap(x):
    return np.sum(np.where(x > 0, np.sqrt(x), 0.0))


@case(np.array([0.0, 2.0]), grad=np.array([0.0, np.log(2.0) + 1]))
def where_xlogx(x):
    return np.sum(np.where(x > 0, x * np.log(x), 0.0))


@case(np.array([0.0, 2.0]), grad=np.array([0.0, -0.25]))
def where_reciprocal(x):
    return np.sum(np.where(x != 0, 1.0 / x, 0.0))


@case(0.0, 1.5, grad=(0.0, 0.0))
def power_zero_base(x, y):
    return x ** y


@case(0.0, 2.5, grad=(0.0, 0.0))
def np_power_zero_base(x, y):
    return np.power(x, y)


@case(0.0, 0.7, argnums=1, grad=0.0)
def power_zero_base_wrt_exponent(x, y):
    return np.power(x, y) + 0.0 * y


@case(np.full(4, 2.0), grad=np.zeros(4))
def std_constant(x):
    return np.std(x)


@case(np.full(4, 2.0), grad=np.zeros(4))
def var_constant(x):
    return np.var(x)


@case(np.array([[1.0], [2.0]]), grad=np.zeros((2, 1)))
def std_size1_axis(x):
    return np.sum(np.std(x, axis=1))


@case(np.array([1.0, 1.0, 0.5]), grad=np.array([0.5, 0.5, 0.0]))
def max_tie(x):
    return np.max(x)


@case(1.0, 1.0, grad=(0.5, 0.5))
def maximum_tie(x, y):
    return np.maximum(x, y)


@case(np.array([0.0, 2.0, 3.0]), grad=np.array([6.0, 0.0, 0.0]))
def prod_with_zero(x):
    return np.prod(x)


@case(np.array([-inf, 0.0, 1.0]), grad=np.array([0.0, 1 / (1 + np.e), np.e / (1 + np.e)]))
def logsumexp_neg_inf(x):
    return logsumexp(x)


@case(np.array([-inf, 0.0, 1.0]), grad=np.array([0.0, 1 / (1 + np.e), np.e / (1 + np.e)]))
def logsumexp_manual_neg_inf(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


@case(np.array([0.0, 0.5]), grad=np.array([0.0, 0.0]))
def xlogy_zero(x):
    return np.sum(xlogy(x, 1.0) + 0 * x)


@case(np.array([0.0, 3.0]), grad=np.array([inf, 1.0 / 3.0 / 3.0 ** (2.0 / 3.0)]))
def cbrt_zero(x):
    return np.sum(np.cbrt(x))


@case(0.0, grad=0.5)
def relu_at_kink(x):
    return np.maximum(x, 0.0)


@case(np.array([0.0, 1.0]), grad=np.array([0.0, 1.0]))
def huber_at_zero(x):
    a = np.abs(x)
    return np.sum(np.where(a < 0.5, 0.5 * x ** 2, a - 0.125)) * 1.0 + 0.0 * np.sum(x) + 0.125 * 0


@case(np.array([1e-3, 2.0]), hess=True)
def log1p_small(x):
    return np.sum(np.log1p(x) - x)


@case(np.array([-30.0, 0.5, 30.0]), hess=True)
def softplus_extremes(x):
    return np.sum(np.logaddexp(0.0, x))


@case(np.array([-40.0, 0.0, 40.0]), hess=True)
def sigmoid_extremes(x):
    return np.sum(1.0 / (1.0 + np.exp(-x)))


@case(np.array([1e-8, 1.0]), rtol=1e-4)
def sinc_near_zero(x):
    return np.sum(np.sinc(x))


@case(np.array([0.0, 1.0, -1.0]), grad=np.array([0.0, 0.0, 0.0]))
def sign_piecewise_constant(x):
    return np.sum(np.sign(x)) + 0.0 * np.sum(x)


@case(np.zeros(2), grad=np.zeros(2))
def hypot_zero(x):
    return np.hypot(x[0], x[1])


@case(0.0, grad=0.0)
def x_pow_half_then_square(x):
    # documented convention: the strong zero gives 0 (one-sided derivative is 1)
    return np.sqrt(x) ** 2


@case(np.array([0.0, 1.0]), grad=np.array([0.0, 2.0]))
def square_of_abs(x):
    return np.sum(np.abs(x) ** 2)
