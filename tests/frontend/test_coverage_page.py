"""docs/numpy_coverage.md equals what the frontend's tables generate (issue 10):
a function that is supported but not listed, or listed but not supported, fails."""
import pathlib

from pullback.frontend.coverage import markdown

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "numpy_coverage.md"


def test_coverage_page_is_current():
    assert PAGE.read_text() == markdown(), \
        "regenerate it: python -m pullback.frontend.coverage > docs/numpy_coverage.md"


def test_page_lists_the_new_functions():
    text = PAGE.read_text()
    for name in ("np.sort", "np.median", "np.einsum", "np.tensordot", "np.linalg.norm", "np.roll"):
        assert f"`{name}`" in text
    assert "| `np.argsort` | none |" in text
