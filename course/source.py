"""Show the CUDA C of a kernel, straight from its `.cu` file, and print small tables.

Notebooks display code and numbers with these, so what the learner reads is always the
code that runs, and the same text comes out on a GPU and on the emulator.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .compiler import read_kernel


def kernel_source(filename: str, name: str) -> str:
    """The text of function `name` in `course/kernels/<filename>`, with the comment block above it.

    A function the file takes from a course header it includes (`common.cuh`) is found there."""
    text = read_kernel(filename)
    lines = text.splitlines()
    pattern = re.compile(r"\b" + re.escape(name) + r"\s*\(")
    start = next(  # a definition starts at the left margin; calls and comments do not
        (i for i, ln in enumerate(lines) if pattern.search(ln) and ln[:1].strip() and ln[0] not in "/*#"),
        None,
    )
    if start is None:
        for header in re.findall(r'^\s*#\s*include\s*"([^"]+)"', text, re.M):
            try:
                return kernel_source(header, name)
            except (KeyError, FileNotFoundError):
                continue
        raise KeyError(f"no function {name!r} in {filename}")
    while start > 0 and (
        lines[start - 1].lstrip().startswith(("//", "template")) or not lines[start - 1].strip()
    ):
        if not lines[start - 1].strip() and not lines[start - 2].lstrip().startswith("//"):
            break
        start -= 1
    while start < len(lines) and not lines[start].strip():
        start += 1
    depth, end, opened = 0, start, False
    for end in range(start, len(lines)):
        depth += lines[end].count("{") - lines[end].count("}")
        opened = opened or "{" in lines[end]
        if opened and depth == 0:
            break
    return "\n".join(lines[start : end + 1])


class Code:
    """CUDA source that Jupyter shows highlighted and nbval compares as plain text."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        # fenced Markdown: JupyterLab highlights it, and unlike Pygments' HTML the text does not
        # depend on the versions installed, so nbval compares the same output everywhere
        return f"```cuda\n{self.text}\n```"


def show(filename: str, *names: str) -> Code:
    """The named functions of a kernel file, for display in a notebook cell."""
    return Code("\n\n".join(kernel_source(filename, n) for n in names))


def table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None) -> str:
    """Rows of dicts as an aligned plain-text table (floats to 3 significant digits)."""
    rows = list(rows)
    if not rows:
        return "(no rows)"
    cols = list(columns or rows[0].keys())

    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3g}"
        return str(v)

    cells = [[fmt(r.get(c, "")) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    head = "  ".join(c.rjust(w) for c, w in zip(cols, widths))
    body = ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join([head, "  ".join("-" * w for w in widths), *body])


class Table(list):  # type: ignore[type-arg]
    """Rows of dicts that a notebook shows as an aligned text table (the same text on every
    backend); an empty table shows its `note` instead (e.g. why there is nothing to time)."""

    def __init__(
        self, rows: Iterable[Mapping[str, Any]] = (), *, note: str = "", columns: Sequence[str] | None = None
    ):
        super().__init__(rows)
        self.note = note
        self.columns = columns

    def __repr__(self) -> str:
        return table(self, self.columns) if self else self.note or "(no rows)"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))
