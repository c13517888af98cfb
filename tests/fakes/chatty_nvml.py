"""FAKE NVML binding that talks: the H200 stand-in (``tests.fakes.h200_nvml``) whose import writes a line to
stdout, as a binding or a driver library may. In the sampler process that stdout is the pipe its answers go
back on; the line is left in Python's buffer (a pipe's stdout is block-buffered), so it leaves in the same
write as the ready line: two lines that arrive together, the first no answer."""

from __future__ import annotations

import sys

from tests.fakes.h200_nvml import *  # noqa: F401,F403  (the whole binding, as h200_nvml gives it)

BANNER = "NVML stand-in: loaded (a library's line, not an answer)"
sys.stdout.write(BANNER + "\n")  # not flushed: it leaves with the sampler's ready line
