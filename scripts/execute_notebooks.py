"""Execute notebooks in place, the way they are committed (on a GPU if there is one).

    python scripts/execute_notebooks.py                                 # every notebook, in order
    python scripts/execute_notebooks.py notebooks/05_reduction.ipynb   # the ones named

No cell may fail (a cell that shows an error on purpose catches it with `course.expect_error()`,
so Run All goes on in every front end). The widgets' state is stored with the notebook, so a
reader on GitHub sees the panel as it was (its picture, its numbers), not `VBox(...)`; its numbers
are written as JupyterLab writes them (6, not 6.0), so opening and saving the notebook changes
nothing. The exercises' progress goes to a fresh file: the notebooks are committed unsolved.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def execute(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=900, allow_errors=True, store_widget_state=True,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()  # fmt: skip
    for cell in nb.cells:
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors:
            raise SystemExit(f"{path}: error in cell:\n{cell.source}\n{errors[0]['evalue']}")
    if "widgets" in nb.metadata:
        nb.metadata["widgets"] = as_javascript_writes(nb.metadata["widgets"])
    nbformat.write(nb, path)
    print(f"executed {path}")


def as_javascript_writes(value: Any) -> Any:
    """JSON numbers as JupyterLab writes them: a whole float is an integer (6.0 -> 6)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: as_javascript_writes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_javascript_writes(v) for v in value]
    return value


def main(args: list[str]) -> None:
    os.environ["COURSE_PROGRESS_FILE"] = os.path.join(tempfile.mkdtemp(), "progress.json")
    for path in [Path(a) for a in args] or sorted(NOTEBOOKS.glob("*.ipynb")):
        execute(path)


if __name__ == "__main__":
    main(sys.argv[1:])
