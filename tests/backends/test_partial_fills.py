"""`numba_fill.partial_fills` (note [into-zeros]): an array made by `full` and
read only by one update that sets a static box of it is allocated empty and
filled outside the box. Values equal the interpreter's; the other cases keep
their whole fill."""
import numpy as np
import pytest

pytest.importorskip("numba")

from pullback.backends import interp
from pullback.backends import numba_backend as nb
from pullback.ir.parser import parse_prog

PROG = """
entry def f(v: f64[{vshape}], i: i64) -> ({rets}) {{
  let z: f64[{shape}] = full(7.0:f64) {{shape=({shape},)}}
  let u: f64[{shape}] = index_update(z, v{idx}) {{mode='set', spec={spec}}}
  {more}
  return ({result})
}}
"""


def program(shape, vshape, spec, idx="", more="", result="u", rets=None):
    dims = ", ".join(map(str, shape))
    return parse_prog(PROG.format(shape=dims, vshape=", ".join(map(str, vshape)), spec=spec, idx=idx, more=more,
                                  result=result, rets=rets or f"f64[{dims}]"))


CASES = {   # name -> (program, filled outside the box only)
    "middle of a vector": (program((600,), (400,), "(('s', 100, 500, 1),)"), True),
    "all but the last": (program((600,), (599,), "(('s', 0, 599, 1),)"), True),
    "reversed slice": (program((600,), (401,), "(('s', 500, 99, -1),)"), True),
    "box of a matrix": (program((40, 30), (30, 25), "(('s', 5, 35, 1), ('s', 3, 28, 1))"), True),
    "row of a stack": (program((2, 20, 30), (20, 30), "(('d',),)", idx=", 1:i64"), True),
    "inner box of a stack": (program((3, 20, 30), (2, 20, 25), "(('s', 1, 3, 1), ('s', 0, 20, 1), ('s', 5, 30, 1))"),
                             True),
    "whole array": (program((300,), (300,), "()"), True),
    "every other element": (program((600,), (300,), "(('s', 0, 600, 2),)"), False),
    "small": (program((20,), (15,), "(('s', 0, 15, 1),)"), False),
    "under half": (program((600,), (280,), "(('s', 0, 280, 1),)"), False),
    "variable row": (program((2, 20, 30), (20, 30), "(('d',),)", idx=", i"), False),
    "read again": (program((600,), (400,), "(('s', 100, 500, 1),)", more="let w: f64[600] = mul(z, 2.0:f64)",
                           result="u, w", rets="f64[600], f64[600]"), False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_filled_outside_the_box(name):
    prog, partial = CASES[name]
    fn = nb.compile_prog(prog, parallel=False)
    assert ("_pb_full(" not in fn.source) == partial, fn.source
    vshape = prog.funcs[0].params[0].type.shape
    rng = np.random.default_rng(8)
    for _ in range(3):   # fresh arrays reuse memory that earlier calls wrote
        args = (rng.standard_normal(vshape), 1)
        got, want = fn(*args), interp.run(prog, *args)
        for g, w in zip(got if isinstance(got, (list, tuple)) else [got], want):
            np.testing.assert_array_equal(g, w)
