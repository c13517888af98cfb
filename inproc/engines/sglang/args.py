"""Profile engine arguments -> SGLang ``ServerArgs``, through SGLang's own CLI parser.

The SGLang twin of :mod:`inproc.engines.vllm.args`: a profile's ``{flag-name: value}``
table is rendered back into ``sglang serve`` flags and read by ``ServerArgs.add_cli_args``
and ``ServerArgs.from_cli_args``, the pair SGLang's ``prepare_server_args`` uses.
SGLang is imported inside the functions (it pulls in torch).
"""
from __future__ import annotations

import functools

from inproc.engines import commands, flags
from inproc.errors import UsageError

LABEL = "SGLang"
HELP_HINT = "`sglang serve --help`"
MODEL_KEYS = ("model-path",)
_RADIX_FLAG = "radix-eviction-policy"

_HTTP = "HTTP-server flag"
_API_TEXT = "formats API answers (chat, tools, reasoning), unused in-process"
# ServerArgs fields that only configure the HTTP/gRPC front end or how API answers are
# formatted; an engine driven in-process with token ids never reads them.
SERVER_ONLY = {
    **dict.fromkeys(
        (
            "host", "port", "fastapi_root_path", "grpc_mode", "smg_grpc_mode", "grpc_port",
            "sidecar", "sidecar_args", "skip_server_warmup", "warmups", "enable_http2",
            "http2_max_concurrent_streams", "http2_initial_connection_window_size",
            "ssl_keyfile", "ssl_certfile", "ssl_ca_certs", "ssl_keyfile_password",
            "enable_ssl_refresh", "api_key", "admin_api_key", "log_level_http",
            "uvicorn_access_log_exclude_prefixes", "smg_http_sidecar_port",
            "enable_http_worker_reuseport", "file_storage_path",
        ),
        _HTTP,
    ),
    **dict.fromkeys(
        (
            "chat_template", "completion_template", "hf_chat_template_name",
            "trust_request_chat_template", "default_chat_template_kwargs", "tool_server",
            "tool_call_parser", "reasoning_parser", "stream_response_default_include_usage",
        ),
        _API_TEXT,
    ),
    "served_model_name": "names the model in API answers and metrics labels",
}


def version() -> str:
    import sglang

    return sglang.__version__


def _new_parser():
    import argparse

    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    return parser


@functools.lru_cache(maxsize=1)
def make_parser():
    """SGLang's own server-argument parser (the one behind ``sglang serve``); shared, do not modify."""
    return _new_parser()


def profile_args_to_argv(model: str, engine_args: dict[str, object]) -> list[str]:
    """Render ``{name: value}`` as ``sglang serve`` flags; tables become JSON strings."""
    return flags.profile_argv(make_parser(), "--model-path", model, engine_args, MODEL_KEYS, LABEL, HELP_HINT)


def parse_server_args(argv: list[str]):
    """Parse flags with SGLang's parser into ``ServerArgs`` (unresolved, as ``prepare_server_args`` returns)."""
    from sglang.srt.server_args import ServerArgs

    def prepare(ns) -> None:
        # prepare_server_args records whether the eviction policy was chosen or defaulted;
        # some model hooks only override a defaulted one.
        ns._radix_eviction_policy_explicitly_set = any(
            a == "--" + _RADIX_FLAG or a.startswith(f"--{_RADIX_FLAG}=") for a in argv
        )

    return flags.build_args(make_parser(), argv, LABEL, ServerArgs.from_cli_args, prepare)


def parse_profile(model: str, engine_args: dict[str, object]):
    """The ``ServerArgs`` SGLang would build from the same ``sglang serve`` command line."""
    return parse_server_args(profile_args_to_argv(model, engine_args))


def explicit_fields(model: str, engine_args: dict[str, object]) -> set[str]:
    """The ``ServerArgs`` field names the profile sets itself."""
    return set(commands.given_args(_new_parser(), profile_args_to_argv(model, engine_args), LABEL))


def normalize_serve_argv(argv: list[str]) -> list[str]:
    """``sglang serve`` extras: a positional model becomes ``--model-path``; ``--model-type`` picks the LLM server."""
    out, i = [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--model-type" or arg.startswith("--model-type="):
            value = arg.split("=", 1)[1] if "=" in arg else (argv[i + 1] if i + 1 < len(argv) else "")
            if value not in ("auto", "llm"):
                raise UsageError(f"--model-type {value!r} is not an LLM server. inproc builds --model-type llm (or auto).")
            i += 1 if "=" in arg else 2
            continue
        out.append(arg)
        i += 1
    if out and not out[0].startswith("-"):
        out = ["--model-path", *out]
    return _merge_config_file(out)


def _merge_config_file(argv: list[str]) -> list[str]:
    if "--config" not in argv:
        return argv
    from sglang.srt.utils.server_args_config_parser import ConfigArgumentMerger

    try:
        return ConfigArgumentMerger(_new_parser()).merge_config_with_args(argv)
    except (OSError, ValueError) as e:
        raise UsageError(f"{LABEL} could not read --config: {flags.error_text(e)}") from None


def reference_server_args(argv: list[str]):
    """What SGLang itself builds from ``sglang serve`` / ``launch_server`` arguments."""
    from sglang.srt.server_args import prepare_server_args

    return prepare_server_args(normalize_serve_argv(argv))


def import_command(argv: list[str]) -> commands.CommandRead:
    """Read ``sglang serve`` / ``launch_server`` arguments with SGLang's own parser."""
    argv = normalize_serve_argv(argv)
    given = commands.given_args(_new_parser(), argv, LABEL)
    model_arg = given.pop("model_path", None)
    if model_arg is None:
        raise UsageError("The SGLang command names no model. Give it as `sglang serve --model-path MODEL …`.")
    reference = flags.parse(make_parser(), argv, LABEL)
    return commands.read_command(given, str(model_arg.value), lambda dest: SERVER_ONLY.get(dest, ""), make_parser(),
                              reference, "--model-path", LABEL)


def settings(server_args) -> dict[str, object]:
    """Every ``ServerArgs`` field, by name."""
    from sglang.srt.arg_groups.arg_utils import record_fields

    return {f.name: getattr(server_args, f.name) for f in record_fields(type(server_args))}
