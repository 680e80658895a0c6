"""One sweep per results folder at a time: ``OUT/.pcs-sweep.lock``, held with ``fcntl.flock`` while a sweep
reads which points are done and runs the rest.

Two ``pcs sweep run`` on one ``-o`` folder both ran every point (the result right, the work doubled): the
second now refuses in one line naming the folder and the holder's pid. The kernel drops a flock when its
process dies however it dies (SIGKILL included), so a lock file left by a killed sweep is stale and is taken
over, never waited on. The file starts with ``.``, so it is no point (``pyarrow.dataset`` skips it); it is
removed when the sweep ends. Where ``fcntl`` does not exist (Windows) no lock is taken.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

from pcs.errors import UserError

__all__ = ["LOCK_NAME", "sweep_lock"]

LOCK_NAME = ".pcs-sweep.lock"


def _holder(fd: int) -> str:
    """The pid the holder wrote, as text for the message ('' when unreadable)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (pid {text})" if text.isdigit() else ""


@contextlib.contextmanager
def sweep_lock(out: str | Path) -> Iterator[Path]:
    """Hold ``OUT/.pcs-sweep.lock`` for the ``with`` block (``OUT`` created if missing).

    Raises:
        UserError: ``OUT`` is a file; or another live process holds the lock: ``-o OUT is being run by another
            pcs sweep (pid N): wait for it to finish, or give another -o``.
    """
    try:
        import fcntl
    except ImportError:           # no flock on this platform: run unlocked, as before
        yield Path(out)
        return
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"-o {out}: not a directory")
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"-o {out} is being run by another pcs sweep{_holder(fd)}: wait for it to finish, "
                            "or give another -o") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        try:
            yield out
        except BaseException:
            _drop(path, out if created else None)
            raise
        _drop(path, None)
    finally:
        os.close(fd)


def _drop(path: Path, made: Path | None) -> None:
    """Remove the lock file (before the unlock: a later sweep makes its own), and ``made``, the folder this sweep
    created, when it holds nothing (a plan refused before any point ran leaves no empty folder behind)."""
    with contextlib.suppress(OSError):
        path.unlink()
    if made is not None:
        with contextlib.suppress(OSError):
            made.rmdir()
