"""One sweep per results folder at a time: ``OUT/.pcs-sweep.lock``, held with ``fcntl.flock`` while a sweep
reads which points are done and runs the rest.

Two ``pcs sweep run`` on one ``-o`` folder both ran every point (the result right, the work doubled): the
second now refuses in one line naming the folder and the holder's pid. The kernel drops a flock when its
process dies however it dies (SIGKILL included), so a lock file left by a killed sweep is stale and is taken
over, never waited on. The file starts with ``.``, so it is no point (``pyarrow.dataset`` skips it); it is
removed when the sweep ends (before the unlock; a sweep that locked the removed file notices that its path
now names another file, or none, and opens again). The lock path is opened without following a symlink and
must be a regular file: a symlink planted there would have had the pid written through it. Where ``fcntl``
does not exist (Windows) no lock is taken.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
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
            pcs sweep (pid N): wait for it to finish, or give another -o``; or ``OUT/.pcs-sweep.lock`` is a
            symlink, FIFO, folder or other non-regular file (named in the message).
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
    fd = _locked_fd(path, out, fcntl)
    try:
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


def _open_regular(path: Path) -> int:
    """Open (creating) the lock file without following a symlink; refuse anything but a regular file.

    Raises:
        UserError: ``path`` is a symlink, FIFO, folder or other non-regular file, or cannot be opened; the
            message names ``path``.
    """
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
            raise UserError(f"{path}: the sweep lock is not a regular file (a symlink, folder or FIFO?): "
                            "remove it and run again") from None
        raise UserError(f"{path}: cannot open the sweep lock: {e.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UserError(f"{path}: the sweep lock is not a regular file (a symlink, folder or FIFO?): "
                        "remove it and run again")
    return fd


def _locked_fd(path: Path, out: Path, fcntl) -> int:
    """An fd holding ``flock`` on the file ``path`` names now: a lock taken on an inode a finishing sweep unlinked
    meanwhile (it removes its file before its unlock) guards nothing, so it is dropped and the open retried.

    Raises:
        UserError: another live process holds the lock (naming ``out`` and its pid), or the path keeps
            changing under us, or :func:`_open_regular` refuses.
    """
    for _ in range(8):
        fd = _open_regular(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise UserError(f"-o {out} is being run by another pcs sweep{holder}: wait for it to finish, "
                            "or give another -o") from None
        try:
            same = os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)              # locked a deleted (or replaced) file: open the one the path names now
    raise UserError(f"-o {out}: the sweep lock {path} kept being replaced: another pcs sweep is starting; "
                    "run again")


def _drop(path: Path, made: Path | None) -> None:
    """Remove the lock file (before the unlock: a later sweep makes its own), and ``made``, the folder this sweep
    created, when it holds nothing (a plan refused before any point ran leaves no empty folder behind)."""
    with contextlib.suppress(OSError):
        path.unlink()
    if made is not None:
        with contextlib.suppress(OSError):
            made.rmdir()
