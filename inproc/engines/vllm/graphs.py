"""The device memory vLLM's CUDA-graph capture took, as its own ``capture_model()`` returns it.

vLLM measures it (free device memory before capture minus after) and only logs it ("Graph
capturing finished in N secs, took X GiB"); no object keeps it. While the engine is built,
the model runners' ``capture_model`` is wrapped at class level to keep the value the last
real capture returns (v2's ``profile_only`` captures, made to size the KV cache, are not
counted), and the class is restored afterwards.

Only a worker in this process is seen (tensor parallel 1; worker processes keep their own
copy of the class), and a CPU worker or ``--enforce-eager`` captures nothing: the value
stays None. Written against vLLM 0.32.0; not yet run on a GPU.
"""
from __future__ import annotations

import contextlib
import importlib
import time
from dataclasses import dataclass

#: Model runner classes whose ``capture_model`` returns the bytes graph capture took.
RUNNER_CLASSES = (("vllm.v1.worker.gpu_model_runner", "GPUModelRunner"),
                  ("vllm.v1.worker.gpu.model_runner", "GPUModelRunner"))


@dataclass
class CaptureMemory:
    """What the wrapped ``capture_model`` calls returned, and how long that call took (wall
    seconds, start to return of the last real capture); None while nothing was captured."""

    bytes: int | None = None
    seconds: float | None = None


def runner_classes() -> list[type]:
    """The model runner classes this vLLM has (the v2 runner may not import on every platform)."""
    found = []
    for module, name in RUNNER_CLASSES:
        try:
            found.append(getattr(importlib.import_module(module), name))
        except (ImportError, AttributeError, RuntimeError):
            continue
    return found


@contextlib.contextmanager
def capture_memory(classes: list[type] | None = None):
    """Wrap ``capture_model`` of ``classes`` (default: :func:`runner_classes`) and yield a :class:`CaptureMemory`."""
    seen = CaptureMemory()
    patched = []
    for cls in classes if classes is not None else runner_classes():
        original = cls.__dict__.get("capture_model")
        if original is None:
            continue
        cls.capture_model = _keeping(original, seen)
        patched.append((cls, original))
    try:
        yield seen
    finally:
        for cls, original in patched:
            cls.capture_model = original


def _keeping(original, seen: CaptureMemory):
    def capture_model(self, *args, **kwargs):
        t0 = time.perf_counter()
        out = original(self, *args, **kwargs)
        if not kwargs.get("profile_only") and isinstance(out, int) and not isinstance(out, bool):
            seen.bytes, seen.seconds = out, time.perf_counter() - t0
        return out

    capture_model.__wrapped__ = original
    return capture_model
