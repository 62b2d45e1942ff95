"""Atomic file writes: write a temporary file in the same folder, fsync it, rename it over the target,
fsync the folder.  A reader (or a process restarted after ``kill -9``) sees the old file or the new
one, never a torn one.  Leftover temporaries (``.*.tmp``) of a killed writer are removed by
:func:`remove_stale_temporaries`."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

TMP_SUFFIX = ".tmp"


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """fsync a folder so a rename inside it survives a crash (no-op where unsupported)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], mode: int = 0o644) -> Iterator[BinaryIO]:
    """Yield a binary file object; on a clean exit its content replaces ``path`` atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_file(path) as f:
        f.write(data)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_with(path: str | os.PathLike[str], writer: Callable[[BinaryIO], None]) -> None:
    """Call ``writer(file)`` and install the result atomically."""
    with atomic_file(path) as f:
        writer(f)


def remove_stale_temporaries(folder: str | os.PathLike[str]) -> int:
    """Delete ``.*.tmp`` files left by killed writers anywhere under ``folder``; returns how many."""
    count = 0
    root = Path(folder)
    if not root.is_dir():
        return 0
    for tmp in root.rglob(f".*{TMP_SUFFIX}"):
        try:
            tmp.unlink()
            count += 1
        except OSError:
            pass
    return count
