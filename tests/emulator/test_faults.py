"""Faults a learner's kernel commits: each raises the right exception, says where, and the process survives."""

from __future__ import annotations

import re
import time
from typing import Any

import numpy as np
import pytest

import course

from .programs import cu, line_of


def kernel(source: str, name: str) -> course.Kernel:
    return course.Module(code=source).get_function(name)


def device_args(*args: Any) -> tuple[Any, ...]:
    return tuple(course.asarray(a) if isinstance(a, np.ndarray) else a for a in args)


def assert_names_line(message: str, source: str, tag: str) -> None:
    """The message points at the marked .cu line: by its number or by its text."""
    n = line_of(source, tag)
    text = source.splitlines()[n - 1].split("//")[0].strip()
    assert re.search(rf"(line\s*|:|\(){n}\b", message) or text in message, (
        f"the message names neither line {n} nor its text {text!r}:\n{message}"
    )


@pytest.fixture(autouse=True)
def emulator_survives(emulator_backend: course.Device) -> Any:
    """After each fault, the same process still runs a kernel correctly."""
    yield
    k = kernel(
        'extern "C" __global__ void inc(int* x, int n) { int i = threadIdx.x; if (i < n) x[i] += 1; }', "inc"
    )
    x = course.asarray(np.arange(40, dtype=np.int32))
    k((1,), (64,), (x, np.int32(40)))
    np.testing.assert_array_equal(course.asnumpy(x), np.arange(1, 41, dtype=np.int32))


# ---------------------------------------------------------------- memory faults

COPY = cu("""
    extern "C" __global__ void copy_all(const float* src, float* dst, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i <= n) {  // off by one
            float v = src[i];  // @READ
            dst[i] = v;
        }
    }
""")


def test_read_one_past_the_end() -> None:
    n = 37
    args = device_args(np.arange(n, dtype=np.float32), np.zeros(n + 1, np.float32), np.int32(n))
    with pytest.raises(course.OutOfBoundsError) as info:
        kernel(COPY, "copy_all")((2,), (32,), args)
    msg = str(info.value)
    assert isinstance(info.value, IndexError)
    assert re.search(r"\bsrc\b", msg), msg
    assert len(re.findall(rf"\b{n}\b", msg)) >= 2, msg  # the index and the length (both 37)
    assert re.search(r"block\w*\W{0,4}1\b", msg, re.I) and re.search(r"thread\w*\W{0,4}5\b", msg, re.I), msg
    assert_names_line(msg, COPY, "READ")


SHIFT_WRITE = cu("""
    extern "C" __global__ void shift_write(const int* x, int* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) out[i - 1] = x[i];  // @WRITE
    }
""")


def test_write_before_the_start() -> None:
    n = 37
    args = device_args(np.arange(n, dtype=np.int32), np.zeros(n, np.int32), np.int32(n))
    with pytest.raises(course.OutOfBoundsError) as info:
        kernel(SHIFT_WRITE, "shift_write")((1,), (64,), args)
    msg = str(info.value)
    assert re.search(r"\bout\b", msg) and "-1" in msg and re.search(rf"\b{n}\b", msg), msg
    assert_names_line(msg, SHIFT_WRITE, "WRITE")


HISTOGRAM = cu("""
    extern "C" __global__ void histogram(const int* v, unsigned* hist, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) atomicAdd(&hist[v[i]], 1u);  // @ATOM
    }
""")


def test_atomic_out_of_bounds() -> None:
    v = np.array([0, 3, 9, 2, 10, 1], np.int32)  # 10 is past the 10 bins
    args = device_args(v, np.zeros(10, np.uint32), np.int32(len(v)))
    with pytest.raises(course.OutOfBoundsError) as info:
        kernel(HISTOGRAM, "histogram")((1,), (32,), args)
    msg = str(info.value)
    assert re.search(r"\bhist\b", msg) and re.search(r"\b10\b", msg), msg
    assert_names_line(msg, HISTOGRAM, "ATOM")


SHARED_SHIFT = cu("""
    extern "C" __global__ void shared_shift(const int* x, int* y) {
        __shared__ int tile[64];
        int t = threadIdx.x;
        tile[t + 1] = x[t];  // @SHARED
        __syncthreads();
        y[t] = tile[t];
    }
""")


def test_shared_memory_index_past_the_array() -> None:
    args = device_args(np.arange(64, dtype=np.int32), np.zeros(64, np.int32))
    with pytest.raises(course.OutOfBoundsError) as info:
        kernel(SHARED_SHIFT, "shared_shift")((1,), (64,), args)
    msg = str(info.value)
    assert "tile" in msg and "shared" in msg.lower(), msg
    assert_names_line(msg, SHARED_SHIFT, "SHARED")


MISALIGNED = cu("""
    extern "C" __global__ void read_words(const char* bytes, int* out, int offset) {
        const int* p = (const int*)(bytes + offset);
        out[threadIdx.x] = p[threadIdx.x];  // @LOAD
    }
""")


def test_misaligned_int_load() -> None:
    assert "ld.global.u32" in course.compiler.compile_ptx(MISALIGNED).ptx
    data = np.arange(160, dtype=np.uint8)
    k = kernel(MISALIGNED, "read_words")
    out = course.zeros(32, np.int32)
    k((1,), (32,), device_args(data, out, np.int32(4)))  # aligned: fine
    np.testing.assert_array_equal(course.asnumpy(out), data[4:132].view(np.int32))
    with pytest.raises(course.MisalignedAccessError) as info:
        k((1,), (32,), device_args(data, out, np.int32(1)))
    assert "thread" in str(info.value).lower(), str(info.value)
    assert_names_line(str(info.value), MISALIGNED, "LOAD")


# ---------------------------------------------------------------- synchronisation faults

SPLIT_BARRIER = cu("""
    extern "C" __global__ void split_barrier(int* x) {
        __shared__ int s[64];
        int t = threadIdx.x;
        if (t < 16) {
            s[t] = t;
            __syncthreads();  // @BAR_A
            x[t] = s[63 - t];
        } else {
            s[t] = -t;
            __syncthreads();  // @BAR_B
            x[t] = s[t - 16] * 2;
        }
    }
""")


def test_threads_at_different_syncthreads() -> None:
    assert course.compiler.compile_ptx(SPLIT_BARRIER).ptx.count("bar.sync") >= 2
    with pytest.raises(course.BarrierError) as info:
        kernel(SPLIT_BARRIER, "split_barrier")((1,), (64,), device_args(np.zeros(64, np.int32)))
    msg = str(info.value)
    try:
        assert_names_line(msg, SPLIT_BARRIER, "BAR_A")
    except AssertionError:
        assert_names_line(msg, SPLIT_BARRIER, "BAR_B")
    # each barrier with the threads waiting at it, and only those
    a, b = line_of(SPLIT_BARRIER, "BAR_A"), line_of(SPLIT_BARRIER, "BAR_B")
    assert re.search(rf"threads 0-15 wait at line {a}\b", msg), msg
    assert re.search(rf"threads 16-63 wait at line {b}\b", msg), msg


def test_a_checked_launch_reports_the_stuck_block_and_who_waits_where() -> None:
    from course.emulator import run_checked

    k = kernel(SPLIT_BARRIER, "split_barrier")
    args = [("x", np.zeros(128, np.int32))]
    _, report = run_checked(k.module.program, k.ptx_name, (2, 1, 1), (64, 1, 1), args)
    assert report is not None and report.kind == "barrier"
    a, b = line_of(SPLIT_BARRIER, "BAR_A"), line_of(SPLIT_BARRIER, "BAR_B")
    assert report.block == (0, 0, 0) and report.exited == ()
    assert report.waiting == ((a, tuple(range(16))), (b, tuple(range(16, 64))))


PARTIAL_SHUFFLE = cu("""
    extern "C" __global__ void partial_shuffle(int* x) {
        int v = x[threadIdx.x];
        if (threadIdx.x < 16) v = __shfl_sync(0xffffffffu, v, 20);  // @SHFL
        x[threadIdx.x] = v;
    }
""")


def test_shuffle_mask_names_lanes_that_are_not_there() -> None:
    with pytest.raises(course.BarrierError) as info:
        kernel(PARTIAL_SHUFFLE, "partial_shuffle")((1,), (32,), device_args(np.arange(32, dtype=np.int32)))
    assert_names_line(str(info.value), PARTIAL_SHUFFLE, "SHFL")


# Lanes 29-31 jump past a warp vote and come back to it: NVRTC lays code out so (the look-back
# scan's `while (__any_sync(...))` under NVRTC 13.0). The lanes that got there first wait.
LATE_LANES_PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry late_lanes(.param .u64 out)
{
    .reg .pred %p<4>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    and.b32 %r2, %r1, 31;
    mov.u32 %r3, 0;
    setp.ge.u32 %p1, %r2, 29;
    @%p1 bra $L__late;
$L__vote:
    setp.ne.u32 %p2, %r3, 0;
    vote.sync.ballot.b32 %r4, %p2, -1;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd3, %rd2, %rd3;
    st.global.u32 [%rd3], %r4;
    ret;
$L__late:
    mov.u32 %r3, 1;
    LATE
}
"""


def _late_lanes(then: str) -> np.ndarray:
    from course.emulator.machine import Program, run_kernel

    out = np.zeros(64, np.uint32)
    program = Program(LATE_LANES_PTX.replace("LATE", then), "")
    run_kernel(program, "late_lanes", (1, 1, 1), (64, 1, 1), [("out", out)])
    return out


def test_lanes_wait_at_a_warp_vote_for_lanes_still_on_their_way() -> None:
    # as on Volta and later: the vote runs once all 32 lanes are there, so every lane sees lanes 29-31
    assert (_late_lanes("bra.uni $L__vote;") == 0xE0000000).all()


@pytest.mark.parametrize("then", ["ret;", "bar.sync 0;\n    bra.uni $L__vote;"])
def test_lanes_that_never_come_to_a_warp_vote_are_an_error(then: str) -> None:
    # named by the first thread that waits, with its mask and the lanes it waits for
    with pytest.raises(
        course.BarrierError,
        match=r"thread \(0, 0, 0\) runs 'vote.sync.ballot.b32' with member mask 0xffffffff, "
        r"but lanes 0xe0000000 .* \(diverged\)",
    ):
        _late_lanes(then)


SPIN = cu("""
    extern "C" __global__ void wait_forever(volatile int* flag, int* out) {
        while (flag[0] == 0) {}  // @SPIN
        out[threadIdx.x] = 1;
    }
""")


def test_spin_on_a_flag_nobody_sets_exceeds_the_budget() -> None:
    args = device_args(np.zeros(1, np.int32), np.zeros(32, np.int32))
    start = time.perf_counter()
    with pytest.raises(course.InstructionBudgetExceeded) as info:
        kernel(SPIN, "wait_forever").trace((2,), (32,), args, budget=10_000)
    assert time.perf_counter() - start < 20, "a budget of 10,000 instructions should run out quickly"
    assert isinstance(info.value, TimeoutError)
    assert "10000" in str(info.value).replace(",", "").replace("_", ""), str(info.value)


def test_a_budget_set_for_a_block_of_code_holds_there_and_is_restored() -> None:
    from course.emulator import machine

    def budgets() -> tuple[int, int]:
        return machine.DEFAULT_BUDGET, machine.DEFAULT_WORK

    before = budgets()
    args = device_args(np.zeros(1, np.int32), np.zeros(32, np.int32))
    with course.emulator.budget(steps=10_000):  # a launch that names no budget takes this one
        assert budgets() == (10_000, before[1])
        with pytest.raises(course.InstructionBudgetExceeded, match="10000 scheduler steps"):
            kernel(SPIN, "wait_forever").trace((2,), (32,), args)
    assert budgets() == before
    with course.emulator.budget(work=123):
        assert budgets() == (before[0], 123)
    for bad in ({"steps": 0}, {"work": -5}):
        with pytest.raises(ValueError, match=rf"the {next(iter(bad))} budget must be positive"):
            course.emulator.set_budget(**bad)
    assert budgets() == before


# ---------------------------------------------------------------- bad arguments

SCALE = cu("""
    extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = a * x[i];
    }
""")


def scale_args() -> list[Any]:
    return [course.asarray(np.ones(8, np.float32)), course.zeros(8, np.float32), np.float32(2), np.int32(8)]


@pytest.mark.parametrize(
    ("position", "value", "named"),
    [
        pytest.param(3, 8, "n", id="python-int-for-int"),
        pytest.param(3, np.int64(8), "n", id="int64-for-int"),
        pytest.param(3, np.float32(8), "n", id="float-for-int"),
        pytest.param(2, 2.0, "a", id="python-float-for-float"),
        pytest.param(0, np.ones(8, np.float32), "x", id="numpy-array-for-pointer"),
        pytest.param(1, np.float32(1), "y", id="scalar-for-pointer"),
        pytest.param(2, course.asarray(np.ones(1, np.float32)), "a", id="array-for-scalar"),
    ],
)
def test_wrong_argument_names_the_parameter(position: int, value: Any, named: str) -> None:
    args = scale_args()
    args[position] = value
    with pytest.raises(TypeError) as info:
        kernel(SCALE, "scale")((1,), (32,), tuple(args))
    assert re.search(rf"\b{named}\b", str(info.value)), str(info.value)


@pytest.mark.parametrize("count", [3, 5])
def test_wrong_argument_count(count: int) -> None:
    args = (scale_args() + [np.int32(0)])[:count]
    with pytest.raises(TypeError) as info:
        kernel(SCALE, "scale")((1,), (32,), tuple(args))
    assert "4" in str(info.value) and str(count) in str(info.value), str(info.value)


# ---------------------------------------------------------------- bad launches


@pytest.mark.parametrize(
    ("grid", "block", "shared_mem"),
    [
        pytest.param((1,), (2048,), 0, id="block-of-2048"),
        pytest.param((1,), (32, 33), 0, id="block-of-1056-in-2d"),
        pytest.param((1,), (1, 1, 65), 0, id="block-z-65"),
        pytest.param((0,), (32,), 0, id="empty-grid"),
        pytest.param((1,), (32,), 228 * 1024, id="too-much-dynamic-shared"),
        pytest.param((1,), (32,), -4, id="negative-shared"),
    ],
)
def test_launch_outside_the_limits(grid: tuple[int, ...], block: tuple[int, ...], shared_mem: int) -> None:
    with pytest.raises(course.LaunchError):
        kernel(SCALE, "scale")(grid, block, tuple(scale_args()), shared_mem=shared_mem)


# ---------------------------------------------------------------- compile errors

BROKEN = cu("""
    extern "C" __global__ void broken(int* x) {
        int i = threadIdx.x;
        x[i] = undefined_thing + 1;
    }
""")


def test_compile_error_quotes_the_offending_line() -> None:
    with pytest.raises(course.CompileError) as info:
        course.Module(code=BROKEN)
    assert "x[i] = undefined_thing + 1;" in str(info.value)


def test_a_lane_outside_its_own_member_mask_is_a_fault_not_a_result() -> None:
    """A lane that runs __shfl_sync with a mask that leaves it out (undefined in PTX, an illegal
    instruction on a GPU that ends the CUDA context) is reported, with its line, before any value."""
    import numpy as np

    import course

    mod = course.Module(
        code=r"""
extern "C" __global__ void k(int* out) {
    unsigned int lane = threadIdx.x & 31;
    unsigned int mask = 0xffffffffu & ~(1u << 3);    // lane 3 is left out of its own mask
    out[threadIdx.x] = __shfl_sync(mask, (int)lane, 0);
}"""
    )
    out = course.zeros(32, np.int32)
    findings = mod.get_function("k").check((1,), (32,), (out,))
    (finding,) = findings
    assert finding.kind == "barrier-divergence" and finding.lines
    assert "leaves them out" in finding.explanation and "lanes 3 " in finding.examples[0]


NEST = cu("""
    __device__ __noinline__ unsigned nest(const unsigned* p, int m) {
        return m == 0 ? 1u : p[m - 1] * nest(p, m - 1) + 1u;  // @NEST
    }
    extern "C" __global__ void deep(const unsigned* x, unsigned* y, int m) { y[threadIdx.x] = nest(x, m); }
""")


def test_calls_nested_deeper_than_the_emulator_keeps_are_a_fault() -> None:
    """32 nested calls of a recursive function run; a 33rd is a KernelFault that says why (it was
    an emulator defect: the callee's frame was saved before the depth was checked)."""
    from course.emulator.machine import MAX_CALL_DEPTH

    assert course.compiler.compile_ptx(NEST).ptx.count("call.uni") >= 1  # still a recursion in the PTX
    x, y = np.full(64, 3, np.uint32), np.zeros(32, np.uint32)
    args = device_args(x, y, np.int32(MAX_CALL_DEPTH - 1))  # nest(31) ... nest(0): 32 calls
    kernel(NEST, "deep")((1,), (32,), args)
    want = 1
    for _ in range(MAX_CALL_DEPTH - 1):
        want = (3 * want + 1) & 0xFFFFFFFF
    assert (course.asnumpy(args[1]) == want).all()
    with pytest.raises(course.KernelFault, match=f"nested deeper than {MAX_CALL_DEPTH}"):
        kernel(NEST, "deep")((1,), (32,), device_args(x, y, np.int32(MAX_CALL_DEPTH)))
