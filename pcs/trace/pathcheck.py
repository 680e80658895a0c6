"""The refusals of input paths, one place for every public function that reads one: a file object or a bytes
path where a trace path goes (``pcs.replay``, ``pcs.curve``, ``pcs.fleet_replay``, ``pcs.open_trace`` alike);
a path that is missing, a directory where a file goes (a file where a folder goes), or not readable
(:func:`check_input_file`, :func:`check_input_dir`: a :class:`pcs.errors.PathError` naming the path and the
keyword, where ``open`` would raise ``FileNotFoundError`` / ``IsADirectoryError`` / ``PermissionError``); an empty
or blank path (:func:`refuse_empty_path`, the rule the command line follows too: :func:`pcs.cli.iofiles.refuse_empty_paths`)."""
from __future__ import annotations

import errno
import io
import os
import stat
from typing import Any

from pcs.errors import PathError, UserError, quoted

__all__ = ["refuse_file_objects", "check_input_file", "check_output_file", "check_input_dir", "check_regular_file", "refuse_empty_path",
           "empty_path_problem", "path_problem", "dangling_link_problem"]

#: What an empty path is refused for taking, by what the parameter names (:func:`empty_path_problem`).
FILE_WANTED, FOLDER_WANTED = "a file name", "a folder name (. for the current folder)"


def empty_path_problem(wanted: str = FILE_WANTED) -> str:
    """The one reason an empty or blank path is refused, by the API (:func:`refuse_empty_path`) and the command
    line (:func:`pcs.cli.iofiles.refuse_empty_paths`): ``an empty path; give a file name``."""
    return f"an empty path; give {wanted}"


def refuse_empty_path(path: Any, keyword: str, folder: bool = False) -> None:
    """Refuse an empty or blank ``str`` path before it is read as the current folder (``Path('')`` is ``.``:
    ``path='.': Is a directory``, and a results folder ``''`` read the current one). Call it before the path
    becomes a ``pathlib.Path`` (``Path('')`` cannot be told from ``Path('.')``); anything else passes.

    Raises:
        PathError: ``path='': an empty path; give a file name`` (``folder``: a folder name), naming ``keyword``.
    """
    if isinstance(path, str) and not path.strip():
        raise PathError(path, keyword, empty_path_problem(FOLDER_WANTED if folder else FILE_WANTED))


def _path_problem(path: Any, folder: bool) -> str | None:
    """Why ``path`` cannot be read as a file (``folder``: as a folder), in the words of ``os.strerror``; None
    when it can (a FIFO or a device passes: :func:`pcs.trace.source.check_source` grades those)."""
    return path_problem(path, file_ok=not folder, dir_ok=folder)


def path_problem(path: Any, file_ok: bool = True, dir_ok: bool = True, missing_ok: bool = False,
                 readable: bool = True, writable: bool = False) -> str | None:
    """Why ``path`` is refused, in the words of ``os.strerror`` (``No such file or directory``, ``Is a directory``,
    ``Not a directory``, ``Permission denied``), or None: the one rule of the API's path checks
    (:func:`check_input_file`, :func:`check_input_dir`) and the command line's (:class:`pcs.cli.params.CheckedPath`).

    Args:
        path: str or os.PathLike. file_ok / dir_ok: whether a file (anything not a folder: a FIFO, a device) /
            a folder may stand there. missing_ok: a path that does not exist passes (an output) -- but for a
            folder (not ``file_ok``) a symbolic link to a missing target, which no folder can be made at (it
            said ``File exists`` once the run made its folder): :func:`dangling_link_problem`.
        readable, writable: an existing path must be readable / writable (a folder: searchable too, either way).
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if missing_ok and not file_ok and os.path.islink(path):
            return dangling_link_problem(path)
        return None if missing_ok else os.strerror(errno.ENOENT)
    except OSError as exc:     # a parent that is a file (ENOTDIR), no permission on a parent, a loop ...
        return None if missing_ok else exc.strerror or str(exc)
    folder = stat.S_ISDIR(st.st_mode)
    if (folder and not dir_ok) or (not folder and not file_ok):
        return os.strerror(errno.EISDIR if folder else errno.ENOTDIR)
    wanted = (os.R_OK if readable else 0) | (os.W_OK if writable else 0)
    wanted |= os.X_OK if folder and wanted else 0
    if wanted and not os.access(path, wanted):
        return os.strerror(errno.EACCES)
    return None


def dangling_link_problem(path: Any) -> str:
    """Why a symbolic link whose target does not exist is refused where a folder is to be made (an output folder:
    ``--plot``, ``pcs sweep run -o``): ``a symbolic link to 'T', which does not exist; give a folder name`` (the
    target as the link holds it, escaped and cut by :func:`pcs.errors.quoted`)."""
    try:
        target = quoted(os.readlink(path), 200, show=repr)
    except OSError:     # gone or changed since: say what it was
        return "a symbolic link to a missing target; give a folder name"
    return f"a symbolic link to {target}, which does not exist; give a folder name"


def check_input_file(path: Any, keyword: str) -> None:
    """Refuse an input file that is missing, a directory or not readable, before anything opens it;
    ``-`` (stdin) passes.

    Args:
        path: str or os.PathLike, as the caller gave it.
        keyword: the argument that named it, as the public function spells it (``"trace"``, ``"path"``).
    Raises:
        PathError: naming ``path`` and ``keyword``, e.g. ``trace='t.jsonl': No such file or directory``; an
            empty or blank path (:func:`refuse_empty_path`).
    """
    if str(path) == "-":
        return
    refuse_empty_path(path, keyword)
    problem = _path_problem(path, folder=False)
    if problem:
        raise PathError(os.fspath(path), keyword, problem + _unit_alone(path, problem))


def check_output_file(path: Any, keyword: str) -> None:
    """Refuse an output file path that is empty or blank (:func:`refuse_empty_path`) or names an existing folder
    (``Path('')`` is ``.``; ``out_path='runs'``), before any work: the one check of every public function that
    writes a file (:func:`pcs.trace.convert.write_trace`, :func:`pcs.trace.convert.convert`,
    :func:`pcs.trace.chat.write_token_rows`, :func:`pcs.report.html.write_file`, :func:`pcs.report.html.write_report`).
    Writing there failed late, with the system's words about the temporary file's rename (``OSError [Errno 16]
    Device or resource busy: '.'``, ``IsADirectoryError``). A symbolic link to a folder is a folder; a missing
    path, a file, a FIFO or a device passes (:func:`pcs.outfile.atomic_output` grades those).

    Raises:
        PathError: naming ``path`` and ``keyword``, ``out_path='.': Is a directory``.
    """
    refuse_empty_path(path, keyword)
    if isinstance(path, (str, bytes, os.PathLike)) and os.path.isdir(path):     # an int is a descriptor to isdir
        raise PathError(os.fsdecode(path), keyword, os.strerror(errno.EISDIR))


def _unit_alone(path: Any, problem: str) -> str:
    """A hint for a missing input named like a unit of :data:`pcs.units.BYTE_UNITS` (``GB``, ``TiB``, ``GB/s``)
    or ``blocks``: on a command line, a size written with a space (``--tier gpu=200 GB``) leaves its unit as the
    next argument, which is then read as the trace; else ``""``."""
    from pcs.units import BYTE_UNITS

    name = os.fspath(path).lower()
    name = name[:-2] if name.endswith("/s") else name
    if problem != os.strerror(errno.ENOENT) or not (name in BYTE_UNITS and name or name in ("block", "blocks")):
        return ""
    unit = os.fspath(path)
    return f" (a unit alone: a value written with a space before its unit, as '200 {unit}'? write '200{unit}')"


def check_regular_file(path: Any, name: str | None = None) -> None:
    """Refuse a settings input (a model config, hardware or workloads file, sweep plan, report JSON, tokenizer,
    compute table) that is not a regular file: a FIFO would block ``open`` until a writer came, a socket or a
    device is no settings file. Traces take pipes and stdin (spooled, :mod:`pcs.trace.source`); these do not.
    Call after :func:`check_input_file` (a missing path is its error).

    Raises:
        InputError: ``NAME: not a regular file`` (``name``: the path as the user wrote it).
    """
    from pcs.errors import InputError

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return      # check_input_file's to say
    if not stat.S_ISREG(mode):
        raise InputError(name or os.fspath(path), None, None, "not a regular file")


def check_input_dir(path: Any, keyword: str) -> None:
    """Refuse an input folder (a sweep's output) that is missing, a file or not readable.

    Raises:
        PathError: naming ``path`` and ``keyword``, e.g. ``out='runs': Not a directory``; an empty or blank
            path (:func:`refuse_empty_path`).
    """
    refuse_empty_path(path, keyword, folder=True)
    problem = _path_problem(path, folder=True)
    if problem:
        raise PathError(os.fspath(path), keyword, problem)


def refuse_file_objects(source: Any) -> None:
    """Refuse a bytes / bytearray path and an open file object (anything with ``read``), naming the type and the
    spelling pcs takes; anything else passes.

    Raises:
        UserError: a bytes path (give ``os.fsdecode(path)``) or a file object (give its path: ``f.name``).
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        raise UserError(f"a trace path must be a str or pathlib.Path, got {type(source).__name__} "
                        f"{quoted(bytes(source), 60, show=repr)}: pass os.fsdecode(path)")
    if isinstance(source, io.IOBase) or (hasattr(source, "read") and not hasattr(source, "iter_batches")):
        raise UserError(f"a trace is read from its path, not a file object ({type(source).__name__}): pass the "
                        "file's path (f.name), a pcs.trace.Trace or a list of requests")
