"""inproc: build an LLM engine inside this process and measure its speed-test matrix.

``inproc.open(path)`` reads a results file for a notebook (``inproc.record.notebook``); importing
``inproc`` imports no engine.
"""
from inproc.entry import open  # noqa: A004, F401 - the notebook's entry point

__version__ = "0.1.0"
