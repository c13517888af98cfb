"""SGLang across nodes: the placement of its TP ranks, and ``inproc worker`` for node ranks 1..N-1.

``sglang serve --nnodes N --node-rank R --dist-init-addr HOST:PORT`` on node R ≥ 1 runs
no tokenizer: its launcher (``Engine._launch_subprocesses``) spawns the node's scheduler
ranks (``_calculate_rank_ranges``: ``tp-size / nnodes`` ranks each), waits until they
are ready, and blocks until they exit, which they do on rank 0's broadcast
``ShutdownReq``. Rank 0 is stepped in inproc's process on the head (``launch.py``), and
the worker below runs SGLang's own launcher with the same arguments, resolved by the same
adapter (``adapter_server_args``). It asks the launcher not to block
(``SGLANG_BLOCK_NONZERO_RANK_CHILDREN=0``, SGLang's switch for the Python API) and waits
itself, so that a head that dies without a ShutdownReq also ends the node.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal

from inproc.engines import nodes
from inproc.engines.base import EngineBuildError
from inproc.types import LaunchSpec, Placement, contiguous_placement

PROFILE_HINT = 'nnodes = 2, dist-init-addr = "10.0.0.1:5000"'
RANK_EXIT_TIMEOUT_S = 30.0


def _on_gpu(device: str | None) -> bool:
    if device:
        return device != "cpu"
    import torch  # the device is resolved at build; before it, SGLang picks CUDA where there is one

    return bool(torch.cuda.is_available())


def placement(sa, device: str | None = None) -> Placement:
    """TP ranks over ``nnodes`` nodes, as SGLang's launcher places them (pp 1, dp 1: the adapter's topology).

    ``device``: the resolved device (the built scheduler's), else the arguments' own.
    """
    nnodes = int(sa.nnodes or 1)
    rendezvous = str(sa.dist_init_addr or "") if nnodes > 1 else ""
    return contiguous_placement(int(sa.tp_size), nnodes, _on_gpu(device or sa.device), "mp", rendezvous)


def check_head(sa) -> None:
    """The head is node rank 0 (``inproc worker`` runs the others)."""
    if int(sa.nnodes or 1) > 1:
        nodes.check_head_rank(int(sa.node_rank or 0), int(sa.nnodes))


def _worker_args(launch: LaunchSpec, node_rank: int):
    from inproc.engines.sglang.launch import _check_topology, adapter_server_args

    sa = adapter_server_args(launch.model, {**launch.engine_args, "node-rank": node_rank})
    nodes.check_worker_rank(node_rank, int(sa.nnodes or 1), PROFILE_HINT)
    if not sa.dist_init_addr:
        from inproc.errors import UsageError

        raise UsageError(f"The profile sets nnodes = {sa.nnodes} but no dist-init-addr: every node joins rank 0 "
                         "there. Set it in the profile, e.g. dist-init-addr = \"10.0.0.1:5000\".")
    nodes.split_address(str(sa.dist_init_addr), "dist-init-addr")
    _check_topology(sa)
    return sa


def _launch_ranks(sa) -> tuple[list, object]:
    """SGLang's own launcher for this node: its scheduler processes, and the PortArgs it made."""
    from sglang.srt.entrypoints.engine import Engine, init_tokenizer_manager
    from sglang.srt.managers.detokenizer_manager import run_detokenizer_process
    from sglang.srt.managers.scheduler import run_scheduler_process

    os.environ["SGLANG_BLOCK_NONZERO_RANK_CHILDREN"] = "0"  # return once the ranks are ready; we wait below
    before = set(mp.active_children())
    try:
        launched = Engine._launch_subprocesses(
            server_args=sa, init_tokenizer_manager_func=init_tokenizer_manager,
            run_scheduler_process_func=run_scheduler_process, run_detokenizer_process_func=run_detokenizer_process)
    except (ValueError, RuntimeError, OSError) as e:
        from inproc.engines.flags import one_line

        raise EngineBuildError(f"SGLang could not start node {sa.node_rank}'s ranks: {one_line(str(e))}") from e
    return [p for p in mp.active_children() if p not in before], launched[2]


def _stop(procs: list) -> None:
    """Ranks still running (the head died without a ShutdownReq) are terminated, then killed."""
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(RANK_EXIT_TIMEOUT_S)
        if proc.is_alive():
            proc.kill()
            proc.join(RANK_EXIT_TIMEOUT_S)


def run_worker(launch: LaunchSpec, node_rank: int, echo: nodes.Echo) -> int:
    """Start this node's TP ranks with SGLang's launcher; return once rank 0 has shut them down or is gone."""
    from inproc.engines.sglang.launch import _remove_files

    sa = _worker_args(launch, node_rank)
    where = placement(sa)
    host, port = nodes.split_address(str(sa.dist_init_addr), "dist-init-addr")
    echo(f"node {node_rank} of {sa.nnodes}: starting SGLang TP ranks {list(where.node_ranks(node_rank))} of "
         f"{where.world_size}; they join rank 0 at {host}:{port}")
    procs, port_args = [], None
    try:
        with nodes.exit_on_signals():
            # Returns once the ranks are ready, which needs rank 0: they join its process groups.
            procs, port_args = _launch_ranks(sa)
        # A rank that fails SIGQUITs us (SGLang's launcher would kill this tree): its exit ends the wait.
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)
        echo(f"node {node_rank}: ranks running; waiting for rank 0 to finish")
        with nodes.stop_on_signals() as stop:
            end = nodes.wait_for_head(procs, host, port, stop)
    finally:
        _stop(procs)
        if port_args is not None:
            _remove_files(port_args)
    echo(f"node {node_rank}: {end.reason}; its ranks are stopped")
    return end.exit_code
