# Both targets bootstrap .venv from nothing but python3 and pip.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

$(VENV)/.stamp: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

.PHONY: example test test-all venv
venv: $(VENV)/.stamp

example: $(VENV)/.stamp
	$(BIN)/python examples/quickstart.py

# Tests run in one worker process per core (pytest-xdist; at most 4: each worker compiles numba
# code of its own), PYTEST_WORKERS=1 runs them in this process, serially.
PYTEST_WORKERS ?= auto
XDIST := $(if $(filter 1,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --maxprocesses 4)

# the fast subset (what CI runs): the function-table tests on a pairwise covering of
# backend x mode x order (tests/test_numpy_table.py), the numba tests of a corpus subset
test: $(VENV)/.stamp
	$(BIN)/python -m pytest -q -m "not slow" $(XDIST) tests

# everything, slow tests included: the full cross product of the function-table tests
test-all: $(VENV)/.stamp
	$(BIN)/python -m pytest -q $(XDIST) tests

# Benchmarks against JAX and PyTorch: install them first with `$(BIN)/pip install -e '.[bench]'`
# (without them the table has pullback and hand-written NumPy only). See benchmarks/README.md.
.PHONY: bench
bench: $(VENV)/.stamp
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/run.py --sizes gradbench --clock cpu --out benchmarks/results/gradbench.md   # issue 13: GradBench sizes
	$(BIN)/python benchmarks/combinators/run.py   # issue 12: pb.map/reduce/hist/vmap, 1 -> 2 cores
	$(BIN)/python benchmarks/tiered_start.py --runs 1 --out benchmarks/results/tiered.md   # first result vs numba ready
