"""Sparse Jacobians: `pb.jacobian(f, sparsity=...)` (note [sparse-jacobian]).

Contract: `sparse_jacobian(...)` (what `pb.jacobian` calls when `sparsity` is
given; `jacobian.py`) returns a callable giving a `scipy.sparse.csr_array`.
Modules: `detect` (the static dependency analysis of the staged IR, with the
per-primitive rules of `rules` over the sparse sets of `deps`), `colour`
(greedy distance-2 colouring), `jacobian` (the API object, the staged loop
over colours, decompression). This package imports SciPy; pullback imports it
only when a sparsity is given.
"""
from __future__ import annotations


def sparse_jacobian(*args, **kwargs):
    from .jacobian import sparse_jacobian as impl

    return impl(*args, **kwargs)


__all__ = ["sparse_jacobian"]
