"""A source file edited after import: pullback stages from the file on disk, so it
checks that the function it read compiles to the code that runs (frontend/codematch.py)."""
import importlib.util
import itertools
import sys
import textwrap

import numpy as np
import pytest

import pullback as pb
from pullback.errors import StagingError

_ids = itertools.count()


def load(tmp_path, text):
    """Write `text` to a fresh module file, import it, return (module, path)."""
    name = f"pb_edit_mod_{next(_ids)}"
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod, path


BASE = """\
import numpy as np

def f(x):
    return np.sum(np.sin(x) * x)
"""
X = np.array([0.5, -1.0, 2.0])
WANT = np.sin(X) + X * np.cos(X)


def expect_changed(fn, path, line, *args):
    with pytest.raises(StagingError) as ei:
        pb.grad(fn)(*args)
    err = ei.value
    assert "changed after it was imported" in str(err)
    assert err.loc is not None and err.loc.file == str(path) and err.loc.line == line, str(err)
    assert err.hint and "re-import" in err.hint
    return err


def test_changed_body_is_refused(tmp_path):
    mod, path = load(tmp_path, BASE)
    path.write_text(BASE.replace("np.sin(x) * x", "np.cos(x) * x"))
    err = expect_changed(mod.f, path, 3, X)
    assert "'f'" in str(err)


def test_changed_constant_is_refused(tmp_path):
    mod, path = load(tmp_path, BASE.replace("* x)", "* x * 2.0)"))
    path.write_text(BASE.replace("* x)", "* x * 3.0)"))
    expect_changed(mod.f, path, 3, X)


def test_line_inserted_above_still_stages_the_running_code(tmp_path):
    mod, path = load(tmp_path, BASE)
    path.write_text(BASE.replace("def f(x):", "# a new comment\n\ndef f(x):"))
    np.testing.assert_allclose(pb.grad(mod.f)(X), WANT)


def test_renamed_or_removed_function_is_refused(tmp_path):
    mod, path = load(tmp_path, BASE)
    path.write_text(BASE.replace("def f(x):", "def g(x):"))
    expect_changed(mod.f, path, 3, X)
    mod2, path2 = load(tmp_path, BASE)
    path2.write_text("import numpy as np\n")
    expect_changed(mod2.f, path2, 3, X)


def test_edited_helper_is_refused(tmp_path):
    text = """\
    import numpy as np

    def helper(x):
        return np.sin(x) * x

    def f(x):
        return np.sum(helper(x))
    """
    mod, path = load(tmp_path, text)
    path.write_text(textwrap.dedent(text).replace("np.sin(x) * x", "np.sin(x) + x"))
    err = expect_changed(mod.f, path, 3, X)
    assert "'helper'" in str(err)


def test_comment_only_edit_passes(tmp_path):
    mod, path = load(tmp_path, BASE)
    path.write_text(BASE.replace("    return", "    # explain\n    return"))
    np.testing.assert_allclose(pb.grad(mod.f)(X), WANT)


def test_verdict_is_cached_per_code_object(tmp_path):
    mod, path = load(tmp_path, BASE)
    np.testing.assert_allclose(pb.grad(mod.f)(X), WANT)
    path.write_text(BASE.replace("np.sin(x) * x", "np.cos(x) * x"))
    # the function was read and checked before the edit: a new signature restages from that source
    np.testing.assert_allclose(pb.grad(mod.f)(X[:2]), WANT[:2])


UNEDITED = """\
from __future__ import annotations

import functools
import numpy as np
from numpy import sin


def register(fn):
    fn.registered = True
    return fn


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)
    return wrapper


@register
def decorated(x):
    return np.sum(x * x)


@logged
def wrapped(x):
    return np.sum(x * x)


def make_closure(a):
    def inner(x):
        return np.sum(a * x * x)
    return inner


def make_recursive_closure(a):
    def power(x, n):
        if n == 0:
            return 1.0
        return a * x * power(x, n - 1)
    return power


def nested_helpers(x):
    def sq(y: float) -> float:
        return y * y
    scale = lambda y: 2.0 * y
    return np.sum(scale(sq(x)))


lam_a, lam_b = (lambda x: np.sum(x * x)), (lambda x: np.sum(sin(x)))


class Base:
    def value(self, x):
        return np.sum(x * x)


class Model(Base):
    def __init__(self):
        self.__scale = 2.0

    def value(self, x):
        return super().value(x) * self.__scale

    @staticmethod
    def static(x):
        return np.sum(x * x)

    @classmethod
    def clsm(cls, x):
        return np.sum(x * x) * 2.0

    def closure(self):
        def inner(x):
            return np.sum(x * x) * self.__scale
        return inner
"""


def test_unedited_definitions_of_every_kind_stage(tmp_path):
    mod, _ = load(tmp_path, UNEDITED)
    x = np.array([1.0, 2.0])
    assert mod.decorated.registered
    np.testing.assert_allclose(pb.grad(mod.decorated)(x), 2 * x)
    np.testing.assert_allclose(pb.grad(mod.wrapped)(x), 2 * x)
    np.testing.assert_allclose(pb.grad(mod.make_closure(3.0))(x), 6 * x)
    np.testing.assert_allclose(pb.grad(mod.make_recursive_closure(2.0))(1.5, 3), 3 * 4 * 1.5 ** 2 * 2)
    np.testing.assert_allclose(pb.grad(mod.nested_helpers)(x), 4 * x)
    np.testing.assert_allclose(pb.grad(mod.lam_a)(x), 2 * x)
    np.testing.assert_allclose(pb.grad(mod.lam_b)(x), np.cos(x))
    m = mod.Model()
    np.testing.assert_allclose(pb.grad(m.value)(x), 4 * x)
    np.testing.assert_allclose(pb.grad(mod.Model.static)(x), 2 * x)
    np.testing.assert_allclose(pb.grad(mod.Model.clsm)(x), 4 * x)
    np.testing.assert_allclose(pb.grad(m.closure())(x), 4 * x)


def test_edited_method_is_refused(tmp_path):
    mod, path = load(tmp_path, UNEDITED)
    path.write_text(UNEDITED.replace("super().value(x) * self.__scale", "super().value(x) + self.__scale"))
    line = UNEDITED.splitlines().index("    def value(self, x):", UNEDITED.splitlines().index("class Model(Base):")) + 1
    expect_changed(mod.Model().value, path, line, np.ones(2))


def test_file_with_a_syntax_error_now_is_refused(tmp_path):
    mod, path = load(tmp_path, BASE)
    path.write_text(BASE + "\ndef broken(:\n")
    expect_changed(mod.f, path, 3, X)


def test_deleted_file_is_a_clear_error(tmp_path):
    import linecache

    mod, path = load(tmp_path, BASE)
    path.unlink()
    linecache.checkcache(str(path))
    with pytest.raises(StagingError) as ei:
        pb.grad(mod.f)(X)
    assert "cannot read the source" in str(ei.value) and ei.value.hint
