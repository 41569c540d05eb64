"""User suite (issue 10, "What I will check"): ordinary numeric functions as a new user writes them.

Each module here (other than `_cases.py` and `test_*.py`) holds plain NumPy
functions of one kind (losses, nets, statistics, ...) registered with
`_cases.case`; `test_user_suite.py` checks every one against plain Python and
central finite differences.
"""
