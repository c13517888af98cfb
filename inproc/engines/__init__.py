"""Engine adapters. Each is imported only when its engine is asked for (heavy imports)."""
from __future__ import annotations

import os

from inproc.engines.base import Engine, EngineBuildError
from inproc.profile import Profile

__all__ = ["Engine", "EngineBuildError", "build_engine"]


def build_engine(profile: Profile) -> Engine:
    """Apply the profile's environment, then build its engine in this process."""
    # Engines read many settings from the environment at import time, so this comes first.
    os.environ.update(profile.env)
    if profile.engine == "vllm":
        from inproc.engines.vllm_engine import build_vllm_engine

        return build_vllm_engine(profile)
    from inproc.engines.sglang_engine import build_sglang_engine

    return build_sglang_engine(profile)
