"""inproc: build an LLM engine inside this process and measure its speed-test matrix."""

__version__ = "0.1.0"
