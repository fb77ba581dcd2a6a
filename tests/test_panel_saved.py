"""A panel in a saved notebook: what a front end that cannot draw the widget finds in the file."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_a_saved_panel_output_holds_its_picture_and_its_words_beside_the_widget(tmp_path: Path) -> None:
    from PIL import Image

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell('import course\ncourse.set_backend("emulator")'),
        nbformat.v4.new_code_cell(
            'from course import reduction\nreduction.panel(version="reduce3", n=300, block=64)'
        ),
    ]
    nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    ).execute()
    path = tmp_path / "panel.ipynb"
    nbformat.write(nb, path)
    (output,) = nbformat.read(path, as_version=4).cells[1].outputs
    assert output.output_type == "execute_result"  # the cell's last expression, as in the notebooks
    data = output.data
    assert set(data) == {WIDGET_VIEW, "image/png", "text/html", "text/plain"}
    picture = Image.open(io.BytesIO(base64.b64decode(data["image/png"])))  # nbformat stores base64
    assert picture.size[0] == 900  # the panel's 9 inches at 100 dpi
    assert data["text/plain"].startswith("reduce3 N=300 block=64: matches NumPy")
    assert "reduce3" in data["text/html"] and data["image/png"].strip() in data["text/html"]
