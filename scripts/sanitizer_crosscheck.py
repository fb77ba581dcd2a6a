"""Issue #7, the checker against compute-sanitizer: which tool flags which bug, on a real GPU.

    python3 scripts/sanitizer_crosscheck.py --list                      # the programs (no GPU)
    python3 scripts/sanitizer_crosscheck.py --checker-only [OUT.md]     # our column only (no GPU)
    python3 scripts/sanitizer_crosscheck.py [OUT.md]                    # the whole table, on a GPU
    python3 scripts/sanitizer_crosscheck.py --run NAME                  # one program through CuPy

On the course's GPU machines: `source scripts/gpu_env.sh` first. The table (default
docs/checker-vs-sanitizer.md) has one row per program: every correct course kernel (should be
clean), every article version with its documented bug, and small buggy kernels with one bug
each. For each program and each of memcheck, racecheck, synccheck and initcheck, one process runs

    compute-sanitizer --tool TOOL --error-exitcode 99 python3 scripts/sanitizer_crosscheck.py --run NAME

and the tool "flagged" the program when it exited with 99. The course checker's column comes
from `Kernel.check` on the emulator, in this process. The programs are tests/checker_programs.py's
(the catalogue tests/test_checks.py holds the checker to); running and reading compute-sanitizer is
course/sanitizer.py's. Every launch is tiny (a few blocks), so
the GPU time is nothing; the time goes to starting Python and CuPy, 100 processes (4 tools x 25
programs; `--twins` adds the 10 fixed twins of the small programs).

Arrays come from CuPy's memory pool, as in the course (`--no-pool` gives every array its own
cudaMalloc instead): an off-by-one read that stays inside the pool's rounded-up block is invisible
to memcheck, which is one of the things this table shows.
"""

from __future__ import annotations

import argparse
import datetime
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import course
from course.sanitizer import (
    APP_FAILED,
    FLAGGED,
    TOOLS,
    ToolResult,
    find_sanitizer,
    run_tool,
    sanitizer_command,
    sanitizer_version,
)

SCRIPT = Path(__file__).resolve()
ROOT = SCRIPT.parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the programs are the checker tests' catalogue
from checker_programs import Program, checker_cell, programs  # noqa: E402
from checker_programs import program as find_program  # noqa: E402

DEFAULT_OUT = "docs/checker-vs-sanitizer.md"


def program(name: str) -> Program:
    try:
        return find_program(name)
    except LookupError as exc:
        raise SystemExit(str(exc)) from None


# ---------------------------------------------------------------- running one program


def run_program(name: str, *, pool: bool = True) -> None:
    """Launch program `name` once on the GPU through CuPy and wait for it: what a sanitizer watches."""
    import cupy

    if not pool:
        cupy.cuda.set_allocator(None)
    course.set_backend("cupy")
    launch = program(name).build()
    launch()
    cupy.cuda.runtime.deviceSynchronize()


def program_command(name: str, *, pool: bool = True) -> list[str]:
    """This script launching program `name` once: what each sanitizer runs."""
    return [sys.executable, str(SCRIPT), "--run", name] + ([] if pool else ["--no-pool"])


def run_under(sanitizer: str, tool: str, name: str, *, pool: bool = True, timeout: float = 300) -> ToolResult:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    return run_tool(sanitizer, tool, program_command(name, pool=pool), cwd=ROOT, env=env, timeout=timeout)


# ---------------------------------------------------------------- the table


def render(rows: Sequence[tuple[Program, dict[str, ToolResult] | None, str]], meta: dict[str, str]) -> str:
    """The Markdown report: how it was made, then one row per program.

    rows: (program, {tool: result} or None when the GPU part was not run, the checker's cell).
    """
    ran = any(r is not None for _, r, _ in rows)
    agree = sum(_agrees(p, cell) for p, _, cell in rows)
    made = f"Made with `{meta.get('command', 'python3 scripts/sanitizer_crosscheck.py')}`"
    if ran:
        made += f" on {meta.get('device', 'a GPU')} with {meta.get('sanitizer', 'compute-sanitizer')}"
        made += f" and {meta['toolchain']}" if meta.get("toolchain") else ""
    made += f", {meta['date']}." if meta.get("date") else "."
    out = [
        "# The course checker against compute-sanitizer",
        "",
        made,
        "",
        "Each sanitizer cell is one process:" if ran else "The sanitizer columns were not run (no GPU).",
        "",
    ]
    if ran:
        out += [
            f"    {meta.get('sanitizer_command', '')}",
            "",
            f"**flagged**: the tool reported an error (exit code {FLAGGED}); clean: it did not; program failed: "
            f"the launch itself failed (rc {APP_FAILED}: a CUDA error). Arrays come from "
            f"{meta.get('allocator', 'CuPy memory pool')}.",
            "",
        ]
    out += [
        "The course checker runs the same launch on the emulator (`Kernel.check`) and lists the kinds of "
        "bug it found, with their .cu lines. It agrees with the expected column (the bug's kind, or "
        f"clean for a correct kernel) on {agree} of {len(rows)} programs.",
        "",
        "| program | expected bug | " + " | ".join(TOOLS) + " | course checker |",
        "|---|---|" + "---|" * len(TOOLS) + "---|",
    ]
    for p, results, cell in rows:
        tools = [results[t].cell if results and t in results else "not run" for t in TOOLS]
        expected = f"{p.expected}: {p.what}" if p.expected else f"none ({p.what})"
        out.append(f"| `{p.name}` | {expected} | " + " | ".join(tools) + f" | {cell} |")
    notes = [
        f"- `{p.name}`, {t}: {results[t].first_error}"
        for p, results, _ in rows
        if results
        for t in TOOLS
        if t in results and results[t].rc not in (0,) and results[t].first_error
    ]
    if notes:
        out += ["", "## What the sanitizers said", "", *notes]
    return "\n".join(out) + "\n"


def _agrees(p: Program, cell: str) -> bool:
    return cell == "clean" if not p.expected else cell.startswith(p.expected) or f"; {p.expected} (" in cell


def device_name() -> str:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30,
        ).stdout  # fmt: skip
        if out.strip():
            name, _, driver = out.strip().splitlines()[0].partition(",")
            return f"{name.strip()} (driver {driver.strip()})" if driver else name.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return "an unknown GPU"


def toolchain() -> str:
    try:
        import cupy

        return f"CuPy {cupy.__version__}"
    except Exception:
        return "CuPy not installed"


# ---------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "out", nargs="?", default=DEFAULT_OUT, help=f"Markdown file to write (default {DEFAULT_OUT})"
    )
    ap.add_argument("--run", metavar="NAME", help="launch one program on the GPU (what each sanitizer runs)")
    ap.add_argument("--list", action="store_true", help="list the programs and exit")
    ap.add_argument("--checker-only", action="store_true", help="only the course checker's column (no GPU)")
    ap.add_argument("--programs", help="comma-separated names (default: all but the fixed twins)")
    ap.add_argument("--twins", action="store_true", help="also run the fixed twins of the small programs")
    ap.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated subset of {','.join(TOOLS)}")
    ap.add_argument("--no-pool", action="store_true", help="no CuPy memory pool: one cudaMalloc per array")
    ap.add_argument("--sanitizer", help="path of compute-sanitizer (default: found on PATH or under CUDA)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per sanitizer process")
    ap.add_argument("--jobs", type=int, default=8, help="sanitizer processes run at once (one GPU is shared)")
    opts = ap.parse_args(argv)

    if opts.run:
        try:
            run_program(opts.run, pool=not opts.no_pool)
        except Exception as exc:  # a CUDA error in the kernel: tell the parent, not a traceback
            print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
            return APP_FAILED
        return 0
    chosen = programs(twins=opts.twins)
    if opts.programs:
        names = [n.strip() for n in opts.programs.split(",") if n.strip()]
        chosen = [program(n) for n in names]
    if opts.list:
        for p in chosen:
            print(f"{p.name:24s} {p.expected or 'clean':20s} {p.what}")
        return 0
    tools = [t for t in opts.tools.split(",") if t]
    if bad := set(tools) - set(TOOLS):
        raise SystemExit(f"unknown tools {sorted(bad)}; choose from {TOOLS}")
    command = "python3 scripts/sanitizer_crosscheck.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    meta = {"command": command.strip(), "date": datetime.date.today().isoformat()}
    try:
        sanitizer = None if opts.checker_only else find_sanitizer(opts.sanitizer)
    except FileNotFoundError as exc:
        raise SystemExit(str(exc)) from None
    if sanitizer:
        meta |= {
            "device": device_name(),
            "sanitizer": sanitizer_version(sanitizer),
            "toolchain": toolchain(),
            "sanitizer_command": " ".join(
                sanitizer_command("compute-sanitizer", "TOOL", program_command("NAME", pool=not opts.no_pool))
            ),
            "allocator": "one cudaMalloc per array (--no-pool)" if opts.no_pool else "CuPy's memory pool",
        }
    done: dict[tuple[str, str], ToolResult] = {}
    if sanitizer:  # every (program, tool) is its own process: run several at once
        from concurrent.futures import ThreadPoolExecutor

        def one(job: tuple[str, str]) -> tuple[tuple[str, str], ToolResult]:
            name, tool = job
            return job, run_under(sanitizer, tool, name, pool=not opts.no_pool, timeout=opts.timeout)

        jobs = [(p.name, tool) for p in chosen for tool in tools]
        with ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
            for job, result in pool.map(one, jobs):
                done[job] = result
                print(f"{job[0]} {job[1]}: {result.cell}", file=sys.stderr, flush=True)
    rows = []
    for p in chosen:
        try:
            cell = checker_cell(p)
        except Exception as exc:  # keep the GPU columns of the other programs
            cell = f"checker failed: {type(exc).__name__}: {exc}".replace("|", "/").splitlines()[0]
        results = {tool: done[(p.name, tool)] for tool in tools} if sanitizer else None
        print(f"{p.name}: course checker: {cell}", file=sys.stderr, flush=True)
        rows.append((p, results, cell))
    text = render(rows, meta)
    out = Path(opts.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
