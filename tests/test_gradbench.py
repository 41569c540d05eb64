"""The GradBench entry point `python -m pullback.gradbench`, driven through a
subprocess: the protocol (ids, timings, errors) and each module's outputs
against independent NumPy references (direct formulas, np.linalg.det,
analytic derivatives and central finite differences)."""
import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

SRC = pathlib.Path(__file__).parents[1] / "src"


def session(messages, raw_lines=(), default_backend=False):
    """Run one tool process on `messages` (dicts) followed by `raw_lines`; the replies.
    `default_backend`: run on pullback's default (numba), not the tests' pysource."""
    env = dict(os.environ)
    if default_backend:
        env.pop("PULLBACK_BACKEND", None)
        env.pop("PULLBACK_GRADBENCH_BACKEND", None)
    env["PYTHONPATH"] = str(SRC) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    text = "".join(json.dumps(m) + "\n" for m in messages) + "".join(line + "\n" for line in raw_lines)
    proc = subprocess.run([sys.executable, "-m", "pullback.gradbench"], check=False, input=text, capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(replies) == len(messages) + len(raw_lines), proc.stdout
    return replies


def evaluate(module, functions_inputs, default_backend=False):
    """start, define, then one evaluate per (function, input); the evaluate outputs."""
    msgs = [{"id": 0, "kind": "start"}, {"id": 1, "kind": "define", "module": module}]
    for i, (fn, inp) in enumerate(functions_inputs):
        msgs.append({"id": 2 + i, "kind": "evaluate", "module": module, "function": fn,
                     "input": dict(inp, min_runs=1, min_seconds=0)})
    replies = session(msgs, default_backend=default_backend)
    assert replies[0] == {"id": 0, "tool": "pullback"}
    assert replies[1]["id"] == 1 and replies[1]["success"] is True, replies[1]
    outs = []
    for msg, rep in zip(msgs[2:], replies[2:]):
        assert rep["id"] == msg["id"]
        assert rep["success"] is True, rep
        names = [t["name"] for t in rep["timings"]]
        if names[1:2] == ["compile"]:   # tiered (PULLBACK_TIERED=1): the wait for numba's background compile
            names.pop(1)
        assert names[0] == "warmup" and names[1:] == ["evaluate"] * (len(names) - 1) and len(names) >= 2
        assert all(t["nanoseconds"] >= 0 for t in rep["timings"])
        outs.append(rep["output"])
    return outs


def fd_grad(f, x, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def close(a, b, rtol=1e-6, atol=1e-7):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                               rtol=rtol, atol=atol)


# --- protocol ---------------------------------------------------------------------------------

def test_protocol():
    msgs = [
        {"id": 5, "kind": "define", "module": "lse"},
        {"id": 6, "kind": "define", "module": "det"},
        {"id": 7, "kind": "start"},
        {"id": 8, "kind": "define", "module": "no_such_module"},
        {"id": 9, "kind": "analysis", "module": "lse", "function": "primal", "input": {}, "output": 1.0},
        {"id": 10, "kind": "something_else"},
        {"id": 11, "kind": "define"},                                    # missing module
        {"id": 12, "kind": "evaluate", "module": "lse", "function": "primal"},   # missing input
        {"id": 13, "kind": "evaluate", "module": "lse", "function": "nope",
         "input": {"x": [1.0], "min_runs": 1, "min_seconds": 0}},
        {"id": 14, "kind": "evaluate", "module": "det", "function": "primal",
         "input": {"A": [1.0, 2.0, 3.0], "ell": 2, "min_runs": 1, "min_seconds": 0}},  # bad shape
        {"id": 15, "kind": "evaluate", "module": "lse", "function": "primal",
         "input": {"x": [0.0, 1.0], "min_runs": 3, "min_seconds": 0}},
        {"id": 16},                                                      # missing kind
    ]
    replies = session(msgs, raw_lines=["this is not json", "[1, 2]"])
    assert [r["id"] for r in replies[:len(msgs)]] == [m["id"] for m in msgs]
    assert replies[0]["success"] is True and replies[1]["success"] is True
    replies = replies[2:]
    assert replies[0] == {"id": 7, "tool": "pullback"}
    assert replies[1]["success"] is False and "no_such_module" in replies[1]["error"]
    assert replies[2] == {"id": 9}
    assert "unknown message kind 'something_else'" in replies[3]["error"]
    assert "module" in replies[4]["error"] and "input" in replies[5]["error"]
    assert "'nope'" in replies[6]["error"] and "ell" in replies[7]["error"]
    for r in replies[4:8]:
        assert r["success"] is False and r["error"]
    assert replies[8]["success"] is True
    assert sum(t["name"] == "evaluate" for t in replies[8]["timings"]) >= 3
    close(replies[8]["output"], np.log(1.0 + math.e))
    assert "kind" in replies[9]["error"]
    for r in replies[len(msgs):]:
        assert r["id"] is None and r["error"]


def test_min_seconds_keeps_running():
    rep = session([{"id": 0, "kind": "define", "module": "lse"},
                   {"id": "a", "kind": "evaluate", "module": "lse", "function": "gradient",
                    "input": {"x": [0.0, 1.0], "min_runs": 1, "min_seconds": 0.05}}])[1]
    assert rep["id"] == "a" and rep["success"] is True
    assert sum(t["nanoseconds"] for t in rep["timings"] if t["name"] == "evaluate") >= 0.05e9


# --- modules ----------------------------------------------------------------------------------

def ref_lse(x):
    x = np.asarray(x)
    return float(np.log(np.sum(np.exp(x))))


def test_lse():
    x = [0.3, -1.2, 2.5, 0.9, 1.7]
    primal, grad = evaluate("lse", [("primal", {"x": x}), ("gradient", {"x": x})])
    close(primal, ref_lse(x))
    close(grad, np.exp(x) / np.sum(np.exp(x)))
    close(grad, fd_grad(ref_lse, x), rtol=1e-5)


def test_tiered_compile_is_reported_apart(tmp_path, monkeypatch):
    """On numba with tiering (note [tiered-compile]): the warm-up result comes
    from pysource while the worker compiles, the wait is a "compile" timing,
    and the timed evaluations run numba's code; outputs as without it."""
    monkeypatch.setenv("PULLBACK_TIERED", "1")
    monkeypatch.setenv("PULLBACK_TIER_LINES", "0")
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path))
    x = [0.3, -1.2, 2.5, 0.9, 1.7]
    msgs = [{"id": 0, "kind": "define", "module": "lse"}]
    msgs += [{"id": i + 1, "kind": "evaluate", "module": "lse", "function": fn, "input": {"x": x, "min_runs": 2}}
             for i, fn in enumerate(("primal", "gradient"))]
    replies = session(msgs, default_backend=True)
    for rep in replies[1:]:
        assert rep["success"] is True, rep
        assert [t["name"] for t in rep["timings"]] == ["warmup", "compile", "evaluate", "evaluate"]
    close(replies[1]["output"], ref_lse(x))
    close(replies[2]["output"], np.exp(x) / np.sum(np.exp(x)))
    assert any(n.endswith(".manifest.json") for n in os.listdir(tmp_path / "numba"))


def ref_llsq(x, n):
    total = 0.0
    for i in range(n):
        t = -1 + 2 * i / (n - 1)
        s = 0.0 if t == 0 else (1.0 if t > 0 else -1.0)
        total += (s - sum(x[j] * t ** j for j in range(len(x)))) ** 2
    return 0.5 * total


def test_llsq():
    x = [0.2, -0.5, 1.1, 0.4]
    n = 7
    primal, grad = evaluate("llsq", [("primal", {"x": x, "n": n}), ("gradient", {"x": x, "n": n})])
    close(primal, ref_llsq(x, n))
    close(grad, fd_grad(lambda v: ref_llsq(v, n), x), rtol=1e-5)


def ref_ode(x, s):
    x = np.asarray(x, dtype=np.float64)

    def rhs(y):
        dy = np.empty_like(y)
        dy[0] = x[0]
        for i in range(1, len(y)):
            dy[i] = x[i] * y[i - 1]
        return dy

    h = 2.0 / s
    y = np.zeros_like(x)
    for _ in range(s):
        k1 = rhs(y)
        k2 = rhs(y + h / 2 * k1)
        k3 = rhs(y + h / 2 * k2)
        k4 = rhs(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


@pytest.mark.parametrize("default_backend", [False, True], ids=["pysource", "numba"])
def test_ode(default_backend):
    x = [0.5, 1.5, -0.7, 1.2]
    s = 5
    primal, grad = evaluate("ode", [("primal", {"x": x, "s": s}), ("gradient", {"x": x, "s": s})],
                            default_backend=default_backend)
    close(primal, ref_ode(x, s))
    close(grad, fd_grad(lambda v: ref_ode(v, s)[-1], x), rtol=1e-5)
    # RK4 integrates the polynomial solution y_i = prod(x_0..x_i) t^(i+1) / (i+1)! exactly for i < 3
    exact = np.cumprod(x)[:3] * np.array([2.0, 4.0 / 2, 8.0 / 6])
    close(primal[:3], exact)


def test_det():
    rng = np.random.default_rng(3)
    ell = 4
    A = rng.normal(size=(ell, ell))
    inp = {"A": A.reshape(-1).tolist(), "ell": ell}
    primal, grad = evaluate("det", [("primal", inp), ("gradient", inp)])
    close(primal, np.linalg.det(A))
    close(grad, (np.linalg.det(A) * np.linalg.inv(A).T).reshape(-1))
    close(grad, fd_grad(lambda v: np.linalg.det(v.reshape(ell, ell)), A.reshape(-1)), rtol=1e-5)


def test_kmeans():
    P = np.array([[0.0, 0.1], [0.9, 1.0], [3.0, 3.2], [4.1, 5.0], [0.2, 0.7]])
    C = np.array([[0.5, 0.2], [3.5, 3.9]])
    inp = {"points": P.tolist(), "centroids": C.tolist()}
    cost, direction = evaluate("kmeans", [("cost", inp), ("dir", inp)])
    d2 = ((C[None, :, :] - P[:, None, :]) ** 2).sum(axis=2)
    close(cost, d2.min(axis=1).sum())
    assign = d2.argmin(axis=1)
    J = np.array([2 * (C[j] * np.sum(assign == j) - P[assign == j].sum(axis=0)) for j in range(len(C))])
    H = np.array([[2.0 * np.sum(assign == j)] * C.shape[1] for j in range(len(C))])
    close(J, fd_grad(lambda c: ((c[None] - P[:, None]) ** 2).sum(axis=2).min(axis=1).sum(), C), rtol=1e-5)
    close(direction, J / H)


def gmm_input(rng, d, k, n):
    return {"d": d, "k": k, "n": n, "alpha": rng.normal(size=k).tolist(),
            "mu": rng.normal(size=(k, d)).tolist(), "q": (0.3 * rng.normal(size=(k, d))).tolist(),
            "l": rng.normal(size=(k, d * (d - 1) // 2)).tolist(), "x": rng.normal(size=(n, d)).tolist(),
            "m": 2, "gamma": 1.3}


def ref_gmm(alpha, mu, q, l, x, m, gamma):
    n, d = x.shape
    k = len(alpha)

    def lse(v):
        mx = np.max(v)
        return mx + np.log(np.sum(np.exp(v - mx)))

    Qs = []
    for j in range(k):
        Q = np.diag(np.exp(q[j]))
        idx = 0
        for col in range(d):
            for row in range(col + 1, d):
                Q[row, col] = l[j, idx]
                idx += 1
        Qs.append(Q)
    slse = 0.0
    for i in range(n):
        beta = np.array([alpha[j] + q[j].sum() - 0.5 * np.sum((Qs[j] @ (x[i] - mu[j])) ** 2) for j in range(k)])
        slse += lse(beta)
    n1 = d + m + 1
    log_gamma_d = d * (d - 1) / 4 * math.log(math.pi) + sum(math.lgamma(n1 / 2 + (1 - j) / 2) for j in range(1, d + 1))
    const = k * (n1 * d * (math.log(gamma) - 0.5 * math.log(2)) - log_gamma_d)
    prior = sum(gamma ** 2 / 2 * np.sum(Qs[j] ** 2) - m * q[j].sum() for j in range(k))
    return -n * (d / 2 * math.log(2 * math.pi) + lse(alpha)) + slse + const - prior


def test_gmm():
    rng = np.random.default_rng(5)
    inp = gmm_input(rng, d=3, k=2, n=4)
    obj, jac = evaluate("gmm", [("objective", inp), ("jacobian", inp)])
    arrs = {name: np.asarray(inp[name], dtype=np.float64) for name in ("alpha", "mu", "q", "l")}
    x = np.asarray(inp["x"])

    def f(**over):
        a = dict(arrs, **over)
        return ref_gmm(a["alpha"], a["mu"], a["q"], a["l"], x, inp["m"], inp["gamma"])

    close(obj, f())
    assert set(jac) == {"alpha", "mu", "q", "l"}
    for name, v in arrs.items():
        assert np.shape(jac[name]) == v.shape
        close(jac[name], fd_grad(lambda w, name=name: f(**{name: w}), v), rtol=1e-5, atol=1e-6)


def lstm_input(rng, layers, b, c):
    return {"main_params": rng.normal(size=(2 * layers, 4 * b)).tolist(),
            "extra_params": rng.normal(size=(3, b)).tolist(),
            "state": rng.normal(size=(2 * layers, b)).tolist(),
            "sequence": rng.normal(size=(c, b)).tolist()}


def ref_lstm(main, extra, state, seq):
    sig = lambda v: 1 / (1 + np.exp(-v))
    layers = main.shape[0] // 2
    c, b = seq.shape
    hs = [state[2 * i].copy() for i in range(layers)]
    cs = [state[2 * i + 1].copy() for i in range(layers)]
    total = 0.0
    for t in range(c - 1):
        x = seq[t] * extra[0]
        for i in range(layers):
            Wf, Wi, Wo, Wc = np.split(main[2 * i], 4)
            Bf, Bi, Bo, Bc = np.split(main[2 * i + 1], 4)
            cs[i] = cs[i] * sig(x * Wf + Bf) + sig(hs[i] * Wi + Bi) * np.tanh(hs[i] * Wc + Bc)
            hs[i] = sig(x * Wo + Bo) * np.tanh(cs[i])
            x = hs[i]
        y = x * extra[1] + extra[2]
        total += np.sum(seq[t + 1] * (y - np.log(np.sum(np.exp(y)) + 2)))
    return -total / ((c - 1) * b)


def test_lstm():
    rng = np.random.default_rng(9)
    inp = lstm_input(rng, layers=2, b=3, c=4)
    obj, jac = evaluate("lstm", [("objective", inp), ("jacobian", inp)])
    main, extra, state, seq = (np.asarray(inp[k], dtype=np.float64)
                               for k in ("main_params", "extra_params", "state", "sequence"))
    close(obj, ref_lstm(main, extra, state, seq))
    assert len(jac) == main.size + extra.size
    g_main = fd_grad(lambda w: ref_lstm(w, extra, state, seq), main)
    g_extra = fd_grad(lambda w: ref_lstm(main, w, state, seq), extra)
    close(jac, np.concatenate([g_main.reshape(-1), g_extra.reshape(-1)]), rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("backend", ["interp"])
def test_backend_flag(backend):
    env = dict(os.environ, PYTHONPATH=str(SRC))
    msg = {"id": 1, "kind": "evaluate", "module": "det", "function": "gradient",
           "input": {"A": [2.0, 1.0, 0.5, 3.0], "ell": 2, "min_runs": 1, "min_seconds": 0}}
    define = {"id": 0, "kind": "define", "module": "det"}
    proc = subprocess.run([sys.executable, "-m", "pullback.gradbench", "--backend", backend], check=False,
                          input=json.dumps(define) + "\n" + json.dumps(msg) + "\n", capture_output=True,
                          text=True, env=env, timeout=60)
    rep = json.loads(proc.stdout.splitlines()[1])
    assert rep["success"] is True
    close(rep["output"], [3.0, -0.5, -1.0, 2.0])


def test_warmup_calls_twice_then_times_the_evaluations(monkeypatch):
    """The warmup is the first call (staging and compiling) and the second (the warm path's
    set-up, note [call-overhead]), timed together; then `min_runs` evaluations are timed."""
    monkeypatch.setenv("PULLBACK_TIERED", "0")
    from pullback.gradbench.protocol import Session

    calls = []

    def fn(x):
        calls.append(x)
        return x

    out, timings = Session()._run(fn, (1.0,), 3, 0.0)
    assert out == 1.0 and len(calls) == 5
    assert [t["name"] for t in timings] == ["warmup", "evaluate", "evaluate", "evaluate"]
