"""The checker's catalogue of buggy programs: the course's reduction versions (correct ones, and the
articles' with their documented bugs) and small kernels with one bug each (each with its fixed twin),
every one a launch with the kind of bug the checker must report, or none.

tests/test_checks.py holds the checker to it on the emulator; scripts/sanitizer_crosscheck.py runs
the same programs under compute-sanitizer on a GPU (docs/checker-vs-sanitizer.md).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import course
from course import reduction
from course.engine import Launch


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
    raise LookupError(f"no program {name!r}; run scripts/sanitizer_crosscheck.py --list to see them")


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
