"""Random numeric Python programs for differential testing of pullback.

`ProgGen(source).program()` returns a `GenProgram`: the source text of a module
defining ``def f(x0, ...)`` and the kinds of its arguments. The grammar:

- arguments: 1-3 floats, each a scalar or a vector of shape ``(N,)``;
- statements: assignments of random expressions (new temporaries or
  rebinding existing names), ``if``/``else`` on a scalar comparison (a
  margin-free comparison against a constant; ties have probability ~0),
  ``for i in range(k)`` with k <= N (the index is used in arithmetic and to
  index vectors), ``while j < k`` counter loops, and in-place updates
  ``a[i] = e`` / ``a[i] += e`` on arrays made by ``np.copy`` / ``.copy()``;
- expressions: sin, cos, tanh, exp(tanh(.)), log(1 + e*e), sqrt(1 + e*e),
  + - *, division by (1 + e*e), np.sum, np.dot, indexing with static and
  loop indices; non-atomic operands of duplicating forms are hoisted into
  temporaries, so sizes stay linear;
- the function returns a scalar.

Arrays are never aliased (no ``t = a`` of an array), and arguments are never
mutated, so plain Python semantics equal pullback's functional semantics.

`source` is anything with ``integers(lo, hi)`` (inclusive) and ``choice(seq)``:
`HypothesisSource` (wraps a Hypothesis ``draw``) or `RandomSource`.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import random
import sys
from dataclasses import dataclass, field

import numpy as np

N = 3  # the length of every vector
CONSTS = ("0.5", "1.5", "-0.7", "2.0", "0.25", "-1.25", "3.0")
UNARY = ("np.sin({})", "np.cos({})", "np.tanh({})", "np.exp(np.tanh({}))")
UNARY_DUP = ("np.log(1.0 + {0} * {0})", "np.sqrt(1.0 + {0} * {0})")  # need an atomic operand
BINARY = ("({} + {})", "({} - {})", "({} * {})")


class RandomSource:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def integers(self, lo, hi):
        return self.r.randint(lo, hi)

    def choice(self, seq):
        return self.r.choice(list(seq))


class HypothesisSource:
    def __init__(self, draw):
        from hypothesis import strategies as st

        self.draw = draw
        self.st = st

    def integers(self, lo, hi):
        return self.draw(self.st.integers(lo, hi))

    def choice(self, seq):
        return self.draw(self.st.sampled_from(list(seq)))


@dataclass
class GenProgram:
    source: str
    arg_kinds: tuple  # "s" (float scalar) or "v" (float vector of shape (N,))
    name: str = "f"

    def __repr__(self):
        return f"GenProgram(arg_kinds={self.arg_kinds!r}, source=\n{self.source})"

    def make_args(self, rng: np.random.Generator, scale=1.0):
        return tuple(float(rng.normal() * scale) if k == "s" else rng.normal(size=N) * scale
                     for k in self.arg_kinds)

    def load(self, directory):
        """Write the module into `directory` and import it; returns the function."""
        return load_source(self.source, directory)[self.name]


def load_source(source: str, directory: str) -> dict:
    """Import `source` from a real file (pullback reads functions with inspect.getsource)."""
    h = hashlib.sha1(source.encode()).hexdigest()[:16]
    modname = f"_pb_gen_{h}"
    if modname in sys.modules:
        return vars(sys.modules[modname])
    path = os.path.join(directory, modname + ".py")
    with open(path, "w") as fh:
        fh.write(source)
    spec = importlib.util.spec_from_file_location(modname, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    return vars(mod)


@dataclass
class _Scope:
    vars: dict  # name -> "s" | "v"
    owned: set  # vector names that are safe to mutate in place
    loop_index: list = field(default_factory=list)  # enclosing for-loop index names (ints < N)


class ProgGen:
    def __init__(self, source, max_stmts=5, max_depth=2):
        self.src = source
        self.max_stmts = max_stmts
        self.max_depth = max_depth
        self.counter = 0

    # -- helpers -------------------------------------------------------------------
    def fresh(self, stem):
        self.counter += 1
        return f"{stem}{self.counter}"

    def coin(self, num=1, den=2):
        return self.src.integers(1, den) <= num

    def names(self, scope, kind):
        return sorted(n for n, k in scope.vars.items() if k == kind)

    # -- expressions -----------------------------------------------------------------
    def atom(self, scope, kind, out, indent):
        """An atomic operand of `kind`: a name, or a literal (scalars)."""
        names = self.names(scope, kind)
        if kind == "s":
            opts = ["const"] + (["name"] * 3 if names else [])
            if scope.loop_index:
                opts.append("index")
            if self.names(scope, "v"):
                opts.append("elem")
            pick = self.src.choice(opts)
            if pick == "const":
                return self.src.choice(CONSTS)
            if pick == "index":
                return f"(0.5 * {self.src.choice(scope.loop_index)})"
            if pick == "elem":
                return f"{self.src.choice(self.names(scope, 'v'))}[{self.index(scope)}]"
            return self.src.choice(names)
        return self.src.choice(names)

    def index(self, scope):
        opts = ["0", "1", str(N - 1), "-1"] + list(scope.loop_index) * 2
        return self.src.choice(opts)

    def hoist(self, expr, kind, scope, out, indent):
        """Bind a non-atomic `expr` to a fresh temporary so it can be duplicated."""
        if expr.isidentifier():
            return expr
        t = self.fresh("t")
        out.append(f"{indent}{t} = {expr}")
        scope.vars[t] = kind
        return t

    def expr(self, scope, kind, depth, out, indent):
        if depth <= 0 or self.coin(1, 4):
            return self.atom(scope, kind, out, indent)
        has_v = bool(self.names(scope, "v"))
        forms = ["unary", "unary_dup", "binary", "div"]
        if kind == "s" and has_v:
            forms += ["sum", "dot"]
        form = self.src.choice(forms)
        if form == "unary":
            return self.src.choice(UNARY).format(self.expr(scope, kind, depth - 1, out, indent))
        if form == "unary_dup":
            a = self.hoist(self.expr(scope, kind, depth - 1, out, indent), kind, scope, out, indent)
            return self.src.choice(UNARY_DUP).format(a)
        if form in ("binary", "div"):
            ka, kb = kind, kind
            if kind == "v" and self.coin(1, 3):
                ka, kb = self.src.choice([("s", "v"), ("v", "s")])
            a = self.expr(scope, ka, depth - 1, out, indent)
            b = self.expr(scope, kb, depth - 1, out, indent)
            if form == "binary":
                return self.src.choice(BINARY).format(a, b)
            b = self.hoist(b, kb, scope, out, indent)
            return f"({a} / (1.0 + {b} * {b}))"
        if form == "sum":
            return f"np.sum({self.expr(scope, 'v', depth - 1, out, indent)})"
        a = self.expr(scope, "v", depth - 1, out, indent)
        b = self.expr(scope, "v", depth - 1, out, indent)
        return f"np.dot({a}, {b})"

    def rhs(self, scope, kind, out, indent):
        """An expression that is never a bare name (no aliasing of arrays)."""
        e = self.expr(scope, kind, self.src.integers(1, 3), out, indent)
        if e.isidentifier():
            e = self.src.choice(UNARY).format(e)
        return e

    def cond(self, scope, out, indent):
        e = self.expr(scope, "s", 2, out, indent)
        if self.names(scope, "v") and self.coin(1, 3):
            e = f"np.sum({self.src.choice(self.names(scope, 'v'))})"
        c = self.src.choice(["1000.0", "-1000.0", "0.0", "0.5", "-0.3"])
        op = self.src.choice([">", "<", ">=", "<="])
        return f"{e} {op} {c}"

    # -- statements --------------------------------------------------------------------
    def block(self, scope, depth, out, indent, n_stmts, new_vars):
        for _ in range(n_stmts):
            self.stmt(scope, depth, out, indent, new_vars)

    def stmt(self, scope, depth, out, indent, new_vars):
        kinds = ["assign", "assign", "rebind"]
        if depth < self.max_depth:
            kinds += ["if", "for", "while"]
        if scope.owned:
            kinds += ["update", "update"]
        elif new_vars and self.names(scope, "v"):
            kinds += ["copy"]
        k = self.src.choice(kinds)
        if k == "assign" and not new_vars:
            k = "rebind"
        if k == "assign":
            kind = self.src.choice(["s", "v"]) if self.names(scope, "v") else "s"
            e = self.rhs(scope, kind, out, indent)
            t = self.fresh("t")
            out.append(f"{indent}{t} = {e}")
            scope.vars[t] = kind
        elif k == "rebind":
            name = self.src.choice(sorted(scope.vars))
            kind = scope.vars[name]
            e = self.rhs(scope, kind, out, indent)
            if depth > 0:
                # inside loops/branches: a contraction, so repeated updates stay bounded
                e = self.src.choice([f"0.5 * {name} + np.tanh({e})", f"np.sin({e})",
                                     f"{name} + 0.1 * np.tanh({e})"])
            elif self.coin(1, 2):
                # accumulate, keeping the old value live
                e = f"{name} + {e}" if self.coin(1, 2) else f"0.5 * {name} - {e}"
            out.append(f"{indent}{name} = {e}")
        elif k == "copy":
            src = self.src.choice(self.names(scope, "v"))
            a = self.fresh("a")
            out.append(f"{indent}{a} = " + (f"np.copy({src})" if self.coin(1, 2) else f"{src}.copy()"))
            scope.vars[a] = "v"
            scope.owned.add(a)
        elif k == "update":
            a = self.src.choice(sorted(scope.owned))
            e = self.expr(scope, "s", 2, out, indent)
            if depth > 0:
                e = f"np.tanh({e})"
            op = self.src.choice(["=", "=", "+="])
            out.append(f"{indent}{a}[{self.index(scope)}] {op} {e}")
        elif k == "if":
            out.append(f"{indent}if {self.cond(scope, out, indent)}:")
            self.sub_block(scope, depth, out, indent)
            if self.coin(1, 2):
                out.append(f"{indent}else:")
                self.sub_block(scope, depth, out, indent)
        elif k == "for":
            i = self.fresh("i")
            out.append(f"{indent}for {i} in range({self.src.integers(1, N)}):")
            self.sub_block(scope, depth, out, indent, loop_index=i)
        else:  # while
            j = self.fresh("j")
            out.append(f"{indent}{j} = 0")
            out.append(f"{indent}while {j} < {self.src.integers(1, N)}:")
            self.sub_block(scope, depth, out, indent, tail=f"{j} = {j} + 1")

    def sub_block(self, scope, depth, out, indent, loop_index=None, tail=None):
        inner = _Scope(dict(scope.vars), set(scope.owned),
                       scope.loop_index + ([loop_index] if loop_index else []))
        ind = indent + "    "
        start = len(out)
        # only rebinding and in-place updates: no new names escape the block
        self.block(inner, depth + 1, out, ind, self.src.integers(1, 2), new_vars=False)
        if tail:
            out.append(ind + tail)
        if len(out) == start:
            out.append(ind + "pass")
        # temporaries hoisted inside the block stay local to it
        for name in list(inner.vars):
            if name not in scope.vars:
                del inner.vars[name]
        # an owned array rebound inside the block is still unaliased (rhs is never a bare name)

    def program(self) -> GenProgram:
        nargs = self.src.integers(1, 3)
        kinds = tuple(self.src.choice(["s", "v"]) for _ in range(nargs))
        args = [f"x{k}" for k in range(nargs)]
        scope = _Scope({a: k for a, k in zip(args, kinds)}, set())
        out: list[str] = []
        self.block(scope, 0, out, "    ", self.src.integers(1, self.max_stmts), new_vars=True)
        # return a scalar that depends on a local and on one argument
        locals_ = [n for n in scope.vars if n not in args]
        r1 = self.src.choice(locals_) if locals_ else args[0]
        r2 = self.src.choice(args)

        def scal(n):
            return f"np.sum({n})" if scope.vars[n] == "v" else n

        ret = f"{scal(r1)} + 0.5 * {scal(r2)}"
        body = "\n".join(out)
        src = f"import numpy as np\n\n\ndef f({', '.join(args)}):\n{body}\n    return {ret}\n"
        return GenProgram(src, kinds)


def random_program(seed, **kw) -> GenProgram:
    return ProgGen(RandomSource(seed), **kw).program()


if __name__ == "__main__":  # print a few samples
    for s in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
        print(random_program(s).source)


# -- programs with pb.map / pb.vmap (issue 12) -------------------------------------------------------

class MapProgGen(ProgGen):
    """`ProgGen` whose statements may also be maps (at any depth, so maps land in
    loops and branches). A map is a local def over the elements of one or two
    vectors (and optionally the index, mapped from ``np.arange(N)``), spelt
    ``pb.map(m, ...)`` or ``pb.vmap(m, in_axes=...)(...)``; its body reads the
    enclosing names as free variables (scalars, whole vectors, one element
    ``v[i]`` at the index), may hoist temporaries, and may contain an
    ``if``/``else`` or a ``for`` loop; it returns one scalar (a new vector) or
    two (a tuple of vectors). Inside loops a map rebinds a vector to a
    contraction, as `ProgGen`'s rebinds do. `read_mapped=False` keeps the body
    from reading a mapped vector whole (a vector both mapped and free)."""

    def __init__(self, source, max_stmts=5, max_depth=2, read_mapped=True):
        super().__init__(source, max_stmts=max_stmts, max_depth=max_depth)
        self.read_mapped = read_mapped

    def stmt(self, scope, depth, out, indent, new_vars):
        if self.names(scope, "v") and self.coin(1, 4):
            return self.map_stmt(scope, depth, out, indent, new_vars)
        return super().stmt(scope, depth, out, indent, new_vars)

    def map_stmt(self, scope, depth, out, indent, new_vars):
        vecs = self.names(scope, "v")
        mapped = [self.src.choice(vecs)]
        if len(vecs) > 1 and self.coin(1, 3):
            mapped.append(self.src.choice([v for v in vecs if v != mapped[0]]))
        with_index = self.coin(1, 3)
        m = self.fresh("m")
        elems = [self.fresh("e") for _ in mapped]
        idx = self.fresh("k") if with_index else None
        params = elems + ([idx] if idx else [])
        free = {n: k for n, k in scope.vars.items() if self.read_mapped or n not in mapped}
        inner = _Scope(dict(free), set(), ([idx] if idx else []))
        for e in elems:
            inner.vars[e] = "s"
        body: list[str] = []
        ind = indent + "    "
        two = new_vars and self.coin(1, 3)
        rebind = None if new_vars else self.src.choice(vecs)
        results = [self.map_result(inner, depth, body, ind, elems) for _ in range(2 if two else 1)]
        if rebind is not None:   # a contraction of the element, like ProgGen's rebinds in loops
            results = [f"0.5 * {elems[0]} + 0.5 * np.tanh({results[0]})"]
        out.append(f"{indent}def {m}({', '.join(params)}):")
        out.extend(body)
        out.append(f"{ind}return " + ", ".join(results))
        args = list(mapped) + (["np.arange(%d)" % N] if idx else [])
        if self.coin(1, 3):
            call = f"pb.vmap({m})({', '.join(args)})"
        else:
            call = f"pb.map({m}, {', '.join(args)})"
        if rebind is not None:
            out.append(f"{indent}{rebind} = {call}")
            return
        targets = [self.fresh("t") for _ in results]
        out.append(f"{indent}{', '.join(targets)} = {call}")
        for t in targets:
            scope.vars[t] = "v"

    def map_result(self, inner, depth, body, ind, elems):
        """Statements of the lambda into `body`; returns the name or expression of one scalar result."""
        form = self.src.choice(["expr", "expr", "if", "for"])
        if form == "expr":
            return self.expr(inner, "s", self.src.integers(1, 3), body, ind)
        r = self.fresh("r")
        if form == "if":
            body.append(f"{ind}if {self.cond(inner, body, ind)}:")
            for arm in ("then", "else"):   # temporaries hoisted in one arm are not seen by the other
                if arm == "else":
                    body.append(f"{ind}else:")
                branch = _Scope(dict(inner.vars), set(), list(inner.loop_index))
                body.append(f"{ind}    {r} = {self.expr(branch, 's', 2, body, ind + '    ')}")
            return r
        j = self.fresh("j")
        body.append(f"{ind}{r} = {self.src.choice(elems)}")
        body.append(f"{ind}for {j} in range({self.src.integers(1, N)}):")
        loop = _Scope(dict(inner.vars), set(), inner.loop_index + [j])
        loop.vars[r] = "s"
        body.append(f"{ind}    {r} = 0.5 * {r} + np.tanh({self.expr(loop, 's', 2, body, ind + '    ')})")
        return r

    def program(self) -> GenProgram:
        gp = super().program()
        gp.source = gp.source.replace("import numpy as np\n", "import numpy as np\nimport pullback as pb\n", 1)
        return gp


def random_map_program(seed, **kw) -> GenProgram:
    return MapProgGen(RandomSource(seed), **kw).program()
