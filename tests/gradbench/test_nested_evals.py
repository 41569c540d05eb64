"""The GradBench modules hello, particle and saddle (issue 13, section 3).

particle and saddle nest derivatives: gradient descent differentiates an
objective that itself takes a derivative (particle: the force at every Euler
step of a data-dependent while loop; saddle: an inner gradient descent). Each
has four variants (outer mode, inner mode in {reverse, forward}). Their outputs
are checked against independent references written here: plain Python with
hand-derived derivatives (saddle, particle's force) and a dual-number forward
mode (particle's outer derivative), plus the values GradBench itself expects.

Full descents run ~100 gradient steps of the nested objective, seconds on the
tests' pysource backend, so the protocol runs of the four variants are slow
tests; the fast tests check the nested derivatives themselves (one trajectory
or one inner descent, every mode combination) in-process, and the protocol's
error replies.
"""
import math
import pathlib
import sys

import numpy as np
import pytest

import pullback as pb
from pullback.gradbench.modules import hello, particle, saddle
from pullback.gradbench.schema import InputError

sys.path.insert(0, str(pathlib.Path(__file__).parents[1]))
from test_gradbench import session  # noqa: E402 - the subprocess helper of tests/test_gradbench.py

VARIANTS = ("rr", "ff", "fr", "rf")
PARTICLE_EXPECTED = 0.2071918746486116      # GradBench's evals/particle, w = 0
SADDLE_EXPECTED = 8.246324826140356e-06     # GradBench's evals/saddle, start = (1, 1), every component


def run(module, calls, default_backend=False):
    """start, define, one evaluate per (function, input); the replies to the evaluates."""
    msgs = [{"id": 0, "kind": "start"}, {"id": 1, "kind": "define", "module": module}]
    msgs += [{"id": 2 + i, "kind": "evaluate", "module": module, "function": fn, "input": inp}
             for i, (fn, inp) in enumerate(calls)]
    replies = session(msgs, default_backend=default_backend)
    assert replies[1] == {"id": 1, "success": True, "timings": replies[1]["timings"]}
    assert [r["id"] for r in replies[2:]] == [m["id"] for m in msgs[2:]]
    return replies[2:]


def outputs(replies):
    for r in replies:
        assert r["success"] is True, r
        assert [t["name"] for t in r["timings"]][:2] == ["warmup", "evaluate"]
    return [r["output"] for r in replies]


def timed(inp):
    return dict(inp, min_runs=1, min_seconds=0)


# --- hello --------------------------------------------------------------------------------------

def test_hello_functions():
    rng = np.random.default_rng(0)
    for x in [1.0, -2.5, 0.0, *rng.normal(size=3) * 10]:
        (arg,) = hello.prepare(x)
        assert hello.FUNCTIONS["square"](arg) == pytest.approx(x * x, rel=1e-15)
        assert hello.FUNCTIONS["double"](arg) == pytest.approx(2 * x, rel=1e-15)
    assert hello.prepare(3) == (3.0,)


@pytest.mark.parametrize("bad, message", [
    ("1.0", "input must be a number, got a string '1.0'"),
    (True, "input must be a number, got a boolean True"),
    ({"x": 1.0}, "input must be a number, got an object"),
    (10 ** 400, "input is too large"),
])
def test_hello_bad_input(bad, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        hello.prepare(bad)


def test_hello_protocol():
    """GradBench's hello eval: x = 1, then square and double alternately, four times."""
    msgs = [{"id": 0, "kind": "start"}, {"id": 1, "kind": "define", "module": "hello"}]
    x, want = 1.0, []
    for _ in range(4):
        want += [x * x, 2 * x * x]
        x = 2 * x * x
    # the replies cannot feed the next message in one session, so the inputs are the reference's
    x = 1.0
    for i in range(4):
        msgs.append({"id": 2 + 2 * i, "kind": "evaluate", "module": "hello", "function": "square", "input": x})
        msgs.append({"id": 3 + 2 * i, "kind": "evaluate", "module": "hello", "function": "double", "input": x * x})
        x = 2 * x * x
    replies = session(msgs)
    for r, w in zip(replies[2:], want):
        assert r["success"] is True, r
        assert r["output"] == pytest.approx(w, rel=1e-15)


def test_hello_protocol_bad_input():
    (rep,) = run("hello", [("square", "one")])
    assert rep["success"] is False
    assert rep["error"] == "InputError: input must be a number, got a string 'one'"


# --- references ---------------------------------------------------------------------------------

def descend(f, df, x, max_steps=10_000):
    """GradBench's gradient descent (adaptive step: from 1e-5, doubled after 10 accepted steps,
    halved after a rejected one; stop at a gradient or a step of norm <= 1e-5), on NumPy arrays."""
    x = np.array(x, dtype=np.float64)
    fx, gx, eta, accepted = f(x), df(x), 1e-5, 0
    for _ in range(max_steps):
        if np.linalg.norm(gx) <= 1e-5:
            return x
        if accepted == 10:
            eta, accepted = 2 * eta, 0
            continue
        x_new = x - eta * gx
        if np.linalg.norm(x_new - x) <= 1e-5:
            return x
        fx_new = f(x_new)
        if fx_new < fx:
            x, fx, gx, accepted = x_new, fx_new, df(x_new), accepted + 1
        else:
            eta, accepted = eta / 2, 0
    raise AssertionError("the reference descent did not converge")


class Dual:
    """a + b*eps: forward mode by operator overloading, for particle's outer derivative."""

    def __init__(self, a, b=0.0):
        self.a, self.b = a, b

    def __add__(self, o):
        o = lift(o)
        return Dual(self.a + o.a, self.b + o.b)

    __radd__ = __add__

    def __sub__(self, o):
        o = lift(o)
        return Dual(self.a - o.a, self.b - o.b)

    def __rsub__(self, o):
        return lift(o) - self

    def __mul__(self, o):
        o = lift(o)
        return Dual(self.a * o.a, self.a * o.b + self.b * o.a)

    __rmul__ = __mul__

    def __truediv__(self, o):
        o = lift(o)
        return Dual(self.a / o.a, (self.b * o.a - self.a * o.b) / (o.a * o.a))

    def __neg__(self):
        return Dual(-self.a, -self.b)


def lift(v):
    return v if isinstance(v, Dual) else Dual(float(v))


def dsqrt(v):
    r = math.sqrt(v.a)
    return Dual(r, v.b / (2 * r))


def ref_trajectory(w):
    """particle's x_0(t_f)^2 for a Dual w; the force is minus grad_x sum 1/||x - c||, derived by hand:
    sum (x - c) / ||x - c||^3."""
    x, xdot, dt = (lift(0.0), lift(8.0)), (lift(0.75), lift(0.0)), 0.1
    for _ in range(particle.MAX_EULER_STEPS + 1):
        acc = [lift(0.0), lift(0.0)]
        for cx, cy in ((10.0, 10.0 - w), (10.0, 0.0)):
            dx, dy = x[0] - cx, x[1] - cy
            r = dsqrt(dx * dx + dy * dy)
            acc = [acc[0] + dx / (r * r * r), acc[1] + dy / (r * r * r)]
        x_new = (x[0] + dt * xdot[0], x[1] + dt * xdot[1])
        if x_new[1].a <= 0:
            break
        x, xdot = x_new, (xdot[0] + dt * acc[0], xdot[1] + dt * acc[1])
    else:
        raise AssertionError(f"the particle does not reach the x axis from w = {w.a}")
    dt_f = -x[1] / xdot[1]
    x_f = x[0] + dt_f * xdot[0]
    return x_f * x_f


def ref_particle_objective(w):
    """(objective, d objective / d w) at the float w."""
    v = ref_trajectory(Dual(w, 1.0))
    return v.a, v.b


def ref_particle(w0):
    return descend(lambda w: ref_particle_objective(w[0])[0], lambda w: np.array([ref_particle_objective(w[0])[1]]),
                   [w0])[0]


def ref_max_over_y(x, start):
    """(max_y f(x, y) by ascent from start, its gradient in x): f(x, y) = |x|^2 - |y|^2, so the
    ascent's gradient in y is -2y (by hand); the maximiser does not depend on x, so the gradient is 2x."""
    y = descend(lambda y: -(x @ x - y @ y), lambda y: 2 * y, start)
    return x @ x - y @ y, 2 * x


def ref_saddle(start):
    start = np.asarray(start, dtype=np.float64)
    x = descend(lambda x: ref_max_over_y(x, start)[0], lambda x: ref_max_over_y(x, start)[1], start)
    y = descend(lambda y: -(x @ x - y @ y), lambda y: 2 * y, start)
    return np.concatenate([x, y])


def test_references_match_gradbench():
    """The references reproduce the outputs GradBench's evals expect (to rounding)."""
    assert ref_particle(0.0) == pytest.approx(PARTICLE_EXPECTED, rel=1e-12)
    np.testing.assert_allclose(ref_saddle([1.0, 1.0]), [SADDLE_EXPECTED] * 4, rtol=1e-12)
    # the dual-number derivative against central differences of the primal
    h = 1e-6
    fd = (ref_particle_objective(0.3 + h)[0] - ref_particle_objective(0.3 - h)[0]) / (2 * h)
    assert ref_particle_objective(0.3)[1] == pytest.approx(fd, rel=1e-6)


# --- particle -----------------------------------------------------------------------------------

OBJECTIVES = {"r": particle.objective_r, "f": particle.objective_f}
OUTER = {"r": pb.grad, "f": pb.jacfwd}


@pytest.mark.parametrize("inner", ["r", "f"])
def test_particle_objective(inner):
    obj = pb.jit(OBJECTIVES[inner])
    for w in (0.0, 0.3, -0.3):
        assert obj(np.array([w])) == pytest.approx(ref_particle_objective(w)[0], rel=1e-12)


ESCAPES = -0.4   # from w = -0.4 the particle drifts off to the left and never reaches the x axis


def test_particle_escape():
    """A trajectory that never reaches the x axis stops after MAX_EULER_STEPS with a NaN objective."""
    with pytest.raises(AssertionError, match="does not reach the x axis"):
        ref_particle_objective(ESCAPES)
    assert math.isnan(pb.jit(particle.objective_r)(np.array([ESCAPES])))


@pytest.mark.parametrize("variant", VARIANTS)
def test_particle_nested_derivative(variant):
    """d/dw of the trajectory whose every step takes d p / d x, in each (outer, inner) mode."""
    outer, inner = variant
    d = OUTER[outer](OBJECTIVES[inner])
    for w in (0.0, 0.3):
        got = d(np.array([w]))
        assert got.shape == (1,)
        assert got[0] == pytest.approx(ref_particle_objective(w)[1], rel=1e-10)


def test_particle_bad_input():
    reps = run("particle", [("rr", timed({"w": "0"})), ("ff", timed({})), ("rf", {"w": 0.0, "min_runs": -1}),
                            ("xx", timed({"w": 0.0}))])
    assert [r["success"] for r in reps] == [False] * 4
    assert reps[0]["error"] == "InputError: input.w must be a number, got a string '0'"
    assert reps[1]["error"].startswith("InputError: input.w is missing")
    assert "min_runs" in reps[2]["error"]
    assert "module 'particle' has no function 'xx'" in reps[3]["error"] and "rr, ff, fr, rf" in reps[3]["error"]


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_particle_protocol(variant):
    """GradBench's particle eval (w = 0), one variant per server (each runs ~170 trajectories, twice)."""
    (out,) = outputs(run("particle", [(variant, timed({"w": 0.0}))]))
    assert out == pytest.approx(PARTICLE_EXPECTED, rel=1e-9)
    assert out == pytest.approx(ref_particle(0.0), rel=1e-9)


@pytest.mark.slow
def test_particle_protocol_escape():
    (rep,) = run("particle", [("fr", timed({"w": ESCAPES}))])
    assert rep["success"] is False
    assert rep["error"].startswith("PullbackError: particle: no result from w = -0.4: the particle does not reach "
                                   "the x axis within 10000 Euler steps, or gradient descent does not converge")


@pytest.mark.slow
def test_particle_numba():
    (out,) = outputs(run("particle", [("rr", timed({"w": 0.0}))], default_backend=True))
    assert out == pytest.approx(PARTICLE_EXPECTED, rel=1e-9)


# --- saddle -------------------------------------------------------------------------------------

START = np.array([1.0, 1.0])


@pytest.mark.parametrize("variant", VARIANTS)
def test_saddle_nested_derivative(variant):
    """d/dx max_y f(x, y), the max found by an ascent that takes d f / d y, in each (outer, inner) mode."""
    outer, inner = variant
    inner_op = OUTER[inner]
    # start is an argument (traced), as in the module's functions
    value = pb.jit(lambda x, start: saddle.max_over_y(x, start, inner_op))
    grad = OUTER[outer](lambda x, start: saddle.max_over_y(x, start, inner_op))
    for x in ([0.5, -0.25], [2.0, 1.5]):
        x = np.array(x)
        want_value, want_grad = ref_max_over_y(x, START)
        assert value(x, START) == pytest.approx(want_value, rel=1e-12)
        np.testing.assert_allclose(grad(x, START), want_grad, rtol=1e-12)


def test_saddle_bad_input():
    reps = run("saddle", [("rr", timed({"start": [1.0, 1.0, 1.0]})), ("ff", timed({"start": [1.0, "a"]})),
                          ("fr", timed({"w": 0.0}))])
    assert [r["success"] for r in reps] == [False] * 3
    assert reps[0]["error"].startswith("InputError: input.start has length 3, expected 2 = 2")
    assert reps[1]["error"] == "InputError: input.start[1] must be a number, got a string 'a'"
    assert reps[2]["error"].startswith("InputError: input.start is missing")


@pytest.mark.slow
@pytest.mark.parametrize("variant, start", [(v, [1.0, 1.0]) for v in VARIANTS] + [("fr", [-0.5, 2.0])])
def test_saddle_protocol(variant, start):
    """GradBench's saddle eval (start = (1, 1)), one variant per server, and another start."""
    (out,) = outputs(run("saddle", [(variant, timed({"start": start}))]))
    np.testing.assert_allclose(out, ref_saddle(start), rtol=1e-9)
    if start == [1.0, 1.0]:
        np.testing.assert_allclose(out, [SADDLE_EXPECTED] * 4, rtol=1e-9)


@pytest.mark.slow
def test_saddle_numba():
    (out,) = outputs(run("saddle", [("rf", timed({"start": [1.0, 1.0]}))], default_backend=True))
    np.testing.assert_allclose(out, [SADDLE_EXPECTED] * 4, rtol=1e-9)
