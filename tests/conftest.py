"""Shared fixtures. Engine tests build ONE real vLLM engine per test session (start costs seconds)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROFILES = ROOT / "launch_profiles"
DEFAULT_PROFILE = PROFILES / "cpu-vllm-tiny-llama.toml"
HAS_VLLM = importlib.util.find_spec("vllm") is not None

needs_vllm = pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed in this environment (run in .venv-vllm)")


@pytest.fixture(scope="session")
def vllm_engine():
    """The embedded default profile's engine (tiny Llama, 193 KV blocks of 32, max-num-seqs 8)."""
    if not HAS_VLLM:
        pytest.skip("vLLM is not installed in this environment")
    from inproc.engines import build_engine
    from inproc.profile import load_profile

    engine = build_engine(load_profile(DEFAULT_PROFILE))
    yield engine
    engine.shutdown()


@pytest.fixture()
def driver(vllm_engine):
    from inproc.driver import Driver

    d = Driver(vllm_engine)
    yield d
    d.drain()


@pytest.fixture()
def prompts(vllm_engine):
    from inproc.prompts import PromptFactory

    info = vllm_engine.info
    return PromptFactory(info.vocab_size, 1234, info.special_token_ids)
