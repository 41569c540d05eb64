"""Recursion benchmarks: gradient/primal of chain and tree recursion, and TreeLSTM training
steps per second against PyTorch eager, side by side in one run.

    PYTHONPATH=src python benchmarks/recursion/run.py [--parts chain,tree,treelstm]
        [--depths 10,100,1000,10000] [--leaves 16,128,1024,10000] [--backend numba]
        [--no-joint] [--trees 20] [--out FILE]

See benchmarks/recursion/README.md for what is measured. Thread pinning (one core, every
BLAS pool at one thread) happens here, before NumPy or PyTorch are imported, with
benchmarks/run.py's `pin`; timings use its `measure` (one first call, then the median of
repeated calls).
"""
import argparse
import importlib.util
import os
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


bench = _load("pb_bench_run", os.path.join(ROOT, "benchmarks", "run.py"))   # stdlib imports only


def parse_args(argv=None):
    ints = lambda s: [int(float(v)) for v in s.split(",") if v]
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--parts", default="chain,tree,treelstm", help="comma-separated subset of chain,tree,treelstm")
    p.add_argument("--depths", type=ints, default=[10, 100, 1000, 10000], help="chain depths d")
    p.add_argument("--leaves", type=ints, default=[16, 128, 1024, 10000], help="tree sizes n (leaves)")
    p.add_argument("--backend", default=None, help="pullback backend (default: $PULLBACK_BACKEND or numba)")
    p.add_argument("--no-joint", action="store_true",
                   help="do not also time checkpoint=pb.Joint() (the re-executing call strategy)")
    p.add_argument("--trees", type=int, default=20, help="TreeLSTM: trees per timed epoch")
    p.add_argument("--hidden", type=int, default=150, help="TreeLSTM hidden size")
    p.add_argument("--embed", type=int, default=300, help="TreeLSTM embedding size")
    p.add_argument("--vocab", type=int, default=5000, help="TreeLSTM vocabulary (embedding rows)")
    p.add_argument("--lr", type=float, default=0.02, help="TreeLSTM SGD learning rate")
    p.add_argument("--no-torch", action="store_true", help="skip the PyTorch column")
    p.add_argument("--threads", type=int, default=1, help="cores and BLAS threads (default 1)")
    p.add_argument("--stack-mib", type=int, default=1024,
                   help="stack of the thread the measurements run in (deep recursion), MiB")
    p.add_argument("--cache-dir", default=None,
                   help="PULLBACK_CACHE_DIR (numba; default: a fresh temporary directory, so first calls compile)")
    p.add_argument("--min-time", type=float, default=0.2)
    p.add_argument("--min-runs", type=int, default=5)
    p.add_argument("--max-time", type=float, default=3.0)
    p.add_argument("--rtol", type=float, default=1e-9, help="agreement tolerance (relative to the largest entry)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="also write the markdown report here")
    return p.parse_args(argv)


def fmt_s(t):
    if t is None:
        return "–"
    return f"{t * 1e6:.1f} µs" if t < 1e-3 else f"{t * 1e3:.2f} ms" if t < 1 else f"{t:.2f} s"


def fmt_r(r):
    return "–" if r is None else f"{r:.2f}"


def fmt_e(e):
    return "–" if e is None else "✓" if e <= ARGS.rtol else f"✗ {e:.1e}"


def timing(fn, args):
    """(first-call seconds, median seconds, result)."""
    first, med, _, res = bench.measure(fn, args, lambda r: r, ARGS.min_time, ARGS.min_runs, ARGS.max_time)
    return first, med, res


def strategies(pb):
    """[(label, keyword arguments)]: the default strategy, and pb.Joint() when it exists."""
    out = [("default", {})]
    if getattr(pb, "Joint", None) is not None and not ARGS.no_joint:
        out.append(("Joint", {"checkpoint": pb.Joint()}))
    return out


# --------------------------------------------------------------------------- chain and tree

def run_chain(pb, np, progs, lines):
    strats = strategies(pb)
    primal = pb.jit(progs.chain, backend=ARGS.backend)
    grads = [(label, pb.grad(progs.chain, backend=ARGS.backend, **kw)) for label, kw in strats]
    head = "| d | primal | " + " | ".join(f"grad ({s}) | grad/primal ({s}) | agrees ({s})" for s, _ in strats)
    lines += ["### Chain recursion `chain(x, d) = sin(chain(x, d - 1)) * 1.01`, traced d", "",
              head + " | first calls (primal, grads) |", "|" + "---|" * (2 + 3 * len(strats) + 1)]
    for d in ARGS.depths:
        args = (0.3, np.int64(d))
        p_first, p_med, y = timing(primal, args)
        ref = progs.chain_grad_ref(0.3, d)
        cells, firsts = [], [p_first]
        for label, g in grads:
            g_first, g_med, gy = timing(g, args)
            firsts.append(g_first)
            cells += [fmt_s(g_med), fmt_r(g_med / p_med), fmt_e(bench.disagreement(ref, gy))]
        lines.append(f"| {d} | {fmt_s(p_med)} | " + " | ".join(cells) + " | " + ", ".join(map(fmt_s, firsts)) + " |")
        print(lines[-1], flush=True)
    lines.append("")


def run_tree(pb, np, progs, lines):
    strats = strategies(pb)
    primal = pb.jit(progs.tree, backend=ARGS.backend)
    variants = [("w", 1), ("x, w", (0, 1))]
    grads = [(v, s, pb.grad(progs.tree, argnums=a, backend=ARGS.backend, **kw))
             for v, a in variants for s, kw in strats]
    lines += ["### Tree recursion over a balanced binary tree of n leaves (child-index arrays, traced node ids)",
              "", "| n | primal | " + " | ".join(f"grad ∂/∂{v} ({s}) | grad/primal" for v, s, _ in grads)
              + " | agree | first calls (primal, grads) |", "|" + "---|" * (2 + 2 * len(grads) + 2)]
    for n in ARGS.leaves:
        left, right, root = progs.balanced_tree(n)
        x = np.random.default_rng(ARGS.seed).uniform(-1.0, 1.0, size=len(left))
        args = (x, 0.7, left, right, root)
        p_first, p_med, y = timing(primal, args)
        errs = [bench.disagreement(progs.tree_ref(*args), y)]
        cells, firsts, by_variant = [], [p_first], {}
        for v, s, g in grads:
            g_first, g_med, gy = timing(g, args)
            firsts.append(g_first)
            cells += [fmt_s(g_med), fmt_r(g_med / p_med)]
            if v in by_variant:                    # the strategies agree with each other
                errs.append(bench.disagreement(by_variant[v], gy))
            by_variant.setdefault(v, gy)
        if len(by_variant) == 2:                   # ∂/∂w alone is the w part of ∂/∂(x, w)
            errs.append(bench.disagreement(by_variant["w"], by_variant["x, w"][1]))
        agree = None if None in errs else max(errs)
        lines.append(f"| {n} | {fmt_s(p_med)} | " + " | ".join(cells) + f" | {fmt_e(agree)} | "
                     + ", ".join(map(fmt_s, firsts)) + " |")
        print(lines[-1], flush=True)
    lines.append("")


# --------------------------------------------------------------------------- TreeLSTM

def run_treelstm(pb, np, lines):
    tl = _load("treelstm_example", os.path.join(ROOT, "examples", "treelstm.py"))
    rng = np.random.default_rng(ARGS.seed)
    trees = tl.make_data(rng, ARGS.trees, ARGS.vocab, 128)
    E0, p0 = tl.init_params(rng, ARGS.vocab, ARGS.embed, ARGS.hidden)
    step = tl.make_step(ARGS.backend)
    loss_fn = pb.jit(tl.tree_loss, backend=ARGS.backend)
    nodes = sum(int(t.n_nodes) for t in trees)
    state = {"E": E0, "p": p0}

    def epoch_pb():
        E, p = state["E"], state["p"]
        losses = []
        for t in trees:
            loss, E, p = step(E, p, t.left, t.right, t.word, t.label, t.root, t.n_nodes, ARGS.lr)
            losses.append(float(loss))
        state["E"], state["p"] = E, p
        return losses

    def primal_pb():
        return [float(loss_fn(E0[t.word], p0, t.left, t.right, t.label, t.root)) for t in trees]

    rows = {}
    first, med, _ = timing(primal_pb, ())
    rows["pullback loss only"] = (first, med)
    # the first epoch (from the initial weights: compiles; its results are checked against
    # PyTorch's first epoch), then the timed epochs
    first, pb_losses = bench.timed(epoch_pb, ())
    pb_after = [state["E"].copy()] + [state["p"][k].copy() for k in sorted(p0)]
    rows["pullback train step"] = (first, timing(epoch_pb, ())[1])

    torch_note, agree = None, None
    torch = None
    if not ARGS.no_torch:
        try:
            import torch
        except Exception as e:  # ImportError, or a broken install
            torch_note = f"PyTorch column skipped: torch not importable ({type(e).__name__}: {e})"
    else:
        torch_note = "PyTorch column skipped (--no-torch)"
    if torch is not None:
        torch.set_num_threads(ARGS.threads)
        tt = _load("treelstm_torch", os.path.join(HERE, "treelstm_torch.py"))
        ttrees = [tt.TorchTree(t) for t in trees]
        model, tstep = tt.make_trainer(E0, p0, ARGS.lr)
        first, t_losses = bench.timed(lambda: [tstep(t) for t in ttrees], ())
        t_E, t_p = tt.params_of(model)
        t_after = [t_E] + [t_p[k] for k in sorted(p0)]
        agree = max(bench.disagreement(pb_losses, t_losses), bench.disagreement(pb_after, t_after))
        rows["PyTorch eager train step"] = (first, timing(lambda: [tstep(t) for t in ttrees], ())[1])
        with torch.no_grad():
            model0, _ = tt.make_trainer(E0, p0, ARGS.lr)
            first, med, _ = timing(lambda: [model0(t).item() for t in ttrees], ())
        rows["PyTorch eager loss only (no_grad)"] = (first, med)

    k = len(trees)
    lines += [f"### TreeLSTM training (hidden {ARGS.hidden}, embedding {ARGS.vocab} x {ARGS.embed}, float64): "
              f"{k} trees of 10-60 leaves, {nodes} nodes per epoch", "",
              "| | ms per step (median epoch / trees) | steps per second | first epoch (compile / warm-up) |",
              "|---|---|---|---|"]
    for name, (first, med) in rows.items():
        lines.append(f"| {name} | {med / k * 1e3:.2f} | {k / med:.1f} | {fmt_s(first)} |")
    lines.append("")
    pbs = rows["pullback train step"][1]
    lines.append(f"- pullback train step / pullback loss only: {pbs / rows['pullback loss only'][1]:.2f}")
    if "PyTorch eager train step" in rows:
        ts = rows["PyTorch eager train step"][1]
        lines.append(f"- **pullback speed-up over PyTorch eager (steps per second ratio): {ts / pbs:.2f}x**")
        lines.append(f"- agreement after one epoch from the same weights (losses, all weights): {fmt_e(agree)}"
                     + ("" if agree is None else f" (max relative difference {agree:.1e})"))
    if torch_note:
        lines.append(f"- {torch_note}")
    lines.append("")
    print("\n".join(lines[-12:]), flush=True)


# --------------------------------------------------------------------------- main

def body(out):
    import numpy as np

    import pullback as pb

    sys.path.insert(0, HERE)
    import programs as progs

    if ARGS.backend is None:
        ARGS.backend = pb.api.default_backend()
    versions = [f"numpy {np.__version__}"]
    try:
        import numba
        versions.append(f"numba {numba.__version__}")
    except ImportError:
        pass
    lines = ["## Recursion benchmarks", "",
             f"backend {ARGS.backend}; {ARGS.threads} thread(s), cores {CPUS}; "
             f"call strategies: {', '.join(s for s, _ in strategies(pb))}; " + ", ".join(versions)
             + f"; measurement thread stack {ARGS.stack_mib} MiB; {time.strftime('%Y-%m-%d %H:%M')}", ""]
    parts = ARGS.parts.split(",")
    if "chain" in parts:
        run_chain(pb, np, progs, lines)
    if "tree" in parts:
        run_tree(pb, np, progs, lines)
    if "treelstm" in parts:
        run_treelstm(pb, np, lines)
    out.append("\n".join(lines))


def main(argv=None):
    global ARGS, CPUS
    ARGS = parse_args(argv)
    CPUS = bench.pin(ARGS.threads)                        # before numpy / torch are imported
    tmp = None
    if ARGS.cache_dir:
        os.environ["PULLBACK_CACHE_DIR"] = ARGS.cache_dir
    elif "PULLBACK_CACHE_DIR" not in os.environ:
        tmp = tempfile.TemporaryDirectory(prefix="pb-recursion-bench-")
        os.environ["PULLBACK_CACHE_DIR"] = tmp.name
    # Deep recursion (chain at d = 10**4 and its derivative, Python frames on pysource) needs a
    # larger stack than a default thread's: run everything in one thread with a big stack.
    out, err = [], []
    threading.stack_size(ARGS.stack_mib * 2 ** 20)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 100_000))

    def target():
        try:
            body(out)
        except BaseException as e:  # re-raised in the main thread
            err.append(e)

    th = threading.Thread(target=target)
    th.start()
    th.join()
    if tmp is not None:
        tmp.cleanup()
    if err:
        raise err[0]
    report = out[0]
    print()
    print(report)
    if ARGS.out:
        with open(ARGS.out, "w") as f:
            f.write(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
