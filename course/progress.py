"""Which exercises the learner has done, kept in a small local file: no account, no network.

The file is `COURSE_PROGRESS_FILE`, else `$XDG_DATA_HOME/gpu-patterns-course/progress.json`, else
under ~/.local/share. A home that is missing or read-only only means progress is not saved: a
check never fails for it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

_unsaved: dict[str, dict[str, Any]] = {}  # what could not be written, kept for this process
_saving = True  # False once a write failed


def path() -> Path:
    if env := os.environ.get("COURSE_PROGRESS_FILE"):
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "gpu-patterns-course" / "progress.json"


def load() -> dict[str, dict[str, Any]]:
    """{exercise key: {"done": bool, "tries": int, "when": seconds}} (empty when nothing is saved)."""
    try:
        data = json.loads(path().read_text())
        saved = data if isinstance(data, dict) else {}
    except (OSError, ValueError, RuntimeError):  # RuntimeError: Path.home() without a home
        saved = {}
    return {**saved, **_unsaved}


def record(key: str, ok: bool) -> None:
    """One check of exercise `key`: done stays done once it was right."""
    global _saving
    state = load()
    entry = state.get(key, {"done": False, "tries": 0})
    entry = {
        "done": bool(entry.get("done")) or ok,
        "tries": int(entry.get("tries", 0)) + 1,
        "when": time.time(),
    }
    state[key] = entry
    try:
        p = path()
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
        tmp.replace(p)
        _unsaved.pop(key, None)
    except (OSError, RuntimeError):
        _saving = False
        _unsaved[key] = entry


def saving() -> bool:
    """Whether progress reaches the file (False after a write failed: a read-only home)."""
    return _saving


class Progress:
    """The course's exercises, done or not yet: a table in a notebook, lines in a terminal."""

    def __init__(self, topic: str | None = None):
        from .exercises import all_exercises

        everything = all_exercises()
        if topic is not None and topic not in everything:
            raise ValueError(f"topic must be one of {list(everything)} or None; got {topic!r}")
        self.rows: list[tuple[str, str, bool]] = []
        state = load()
        for name, exercises in everything.items():
            if topic is None or name == topic:
                self.rows += [(ex.key, ex.title, bool(state.get(ex.key, {}).get("done"))) for ex in exercises]

    @property
    def done(self) -> int:
        return sum(d for *_, d in self.rows)

    def _footer(self) -> str:
        unsaved = "" if saving() else " (not saved: the progress file cannot be written here)"
        return f"{self.done} of {len(self.rows)} exercises done{unsaved}"

    def __str__(self) -> str:
        lines = [f"{'✓' if done else '·'} {key:<24} {title}" for key, title, done in self.rows]
        return "\n".join([*lines, self._footer()])

    __repr__ = __str__

    def _repr_html_(self) -> str:
        import html

        rows = "".join(
            f"<tr><td>{'✓' if d else '·'}</td><td><code>{html.escape(k)}</code></td><td>{html.escape(t)}</td></tr>"
            for k, t, d in self.rows
        )
        return f"<table>{rows}</table><p>{html.escape(self._footer())}</p>"


def my_progress(topic: str | None = None) -> Progress:
    """The exercises of one topic (e.g. "dot"), or of the whole course, done or not yet
    (`course.my_progress()`; the file is `course.progress.path()`)."""
    return Progress(topic)
