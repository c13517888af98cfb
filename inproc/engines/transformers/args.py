"""Profile engine arguments -> transformers' ``ContinuousBatchingConfig`` and the model's own settings.

transformers has no serve command line for its continuous batching: its settings are the fields
of ``ContinuousBatchingConfig``. So the parser here is made from the installed class's own fields
(one ``--FIELD`` each, its value read as JSON, else as a string), beside the few settings of the
model itself (:data:`MODEL_OPTIONS`). A profile names any field the installed version has;
``block-size`` names the tokens of one cache block under whichever field the version calls it
(``block_size`` up to 5.17, ``page_size`` from 5.18, where ``block_size`` is a deprecated alias).
transformers is imported inside the functions (it pulls in torch).
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json

from inproc.engines import flags
from inproc.engines.transformers.fields import POSITIVE_OPTIONS, check_block_names, check_positive, checked_fields
from inproc.errors import UsageError

LABEL = "transformers"
HELP_HINT = "transformers' ContinuousBatchingConfig"
MODEL_KEYS = ("model-path",)
BLOCK_KEY = "block-size"

#: The model's own settings (not fields of ContinuousBatchingConfig): name -> (default, help).
MODEL_OPTIONS = {
    "load-format": ("dummy", "dummy: weights drawn at random from the config (no checkpoint read); auto: from_pretrained"),
    "dtype": ("bfloat16", "the model's dtype (torch name)"),
    "device": ("auto", "cpu, cuda, cuda:N; auto: cuda where torch sees one, else cpu"),
    "attn-implementation": ("sdpa", "the attention the model is built with (sdpa, eager, a flash implementation)"),
    "max-model-len": (None, "longest request (prompt + output) in tokens; default: config.json's max_position_embeddings"),
    "weights-seed": (0, "seed of the dummy weights"),
    "torch-threads": (None, "torch's intra-op threads (torch.set_num_threads) for the process; default: torch's choice"),
}


def version() -> str:
    import transformers

    return transformers.__version__


def config_class():
    from transformers.generation.configuration_utils import ContinuousBatchingConfig

    return ContinuousBatchingConfig


@functools.lru_cache(maxsize=1)
def config_fields() -> tuple[str, ...]:
    """The installed ContinuousBatchingConfig's field names, in its order."""
    return tuple(f.name for f in dataclasses.fields(config_class()))


def block_field() -> str:
    """The field that holds a block's tokens in the installed version (``page_size`` or ``block_size``)."""
    return "page_size" if "page_size" in config_fields() else "block_size"


def _value(text: str) -> object:
    """A flag's value: JSON where it parses (numbers, true/false, lists, null), else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _new_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="transformers continuous batching", add_help=False)
    parser.add_argument("--model-path", required=True)
    for name, (default, text) in MODEL_OPTIONS.items():
        parser.add_argument("--" + name, default=default, type=_value, help=text)
    parser.add_argument("--" + BLOCK_KEY, dest="cb_block", default=None, type=_value,
                        help=f"tokens per cache block (the installed version's {block_field()})")
    for name in config_fields():
        if name.replace("_", "-") != BLOCK_KEY:
            parser.add_argument("--" + name.replace("_", "-"), dest="cb_" + name, default=None, type=_value)
    return parser


@functools.lru_cache(maxsize=1)
def make_parser() -> argparse.ArgumentParser:
    """The parser of the installed version's fields; shared, do not modify."""
    return _new_parser()


def check_names(engine_args: dict[str, object]) -> None:
    """Each key must be a model setting or a field of the installed ContinuousBatchingConfig; one line naming the valid ones."""
    known = flags.option_names(make_parser())
    for key in engine_args:
        name = key.replace("_", "-")
        if name not in known or name in MODEL_KEYS:
            fields = ", ".join(f.replace("_", "-") for f in config_fields())
            near = flags.closest(name, known)
            hint = f" Closest: {', '.join(near)}." if near else ""
            raise UsageError(f"Unknown transformers argument {key!r}.{hint} ContinuousBatchingConfig fields in "
                             f"transformers {version()}: {fields}; the model's: {', '.join(MODEL_OPTIONS)}.")


def profile_args_to_argv(model: str, engine_args: dict[str, object]) -> list[str]:
    check_names(engine_args)
    return flags.profile_argv(make_parser(), "--model-path", model, engine_args, MODEL_KEYS, LABEL, HELP_HINT)


@dataclasses.dataclass(frozen=True)
class TransformersArgs:
    """What the adapter builds: the model's settings and the ContinuousBatchingConfig fields the profile set."""

    model: str
    load_format: str
    dtype: str
    device: str
    attn_implementation: str
    max_model_len: int | None
    weights_seed: int
    torch_threads: int | None
    cb_fields: dict  # field name -> value, only those the profile sets (the rest keep transformers' defaults)

    def cb_config(self):
        """A fresh ContinuousBatchingConfig (the engine resolves it in place, so each build gets its own)."""
        try:
            return config_class()(**self.cb_fields)
        except (TypeError, ValueError) as e:
            raise UsageError(f"transformers rejected the arguments: {flags.error_text(e)}") from None


def parse_profile(model: str, engine_args: dict[str, object]) -> TransformersArgs:
    check_block_names(engine_args)
    ns = flags.parse(make_parser(), profile_args_to_argv(model, engine_args), LABEL)
    fields = {k[3:]: v for k, v in vars(ns).items() if k.startswith("cb_") and k != "cb_block" and v is not None}
    if ns.cb_block is not None:
        fields[block_field()] = ns.cb_block
    fields = checked_fields(fields, config_class(), block_field())
    for name in POSITIVE_OPTIONS:
        check_positive(name, getattr(ns, name))
    if not isinstance(ns.weights_seed, int) or isinstance(ns.weights_seed, bool):
        raise UsageError(f"Bad transformers argument weights-seed = {ns.weights_seed!r}: give a whole number.")
    if ns.load_format not in ("dummy", "auto"):
        raise UsageError(f"Bad load-format {ns.load_format!r}: transformers' adapter takes dummy or auto.")
    max_len = ns.max_model_len
    return TransformersArgs(str(ns.model_path), str(ns.load_format), str(ns.dtype), str(ns.device),
                            str(ns.attn_implementation), int(max_len) if max_len is not None else None,
                            int(ns.weights_seed), int(ns.torch_threads) if ns.torch_threads else None, fields)


def explicit_fields(model: str, engine_args: dict[str, object]) -> set[str]:
    """The profile's own keys, as field names (``block-size`` as the version's block field)."""
    check_names(engine_args)
    out = set()
    for key in engine_args:
        name = key.replace("-", "_")
        out.add(block_field() if key.replace("_", "-") == BLOCK_KEY else name)
    return out


def import_command(argv: list[str]):
    raise UsageError("transformers' continuous batching has no launch command to import: write its profile with "
                     "engine = \"transformers\" and ContinuousBatchingConfig fields under [engine_args].")


def settings(args: TransformersArgs) -> dict[str, object]:
    """The model's settings and every ContinuousBatchingConfig field as the profile leaves it (before resolution)."""
    cfg = args.cb_config()
    out = {k: v for k, v in dataclasses.asdict(args).items() if k != "cb_fields"}
    out.update({f: _plain(getattr(cfg, f)) for f in config_fields()})
    return out


def _plain(value: object) -> object:
    return value if value is None or isinstance(value, (bool, int, float, str, list, tuple, dict)) else repr(value)
