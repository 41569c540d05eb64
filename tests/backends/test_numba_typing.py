"""The call-type memo of `backends/numba_typing.py` (note [compile-time], "Call
types"): numba's typing answers repeated calls from the memo while pullback's
modules compile, gives the same types and code as without it, and is gone
outside pullback's compiles."""
import re
import sys
import pathlib

import numpy as np
import pytest

numba = pytest.importorskip("numba")

_SRC = str(pathlib.Path(__file__).resolve().parent.parent.parent / "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)

import pullback as pb
from numba.core.types.functions import BaseFunction
from pullback.backends import numba_typing
from pullback.backends.numba_opt import numba_opt

_BODY = """
def {name}(x, y, n):
    s = 0.0
    t = np.empty(n)
    for i in range(n):
        a = x[i] * y[i] + 1.5
        b = np.exp(a) - np.sin(x[i]) * 2.0
        t[i] = a * b if a > b else b / (a * a + 1.0)
        s += t[i] * t[i] - a
    return s + np.sum(t * x)
"""


def _njit(name):
    ns = {"np": np}
    exec(_BODY.format(name=name), ns)   # a new function each time: numba types it from scratch
    return numba.njit(ns[name])


def _code(disp):
    """The function's LLVM IR without the names numba numbers per compile."""
    (ir,) = disp.inspect_llvm().values()
    ir = "\n".join(ln for ln in ir.splitlines() if not ln.startswith(("@.const.", "@\".const.")))   # pickled error messages
    ir = re.sub(r"@\.const\.[\w.]+", "", ir)
    ir = _drop_abi_tags(ir)
    ir = re.sub(r"0x[0-9a-f]+", "", ir)
    return re.sub(r"\b\w*_memo_\w*\b", "f", ir)


def _drop_abi_tags(ir):
    """numba's mangled names carry ABI tags `B<n><n characters>` that encode the
    function object's identity (differing between two compiles of one library
    function, e.g. `np.sum`'s `_sum_impl` when another test compiled it first):
    drop each tag with its n characters."""
    tag, out, pos = re.compile(r"(?<=\w)B(\d+)(?=\w)"), [], 0
    while (m := tag.search(ir, pos)) is not None:
        out.append(ir[pos:m.start()])
        pos = m.end() + int(m.group(1))
    return "".join(out) + ir[pos:]


def _args():
    x = np.linspace(0.0, 1.0, 7)
    return x, x[::-1].copy(), 7


def test_same_types_and_code_with_the_memo(monkeypatch):
    # numba's own function passes inside `numba_opt` too (note [compile-time], "Function passes"),
    # so that only the memo could make the code differ
    monkeypatch.setenv("PULLBACK_NUMBA_FOPT", str(int(numba.config.OPT)))
    from pullback.backends import numba_allocas, numba_ssa   # they change the IR numba emits: off here

    for mod in (numba_ssa, numba_allocas):
        monkeypatch.setattr(mod, "install", lambda: None)
        monkeypatch.setattr(mod, "uninstall", lambda: None)
    plain = _njit("fa_memo_a")
    want = plain(*_args())
    assert not hasattr(BaseFunction.__dict__["get_call_type"], "__wrapped__")
    hits = numba_typing.STATS["hits"]
    with numba_opt(int(numba.config.OPT)):
        assert hasattr(BaseFunction.__dict__["get_call_type"], "__wrapped__")
        memo = _njit("fb_memo_b")
        got = memo(*_args())
        again = _njit("fc_memo_c")   # typed entirely from the memo's answers
        again(*_args())
    assert numba_typing.STATS["hits"] > hits
    assert got == want
    assert _code(memo) == _code(plain) == _code(again)
    for name, t in plain.overloads[plain.signatures[0]].type_annotation.typemap.items():
        assert memo.overloads[memo.signatures[0]].type_annotation.typemap[name] == t


def test_the_memo_is_removed_after_pullbacks_compiles(monkeypatch, tmp_path):
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path))
    orig = BaseFunction.__dict__["get_call_type"]

    def f(x):
        return np.sum(np.tanh(x) * np.cos(x) * x + x * x * 0.5)

    x = np.linspace(-1.0, 1.0, 9)
    g = pb.grad(f, backend="numba")(x)
    np.testing.assert_allclose(g, pb.grad(f, backend="interp")(x), rtol=1e-12)
    assert BaseFunction.__dict__["get_call_type"] is orig


def test_typing_errors_are_not_remembered():
    """A call numba cannot type raises numba's error every time, memo or not."""
    @numba.njit
    def bad(x):
        return np.exp(x, x, x, x)

    for _ in range(2):
        with numba_opt(int(numba.config.OPT)):
            with pytest.raises(numba.core.errors.TypingError):
                bad(1.0)
