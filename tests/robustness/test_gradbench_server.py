"""The GradBench server survives hostile input (issue 8, section 4).

The real server (`python -m pullback.gradbench`, pysource backend, a temporary
cache) is driven as a subprocess with one scripted stream of hostile lines and
then valid requests: every reply line must be strict JSON (a parser that
rejects NaN/Infinity and lone surrogates), each hostile line gets an error
reply carrying its id where it has a usable one, the valid requests succeed,
the process exits 0 and does not hang. The message handler is also fuzzed
in-process with Hypothesis."""
import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pullback.errors import PullbackError
from pullback.gradbench import modules
from pullback.gradbench.protocol import Session
from pullback.gradbench.schema import Limits
from pullback.gradbench.wire import TooLong

SRC = pathlib.Path(__file__).parents[2] / "src"
MAX_LINE = 1 << 20
MAX_ELEMENTS = 10 ** 6


def strict_loads(line):
    """json.loads that rejects NaN/Infinity constants, non-ASCII bytes and lone surrogates."""
    def no_constant(name):
        raise ValueError(f"non-strict JSON constant {name}")

    line.encode("ascii")
    value = json.loads(line, parse_constant=no_constant)
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            v.encode("utf-8")  # raises on a lone surrogate (which serde_json, for one, rejects)
        elif isinstance(v, float):
            assert math.isfinite(v)
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v)
            stack.extend(v.values())
    return value


def run_server(data: bytes, tmp_path, close_stdout=False):
    env = dict(os.environ, PULLBACK_BACKEND="pysource", PULLBACK_CACHE_DIR=str(tmp_path / "cache"),
               PULLBACK_GRADBENCH_MAX_LINE_BYTES=str(MAX_LINE), PULLBACK_GRADBENCH_MAX_ELEMENTS=str(MAX_ELEMENTS))
    env.pop("PULLBACK_GRADBENCH_BACKEND", None)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, "-m", "pullback.gradbench"]
    if close_stdout:  # a client that stops reading at once
        r, w = os.pipe()
        os.close(r)
        try:
            proc = subprocess.run(cmd, check=False, input=data, stdout=w, stderr=subprocess.PIPE, env=env, timeout=60)
        finally:
            os.close(w)
        return proc, []
    proc = subprocess.run(cmd, check=False, input=data, capture_output=True, env=env, timeout=60)
    return proc, [strict_loads(line) for line in proc.stdout.decode("ascii").split("\n")[:-1]]


def msg(mid, kind="evaluate", module="lse", function="primal", **inp):
    return json.dumps({"id": mid, "kind": kind, "module": module, "function": function, "input": inp})


def gmm(**over):
    inp = {"d": 2, "k": 2, "n": 3, "alpha": [0.1, 0.2], "mu": [[0.0, 1.0], [1.0, 0.0]],
           "q": [[0.1, 0.2], [0.3, 0.4]], "l": [[0.5], [0.6]], "x": [[1.0, 2.0], [0.5, 0.1], [0.0, 0.0]],
           "m": 0, "gamma": 1.0}
    return msg(0, module="gmm", function="objective", **dict(inp, **over))


def lstm(**over):
    inp = {"main_params": [[0.1] * 8] * 2, "extra_params": [[0.2] * 2] * 3, "state": [[0.3] * 2] * 2,
           "sequence": [[0.4] * 2] * 3}
    return msg(0, module="lstm", function="objective", **dict(inp, **over))


def det(**over):
    return msg(0, module="det", **dict({"ell": 2, "A": [1.0, 2.0, 3.0, 4.0]}, **over))


def kmeans(function="cost", **over):
    inp = {"centroids": [[0.0, 0.0], [5.0, 5.0]], "points": [[0.1, 0.2], [4.9, 5.1], [0.3, 0.0]]}
    return msg(0, module="kmeans", function=function, **dict(inp, **over))


def with_id(line, mid):
    """A copy of the JSON message `line` with id `mid`."""
    return json.dumps(dict(json.loads(line), id=mid))


# (line, the id its reply must carry (None: the line has no usable id), a fragment of the error)
HOSTILE = [
    # framing and encoding
    (b"", None, "empty line"),
    (b"  \t \r", None, "empty line"),
    (b"hello", None, "malformed JSON"),
    (b'{"id": 1, "kind": "eva', 1, "malformed JSON"),
    (b'{"id": "t1", "kind": "start",', "t1", "malformed JSON"),
    (b"[1, 2]", None, "must be a JSON object"),
    (b'"start"', None, "must be a JSON object"),
    (b"null", None, "must be a JSON object"),
    (b"[" * 200_000, None, "nests"),
    (b'{"id": 2, "kind": "start", "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", 2, "nests"),
    (b'{"id": 3, "kind": "start", "x": ' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_000 + b"}", 3, "nests"),
    (b'{"id": 4, "kind": "start", "pad": "' + b"x" * (MAX_LINE + 10) + b'"}', 4, "bytes long"),
    (b"\xff\xfe{}", None, "UTF-8"),
    (b'{"id": 5, "kind": "start", "s": "\xc3\x28"}', 5, "UTF-8"),
    (b'{"id": 6, "kind": "start"}\x00', 6, "malformed JSON"),
    (b"\x00", None, "malformed JSON"),
    (b'{"id": 7, "kind": "define", "module": "ls\x00e"}', 7, "malformed JSON"),
    (b'{"id": 8, "kind": "define", "module": "lse\\u0000"}', 8, "not implemented"),
    (b'{"id": 9, "kind": "start", "kind": "define"}', 9, "duplicate key 'kind'"),
    (b'{"id": 10, "id": 11, "kind": "start"}', None, "repeats the key \"id\""),
    (b'{"id": 12, "kind": "start", "x": NaN}', 12, "non-finite constant NaN"),
    (b'{"id": 13, "kind": "start", "x": -Infinity}', 13, "non-finite constant -Infinity"),
    (b'{"id": 14, "kind": "start", "x": ' + b"1" * 5000 + b"}", 14, "malformed JSON"),
    # ids and kinds
    (b'{"kind": "start"}', None, "no \"id\""),
    (b'{"id": [1], "kind": "start"}', None, "\"id\" must be"),
    (b'{"id": {"a": 1}, "kind": "start"}', None, "\"id\" must be"),
    (b'{"id": true, "kind": "start"}', None, "\"id\" must be"),
    (b'{"id": null, "kind": "start"}', None, "\"id\" must be"),
    (b'{"id": 1e400, "kind": "start"}', None, "\"id\" must be"),
    (b'{"id": NaN, "kind": "start"}', None, "\"id\" must be"),
    (b'{"id": 100000000000000000000000000000, "kind": "start"}', None, "\"id\" must be"),
    (b'{"id": "\\ud800", "kind": "start"}', None, "\"id\" must be"),
    (('{"id": "%s", "kind": "start"}' % ("x" * 300)).encode(), None, "\"id\" must be"),
    (b'{"id": 20}', 20, "no \"kind\""),
    (b'{"id": 21, "kind": 5}', 21, "\"kind\" must be a string"),
    (b'{"id": 22, "kind": "frobnicate"}', 22, "unknown message kind"),
    # define and evaluate
    (msg(30), 30, "has not been defined"),                              # evaluate before define
    (b'{"id": 31, "kind": "define"}', 31, "no \"module\""),
    (b'{"id": 32, "kind": "define", "module": 7}', 32, "\"module\" must be a string"),
    (b'{"id": 33, "kind": "define", "module": "nope"}', 33, "not implemented"),
    (b'{"id": 34, "kind": "define", "module": "__init__"}', 34, "not implemented"),
    (msg(35, module="nope"), 35, "not implemented"),
]
DEFINES = [json.dumps({"id": f"def-{m}", "kind": "define", "module": m}).encode() for m in modules.NAMES]
AFTER_DEFINE = [
    (msg(40, function="nope", x=[1.0]), 40, "has no function 'nope'"),
    (msg(41, function=["primal"], x=[1.0]), 41, "\"function\" must be a string"),
    (b'{"id": 42, "kind": "evaluate", "module": "lse", "function": "primal"}', 42, "no \"input\""),
    (b'{"id": 43, "kind": "evaluate", "module": "lse", "function": "primal", "input": [1.0]}', 43,
     "\"input\" must be an object"),
    # timing fields
    (msg(50, x=[1.0], min_runs="3"), 50, "input.min_runs must be an integer, got a string"),
    (msg(51, x=[1.0], min_runs=-1), 51, "input.min_runs must be an integer in [0, "),
    (msg(52, x=[1.0], min_runs=10 ** 30), 52, "input.min_runs must be an integer in [0, "),
    (msg(53, x=[1.0], min_runs=2.5), 53, "input.min_runs must be an integer, got a number"),
    (msg(54, x=[1.0], min_runs=True), 54, "input.min_runs must be an integer, got a boolean"),
    (msg(55, x=[1.0], min_seconds="inf"), 55, "input.min_seconds must be a number, got a string"),
    (msg(56, x=[1.0], min_seconds=-1), 56, "input.min_seconds must be in [0"),
    (msg(57, x=[1.0], min_seconds=1e9), 57, "input.min_seconds must be in [0"),
    (msg(58, x=[1.0]).replace('"x"', '"min_seconds": 1e400, "x"').encode(), 58, "input.min_seconds must be finite"),
    (msg(59, x=[1.0]).replace('"x"', '"min_seconds": NaN, "x"').encode(), 59, "non-finite constant NaN"),
    # lse, llsq, ode: types, signs, sizes, non-finite numbers
    (msg(60), 60, "input.x is missing"),
    (msg(61, x=[]), 61, "n = 0"),
    (msg(62, x="abc"), 62, "input.x must be an array of numbers, got a string"),
    (msg(63, x=[1.0, "2"]), 63, "input.x[1] must be a number, got a string"),
    (msg(64, x=[True, 1.0]), 64, "input.x[0] must be a number, got a boolean"),
    (msg(65, x=[[1.0]]), 65, "input.x[0] must be a number, got an array"),
    (msg(66, x={"a": 1}), 66, "must be an array of numbers, got an object"),
    (msg(67, x=[1.0, None]), 67, "input.x[1] must be a number, got null"),
    (msg(68, x=[1.0]).replace("[1.0]", "[1.0, 1e400]").encode(), 68, "input.x[1] is not finite"),
    (msg(69, x=[1.0, 10 ** 400]), 69, "too large for a float64"),
    (msg(70, x=[1.0]).replace("[1.0]", "[1.0, Infinity]").encode(), 70, "non-finite constant Infinity"),
    (msg(71, module="llsq", x=[1.0], n=1), 71, "input.n must be an integer >= 2, got 1"),
    (msg(72, module="llsq", x=[1.0], n=10 ** 12), 72, "above the server's limit"),
    (msg(73, module="llsq", x=[1.0], n="7"), 73, "input.n must be an integer, got a string"),
    (msg(74, module="ode", x=[1.0], s=0), 74, "input.s must be an integer >= 1"),
    (msg(75, module="ode", x=[1.0, 2.0], s=10 ** 15), 75, "above the server's limit"),
    (msg(76, module="ode", x=[1.0], s=True), 76, "got a boolean"),
    (msg(77, module="ode", x=[1.0], s=-(10 ** 100)), 77, "input.s must be an integer >= 1"),
    # det
    (with_id(det(A=[1.0, 2.0, 3.0]), 80), 80, "input.A has length 3, expected ell*ell = 4"),
    (with_id(det(ell=13, A=[1.0] * 169), 81), 81, "input.ell must be an integer in [1, 12]"),
    (with_id(det(ell=0, A=[]), 82), 82, "input.ell must be an integer in [1, 12]"),
    (with_id(det(ell=2.0), 83), 83, "input.ell must be an integer, got a number"),
    (with_id(det(A=[[1.0, 2.0], [3.0, 4.0]]), 84), 84, "input.A[0] must be a number, got an array"),
    # gmm
    (with_id(gmm(k=-2), 90), 90, "input.k must be an integer >= 1, got -2"),
    (with_id(gmm(d=0), 91), 91, "input.d must be an integer >= 1"),
    (with_id(gmm(k=3), 92), 92, "input.alpha has length 2, expected k = 3"),
    (with_id(gmm(mu=[[0.0, 1.0, 2.0], [1.0, 0.0, 2.0]]), 93), 93, "input.mu (axis 1) has length 3, expected d = 2"),
    (with_id(gmm(mu=[[0.0, 1.0], [1.0]]), 94), 94, "input.mu[1] has shape (1,)"),
    (with_id(gmm(l=[[0.5, 0.1], [0.6, 0.1]]), 95), 95, "expected d*(d-1)/2 = 1"),
    (with_id(gmm(n=4), 96), 96, "input.x (axis 0) has length 3, expected n = 4"),
    (with_id(gmm(gamma=0), 97), 97, "input.gamma must be > 0"),
    (with_id(gmm(gamma="1"), 98), 98, "input.gamma must be a number, got a string"),
    (with_id(gmm(m=-1), 99), 99, "input.m must be an integer in [0, "),
    (with_id(gmm(k=10 ** 6, n=10 ** 6, alpha=[]), 100), 100, "input.alpha has length 0, expected k = 1000000"),
    (with_id(gmm(alpha=[0.1, "a"]), 101), 101, "input.alpha[1] must be a number, got a string"),
    # lstm
    (with_id(lstm(extra_params=[[0.2] * 2] * 2), 110), 110, "input.extra_params (axis 0) has length 2, expected 3"),
    (with_id(lstm(sequence=[[0.4] * 2]), 111), 111, "c = 1, but c must be >= 2"),
    (with_id(lstm(main_params=[[0.1] * 8] * 3), 112), 112, "not a multiple of 2"),
    (with_id(lstm(main_params=[[0.1] * 7] * 2), 113), 113, "not a multiple of 4"),
    (with_id(lstm(state=[[0.3] * 3] * 2), 114), 114, "input.state (axis 1) has length 3, expected b = 2"),
    (with_id(lstm(state=[[0.3] * 2] * 4), 115), 115, "input.state (axis 0) has length 4, expected 2*L = 2"),
    # kmeans
    (with_id(kmeans(points=[[0.1, 0.2, 0.3]]), 120), 120, "input.points (axis 1) has length 3, expected d = 2"),
    (with_id(kmeans(points=[]), 121), 121, "n = 0"),
    (with_id(kmeans(centroids=[0.0, 1.0]), 122), 122, "input.centroids must be a 2-d array (a list of lists) of numbers, but input.centroids[0] is a number"),
    (with_id(kmeans(points=[[0.1, 0.2]] * 600, centroids=[[0.0, 0.0]] * 600), 123), 123, "above the server's limit"),
    # a result that is not finite: a centroid with no points gives 0/0 in dir
    (with_id(kmeans(function="dir", centroids=[[0.0, 0.0], [99.0, 99.0]]), 124), 124, "the result is not finite"),
]
VALID = [
    (msg("ok-lse", x=[0.0, 1.0], min_runs=2), "ok-lse"),
    (with_id(gmm(), "ok-gmm"), "ok-gmm"),
    (with_id(lstm(), "ok-lstm"), "ok-lstm"),
    (with_id(det(), "ok-det"), "ok-det"),
    (with_id(kmeans(), "ok-kmeans"), "ok-kmeans"),
]


def as_bytes(line):
    return line if isinstance(line, bytes) else line.encode()


def test_hostile_stream(tmp_path):
    cases = HOSTILE + [(b, None, None) for b in DEFINES] + AFTER_DEFINE
    lines = [as_bytes(line) for line, _, _ in cases] + [as_bytes(line) for line, _ in VALID]
    data = b"\n".join(lines) + b'\n{"id": "last", "kind": "sta'  # the client closes stdin mid-line
    proc, replies = run_server(data, tmp_path)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert b"Traceback" not in proc.stderr, proc.stderr.decode(errors="replace")
    assert len(replies) == len(lines) + 1
    wrong = []
    for (line, mid, fragment), rep in zip(cases, replies):
        if fragment is None:  # a define
            ok = rep["success"] is True
        else:
            ok = (rep["id"] == mid and fragment in rep["error"] and "output" not in rep
                  and rep.get("success") is not True)
        if not ok:
            wrong.append((as_bytes(line)[:160], rep))
    assert not wrong, "\n".join(map(repr, wrong))
    for (line, mid), rep in zip(VALID, replies[len(cases):]):
        assert rep["id"] == mid and rep["success"] is True, rep
        assert [t["name"] for t in rep["timings"]][:2] == ["warmup", "evaluate"]
    assert replies[len(cases)]["output"] == pytest.approx(np.log(1.0 + np.e))
    assert replies[-1]["id"] == "last" and "malformed JSON" in replies[-1]["error"]


def test_last_line_without_newline_is_served(tmp_path):
    proc, replies = run_server(b'{"id": 1, "kind": "start"}', tmp_path)
    assert proc.returncode == 0 and replies == [{"id": 1, "tool": "pullback"}]


def test_client_that_stops_reading(tmp_path):
    proc, _ = run_server(b'{"id": 1, "kind": "start"}\n' * 100, tmp_path, close_stdout=True)
    assert proc.returncode == 0
    assert b"Traceback" not in proc.stderr and b"Exception ignored" not in proc.stderr, proc.stderr


def test_bad_command_line(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(SRC))
    proc = subprocess.run([sys.executable, "-m", "pullback.gradbench", "--backend"], check=False, input=b"",
                          capture_output=True, env=env, timeout=60)
    assert proc.returncode == 2 and b"--backend" in proc.stderr and b"Traceback" not in proc.stderr


# --- in process -------------------------------------------------------------------------------

def test_too_long_line_keeps_its_id():
    session = Session(Limits(max_line_bytes=100))
    rep = strict_loads(session.handle_line(TooLong(5000, b'{"id": 17, "kind": "evaluate", "inp')))
    assert rep["id"] == 17 and "5000 bytes" in rep["error"]


class Boom(Exception):
    """An exception the server has never heard of."""


@pytest.mark.parametrize("exc", [
    PullbackError("bad program", hint="fix it"), Boom("boom"), RecursionError("deep"), MemoryError(),
    ZeroDivisionError("division by zero"), ValueError("\ud800 lone surrogate"),
], ids=lambda e: type(e).__name__)
def test_exception_in_evaluation_is_an_error_reply(monkeypatch, exc):
    from pullback.gradbench.modules import lse

    def fail(x):
        raise exc

    monkeypatch.setitem(lse.FUNCTIONS, "fail", fail)
    session = Session()
    assert session.handle({"id": 1, "kind": "define", "module": "lse"})["success"] is True
    rep = session.handle({"id": 2, "kind": "evaluate", "module": "lse", "function": "fail", "input": {"x": [1.0]}})
    strict_loads(json.dumps(rep, allow_nan=False))
    assert rep["id"] == 2 and rep["success"] is False and type(exc).__name__ in rep["error"]


def test_numba_compile_error_is_an_error_reply(monkeypatch):
    from numba.core.errors import TypingError

    from pullback.gradbench.modules import lse

    def fail(x):
        raise TypingError("Failed in nopython mode pipeline")

    monkeypatch.setitem(lse.FUNCTIONS, "fail", fail)
    session = Session()
    session.handle({"id": 1, "kind": "define", "module": "lse"})
    rep = session.handle({"id": 2, "kind": "evaluate", "module": "lse", "function": "fail", "input": {"x": [1.0]}})
    assert rep["success"] is False and "TypingError" in rep["error"]


def test_non_finite_result_is_an_error_reply(monkeypatch):
    from pullback.gradbench.modules import lse

    monkeypatch.setitem(lse.FUNCTIONS, "inf", lambda x: {"a": np.array([1.0, np.inf])})
    monkeypatch.setitem(lse.FUNCTIONS, "nan", lambda x: float("nan"))
    session = Session()
    session.handle({"id": 1, "kind": "define", "module": "lse"})
    for fn, where in [("inf", "output.a[1]"), ("nan", "output = nan")]:
        rep = session.handle({"id": 2, "kind": "evaluate", "module": "lse", "function": fn, "input": {"x": [1.0]}})
        json.dumps(rep, allow_nan=False)
        assert rep["success"] is False and "not finite" in rep["error"] and where in rep["error"], rep


# --- fuzzing the handler ------------------------------------------------------------------------

SMALL = Limits(max_line_bytes=1 << 16, max_elements=2000, max_runs=3, max_seconds=0.001)
# hello's input is a bare number: its SCHEMA is one field, not an object of fields
FIELDS = sorted({f.name for name in modules.NAMES for f in getattr(modules.load(name).SCHEMA, "fields", ())}
                | {"min_runs", "min_seconds"})
FUNCTIONS = sorted({f for name in modules.NAMES for f in modules.load(name).FUNCTIONS})

scalars = (st.none() | st.booleans() | st.integers() | st.integers(-3, 8) | st.floats()
           | st.text(max_size=8) | st.sampled_from(["\ud800", "inf", "NaN", "1"]))
numbers = st.integers(-3, 3) | st.floats(-1e3, 1e3) | st.sampled_from([float("nan"), float("inf"), 1e308])
arrays = (st.lists(numbers, max_size=5)
          | st.lists(st.lists(numbers, min_size=1, max_size=4), max_size=4)
          | st.integers(1, 4).flatmap(lambda w: st.lists(st.lists(numbers, min_size=w, max_size=w), max_size=4)))
json_values = st.recursive(scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c,
                                                                                         max_size=4), max_leaves=12)
inputs = st.dictionaries(st.sampled_from(FIELDS), st.integers(0, 4) | arrays | scalars, max_size=8) | json_values
loose_messages = st.fixed_dictionaries({}, optional={
    "id": st.integers(-5, 5) | scalars | json_values,
    "kind": st.sampled_from(["start", "define", "evaluate", "analysis", "nope"]) | scalars,
    "module": st.sampled_from(modules.NAMES) | scalars,
    "function": st.sampled_from(FUNCTIONS) | scalars,
    "input": inputs,
})
PAIRS = [(name, f) for name in modules.NAMES for f in modules.load(name).FUNCTIONS]
timing = {"min_runs": st.integers(-1, 3) | scalars, "min_seconds": st.floats(-1, 1e-3) | scalars}
evaluations = st.builds(
    lambda mid, pair, inp: {"id": mid, "kind": "evaluate", "module": pair[0], "function": pair[1], "input": inp},
    st.integers(0, 100), st.sampled_from(PAIRS), inputs)
lse_evaluations = st.builds(
    lambda mid, fn, inp: {"id": mid, "kind": "evaluate", "module": "lse", "function": fn, "input": inp},
    st.integers(0, 100), st.sampled_from(["primal", "gradient"]),
    st.fixed_dictionaries({"x": arrays | scalars}, optional=timing))
messages = st.one_of(loose_messages, evaluations, lse_evaluations)


def fuzz_session():
    session = Session(SMALL)
    for name in modules.NAMES:
        assert session.handle({"id": 0, "kind": "define", "module": name})["success"] is True
    return session


@settings(max_examples=150)
@given(st.one_of(messages, json_values))
def test_fuzz_handle(m):
    rep = fuzz_session().handle(m)
    strict_loads(json.dumps(rep, allow_nan=False))
    if isinstance(m, dict) and isinstance(m.get("id"), int) and not isinstance(m["id"], bool) \
            and abs(m["id"]) < 2 ** 63:
        assert rep["id"] == m["id"]
    if rep.get("success") is True and m.get("kind") == "evaluate":
        assert rep["timings"][0]["name"] == "warmup"


def mutate(data, cut, junk):
    return data[:cut] + junk + data[cut:]


@settings(max_examples=100)
@given(st.one_of(st.binary(max_size=64),
                 st.builds(mutate, messages.map(lambda m: json.dumps(m).encode()),
                           st.integers(0, 200), st.binary(max_size=4)),
                 st.text(max_size=40)))
def test_fuzz_handle_line(line):
    strict_loads(fuzz_session().handle_line(line))
