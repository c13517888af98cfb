"""What an engine is to the rest of inproc: the stepped :class:`Engine` and its :class:`EngineAdapter`.

Each engine is one subpackage of ``inproc.engines`` whose ``__init__`` defines
``ADAPTER``, an :class:`EngineAdapter`: how to recognise its launch command, read its
arguments with its own parser, check a profile against it, and build it in this
process. The registry (``inproc.engines``) finds the subpackages; nothing outside
``inproc/engines/`` knows an engine by name. Plain Python here: adapters import their
engine lazily, inside their methods.
"""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Callable, Mapping, Protocol, Sequence

from inproc.engines.pieces import EngineBuildError, Guarded
from inproc.types import EngineCounters, EngineInfo, LaunchSpec, Placement, RequestSpec, StepResult


class Engine(Protocol):
    """An engine built in the calling process and stepped by the tool."""

    info: EngineInfo

    def add_request(self, spec: RequestSpec) -> None:
        """Queue a request; it is scheduled by a later :meth:`step`."""

    def step(self) -> StepResult:
        """Run exactly one engine iteration (schedule + forward + outputs)."""

    def abort(self, request_ids: Sequence[str]) -> None:
        """Drop requests wherever they are (waiting or running)."""

    def has_unfinished(self) -> bool:
        """True while any request is waiting or running."""

    def set_anatomy(self, on: bool) -> bool:
        """Switch on (or off again) the per-step accounting only the step anatomy reads, so that
        it runs in the anatomy's own pass and not in the headline window; False when this
        engine has no such accounting to switch (built with ``--anatomy off``, or an anatomy
        fixed at build)."""

    def reset_prefix_cache(self) -> bool:
        """Empty the prefix cache; returns False if the engine refused (requests in flight)."""

    def counters(self) -> EngineCounters:
        """Cumulative engine statistics since build, as the engine counts them (see
        :class:`~inproc.types.EngineCounters`). The driver takes differences over a window."""

    def start_profile(self, kind: str, directory: str, with_stack: bool, name: str) -> None:
        """Start the engine's own profiler on every rank: ``torch`` (a trace per rank into
        ``directory``, ``name`` in its file name) or ``cuda`` (cudaProfilerStart, for nsys/ncu)."""

    def stop_profile(self) -> tuple[str, ...]:
        """Stop it; the files it wrote."""

    def kernel_profiler(self, trace_dir: str, name: str):
        """A :class:`~inproc.engines.torchprof.KernelProfiler` for the kernel pass, on the device the
        model runs on; :class:`KernelsUnavailable` (its reason) where it cannot see the engine's forward."""

    def shutdown(self) -> None:
        """Release the engine (worker processes, shared memory, temp files)."""


class KernelsUnavailable(Exception):
    """The kernel pass cannot run on this engine as built; the message says why (recorded in the cell)."""


def files_under(directory: str) -> set[str]:
    """Every file under ``directory`` (profilers may write into subfolders); empty for ""."""
    return {os.path.join(root, f) for root, _, files in os.walk(directory) for f in files} if directory else set()


def version_note(adapter: "EngineAdapter", version: str) -> str:
    """"" for a measured version, else the one line to print and record."""
    if version in adapter.tested_versions:
        return ""
    return (f"{adapter.label} {version} is installed; inproc's {adapter.name} adapter is tested against "
            f"{adapter.tested_range()} (it reaches into engine internals: check its figures, or run `inproc selftest`)")


class CheckSkipped(Exception):
    """A profile check that cannot run in this environment; the message says what it needs."""


class EngineAdapter:
    """One engine, as the rest of inproc uses it. A subclass sets the class attributes and
    implements :meth:`build`; its ``args``, ``check``, ``nodes`` and ``selftest`` modules sit in its own
    package (:meth:`engine_module`).

    The argument methods take the engine's own argument object (``EngineArgs``,
    ``ServerArgs``, ...) as ``args``: whatever :meth:`parse` returns.
    """

    name: str = ""  # registry key, the profile's ``engine = ...``
    label: str = ""  # how people write it: "vLLM"
    package: str = ""  # the import name of the engine itself
    # Distribution names its version may be recorded under (CPU builds are often renamed).
    distributions: tuple[str, ...] = ()
    # Launch command forms this engine's importer reads: each a tuple of leading words
    # (``("vllm", "serve")``) or ``("-m", MODULE)`` / ``("-m", MODULE, "serve")`` after python.
    launchers: tuple[tuple[str, ...], ...] = ()
    command_example: str = ""  # the usual launch command, for messages: "vllm serve MODEL …"
    # Engine arguments that set the model's maximum length, in the order they are read.
    max_len_args: tuple[str, ...] = ()
    # The engine versions the adapter was measured on, oldest first: the range the extras declare.
    tested_versions: tuple[str, ...] = ()
    # The --set keys that set the token counts CUDA graphs are captured for: (the list, its largest
    # size); empty where the engine's graphs are not sized in tokens (inproc graphs, sweep --graph-sizes).
    graph_size_args: tuple[str, ...] = ()

    tokenizer_args: tuple[str, ...] = ()  # arguments naming the tokenizer (--prompts tokenizes with it)
    # Arguments that switch speculation on, by name or prefix ("speculative-"): a sweep's variant without it drops them.
    speculation_args: tuple[str, ...] = ()

    def tokenizer_source(self, model: str, engine_args: Mapping[str, object]) -> str:
        """Where the model's own tokenizer is: its tokenizer argument, else the model."""
        return next((str(engine_args[a]) for a in self.tokenizer_args if engine_args.get(a)), model)

    def speculation_keys(self, engine_args: Mapping[str, object]) -> tuple[str, ...]:
        """The profile's engine arguments that switch speculation on (none: it does not speculate)."""
        return tuple(k for k in engine_args if engine_args[k] not in (None, False, "", {})
                     and any(k == a or (a.endswith("-") and k.startswith(a)) for a in self.speculation_args))

    def graph_size_sets(self, sizes: tuple[int, ...]) -> tuple[str, ...]:
        """The ``--set KEY=VALUE`` overrides that capture graphs for ``sizes`` (none without ``graph_size_args``)."""
        if not self.graph_size_args or not sizes:
            return ()
        listed, largest = self.graph_size_args
        return (f"{listed}=[{','.join(map(str, sizes))}]", f"{largest}={sizes[-1]}")

    def tested_range(self) -> str:
        """The measured versions as a range: "0.30.0–0.32.0" (one version alone when that is all)."""
        first, last = self.tested_versions[0], self.tested_versions[-1]
        return first if first == last else f"{first}–{last}"

    # -- presence -----------------------------------------------------------------
    def installed(self) -> bool:
        """True when the engine's real package is importable here.

        A bare folder named like the engine on ``sys.path`` (a namespace package, no
        origin: e.g. a test folder under pytest) does not count.
        """
        spec = importlib.util.find_spec(self.package)
        return spec is not None and spec.origin is not None

    # Each engine keeps its argument, check, node and selftest functions in modules of the same
    # names under its adapter's package (inproc.engines.NAME.args, ...), with the same function
    # names. They import the engine itself, so they are imported on first use, never with the adapter.
    # A role whose functions live in another of the package's modules is mapped here.
    module_of_role: dict[str, str] = {}

    def engine_module(self, role: str):
        """The adapter package's module for ``role`` (args, check, nodes, selftest), imported on first use."""
        return importlib.import_module(f"{type(self).__module__}.{self.module_of_role.get(role, role)}")

    def args_module(self):
        """The engine's ``args`` module: its own parser behind the functions below."""
        return self.engine_module("args")

    def check_module(self):
        """The engine's ``check`` module: its validators behind the checks below."""
        return self.engine_module("check")

    # Environment that quiets the engine's own logging. Set (unless the user set it) before the
    # adapter first touches engine code: engines configure their loggers when imported.
    quiet_env: dict[str, str] = {}
    #: Where ``counters().generation_tokens`` comes from: "" when the engine keeps the count on its own path (the
    #: token check compares inproc's count with it); else what the count is (the check then compares none).
    token_count_note: str = ""

    def quiet(self) -> None:
        """Apply :attr:`quiet_env` where the user has not set those variables."""
        for name, value in self.quiet_env.items():
            os.environ.setdefault(name, value)

    def guarded(self, which: str):
        """The ``args``, ``check`` or ``nodes`` module, its failed engine imports turned into one line
        (the engine quieted first: this is where the adapter first reaches engine code)."""
        self.quiet()
        return Guarded(getattr(self, f"{which}_module")(), self)

    def version(self) -> str:
        return self.guarded("args").version()

    # -- arguments ------------------------------------------------------------------
    def argv(self, model: str, engine_args: dict[str, object]) -> list[str]:
        """The profile as the engine's own command-line flags."""
        return self.guarded("args").profile_args_to_argv(model, engine_args)

    def parse(self, model: str, engine_args: dict[str, object]):
        """The engine's argument object (``EngineArgs``, ``ServerArgs``), built by its own parser."""
        return self.guarded("args").parse_profile(model, engine_args)

    def explicit_fields(self, model: str, engine_args: dict[str, object]) -> set[str]:
        """Field names of the argument object that the profile sets itself."""
        return self.guarded("args").explicit_fields(model, engine_args)

    def check_argument_names(self, names: Sequence[str]) -> None:
        """Each name must be one of the engine's own flags (``max-num-seqs``); else a one-line
        :class:`UsageError` naming the closest ones. Reads the parser only: nothing is built."""
        from inproc.engines import flags

        known = flags.option_names(self.guarded("args").make_parser())
        for name in names:
            if name.replace("_", "-") not in known:
                raise flags.unknown_name_error(name, known, self.label, self.guarded("args").HELP_HINT)

    def settings(self, args) -> dict[str, object]:
        """Every field of the argument object, by name."""
        return self.guarded("args").settings(args)

    def import_command(self, argv: list[str]):
        """Read the words after the launcher with the engine's parser (a ``commands.CommandRead``)."""
        return self.guarded("args").import_command(argv)

    def command_line(self, argv: Sequence[str]) -> str:
        """The launch command (``vllm serve …``) for ``argv``."""
        import shlex

        return shlex.join([*self.launchers[0], *argv])

    # -- checks ------------------------------------------------------------------------
    def parallel_layout(self, args) -> tuple[int, str]:
        """GPUs the parallel sizes occupy on one node, and the product spelled out."""
        return self.guarded("check").parallel_layout(args)

    def argument_checks(self, args, explicit: set[str]) -> str:
        """Judge the explicitly set fields with the engine's validators; returns what was judged."""
        return self.guarded("check").argument_checks(args, explicit)

    def engine_config_check(self, args, gpus: int) -> str:
        """The engine's full configuration check, or :class:`CheckSkipped` where this machine cannot run it."""
        return self.guarded("check").engine_config_check(args, gpus)

    def declared_max_len(self, model: str, engine_args: dict[str, object]) -> int | None:
        """The model's maximum length as the profile states it (an argument, else config.json)."""
        for key in self.max_len_args:
            if key in engine_args:
                return int(engine_args[key])
        cfg = Path(model) / "config.json"
        if cfg.is_file():
            value = json.loads(cfg.read_text()).get("max_position_embeddings")
            return int(value) if value else None
        return None

    def placement(self, args) -> Placement:
        """Nodes, ranks and devices the argument object asks for (the head is node 0)."""
        return self.guarded("nodes").placement(args)

    def check_head(self, args) -> None:
        """A :class:`UsageError` unless the arguments are the head's (node rank 0), which inproc builds."""
        self.guarded("nodes").check_head(args)

    def profiler_args(self, kind: str, directory: str, with_stack: bool) -> dict[str, object]:
        """Engine arguments the engine needs at build to profile later (none by default)."""
        return {}

    def force_acceptance(self, launch: LaunchSpec, acceptance) -> LaunchSpec:
        """``launch`` with draft acceptance forced to ``acceptance`` (an ``inproc.plan.acceptance.Acceptance``)
        where this engine reads it; a one-line :class:`UsageError` where it cannot be (this default: no
        way to force it), or where the profile does not speculate or ``acceptance`` does not fit its drafts."""
        from inproc.errors import UsageError

        raise UsageError(f"{self.label} has no way to force draft acceptance, so --acceptance and [speculative] "
                         f"acceptance are refused here (docs/speculative.md lists the engines that have one).")

    # -- the engine ------------------------------------------------------------------------
    def selftest_module(self):
        """The engine's ``selftest`` module: ``modes(launch)``, ``pieces()``, ``commit()``, ``TINY_PROFILE``, ``MODEL_ARGS`` and ``TINY_ARGS``."""
        return self.engine_module("selftest")

    def nodes_module(self):
        """The engine's ``nodes`` module: its placement and its worker for node ranks 1..N-1."""
        return self.engine_module("nodes")

    def build(self, launch: LaunchSpec) -> Engine:
        """Build the engine in this process (the launch's environment is already applied)."""
        raise NotImplementedError

    def run_worker(self, launch: LaunchSpec, node_rank: int, echo: Callable[[str], None]) -> int:
        """Run node ``node_rank``'s ranks with the engine's own launcher until the head is gone; the exit status.

        The launch's environment is already applied. Blocks; bad input is a :class:`UsageError`.
        """
        return self.guarded("nodes").run_worker(launch, node_rank, echo)
