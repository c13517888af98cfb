"""``inproc profile check`` and placement for transformers: one process, one device, no worker nodes."""
from __future__ import annotations

from inproc.engines.base import CheckSkipped
from inproc.errors import UsageError
from inproc.types import Placement


def parallel_layout(args) -> tuple[int, str]:
    """One device: inproc builds transformers' continuous batching without tensor parallelism."""
    return (0 if args.device == "cpu" else 1), "TP 1"


def argument_checks(args, explicit: set[str]) -> str:
    """The fields the profile sets, through ContinuousBatchingConfig's own constructor."""
    args.cb_config()
    return "ContinuousBatchingConfig(...) with the profile's fields"


def engine_config_check(args, gpus: int) -> str:
    raise CheckSkipped("transformers resolves its cache when the engine is built: run the profile (inproc cell)")


def placement(args) -> Placement:
    on_gpu = args.device != "cpu"
    return Placement(1, 1, ((0,),), 1 if on_gpu else 0, "uni")


def check_head(args) -> None:
    """One node only."""


def run_worker(launch, node_rank: int, echo) -> int:
    raise UsageError("transformers' continuous batching runs on one node: there is no `inproc worker` for it.")
