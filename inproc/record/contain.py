"""Cell files stay inside their folder: the one check before any file of a cell folder is opened.

A results file's manifest names its cell folder (``cells``: a folder beside it) and, per entry,
its cell file (``cell_file``); the cell file names its tables. A manifest may come from anywhere
(a copied folder, an archive), so none of those names is trusted: a path that leaves the cell
folder (``..``, an absolute path, a symlink, of the file or of a folder on its way, that
resolves elsewhere) is never opened: :meth:`CellFolder.where` returns it as a damage
(``inproc.record.damage``), and its entry becomes an Error entry, as a damaged cell file's
does. The reader of a cell folder (``inproc.record.files``) asks :meth:`CellFolder.where` for
every path it opens, and lists the folder through :meth:`CellFolder.names`.

Checking needs no open: the path is first judged by its text, then by ``os.path.realpath``
(which follows symlinks with ``lstat`` and ``readlink``) against the folder's own real path.
The check and the open are two steps: a link swapped into the folder between them by another
process is not caught (that would take an open relative to the folder's descriptor, link by
link, for every reader, pyarrow's included); a folder read as it lies on disk is.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from inproc.errors import UsageError
from inproc.record.damage import OUTSIDE, Damage, words

__all__ = ["OUTSIDE", "CellFolder", "OutsideFolder"]


class OutsideFolder(UsageError):
    """A cell file (or a table of one) whose path leaves the results file's cell folder; never opened."""


@dataclass(frozen=True)
class CellFolder:
    """A results file's cell folder: ``name`` (the manifest's ``cells``) in ``parent`` (the manifest's folder)."""

    parent: Path
    name: str

    @classmethod
    def at(cls, path: str | os.PathLike) -> "CellFolder":
        """The cell folder at ``path`` (``RESULTS.cells``)."""
        p = Path(path)
        return cls(p.parent, p.name)

    @property
    def path(self) -> Path:
        """The folder as named (what messages show)."""
        return self.parent / self.name

    def where(self, name: str, what: str = "cell file") -> Path | Damage:
        """The path to open for ``name`` (a cell file or a table, relative to the folder), or the
        damage "outside" when it would leave the folder (never opened)."""
        why = self._outside(name)
        return Damage(self.path / name, "outside", why, what, self.name) if why else self.path / name

    def file(self, name: str) -> Path:
        """:meth:`where`, an :class:`OutsideFolder` error when it would leave the folder."""
        path = self.where(name)
        if isinstance(path, Damage):
            raise OutsideFolder(words(path))
        return path

    def names(self) -> list[str]:
        """The names of the files in the folder (none when it is missing or itself leaves the manifest's folder)."""
        if self._folder_outside() or not self.path.is_dir():
            return []
        return sorted(p.name for p in self.path.iterdir())

    def _folder_outside(self) -> str:
        """Why the folder itself is not a folder beside the manifest ("" when it is)."""
        return self._root[1]

    @functools.cached_property
    def _root(self) -> tuple[str, str]:
        """(the folder's real path, why the folder itself is not a folder beside the manifest: "" when it is).
        Resolved once per reading of a results file: hundreds of files are checked against it."""
        if self.name in ("", ".", "..") or "/" in self.name or (os.altsep and os.altsep in self.name):
            return "", f"the manifest names the cell folder {self.name!r}, not a folder beside it"
        real = os.path.realpath(self.path)
        if not _within(real, os.path.realpath(self.parent)):
            return real, f"the cell folder {self.name} is a symlink to {real}"
        return real, ""

    def _outside(self, name: str) -> str:
        """Why ``name`` leaves the folder ("" when it stays inside): judged by its text, then by its real path."""
        root, folder = self._root
        if folder:
            return folder
        if os.path.isabs(name):
            return f"{name!r} is an absolute path"
        norm = os.path.normpath(name)
        if norm == os.pardir or norm.startswith(os.pardir + os.sep):
            return f"{name!r} leaves {self.name}/ by '..'"
        real = os.path.realpath(os.path.join(root, name))
        if not _within(real, root):
            return f"{name!r} resolves to {real} through a symlink"
        return ""


def _within(path: str, root: str) -> bool:
    """Whether the real path ``path`` is ``root`` or lies under it."""
    return os.path.commonpath([path, root]) == root
