"""GradBench tool entry point for pullback: `python -m pullback.gradbench`.

`protocol` speaks the GradBench JSON-lines protocol on stdin/stdout; each
benchmark lives in `modules/<name>.py` and exposes `prepare(input) -> args`
(JSON to NumPy, done once, untimed) and `FUNCTIONS`, a dict from the GradBench
function name to a callable taking `*args`. Objectives are plain pullback-style
NumPy; every derivative comes from `pb.grad` / `pb.jvp`.
"""
