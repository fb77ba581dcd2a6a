"""Execute notebooks in place, the way they are committed (on a GPU if there is one).

    python scripts/execute_notebooks.py notebooks/05_reduction.ipynb

Cells marked `# NBVAL_RAISES_EXCEPTION` are expected to fail; any other error stops the run.
Widget state (the panel's picture as PNG bytes) is not stored: it only bloats the file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=900, allow_errors=True, resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    for cell in nb.cells:
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors and "NBVAL_RAISES_EXCEPTION" not in cell.source:
            raise SystemExit(f"{path}: unexpected error in cell:\n{cell.source}\n{errors[0]['evalue']}")
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)
    print(f"executed {path}")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        execute(Path(arg))
