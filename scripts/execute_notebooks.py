"""Execute notebooks in place, the way they are committed (on a GPU if there is one).

    python scripts/execute_notebooks.py                                 # every notebook, in order
    python scripts/execute_notebooks.py notebooks/05_reduction.ipynb   # the ones named

Cells marked `# NBVAL_RAISES_EXCEPTION` are expected to fail; any other error stops the run.
The widgets' state is stored with the notebook, so a reader on GitHub sees the panel as it was
(its picture, its numbers), not `VBox(...)`.
"""

from __future__ import annotations

import sys
from pathlib import Path

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
        if errors and "NBVAL_RAISES_EXCEPTION" not in cell.source:
            raise SystemExit(f"{path}: unexpected error in cell:\n{cell.source}\n{errors[0]['evalue']}")
    nbformat.write(nb, path)
    print(f"executed {path}")


def main(args: list[str]) -> None:
    for path in [Path(a) for a in args] or sorted(NOTEBOOKS.glob("*.ipynb")):
        execute(path)


if __name__ == "__main__":
    main(sys.argv[1:])
