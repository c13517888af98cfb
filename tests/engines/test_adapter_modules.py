"""Each adapter's args, check, nodes and selftest modules, found by the base class in the adapter's own package."""
from __future__ import annotations

import pytest

from inproc import engines

ROLES = ("args", "check", "nodes", "selftest")


@pytest.mark.parametrize("name", engines.names())
def test_each_role_is_a_module_of_the_adapters_own_package(name):
    """Keyed by anything else (the engine's import name ``vllm``, another adapter's package, the
    registry key of a renamed adapter) a role names a module that does not exist or is not this engine's."""
    adapter = engines.get(name)
    if not adapter.installed():
        pytest.skip(f"{name} is not installed here")
    package = f"inproc.engines.{name}"
    got = {role: getattr(adapter, f"{role}_module")().__name__ for role in ROLES}
    expected = {role: f"{package}.{role}" for role in ROLES}
    if name == "transformers":  # one process, one device: its check module holds the placement
        expected["nodes"] = f"{package}.check"
    assert got == expected
