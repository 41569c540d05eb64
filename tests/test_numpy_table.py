"""Function-table tests (issue 10): every NumPy/SciPy function that
docs/numpy_coverage.md lists with derivatives is checked through its sample
calls (tests/samples/, format tests/samples/_spec.py) on every backend, in both
modes, to second order.

One check of a sample on a backend, `check_sample(sample, backend, modes, order)`:

- the value: ``pb.jit(fn)`` on the backend against ``fn`` run by NumPy (the same
  pytree, shapes, float-ness of each leaf, values);
- the derivatives: `pullback.testing.check_grads` -- the jvp against central
  differences, the vjp by the dot-product test, the primal outputs of both, and
  for order 2 the same checks of the derivative functions themselves (``modes``
  ``("fwd", "rev")`` at order 2 covers fwd, rev and all four second-order chains).

The axes are sample x backend x modes x order, with modes one of ``fwd``,
``rev``, ``fwd+rev`` and order 1 or 2 (`COMBOS`).

- Fast subset (``make test``): interp checks every sample at its order (2) in
  both modes. pysource checks every sample once, its (modes, order) taken in
  turn from `COMBOS`, so every combination occurs. numba checks *bundles*:
  `Bundle` stages many samples into one generated Python function (one tuple
  argument, one tuple of the members' results), differentiated once, so numba
  compiles one module per bundle, not one per function. Each function's first
  sample with arguments of rank <= 2 is in a bundle checked in forward mode at
  order 1 (the cheapest compile; the value is the jvp's primal output against
  NumPy); one bundle of two cheap samples is checked in both modes at order 2,
  so every (numba, mode, order) and the mixed chains occur. The np.linalg
  functions numba compiles through its LAPACK bindings (`NUMBA_SLOW_COMPILE`,
  5 to 45 s each) are left to the slow tests. A bundle that fails reruns its
  members one by one and names the ones that fail.
- Full cross product (``make test-all``, marked slow): every sample on pysource
  and on numba on its own, both modes, at its order.

`test_page_and_samples_agree` keeps the page and the samples in step: every
function with derivatives on the page has a sample, and every sample names a
function on the page.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import pathlib
import re
import types

import numpy as np
import pytest
from samples import all_samples
from samples._spec import S

import pullback as pb
from pullback.pytree import flatten
from pullback.testing import check_grads, is_float_leaf

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "numpy_coverage.md"

SAMPLES = all_samples()
# Rows the page marks "fwd, rev" that take no traced argument, so have no sample.
NO_SAMPLE = {"print": "print() of a traced value is refused (ConcreteNeeded); it runs only on static values"}

MODES = {"fwd": ("fwd",), "rev": ("rev",), "fwd+rev": ("fwd", "rev")}
# (modes, order) of one check; ("fwd+rev", 2) also checks the mixed chains (rev of fwd, fwd of rev)
COMBOS = [("fwd", 1), ("rev", 1), ("fwd", 2), ("rev", 2), ("fwd+rev", 2)]


def sample_ids(samples):
    """`id` or the function's name, numbered where a function has several samples."""
    counts, seen, out = {}, {}, []
    for s in samples:
        counts[s.name] = counts.get(s.name, 0) + 1
    for s in samples:
        if s.id:
            out.append(s.id)
            continue
        seen[s.name] = seen.get(s.name, 0) + 1
        out.append(s.name if counts[s.name] == 1 else f"{s.name}#{seen[s.name]}")
    return out


IDS = sample_ids(SAMPLES)
LABEL = {id(s): i for s, i in zip(SAMPLES, IDS)}


def label(s: S) -> str:
    return LABEL.get(id(s)) or s.id or s.name


# -- the checks ------------------------------------------------------------------------

def _tree_close(out, ref, rtol, atol, what):
    ol, ot = flatten(out)
    rl, rt = flatten(ref)
    assert len(ol) == len(rl), f"{what}: result structure {ot} != NumPy's {rt}"
    for k, (o, r) in enumerate(zip(ol, rl)):
        o, r = np.asarray(o), np.asarray(r)
        assert o.shape == r.shape, f"{what}: leaf {k} has shape {o.shape}, NumPy's has {r.shape}"
        assert is_float_leaf(o) == is_float_leaf(r), \
            f"{what}: leaf {k} has dtype {o.dtype}, NumPy's has {r.dtype}"
        np.testing.assert_allclose(o.astype(np.float64), r.astype(np.float64), rtol=rtol, atol=atol,
                                   err_msg=f"{what}: leaf {k}")


def check_call(fn, args, backend, modes, order, rtol, atol, eps, what, value=True):
    """The value of ``fn(*args)`` on `backend` against NumPy (unless not `value`:
    then only the primal outputs of the derivatives are compared with NumPy's),
    then `check_grads`."""
    if value:
        ref = fn(*args)
        out = pb.jit(fn, backend=backend)(*args)
        _tree_close(out, ref, max(rtol, 1e-9), atol, f"value of {what} [backend={backend}]")
    check_grads(fn, args, modes=MODES[modes], order=order, backend=backend, rtol=rtol, atol=atol, eps=eps,
                err_msg=what)


def check_sample(s: S, backend: str, modes: str = "fwd+rev", order: int | None = None):
    order = s.order if order is None else min(order, s.order)
    check_call(s.fn, s.make(), backend, modes, order, s.rtol, s.atol, s.eps, label(s))


def fresh(s: S) -> S:
    """`s` with a new copy of its function (no transformation cached on it yet)."""
    f = s.fn
    g = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    return dataclasses.replace(s, fn=g)


# -- bundles: many samples in one staged function ------------------------------------------

class Bundle:
    """Samples staged together: a generated module defines

        def bundle(a):
            return (f0(a[0], a[1]), f1(a[2]), ...)

    with ``f<k>`` the members' functions, so one derivative (one numba module)
    covers them all. Tolerances are the loosest of the members'; members with a
    different finite-difference step belong in another bundle."""

    def __init__(self, samples, directory: pathlib.Path, name: str):
        self.samples = list(samples)
        self.name = name
        assert len({s.eps for s in self.samples}) == 1, "bundle members must share eps"
        calls, k = [], 0
        for j, s in enumerate(self.samples):
            calls.append(f"f{j}({', '.join(f'a[{k + i}]' for i in range(len(s.args)))})")
            k += len(s.args)
        src = (f'"""Generated by tests/test_numpy_table.py: {len(self.samples)} samples in one function."""\n\n\n'
               "def bundle(a):\n    return (\n" + "".join(f"        {c},\n" for c in calls) + "    )\n")
        path = directory / f"{name}.py"
        path.write_text(src)
        spec = importlib.util.spec_from_file_location(f"_pb_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for j, s in enumerate(self.samples):
            setattr(mod, f"f{j}", s.fn)
        self.fn = mod.bundle
        self.path = path

    def args(self):
        return (tuple(a for s in self.samples for a in s.make()),)

    def check(self, backend, modes, order):
        order = min([order] + [s.order for s in self.samples])
        what = f"{self.name} ({len(self.samples)} samples)"
        try:
            check_call(self.fn, self.args(), backend, modes, order, max(s.rtol for s in self.samples),
                       max(s.atol for s in self.samples), self.samples[0].eps, what, value=backend != "numba")
        except Exception as e:  # name the failing members
            failed = []
            for s in self.samples:
                try:
                    check_sample(s, backend, modes, order)
                except Exception as ee:  # noqa: BLE001  (any failure of a member is reported)
                    failed.append(f"  {label(s)}: {type(ee).__name__}: {_first_lines(ee)}")
            members = ", ".join(label(s) for s in self.samples)
            if failed:
                raise AssertionError(
                    f"{what} failed on {backend} [{modes}, order {order}]; the samples that fail alone:\n"
                    + "\n".join(failed) + f"\n(bundle source: {self.path})") from e
            raise AssertionError(
                f"{what} failed on {backend} [{modes}, order {order}], but each member passes alone "
                f"({members}): {type(e).__name__}: {_first_lines(e)}\n(bundle source: {self.path})") from e


def _first_lines(e, n=6):
    return "\n    ".join(str(e).splitlines()[:n])


def bundle_groups(samples, size):
    """[(name, chunk)]: chunks of at most `size` samples of one sample file sharing a
    finite-difference step, in sample order, named after the file. Per file, so a sample
    added to one file changes only that file's bundles (the others stay in the
    compiled-code cache)."""
    by_key = {}
    for s in samples:
        by_key.setdefault((s.fn.__module__.rsplit(".", 1)[-1], s.eps), []).append(s)
    out = []
    for (area, eps), group in by_key.items():
        tag = area if eps == 1e-6 else f"{area}_eps{eps:g}".replace(".", "p").replace("-", "m")
        out += [(f"{tag}_{i // size}", group[i:i + size]) for i in range(0, len(group), size)]
    return out


# -- the page and the samples agree ----------------------------------------------------------

def page_rows() -> dict:
    """The coverage page's function rows: name -> "fwd, rev" or "none"."""
    rows = {}
    for line in PAGE.read_text().splitlines():
        m = re.fullmatch(r"\| `([^`]+)` \| ([^|]+) \|", line.strip())
        if m:
            rows[m.group(1)] = m.group(2).strip()
    return rows


def test_page_and_samples_agree():
    rows = page_rows()
    assert rows, f"no function rows found in {PAGE}"
    names = {s.name for s in SAMPLES}
    missing = sorted(r for r, d in rows.items() if d == "fwd, rev" and r not in names and r not in NO_SAMPLE)
    unknown = sorted(names - set(rows))
    stale = sorted(n for n in NO_SAMPLE if n not in rows or n in names)
    assert not missing, f"functions on {PAGE.name} with derivatives but no sample in tests/samples/: {missing}"
    assert not unknown, f"samples of functions not on {PAGE.name} (regenerate the page or fix the name): {unknown}"
    assert not stale, f"NO_SAMPLE entries no longer needed: {stale}"


def test_sample_ids_are_unique():
    dup = sorted({i for i in IDS if IDS.count(i) > 1})
    assert not dup, f"give these samples distinct ids (S(..., id=...)): {dup}"


# -- fast subset: interp, every sample, both modes, order 2 ------------------------------------

def _on(backend):
    return [s for s in SAMPLES if backend in s.backends]


@pytest.mark.parametrize("s", _on("interp"), ids=label)
def test_interp(s):
    check_sample(s, "interp")


# -- fast subset: pysource, every sample once, the combinations in turn ------------------------

PYSOURCE_FAST = [(s, *COMBOS[k % len(COMBOS)]) for k, s in enumerate(_on("pysource"))]


@pytest.mark.parametrize("s,modes,order", PYSOURCE_FAST,
                         ids=[f"{label(s)}-{m}-{o}" for s, m, o in PYSOURCE_FAST])
def test_pysource(s, modes, order):
    check_sample(s, "pysource", modes, order)


# -- the harness catches wrong rules and names the function ------------------------------------

def _one(name):
    return next(s for s in SAMPLES if s.name == name)


def _fresh_labelled(name):
    s = _one(name)
    return dataclasses.replace(fresh(s), id=label(s))


def _wrong_tanh_jvp(b, args, tans, outs):
    return [b.mul(tans[0], outs[0])]  # tanh' = 1 - tanh^2, not tanh


def _wrong_tanh_vjp(b, args, outs, cts, need):
    return [b.mul(cts[0], outs[0])]


def test_harness_catches_a_wrong_jvp_rule(monkeypatch):
    from pullback.ir.prims import TABLE

    s = _fresh_labelled("np.tanh")
    check_sample(s, "interp", "fwd", 1)  # right before the patch
    monkeypatch.setattr(TABLE.get("tanh"), "jvp", _wrong_tanh_jvp)
    with pytest.raises(AssertionError, match=r"JVP vs central finite differences failed \[JVP of np\.tanh"):
        check_sample(_fresh_labelled("np.tanh"), "interp", "fwd", 1)


def test_harness_catches_a_wrong_vjp_rule(monkeypatch):
    from pullback.ir.prims import TABLE

    monkeypatch.setattr(TABLE.get("tanh"), "vjp", _wrong_tanh_vjp)
    check_sample(_fresh_labelled("np.tanh"), "interp", "fwd", 2)  # forward mode does not use it
    with pytest.raises(AssertionError, match=r"dot-product test .*failed \[VJP of np\.tanh"):
        check_sample(_fresh_labelled("np.tanh"), "interp", "rev", 1)


def test_harness_catches_a_wrong_value(monkeypatch):
    from pullback.ir.prims import TABLE

    monkeypatch.setattr(TABLE.get("tanh"), "impl", lambda x: np.tanh(x) * 1.001)  # the interpreter's tanh
    with pytest.raises(AssertionError, match=r"value of np\.tanh \[backend=interp\]"):
        check_sample(_fresh_labelled("np.tanh"), "interp", "fwd", 1)


def test_failing_bundle_names_the_failing_sample(monkeypatch, tmp_path):
    from pullback.ir.prims import TABLE

    monkeypatch.setattr(TABLE.get("tanh"), "vjp", _wrong_tanh_vjp)
    members = [_fresh_labelled(n) for n in ("np.sin", "np.tanh", "np.multiply")]
    bundle = Bundle(members, tmp_path, "wrong_tanh")
    with pytest.raises(AssertionError) as info:
        bundle.check("interp", "rev", 1)
    msg = str(info.value)
    culprits = msg.split("alone:", 1)[1].split("(bundle source")[0]
    assert f"{members[1].id}: AssertionError" in culprits, msg
    assert members[0].id not in culprits and members[2].id not in culprits, msg
    assert str(bundle.path) in msg


# -- fast subset: numba, bundled -----------------------------------------------------------------

NUMBA_BUNDLE = 8  # samples per bundle
# Functions numba compiles through its own LAPACK bindings: 5 to 45 s each, cold, on a
# 2-core machine. They are checked on numba by test_full (slow) and the slow bundle of
# tests/frontend/test_linalg_numba.py, not in the fast subset.
NUMBA_SLOW_COMPILE = {f"np.linalg.{n}" for n in (
    "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "lstsq", "det", "slogdet", "inv", "solve",
    "matrix_power", "norm", "cond", "matrix_norm")}
NUMBA_COMBO = ("np.sin", "np.multiply")  # their first samples: both modes at order 2, one bundle


def numba_fast_plan():
    """[(name, samples, modes, order)]: each function's first sample whose arguments have
    rank <= 2 (numba's compile time grows steeply with rank), else its first,
    bundled, forward mode, order 1; and `NUMBA_COMBO` in both modes at order 2
    (every chain)."""
    pool = [s for s in _on("numba") if s.name not in NUMBA_SLOW_COMPILE]
    first = {}
    for s in pool:
        low = max(len(a.shape) for a in s.args) <= 2
        if s.name not in first or (low and not first[s.name][1]):
            first[s.name] = (s, low)
    picks = [s for s in pool if first[s.name][0] is s]
    plan = [(name, g, "fwd", 1) for name, g in bundle_groups(picks, NUMBA_BUNDLE)]
    combo = [next(s for s in pool if s.name == n) for n in NUMBA_COMBO]
    return plan + [("order2", combo, "fwd+rev", 2)]


NUMBA_FAST = numba_fast_plan()


@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("numba_bundles")


# Compiling the forward-mode bundles cold costs about 135 s of CPU (numba's compile time
# grows with the number of functions); the CI runs on a clean clone on 2 cores, so only
# the mixed-chain bundle runs in `make test` and the others in `make test-all`.
@pytest.mark.parametrize("name,samples,modes,order",
                         [pytest.param(*p, marks=() if p[0] == "order2" else pytest.mark.slow) for p in NUMBA_FAST],
                         ids=[f"{name}-{m}-{o}" for name, _, m, o in NUMBA_FAST])
def test_numba_bundle(name, samples, modes, order, bundle_dir):
    Bundle(samples, bundle_dir, name).check("numba", modes, order)


def test_fast_plan_covers_the_axes():
    """Pairwise: every function on every backend; every (backend, mode, order)."""
    for backend, checks in (("interp", [(s, "fwd+rev", s.order) for s in _on("interp")]),
                            ("pysource", PYSOURCE_FAST),
                            ("numba", [(s, m, o) for _, g, m, o in NUMBA_FAST for s in g])):
        names = {s.name for s, _, _ in checks} | (NUMBA_SLOW_COMPILE if backend == "numba" else set())
        assert names >= {s.name for s in _on(backend)}, (backend, {s.name for s in _on(backend)} - names)
        covered = {(mode, o) for _, m, order in checks for mode in MODES[m] for o in range(1, order + 1)}
        assert covered == {(m, o) for m in ("fwd", "rev") for o in (1, 2)}, (backend, covered)
        assert any(m == "fwd+rev" and o == 2 for _, m, o in checks), backend  # the mixed chains


# -- full cross product (make test-all) -------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("backend", ["pysource", "numba"])
@pytest.mark.parametrize("s", SAMPLES, ids=label)
def test_full(s, backend):
    if backend not in s.backends:
        pytest.skip(f"{label(s)} is not checked on {backend} (its sample's backends)")
    check_sample(s, backend)
