"""Finding a command-line tool of the CUDA toolkit (ncu, compute-sanitizer) on a GPU machine: the
path the user gave, else the first executable of the places it is usually installed."""

from __future__ import annotations

import glob
import os
import shutil
from collections.abc import Sequence


def _executable(path: str | None) -> bool:
    return path is not None and os.path.isfile(path) and os.access(path, os.X_OK)


def newest(pattern: str) -> list[str]:
    """The paths matching `pattern`, newest version (highest name) first."""
    return sorted(glob.glob(pattern), reverse=True)


def find_tool(name: str, explicit: str | None, flag: str, places: Sequence[str | None], searched: str) -> str:
    """`explicit` when given (FileNotFoundError naming `flag` if it is no executable), else `name` on
    PATH, else the first executable of `places`; FileNotFoundError saying where it was `searched`."""
    if explicit:
        if not _executable(explicit):
            raise FileNotFoundError(f"{flag} {explicit}: no such executable")
        return explicit
    for c in [shutil.which(name), *places]:
        if c is not None and _executable(c):
            return c
    raise FileNotFoundError(f"{name} not found: {searched}")
