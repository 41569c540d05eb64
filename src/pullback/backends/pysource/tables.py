"""The primitive forms pysource knows: which NumPy function or operator prints
each primitive.

Contract: plain data (`_UNARY_FN`, `_BIN_OP`, `_BIN_FN`, `_REDUCE`, ...) and
`KNOWN_PRIMS`, the primitives with a hand-written form; any other primitive is
printed as a call of its table implementation (`runtime.impl`). `_ndim(atom)`
is the rank of an atom's tensor type (0 for scalars and stores).
"""
from __future__ import annotations

from ...ir.types import TensorType

_NP_DTYPE = {"f64": "np.float64", "f32": "np.float32", "i64": "np.int64", "bool": "np.bool_"}

_UNARY_FN = {
    "sin": "np.sin", "cos": "np.cos", "tan": "np.tan", "exp": "np.exp", "log": "np.log",
    "log1p": "np.log1p", "expm1": "np.expm1", "sqrt": "np.sqrt", "tanh": "np.tanh",
    "abs": "np.abs", "sign": "np.sign", "floor": "np.floor", "ceil": "np.ceil",
    "round": "np.round", "isnan": "np.isnan", "not": "np.logical_not", "neg": "np.negative",
}
_BIN_OP = {
    "add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "mod": "%", "floordiv": "//",
    "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
    "and": "&", "or": "|", "xor": "^", "matmul": "@",
}
_BIN_FN = {
    "add": "np.add", "sub": "np.subtract", "mul": "np.multiply", "div": "np.true_divide",
    "pow": "np.power", "mod": "np.mod", "floordiv": "np.floor_divide", "lt": "np.less",
    "le": "np.less_equal", "gt": "np.greater", "ge": "np.greater_equal", "eq": "np.equal",
    "ne": "np.not_equal", "and": "np.logical_and", "or": "np.logical_or", "xor": "np.logical_xor",
    "maximum": "np.maximum", "minimum": "np.minimum", "atan2": "np.arctan2", "matmul": "np.matmul",
}
# binary prims whose impl casts the result to the promoted operand dtype
_CASTING = {"add", "sub", "mul", "pow", "mod", "floordiv", "maximum", "minimum", "atan2"}
_REDUCE = {"sum": "np.sum", "prod": "np.prod", "max": "np.max", "min": "np.min"}
_VIEW_OPS = {"reshape", "transpose", "broadcast_to"}
_STORE_OPS = {"store_new", "store_push", "store_pop", "store_zeros_like", "store_copy"}
KNOWN_PRIMS = (set(_UNARY_FN) | set(_BIN_OP) | set(_BIN_FN) | set(_REDUCE) | _VIEW_OPS | _STORE_OPS
               | {"logistic", "where", "cast", "index", "index_update", "take", "take_add", "concatenate",
                  "iota", "full", "argmax", "argmin", "argsort",
                  "stop_gradient"})


def _ndim(a) -> int:
    t = a.type
    return t.ndim if isinstance(t, TensorType) else 0
