"""abs / maximum / minimum / where / sign / power, evaluated away from kinks."""
import numpy as np


def f(x, y):
    a = np.abs(x) * y
    b = np.maximum(x, y) + np.minimum(x, 0.5 * y)
    c = np.where(x > 0.0, x * x, np.sin(x))
    d = np.sign(x) * np.power(np.abs(y) + 1.0, 1.5)
    e = np.power(x * x + 1.0, y)
    relu = np.maximum(x, 0.0)
    return np.sum(a + b + c + d + e + relu)


def args():
    # no ties between x and y or 0.5*y, and no zeros in x
    x = np.array([-1.3, 0.7, 2.1, -0.4, 0.9])
    y = np.array([0.5, -0.8, 1.1, 1.6, 2.4])
    return (x, y)


ARGNUMS = (0, 1)
ORDER = 2
TAGS = {"abs", "maximum", "minimum", "where", "sign", "power", "relu"}
