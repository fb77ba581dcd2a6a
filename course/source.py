"""Show the CUDA C of a kernel, straight from its `.cu` file.

Notebooks display code with these, so what the learner reads is always the code that runs.
(`Table` and `table`, which print small tables, are course/table.py's; `course.source.Table`
is kept for the code that imports it from here.)
"""

from __future__ import annotations

import re

from .compiler import read_kernel
from .table import Table, table  # noqa: F401  (their old home)


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
