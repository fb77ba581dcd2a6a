"""compute-sanitizer, run and read: where it is, the command that runs one program under one of its
tools, what the tool said (flagged, clean, the program failed, timed out) and its first report.

The course's checker is compared with it on the programs of tests/checker_programs.py by
scripts/sanitizer_crosscheck.py (docs/checker-vs-sanitizer.md); a GPU is needed only to run it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .toolkit import find_tool, newest

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
FLAGGED = 99  # the --error-exitcode: the tool reported an error
APP_FAILED = 3  # the program itself raised (on a GPU: e.g. a misaligned address)


def find_sanitizer(explicit: str | None = None) -> str:
    """`explicit`, else compute-sanitizer on PATH, under $CUDA_HOME, or in the newest CUDA install."""
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    places = [
        f"{home}/bin/compute-sanitizer",
        *newest("/usr/local/cuda*/bin/compute-sanitizer"),
        *newest("/usr/local/cuda*/compute-sanitizer/compute-sanitizer"),
    ]
    searched = "not on PATH, not in $CUDA_HOME/bin or /usr/local/cuda*/bin"
    return find_tool("compute-sanitizer", explicit, "--sanitizer", places, searched)


def sanitizer_command(sanitizer: str, tool: str, program: Sequence[str]) -> list[str]:
    """`sanitizer` running `program` (a command that launches one program once) under `tool`."""
    return [sanitizer, "--tool", tool, "--error-exitcode", str(FLAGGED), "--print-limit", "20", *program]


@dataclass(frozen=True)
class ToolResult:
    rc: int | None  # None: timed out
    first_error: str = ""  # the sanitizer's first report line, or the program's last words

    @property
    def cell(self) -> str:
        if self.rc is None:
            return "timeout"
        if self.rc == FLAGGED:
            return "**flagged**"
        if self.rc == 0:
            return "clean"
        return f"program failed (rc {self.rc})"


def run_tool(
    sanitizer: str,
    tool: str,
    program: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> ToolResult:
    """Run `program` under `tool` in a subprocess; what the tool said."""
    try:
        done = subprocess.run(
            sanitizer_command(sanitizer, tool, program),
            capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return ToolResult(None, f"no answer in {timeout:.0f} s")
    return ToolResult(done.returncode, first_report(done.stdout + done.stderr))


def first_report(log: str) -> str:
    """The first line a sanitizer reports (after its banner), with its summary line; else the last line."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    reports = [
        ln.lstrip("= ").strip()
        for ln in lines
        if ln.startswith("=")
        and not re.search(r"COMPUTE-SANITIZER|SUMMARY|^=+\s*$|^=+\s+(at|by|in|Saved host)\b", ln)
    ]
    summary = next((ln.lstrip("= ").strip() for ln in lines if "SUMMARY" in ln), "")
    if reports:
        return reports[0] + (f" ({summary})" if summary else "")
    return lines[-1][:200] if lines else ""


def sanitizer_version(sanitizer: str) -> str:
    try:
        out = subprocess.run([sanitizer, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"compute-sanitizer (version unknown: {exc})"
    version = next((ln.strip() for ln in out.splitlines() if "version" in ln.lower()), "version unknown")
    return f"compute-sanitizer {version}"
