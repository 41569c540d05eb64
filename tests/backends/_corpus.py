"""A program of the test corpus (tests/programs/) by the corpus' own loader
(`tests/programs/_load.py`), for the backend tests that look at one program's code."""
import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location(
    "_corpus_load", pathlib.Path(__file__).resolve().parent.parent / "programs" / "_load.py")
_load = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_load)


def program(name: str):
    """The function `f` of tests/programs/<name>.py."""
    return _load.load(name).f
