"""Backends: `interp` (the reference semantics), `pysource` (readable NumPy Python)."""
