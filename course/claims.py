"""Claims that hold: every GPU figure a notebook's markdown quotes is tied to the table it reads.

    python -m course.claims             # each marked figure: written, printed, and what disagrees
    python -m course.claims --update notebooks/01_dot.ipynb   # rewrite its disagreeing figures in its
                                        # source notebooks/sources/01_dot.py (default: every notebook)
                                        # (then re-read each sentence, and jupytext --update)


A figure is marked by an HTML comment right after its number and unit (invisible when rendered):

    the copy reaches 90 %<!-- from latency_table: % of copy @ blocks=1056 --> of ...

`latency_table` names the one code cell whose source calls `latency_table(`; its committed text
output holds the table in the course's printed form (a header line, a line of dash runs, rows).
After the colon the column's header; after `@`, `column=cell text` pairs that pick one row. The
number as written must be the cell's value rounded to the decimals written. A figure that comes
from no run says where it comes from: `<!-- given: article -->` (or datasheet, model, reference).
Every number followed by µs, ms, GB/s, TB/s or "% of (the) copy" carries one of the two markers.

The notebooks are checked as committed (executed on a GPU), so a re-run that moves a figure past
the sentence's rounding fails here until the sentence is read again (tests/test_claims.py runs
this check in the test suite). It reads the repository's notebooks, so it runs from a checkout.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository (an editable install)
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
GIVEN = ("article", "datasheet", "model", "reference")

NUMBER = r"[-+−]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?"
MARKER = re.compile(r"<!--\s*(from|given)\b\s*:?(.*?)-->", re.S)
# a figure with a GPU unit: µs, ms, GB/s, TB/s, or a percentage of the copy
UNIT = r"(?:µs|us|ms|[GT]B/s)\b|%(?=\s*(?:<!--.*?-->\s*)?of (?:the )?(?:device )?copy)"
UNIT_AFTER = r"\s*(?:µs|us|ms|[GT]B/s|%|×|x)?\s*"  # between a marked number and its marker
FIGURE = re.compile(rf"({NUMBER})\s*({UNIT})(\s*<!--)?", re.S)


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[str]]


def tables(text: str) -> list[Table]:
    """The course's printed tables in an output's text: a header, a line of dash runs (one run per
    column: its span is the column's), rows up to the first blank line or one that does not reach the
    end of the first column (a row whose last cells are empty is shorter than the rest: still a row)."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if i == 0 or not re.fullmatch(r"\s*-+(?:\s+-+)*\s*", line):
            continue
        spans = [m.span() for m in re.finditer(r"-+", line)]

        def cut(row: str, spans: list[tuple[int, int]] = spans) -> list[str]:
            edges = [s for s, _ in spans[1:]] + [max(len(row), spans[-1][1])]
            starts = [0] + [e + 1 for _, e in spans[:-1]]
            return [row[a:b].strip() for a, b in zip(starts, edges)]

        rows = []
        for row in lines[i + 1 :]:
            if not row.strip() or len(row.rstrip()) < spans[0][1]:
                break
            rows.append(cut(row))
        found.append(Table(cut(lines[i - 1]), rows))
    return found


def output_text(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append("".join(out["text"]))
        elif "text/plain" in out.get("data", {}):
            parts.append("".join(out["data"]["text/plain"]))
    return "\n".join(parts)


def _number(text: str) -> float:
    return float(text.replace(",", "").replace("−", "-"))


def _decimals(written: str) -> int:
    mantissa = re.split(r"[eE]", written)[0]
    return len(mantissa.split(".")[1]) if "." in mantissa else 0


def read(cells: list[dict], source: str) -> str:
    """The cell a `from` marker names, read: its value as printed, or why it cannot be read."""
    name, _, rest = source.partition(":")
    column, _, where = rest.partition("@")
    name, column = name.strip(), column.strip()
    calls = [c for c in cells if c["cell_type"] == "code" and f"{name}(" in "".join(c["source"])]
    if len(calls) != 1:
        raise LookupError(f"{len(calls)} code cells call {name}(, not 1")
    pairs = [p.split("=", 1) for p in where.split(",") if p.strip()] if where.strip() else []
    if any(len(p) != 2 for p in pairs):
        raise LookupError(f"the row is picked by column=text pairs, not {where.strip()!r}")
    picked = []
    for table in tables(output_text(calls[0])):
        if column not in table.header:
            continue
        index = {h: k for k, h in enumerate(table.header)}
        if any(k.strip() not in index for k, _ in pairs):
            continue
        for row in table.rows:
            if all(row[index[k.strip()]] == v.strip() for k, v in pairs):
                picked.append(row[index[column]])
    if len(picked) != 1:
        raise LookupError(
            f"{len(picked)} rows of {name}'s tables have a {column!r} column and {where.strip()!r}"
        )
    return picked[0]


def markers(cells: list[dict]) -> list[tuple[int, str, str, str | None]]:
    """(markdown cell, "from" or "given", the marker's body, the number written just before it or
    None) for every marker of the notebook's markdown."""
    out = []
    for k, cell in enumerate(cells):
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"])
            for m in MARKER.finditer(text):
                before = re.search(rf"({NUMBER}){UNIT_AFTER}$", text[: m.start()])
                out.append((k, m.group(1), m.group(2).strip(), before.group(1) if before else None))
    return out


def _drifted(written: str, value: float) -> bool:
    """Whether `value`, rounded to the decimals `written` has (of its mantissa, for 1.87e-07), is not
    the number written."""
    mantissa, _, exponent = written.lower().partition("e")
    scale = 10.0 ** int(exponent) if exponent else 1.0
    return abs(round(value / scale, _decimals(mantissa)) - _number(mantissa)) > 1e-9 * max(
        1.0, abs(value / scale)
    )


def problems(cells: list[dict]) -> list[str]:
    """Each figure of the markdown that is unmarked, or that its table does not say."""
    found = []
    for k, cell in enumerate(cells):
        if cell["cell_type"] == "markdown":
            for m in FIGURE.finditer("".join(cell["source"])):
                if not m.group(3):
                    found.append(
                        f"cell {k}: {m.group(1)} {m.group(2)} has no <!-- from ... --> or <!-- given ... -->"
                    )
    for k, kind, body, written in markers(cells):
        if kind == "given":
            if (body.split() or [""])[0] not in GIVEN:
                found.append(f"cell {k}: 'given' says {body!r}; it is one of {', '.join(GIVEN)}")
            continue
        if written is None:
            found.append(f"cell {k}: no number before <!-- from {body} -->")
            continue
        try:
            printed = read(cells, body)
            value = _number(printed)
        except (LookupError, ValueError) as e:
            found.append(f"cell {k}: {written} <!-- from {body} -->: {e}")
            continue
        if _drifted(written, value):
            found.append(f"cell {k}: the text says {written}, {body} prints {printed}")
    return found


def disagreements(path: Path) -> list[tuple[str, str, str]]:
    """(written, the marker's body, the value to write) for each marked figure its table does not
    say, rounded as the text rounds it."""
    cells = json.loads(path.read_text())["cells"]
    out = []
    for _, kind, body, written in markers(cells):
        if kind != "from" or written is None:
            continue
        try:
            value = _number(read(cells, body))
        except (LookupError, ValueError):
            continue  # problems() says why
        if _drifted(written, value):
            out.append((written, body, f"{value:.{_decimals(written)}f}"))
    return out


def update(path: Path) -> list[str]:
    """Rewrite the disagreeing figures in the notebook's py:percent source; what changed."""
    source = path.parent / "sources" / f"{path.stem}.py"
    text, changed = source.read_text(), []
    for written, body, new in disagreements(path):
        pattern = re.compile(
            rf"(?<![\d.]){re.escape(written)}({UNIT_AFTER}<!--\s*from\s*:?\s*{re.escape(body)}\s*-->)"
        )
        text, n = pattern.subn(new + r"\g<1>", text)  # the new figure, then what followed the old
        if n:
            changed.append(f"{written} -> {new}  ({body})")
    source.write_text(text)
    return changed


def _notebook(given: Path) -> Path:
    """A notebook's path, or its stem ("02_transpose") as the notebooks folder holds it."""
    if given.exists():
        return given.resolve()
    stem = ROOT / "notebooks" / f"{given.stem}.ipynb"
    if not stem.exists():
        raise SystemExit(f"no notebook {given}: give a path, or a stem such as {NOTEBOOKS[0].stem}")
    return stem


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="rewrite disagreeing figures in the sources")
    parser.add_argument("notebooks", nargs="*", type=Path, help="the notebooks to check (default: all)")
    args = parser.parse_args(argv)
    bad = 0
    for path in [_notebook(p) for p in args.notebooks] or NOTEBOOKS:
        if args.update:
            for line in update(path):
                print(f"{path.stem}: {line}")
        for line in problems(json.loads(path.read_text())["cells"]):
            print(f"{path.stem}: {line}")
            bad += 1
    if args.update:
        print(
            "re-read each changed sentence, then: jupytext --to ipynb --update notebooks/sources/NN.py -o notebooks/NN.ipynb"
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
