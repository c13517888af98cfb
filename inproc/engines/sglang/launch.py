"""Build SGLang's scheduler with rank 0 in this thread, and tear every trace of it down.

``sglang serve`` starts one scheduler process per TP rank and feeds rank 0 from a
TokenizerManager over ZMQ. Here rank 0's ``Scheduler`` is constructed in the calling
thread (so its forward runs here), and ranks 1..N-1 are spawned exactly as SGLang
spawns them (``run_scheduler_process``): they loop on rank 0's per-iteration broadcast,
which is how they stay in step with a scheduler that the driver advances by hand.
"""
from __future__ import annotations

import gc
import os
import signal
import threading
from dataclasses import dataclass, field

from inproc.engines.base import EngineBuildError
from inproc.engines.nodes import check_head_rank
from inproc.errors import UsageError

PEER_READY_TIMEOUT_S = 600.0
PEER_EXIT_TIMEOUT_S = 30.0

# What stepping one iteration at a time in this process requires of SGLang: token-id
# prompts and no tokenizer; outputs streamed every step, so that a delta belongs to the
# batch that produced it. A profile that asks otherwise is refused, not overridden. The
# event loop is SGLang's choice, as under sglang serve (loop.py steps either).
FORCED_ARGS: dict[str, object] = {
    "skip-tokenizer-init": True,
    "stream-interval": 1,
}
# The watchdog runs in the scheduler's process and SIGQUITs that process's *parent*,
# which here is the shell or test runner that started the tool. The driver may pause
# between steps, so the default 300 s is no sign of a hung forward; a week keeps the
# watchdog for real hangs only. Without a level, SGLang logs every model module it
# skips at import. A profile may set either.
DEFAULT_ARGS: dict[str, object] = {"watchdog-timeout": 7 * 24 * 3600.0, "log-level": "error"}


class RankFailed(RuntimeError):
    """A spawned SGLang TP rank died; rank 0 cannot go on."""


@dataclass
class Launched:
    """The in-process rank-0 scheduler and what must be released with it."""

    scheduler: object
    port_args: object
    peers: list = field(default_factory=list)  # multiprocessing.Process, this node's ranks after 0
    tp_size: int = 1  # TP ranks over every node: those past this node's listen for rank 0's broadcast too
    previous_sigquit: object = None
    started_resource_tracker: bool = False  # spawning peers started multiprocessing's tracker


@dataclass(frozen=True)
class Topology:
    """TP ranks in all, and this node's share: node ``n`` runs ranks ``n × per_node … (n + 1) × per_node - 1``."""

    tp_size: int
    nnodes: int
    node_rank: int

    @property
    def per_node(self) -> int:
        return self.tp_size // self.nnodes

    @property
    def local_ranks(self) -> range:
        """This node's TP ranks, as SGLang's ``_calculate_rank_ranges`` gives them (pp 1)."""
        return range(self.per_node * self.node_rank, self.per_node * (self.node_rank + 1))


def _check_topology(server_args) -> Topology:
    """Only TP is stepped in-process, over one node or several; PP and DP need SGLang's own controllers."""
    from sglang.srt.arg_groups.overrides import resolving_view
    from sglang.srt.runtime_context import num_dp_ranks_of

    cfg = resolving_view(server_args)
    if cfg.pp_size > 1 or num_dp_ranks_of(cfg) > 1:
        raise UsageError(
            f"Unsupported SGLang topology pp-size={cfg.pp_size}, dp-size={num_dp_ranks_of(cfg)}: the in-process "
            "adapter steps tensor parallelism only (tp-size, over nnodes nodes). Remove pp-size/dp-size from the profile."
        )
    topology = Topology(int(cfg.tp_size), int(cfg.nnodes), int(cfg.node_rank))
    if topology.tp_size % topology.nnodes:
        raise UsageError(f"SGLang splits tp-size evenly over the nodes: tp-size {topology.tp_size} is not divisible "
                         f"by nnodes {topology.nnodes}.")
    return topology


def adapter_server_args(model: str, engine_args: dict[str, object]):
    """The profile's ``ServerArgs`` with the adapter's defaults and requirements applied."""
    from inproc.engines.sglang.args import parse_profile

    args = {k.replace("_", "-"): v for k, v in engine_args.items()}
    for name, needed in FORCED_ARGS.items():
        if args.get(name, needed) != needed:
            raise UsageError(
                f"Engine argument {name}={args[name]!r} cannot be used in-process: the sglang adapter "
                f"needs {name}={needed!r}. Remove it from the profile."
            )
    return parse_profile(model, {**DEFAULT_ARGS, **args, **FORCED_ARGS})


def _on_rank_sigquit(signum, frame) -> None:
    # run_scheduler_process SIGQUITs its parent (us) when a rank raises; SGLang's own
    # handler would kill this whole process tree, the tool included.
    raise RankFailed("An SGLang TP rank process failed (it sent SIGQUIT); its traceback is in the log above.")


def _spawn_peers(server_args, port_args, ranks: range, per_node: int) -> tuple[list, list]:
    """This node's ranks ``ranks``, each on its device as SGLang's launcher places it."""
    import multiprocessing as mp

    from sglang.srt.managers.scheduler import run_scheduler_process
    from sglang.srt.runtime_context import get_device

    # SGLang forces the spawn start method; a context keeps the caller's default intact.
    ctx = mp.get_context("spawn")
    base, step = get_device().base_gpu_id, get_device().gpu_id_step
    procs, readers = [], []
    for tp_rank in ranks:
        reader, writer = ctx.Pipe(duplex=False)
        args = (server_args, port_args, base + (tp_rank % per_node) * step, tp_rank, 0, None, writer)
        proc = ctx.Process(target=run_scheduler_process, args=args, daemon=False)
        proc.start()
        writer.close()
        procs.append(proc)
        readers.append(reader)
    return procs, readers


def _wait_ready(readers: list, procs: list) -> None:
    for rank, (reader, proc) in enumerate(zip(readers, procs), start=1):
        if not reader.poll(PEER_READY_TIMEOUT_S):
            raise EngineBuildError(f"SGLang TP rank {rank} did not report ready within {PEER_READY_TIMEOUT_S:.0f} s.")
        try:
            info = reader.recv()
        except EOFError:
            raise EngineBuildError(f"SGLang TP rank {rank} died while loading (exit code {proc.exitcode}).") from None
        if info.get("status") != "ready":
            raise EngineBuildError(f"SGLang TP rank {rank} failed to initialise: {info}.")


def launch(server_args) -> Launched:
    """Resolve the arguments as SGLang's launcher does and build rank 0 here (+ peers)."""
    from sglang.srt.arg_groups.overrides import resolving_view
    from sglang.srt.managers.scheduler import Scheduler
    from sglang.srt.runtime_context import SpawnRanks, publish, spawn_world_rank
    from sglang.srt.server_args import PortArgs

    server_args.resolve_once()
    server_args.check_server_args()
    topology = _check_topology(server_args)
    if topology.nnodes > 1:
        check_head_rank(topology.node_rank, topology.nnodes)
    # Rank 0 is here; this node's other ranks are spawned (the other nodes start theirs: inproc worker).
    peers = topology.local_ranks[1:]
    port_args = PortArgs.init_new(server_args)
    launched = Launched(scheduler=None, port_args=port_args, tp_size=topology.tp_size)
    try:
        world_rank = spawn_world_rank(server_args, tp_rank=0, pp_rank=0)
        # Rank 0's device is the first of the launcher's range, as in sglang serve.
        gpu_id = resolving_view(server_args).base_gpu_id
        publish(server_args, role="scheduler", ranks=SpawnRanks(world_rank=world_rank, gpu_id=gpu_id))
        if peers and threading.current_thread() is threading.main_thread():
            launched.previous_sigquit = signal.signal(signal.SIGQUIT, _on_rank_sigquit)
        if peers:
            from multiprocessing import resource_tracker

            launched.started_resource_tracker = resource_tracker._resource_tracker._pid is None
        launched.peers, readers = _spawn_peers(server_args, port_args, peers, topology.per_node)
        # Collective: blocks until every peer, on every node, joins the process groups.
        launched.scheduler = Scheduler(server_args, port_args)
        _wait_ready(readers, launched.peers)
    except BaseException:
        release(launched)
        raise
    return launched


def _close_sockets(scheduler) -> None:
    channels = getattr(scheduler, "ipc_channels", None)
    if channels is None:
        return
    socks = [channels.recv_from_tokenizer, channels.recv_from_rpc, channels.send_metrics_from_scheduler]
    socks += [getattr(channels.send_to_tokenizer, "socket", None), getattr(channels.send_to_detokenizer, "socket", None)]
    contexts = set()
    for sock in socks:
        if sock is not None and hasattr(sock, "close"):
            contexts.add(sock.context)
            sock.close(linger=0)
    for ctx in contexts:
        ctx.term()


def _remove_files(port_args) -> None:
    """PortArgs leaves a placeholder file per IPC name, and the load snapshot a /dev/shm file."""
    from sglang.srt.managers.load_snapshot import shm_path_for

    names = [port_args.tokenizer_ipc_name, port_args.scheduler_input_ipc_name, port_args.detokenizer_ipc_name,
             port_args.rpc_ipc_name, port_args.metrics_ipc_name, port_args.tokenizer_worker_ipc_name]
    paths = [n.removeprefix("ipc://") for n in names if n and n.startswith("ipc://")]
    if port_args.instance_id:
        paths.append(shm_path_for(port_args.instance_id))
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _stop_peers(peers: list) -> None:
    for proc in peers:
        proc.join(PEER_EXIT_TIMEOUT_S)
        if proc.is_alive():
            proc.kill()
            proc.join(PEER_EXIT_TIMEOUT_S)


def _release_scheduler(scheduler) -> None:
    # What run_scheduler_process's finally does on a graceful exit, minus the process exit.
    scheduler.cur_batch_for_debug = None  # keeps the watchdog thread idle for good
    scheduler.metrics_reporter._shutdown_fpm()
    if scheduler.async_d2h_worker is not None:
        scheduler.async_d2h_worker.shutdown()
        scheduler.async_d2h_worker = None
    scheduler.release_host_resources()
    writer = scheduler.load_snapshot_writer
    if writer is not None and hasattr(writer, "close"):
        writer.close()
    _close_sockets(scheduler)


def release(launched: Launched) -> None:
    """Stop peers, free rank 0, and remove its files; safe on a half-built launch."""
    from sglang.srt.distributed.parallel_state import cleanup_dist_env_and_memory

    if launched.previous_sigquit is not None:
        # Peers being stopped may still SIGQUIT us; that must not cut the clean-up short.
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    try:
        try:
            if launched.scheduler is not None:
                _release_scheduler(launched.scheduler)
        finally:
            _stop_peers(launched.peers)
        # Lets a later engine in this process build its process groups again.
        cleanup_dist_env_and_memory()
    finally:
        _remove_files(launched.port_args)
        if launched.previous_sigquit is not None:
            signal.signal(signal.SIGQUIT, launched.previous_sigquit)
        launched.scheduler, launched.peers = None, []
        gc.collect()  # frees the broadcast queue's shared memory while its tracker runs
        if launched.started_resource_tracker:
            from multiprocessing import resource_tracker

            # The spawn start method started this helper for our peers; it would
            # otherwise outlive the engine as a child process until we exit.
            resource_tracker._resource_tracker._stop()
