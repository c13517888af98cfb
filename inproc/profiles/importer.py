"""``inproc profile import``: an engine launch command, taken as it is, turned into a profile.

The command is read by the engine's own parser (``vllm serve``'s, SGLang's ``ServerArgs``),
so every flag means what it means to the engine. HTTP-server flags are dropped with a
note, and credentials (API keys, tokens in URLs, credential-like env vars) never reach
the file.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, fields

from inproc import engines
from inproc.errors import UsageError
from inproc.profiles import redact, toml_io
from inproc.profiles.resolve import adapter_for
from inproc.profiles.spec import MatrixSettings
from inproc.units import format_tokens

_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_HF_SNAPSHOT = re.compile(r"models--(?P<org>[^/]+?)--(?P<name>[^/]+)/snapshots/(?P<rev>[0-9a-f]{40})/?$")


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
        raise UsageError(f"No launch command after `--`. Give it as {_forms()}.")
    found = engines.for_command(rest)
    if found is None:
        raise UsageError(f"Cannot tell the engine from {shlex.join(rest[:3])!r}. Give the launch command as {_forms()}.")
    adapter, engine_argv = found
    return env, adapter.name, engine_argv


def _forms() -> str:
    """The usual launch command of each registered engine that has one, for an error message."""
    forms = [f"`{a.command_example}`" for a in engines.adapters().values() if a.launchers]
    return " or ".join([", ".join(forms[:-1]), forms[-1]] if len(forms) > 1 else forms) + \
        " (or the engine's `python -m` server module)"


def _words(argv: list[str]) -> list[str]:
    """The command's words; one quoted argument holding the whole command is split like a shell."""
    if len(argv) == 1 and any(c.isspace() for c in argv[0]):
        return shlex.split(argv[0].replace("\\\n", " "))
    return list(argv)


def import_command(argv: list[str]) -> ImportedProfile:
    """Read a launch command with its engine's parser; see :class:`ImportedProfile`."""
    env_in, engine, engine_argv = split_command(argv)
    adapter = adapter_for(engine)
    read = adapter.import_command(engine_argv)
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
    gpus, _ = adapter.parallel_layout(adapter.parse(model, engine_args))
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


def render(imported: ImportedProfile) -> str:
    """The profile file: the engine's arguments as imported, the published matrices' grid as [matrix]."""
    m = MatrixSettings()
    notes = "\n".join((f"Imported from: {imported.command}", *imported.notes()))
    lines = [
        "# Written by `inproc profile import`; see docs/profiles.md for every key.",
        *[f"# {n}" for n in imported.notes()],
        f"engine = {toml_io.value(imported.engine)}",
        f"model = {toml_io.value(imported.model)}",
        f"gpus = {imported.gpus}  # from the parallel sizes; the GPUs this setup needs",
        'hardware = ""  # fill in: GPU model and count, CPU, RAM',
        f"notes = {toml_io.value(notes)}",
        "",
        *toml_io.table("engine_args", imported.engine_args),
    ]
    if imported.env:
        lines += ["", *toml_io.table("env", imported.env)]
    matrix = {f.name: getattr(m, f.name) for f in fields(m) if getattr(m, f.name) is not None}
    matrix["contexts"] = [format_tokens(c) for c in m.contexts]
    matrix["anatomy"] = "on" if m.anatomy else "off"  # spelled as --anatomy
    lines += ["", "# The published matrices' grid (MatrixSettings defaults, docs/reference-matrices.md); edit to taste.", *toml_io.table("matrix", matrix)]
    return "\n".join(lines) + "\n"
