"""Slots stored where numba creates them, without the entry block's zero store
(`pullback.backends.numba_allocas`, note [compile-time], "Slots stored once"): the
store is left out only where the creating store dominates every use, and given back
otherwise; compiled results are numba's."""
import numpy as np
import pytest

pytest.importorskip("numba")
from llvmlite import ir  # noqa: E402
from numba.core import cgutils  # noqa: E402

from pullback.backends import numba_allocas as NA  # noqa: E402

I64 = ir.IntType(64)


@pytest.fixture
def installed():
    from numba.core.compiler_lock import global_compiler_lock

    with global_compiler_lock:
        NA.install()
        try:
            yield
        finally:
            NA.uninstall()


def _function(name="f"):
    mod = ir.Module(name="m")
    fn = ir.Function(mod, ir.FunctionType(I64, [ir.IntType(1)]), name=name)
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    return mod, fn, b


def _entry_stores(fn, ptr):
    return [i for i in fn.blocks[0].instructions if isinstance(i, ir.StoreInstr) and i.operands[1] is ptr]


def test_a_slot_created_in_a_branch_and_read_after_it_gets_its_zero_store_back(installed):
    mod, fn, b = _function()
    then, join = fn.append_basic_block("then"), fn.append_basic_block("join")
    b.cbranch(fn.args[0], then, join)
    b.position_at_end(then)
    ptr = cgutils.alloca_once_value(b, I64(7))     # created in one branch only
    b.branch(join)
    b.position_at_end(join)
    b.ret(b.load(ptr))                              # read on both paths: the other reads numba's zero
    assert _entry_stores(fn, ptr) == []
    restored = NA.STATS["restored"]
    NA._settle(mod)
    assert NA.STATS["restored"] == restored + 1
    [zero] = _entry_stores(fn, ptr)
    assert zero.operands[0].constant == I64(None).constant   # numba's zero store, right after the slot
    assert not any(r[0] is ptr for r in NA._RECORDS)


def test_a_slot_whose_creating_store_dominates_its_uses_is_not_stored_in_the_entry_block(installed):
    mod, fn, b = _function()
    body, loop, done = (fn.append_basic_block(n) for n in ("body", "loop", "done"))
    b.branch(body)
    b.position_at_end(body)
    ptr = cgutils.alloca_once(b, I64, zfill=True)   # a struct numba builds where it needs it
    b.store(I64(3), ptr)
    b.branch(loop)
    b.position_at_end(loop)
    b.store(b.add(b.load(ptr), I64(1)), ptr)        # read in a later block the creation dominates
    b.cbranch(fn.args[0], loop, done)
    b.position_at_end(done)
    b.ret(b.load(ptr))
    restored = NA.STATS["restored"]
    NA._settle(mod)
    assert NA.STATS["restored"] == restored
    assert _entry_stores(fn, ptr) == []
    assert ptr.parent is fn.blocks[0]               # the slot itself stays in the entry block


def test_a_slot_whose_address_escapes_gets_its_zero_store_back(installed):
    mod, fn, b = _function()
    ptr = cgutils.alloca_once_value(b, I64(1))
    box = cgutils.alloca_once(b, ptr.type)          # not recorded: no zfill
    b.store(ptr, box)                               # the slot's address in memory
    b.ret(b.load(ptr))
    NA._settle(mod)
    assert len(_entry_stores(fn, ptr)) == 2         # the zero store back, then the value


def test_sizes_and_slots_without_zfill_are_numbas(installed):
    mod, fn, b = _function()
    other = fn.append_basic_block("other")
    b.branch(other)
    b.position_at_end(other)
    recorded = NA.STATS["recorded"]
    arr = cgutils.alloca_once(b, I64, size=4, zfill=True)
    var = cgutils.alloca_once(b, I64)
    b.ret(b.load(var))
    assert NA.STATS["recorded"] == recorded
    assert len(_entry_stores(fn, arr)) == 1 and len(_entry_stores(fn, var)) == 1


def test_uninstalled_outside_compiles():
    assert not hasattr(cgutils.alloca_once, "__wrapped__")
    assert not hasattr(cgutils.alloca_once_value, "__wrapped__")


def test_compiled_results_are_numbas(tmp_path, monkeypatch):
    """A pullback program compiled with the rule: slots recorded, some given back (numba
    creates its try state lazily in a branch and reads it everywhere), the same results
    as numba's own slots."""
    import pullback as pb

    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path))

    def f(x, y):
        s = np.zeros(3)
        for i in range(x.shape[0]):
            s = s + np.sin(x[i]) * y
            if x[i] > 0.5:
                s = s * 0.5
        return np.max(s) + np.sum(np.exp(x))

    x, y = np.linspace(0.0, 1.0, 9), np.array([1.0, -2.0, 3.0])
    recorded = NA.STATS["recorded"]
    got = (pb.jit(f, backend="numba")(x, y), pb.grad(f, backend="numba")(x, y))
    assert NA.STATS["recorded"] > recorded
    monkeypatch.setattr(NA, "install", lambda: None)
    monkeypatch.setattr(NA, "uninstall", lambda: None)
    monkeypatch.setenv("PULLBACK_CACHE_DIR", str(tmp_path / "plain"))

    def g(x, y):   # another function: compiled again, with numba's slots
        return f(x, y)

    want = (pb.jit(g, backend="numba")(x, y), pb.grad(g, backend="numba")(x, y))
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])
