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
