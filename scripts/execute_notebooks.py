"""Execute notebooks in place, the way they are committed (on a GPU if there is one).

    python scripts/execute_notebooks.py                                 # every notebook, in order
    python scripts/execute_notebooks.py notebooks/05_reduction.ipynb   # the ones named
    python scripts/execute_notebooks.py --dry-run                       # which, without running them

No cell may fail (a cell that shows an error on purpose catches it with `course.expect_error()`,
so Run All goes on in every front end). The widgets' state is stored with the notebook, so a
reader on GitHub sees the panel as it was (its picture, its numbers), not `VBox(...)`; its numbers
are written as JupyterLab writes them (6, not 6.0), so opening and saving the notebook changes
nothing. The exercises' progress goes to a fresh file: the notebooks are committed unsolved.
"""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to execute (default: every one)")
    parser.add_argument("--dry-run", action="store_true", help="print the notebooks, execute none")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    if args.dry_run:
        print("\n".join(map(str, paths)))
        return 0
    os.environ["COURSE_PROGRESS_FILE"] = os.path.join(tempfile.mkdtemp(), "progress.json")
    for path in paths:
        execute(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
