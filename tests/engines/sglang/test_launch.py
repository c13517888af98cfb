"""The adapter's own requirements on SGLang's arguments, read by SGLang's parser (no engine built)."""
from __future__ import annotations

import pytest

from inproc.errors import UsageError
from tests.engines.sglang.conftest import PROFILE, needs_sglang

pytestmark = needs_sglang

MODEL = str(PROFILE.parent / "models" / "tiny-llama")


def test_forced_and_default_arguments_reach_server_args():
    from inproc.engines.sglang.launch import adapter_server_args

    args = adapter_server_args(MODEL, {"device": "cpu", "max-total-tokens": 1000})
    assert (args.skip_tokenizer_init, args.stream_interval) == (True, 1)
    assert args.disable_overlap_schedule is False  # SGLang's default loop, as under sglang serve
    assert args.watchdog_timeout == 7 * 24 * 3600.0 and args.log_level == "error"
    assert args.max_total_tokens == 1000


def test_profile_may_set_the_defaults_but_not_the_requirements():
    from inproc.engines.sglang.launch import adapter_server_args

    args = adapter_server_args(MODEL, {"log-level": "info", "watchdog-timeout": 60})
    assert args.log_level == "info" and args.watchdog_timeout == 60
    with pytest.raises(UsageError, match="stream-interval=4 cannot be used in-process"):
        adapter_server_args(MODEL, {"stream-interval": 4})
    with pytest.raises(UsageError, match="skip-tokenizer-init=False cannot be used in-process"):
        adapter_server_args(MODEL, {"skip_tokenizer_init": False})
    assert adapter_server_args(MODEL, {"disable-overlap-schedule": True}).disable_overlap_schedule is True


@pytest.mark.parametrize("extra", [{"pp-size": 2}, {"dp-size": 2}])
def test_only_tensor_parallel_topologies_are_stepped(extra):
    from inproc.engines.sglang.launch import Topology, _check_topology, adapter_server_args

    assert _check_topology(adapter_server_args(MODEL, {"tp-size": 2})) == Topology(2, 1, 0)
    with pytest.raises(UsageError, match="adapter steps tensor parallelism only"):
        _check_topology(adapter_server_args(MODEL, extra))


def test_tensor_parallel_over_nodes_splits_the_ranks_evenly():
    from inproc.engines.sglang.launch import _check_topology, adapter_server_args

    args = {"tp-size": 4, "nnodes": 2, "node-rank": 1, "dist-init-addr": "127.0.0.1:5000"}
    topology = _check_topology(adapter_server_args(MODEL, args))
    assert (topology.per_node, list(topology.local_ranks)) == (2, [2, 3])
    with pytest.raises(UsageError, match="tp-size 3 is not divisible by nnodes 2"):
        _check_topology(adapter_server_args(MODEL, {**args, "tp-size": 3}))
