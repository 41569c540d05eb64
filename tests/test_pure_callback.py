"""pb.pure_callback (issue 10): opaque Python/C code called from staged and compiled code
through a registry (only an integer key reaches the IR and generated code), differentiable
with pb.custom_vjp; and the located error for an opaque function called with traced values."""
import ctypes
import math
import ctypes.util
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import scipy.special

import pullback as pb
from pullback.frontend import stage
from pullback.ir.parser import parse_prog
from pullback.ir.printer import print_prog

BACKENDS = ["interp", "pysource", "numba"]
HERE = os.path.basename(__file__)


def _spec(x):
    return pb.ShapeDtypeStruct(x.shape, x.dtype)


def bessel_sum(x):
    return np.sum(pb.pure_callback(scipy.special.i0, _spec(x), x) * 2.0)


@pb.custom_vjp
def i0(x):
    return pb.pure_callback(scipy.special.i0, _spec(x), x)


def _i0_fwd(x):
    return i0(x), x


def _i0_bwd(x, g):
    return (g * pb.pure_callback(scipy.special.i1, _spec(x), x),)   # I0' = I1


i0.defvjp(_i0_fwd, _i0_bwd)


def sq_i0(x):
    return np.sum(i0(x) ** 2)


@pytest.mark.parametrize("backend", BACKENDS)
def test_callback_and_custom_vjp_make_a_library_function_differentiable(backend):
    x = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(pb.jit(bessel_sum, backend=backend)(x), 2 * np.sum(scipy.special.i0(x)))
    np.testing.assert_allclose(pb.grad(sq_i0, backend=backend)(x),
                               2 * scipy.special.i0(x) * scipy.special.i1(x), rtol=1e-12)


def test_differentiating_a_callback_without_a_rule_is_located():
    x = np.array([0.5, 1.0])
    for call in (lambda: pb.grad(bessel_sum, backend="interp")(x),
                 lambda: pb.jvp(bessel_sum, (x,), (x,), backend="interp")):
        with pytest.raises(pb.PullbackError) as e:
            call()
        msg = str(e.value)
        assert "pure_callback" in msg and "custom_vjp" in msg
        assert f"{HERE}:" in msg and "pb.pure_callback(scipy.special.i0" in msg


def _two(a, b, scale=1.0):
    return a * scale, int(np.sum(b[0] > 0))


def _to_f32(v):
    return v.astype(np.float32)


def test_pytrees_kwargs_and_dtype_conversion():
    def f(x, y):
        u, n = pb.pure_callback(_two, (_spec(x), pb.ShapeDtypeStruct((), np.int64)), x, (y, y), scale=3.0)
        return np.sum(u) + n
    x, y = np.array([1.0, 2.0]), np.array([-1.0, 1.0, 2.0])
    for be in ("interp", "pysource"):
        assert pb.jit(f, backend=be)(x, y) == 9.0 + 2
    # a float32 result of the callback is converted to the declared float64
    g = pb.jit(lambda x: pb.pure_callback(_to_f32, _spec(x), x), backend="interp")
    assert g(np.array([0.5])).dtype == np.float64


def test_wrong_result_shape_is_an_error_naming_the_function():
    def wrong(v):
        return np.zeros(5)
    with pytest.raises(pb.PullbackError, match="wrong.*shape") as e:
        pb.jit(lambda x: pb.pure_callback(wrong, _spec(x), x), backend="interp")(np.ones(2))
    assert HERE in str(e.value)


def test_outside_staging_and_bad_arguments():
    assert pb.pure_callback(np.sin, pb.ShapeDtypeStruct((), np.float64), 0.5) == np.sin(0.5)

    def inner_fn(x):
        return pb.pure_callback(lambda v: v, _spec(x), x)   # a lambda defined in staged code
    with pytest.raises(pb.PullbackError, match="Python callable it can run") as e:
        pb.jit(inner_fn, backend="interp")(np.ones(2))
    assert HERE in str(e.value)
    with pytest.raises(pb.PullbackError, match="result_shape_dtypes") as e:
        pb.jit(lambda x: pb.pure_callback(np.sin, "f64", x), backend="interp")(np.ones(2))
    assert HERE in str(e.value)


def evil_name_zz(v):
    return v


evil_name_zz.__name__ = evil_name_zz.__qualname__ = "x'''); import os #"


def test_nothing_user_controlled_reaches_generated_code():
    from pullback.backends.pysource import emit_prog

    def f(x):
        return pb.pure_callback(evil_name_zz, _spec(x), x)
    prog = stage(f, (np.ones(2),)).prog
    text = print_prog(prog)
    assert parse_prog(text) == prog          # the key and result types round-trip
    assert "import os" not in text and "evil" not in text
    src = emit_prog(prog)
    code = [line.split("#")[0] for line in src.splitlines()]   # (comments quote the user's line)
    assert "import os" not in src and not any("evil" in line for line in code)
    # the same function stages to the same key (the same program text, so compiled code is reused)
    assert print_prog(stage(f, (np.ones(2),)).prog) == text


def test_registry_is_thread_safe():
    from pullback.ir.prims import callback

    fns = [(lambda k: (lambda v: v + k))(k) for k in range(200)]
    keys = [None] * len(fns)

    def work(lo):
        for i in range(lo, len(fns), 4):
            keys[i] = callback.register(fns[i], None, None)
    ts = [threading.Thread(target=work, args=(j,)) for j in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(set(keys)) == len(fns)
    for k, f in zip(keys, fns):
        assert callback._BY_KEY[k][0] is f
        assert callback.register(f, None, None) == k


_CROSS = """
import sys
import numpy as np
import pullback as pb
def A(x): return x + 1.0
def B(x): return x * 100.0
fn = A if sys.argv[1] == "A" else B
def f(x):
    return pb.pure_callback(fn, pb.ShapeDtypeStruct(x.shape, x.dtype), x) * 1.0
print(pb.jit(f, backend="numba")(np.array([1.0, 2.0])).tolist())
"""


@pytest.mark.slow
def test_numba_cache_across_processes_calls_this_process_function(tmp_path):
    # both processes stage the same program text (key 1); the second loads the first's compiled
    # module from the disk cache, which must call the second process's function
    script = tmp_path / "cross.py"
    script.write_text(_CROSS)
    env = dict(os.environ, PULLBACK_CACHE_DIR=str(tmp_path / "cache"))
    outs = [subprocess.run([sys.executable, str(script), w], capture_output=True, text=True, env=env, check=True)
            .stdout.strip() for w in ("A", "B")]
    assert outs == ["[2.0, 3.0]", "[100.0, 200.0]"]


# -- opaque functions called with traced values -----------------------------------------------

_PYFUNC = np.frompyfunc(lambda v: v * 2, 1, 1)
_NS: dict = {}
exec("def made_by_exec(x):\n    return x * 2\n", _NS)  # noqa: S102 - a function without source


def _ctypes_cos():
    lib = ctypes.util.find_library("m")
    if lib is None:
        pytest.skip("no libm")
    fn = ctypes.CDLL(lib).cos
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_double]
    return fn


@pytest.mark.parametrize("which", ["ufunc", "frompyfunc", "builtin", "ctypes", "exec"])
def test_opaque_function_error_names_it_and_points_to_custom_vjp(which):
    fn = {"ufunc": lambda: scipy.special.i0, "frompyfunc": lambda: _PYFUNC, "builtin": lambda: math.frexp,
          "ctypes": _ctypes_cos, "exec": lambda: _NS["made_by_exec"]}[which]()

    def f(x):
        return fn(x)
    with pytest.raises(pb.PullbackError) as e:
        pb.grad(f, backend="interp")(0.5)
    msg = str(e.value)
    assert f"{HERE}:" in msg and "return fn(x)" in msg
    assert "pure_callback" in msg and "custom_vjp" in msg
    name = {"ufunc": "scipy.special.i0", "frompyfunc": "vectorized", "builtin": "frexp", "ctypes": "cos",
            "exec": "made_by_exec"}[which]
    assert name in msg
