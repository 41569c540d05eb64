"""The Markdown report of benchmarks/run.py (tables only; no measuring here).

`report(results, meta, programs_desc) -> (text, bad)`: `results` maps a row label (program and
size) to ``{tool: row}``, each row as `run.run_program` leaves it (medians, first calls, calls,
agreement, pullback's per-shape, warm-start and bounds-check probes, or ``error``); `bad` is true
when any tool disagreed with pullback or failed. The targets section restates issue 13's targets
(pullback's derivative at most JAX's and PyTorch's, at most 2x the hand-written Numba one, and
derivative/primal at most 4) for every row and marks each met or missed.
"""

LABEL = {"pullback": "pullback", "jax": "JAX", "torch": "PyTorch", "numba": "Numba (hand)",
         "numpy": "NumPy (hand)"}


def fmt_t(s):
    if s is None:
        return "–"
    if s >= 1.0:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def fmt_r(x):
    return "–" if x is None else f"{x:.2f}×"


def fmt_err(e):
    return "shape mismatch" if e is None else f"{e:.1e}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def fmt_hit(h):
    return {True: "yes", False: "no"}.get(h, "?")


def startup_table(results, meta, errors):
    """The "pullback start-up" section (cold, new-shape and warm first calls); appends probe
    failures to `errors`."""
    rows = {name: r["pullback"] for name, r in results.items() if "pullback" in r and "error" not in r["pullback"]}
    if not rows:
        return []
    L = ["## pullback start-up", "",
         "First call (staging + code generation + numba compilation or cache load) of pullback's primal and "
         "derivative. **Cold**: in this process, with a fresh cache directory (unless --cache-dir named a "
         "populated one), so numba compiles. **New shape**: right after, the first call of the same primal and "
         "derivative on a second input with other sizes but the same ranks (the sizes in the last column): "
         "today pullback stages and compiles again. **Warm**: in a new process with the same input shapes as "
         "the cold call, with the cache populated by the cold run (Python start-up and imports not included). "
         "**Numba ready**: a cold compile of a large module runs numba in a background process while the "
         "first calls run the pysource backend (note [tiered-compile]); this is the first call plus the wait "
         "for that compile, after which calls run numba's code (with `--clock cpu`, the worker's CPU time "
         "counts too)."
         + ("" if meta["warm"] else f" Warm start not measured: the {meta['backend']} backend keeps no disk "
            "cache (only numba does)."), "",
         "| program | cold primal | cold deriv | cold: numba ready (p/d) | new shape primal | new shape deriv "
         "| new shape: numba ready (p/d) | warm primal | warm deriv | warm cache hit (p/d) | new shape |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        w = r.get("warm", {})
        s = r.get("shape", {})
        if "error" in w:
            errors.append(f"{name} / pullback warm-start probe: {w['error']}")
        if "error" in s:
            errors.append(f"{name} / pullback new-shape probe: {s['error']}")
        cells = [name, fmt_t(r["primal_first"]), fmt_t(r["deriv_first"]),
                 f"{fmt_t(r.get('primal_ready'))} / {fmt_t(r.get('deriv_ready'))}"]
        if "error" in s:
            cells += ["error", s["error"], ""]
        else:
            cells += [fmt_t(s.get("primal")), fmt_t(s.get("deriv")),
                      f"{fmt_t(s.get('primal_ready'))} / {fmt_t(s.get('deriv_ready'))}"]
        if not w:
            cells += ["–", "–", "–"]
        elif "error" in w:
            cells += ["error", "", w["error"]]
        else:
            cells += [fmt_t(w["primal"]), fmt_t(w["deriv"]), f"{fmt_hit(w['primal_hit'])}/{fmt_hit(w['deriv_hit'])}"]
        cells.append(s.get("label", "–"))
        L.append("| " + " | ".join(cells) + " |")
    return L + [""]


def boundscheck_table(results, errors):
    """The "cost of bounds checks" section; appends probe failures to `errors`."""
    rows = {name: r["pullback"]["bounds"] for name, r in results.items() if "bounds" in r.get("pullback", {})}
    if not rows:
        return []
    L = ["## Cost of bounds checks", "",
         "pullback (numba) with its run-time index checks (the default) and with `PULLBACK_BOUNDSCHECK=0`, "
         "each measured in new processes, on/off alternating twice, the smaller median of each kept "
         "(`--boundscheck-cost`). Ratio > 1: the checks cost time.", "",
         "| program | primal on | primal off | primal on/off | deriv on | deriv off | deriv on/off |",
         "|---|---|---|---|---|---|---|"]
    for name, b in rows.items():
        if "error" in b:
            errors.append(f"{name} / pullback bounds-check probe: {b['error']}")
            L.append(f"| {name} | error | | | | | {b['error']} |")
            continue
        on, off = b["on"], b["off"]
        L.append("| " + " | ".join([name, fmt_t(on["primal"]), fmt_t(off["primal"]),
                                    fmt_r(ratio(on["primal"], off["primal"])), fmt_t(on["deriv"]),
                                    fmt_t(off["deriv"]), fmt_r(ratio(on["deriv"], off["deriv"]))]) + " |")
    return L + [""]


TARGETS = (  # (column, tool whose derivative pullback's is divided by (None: pullback's primal), bound)
    ("deriv ≤ JAX", "jax", 1.0), ("deriv ≤ PyTorch", "torch", 1.0), ("deriv ≤ 2× hand-written", "numba", 2.0),
    ("deriv/primal ≤ 4", None, 4.0))


def targets_table(results):
    """Issue 13's targets per row: ✓ or MISSED with the ratio; – where a tool did not run."""
    L = ["## Targets (issue 13)", "",
         "pullback's derivative median divided by JAX's, PyTorch's and the hand-written Numba one's, and by "
         "pullback's own primal; MISSED where the ratio is above the bound.", "",
         "| program | " + " | ".join(t[0] for t in TARGETS) + " |", "|---" * (len(TARGETS) + 1) + "|"]
    missed = []
    for name, rows in results.items():
        pbr = rows.get("pullback", {})
        cells = [name]
        for col, tool, bound in TARGETS:
            other = pbr.get("primal") if tool is None else rows.get(tool, {}).get("deriv")
            r = ratio(pbr.get("deriv"), other)
            if r is None:
                cells.append("–")
            elif r <= bound:
                cells.append(f"✓ {fmt_r(r)}")
            else:
                cells.append(f"MISSED {fmt_r(r)}")
                missed.append(f"{name}: {col} ({fmt_r(r)})")
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    L.append(f"Missed: {len(missed)} of the cells above." if missed else "All targets met in this run.")
    return L + [""]


def summary_table(results, mismatches):
    L = ["## Summary", "",
         "| program | pullback primal | pullback deriv | deriv/primal: pullback | JAX | PyTorch | Numba (hand) "
         "| NumPy | pullback/JAX deriv | pullback/PyTorch deriv | pullback/hand deriv | pullback/hand primal "
         "| agreement |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, rows in results.items():
        pbr = rows.get("pullback", {})

        def dp(tool):
            r = rows.get(tool, {})
            return fmt_r(ratio(r.get("deriv"), r.get("primal")))

        def vs(tool, what="deriv"):
            return fmt_r(ratio(pbr.get(what), rows.get(tool, {}).get(what)))

        agree = []
        for tool in ("jax", "torch", "numba", "numpy"):
            r = rows.get(tool)
            if r is None or "agree" not in r:
                continue
            if r["agree"]:
                agree.append(f"{LABEL[tool]} ✓")
            else:
                agree.append(f"{LABEL[tool]} ✗")
                mismatches.append(f"{name}: {LABEL[tool]} differs from pullback (primal {fmt_err(r['err'][0])}, "
                                  f"derivative {fmt_err(r['err'][1])} relative)")
        if "error" in pbr:
            agree = [f"pullback failed: {pbr['error']}"]
        L.append("| " + " | ".join([
            name, fmt_t(pbr.get("primal")), fmt_t(pbr.get("deriv")), dp("pullback"), dp("jax"), dp("torch"),
            dp("numba"), dp("numpy"), vs("jax"), vs("torch"), vs("numba"), vs("numba", "primal"),
            ", ".join(agree) or "–"]) + " |")
    return L + [""]


def per_tool_table(results, errors):
    L = ["## Per tool", "",
         "| program | tool | primal | deriv | deriv/primal | first call primal | first call deriv "
         "| calls (p/d) | max rel. diff vs pullback (p/d) |",
         "|---|---|---|---|---|---|---|---|---|"]
    for name, rows in results.items():
        for tool, r in rows.items():
            if "not_run" in r:
                L.append(f"| {name} | {LABEL[tool]} | not run | | | | | | {r['not_run']} |")
                continue
            if "error" in r:
                errors.append(f"{name} / {LABEL[tool]}: {r['error']}")
                L.append(f"| {name} | {LABEL[tool]} | error | | | | | | {r['error']} |")
                continue
            diff = "(reference)" if tool == "pullback" else (
                " / ".join(fmt_err(e) for e in r["err"]) if "err" in r else "–")
            L.append("| " + " | ".join([
                name, LABEL[tool], fmt_t(r["primal"]), fmt_t(r["deriv"]), fmt_r(ratio(r["deriv"], r["primal"])),
                fmt_t(r["primal_first"]), fmt_t(r["deriv_first"]), f"{r['primal_runs']}/{r['deriv_runs']}",
                diff]) + " |")
    return L + [""]


def report(results, meta, programs_desc):
    L = [f"# pullback benchmarks ({meta['sizes']} sizes)", ""]
    L += [f"- {k}: {v}" for k, v in meta["info"]]
    L += ["", "Medians of repeated calls after a first (compile/warm-up) call; ratios measured side by side "
          "in this run. Reproduce by rerunning, do not quote.", ""]
    mismatches, errors = [], []
    L += summary_table(results, mismatches)
    L += targets_table(results)
    L += per_tool_table(results, errors)
    L += startup_table(results, meta, errors)
    L += boundscheck_table(results, errors)
    L += ["## Agreement", ""]
    if mismatches or errors:
        L += [f"- MISMATCH {m}" for m in mismatches] + [f"- ERROR {e}" for e in errors]
    else:
        L.append(f"All tools that ran agree with pullback (relative tolerance {meta['rtol']:g}).")
    L += ["", "## Programs", ""]
    L += [f"- **{name}**: {desc}" for name, desc in programs_desc.items()]
    L.append("")
    return "\n".join(L), bool(mismatches or errors)
