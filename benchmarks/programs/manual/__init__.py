"""Hand-written compiled baselines: one module per benchmark program, each with a primal and a
hand-derived derivative written as plain Numba loops (``@numba.njit(cache=False, fastmath=False)``,
no pullback, no NumPy whole-array calls in the hot loops).

They stand in for GradBench's "manual" C++ tool: the same objective as the program, with the
derivative derived on paper. A program module's ``tool_numba(inp)`` imports its module here (so
that numba is imported only after the runner has pinned threads) and returns
``(primal, derivative, args)`` like the other tools; the runner checks them against pullback.
"""
