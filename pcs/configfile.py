"""Read a small settings file (TOML or JSON) into a dict.

Used by ``pcs budget --workloads`` and ``--hardware-file``. TOML needs
Python >= 3.11 (stdlib ``tomllib``) or the ``tomli`` package.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pcs.errors import InputError

__all__ = ["read_mapping"]


def read_mapping(path: str | Path) -> dict[str, Any]:
    """Parse ``path`` (``.toml`` or ``.json``) into a dict.

    Raises:
        FileNotFoundError: no such file.
        InputError: invalid JSON/TOML (with the line where known) or a top
            level that is not a table/object.
        ValueError: another suffix, or TOML without a parser available.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    suffix = path.suffix.lower()
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(str(path), exc.lineno, None, f"invalid JSON: {exc.msg}") from None
    elif suffix == ".toml":
        try:
            import tomllib  # Python >= 3.11
        except ModuleNotFoundError:  # pragma: no cover - Python 3.10
            try:
                import tomli as tomllib  # type: ignore[no-redef]
            except ModuleNotFoundError:
                raise ValueError(f"{path}: reading TOML needs Python 3.11+ or the tomli package; "
                                 "use a .json file instead") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(str(path), None, None, f"invalid TOML: {exc}") from None
    else:
        raise ValueError(f"{path}: unknown file type {path.suffix!r}; expected .toml or .json")
    if not isinstance(data, dict):
        raise InputError(str(path), None, None, "top level must be a table/object")
    return data
