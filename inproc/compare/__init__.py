"""Comparing runs: samples inside a cell, the tests, the verdicts, comparability.

Pure: plain Python and numpy, no engine. ``compare_runs`` (``verdicts.py``) is a function of
two sets of typed run records; the CLI only loads, calls it and renders the result.
"""
