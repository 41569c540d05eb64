"""A tiny IR evaluator for frontend tests, used only if pullback.backends.interp is missing."""
from __future__ import annotations

import numpy as np

from pullback.ir.core import Apply, Const, ForForm, If, Loop, Prim
from pullback.ir.prims import TABLE


def run(prog, *args):
    funcs = {f.name: f for f in prog.funcs}

    def call(name, vals):
        f = funcs[name]
        return body(f.body, dict(zip(f.params, vals)))

    def atom(a, env):
        return a.value if isinstance(a, Const) else env[a]

    def body(b, env):
        for st in b.stmts:
            vals = exp(st.exp, env)
            for v, x in zip(st.pat, vals):
                env[v] = x
        return [atom(a, env) for a in b.result]

    def exp(e, env):
        if isinstance(e, Prim):
            row = TABLE.get(e.op)
            r = row.impl(*[atom(a, env) for a in e.args], **dict(e.params))
            return tuple(r) if row.multi else (r,)
        if isinstance(e, If):
            return body(e.then if atom(e.cond, env) else e.else_, dict(env))
        if isinstance(e, Apply):
            return call(e.func, [atom(a, env) for a in e.args])
        if isinstance(e, Loop):
            vals = [atom(a, env) for a in e.init]
            if isinstance(e.form, ForForm):
                for i in range(int(atom(e.form.bound, env))):
                    env2 = dict(env)
                    env2.update(zip(e.params, vals))
                    env2[e.form.index] = np.int64(i)
                    vals = body(e.body, env2)
            else:
                k = e.params.index(e.form.cond)
                while vals[k]:
                    env2 = dict(env)
                    env2.update(zip(e.params, vals))
                    vals = body(e.body, env2)
            return tuple(vals)
        raise TypeError(e)

    return call(prog.entry, list(args))
