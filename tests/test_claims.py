"""The claims check (course/claims.py, `python -m course.claims`) on the committed notebooks, and on
small made-up ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course import claims

ROOT = Path(__file__).resolve().parents[1]
problems, tables = claims.problems, claims.tables


@pytest.mark.parametrize("path", claims.NOTEBOOKS, ids=lambda p: p.stem)
def test_every_gpu_figure_in_the_text_is_what_its_table_prints(path: Path) -> None:
    found = problems(json.loads(path.read_text())["cells"])
    assert not found, f"{path.name}:\n  " + "\n  ".join(found)


# ---------------------------------------------------------------- the check itself

TABLE = """\
blocks  blocks per SM  bytes in flight per SM    µs  % of copy
------  -------------  ----------------------  ----  ---------
   132              1                    1024   757       8.77
  1056              8                    8192  90.1       90.2
"""


def _notebook(markdown: str, output: str = TABLE, call: str = "latency_table()") -> list[dict]:
    code = {"cell_type": "code", "source": [call], "outputs": [{"output_type": "stream", "text": [output]}]}
    return [{"cell_type": "markdown", "source": [markdown]}, code]


def test_the_check_reads_the_row_and_column_the_marker_names() -> None:
    assert tables(TABLE)[0].header == ["blocks", "blocks per SM", "bytes in flight per SM", "µs", "% of copy"]
    ok = "reaches 90 %<!-- from latency_table: % of copy @ blocks=1056 --> of the copy in 90.1 µs<!-- from latency_table: µs @ blocks per SM=8 -->"
    assert problems(_notebook(ok)) == []
    assert problems(_notebook("8.8 %<!-- from latency_table: % of copy @ blocks=132 --> of the copy")) == []


@pytest.mark.parametrize(
    ("markdown", "says"),
    [
        ("reaches 92 %<!-- from latency_table: % of copy @ blocks=1056 --> of the copy", "the text says 92"),
        ("reaches 90.20 %<!-- from latency_table: % of copy @ blocks=1056 -->", ""),
        ("takes 757 µs when one block per SM", "has no <!-- from"),
        ("reaches 90 % of the copy", "has no <!-- from"),
        ("757 µs<!-- from latency_table: µs @ blocks=999 -->", "0 rows"),
        ("757 µs<!-- from latency_table: µs -->", "2 rows"),
        ("757 µs<!-- from other_table: µs @ blocks=132 -->", "0 code cells call other_table("),
        ("4.8 TB/s<!-- given: rumour -->", "one of article"),
    ],
)
def test_the_check_fails_a_figure_its_table_does_not_say(markdown: str, says: str) -> None:
    found = problems(_notebook(markdown))
    if says:
        assert len(found) == 1 and says in found[0], found
    else:  # 90.20 written: two decimals, the table prints 90.2 = 90.20
        assert found == []


def test_given_figures_need_no_table() -> None:
    assert (
        problems(
            _notebook("H200: 4.8 TB/s<!-- given: datasheet -->; the article's 8.05 ms<!-- given: article -->")
        )
        == []
    )


def test_update_rewrites_the_figures_in_the_source_as_the_text_rounds_them(tmp_path: Path) -> None:
    marked = "in 90.5 µs<!-- from latency_table: µs @ blocks=1056 --> and 9 %<!-- from latency_table: % of copy @ blocks=132 --> of the copy"
    (tmp_path / "sources").mkdir()
    source = tmp_path / "sources" / "01_x.py"
    source.write_text(f"# %% [markdown]\n# It runs {marked}.\n\n# %%\nlatency_table()\n")
    notebook = tmp_path / "01_x.ipynb"
    notebook.write_text(json.dumps({"cells": _notebook(f"It runs {marked}.")}))
    assert claims.update(notebook) == ["90.5 -> 90.1  (latency_table: µs @ blocks=1056)"]
    assert "in 90.1 µs<!-- from latency_table: µs @ blocks=1056 -->" in source.read_text()
    assert "9 %<!--" in source.read_text()  # 8.77 rounds to 9: as written


def test_the_command_names_each_figure_that_disagrees(tmp_path: Path) -> None:
    """`python -m course.claims NOTEBOOK`: 1 and the drifted figure, 0 once the text agrees."""
    import subprocess
    import sys

    notebook = tmp_path / "01_x.ipynb"
    notebook.write_text(
        json.dumps({"cells": _notebook("in 90.5 µs<!-- from latency_table: µs @ blocks=1056 -->")})
    )
    command = [sys.executable, "-m", "course.claims", str(notebook)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "01_x: cell 0: the text says 90.5" in done.stdout, (
        done.stdout + done.stderr
    )
    notebook.write_text(
        json.dumps({"cells": _notebook("in 90.1 µs<!-- from latency_table: µs @ blocks=1056 -->")})
    )
    assert subprocess.run(command, capture_output=True, text=True, timeout=120).returncode == 0


def _short_rows() -> str:
    """A table as the course prints it, whose middle row's last cells are empty (scan.pass_table's)."""
    from course.table import Table

    blank = {"MB moved": "", "% of copy": "", "error": ""}
    return str(Table([
        {"pass": "read + write copy", "µs": 713, "MB moved": 2150.0, "% of copy": 100, "error": ""},
        {"pass": "the tile totals: 3 small launches", "µs": 15.3, **blank},
        {"pass": "add_tile_prefix alone", "µs": 849, "MB moved": 2150.0, "% of copy": 83.6, "error": 1.87e-07},
    ]))  # fmt: skip


SHORT_ROWS = _short_rows()


def test_a_row_whose_last_cells_are_empty_does_not_end_the_table() -> None:
    (t,) = tables(SHORT_ROWS)
    assert [r[0] for r in t.rows] == [
        "read + write copy",
        "the tile totals: 3 small launches",
        "add_tile_prefix alone",
    ]
    md = "84 %<!-- from pass_table: % of copy @ pass=add_tile_prefix alone --> of a copy"
    assert problems(_notebook(md, SHORT_ROWS, "pass_table()")) == []


@pytest.mark.parametrize(
    ("written", "ok"), [("1.87e-07", True), ("1.9e-07", True), ("1.8e-07", False), ("2e-07", True)]
)
def test_a_figure_in_e_notation_is_rounded_on_its_mantissa(written: str, ok: bool) -> None:
    md = f"an error of {written}<!-- from pass_table: error @ pass=add_tile_prefix alone --> GB/s"
    assert (problems(_notebook(md, SHORT_ROWS, "pass_table()")) == []) is ok


def test_the_command_takes_a_notebooks_stem(capsys: pytest.CaptureFixture[str]) -> None:
    stem = claims.NOTEBOOKS[0].stem
    assert claims.main([stem]) == 0
    with pytest.raises(SystemExit, match="give a path, or a stem"):
        claims.main(["no_such_notebook"])
