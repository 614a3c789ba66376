"""Output targets checked before any work starts: a command that writes checks each folder
or file it will write (``--out``, ``--cache``, their defaults) here first, so that a target
it cannot write is one line naming the flag, the path and what is wrong (exit 2), not a
traceback after minutes of runs.

What can only fail later (a full disk, a file-size limit) is caught where the command line
ends (:func:`memsim.workbench.cli.main.user_command`)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from memsim.engine.errors import ParamError


def _existing_ancestor(path: Path) -> Path:
    """The nearest of ``path`` and its parents that exists (a folder to be made under it)."""
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            return candidate
    return Path(".")


def _probe(folder: Path, flag: str, shown: str) -> None:
    """Create and remove an empty file in ``folder``: the only check that also holds for a
    read-only file system or a user whose permission bits say more than the mount allows."""
    try:
        fd, name = tempfile.mkstemp(prefix=".memsim-probe-", dir=folder)
    except OSError as e:
        where = repr(str(folder))
        raise ParamError(f"{flag} {shown}: cannot write in {where} ({e.strerror})") from None
    os.close(fd)
    os.unlink(name)


def _check_parent(path: Path, flag: str, shown: str) -> None:
    """Whatever of ``path`` is missing can be made: its nearest existing ancestor is a folder
    this process can write in."""
    base = _existing_ancestor(path)
    if not base.is_dir():
        what = "a broken link" if base.is_symlink() and not base.exists() else "not a folder"
        raise ParamError(f"{flag} {shown}: {str(base)!r} is {what}")
    _probe(base, flag, shown)


def _given(path: str | Path | None, flag: str) -> bool:
    """Whether there is a target to check: None is a flag not given; an empty text names
    nothing (it never means the current folder)."""
    if isinstance(path, str) and not path.strip():
        raise ParamError(f"{flag} {path!r}: names no path")
    return path is not None


def writable_folder(path: str | Path | None, flag: str = "--out") -> None:
    """``path`` is (or can be made as) a folder this process can write files in."""
    if not _given(path, flag):
        return
    p, shown = Path(str(path)), repr(str(path))
    if p.exists():
        if not p.is_dir():
            raise ParamError(f"{flag} {shown}: is a file, not a folder")
        _probe(p, flag, shown)
        return
    _check_parent(p, flag, shown)


def writable_file(path: str | Path | None, flag: str = "--out") -> None:
    """``path`` is (or can be made as) a regular file this process can write."""
    if not _given(path, flag):
        return
    p, shown = Path(str(path)), repr(str(path))
    if p.is_dir():
        raise ParamError(f"{flag} {shown}: is a folder, not a file")
    if p.exists():
        if not p.is_file():
            raise ParamError(f"{flag} {shown}: is not a regular file")
        if not os.access(p, os.W_OK):
            raise ParamError(f"{flag} {shown}: cannot write it (Permission denied)")
        _probe(p.parent, flag, shown)  # its siblings and temporary files land beside it
        return
    _check_parent(p.parent if str(p.parent) else Path("."), flag, shown)
