"""The nights of a history: results files and per-night summaries, read and put in order.

A night is one run. Inputs are results files (``inproc run --out``), summaries
(``inproc.record.summary``, what ``inproc history --store DIR`` keeps) and folders of
either; they are ordered by when the run was made (its ``created``), and a run given
twice (the same created, seed and command, say as a file and as its summary) counts once.
Each night carries its engine version and commit, taken from the record.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from inproc.errors import UsageError
from inproc.record.damage import require_raw
from inproc.record.files import read_json
from inproc.record.load import record_from_json
from inproc.record.schema import RunRecord
from inproc.record.baseline import is_summary, record_from_summary, source_of

HINT = "Give results files (inproc run --out), summaries from 'inproc history --store', or a folder of them."
#: A development version's commit, as a PEP 440 local part: 0.11.1.dev5+g1a2b3c4 (setuptools-scm).
_COMMIT = re.compile(r"\+g?([0-9a-f]{7,40})\b")


@dataclass(frozen=True, eq=False)
class Night:
    """One run of the history and where it came from."""

    label: str  # the file's name, without .json and .summary
    path: str
    record: RunRecord
    source: str  # the results file it was made from (a summary's "source"; the path for a results file)

    @property
    def version(self) -> str:
        return self.record.engine.version

    @property
    def commit(self) -> str:
        """The engine's commit: recorded beside the software versions, else the version's local part ("" when neither)."""
        soft = self.record.machine.software
        recorded = soft.get(f"{self.record.engine.name}_commit") or soft.get("commit")
        if recorded:
            return str(recorded)[:12]
        found = _COMMIT.search(self.version)
        return found.group(1)[:12] if found else ""

    @property
    def identity(self) -> tuple[str, int, str]:
        return self.record.created, self.record.plan.seed, self.record.command


def _files(inputs: Sequence[str]) -> list[Path]:
    out = []
    for given in inputs:
        p = Path(given)
        if p.is_dir():
            found = sorted(p.glob("*.json"))
            if not found:
                raise UsageError(f"No .json files in folder {given!r}. {HINT}")
            out += found
        elif p.is_file():
            out.append(p)
        else:
            raise UsageError(f"No file or folder at {given!r}. {HINT}")
    return out


class NotANight(UsageError):
    """A file that reads well but holds no night (a baseline): a mistake in the input, which stops a history."""


def read_night(p: Path) -> Night:
    """One file as a night; a baseline or anything else is a one-line error."""
    what = "summary" if p.name.endswith(".summary.json") else "results file"
    data = read_json(p, what, f"No file at {str(p)!r}. {HINT}")
    where = str(p)
    if is_summary(data):
        rec, source = record_from_summary(data, where), source_of(data) or where
    elif isinstance(data, dict) and "baseline_version" in data:
        raise NotANight(f"{where}: a baseline, not one night. {HINT}")
    else:
        rec, source = record_from_json(data, where, p.parent), where  # the loader's stages, on the JSON read above
        require_raw(rec, "a history")  # a night is judged from every cell's raw records
    label = p.name.removesuffix(".json").removesuffix(".summary")
    return Night(label, where, rec, source)


@dataclass(frozen=True)
class Unreadable:
    """A file given as a night that could not be read (damaged, foreign, newer), and why."""

    path: str
    reason: str  # the loader's one-line message, less the path it starts with


def _unreadable(p: Path, error: UsageError) -> Unreadable:
    message = str(error)
    return Unreadable(str(p), message.removeprefix(f"{p}: "))


def read_nights_checked(inputs: Sequence[str], at_least: int = 2) -> tuple[list[Night], tuple[Unreadable, ...]]:
    """(every readable night in ``inputs``, oldest first, each run once; the files that could not be read).

    A night that cannot be read (damaged, foreign, newer) does not stop a history: it is passed
    over and reported. A missing input, an empty folder, a baseline or fewer than ``at_least``
    readable nights is a one-line error.
    """
    nights: dict[tuple, Night] = {}
    unreadable: list[Unreadable] = []
    for p in _files(inputs):
        try:
            night = read_night(p)
        except NotANight:
            raise
        except UsageError as e:
            unreadable.append(_unreadable(p, e))
            continue
        nights.setdefault(night.identity, night)  # a results file and its summary: the first one given
    ordered = sorted(nights.values(), key=lambda n: (n.record.created, n.label))
    if len(ordered) < at_least:
        passed = f" ({len(unreadable)} unreadable: {', '.join(u.path for u in unreadable)})" if unreadable else ""
        raise UsageError(f"A history needs at least {at_least} nights; got {len(ordered)} in {' '.join(inputs)}{passed}. {HINT}")
    return ordered, tuple(unreadable)


def read_nights(inputs: Sequence[str], at_least: int = 2) -> list[Night]:
    """Every night in ``inputs``, oldest first, each run once; one-line errors on bad input, on the
    first file that cannot be read (or fewer than ``at_least`` nights)."""
    nights, unreadable = read_nights_checked(inputs, at_least=0)
    if unreadable:
        raise UsageError(f"{unreadable[0].path}: {unreadable[0].reason}")
    if len(nights) < at_least:
        raise UsageError(f"A history needs at least {at_least} nights; got {len(nights)} in {' '.join(inputs)}. {HINT}")
    return nights
