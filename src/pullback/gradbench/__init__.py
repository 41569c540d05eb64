"""GradBench tool entry point for pullback: `python -m pullback.gradbench`.

`protocol` speaks the GradBench JSON-lines protocol on stdin/stdout (`wire`
reads bounded lines and writes strict JSON). Each benchmark lives in
`modules/<name>.py` and exposes `SCHEMA` (a `schema.Schema`: the input's
fields, types, signs and consistent sizes), `prepare(input, limits=None) -> args`
(the input checked against SCHEMA and converted to the functions' arguments,
done once, untimed; raises `schema.InputError`) and
`FUNCTIONS`, a dict from the GradBench function name to a callable taking
`*args`. Objectives are plain pullback-style NumPy; every derivative comes from
`pb.grad` / `pb.jvp`. See Note [gradbench-hardening] in docs/design.md.
"""
from .protocol import main

if __name__ == "__main__":
    main()
