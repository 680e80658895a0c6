"""Output files written safely: checked before the work, written to a temp file, renamed into place.

Every file pcs writes (a converted trace, ``--requests-out``, ``--plot``,
``--tokens-out`` ...) goes through :func:`atomic_output`: a temporary file
beside the target, given the permissions a new file gets under the umask
(``0o666 & ~umask``, as ``open`` creates files), then renamed onto the target
with ``os.replace`` -- so a run that fails, is interrupted or is killed with
SIGTERM never leaves a half-written file under the final name, and an older
file of that name stays intact. An output that already exists and is not a
regular file is never replaced by one: a symbolic link is followed and its
target replaced the same way (temp file beside the *target*, renamed onto the
resolved path); a character device (``/dev/null``) or a FIFO is streamed --
the output is finished in a temporary file under ``TMPDIR`` (so a format that
needs a seekable file, Parquet, works) and then copied into the node, which is
opened for writing without being created or truncated; a block device or a
socket is refused (:func:`check_outputs`). Temporary files (these and the stdin spool,
:mod:`pcs.trace.api`) are listed in :data:`TEMPORARY` while they exist;
:func:`remove_temporary` deletes what is left (at exit, and from the CLI's
signal handling, :mod:`pcs.cli.common`).

:func:`check_outputs` runs before any work: a missing or read-only folder, an
output that is a directory, an output that is also an input of the run, or
two outputs with one name (except a character device such as ``/dev/null``), a
block device, a socket or a link that loops are refused naming the user's path and option.
"""
from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import os
import stat
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping
from pcs.errors import UserError, raise_if_stopped, shown_path, shown_repr
from pcs.units import a_or_an

__all__ = ["TEMPORARY", "WRITTEN", "STREAMED", "REFUSED", "arrow_file", "atomic_output", "check_outputs", "refuse_dash_folder",
           "create_temporary", "node_kind",
           "publish", "refuse_inputs", "remove_temporary", "same_file"]

#: Temporary files pcs created and has not yet renamed or removed (paths as strings).
TEMPORARY: set[str] = set()
#: Outputs :func:`atomic_output` finished (paths as given, in order), which a Ctrl-C leaves in place, complete:
#: the CLI names them when it stops (``pcs.cli.common.user_errors``) and empties the list for each command.
WRITTEN: list[str] = []


def arrow_file(path, mode: str = "r", **kw):
    """``path`` opened for pyarrow (``pyarrow.OSFile``, ``mode`` ``"r"`` or ``"w"``; ``kw``: its ``memory_pool``)
    by the bytes of its name (``os.fsencode``), the one way pcs hands pyarrow a file: pyarrow encodes a ``str`` name as
    UTF-8, which a name that is not UTF-8 (``out\\xff.parquet``, held as surrogate escapes) cannot be (it raised
    ``UnicodeEncodeError``); the bytes name the file the user named. Close it (``with``) when done.

    Raises:
        OSError: the file cannot be opened (pyarrow's ``ArrowIOError`` is one)."""
    from pcs._heldimport import held_import

    return held_import("pyarrow").OSFile(os.fsencode(path), mode=mode, **kw)


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


#: Kinds of existing node an output is streamed into (:func:`atomic_output`), not renamed onto.
STREAMED = ("character device", "FIFO")
#: Kinds of existing node an output may not be (:func:`check_outputs`).
REFUSED = ("block device", "socket")


def node_kind(path) -> str | None:
    """What ``path`` names after following symbolic links: None (nothing there), ``"file"``, ``"directory"``,
    or one of :data:`STREAMED` / :data:`REFUSED`.

    Raises:
        OSError: the path cannot be examined (a link that loops: ELOOP; no permission).
    """
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    for test, kind in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "directory"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISFIFO, "FIFO"), (stat.S_ISBLK, "block device")):
        if test(mode):
            return kind
    return "socket"


def _resolved(path) -> Path:
    """``path``, or the file it finally names when its last component is a symbolic link."""
    return Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)


def _copy_into(tmp: str, path) -> None:
    """Copy the finished ``tmp`` into the existing device or FIFO ``path`` (opened ``O_WRONLY``: never
    created, truncated or replaced; a regular file found there instead is left alone)."""
    with open(tmp, "rb") as src, os.fdopen(os.open(path, os.O_WRONLY | os.O_NOCTTY), "wb") as dst:
        if stat.S_ISREG(os.fstat(dst.fileno()).st_mode):
            raise OSError(errno.EEXIST, "became a regular file while pcs ran; not overwritten", os.fspath(path))
        import shutil   # here: shutil imports zlib, bz2 and lzma (~3 ms of every command's start-up)

        shutil.copyfileobj(src, dst, 1 << 20)


@contextlib.contextmanager
def _through(tmp: str, path, finish: Callable[[str], None]) -> Iterator[str]:
    """Yield ``tmp``; on success ``finish(tmp)`` and ``path`` recorded in :data:`WRITTEN` at once (a stop signal
    that landed in the removal below, after the rename, ended the command without naming the output it had
    replaced); an OSError names ``path``; on any exit remove ``tmp``. A stop that lands as the rename returns
    (``os.replace`` over an existing file took 2-17 ms here after the new file was in place) records ``path`` too
    when ``tmp`` is gone: renamed, the output is whole (:func:`_renamed`)."""
    finishing = False
    try:
        yield tmp
        raise_if_stopped()         # a stop turned into another exception and caught: nothing published after it
        finishing = True
        finish(tmp)
        WRITTEN.append(str(path))
    except OSError as exc:
        raise _named(exc, tmp, path) from None
    except BaseException:
        if finishing:
            _renamed(tmp, path)
        raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        TEMPORARY.discard(tmp)


def _renamed(tmp: str, path) -> None:
    """Record ``path`` in :data:`WRITTEN` when an exception (a stop signal's) ended :func:`_through`'s ``finish``
    after ``tmp`` was renamed onto it -- ``tmp`` no longer exists: it was made before the caller wrote it, and only
    the rename takes it away -- and it is not recorded yet."""
    if not os.path.lexists(tmp) and str(path) not in WRITTEN:
        WRITTEN.append(str(path))


@contextlib.contextmanager
def atomic_output(path) -> Iterator[str]:
    """Yield a temporary path beside ``path``; on success publish it onto ``path``, on any exit remove it.

    The caller writes the whole output to the yielded path (closing it
    before the block ends). An exception -- or a KeyboardInterrupt or
    SIGTERM raised inside the block -- removes the temporary file and
    leaves ``path`` as it was.

    A symbolic link is followed (the temporary file goes beside its final
    target, which is replaced); an existing character device or FIFO gets
    a temporary file under ``TMPDIR`` that is copied into it (:func:`_copy_into`),
    never replaced.

    Raises:
        OSError: creating, writing or renaming failed; the error names ``path``, never the temporary file.
        UserError: ``path`` is a block device or a socket.
    """
    kind = node_kind(path)
    if kind in REFUSED:
        raise UserError(_refusal("output", path, kind))
    if kind in STREAMED:
        import tempfile  # only for a streamed output: a replay's import path stays without it (test_import_hygiene)
        fd, tmp = create_temporary(tempfile.gettempdir(), ".pcs-output.", ".tmp")
        os.close(fd)
        finish = functools.partial(_copy_into, path=path)
    else:
        target = _resolved(path)
        tmp = _reserve_temporary(target)
        finish = functools.partial(publish, out_path=target)
    with _through(tmp, path, finish) as written:
        yield written


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
    raise FileExistsError(f"{shown_path(folder)}: no free temporary name {prefix}...{suffix} in it")


def _reserve_temporary(target: Path) -> str:
    """Create an empty hidden temporary file beside ``target`` (:func:`create_temporary`).

    Raises:
        OSError: the folder cannot be written (the error names ``target``).
    """
    try:
        fd, tmp = create_temporary(target.parent, f".{target.name}.", ".tmp")
    except FileExistsError as exc:
        raise FileExistsError(f"{shown_path(target)}: no free temporary name beside it") from exc
    except OSError as exc:
        raise _named(exc, exc.filename, target) from None
    os.close(fd)
    return tmp


def same_file(a, b) -> bool:
    """Whether paths ``a`` and ``b`` name one file (the same inode, or the same resolved path)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        try:
            return Path(a).resolve() == Path(b).resolve()
        except (OSError, RuntimeError):     # a link that loops names no file (check_outputs refuses it as such)
            return False


def refuse_one_path(option: str, folder, outputs: Mapping[str, object]) -> None:
    """Refuse an output folder (``--plot DIR``) that is also one of the run's output files: the run would write
    the file, then fail to make the folder (or the reverse) after its work.

    Args:
        option: the folder's option as the user wrote it; folder: its path or None.
        outputs: option -> path (or None) of the run's other outputs.
    Raises:
        UserError: naming both options."""
    if folder is None:
        return
    for opt, path in outputs.items():
        if path is not None and same_file(folder, path):
            raise UserError(f"{option} {shown_path(folder)} and {opt} {shown_path(path)} name one path: give each output its own name")


def _refusal(option: str, path, kind: str) -> str:
    return (f"{option} {shown_path(path)} is {a_or_an(kind)}: pcs writes an output to a file, a FIFO or a character device "
            "(such as /dev/null); give a file name")


#: How to name an output instead of ``-`` (:func:`check_outputs`): any output may stream into a pipe or terminal.
STDOUT_HINT = ", or /dev/stdout to stream it into a pipe"


def _check_one(option: str, path, hint: str = STDOUT_HINT) -> str | None:
    """Refuse one output (see :func:`check_outputs`); returns :func:`node_kind` of it."""
    if str(path) == "-":
        raise UserError(f"{option} -: pcs writes this output to a file, not to stdout; give a file name{hint}")
    if not str(path).strip():
        raise UserError(f"{option} {shown_repr(str(path))}: an empty file name; give a file name")
    try:
        kind = node_kind(path)
    except OSError as exc:
        why = "a symbolic link that loops" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        raise UserError(f"{option} {shown_path(path)}: {why}; give a file name") from None
    if kind == "directory":
        raise IsADirectoryError(errno.EISDIR, f"{option}: is a directory", os.fspath(path))
    if kind in REFUSED:
        raise UserError(_refusal(option, path, kind))
    if kind in STREAMED:
        return kind
    folder = _resolved(path).parent
    if not folder.is_dir():
        what = "does not exist" if not folder.exists() else "is not a folder"
        raise UserError(f"{option} {shown_path(path)}: the folder {shown_repr(str(folder))} {what}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"{option} {shown_path(path)}: the folder {shown_repr(str(folder))} is not writable")
    return kind


def refuse_dash_folder(option: str, path, what: str) -> None:
    """``-`` as an output folder (``--plot``, ``pcs sweep run -o``) refused, as ``-`` is for every output file
    (:func:`check_outputs`), not made into a folder named ``-``.

    Args:
        option: the option as the user wrote it; path: its value (None: not given); what: the folder's content.
    Raises:
        UserError: ``OPTION -: names a folder of WHAT, not stdout; give a folder name``.
    """
    if path is not None and str(path) == "-":
        raise UserError(f"{option} -: names a folder of {what}, not stdout; give a folder name")


def refuse_inputs(outputs: Iterable[tuple[str, object]], inputs: Iterable[tuple[str, object]]) -> None:
    """Refuse an output that names an input file of the run (the same path, a link to it, a hard link).

    Args:
        outputs: ``(option as the user wrote it, path)`` pairs; a None path is skipped.
        inputs: ``(what the input is: "TRACE", "--model" ..., path)`` pairs; None, ``-`` (stdin) and a path
            that does not exist are skipped.
    Raises:
        UserError: ``OPT PATH is also an input file of this run (WHAT); pcs never modifies its inputs: ...``.
    """
    inputs = [(what, src) for what, src in inputs if src is not None and str(src) != "-" and os.path.exists(src)]
    for opt, path in outputs:
        for what, src in inputs if path is not None else ():
            if same_file(path, src):
                raise UserError(f"{opt} {shown_path(path)} is also an input file of this run ({what}); pcs never modifies "
                                 "its inputs: choose another output name")


def check_outputs(outputs: Mapping[str, object], inputs: Mapping[str, object] = {}, hint: str = STDOUT_HINT) -> None:
    """Refuse outputs a run could not write, before the run starts.

    Args:
        outputs: option (as the user wrote it, e.g. ``"--requests-out"``) -> path, or None when not given.
        inputs: what each input is (``"TRACE"``, ``"--azure-csv"`` ...) -> path, or None / ``"-"`` (stdin).
        hint: the end of the message for ``-``, after "give a file name" (:data:`STDOUT_HINT`; an output whose
            suffix picks its format names the suffixes instead: /dev/stdout has none).
    Raises:
        UserError: ``-`` (stdout is not a file) or an empty name; the output's folder is
            missing, not a folder or not writable; an output is also an
            input; two outputs name one file (two may name one character
            device, ``/dev/null``); an output is a block device, a socket
            or a symbolic link that loops.
        IsADirectoryError: an output is a directory.
    """
    given = [(opt, p) for opt, p in outputs.items() if p is not None]
    for i, (opt, path) in enumerate(given):
        kind = _check_one(opt, path, hint)
        refuse_inputs([(opt, path)], inputs.items())
        for opt2, path2 in given[:i]:
            if kind != "character device" and same_file(path, path2):
                raise UserError(f"{opt} {shown_path(path)} and {opt2} {shown_path(path2)} name one file: give each output its own name")
