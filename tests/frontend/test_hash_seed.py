"""The staged program does not depend on Python's hash seed. A closure's captured
values were collected in the order of a set of names, which varies between
processes; they become the parameters of the staged function, so the staged
program (and, where that function stays a call, the generated module and its
cache name) differed from one process to the next (note [closures])."""
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import numpy as np
    import pullback as pb
    from pullback.ir.printer import print_prog

    def g(t, a, b, c, d, e, f):
        return t * a + b * c - d * e * f

    def outer(a, b, c, d, e, f):
        def column(x):
            return pb.jvp(lambda t: g(t, a, b, c, d, e, f), (a,), (x,))[1]
        return pb.vmap(column)(np.eye(3))

    v = [np.arange(3.0) + k for k in range(6)]
    print(print_prog(pb.jit(outer, backend="interp").staged(*v).prog))
''')


def test_captured_values_keep_their_order_across_hash_seeds(tmp_path):
    script = tmp_path / "closures.py"     # (staging reads the source: not `python -c`)
    script.write_text(SCRIPT)
    outs = set()
    for seed in ("1", "2", "3", "4", "5"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        outs.add(r.stdout)
    assert len(outs) == 1
