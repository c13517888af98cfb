"""vLLM's real engine in this process: engine-generic fixtures (driver, prompts) use the vLLM session engine here."""
from __future__ import annotations

import pytest


@pytest.fixture()
def engine(vllm_engine):
    return vllm_engine
