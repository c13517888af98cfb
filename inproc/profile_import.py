"""``inproc profile import``: an engine launch command, taken as it is, turned into a profile.

The command is read by the engine's own parser (``vllm serve``'s, SGLang's ``ServerArgs``),
so every flag means what it means to the engine. HTTP-server flags are dropped with a
note, and credentials (API keys, tokens in URLs, credential-like env vars) never reach
the file.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import shlex
import sys
from dataclasses import dataclass, fields

from inproc import profile_toml, redact
from inproc.errors import UsageError
from inproc.profile import MatrixSettings
from inproc.units import format_tokens

_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_MODULES = {"vllm": "inproc.engines.vllm_args", "sglang": "inproc.engines.sglang_args"}
_HF_SNAPSHOT = re.compile(r"models--(?P<org>[^/]+?)--(?P<name>[^/]+)/snapshots/(?P<rev>[0-9a-f]{40})/?$")
_FORMS = "`vllm serve MODEL …`, `sglang serve --model-path MODEL …` or `python -m sglang.launch_server …`"


@dataclass(frozen=True)
class ImportedProfile:
    """A launch command read by its engine: what goes into the profile and what was left out."""

    engine: str
    model: str
    engine_args: dict[str, object]
    env: dict[str, str]
    gpus: int
    dropped: tuple[tuple[str, str], ...]  # (flag, why) for server-only flags
    withheld: tuple[str, ...]  # credentials left out: flags and env var names
    command: str  # the original command, credentials blanked

    def notes(self) -> tuple[str, ...]:
        """One line per thing the user should know about the import."""
        out = []
        snap = _HF_SNAPSHOT.search(self.model)
        if snap:
            out.append(f"The model is a Hugging Face cache snapshot of {snap['org']}/{snap['name']} at revision "
                       f"{snap['rev'][:12]}; elsewhere write model = \"{snap['org']}/{snap['name']}\" and revision = \"{snap['rev']}\".")
        if self.dropped:
            out.append("Dropped (server-only, not used in-process): " + ", ".join(f for f, _ in self.dropped) + ".")
        if self.withheld:
            out.append("Credentials not written: " + ", ".join(self.withheld) + "; give them through the environment when running.")
        return tuple(out)


def split_command(argv: list[str]) -> tuple[dict[str, str], str, list[str]]:
    """(env assignments, engine, the engine's own arguments) from a launch command line."""
    argv = _words(argv)
    env: dict[str, str] = {}
    i = 0
    while i < len(argv) and (argv[i] == "env" or _ENV_ASSIGN.match(argv[i])):
        if argv[i] != "env":
            name, _, val = argv[i].partition("=")
            env[name] = val
        i += 1
    rest = argv[i:]
    if not rest:
        raise UsageError(f"No launch command after `--`. Give it as {_FORMS}.")
    prog = os.path.basename(rest[0])
    if prog in ("vllm", "sglang") and rest[1:2] == ["serve"]:
        return env, prog, rest[2:]
    if _PYTHON.match(prog) and rest[1:2] == ["-m"] and len(rest) > 2:
        module = rest[2]
        if module == "sglang.launch_server":
            return env, "sglang", rest[3:]
        if module == "vllm.entrypoints.openai.api_server":
            return env, "vllm", rest[3:]
        if module in ("vllm.entrypoints.cli.main", "sglang.cli.main") and rest[3:4] == ["serve"]:
            return env, module.split(".")[0], rest[4:]
    raise UsageError(f"Cannot tell the engine from {shlex.join(rest[:3])!r}. Give the launch command as {_FORMS}.")


def engine_importable(engine: str) -> bool:
    """True when the engine's real package is installed here (a bare folder named like it does not count)."""
    spec = importlib.util.find_spec(engine)
    # A directory called e.g. "sglang" on sys.path (e.g. under pytest) is a namespace
    # package with no origin; the installed engine is a regular package.
    return spec is not None and spec.origin is not None


def engine_module(engine: str):
    """The engine's argument module, after checking the engine itself can be imported here."""
    if not engine_importable(engine):
        raise UsageError(
            f"Reading a {engine} command needs {engine} importable in this Python ({sys.executable}). "
            f"Run it with the engine's environment, e.g. .venv-{engine}/bin/python -m inproc profile …"
        )
    return importlib.import_module(_MODULES[engine])


def _words(argv: list[str]) -> list[str]:
    """The command's words; one quoted argument holding the whole command is split like a shell."""
    if len(argv) == 1 and any(c.isspace() for c in argv[0]):
        return shlex.split(argv[0].replace("\\\n", " "))
    return list(argv)


def import_command(argv: list[str]) -> ImportedProfile:
    """Read a launch command with its engine's parser; see :class:`ImportedProfile`."""
    env_in, engine, engine_argv = split_command(argv)
    mod = engine_module(engine)
    read = mod.import_command(engine_argv)
    withheld = [flag for flag in read.dropped if redact.is_secret_name(flag)]
    engine_args: dict[str, object] = {}
    for name, val in read.engine_args.items():
        if redact.is_secret_name(name):
            withheld.append("--" + name)
            continue
        engine_args[name], changed = redact.scrub_value(val)
        if changed:
            withheld.append(f"--{name} (part)")
    model = redact.scrub_text(read.model)
    if model != read.model:
        withheld.append("model URL credentials")
    env = {}
    for name, val in env_in.items():
        if redact.is_secret_env(name, val):
            withheld.append(name)
        else:
            env[name] = redact.scrub_text(val)
    secrets = {r for flag in withheld for r in read.raws.get(flag, ()) if r}  # "(part)" flags: scrubbed below
    secrets |= {env_in[n] for n in withheld if n in env_in and env_in[n]}
    gpus, _ = world_size(engine, mod, model, engine_args)
    return ImportedProfile(
        engine=engine, model=model, engine_args=engine_args, env=env, gpus=gpus,
        dropped=tuple((f, why) for f, why in read.dropped.items() if f not in withheld),
        withheld=tuple(withheld), command=_redacted_command(_words(argv), secrets),
    )


def _redacted_command(words: list[str], secrets: set[str]) -> str:
    """The command as given, with every credential value blanked wherever it appears."""
    out = []
    for w in words:
        for secret in sorted(secrets, key=len, reverse=True):
            w = w.replace(secret, redact.REDACTED)
        out.append(redact.scrub_text(w))
    return shlex.join(out)


def world_size(engine: str, mod, model: str, engine_args: dict[str, object]) -> tuple[int, str]:
    """GPUs the engine's parallel sizes take, and the product spelled out."""
    from inproc.profile_check import parallel_layout

    built = mod.engine_args_from_profile if engine == "vllm" else mod.server_args_from_profile
    return parallel_layout(engine, built(model, engine_args))


def render(imported: ImportedProfile) -> str:
    """The profile file: the engine's arguments as imported, the reference matrix defaults."""
    m = MatrixSettings()
    notes = "\n".join((f"Imported from: {imported.command}", *imported.notes()))
    lines = [
        "# Written by `inproc profile import`; see docs/profiles.md for every key.",
        *[f"# {n}" for n in imported.notes()],
        f"engine = {profile_toml.value(imported.engine)}",
        f"model = {profile_toml.value(imported.model)}",
        f"gpus = {imported.gpus}  # from the parallel sizes; the GPUs this setup needs",
        'hardware = ""  # fill in: GPU model and count, CPU, RAM',
        f"notes = {profile_toml.value(notes)}",
        "",
        *profile_toml.table("engine_args", imported.engine_args),
    ]
    if imported.env:
        lines += ["", *profile_toml.table("env", imported.env)]
    matrix = {f.name: getattr(m, f.name) for f in fields(m) if getattr(m, f.name) is not None}
    matrix["contexts"] = [format_tokens(c) for c in m.contexts]
    lines += ["", "# The reference matrix (MatrixSettings defaults); edit to taste.", *profile_toml.table("matrix", matrix)]
    return "\n".join(lines) + "\n"
