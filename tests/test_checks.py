"""The bug checker: each kind of bug found on the right line, nothing found in correct kernels,
the catalogue of buggy programs (checker_programs.py) and the sanitizer cross-check's non-GPU parts
(course.sanitizer, and scripts/sanitizer_crosscheck.py's checker column and table)."""

from __future__ import annotations

import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import checker_programs as cp
import numpy as np
import pytest

import course
from course import checks, reduction, sanitizer
from course.checks import Finding, Findings

ROOT = Path(__file__).resolve().parents[1]
CROSSCHECK = ROOT / "scripts" / "sanitizer_crosscheck.py"  # the command line, run as one
SMALL = [p for p in cp.programs() if p.source]
BUGGY = [p for p in SMALL if p.expected]
TWINS = [p for p in SMALL if not p.expected]
CORRECT_VERSIONS = [v.name for v in reduction.VERSIONS if not v.bug]
BY_NAME = {v.name: v for v in reduction.VERSIONS}


def first_launch(name: str, x: np.ndarray, block: int):
    """Version `name`'s own launch on x (not the pass that adds its block sums)."""
    return reduction.ENGINE.plan(name, course.asarray(x), block=block).launches[0]


REDUCTION_CU = course.compiler.read_kernel("reduction.cu").splitlines()


@pytest.fixture(autouse=True)
def _emulator(emulator_backend: course.Device) -> Any:
    yield


def check(source: str, name: str, grid: Any, block: Any, args: tuple, shared_mem: int = 0) -> Findings:
    return course.Module(code=source).get_function(name).check(grid, block, args, shared_mem=shared_mem)


def line_of(source: str | list[str], text: str) -> int:
    """The 1-based line whose stripped text is `text` (exactly one)."""
    lines = source.splitlines() if isinstance(source, str) else source
    hits = [n for n, ln in enumerate(lines, 1) if ln.split("//")[0].strip() == text]
    assert len(hits) == 1, (text, hits)
    return hits[0]


# ---------------------------------------------------------------- buggy kernels and their twins

ALSO = {"early_return": {"uninitialized"}}  # the early-returned threads also leave s[] unwritten


@pytest.mark.parametrize("prog", BUGGY, ids=lambda p: p.name)
def test_each_buggy_kernel_is_flagged_with_its_kind_and_line(prog: Any) -> None:
    found = cp.checker_findings(prog)
    assert found.kinds() == {prog.expected} | ALSO.get(prog.name, set()), str(found)
    lines = {n for f in found.of(prog.expected) for n in f.lines}
    assert set(prog.bug_lines()) <= lines, (prog.bug_lines(), str(found))
    for f in found:
        assert f.explanation and f.examples and f.count >= 1
        assert all(text for text in f.code), f  # every line's source is quoted


@pytest.mark.parametrize("prog", TWINS, ids=lambda p: p.name)
def test_each_fixed_twin_is_clean(prog: Any) -> None:
    found = cp.checker_findings(prog)
    assert found == [], str(found)


def test_off_by_one_names_buffer_element_thread_and_bounds() -> None:
    (f,) = cp.checker_findings(cp.program("off_by_one"))
    assert (f.kind, f.buffer, f.space, f.elements, f.count) == ("out-of-bounds", "x", "global", (1000,), 1)
    assert f.blocks == ((7, 0, 0),) and f.threads == ((104, 0, 0),)  # i = 7 * 128 + 104 = 1000
    assert "1000 elements" in f.explanation and "999" in f.explanation
    assert "if (i <= n) y[i] = x[i];" in str(f)


STRAYS = r"""
extern "C" __global__ void float4_by_element(const float* a, const float* b, float* out, int n) {
    const float4* a4 = (const float4*)a;
    const float4* b4 = (const float4*)b;
    int first = blockIdx.x * blockDim.x + threadIdx.x, stride = gridDim.x * blockDim.x;
    float s = 0.0f;
    for (int i = 4 * first; i + 3 < n; i += 4 * stride) {  // i counts floats, a4[i] counts float4s
        float4 x = a4[i], y = b4[i];
        s += x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w;
    }
    atomicAdd(out, s);
}

extern "C" __global__ void shifted(const float* x, float* y, int n, int shift) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i - shift];
}
"""


def test_an_index_scaled_twice_names_the_buffer_its_first_stray_thread_left() -> None:
    """A float4 pointer indexed by the element index: most strays land nearer `out` or `b` than `a`;
    the finding names `a` as the launch's own error does, and counts the rest apart."""
    rng = np.random.default_rng(3)
    a, b = (course.asarray(rng.standard_normal(1000, dtype=np.float32)) for _ in range(2))
    args = (a, b, course.zeros(1, np.float32), np.int32(1000))
    k = course.Module(code=STRAYS).get_function("float4_by_element")
    (f,) = k.check((4,), (64,), args)
    assert (f.kind, f.buffer, f.blocks[0], f.threads[0]) == ("out-of-bounds", "a", (0, 0, 0), (63, 0, 0))
    assert "reads `a` past the end: it has 1000 elements" in f.explanation
    assert (
        f.count == f.element_count < 20
        and "more threads of this instruction strayed further" in f.explanation
    )
    with pytest.raises(
        course.OutOfBoundsError, match="thread \\(63, 0, 0\\) tried to read 16 bytes at buffer 'a'"
    ):
        k((4,), (64,), args)


@pytest.mark.parametrize(
    ("n", "shift", "side"),
    [(40, 3, "before the start"), (1, -1, "past the end"), (1, 1, "before the start")],
)
def test_an_out_of_bounds_finding_says_which_end(n: int, shift: int, side: str) -> None:
    x = course.asarray(np.arange(n, dtype=np.float32))
    (f,) = check(STRAYS, "shifted", 1, 64, (x, course.zeros(n, np.float32), np.int32(n), np.int32(shift)))
    assert f.buffer == "x" and f"reads `x` {side}: it has {n} element{'s' * (n != 1)} " in f.explanation
    assert "strayed further" not in f.explanation and f.count == min(abs(shift), n)


def test_an_out_of_bounds_finding_on_both_ends_says_so() -> None:
    x = course.asarray(np.arange(8, dtype=np.float32))
    k = course.Module(code=STRAYS.replace("if (i < n) y[i] = x[i - shift];", "y[i] = x[i - shift];"))
    (f,) = k.get_function("shifted").check(1, 12, (x, course.zeros(12, np.float32), np.int32(8), np.int32(2)))
    assert "reads `x` before the start and past the end: it has 8 elements" in f.explanation
    assert f.elements == (-2, -1, 8) and f.element_count == f.count == 4  # three examples, four strays


def test_races_say_between_whom() -> None:
    scopes = {
        "missing_barrier": ("shared", "s", "between warps"),
        "volatile_warp": ("shared", "s", "within a warp"),
        "block_counter": ("global", "count", "between blocks"),
    }
    for name, (space, buffer, scope) in scopes.items():
        (f,) = cp.checker_findings(cp.program(name))
        assert (f.space, f.buffer, f.scope) == (space, buffer, scope), str(f)
        assert any("reads" in e and "writes" in e for e in f.examples), f.examples
    # the volatile warp reduction: lane 0 reads s[16] while lane 16 updates it, with no __syncwarp()
    (f,) = cp.checker_findings(cp.program("volatile_warp"))
    assert 16 in f.elements or f.element_count >= 16
    assert "__syncwarp" in f.explanation


def test_half_loaded_shared_array_lists_the_unwritten_elements() -> None:
    (f,) = cp.checker_findings(cp.program("half_loaded"))
    assert (f.kind, f.space, f.buffer, f.element_count, f.count) == ("uninitialized", "shared", "s", 32, 64)
    assert f.elements == (32, 33, 34)
    assert f.threads[0] == (31, 0, 0)  # thread 31 reads s[63 - 31] = s[32]


def test_barrier_in_if_names_who_arrives_and_who_left() -> None:
    (f,) = cp.checker_findings(cp.program("barrier_in_if"))
    assert f.count == 2 and f.blocks == ((0, 0, 0), (1, 0, 0))
    assert "threads 0-63 reach" in f.examples[0] and "threads 64-127 never do" in f.examples[0]
    assert f.element_count == 0 and str(f).splitlines()[0].endswith(": 2 blocks")  # no elements involved
    (g,) = cp.checker_findings(cp.program("split_barrier"))  # the emulator's BarrierError, as a finding
    assert "threads 0-31 wait at line" in g.examples[0] and "threads 32-63 wait at line" in g.examples[0]


def test_loop_trip_counts_that_differ_around_a_barrier() -> None:
    src = r"""
extern "C" __global__ void rounds(float* y, const int* trips) {
    __shared__ float s[64];
    int t = threadIdx.x;
    for (int r = 0; r < trips[t]; ++r) {
        s[t] = r;
        __syncthreads();  // @FIRST
        y[t] += s[63 - t];
        __syncthreads();
    }
}
"""
    trips = np.full(64, 3, np.int32)
    clean = check(src, "rounds", 1, 64, (course.zeros(64, np.float32), course.asarray(trips)))
    assert clean == [], str(clean)
    trips[40:] = 2  # the threads of warp 1 from 40 on leave the loop a round early
    found = check(src, "rounds", 1, 64, (course.zeros(64, np.float32), course.asarray(trips)))
    (f,) = found.of("barrier-divergence")
    first = next(n for n, ln in enumerate(src.splitlines(), 1) if "@FIRST" in ln)
    assert f.lines[0] == first, str(f)
    assert "5th barrier" in f.examples[0] and "threads 40-63 never do" in f.examples[0], f.examples


def test_misaligned_access_names_the_byte() -> None:
    (f,) = cp.checker_findings(cp.program("misaligned"))
    assert (f.kind, f.buffer, f.count) == ("misaligned", "bytes", 32)
    assert "4 bytes at byte 1 of bytes" in f.examples[0]


def test_shuffle_with_lanes_missing_from_its_mask() -> None:
    src = r"""
extern "C" __global__ void partial_shuffle(int* x) {
    int v = x[threadIdx.x];
    if (threadIdx.x < 16) v = __shfl_sync(0xffffffffu, v, 20);
    x[threadIdx.x] = v;
}
"""
    (f,) = check(src, "partial_shuffle", 1, 32, (course.asarray(np.arange(32, dtype=np.int32)),))
    assert f.kind == "barrier-divergence" and f.lines == (
        line_of(src, "if (threadIdx.x < 16) v = __shfl_sync(0xffffffffu, v, 20);"),
    )
    assert "lanes 0-15" in f.examples[0] and "16-31" in f.examples[0]
    # a shrunken mask is no fix for a shuffle (a lane would read one that skipped the call)
    assert "__activemask()" not in f.explanation and "put the condition on what is done" in f.explanation


def test_a_vote_with_lanes_missing_from_its_mask_may_take_the_active_mask() -> None:
    src = r"""
extern "C" __global__ void partial_vote(int* x) {
    int v = x[threadIdx.x];
    if (threadIdx.x < 16) v = __ballot_sync(0xffffffffu, v > 3);
    x[threadIdx.x] = v;
}
"""
    (f,) = check(src, "partial_vote", 1, 32, (course.asarray(np.arange(32, dtype=np.int32)),))
    assert (
        f.kind == "barrier-divergence"
        and "move it out of the branch, or pass __activemask()" in f.explanation
    )


# ---------------------------------------------------------------- what is not a race

SHARED_PATTERNS = r"""
extern "C" __global__ void broadcast(float* y) {
    __shared__ float s[32];
    if (threadIdx.x == 0) s[0] = blockIdx.x;
    __syncthreads();
    y[blockIdx.x * blockDim.x + threadIdx.x] = s[0];  // every thread reads one word: a broadcast
}

extern "C" __global__ void own_word(float* y) {
    volatile __shared__ float s[64];
    s[threadIdx.x] = threadIdx.x;
    s[threadIdx.x] = s[threadIdx.x] * 2.0f;  // a thread's own read, then write
    y[blockIdx.x * blockDim.x + threadIdx.x] = s[threadIdx.x];
}

// volatile, or the compiler forwards 42 to every lane (a race is undefined behaviour)
extern "C" __global__ void lane_zero(float* y, int sync) {
    volatile __shared__ float s[32];
    if (threadIdx.x == 0) s[0] = 42.0f;  // @WRITE
    if (sync) __syncwarp();
    y[threadIdx.x] = s[0];  // @READ
}

extern "C" __global__ void histogram(const int* v, unsigned* out, int zero) {
    __shared__ unsigned bins[8];
    if (zero && threadIdx.x < 8) bins[threadIdx.x] = 0;
    __syncthreads();
    atomicAdd(&bins[v[blockIdx.x * blockDim.x + threadIdx.x]], 1u);  // @ATOM
    __syncthreads();
    if (threadIdx.x < 8) atomicAdd(&out[threadIdx.x], bins[threadIdx.x]);
}
"""


def _marked(tag: str) -> int:
    return next(n for n, ln in enumerate(SHARED_PATTERNS.splitlines(), 1) if f"@{tag}" in ln)


def test_a_broadcast_and_a_threads_own_read_then_write_are_not_races() -> None:
    for name in ("broadcast", "own_word"):
        found = check(SHARED_PATTERNS, name, 2, 64, (course.zeros(128, np.float32),))
        assert found == [], str(found)


def test_lanes_of_one_warp_need_syncwarp_between_a_write_and_the_reads() -> None:
    y = course.zeros(32, np.float32)
    assert check(SHARED_PATTERNS, "lane_zero", 1, 32, (y, np.int32(1))) == []
    (f,) = check(SHARED_PATTERNS, "lane_zero", 1, 32, (y, np.int32(0)))
    assert (f.kind, f.scope, f.lines) == ("race", "within a warp", (_marked("WRITE"), _marked("READ")))


def test_shared_atomics_never_race_but_read_garbage_when_not_zeroed() -> None:
    v = course.asarray(np.arange(256, dtype=np.int32) % 8)
    args = (v, course.zeros(8, np.uint32))
    assert check(SHARED_PATTERNS, "histogram", 2, 128, (*args, np.int32(1))) == []
    (f,) = check(SHARED_PATTERNS, "histogram", 2, 128, (*args, np.int32(0)))
    assert (f.kind, f.buffer, f.lines, f.element_count) == ("uninitialized", "bins", (_marked("ATOM"),), 8)


CHAIN = r"""
// block b waits for block b - 1's total, adds its own and publishes it (a chained scan's carry)
extern "C" __global__ void chain(const int* x, volatile int* flag, int* total, int fence) {
    int b = blockIdx.x;
    if (threadIdx.x == 0) {
        int carry = 0;
        if (b > 0) {
            while (flag[b - 1] == 0) {}
            carry = total[b - 1];  // @READ
        }
        total[b] = carry + x[b];  // @WRITE
        if (fence) __threadfence();
        flag[b] = 1;
    }
}
"""


def test_a_fence_then_flag_protocol_orders_blocks_and_without_the_fence_it_races() -> None:
    def args() -> tuple:
        return (
            course.asarray(np.arange(1, 5, dtype=np.int32)),
            course.zeros(4, np.int32),
            course.zeros(4, np.int32),
        )

    assert check(CHAIN, "chain", 4, 32, (*args(), np.int32(1))) == []
    (f,) = check(CHAIN, "chain", 4, 32, (*args(), np.int32(0)))
    assert (f.kind, f.buffer, f.scope) == ("race", "total", "between blocks")
    assert set(f.lines) == {
        line_of(CHAIN, "carry = total[b - 1];"),
        line_of(CHAIN, "total[b] = carry + x[b];"),
    }


EARLY_FLAG = r"""
// block 1 reads the flag before block 0 sets it, so the flag orders nothing
extern "C" __global__ void early_flag(const int* x, volatile int* flag, int* total) {
    if (threadIdx.x != 0) return;
    int acc = 0;
    if (blockIdx.x == 0) {
        total[0] = x[0];
        for (int k = 0; k < 64; ++k) acc += x[k];  // block 1 reads the flag meanwhile
        __threadfence();
        flag[0] = 1 + (acc & 0);
    } else {
        int f = flag[0];
        for (int k = 0; k < 32; ++k) acc += x[k];
        total[1] = total[0] + f + acc;
    }
}
"""


def test_a_flag_read_before_it_is_set_orders_nothing() -> None:
    args = (
        course.asarray(np.arange(64, dtype=np.int32)),
        course.zeros(1, np.int32),
        course.zeros(2, np.int32),
    )
    (f,) = check(EARLY_FLAG, "early_flag", 2, 32, args)
    assert (f.kind, f.buffer, f.scope, f.elements) == ("race", "total", "between blocks", (0,))
    assert f.lines == (
        line_of(EARLY_FLAG, "total[0] = x[0];"),
        line_of(EARLY_FLAG, "total[1] = total[0] + f + acc;"),
    )


PUBLISH = r"""
// block 0 writes data[0] and raises the flag after a fence; block 1 waits for the flag, then reads
extern "C" __global__ void publish(const int* x, int* data, volatile int* flag, int* out, int sync, int writer,
                                   int fencer) {
    if (blockIdx.x == 0) {
        if (threadIdx.x == writer) data[0] = x[0];  // @DATA
        if (sync) __syncthreads();
        if (threadIdx.x == fencer) {
            __threadfence();  // releases the fencer's own accesses, and the block's before a barrier
            flag[0] = 1;
        }
    } else if (threadIdx.x == 0) {
        while (flag[0] == 0) {}
        out[0] = data[0];  // @USE
    }
}

// a last-block-done counter, but block 1 takes its ticket before block 0 has written and fenced:
// the ticket orders nothing, though block 1 reads after block 0's write
extern "C" __global__ void early_ticket(const int* x, int* data, int* count, int* out) {
    if (threadIdx.x != 0) return;
    int acc = 0;
    if (blockIdx.x == 0) {
        for (int k = 0; k < 64; ++k) acc += x[k];  // block 1 takes its ticket meanwhile
        data[0] = acc;  // @TICKET_DATA
        __threadfence();
        atomicAdd(count, 1);
    } else {
        int ticket = atomicAdd(count, 1);
        for (int k = 0; k < 256; ++k) acc += x[k % 64];
        out[0] = data[0] + ticket + acc;  // @TICKET_USE
    }
}

// one block stores the flag (volatile), the other bumps it with an atomic; `first` is the block
// that goes first (the other works through x before): both accesses are strong
extern "C" __global__ void strong_flag(const int* x, volatile int* flag, int* out, int first) {
    if (threadIdx.x != 0) return;
    int acc = 0;
    if (blockIdx.x != first) {
        for (int k = 0; k < 64; ++k) acc += x[k];
    }
    if (blockIdx.x == 0) {
        flag[0] = 1 + acc;
    } else {
        out[0] = atomicAdd((int*)&flag[0], 1) + acc;
    }
}
"""


def _marked_in(source: str, tag: str) -> int:
    (line,) = [n for n, ln in enumerate(source.splitlines(), 1) if f"@{tag} " in ln or ln.endswith(f"@{tag}")]
    return line


def _flag_args(*sizes: int) -> tuple:
    return (course.asarray(np.arange(64, dtype=np.int32)), *(course.zeros(n, np.int32) for n in sizes))


@pytest.mark.parametrize(
    ("writer", "fencer"), [(32, 0), (0, 32), (5, 37), (37, 5), (40, 40), (5, 5)]
)  # fmt: skip
def test_a_fence_releases_its_own_threads_writes_and_the_blocks_only_after_a_barrier(
    writer: int, fencer: int
) -> None:
    def found(sync: int) -> Findings:
        return check(
            PUBLISH, "publish", 2, 64, (*_flag_args(1, 1, 1), *map(np.int32, (sync, writer, fencer)))
        )

    assert found(1) == []
    if writer == fencer:  # any thread, of any warp: its fence releases what it wrote itself
        assert found(0) == [], str(found(0))
        return
    (f,) = found(0)
    assert (f.kind, f.buffer, f.scope, f.elements) == ("race", "data", "between blocks", (0,))
    assert f.lines == (_marked_in(PUBLISH, "DATA"), _marked_in(PUBLISH, "USE"))


def test_an_atomic_ticket_taken_before_the_release_orders_nothing() -> None:
    found, trace = (
        course.Module(code=PUBLISH).get_function("early_ticket").inspect(2, 32, _flag_args(1, 1, 1))
    )
    data, use = _marked_in(PUBLISH, "TICKET_DATA"), _marked_in(PUBLISH, "TICKET_USE")
    ran = trace.space == "global"
    assert trace.step[ran & (trace.line == data)].min() < trace.step[ran & (trace.line == use)].min()
    (f,) = found
    assert (f.kind, f.buffer, f.scope, f.lines) == ("race", "data", "between blocks", (data, use))


@pytest.mark.parametrize("first", [0, 1], ids=["store-first", "atomic-first"])
def test_a_volatile_store_and_another_blocks_atomic_on_one_word_are_no_race(first: int) -> None:
    found, trace = (
        course.Module(code=PUBLISH)
        .get_function("strong_flag")
        .inspect(2, 32, (*_flag_args(1, 1), np.int32(first)))
    )
    flag = trace.buffer_id("flag")
    store, atomic = (
        trace.step[(trace.buffer[:, 0] == flag) & (trace.op == op)].min() for op in ("st", "atom")
    )
    assert (store < atomic) == (first == 0)  # each order happened
    assert found == [], str(found)


CAS_PEEK = r"""
extern "C" __global__ void cas_and_peek(const int* x, int* y) {
    __shared__ int m;
    if (threadIdx.x == 0) m = 0;
    __syncthreads();
    if (threadIdx.x == 0) {
        int old = m;  // @FIRST the CAS loop's first read: a read, checked by the CAS
        int acc = 0;
        for (int k = 0; k < 64; ++k) acc += x[k];
        atomicCAS(&m, old, acc);  // @CAS
    }
    if (threadIdx.x == 32) y[0] = m;  // @PEEK another warp reads m between the two
    __syncthreads();
}
"""


CAS_LATE = r"""
__device__ void atomic_max(int* p, int v) {
    int old = *p, assumed;  // @FIRST a plain read, checked by the CAS below
    do {
        assumed = old;
        if (assumed >= v) break;
        old = atomicCAS(p, assumed, v);  // @CAS
    } while (assumed != old);
}

// warp 0's lane 0 runs its CAS loop at once; warp 1's lane 0 starts after working through x
extern "C" __global__ void late_max(const int* x, int* y) {
    __shared__ int m;
    if (threadIdx.x == 0) m = 0;
    __syncthreads();
    int v = 1;
    if (threadIdx.x == 32) {
        for (int k = 0; k < 64; ++k) v += x[k];
    }
    if (threadIdx.x % 32 == 0) atomic_max(&m, v);
    __syncthreads();
    if (threadIdx.x == 0) y[0] = m;
}
"""


def test_a_cas_loop_that_starts_after_another_warps_cas_is_no_race() -> None:
    found, trace = (
        course.Module(code=CAS_LATE)
        .get_function("late_max")
        .inspect(1, 64, (course.asarray(np.arange(64, dtype=np.int32)), course.zeros(1, np.int32)))
    )
    shared = trace.space == "shared"
    first, cas = (_marked_in(CAS_LATE, t) for t in ("FIRST", "CAS"))
    reads = np.sort(trace.step[shared & (trace.line == first)])
    cas_steps = np.sort(trace.step[shared & (trace.line == cas)])
    assert len(reads) == 2 and cas_steps[0] < reads[1]  # warp 1's first read follows warp 0's CAS
    assert found == [], str(found)


def test_a_cas_loops_first_read_and_another_warps_read_are_two_reads_the_cas_races() -> None:
    found, trace = (
        course.Module(code=CAS_PEEK)
        .get_function("cas_and_peek")
        .inspect(1, 64, (course.asarray(np.arange(64, dtype=np.int32)), course.zeros(1, np.int32)))
    )
    first, cas, peek = (_marked_in(CAS_PEEK, t) for t in ("FIRST", "CAS", "PEEK"))
    shared = trace.space == "shared"
    step = {n: int(trace.step[shared & (trace.line == n)].min()) for n in (first, cas, peek)}
    assert step[first] < step[peek] < step[cas]  # the peek falls between the first read and the CAS
    (f,) = found
    assert (f.kind, f.space, f.buffer, f.scope, f.count) == ("race", "shared", "m", "between warps", 1)
    assert f.lines == (cas, peek)  # not the first read: two reads never race


LAST_BLOCK = r"""
// CUDA's threadFenceReduction: each block publishes its partial sum, and the block that takes the
// last ticket adds them up and resets the counter with a plain store for the next launch
extern "C" __global__ void last_block_resets(const int* x, int* partial, unsigned* count, int* out) {
    __shared__ bool last;
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = x[blockIdx.x];
        __threadfence();
        last = atomicAdd(count, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
        int sum = 0;
        for (int b = 0; b < gridDim.x; ++b) sum += partial[b];
        out[0] = sum;
        *count = 0;  // after every block's atomic: an atomic never races in global memory
    }
}
"""


def test_the_last_block_may_reset_the_counter_with_a_plain_store() -> None:
    x = np.arange(1, 6, dtype=np.int32)
    args = (
        course.asarray(x),
        course.zeros(5, np.int32),
        course.zeros(1, np.uint32),
        course.zeros(1, np.int32),
    )
    kernel = course.Module(code=LAST_BLOCK).get_function("last_block_resets")
    assert kernel.check(5, 32, args) == []
    kernel(5, 32, args)
    assert int(course.asnumpy(args[3])[0]) == x.sum() and int(course.asnumpy(args[2])[0]) == 0


# ---------------------------------------------------------------- what a finding says

DETAILS = r"""
extern "C" __global__ void global_in_a_warp(float* y) {
    y[threadIdx.x + 1] = y[threadIdx.x];
}

extern "C" __global__ void global_between_warps(float* y) {
    if (threadIdx.x == 0) y[0] = 1.0f;
    if (threadIdx.x == 32) y[1] = y[0];
}

extern "C" __global__ void wide_write_narrow_read(float* y) {
    __shared__ float s[64];
    if (threadIdx.x == 0) reinterpret_cast<float2*>(s)[0] = make_float2(1.0f, 2.0f);
    if (threadIdx.x == 32) y[0] = s[1];
}

extern "C" __global__ void write_write_read(float* y) {
    volatile __shared__ float s[32];
    if (threadIdx.x == 0) s[0] = 1.0f;
    if (threadIdx.x == 32) {
        s[0] = 2.0f;
        y[0] = s[0];
    }
}

// warp 1 passes a __syncwarp(), warp 0 (whose lanes race) none
extern "C" __global__ void other_warp_syncs(float* y) {
    volatile __shared__ float s[32];
    if (threadIdx.x == 0) s[0] = 42.0f;
    if (threadIdx.x >= 32) __syncwarp();
    else y[blockIdx.x * 32 + threadIdx.x] = s[0];
}

extern "C" __global__ void dynamic_shared(float* y) {
    extern __shared__ float s[];
    s[threadIdx.x] = 1.0f;
    y[threadIdx.x] = s[threadIdx.x];
}
"""


@pytest.mark.parametrize(
    ("name", "block", "scope", "why"),
    [("global_in_a_warp", 32, "within a warp", "lanes of one warp"),
     ("global_between_warps", 64, "between warps", "threads of one block")],
)  # fmt: skip
def test_global_races_inside_one_block_say_so(name: str, block: int, scope: str, why: str) -> None:
    (f,) = check(DETAILS, name, 1, block, (course.zeros(128, np.float32),))
    assert (f.kind, f.space, f.buffer, f.scope) == ("race", "global", "y", scope)
    assert f.explanation.startswith(why) and "between blocks" not in f.explanation
    head = str(f).splitlines()[0]
    assert head.startswith(f"[race] in global memory `y` ({scope}), line")
    assert ", ".join(map(str, f.lines)) in head  # the lines, by number


def test_a_wide_write_races_with_a_narrow_read_of_its_second_half() -> None:
    found = check(DETAILS, "wide_write_narrow_read", 1, 64, (course.zeros(64, np.float32),))
    (f,) = found.of("race")
    assert (f.space, f.buffer, f.scope) == ("shared", "s", "between warps")
    assert f.elements == (1,) and "s[1]" in f.examples[0]  # the float2 at s[0] covers s[0] and s[1]
    assert f.lines == (
        line_of(DETAILS, "if (threadIdx.x == 0) reinterpret_cast<float2*>(s)[0] = make_float2(1.0f, 2.0f);"),
        line_of(DETAILS, "if (threadIdx.x == 32) y[0] = s[1];"),
    )


def test_a_read_races_with_another_warps_write_behind_its_own() -> None:
    """Warp 1 writes s[0] after warp 0 did, then reads it: both its write and its read race with
    warp 0's write, though the access just before the read is warp 1's own."""
    (f,) = check(DETAILS, "write_write_read", 1, 64, (course.zeros(64, np.float32),))
    assert (f.kind, f.scope, f.count) == ("race", "between warps", 2)
    assert f.lines == tuple(
        line_of(DETAILS, t) for t in ("if (threadIdx.x == 0) s[0] = 1.0f;", "s[0] = 2.0f;", "y[0] = s[0];")
    )
    assert len(f.examples) == 2


def test_a_syncwarp_orders_only_its_own_warp() -> None:
    (f,) = check(DETAILS, "other_warp_syncs", 2, 64, (course.zeros(64, np.float32),))
    assert (f.kind, f.scope) == ("race", "within a warp")
    assert f.blocks == ((0, 0, 0), (1, 0, 0))  # warp 0 of each block, whatever the other warps did
    assert f.count == 2 * 31  # lanes 1-31 of warp 0 read what lane 0 wrote, in each block


def test_an_extern_shared_array_without_dynamic_shared_memory() -> None:
    y = course.zeros(32, np.float32)
    (f,) = check(DETAILS, "dynamic_shared", 1, 32, (y,))
    assert (f.kind, f.space, f.buffer) == ("out-of-bounds", "shared", "s")
    assert "no memory at all" in f.explanation and "shared_mem=" in f.explanation
    assert check(DETAILS, "dynamic_shared", 1, 32, (y,), shared_mem=32 * 4) == []


def test_a_finding_spells_out_a_few_examples_however_many_line_pairs_race() -> None:
    (f,) = cp.checker_findings(cp.program("volatile_warp"))
    assert len(f.lines) - 1 > checks.EXAMPLES + 1  # more racing line pairs than examples shown
    assert len(f.examples) == checks.EXAMPLES + 1  # one for each of the first line pairs, no more
    assert len(set(f.examples)) == len(f.examples)


# ---------------------------------------------------------------- who and where, in 2-D and 3-D launches

CHOSEN = r"""
// one chosen thread of one chosen block does something wrong; who = (bx, by, bz, tx, ty, tz)
__device__ bool chosen(const int* who) {
    return blockIdx.x == who[0] && blockIdx.y == who[1] && blockIdx.z == who[2] &&
           threadIdx.x == who[3] && threadIdx.y == who[4] && threadIdx.z == who[5];
}

__device__ int linear_thread() { return (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x; }

__device__ int linear_block() { return (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x; }

extern "C" __global__ void reads_unwritten(float* y, const int* who) {
    __shared__ float s[8];
    if (linear_thread() < 4) s[linear_thread()] = 1.0f;
    __syncthreads();
    if (chosen(who)) y[0] = s[5];
}

extern "C" __global__ void writes_unsynced(float* y, const int* who) {
    __shared__ float s[8];
    if (linear_thread() < 8) s[linear_thread()] = 1.0f;
    __syncthreads();
    if (linear_thread() == 0) y[linear_block()] = s[1];  // @READ
    if (chosen(who)) s[1] = -1.0f;  // @WRITE
}

extern "C" __global__ void leaves_early(float* y, const int* who) {
    __shared__ float s[128];
    if (chosen(who)) return;
    s[linear_thread()] = 1.0f;
    __syncthreads();  // @BARRIER
    y[linear_block() * 128 + linear_thread()] = s[linear_thread()];
}
"""


def _launch_shape(seed: int, dims: int) -> tuple[tuple[int, ...], tuple[int, ...], list[int]]:
    """A random grid and block of `dims` dimensions (awkward sizes, every one above 1) and a random
    (blockIdx, threadIdx) in them whose y (and z) are not 0."""
    rng = np.random.default_rng(seed)
    grid = (int(rng.integers(2, 6)), int(rng.integers(2, 6)), int(rng.integers(2, 4)) if dims == 3 else 1)
    block = (int(rng.integers(3, 9)), int(rng.integers(2, 6)), int(rng.integers(2, 4)) if dims == 3 else 1)
    pick = [int(rng.integers(min(i % 3, 1, d - 1), d)) for i, d in enumerate(grid + block)]
    return grid, block, pick


def _chosen(name: str, seed: int, dims: int) -> tuple[Findings, Any, tuple[int, ...], tuple[int, ...]]:
    grid, block, pick = _launch_shape(seed, dims)
    kernel = course.Module(code=CHOSEN).get_function(name)
    y = course.zeros(128 * int(np.prod(grid)), np.float32)
    found, trace = kernel.inspect(grid, block, (y, course.asarray(np.array(pick, np.int32))))
    return found, trace, tuple(pick[:3]), tuple(pick[3:])


SHAPES = [pytest.param(seed, dims, id=f"{dims}d-seed={seed}") for dims in (2, 3) for seed in (1, 2, 3)]


def _coord_text(c: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, c)) + ")"


@pytest.mark.parametrize(("seed", "dims"), SHAPES)
def test_an_uninitialised_read_names_its_block_and_thread_in_every_dimension(seed: int, dims: int) -> None:
    found, _, b, t = _chosen("reads_unwritten", seed, dims)
    (f,) = found
    assert (f.kind, f.buffer, f.elements, f.count) == ("uninitialized", "s", (5,), 1)
    assert (f.blocks, f.threads) == ((b,), (t,))
    assert f.examples == (f"block {_coord_text(b)} thread {_coord_text(t)} reads s[5]",)


@pytest.mark.parametrize(("seed", "dims"), SHAPES)
def test_a_race_names_both_threads_in_every_dimension(seed: int, dims: int) -> None:
    found, _, b, t = _chosen("writes_unsynced", seed, dims)
    (f,) = found
    assert (f.kind, f.buffer, f.elements, f.count) == ("race", "s", (1,), 1)
    assert f.blocks == (b,) and set(f.threads) == {(0, 0, 0), t}
    assert f.lines == (line_of(CHOSEN, "if (linear_thread() == 0) y[linear_block()] = s[1];"),
                       line_of(CHOSEN, "if (chosen(who)) s[1] = -1.0f;"))  # fmt: skip
    # thread 0 reads s[1] first, then the chosen thread writes it (the emulator runs lower warps first)
    assert f.examples == (
        f"block {_coord_text(b)}: thread (0, 0, 0) reads s[1] (line {f.lines[0]}), "
        f"then thread {_coord_text(t)} writes it (line {f.lines[1]})",
    )


@pytest.mark.parametrize(("seed", "dims"), SHAPES)
def test_a_thread_that_leaves_before_a_barrier_is_named_with_its_block(seed: int, dims: int) -> None:
    found, trace, b, t = _chosen("leaves_early", seed, dims)
    (f,) = found.of("barrier-divergence")
    barrier = next(n for n, ln in enumerate(CHOSEN.splitlines(), 1) if "@BARRIER" in ln)
    (exit_line,) = set(trace.line[trace.op == "exit"].tolist())  # NVRTC gives a kernel one exit
    assert exit_line != barrier
    assert (f.lines, f.blocks, f.threads, f.count) == ((barrier, exit_line), (b,), (t,), 1)
    _, block, _ = _launch_shape(seed, dims)
    tid = (t[2] * block[1] + t[1]) * block[0] + t[0]  # the finding counts threads by linear id
    assert f.examples[0].startswith(f"block {_coord_text(b)}: threads ")
    assert f.examples[0].endswith(f"threads {tid} never do: they finished at line {exit_line}")


def test_a_barrier_and_the_exit_on_one_line_name_that_line_once() -> None:
    src = (
        'extern "C" __global__ void half(float* y) { __shared__ float s[64]; s[threadIdx.x] = 1.0f; '
        "if (threadIdx.x < 16) __syncthreads(); y[threadIdx.x] = s[threadIdx.x]; }"
    )
    (f,) = check(src, "half", 1, 64, (course.zeros(64, np.float32),))
    assert (f.kind, f.lines, f.code) == ("barrier-divergence", (1,), (src,))
    assert "threads 0-15 reach the __syncthreads() on line 1" in f.examples[0]
    assert "threads 16-63 never do: they finished at line 1" in f.examples[0]


READ_WRITE = r"""
extern "C" __global__ void read_then_write(float* x, int reader, int writer) {
    float v = 0.0f;
    if (threadIdx.x == reader) v = x[0];
    if (threadIdx.x == writer) x[0] = 2.0f;
    if (threadIdx.x == reader) x[1] = v;
}
"""


@pytest.mark.parametrize(
    ("reader", "writer", "scope"),
    [(3, 40, "between warps"), (40, 3, "between warps"), (3, 7, "within a warp"), (7, 3, "within a warp")],
)
def test_one_read_and_one_write_of_a_word_are_one_racing_access_told_in_the_order_they_ran(
    reader: int, writer: int, scope: str
) -> None:
    kernel = course.Module(code=READ_WRITE).get_function("read_then_write")
    x = course.asarray(np.arange(2, dtype=np.float32))
    found, trace = kernel.inspect(1, 64, (x, np.int32(reader), np.int32(writer)))
    (f,) = found
    read = line_of(READ_WRITE, "if (threadIdx.x == reader) v = x[0];")
    write = line_of(READ_WRITE, "if (threadIdx.x == writer) x[0] = 2.0f;")
    assert (f.kind, f.buffer, f.scope, f.lines) == ("race", "x", scope, (read, write))
    assert (f.elements, f.count) == ((0,), 1)  # one word, one racing pair: counted once, whoever went first
    ran = trace.space == "global"
    step = {line: int(trace.step[ran & (trace.line == line)].min()) for line in (read, write)}
    first, then = sorted([(step[read], reader, "reads", read), (step[write], writer, "writes", write)])
    assert f.examples == (
        f"block (0, 0, 0): thread ({first[1]}, 0, 0) {first[2]} x[0] (line {first[3]}), "
        f"then thread ({then[1]}, 0, 0) {then[2]} it (line {then[3]})",
    )


NO_SHARED = r"""
extern "C" __global__ void registers_only(int n) {
    int v = threadIdx.x;
    for (int i = 0; i < n; ++i) v = v * 3 + 1;
}

extern "C" __global__ void global_only(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * i;
}
"""


@pytest.mark.parametrize(("name", "args"), [("registers_only", (np.int32(5),)),
                                            ("global_only", (course.zeros(1000, np.float32), np.int32(1000)))])  # fmt: skip
def test_a_kind_of_access_a_kernel_never_makes_gives_no_findings(name: str, args: tuple) -> None:
    """No shared accesses (and none at all): every check of the trace finds nothing, none fails."""
    found, trace = course.Module(code=NO_SHARED).get_function(name).inspect(3, 384, args)
    assert found == [] and not (trace.space == "shared").any()
    assert (
        checks.races(trace) == []
        and checks.uninitialized(trace) == []
        and checks.barrier_divergence(trace) == []
    )
    nothing_held = {b.base: np.zeros(b.nbytes, bool) for b in trace.buffers}
    assert checks.find(trace, initialized=nothing_held) == []  # writes only: no read of what nobody wrote


# ---------------------------------------------------------------- uninitialised global memory


FILL = r"""
extern "C" __global__ void fill_first(float* out, int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) out[i] = 1.0f;
}

extern "C" __global__ void accumulate(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += x[i];
}

extern "C" __global__ void read_one(const float* x, float* y, int k) {
    if (blockIdx.x == 0 && threadIdx.x == 0) y[0] = x[k];
}

extern "C" __global__ void write_byte(unsigned char* x, int k) {
    if (threadIdx.x == 0) x[k] = 1;
}

extern "C" __global__ void read_byte(const unsigned char* x, unsigned char* y, int k) {
    if (threadIdx.x == 0) y[0] = x[k];
}
"""


def test_course_empty_is_tracked_per_element_across_launches() -> None:
    mod = course.Module(code=FILL)
    fill, acc = mod.get_function("fill_first"), mod.get_function("accumulate")
    x, out = course.asarray(np.ones(256, np.float32)), course.empty(256, np.float32)
    args = (x, out, np.int32(256))
    assert {f.kind for f in acc.check(2, 128, args)} == {"uninitialized"}
    assert not out.initialized  # check() ran on a copy: nothing was written
    fill(2, 128, (out, np.int32(100)))  # a real launch writes out[0..99]
    (f,) = acc.check(2, 128, args)
    assert (f.element_count, f.elements) == (156, (100, 101, 102))
    fill(2, 128, (out, np.int32(256)))
    assert out.initialized and acc.check(2, 128, args) == []
    assert course.zeros(4).initialized and course.asarray(np.ones(4)).initialized


@pytest.mark.parametrize("k", [0, 5, 6, 7])
def test_one_read_of_one_element_of_an_empty_array(k: int) -> None:
    """The smallest case: a single access to the array, of an element written or not."""
    mod = course.Module(code=FILL)
    x = course.empty(8, np.float32)
    mod.get_function("fill_first")(1, 32, (x, np.int32(5)))  # x[0..4] hold values, x[5..7] none
    found = mod.get_function("read_one").check(2, 32, (x, course.zeros(1, np.float32), np.int32(k)))
    if k < 5:
        assert found == [], str(found)
    else:
        (f,) = found
        assert (f.kind, f.buffer, f.elements, f.count) == ("uninitialized", "x", (k,), 1)
        assert f.examples == (f"block (0, 0, 0) thread (0, 0, 0) reads x[{k}]",)


@pytest.mark.parametrize("written", [0, 1, 7])
def test_each_byte_of_a_byte_array_holds_a_value_or_not_on_its_own(written: int) -> None:
    mod = course.Module(code=FILL)
    x = course.empty(8, np.uint8)
    mod.get_function("write_byte")(1, 32, (x, np.int32(written)))
    for k in (0, 1, 7):
        found = mod.get_function("read_byte").check(1, 32, (x, course.zeros(1, np.uint8), np.int32(k)))
        if k == written:
            assert found == [], str(found)
        else:
            (f,) = found
            assert (f.kind, f.buffer, f.elements) == ("uninitialized", "x", (k,)), (written, k)


def test_check_leaves_the_callers_arrays_and_device_variables_alone() -> None:
    x = np.arange(1000, dtype=np.uint32)
    run = first_launch("reduce_single_pass", x, block=64)
    before = [course.asnumpy(a).copy() if hasattr(a, "shape") else a for a in run.args]
    assert run.kernel.check(run.grid, run.block, run.args) == []
    for b, a in zip(before, run.args):
        if hasattr(a, "shape"):
            np.testing.assert_array_equal(course.asnumpy(a), b)
    run()  # blocks_done is back at 0: the real launch still finds its last block
    assert course.asnumpy(run.args[2])[0] == x.sum()  # (x, partial, out, n)


def test_an_array_passed_twice_stays_one_array() -> None:
    src = r"""
extern "C" __global__ void shift(const float* x, float* y, int n) {
    int i = threadIdx.x;
    if (i + 1 < n) y[i] = x[i + 1];
}
"""
    a = course.asarray(np.arange(64, dtype=np.float32))
    (f,) = check(src, "shift", 1, 64, (a, a, np.int32(64)))  # in place: warps read what others write
    assert (f.kind, f.buffer) == ("race", "x")


def test_check_validates_like_a_launch() -> None:
    k = course.Module(code=FILL).get_function("accumulate")
    with pytest.raises(TypeError):
        k.check(1, 32, (course.zeros(4), course.zeros(4), 4))  # a Python int for an int
    with pytest.raises(course.LaunchError):
        k.check(1, 2048, (course.zeros(4), course.zeros(4), np.int32(4)))


# ---------------------------------------------------------------- every course kernel


@pytest.mark.parametrize("name", CORRECT_VERSIONS)
@pytest.mark.parametrize(("n", "block"), [(1, 32), (1000, 64), (5000, 256)])
def test_every_correct_reduction_is_clean(name: str, n: int, block: int) -> None:
    x = np.arange(n, dtype=np.uint32)
    run = first_launch(name, x, block=block)
    found = run.kernel.check(run.grid, run.block, run.args, shared_mem=run.shared_mem)
    assert found == [], str(found)


def test_a_float_reduction_is_clean_too() -> None:
    run = first_launch("reduce7", np.linspace(-1, 1, 3000, dtype=np.float32), block=128)
    assert run.kernel.check(run.grid, run.block, run.args, shared_mem=run.shared_mem) == []


@pytest.mark.parametrize(
    ("name", "text"),
    [("reduce4_article", "sdata[tid] = (i < n) ? x[i] + x[i + blockDim.x] : 0;"),
     ("reduce7_article", "sdata[tid] += x[i] + x[i + blockSize];")],
)  # fmt: skip
def test_article_loads_past_the_end_when_n_is_not_a_multiple_of_two_blocks(name: str, text: str) -> None:
    run = first_launch(name, np.arange(1000, dtype=np.uint32), block=64)
    (f,) = run.kernel.check(run.grid, run.block, run.args, shared_mem=run.shared_mem)
    assert (f.kind, f.buffer, f.lines, min(f.elements)) == (
        "out-of-bounds",
        "x",
        (line_of(REDUCTION_CU, text),),
        1000,
    )
    run = first_launch(name, np.arange(4096, dtype=np.uint32), block=64)
    assert (
        "out-of-bounds"
        not in run.kernel.check(run.grid, run.block, run.args, shared_mem=run.shared_mem).kinds()
    )


@pytest.mark.parametrize(
    ("name", "text"),
    [("reduce5_article", "sdata[tid] += sdata[tid + 16];"),
     ("reduce6_article", "if (blockSize >= 32) sdata[tid] += sdata[tid + 16];"),
     ("reduce7_article", "if (blockSize >= 32) sdata[tid] += sdata[tid + 16];")],
)  # fmt: skip
@pytest.mark.parametrize("block", [64, 256])
def test_article_warp_synchronous_code_races(name: str, text: str, block: int) -> None:
    run = first_launch(name, np.arange(4 * 2 * block, dtype=np.uint32), block=block)
    (f,) = run.kernel.check(run.grid, run.block, run.args, shared_mem=run.shared_mem)
    assert (f.kind, f.space, f.buffer, f.scope) == ("race", "shared", "sdata", "within a warp")
    assert line_of(REDUCTION_CU, text) in f.lines and len(f.lines) == 6


def test_article_timing_races_on_time() -> None:
    run = first_launch("reduce3_timed", np.arange(1000, dtype=np.uint32), block=128)
    (f,) = run.kernel.check(run.grid, run.block, run.args, shared_mem=run.shared_mem)
    assert (f.kind, f.space, f.buffer, f.scope) == ("race", "global", "time", "between blocks")
    assert f.lines == (line_of(REDUCTION_CU, "*time = clock64() - start;"),)


def test_checking_a_64_block_256_thread_reduction_takes_well_under_a_second() -> None:
    x = np.arange(64 * 256 * 2, dtype=np.uint32)
    for name in ("reduce3", "reduce5_article"):
        run = first_launch(name, x[: 64 * 256 * BY_NAME[name].grid.per_thread], block=256)
        assert run.grid == (64, 1, 1)
        best = float("inf")
        for _ in range(2):  # the first may compile
            start = time.perf_counter()
            run.kernel.check(run.grid, run.block, run.args, shared_mem=run.shared_mem)
            best = min(best, time.perf_counter() - start)
        assert best < 1.0, f"{name}: {best:.2f} s"


# ---------------------------------------------------------------- the findings list


def test_findings_print_as_text_and_html_and_compare_as_lists() -> None:
    found: Findings = cp.checker_findings(cp.program("early_return"))
    assert issubclass(Findings, list) and found.kinds() == {"barrier-divergence", "uninitialized"}
    assert [f.kind for f in found] == ["uninitialized", "barrier-divergence"]  # in the order of KINDS
    text = str(found)
    assert text.startswith("rotate: 2 findings") and "[barrier-divergence] line" in text
    assert "__syncthreads();" in text and "e.g. block (7, 0, 0)" in text
    html = found._repr_html_()
    assert html.count("<tr>") == 3 and "barrier-divergence" in html
    assert found.of("race") == [] and len(found.of("uninitialized")) == 1
    with pytest.raises(ValueError):
        found.of("deadlock")
    clean = Findings([], "k")
    assert clean == [] and str(clean) == "k: no bugs found" and "no bugs" in clean._repr_html_()
    assert set(checks.KINDS) == {"out-of-bounds", "race", "uninitialized", "barrier-divergence", "misaligned"}
    assert Finding("race", (3,), "why").count == 1


# ---------------------------------------------------------------- the cross-check script (no GPU)


def test_crosscheck_programs_cover_the_course_and_every_kind() -> None:
    progs = cp.programs()
    names = [p.name for p in progs]
    assert len(names) == len(set(names))
    assert set(BY_NAME) <= set(names)
    assert {p.expected for p in progs} == {"", *checks.KINDS}
    for p in progs:
        if p.name in BY_NAME:
            assert bool(p.expected) == bool(BY_NAME[p.name].bug)
        elif p.expected:
            assert p.bug_lines(), p.name
            assert f"{p.name}_fixed" in names, p.name
    default = cp.programs(twins=False)
    assert not any(p.twin for p in default) and len(default) == len(progs) - len(TWINS)


def test_crosscheck_commands_and_sanitizer_reports() -> None:
    cmd = sanitizer.sanitizer_command("/opt/cs", "racecheck", ["python3", "run.py", "off_by_one"])
    assert cmd[:5] == ["/opt/cs", "--tool", "racecheck", "--error-exitcode", "99"]
    assert cmd[-3:] == ["python3", "run.py", "off_by_one"]
    log = (
        "========= COMPUTE-SANITIZER\n"
        "========= Invalid __global__ read of size 4 bytes\n"
        "=========     at copy+0x80 in kernel.cu:3\n"
        "========= ERROR SUMMARY: 1 error\n"
    )
    assert sanitizer.first_report(log) == "Invalid __global__ read of size 4 bytes (ERROR SUMMARY: 1 error)"
    assert (
        sanitizer.first_report("Traceback...\nCUDARuntimeError: misaligned address")
        == "CUDARuntimeError: misaligned address"
    )
    cells = [sanitizer.ToolResult(rc).cell for rc in (99, 0, 3, None)]
    assert cells == ["**flagged**", "clean", f"program failed (rc {sanitizer.APP_FAILED})", "timeout"]


def crosscheck(*args: str) -> None:
    """scripts/sanitizer_crosscheck.py, run with `args`; it must succeed."""
    done = subprocess.run(
        [sys.executable, str(CROSSCHECK), *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr


HEADER = "| program | expected bug | memcheck | racecheck | synccheck | initcheck | course checker |"


def test_crosscheck_checker_only_table(tmp_path: Path) -> None:
    out = tmp_path / "docs" / "table.md"
    crosscheck(str(out), "--checker-only", "--programs", "reduce3,reduce4_article,off_by_one,half_loaded")
    text = out.read_text()
    assert HEADER in text and "--checker-only" in text and "not run" in text
    rows = {ln.split("|")[1].strip(" `"): ln for ln in text.splitlines() if ln.startswith("| `")}
    assert set(rows) == {"reduce3", "reduce4_article", "off_by_one", "half_loaded"}
    assert rows["reduce3"].rstrip(" |").endswith("clean")
    assert "out-of-bounds (line 3)" in rows["off_by_one"]
    assert "uninitialized (line 6)" in rows["half_loaded"]
    assert "4 of 4 programs" in text


def test_crosscheck_with_a_stand_in_sanitizer(tmp_path: Path) -> None:
    """The GPU half's plumbing, with a fake compute-sanitizer that flags memcheck runs only."""
    fake = tmp_path / "compute-sanitizer"
    fake.write_text(
        "#!/bin/sh\n"
        'case "$*" in *"--version"*) echo "Version 2099.1.0"; exit 0;; esac\n'
        'if [ "$2" = memcheck ]; then echo "========= Invalid __global__ read of size 4 bytes";'
        ' echo "========= ERROR SUMMARY: 1 error"; exit 99; fi\n'
        "exit 0\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "table.md"
    crosscheck(
        str(out),
        "--sanitizer",
        str(fake),
        "--programs",
        "off_by_one,reduce3",
        "--tools",
        "memcheck,initcheck",
    )
    text = out.read_text()
    assert "compute-sanitizer Version 2099.1.0" in text and "--tool TOOL --error-exitcode 99" in text
    row = next(ln for ln in text.splitlines() if ln.startswith("| `off_by_one`"))
    assert [c.strip() for c in row.split("|")[3:7]] == ["**flagged**", "not run", "not run", "clean"]
    assert "- `off_by_one`, memcheck: Invalid __global__ read of size 4 bytes" in text


CAS_MAX = r"""
__device__ void atomic_max(float* p, float v) {
    int old = __float_as_int(*p), assumed;  // @READ a plain read, checked by the CAS below
    do {
        assumed = old;
        if (__int_as_float(assumed) >= v) break;
        old = atomicCAS((int*)p, assumed, __float_as_int(v));
    } while (assumed != old);
}

extern "C" __global__ void block_max(const float* x, float* out, int reset_late) {
    __shared__ float m;
    if (!reset_late && threadIdx.x == 0) m = -1e30f;
    __syncthreads();
    if (reset_late && threadIdx.x == 64) m = -1e30f;  // @RESET in the atomics' interval
    atomic_max(&m, x[blockIdx.x * blockDim.x + threadIdx.x]);
    atomic_max(out, x[blockIdx.x * blockDim.x + threadIdx.x]);
    __syncthreads();
}
"""


def test_a_compare_and_swap_loop_is_not_a_race_but_a_plain_reset_beside_atomics_is() -> None:
    def args(late: int) -> tuple:
        x = course.asarray(np.random.default_rng(0).standard_normal(256).astype(np.float32))
        return (x, course.asarray(np.full(1, -1e30, np.float32)), np.int32(late))

    found = check(CAS_MAX, "block_max", 2, 128, args(0))
    assert found == [], str(found)
    found = check(CAS_MAX, "block_max", 2, 128, args(1))
    reset = next(n for n, ln in enumerate(CAS_MAX.splitlines(), 1) if "@RESET" in ln)
    assert {f.kind for f in found} <= {"race", "uninitialized"} and found.of("race"), str(found)
    assert all(f.space == "shared" and reset in f.lines for f in found.of("race")), str(found)


@pytest.mark.parametrize("n", [1000, 1024, 700])
def test_atomics_into_unwritten_words_count_one_read_per_word_not_one_per_block(n: int) -> None:
    """The article's dot2 adds into c[threadIdx.x] of a course.empty() array with blocks that reach the
    atomic in the same step: the atomics on a word are serialised, so only the first found it
    unwritten and the rest read what it wrote (N = 1000 was counted 512 reads on 256 words)."""
    from course import dot

    a = np.arange(n, dtype=np.float32)
    (f,) = dot.check("dot2_article", a, 2 * a)
    assert (f.kind, f.buffer) == ("uninitialized", "c")
    assert f.count == 256  # one read per word of c, not one per block
