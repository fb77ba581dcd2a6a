"""Small tables as notebooks print them: rows of dicts as aligned plain text, the same text on a GPU
and on the emulator (so nbval compares them), and an empty table that says why it is empty."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


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
