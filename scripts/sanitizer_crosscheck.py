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
from `Kernel.check` on the emulator, in this process. Every launch is tiny (a few blocks), so
the GPU time is nothing; the time goes to starting Python and CuPy, 100 processes (4 tools x 25
programs; `--twins` adds the 10 fixed twins of the small programs).

Arrays come from CuPy's memory pool, as in the course (`--no-pool` gives every array its own
cudaMalloc instead): an off-by-one read that stays inside the pool's rounded-up block is invisible
to memcheck, which is one of the things this table shows.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import course
from course import reduction
from course.engine import Launch

SCRIPT = Path(__file__).resolve()
ROOT = SCRIPT.parents[1]
DEFAULT_OUT = "docs/checker-vs-sanitizer.md"
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
FLAGGED = 99  # the --error-exitcode: the tool reported an error
APP_FAILED = 3  # the program itself raised (on a GPU: e.g. a misaligned address)


@dataclass(frozen=True)
class Program:
    """One launch with a known bug (or none), runnable on either backend."""

    name: str
    expected: str  # the kind of bug in course.checks.KINDS, or "" for a correct kernel
    what: str  # the kernel and its bug in a few words
    build: Callable[[], Launch]  # the launch, its arrays made on the active backend
    source: str = ""  # the CUDA C of the small programs; `// @BUG` marks the line(s) of the bug
    twin: bool = False  # the fixed version of a buggy program (left out of the GPU run by default)

    def bug_lines(self) -> list[int]:
        """The 1-based lines of `source` marked `// @BUG`."""
        return [n for n, text in enumerate(self.source.splitlines(), 1) if re.search(r"//.*@BUG\b", text)]


# ---------------------------------------------------------------- the programs

N = 1000  # not a multiple of any block size: every tail is exercised


def _x(n: int = N, dtype: Any = np.float32) -> Any:
    return course.asarray((np.arange(n) % 7 - 3).astype(dtype))


def _cu(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def _launcher(
    source: str, kernel: str, grid: int, block: int, make_args: Callable[[], tuple]
) -> Callable[[], Launch]:
    def build() -> Launch:
        k = course.Module(code=_cu(source)).get_function(kernel)
        return Launch(k, (grid,), (block,), make_args())

    return build


def _reduction(name: str, n: int = N, block: int = 64) -> Callable[[], Launch]:
    def build() -> Launch:
        return reduction.ENGINE.plan(
            name, course.asarray(np.arange(n, dtype=np.uint32)), block=block
        ).launches[0]

    return build


COPY = """
    extern "C" __global__ void copy(const float* x, float* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i %s n) y[i] = x[i];  // @BUG
    }
"""

SUM_TREE = """
    extern "C" __global__ void block_sum(const float* x, float* out, int n) {
        __shared__ float s[128];
        unsigned int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
        s[t] = i < n ? x[i] : 0.0f;
        __syncthreads();
        for (unsigned int k = blockDim.x / 2; k > 0; k >>= 1) {
            if (t < k) s[t] += s[t + k];  // @BUG
            %s
        }
        if (t == 0) out[blockIdx.x] = s[0];
    }
"""

WARP_VOLATILE = """
    // Harris's warpReduce: the last warp runs without barriers, "in lockstep" (it is not, since Volta)
    __device__ void warp_reduce(volatile float* s, unsigned int t) {
        s[t] += s[t + 32];  // @BUG
        s[t] += s[t + 16];  // @BUG
        s[t] += s[t + 8];  // @BUG
        s[t] += s[t + 4];  // @BUG
        s[t] += s[t + 2];  // @BUG
        s[t] += s[t + 1];  // @BUG
    }

    extern "C" __global__ void block_sum(const float* x, float* out, int n) {
        __shared__ float s[128];
        unsigned int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
        s[t] = i < n ? x[i] : 0.0f;
        __syncthreads();
        for (unsigned int k = blockDim.x / 2; k > 32; k >>= 1) {
            if (t < k) s[t] += s[t + k];
            __syncthreads();
        }
        if (t < 32) warp_reduce(s, t);
        if (t == 0) out[blockIdx.x] = s[0];
    }
"""

WARP_SYNCED = """
    // the same last-warp steps, each read separated from the write by __syncwarp()
    __device__ void warp_reduce(float* s, unsigned int t) {
        for (unsigned int k = 32; k > 0; k >>= 1) {
            float v = s[t] + s[t + k];
            __syncwarp();
            s[t] = v;
            __syncwarp();
        }
    }

    extern "C" __global__ void block_sum(const float* x, float* out, int n) {
        __shared__ float s[128];
        unsigned int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
        s[t] = i < n ? x[i] : 0.0f;
        __syncthreads();
        for (unsigned int k = blockDim.x / 2; k > 32; k >>= 1) {
            if (t < k) s[t] += s[t + k];
            __syncthreads();
        }
        if (t < 32) warp_reduce(s, t);
        if (t == 0) out[blockIdx.x] = s[0];
    }
"""

REVERSE = """
    extern "C" __global__ void reverse(const float* x, float* y) {
        __shared__ float s[64];
        int t = threadIdx.x, base = blockIdx.x * 64;
        %s
        __syncthreads();
        y[base + t] = s[63 - t];  // @BUG
    }
"""

BARRIER_IN_IF = """
    extern "C" __global__ void pair_sums(const float* x, float* y) {
        __shared__ float s[64];
        int t = threadIdx.x, base = blockIdx.x * 128;
        if (t < 64) {
            s[t] = x[base + t] + x[base + t + 64];
            __syncthreads();  // @BUG
            y[blockIdx.x * 64 + t] = s[63 - t];
        }
    }
"""

BARRIER_FIXED = """
    extern "C" __global__ void pair_sums(const float* x, float* y) {
        __shared__ float s[64];
        int t = threadIdx.x, base = blockIdx.x * 128;
        if (t < 64) s[t] = x[base + t] + x[base + t + 64];
        __syncthreads();
        if (t < 64) y[blockIdx.x * 64 + t] = s[63 - t];
    }
"""

EARLY_RETURN = """
    extern "C" __global__ void rotate(const float* x, float* y, int n) {
        __shared__ float s[128];
        int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
        if (i >= n) return;  // the tail block's last threads leave before the barrier
        s[t] = x[i];
        __syncthreads();  // @BUG
        y[i] = s[(t + 1) % blockDim.x];
    }
"""

EARLY_RETURN_FIXED = """
    extern "C" __global__ void rotate(const float* x, float* y, int n) {
        __shared__ float s[128];
        int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
        s[t] = i < n ? x[i] : 0.0f;
        __syncthreads();
        if (i < n) y[i] = s[(t + 1) % blockDim.x];
    }
"""

SPLIT_BARRIER = """
    extern "C" __global__ void split(float* y) {
        __shared__ float s[64];
        int t = threadIdx.x;
        if (t < 32) {
            s[t] = t;
            __syncthreads();  // @BUG
            y[t] = s[63 - t];
        } else {
            s[t] = -t;
            __syncthreads();  // @BUG
            y[t] = s[63 - t];
        }
    }
"""

SPLIT_FIXED = """
    extern "C" __global__ void split(float* y) {
        __shared__ float s[64];
        int t = threadIdx.x;
        s[t] = t < 32 ? t : -t;
        __syncthreads();
        y[t] = s[63 - t];
    }
"""

COUNT = """
    extern "C" __global__ void count_positive(const float* x, int* count, int n) {
        __shared__ int block_count;
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (threadIdx.x == 0) block_count = 0;
        __syncthreads();
        if (i < n && x[i] > 0.0f) atomicAdd(&block_count, 1);
        __syncthreads();
        if (threadIdx.x == 0) %s
    }
"""

ACCUMULATE = """
    extern "C" __global__ void accumulate(const float* x, float* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i] += x[i];  // @BUG
    }
"""

READ_INTS = """
    extern "C" __global__ void read_ints(const char* bytes, int* out, int offset) {
        const int* p = (const int*)(bytes + offset);
        out[threadIdx.x] = p[threadIdx.x];  // @BUG
    }
"""


def _copy_args() -> tuple:
    return _x(), course.zeros(N, np.float32), np.int32(N)


def _sum_args() -> tuple:
    return _x(), course.zeros(8, np.float32), np.int32(N)


def _reverse_args() -> tuple:
    return _x(128), course.zeros(128, np.float32)


def _pair_args() -> tuple:
    return _x(256), course.zeros(128, np.float32)


def _count_args() -> tuple:
    return _x(), course.zeros(1, np.int32), np.int32(N)


def _split_args() -> tuple:
    return (course.zeros(64, np.float32),)


def _accumulate_args(make: Callable[..., Any]) -> Callable[[], tuple]:
    return lambda: (_x(), make(N, np.float32), np.int32(N))


def _bytes_args(offset: int) -> Callable[[], tuple]:
    return lambda: (
        course.asarray(np.arange(256, dtype=np.uint8)),
        course.zeros(32, np.int32),
        np.int32(offset),
    )


# name, expected kind, what, source, kernel, grid, block, arguments; each buggy program, then its fixed twin
SMALL: list[tuple[str, str, str, str, str, int, int, Callable[[], tuple]]] = [
    ("off_by_one", "out-of-bounds", "copy with `i <= n`: reads x[n], inside the pool's block", COPY % "<=", "copy", 8, 128, _copy_args),
    ("off_by_one_fixed", "", "copy with `i < n`", COPY % "<", "copy", 8, 128, _copy_args),
    ("missing_barrier", "race", "tree sum in shared memory, no __syncthreads() between steps", SUM_TREE % "// no __syncthreads()", "block_sum", 8, 128, _sum_args),
    ("missing_barrier_fixed", "", "tree sum, __syncthreads() after each step", SUM_TREE % "__syncthreads();", "block_sum", 8, 128, _sum_args),
    ("volatile_warp", "race", "Harris's volatile warpReduce: no __syncwarp() (pre-Volta lockstep)", WARP_VOLATILE, "block_sum", 8, 128, _sum_args),
    ("volatile_warp_fixed", "", "warp steps separated by __syncwarp()", WARP_SYNCED, "block_sum", 8, 128, _sum_args),
    ("half_loaded", "uninitialized", "reverse through shared memory, only half of it loaded", REVERSE % "if (t < 32) s[t] = x[base + t];", "reverse", 2, 64, _reverse_args),
    ("half_loaded_fixed", "", "reverse, every element loaded", REVERSE % "s[t] = x[base + t];", "reverse", 2, 64, _reverse_args),
    ("barrier_in_if", "barrier-divergence", "__syncthreads() inside `if (t < 64)`, block of 128", BARRIER_IN_IF, "pair_sums", 2, 128, _pair_args),
    ("barrier_in_if_fixed", "", "the barrier moved out of the branch", BARRIER_FIXED, "pair_sums", 2, 128, _pair_args),
    ("early_return", "barrier-divergence", "`if (i >= n) return;` before a __syncthreads()", EARLY_RETURN, "rotate", 8, 128, _copy_args),
    ("early_return_fixed", "", "guard the work, not the barrier", EARLY_RETURN_FIXED, "rotate", 8, 128, _copy_args),
    ("split_barrier", "barrier-divergence", "two warps wait at two different __syncthreads()", SPLIT_BARRIER, "split", 1, 64, _split_args),
    ("split_barrier_fixed", "", "one __syncthreads() after the branch", SPLIT_FIXED, "split", 1, 64, _split_args),
    ("block_counter", "race", "blocks add to one global counter without an atomic", COUNT % "*count += block_count;  // @BUG", "count_positive", 8, 128, _count_args),
    ("block_counter_fixed", "", "atomicAdd for the global counter", COUNT % "atomicAdd(count, block_count);", "count_positive", 8, 128, _count_args),
    ("empty_output", "uninitialized", "`out[i] += x[i]` on an array from course.empty()", ACCUMULATE, "accumulate", 8, 128, _accumulate_args(course.empty)),
    ("empty_output_fixed", "", "the same on course.zeros()", ACCUMULATE, "accumulate", 8, 128, _accumulate_args(course.zeros)),
    ("misaligned", "misaligned", "ints read from a byte buffer at offset 1", READ_INTS, "read_ints", 1, 32, _bytes_args(1)),
    ("misaligned_fixed", "", "the same at offset 4", READ_INTS, "read_ints", 1, 32, _bytes_args(4)),
]  # fmt: skip


def _small_programs() -> list[Program]:
    return [
        Program(name, expected, what, _launcher(src, kernel, grid, block, args), _cu(src), twin=not expected)
        for name, expected, what, src, kernel, grid, block, args in SMALL
    ]


def _course_programs() -> list[Program]:
    out = []
    for v in reduction.VERSIONS:
        name = v.name
        block = 64 if 64 in v.blocks else v.blocks[0]
        expected = ""
        if v.bug:
            expected = (
                "race" if name in ("reduce5_article", "reduce6_article", "reduce3_timed") else "out-of-bounds"
            )
        what = f"{v.title}" + (f": {v.bug}" if v.bug else "")
        out.append(Program(name, expected, what, _reduction(name, N, block)))
    return out


def programs(*, twins: bool = True) -> list[Program]:
    """Every program: the course's reduction versions, then the small buggy ones (and their twins)."""
    return [p for p in _course_programs() + _small_programs() if twins or not p.twin]


def program(name: str) -> Program:
    for p in programs():
        if p.name == name:
            return p
    raise SystemExit(f"no program {name!r}; run --list to see them")


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


def checker_findings(p: Program) -> course.checks.Findings:
    """The course checker on program `p`, on the emulator."""
    previous = course.device().backend
    course.set_backend("emulator")
    try:
        launch = p.build()
        return launch.kernel.check(launch.grid, launch.block, launch.args, shared_mem=launch.shared_mem)
    finally:
        course.set_backend(previous)


def checker_cell(p: Program) -> str:
    """What the checker found, e.g. `race (lines 12, 13)`, or `clean`."""
    found = checker_findings(p)
    if not found:
        return "clean"
    cells = []
    for kind in course.checks.KINDS:
        lines = sorted({n for f in found.of(kind) for n in f.lines})
        if lines:
            cells.append(f"{kind} (line{'s' * (len(lines) > 1)} {', '.join(map(str, lines))})")
    return "; ".join(cells)


# ---------------------------------------------------------------- compute-sanitizer


def find_sanitizer(explicit: str | None = None) -> str:
    """`explicit`, else compute-sanitizer on PATH, under $CUDA_HOME, or in the newest CUDA install."""
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            raise SystemExit(f"--sanitizer {explicit}: no such executable")
        return explicit
    home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    candidates: list[str | None] = [shutil.which("compute-sanitizer"), f"{home}/bin/compute-sanitizer"]
    candidates += sorted(glob.glob("/usr/local/cuda*/bin/compute-sanitizer"), reverse=True)
    candidates += sorted(glob.glob("/usr/local/cuda*/compute-sanitizer/compute-sanitizer"), reverse=True)
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise SystemExit(
        "compute-sanitizer not found: not on PATH, not in $CUDA_HOME/bin or /usr/local/cuda*/bin"
    )


def sanitizer_command(sanitizer: str, tool: str, name: str, *, pool: bool = True) -> list[str]:
    cmd = [sanitizer, "--tool", tool, "--error-exitcode", str(FLAGGED), "--print-limit", "20"]
    cmd += [sys.executable, str(SCRIPT), "--run", name]
    return cmd + ([] if pool else ["--no-pool"])


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


def run_tool(sanitizer: str, tool: str, name: str, *, pool: bool = True, timeout: float = 300) -> ToolResult:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    try:
        done = subprocess.run(
            sanitizer_command(sanitizer, tool, name, pool=pool),
            capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT,
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


def sanitizer_version(sanitizer: str) -> str:
    try:
        out = subprocess.run([sanitizer, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"compute-sanitizer (version unknown: {exc})"
    version = next((ln.strip() for ln in out.splitlines() if "version" in ln.lower()), "version unknown")
    return f"compute-sanitizer {version}"


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
    sanitizer = None if opts.checker_only else find_sanitizer(opts.sanitizer)
    if sanitizer:
        meta |= {
            "device": device_name(),
            "sanitizer": sanitizer_version(sanitizer),
            "toolchain": toolchain(),
            "sanitizer_command": " ".join(
                sanitizer_command("compute-sanitizer", "TOOL", "NAME", pool=not opts.no_pool)
            ),
            "allocator": "one cudaMalloc per array (--no-pool)" if opts.no_pool else "CuPy's memory pool",
        }
    done: dict[tuple[str, str], ToolResult] = {}
    if sanitizer:  # every (program, tool) is its own process: run several at once
        from concurrent.futures import ThreadPoolExecutor

        def one(job: tuple[str, str]) -> tuple[tuple[str, str], ToolResult]:
            name, tool = job
            return job, run_tool(sanitizer, tool, name, pool=not opts.no_pool, timeout=opts.timeout)

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
