"""Engine pieces the adapters use, found by capability and named in one line when missing.

The adapters reach into engine internals: modules, classes, scheduler attributes. An engine
release may move one (vLLM 0.33 moved ``make_arg_parser``) or drop it. :func:`require` finds a
piece at each place it is known to live, in turn; :func:`engine_imports` turns any other failed
import of engine code into the same one line. Either way a user reads what is missing, on
which version, and which versions are measured, not a traceback from deep inside a step.
``adapter`` below is an :class:`inproc.engines.base.EngineAdapter` (not imported: base imports this module).
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import re
import sys


class EngineBuildError(RuntimeError):
    """The engine could not be built from the profile (bad argument, missing model...)."""


class MissingPiece(EngineBuildError):
    """A piece of engine code the adapter uses (a module, a class, an attribute) is not in the installed build."""


def installed_version(adapter: "EngineAdapter") -> str:
    """The engine's version as its package says, without importing anything new ("?" when not imported yet)."""
    return str(getattr(sys.modules.get(adapter.package), "__version__", "?"))


def missing_piece(adapter: "EngineAdapter", piece: str) -> MissingPiece:
    """The one line for ``piece`` missing from the installed engine: what, the version, the tested range, the fix."""
    return MissingPiece(
        f"{adapter.label} {installed_version(adapter)} has no {piece}, which inproc's {adapter.name} adapter needs; "
        f"it is tested against {adapter.label} {adapter.tested_range()}. Install a tested version, or update the adapter.")


def require(adapter: "EngineAdapter", *locations: str, on: object = None):
    """The first of ``locations`` that exists, else a one-line :class:`MissingPiece` naming them.

    With ``on``, each location is an attribute path on that object (``"engine_core.scheduler"``).
    Without, each is ``"module:attribute.path"`` (or a module alone), imported in turn: an engine
    that moved a piece is followed to its new place (``make_arg_parser`` moved between vLLM
    0.32 and 0.33), and a build that has it nowhere fails here, at build, not inside a step.
    """
    for location in locations:
        found = _attribute(on, location) if on is not None else _import(location)
        if found is not _MISSING:
            return found
    where = f" on {type(on).__name__}" if on is not None else ""
    return _raise(missing_piece(adapter, " or ".join(repr(loc) for loc in locations) + where))


_MISSING = object()


def _raise(error: Exception):
    raise error


def _attribute(obj, path: str):
    for name in path.split("."):
        if not hasattr(obj, name):
            return _MISSING
        obj = getattr(obj, name)
    # An abstract method (SchedulerInterface's) is only a promise: the class the adapter uses lacks it.
    return _MISSING if getattr(obj, "__isabstractmethod__", False) else obj


def _import(location: str):
    module, _, path = location.partition(":")
    try:
        found = importlib.import_module(module)
    except ImportError as e:
        if e.name and module.startswith(e.name):  # the module (or a parent) is not there; another error is real
            return _MISSING
        raise
    return _attribute(found, path) if path else found


_CANNOT_IMPORT = re.compile(r"cannot import name '([^']+)' from '([^']+)'")


def import_piece(e: ImportError) -> str:
    """What a failed import names: ``module 'a.b'`` or ``'a.b.Name'``."""
    named = _CANNOT_IMPORT.search(str(e))
    if named:
        return repr(f"{named[2]}.{named[1]}")
    return f"module {e.name!r}" if e.name else f"module ({str(e).splitlines()[0] if str(e) else type(e).__name__})"


@contextlib.contextmanager
def engine_imports(adapter: "EngineAdapter"):
    """Inside: an import of engine code that fails (a module or name this build lacks) becomes the one-line
    :class:`MissingPiece` naming it, instead of a traceback from deep inside the adapter."""
    try:
        yield
    except ImportError as e:
        raise missing_piece(adapter, import_piece(e)) from e


class Guarded:
    """An adapter module whose functions run under :func:`engine_imports`."""

    def __init__(self, module, adapter: "EngineAdapter") -> None:
        self._module, self._adapter = module, adapter

    def __getattr__(self, name: str):
        value = getattr(self._module, name)
        if not callable(value) or isinstance(value, type):
            return value

        @functools.wraps(value)
        def guarded(*args, **kwargs):
            with engine_imports(self._adapter):
                return value(*args, **kwargs)

        return guarded
