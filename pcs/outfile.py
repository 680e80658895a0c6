"""Output files written safely: checked before the work, written to a temp file, renamed into place.

Every file pcs writes (a converted trace, ``--requests-out``, ``--plot``,
``--tokens-out`` ...) goes through :func:`atomic_output`: a temporary file
beside the target, given the permissions a new file gets under the umask
(``0o666 & ~umask``, as ``open`` creates files), then renamed onto the target
with ``os.replace`` -- so a run that fails, is interrupted or is killed with
SIGTERM never leaves a half-written file under the final name, and an older
file of that name stays intact. Temporary files (these and the stdin spool,
:mod:`pcs.trace.api`) are listed in :data:`TEMPORARY` while they exist;
:func:`remove_temporary` deletes what is left (at exit, and from the CLI's
signal handling, :mod:`pcs.cli.common`).

:func:`check_outputs` runs before any work: a missing or read-only folder, an
output that is a directory, an output that is also an input of the run, or
two outputs with one name are refused naming the user's path and option.
"""
from __future__ import annotations

import atexit
import contextlib
import errno
import os
from pathlib import Path
from typing import Iterator, Mapping
from pcs.errors import UserError

__all__ = ["TEMPORARY", "atomic_output", "check_outputs", "create_temporary", "publish", "remove_temporary",
           "same_file"]

#: Temporary files pcs created and has not yet renamed or removed (paths as strings).
TEMPORARY: set[str] = set()


def remove_temporary() -> None:
    """Delete every file in :data:`TEMPORARY` (a missing one is ignored)."""
    for tmp in list(TEMPORARY):
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        TEMPORARY.discard(tmp)


atexit.register(remove_temporary)


def publish(tmp, out_path) -> None:
    """Give a finished temporary file the permissions a new file gets (umask) and rename it onto ``out_path``."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)
    os.replace(tmp, out_path)


def _named(exc: OSError, tmp: str, path) -> OSError:
    """``exc`` with the user's ``path`` instead of the hidden temporary file's name."""
    if exc.filename in (tmp, None):
        return OSError(exc.errno, exc.strerror or str(exc), os.fspath(path))
    return exc


@contextlib.contextmanager
def atomic_output(path) -> Iterator[str]:
    """Yield a temporary path beside ``path``; on success publish it onto ``path``, on any exit remove it.

    The caller writes the whole output to the yielded path (closing it
    before the block ends). An exception -- or a KeyboardInterrupt or
    SIGTERM raised inside the block -- removes the temporary file and
    leaves ``path`` as it was.

    Raises:
        OSError: creating, writing or renaming failed; the error names ``path``, never the temporary file.
    """
    target = Path(path)
    tmp = _reserve_temporary(target)
    try:
        yield tmp
        publish(tmp, target)
    except OSError as exc:
        raise _named(exc, tmp, path) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        TEMPORARY.discard(tmp)


def create_temporary(folder, prefix: str, suffix: str = "") -> tuple[int, str]:
    """Create a new file ``folder/<prefix><8 hex digits><suffix>`` (mode 0o600, ``O_EXCL``: never an existing
    file or link) and return ``(fd open for writing, path)``. Its name is in :data:`TEMPORARY` before the file
    exists, so a signal at any point -- even between the creation and the return -- leaves nothing that
    :func:`remove_temporary` misses (``tempfile.mkstemp`` names its file only once it returns).

    Raises:
        OSError: the folder cannot be written; FileExistsError: 100 names taken.
    """
    import secrets  # here: it loads OpenSSL (~20 ms), which a command that writes no file never needs

    for _ in range(100):
        tmp = str(Path(folder) / f"{prefix}{secrets.token_hex(4)}{suffix}")
        TEMPORARY.add(tmp)
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), tmp
        except FileExistsError:
            TEMPORARY.discard(tmp)
        except OSError:          # nothing was created; a signal (Terminated) leaves the name listed
            TEMPORARY.discard(tmp)
            raise
    raise FileExistsError(f"{folder}: no free temporary name {prefix}...{suffix} in it")


def _reserve_temporary(target: Path) -> str:
    """Create an empty hidden temporary file beside ``target`` (:func:`create_temporary`).

    Raises:
        OSError: the folder cannot be written (the error names ``target``).
    """
    try:
        fd, tmp = create_temporary(target.parent, f".{target.name}.", ".tmp")
    except FileExistsError as exc:
        raise FileExistsError(f"{target}: no free temporary name beside it") from exc
    except OSError as exc:
        raise _named(exc, exc.filename, target) from None
    os.close(fd)
    return tmp


def same_file(a, b) -> bool:
    """Whether paths ``a`` and ``b`` name one file (the same inode, or the same resolved path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()


def _check_one(option: str, path) -> None:
    if str(path) == "-":
        raise UserError(f"{option} -: pcs writes this output to a file, not to stdout; give a file name")
    if not str(path).strip():
        raise UserError(f"{option} {str(path)!r}: an empty file name; give a file name")
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, f"{option}: is a directory", os.fspath(path))
    folder = target.parent
    if not folder.is_dir():
        what = "does not exist" if not folder.exists() else "is not a folder"
        raise UserError(f"{option} {path}: the folder {str(folder)!r} {what}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"{option} {path}: the folder {str(folder)!r} is not writable")


def check_outputs(outputs: Mapping[str, object], inputs: Mapping[str, object] = {}) -> None:
    """Refuse outputs a run could not write, before the run starts.

    Args:
        outputs: option (as the user wrote it, e.g. ``"--requests-out"``) -> path, or None when not given.
        inputs: what each input is (``"TRACE"``, ``"--azure-csv"`` ...) -> path, or None / ``"-"`` (stdin).
    Raises:
        ValueError: ``-`` (stdout is not a file) or an empty name; the output's folder is
            missing, not a folder or not writable; an output is also an
            input; two outputs name one file.
        IsADirectoryError: an output is a directory.
    """
    given = [(opt, p) for opt, p in outputs.items() if p is not None]
    for i, (opt, path) in enumerate(given):
        _check_one(opt, path)
        for what, src in inputs.items():
            if src is not None and str(src) != "-" and Path(src).exists() and same_file(path, src):
                raise UserError(f"{opt} {path} is also an input file of this run ({what}); pcs never modifies "
                                 "its inputs: choose another output name")
        for opt2, path2 in given[:i]:
            if same_file(path, path2):
                raise UserError(f"{opt} {path} and {opt2} {path2} name one file: give each output its own name")
