"""The trace: what it records, how it is filtered, and what the machine guarantees around it."""

from __future__ import annotations

import numpy as np
import pytest

import course

TILE = r"""
#define T 16
extern "C" __global__ void tile_copy(const float* in, float* out, int n) {
    __shared__ float tile[T][T + 1];
    int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
    if (x < n && y < n) tile[threadIdx.y][threadIdx.x] = in[y * n + x];   // LOAD
    __syncthreads();
    if (x < n && y < n) out[y * n + x] = tile[threadIdx.y][threadIdx.x];  // STORE
}

extern "C" __global__ void poison(float* out) {
    __shared__ float s[64];
    if (threadIdx.x < 32) s[threadIdx.x] = 1.0f;   // only half is written
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}
"""


def _line(marker: str) -> int:
    return next(i for i, text in enumerate(TILE.splitlines(), 1) if marker in text)


@pytest.fixture
def mod(emulator_backend):
    return course.Module(code=TILE)


def test_events_name_buffer_element_line_and_epoch(mod, rng):
    n = 37  # not a multiple of the 16x16 tile
    a = rng.standard_normal((n, n)).astype(np.float32)
    out = course.zeros((n, n), np.float32)
    grid = (3, 3)
    t = mod.get_function("tile_copy").trace(grid, (16, 16), (course.asarray(a), out, np.int32(n)))
    np.testing.assert_array_equal(course.asnumpy(out), a)
    loads = t.where(space="global", op="ld")
    assert {t.buffers[b].name for b in np.unique(loads.buffer[loads.buffer >= 0])} == {"in"}
    assert set(loads.line) == {_line("// LOAD")}
    # every element of `in` is read exactly once, by the lane the kernel maps to it
    read = np.sort(loads.index[loads.buffer >= 0])
    np.testing.assert_array_equal(read, np.arange(n * n))
    # block (2, 2) covers only x, y in 32..36: each of its warps (two rows) has 5 + 5 active lanes
    corner = loads.where(block=8)
    assert sorted(bin(int(m)).count("1") for m in corner.mask) == [5, 10, 10]
    # the store into `out` happens after the barrier: epoch 1; the load before it: epoch 0
    assert set(loads.epoch) == {0}
    assert set(t.where(space="global", op="st").epoch) == {1}
    bars = t.where(op="bar")
    assert len(bars) == 9 * 8  # one per warp of every block
    assert t.where(space="shared").buffers[t.where(space="shared").buffer[0, 0]].name.endswith("tile")


def test_filters_keep_traces_small(mod, rng):
    n = 64
    args = (
        course.asarray(rng.standard_normal((n, n)).astype(np.float32)),
        course.zeros((n, n), np.float32),
        np.int32(n),
    )
    k = mod.get_function("tile_copy")
    full = k.trace((4, 4), (16, 16), args)
    some = k.trace((4, 4), (16, 16), args, blocks=[0, 5])
    assert set(some.block) == {0, 5}
    assert len(some) == (full.block == 0).sum() + (full.block == 5).sum()
    assert some.dropped > 0
    shared_only = k.trace((4, 4), (16, 16), args, spaces={"shared"})
    assert set(shared_only.space) == {"shared"}
    by_predicate = k.trace((4, 4), (16, 16), args, blocks=lambda b: b % 4 == 0)
    assert set(by_predicate.block) == {0, 4, 8, 12}


def test_shared_memory_starts_poisoned_not_zero(mod):
    out = course.zeros(64, np.float32)
    mod.get_function("poison")((1,), (64,), (out,))
    got = course.asnumpy(out)
    assert (got[:32] == 1).all()
    assert np.isnan(got[32:]).all()  # garbage, as on a GPU, never a silent 0


def test_a_million_threads_traced_with_a_block_filter(emulator_backend):
    src = r"""
    extern "C" __global__ void twice(const int* x, int* y, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = 2 * x[i];
    }"""
    n = 1 << 20
    x = np.arange(n, dtype=np.int32)
    y = course.zeros(n, np.int32)
    k = course.Module(code=src).get_function("twice")
    t = k.trace((n // 256,), (256,), (course.asarray(x), y, np.int32(n)), blocks=range(0, 4096, 1024))
    np.testing.assert_array_equal(course.asnumpy(y), 2 * x)
    assert sorted(set(t.block)) == [0, 1024, 2048, 3072]
    assert len(t.where(space="global")) == 4 * 8 * 2  # 4 blocks x 8 warps x (load + store)
    assert len(t.where(op="exit")) == 4 * 8  # and each warp's exit


def test_thread_ids_and_lanes_agree_with_masks(mod, rng):
    n = 20
    args = (
        course.asarray(rng.standard_normal((n, n)).astype(np.float32)),
        course.zeros((n, n), np.float32),
        np.int32(n),
    )
    t = mod.get_function("tile_copy").trace((2, 2), (16, 16), args)
    lanes = t.lanes()
    assert (lanes.sum(axis=1) == [bin(int(m)).count("1") for m in t.mask]).all()
    tid = t.thread_ids()
    assert ((tid >= 0) == lanes).all()
    assert tid.max() < 256


def test_a_launch_too_big_for_the_emulator_stops_with_a_clear_error(emulator_backend, monkeypatch):
    from course.emulator import machine

    src = r"""
    extern "C" __global__ void spin(int* out, int n) {
        int s = 0;
        for (int i = 0; i < n; ++i) s += i;
        out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    }"""
    k = course.Module(code=src).get_function("spin")
    out = course.zeros(64 * 256, np.int32)
    monkeypatch.setattr(machine, "DEFAULT_WORK", 2_000_000)
    with pytest.raises(course.InstructionBudgetExceeded, match=r"thread-instructions.*smaller N"):
        k((64,), (256,), (out, np.int32(10_000)))
    k((64,), (256,), (out, np.int32(10)))  # a small launch still runs
    assert course.asnumpy(out)[0] == 45


def test_a_trace_names_the_kernel_as_the_learner_wrote_it(emulator_backend):
    from course.emulator import run_kernel
    from course.emulator.trace import TraceRecorder

    src = r"template <int K> __global__ void scale(float* x) { x[threadIdx.x] *= K; }"
    mod = course.Module(code=src, name_expressions=("scale<3>",))
    k = mod.get_function("scale<3>")
    assert k.trace((1,), (32,), (course.asarray(np.ones(32, np.float32)),)).kernel == "scale<3>"
    # run straight on a program, a launch given no name of its own is called by its PTX entry
    assert k.ptx_name != "scale<3>"
    x = [("x", np.ones(32, np.float32))]
    trace = run_kernel(mod.program, k.ptx_name, (1, 1, 1), (32, 1, 1), x, recorder=TraceRecorder())
    assert trace is not None and trace.kernel == k.ptx_name


STRAIGHT_PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry straight(.param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd3, %rd2, %rd3;
    st.global.u32 [%rd3], %r1;
    ret;
}
.visible .entry split(.param .u64 out)
{
    .reg .pred %p<3>;
    .reg .b32 %r<3>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    and.b32 %r0, %r1, 1;
    setp.eq.u32 %p2, %r0, 1;
    setp.lt.u32 %p1, %r1, 64;
    @%p1 bra $L__a;
    add.u32 %r2, %r1, 100;
    add.u32 %r2, %r2, 1;
    add.u32 %r2, %r2, 1;
    bra.uni $L__join;
$L__a:
    add.u32 %r2, %r1, 200;
$L__join:
    @%p2 add.u32 %r2, %r2, 5;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd3, %rd2, %rd3;
    st.global.u32 [%rd3], %r2;
    ret;
}
"""


def test_steps_and_instructions_count_what_the_warps_ran():
    """A step runs one instruction of every warp with work, the blocks of a wave side by side; a
    launch may take exactly its budgets (steps, thread-instructions), not one more."""
    from course.emulator import budget, run_kernel
    from course.emulator.machine import Program
    from course.emulator.trace import TraceRecorder

    program = Program(STRAIGHT_PTX, "")
    out = np.zeros(32, np.uint32)

    def straight(**kw):
        return run_kernel(program, "straight", (3, 1, 1), (32, 1, 1), [("out", out)], **kw)

    stores = straight(recorder=TraceRecorder()).where(op="st")
    assert stores.block.tolist() == [0, 1, 2] and stores.step.tolist() == [5, 5, 5]  # the 6th instruction
    assert stores.instructions == (3 * 7, 3 * 7 * 32)  # (warp-instructions issued, thread-instructions)
    straight(budget=7)
    with pytest.raises(course.InstructionBudgetExceeded, match="ran 6 scheduler steps"):
        straight(budget=6)
    with budget(work=3 * 7 * 32):
        straight()
    with (
        budget(work=3 * 7 * 32 - 1),
        pytest.raises(course.InstructionBudgetExceeded, match="thread-instructions"),
    ):
        straight()
    # two warps of each block branch one way, two the other, then meet again; an instruction
    # predicated on odd lanes is issued once by every warp, in one step
    out = np.zeros(128, np.uint32)
    trace = run_kernel(program, "split", (2, 1, 1), (128, 1, 1), [("out", out)], recorder=TraceRecorder())
    tid = np.arange(128)
    np.testing.assert_array_equal(out, np.where(tid < 64, tid + 200, tid + 102) + 5 * (tid % 2))
    issued = 2 * (4 * 7 + 2 * 1 + 2 * 4 + 4 * 5)  # per block: before, one side, the other, after the join
    assert trace.instructions == (issued, 32 * issued)


def test_a_grid_runs_in_waves_of_whole_blocks_one_after_another(monkeypatch):
    """The blocks of a wave (at most WAVE_THREADS threads) run side by side; the next wave starts
    when the last one has finished, and the steps go on counting."""
    from course.emulator import machine, run_kernel
    from course.emulator.trace import TraceRecorder

    monkeypatch.setattr(machine, "WAVE_THREADS", 64)  # two blocks of 32 threads a wave
    program = machine.Program(STRAIGHT_PTX, "")
    out = np.zeros(32, np.uint32)
    trace = run_kernel(program, "straight", (5, 1, 1), (32, 1, 1), [("out", out)], recorder=TraceRecorder())
    stores = trace.where(op="st")
    assert stores.block.tolist() == [0, 1, 2, 3, 4]
    assert stores.step.tolist() == [5, 5, 12, 12, 19]  # 7 steps a wave, the store the 6th
    assert trace.instructions == (5 * 7, 5 * 7 * 32)


def test_a_launch_has_the_dynamic_shared_memory_it_asks_for_and_none_unasked():
    from course.emulator import run_kernel
    from course.emulator.machine import Program

    ptx = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry smem(.param .u64 out)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %dynamic_smem_size;
    st.global.u32 [%rd2], %r1;
    ret;
}
"""
    program = Program(ptx, "")
    out = np.full(1, 7, np.uint32)
    run_kernel(program, "smem", (1, 1, 1), (32, 1, 1), [("out", out)])
    assert out[0] == 0
    run_kernel(program, "smem", (1, 1, 1), (32, 1, 1), [("out", out)], 48)
    assert out[0] == 48


def test_an_emulator_defect_names_the_instruction_it_happened_at_even_the_first():
    from course.emulator import run_kernel
    from course.emulator.machine import Program
    from course.errors import EmulatorDefect

    program = Program(STRAIGHT_PTX, "")
    first = program.compiled("straight").code[0]

    def broken(m, idx):
        raise RuntimeError("made to fail")

    first.run = broken  # an emulator bug at pc 0
    with pytest.raises(EmulatorDefect, match=r"ld\.param\.u64 %rd1, \[out\].*made to fail"):
        run_kernel(program, "straight", (1, 1, 1), (32, 1, 1), [("out", np.zeros(32, np.uint32))])


MEET_PTX = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry meet(.param .u64 out, .param .u64 counter)
{
    .reg .pred %p<2>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    ld.param.u64 %rd4, [counter];
    cvta.to.global.u64 %rd5, %rd4;
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 64;
    @%p1 bra $L__low;
    add.u32 %r2, %r1, 1;
    bra.uni $L__join;
$L__low:
    add.u32 %r2, %r1, 2;
    add.u32 %r2, %r2, 3;
$L__join:
    atom.global.add.u32 %r3, [%rd5], 1;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd3, %rd2, %rd3;
    st.global.u32 [%rd3], %r3;
    ret;
}
"""


def test_atomics_of_warps_that_meet_again_apply_in_thread_order():
    """Warps 2-3 fall through, warps 0-1 jump; both sides take two steps, so all four warps reach
    the atomic in one step, where the lanes apply in thread order (what the checker assumes)."""
    from course.emulator import run_kernel
    from course.emulator.machine import Program

    out, counter = np.zeros(128, np.uint32), np.zeros(1, np.uint32)
    run_kernel(Program(MEET_PTX, ""), "meet", (1, 1, 1), (128, 1, 1), [("out", out), ("counter", counter)])
    assert counter[0] == 128
    np.testing.assert_array_equal(out, np.arange(128))
