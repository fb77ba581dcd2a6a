"""Notebook 05's exercises, on the frame of `course.exercises`: four predictions, three kernels to
write and a grid to predict and measure, in the order the notebook teaches their ideas.

    reduction.exercises.any_block.check(mine)   # the verdict: what is wrong, never the answer
    reduction.exercises.any_block.hint()        # one hint more each time
    reduction.exercises.any_block.show(mine)    # the verdict and the learner's tree drawn

The learner's kernels see reduction.cu's types as macros (`elem_t` is unsigned int, `acc_t` long
long), so their line numbers stay their own, and are launched with `block * 8` bytes of dynamic
shared memory (one `acc_t` per thread).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, draw, exercises, occupancy
from ..engine.launch import blocks_in_words
from ..exercises import Case, Choice, KernelExercise, Prediction, Target, Verdict
from ..module import Kernel
from .lesson import fit_sums
from .topic import ENGINE

OPTIONS = ("-Delem_t=unsigned int", "-Dacc_t=long long")
ACC_BYTES = 8  # sizeof(acc_t): the dynamic shared memory of a block is block * 8 bytes


def _input(n: int) -> np.ndarray:
    """1 to 999, scrambled: no element is zero, so a lost or doubled one changes the sum."""
    return (np.arange(n, dtype=np.uint64) * 2654435761 % 999 + 1).astype(np.uint32)


# ---------------------------------------------------------------- 1. predict, then check: kernel 2 at block 1024

WAYS_BLOCK = 1024  # the text's tables use 256
WAYS_COLUMNS = ("warps busy", "of them divergent", "worst bank conflict")


def ways_truth(block: int = WAYS_BLOCK) -> dict[int, tuple[int, int, int]]:
    """Kernel 2, one block of `block` float sums: stride s -> (warps that add, of them with idle
    lanes, the worst bank conflict of the step's shared accesses, in ways), counted from the trace
    of block 0 (`lesson.step_table`)."""
    from .lesson import step_table

    with backend.using("emulator"):
        rows = step_table("reduce2", n=block, block=block)
    return {
        1 << k: (int(r["warps busy"]), int(r["of them divergent"]), int(str(r["worst bank conflict"]).split("-")[0]))
        for k, r in enumerate(rows)
    }  # fmt: skip


ways = Prediction(
    key="reduction.ways",
    title="predict kernel 2's warps and bank conflicts at a block of 1024",
    truth=ways_truth,
    columns=WAYS_COLUMNS,
    what="stride",
    rules={
        "warps busy": "in kernel 2 thread t adds when its index 2·s·t is below blockDim.x; a warp is "
        "busy when at least one of its 32 threads adds",
        "of them divergent": "a busy warp is divergent when some of its 32 lanes add and others do not",
        "worst bank conflict": "lane t of a busy warp touches word 2·s·t (and 2·s·t + s), and word w "
        "is in bank w % 32: count the different words the adding lanes of one warp put in the "
        "fullest bank (one lane alone is 1-way)",
    },
    hints=(
        "take one stride at a time and write down the indices 2·s·t that the first few threads of "
        "warp 0 touch: which threads add at all, and in which banks do their words sit?",
        "the table 'step_table' above counts the same three columns for a block of 256: redo its "
        "arithmetic with 1024 threads. At stride s the first blockDim.x / (2·s) threads add, four "
        "times as many as in the block of 256. The busy warps differ only while more than 32 "
        "threads add in the block of 1024; the worst conflict differs wherever the two blocks have "
        "different numbers of adding lanes in warp 0",
        "for the conflicts, two things bound the answer: how many lanes of the warp add, and how "
        "many different banks the words 2·s·t can reach at all. Write down the banks of lanes "
        "0 to 31 for s = 1, 2 and 4 and look for the pattern",
    ),
)


# ---------------------------------------------------------------- 2. predict: what each warp of kernel 1 runs

WARP_STEPS_VERSION, WARP_STEPS_BLOCK = "reduce1", 512  # the text's table: kernel 3 at 256


def warp_steps_truth(
    block: int = WARP_STEPS_BLOCK, version: str = WARP_STEPS_VERSION
) -> dict[int, tuple[int, int]]:
    """Kernel 1 (or `version`), one block of `block`: warp -> (the __syncthreads() it reaches, the
    tree steps in which at least one of its lanes adds), counted from the trace
    (`lesson.barriers_per_warp`)."""
    from .lesson import barriers_per_warp

    with backend.using("emulator"):
        rows = barriers_per_warp(version, n=block, block=block)
    return {int(r["warp"]): (int(r["barriers it reaches"]), int(r["steps in which it adds"])) for r in rows}


warp_steps = Prediction(
    key="reduction.warp_steps",
    title="predict what each warp of kernel 1 runs at a block of 512",
    truth=warp_steps_truth,
    columns=("barriers it reaches", "steps in which it adds"),
    what="warp",
    rules={
        "barriers it reaches": "__syncthreads() is in the loop body outside the `if`: every warp runs "
        "the loop, so it reaches the barrier after the first store and one barrier per step, whether "
        "or not one of its lanes adds",
        "steps in which it adds": "in kernel 1 thread t adds in the step of stride s when t % (2·s) == 0; "
        "a warp adds in a step when one of its 32 threads does",
    },
    hints=(
        "two questions for each warp: does the warp run the loop at all, and in which of its "
        "iterations does at least one of its lanes pass the `if`?",
        "the table of kernel 3 above counts the same two columns for a block of 256: its first "
        "column does not depend on the kernel's `if`. For the second, the heat map of kernel 1 "
        "shows which warps add while 2·s is at most 32",
        "list the strides s = 1, 2, 4, ... 256 of a block of 512; once 2·s is more than 32, at most "
        "one thread of a warp can pass t % (2·s) == 0: which warps hold such a thread?",
    ),
)


# ---------------------------------------------------------------- 3. write: a tree for any block size

ANY_BLOCK_STUB = r"""
extern "C" __global__ void reduce3_any(const elem_t* x, acc_t* out, int n) {
    extern __shared__ acc_t sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    sdata[tid] = (i < n) ? x[i] : 0;
    __syncthreads();
    // ---- your tree: it must add every sdata[0 .. blockDim.x - 1] into sdata[0], for any blockDim.x
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    // ----
    if (tid == 0) out[blockIdx.x] = sdata[0];
}"""

# (N, block): one element per thread, so N / block rounded up blocks
ANY_BLOCK_CASES = ((1, 96), (95, 96), (97, 96), (20, 7), (5, 1), (66, 33), (100, 100), (485, 160),
                   (300, 128), (3007, 1000))  # fmt: skip


def _reached(trace: Any, block: int, size: int) -> np.ndarray | None:
    """How many times each element the block's threads first stored in sdata reached sdata[0],
    replayed from the trace's dataflow (`analysis.dataflow`): None where the trace has no tree."""
    try:
        flow = analysis.dataflow(trace, "sdata")
    except (KeyError, ValueError):
        return None
    flow = analysis.subset(flow, flow.block == block)
    if not len(flow):
        return None
    width = max(size, int(flow.dst.max()) + 1, int(flow.src.max()) + 1)
    held = np.eye(width, dtype=np.int64)  # element j holds input j once
    for stage in np.unique(flow.stage):
        f = analysis.subset(flow, flow.stage == stage)
        after = held.copy()
        after[np.unique(f.dst)] = 0
        np.add.at(after, f.dst, held[f.src])
        held = after
    return held[0, :size]


def _block_sums(n: int, per_block: int) -> np.ndarray:
    return np.add.reduceat(_input(n).astype(np.int64), np.arange(0, n, per_block))


def _wrong_block(got: np.ndarray, want: np.ndarray) -> str:
    """The first block whose sum is off, and which way, without the expected value."""
    b = int(np.flatnonzero(got != want)[0])
    how = ("too small: some elements never reached it" if got[b] < want[b]
           else "too large: some elements were added more than once")  # fmt: skip
    return f"block {b}'s sum is {how}"


def _any_block_case(n: int, block: int) -> Case:
    grid = -(-n // block)
    x, want = _input(n), _block_sums(n, block)

    def args() -> tuple[Any, ...]:
        return arrays.asarray(x), arrays.zeros(grid, np.int64), np.int32(n)

    def judge(done: tuple[Any, ...], trace: Any) -> str:
        got = arrays.asnumpy(done[1])
        if (got == want).all():
            return ""
        b = int(np.flatnonzero(got != want)[0])
        size = min(block, n - b * block)
        counts = _reached(trace, b, size)
        part = x[b * block : b * block + size].astype(np.int64)
        if counts is None or int(counts @ part) != int(got[b]):  # the replay does not explain it
            return _wrong_block(got, want) + " (rule: every element must reach sdata[0] exactly once)"
        lost, twice = np.flatnonzero(counts == 0), np.flatnonzero(counts > 1)
        words = []
        if len(lost):
            words.append(f"the values first stored in {_elements(lost)} never reached sdata[0]")
        if len(twice):
            j = int(twice[0])
            words.append(f"the values first stored in {_elements(twice)} reached it more than once "
                         f"({counts[j]} times for sdata[{j}])")  # fmt: skip
        return f"block {b}: {'; '.join(words)} (rule: each of them must reach sdata[0] exactly once)"

    return Case(
        f"N={n}, {blocks_in_words(grid, block)}", grid, block, args, judge, shared_mem=block * ACC_BYTES
    )


def _elements(idx: np.ndarray) -> str:
    """'sdata[5]', 'sdata[48..95]' or 'sdata[2], sdata[5], sdata[8], ... (31 of them)'."""
    idx = idx.tolist()
    if len(idx) == 1:
        return f"sdata[{idx[0]}]"
    if idx[-1] - idx[0] == len(idx) - 1:
        return f"sdata[{idx[0]}..{idx[-1]}]"
    return f"{', '.join(f'sdata[{i}]' for i in idx[:3])}, ... ({len(idx)} of them)"


def _barrier_steps(trace: Any, events: np.ndarray) -> np.ndarray:
    """For each trace event of block 0 in `events`: its barrier step, as one integer per step. A step
    ends at a barrier: a __syncthreads() of the block, or a __syncwarp() of the event's own warp (a
    warp's steps between its own barriers: kernel 5's last warp)."""
    t = trace.where(block=0)
    rows = np.flatnonzero(trace.columns["block"] == 0)  # t's events in the whole trace
    warp_sync = (t.op == "bar") & (np.char.find(t.opcode.astype(str), "warp") >= 0)
    passed = np.zeros(len(t), np.int64)  # the __syncwarp() each event's warp passed before it
    for w in np.unique(t.warp):
        mine = np.flatnonzero(t.warp == w)
        passed[mine] = np.cumsum(warp_sync[mine]) - warp_sync[mine]
    at = np.searchsorted(rows, events)
    return t.epoch[at].astype(np.int64) << 32 | passed[at]


def _a_tree() -> Target:
    """A tree: at most ceil(log2(block)) barrier steps that add, and no thread adds more than two
    other partial sums into its own in one step (a loop in one thread is no tree). Steps are the
    barrier intervals the text names, not the analysis's stages: a thread that adds a second partner
    into its own element in one interval (the odd leftover) still takes one step."""

    def measure(trace: Any, k: Kernel) -> str:
        block = trace.threads_per_block
        most = math.ceil(math.log2(block)) if block > 1 else 0
        flow = analysis.dataflow(trace, "sdata")
        flow = analysis.subset(flow, (flow.block == 0) & (flow.src != flow.dst))
        if not len(flow):
            return ""
        step = _barrier_steps(trace, flow.event)
        epoch = step >> 32
        # the steps of one barrier interval: the most any warp took between its own __syncwarp()s
        steps = sum(
            max(len(np.unique(step[(epoch == e) & (warp == w)])) for w in np.unique(warp[epoch == e]))
            for e, warp in ((e, flow.thread // 32) for e in np.unique(epoch))
        )
        if steps > most:
            return (f"block 0 of {block} threads took {steps} barrier steps to add its elements (at most "
                    f"⌈log₂ {block}⌉ = {most}: in a tree step the threads add their partners in parallel, "
                    "a partner or two each)")  # fmt: skip
        pairs = np.unique(np.stack([step, flow.thread, flow.src]), axis=1)
        keys, counts = np.unique(pairs[:2], axis=1, return_counts=True)
        worst = int(np.argmax(counts))
        if counts[worst] <= 2:
            return ""
        return (f"thread {keys[1, worst]} of block 0 added {counts[worst]} other elements of sdata into "
                "its own in one barrier step (a tree step adds one partner, at most two, per thread)")  # fmt: skip

    return Target("a tree: at most ⌈log₂ block⌉ barrier steps, a partner or two per thread and step", measure)


def _draw_tree(block: int, n: int, per_thread: int, *, sums: bool = True) -> Callable[[Any, Kernel], None]:
    """The learner's tree drawn as the notebook draws the course's: block 0 on ones. With `sums`,
    each cell shows how many inputs it holds (replayed from the shared-memory dataflow: right
    only where every add goes through shared memory)."""

    def drawn(fig: Any, k: Kernel) -> None:
        grid = -(-n // (block * per_thread))
        args = (arrays.asarray(np.ones(n, np.uint32)), arrays.zeros(grid, np.int64), np.int32(n))
        t = k.trace((grid,), (block,), args, shared_mem=block * ACC_BYTES, blocks=[0])
        ax = fig.add_subplot()
        draw.tree(ax, t, "sdata", values=np.full(block, per_thread) if sums else None)
        ax.set_title(
            f"your tree: block 0 of {block} threads summing ones (a cell: how many inputs it holds)"
            if sums
            else f"your kernel's shared-memory steps, block 0 of {block} (shuffles: in registers, not drawn)"
        )
        if sums:
            fit_sums(ax, block, first=str(per_thread))

    return drawn


def _speed(block: int, per_thread: int, best: str, n: int = 2**24) -> Callable[[Kernel], list[str]]:
    """On a GPU: the learner's kernel (its block sums) against `best` (the whole sum) and a copy."""

    def timing(k: Kernel) -> list[str]:
        x = np.random.default_rng(1).integers(0, 1000, n, dtype=np.uint32)
        grid = -(-n // (block * per_thread))

        def mine(s: tuple[Any, ...]) -> Any:
            out = arrays.zeros(grid, np.int64)
            return lambda: k((grid,), (block,), (s[0], out, np.int32(n)), shared_mem=block * ACC_BYTES)

        return [f"(yours at {blocks_in_words(grid, block)}, N = 2^24)",
                *exercises.compare_speed(mine, ENGINE, best, (x,), 4 * n)]  # fmt: skip

    return timing


any_block = KernelExercise(
    key="reduction.any_block",
    title="kernel 3's tree for any block size",
    kernel="reduce3_any",
    stub=ANY_BLOCK_STUB,
    options=OPTIONS,
    cases=lambda: [_any_block_case(*c) for c in ANY_BLOCK_CASES],
    targets=(_a_tree(),),
    timing=_speed(96, 1, "reduce3"),
    draw=_draw_tree(24, 24, 1),
    hints=(
        "draw the stub's tree for a block of 6 on paper (or run reduction.exercises.any_block.show(mine)): "
        "after each step, which elements still hold a partial sum that nobody has added yet?",
        "keep count of the partial sums still alive rather than of s: each step folds the upper part "
        "of them onto the lower part, and when their count is odd one of them has no partner. "
        "It must survive the step, neither dropped nor added twice",
        "look at the loop's header and at the condition in front of the add: both assume that the "
        "count halves exactly. Which count is left after a step over 7 partial sums, and which "
        "threads have a partner inside it?",
    ),
)


# ---------------------------------------------------------------- 4. predict: 8-byte sums in 4-byte banks

WAVEFRONTS_VERSION, WAVEFRONTS_BLOCK = "reduce2", 256  # the text's table: block 64


def wavefronts_truth(block: int = WAVEFRONTS_BLOCK) -> dict[int, tuple[int, int]]:
    """Kernel 2 with the article's long long sums, one block of `block`: tree step -> (shared
    wavefronts of the step, of them added by bank conflicts), from the trace (`lesson.wavefront_table`)."""
    from .lesson import wavefront_table

    with backend.using("emulator"):
        rows = wavefront_table(WAVEFRONTS_VERSION, block=block)
    return {
        int(r["step"]): (int(r["long long wavefronts"]), int(r["of them conflicts (long long)"]))
        for r in rows
    }


wavefronts = Prediction(
    key="reduction.wavefronts",
    title="predict kernel 2's shared-memory wavefronts with long long sums at a block of 256",
    truth=wavefronts_truth,
    columns=("wavefronts", "of them from conflicts"),
    what="step",
    rules={
        "wavefronts": "each warp instruction that touches shared memory (two loads and a store per "
        "adding warp and step) takes, for 8-byte words, two passes (lanes 0-15, then 16-31), each "
        "as many wavefronts as the most different 4-byte words it puts in one bank; a pass with no "
        "active lane costs nothing. Sum over the step's instructions of every warp",
        "of them from conflicts": "an 8-byte access needs one wavefront per pass that has an active "
        "lane even with no conflict: the conflicts add the rest",
    },
    hints=(
        "start with step 1 and one warp: which lanes add, which 8-byte words do they touch, and in "
        "which 4-byte banks do those words lie?",
        "an 8-byte word w covers banks 2w % 32 and 2w % 32 + 1; the hardware serves a warp's 8-byte "
        "access as two half-warps, each on its own. Count the half-warps with an active lane, then "
        "the fullest bank in each",
        "the table for a block of 64 above counts the same two columns, but do not copy its rows: the "
        "banks depend on the stride as well as on how many lanes add, and a block of 256 reaches "
        "the same number of adding lanes at a larger stride. Work out each step from its own stride",
    ),
)


# ---------------------------------------------------------------- 5. write: four elements per thread, coalesced

FOUR_STUB = r"""
extern "C" __global__ void reduce4_four(const elem_t* x, acc_t* out, int n) {
    extern __shared__ acc_t sdata[];
    unsigned int tid = threadIdx.x;
    // ---- your loads: block b sums x[b * 4 * blockDim.x ...] up to 4 * blockDim.x elements, four per thread
    // FILL ME IN (about 4 lines): v must end with this thread's four elements (or fewer, at the end of x)
    acc_t v = 0;
    // ----
    sdata[tid] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}"""

# (N, block, big): four elements per thread, so N / (4 block) rounded up blocks; none a multiple
# of 4 × block; `big`: elements near 2^32, so that two or four added in elem_t wrap around
FOUR_CASES = ((1, 32, False), (127, 32, False), (129, 32, False), (1000, 64, False), (515, 128, False),
              (5000, 256, False), (4095, 128, False), (777, 64, True))  # fmt: skip


def _four_case(n: int, block: int, big: bool = False) -> Case:
    grid = -(-n // (4 * block))
    x = _input(n)
    if big:
        x = (np.uint32(2**32 - 1000) + x).astype(np.uint32)
    want = np.add.reduceat(x.astype(np.int64), np.arange(0, n, 4 * block))

    def args() -> tuple[Any, ...]:
        return arrays.asarray(x), arrays.zeros(grid, np.int64), np.int32(n)

    def judge(done: tuple[Any, ...], trace: Any) -> str:
        got = arrays.asnumpy(done[1])
        if (got == want).all():
            return ""
        b = int(np.flatnonzero(got != want)[0])
        short = int(want[b]) - int(got[b])
        if big and short > 0 and short % 2**32 == 0:  # every element arrived; an elem_t add wrapped
            return (f"block {b}'s sum is short by {short // 2**32} × 2^32: its elements reached it, but "
                    "some were added to each other in elem_t (32 bits), which wraps past 2^32 (rule: widen "
                    "each element to acc_t before it is added; these elements are near 2^32)")  # fmt: skip
        return (
            _wrong_block(got, want)
            + " (rule: block b sums elements 4·b·blockDim.x to 4·(b+1)·blockDim.x − 1"
            + (", each widened to acc_t before it is added: these elements are near 2^32)" if big else ")")
        )

    label = f"N={n}{' (elements near 2^32)' if big else ''}, {blocks_in_words(grid, block)}"
    return Case(label, grid, block, args, judge, shared_mem=block * ACC_BYTES)


def _coalesced() -> Target:
    """Every full-warp global load request touches no more 32-byte sectors than its bytes need
    (⌈bytes / 32⌉: 4 for 32 lanes × 4 bytes, 16 for 32 lanes × 16 bytes). Requests with idle
    lanes (a tail) are not judged."""

    def measure(trace: Any, k: Kernel) -> str:
        loads = trace.where(op="ld", space="global")
        if not len(loads):
            return "no thread loaded x"
        req = analysis.sectors(loads)
        over = np.flatnonzero((req.lanes == 32) & (req.sectors > req.ideal))
        if not len(over):
            return ""
        worst = int(over[np.argmax(req.sectors[over] - req.ideal[over])])
        return (f"a load request of warp {int(req.warp[worst])} (block {int(req.block[worst])}) asked for "
                f"{int(req.bytes[worst])} bytes and touched {int(req.sectors[worst])} sectors of 32 bytes "
                f"(at most {int(req.ideal[worst])} wanted: the bytes its 32 lanes read should lie side by "
                "side)")  # fmt: skip

    return Target("coalesced: no more 32-byte sectors per warp load request than its bytes need", measure)


LOADS_PER_WARP = 4  # four elements per thread: four requests of 32 lanes, or fewer wider ones


def _four_per_thread() -> Target:
    """Every warp loads its share itself: at most four global load requests per warp (one per
    element for all 32 lanes, or fewer with 8- or 16-byte loads), so that no thread or warp loops
    over the block's elements on behalf of the others."""

    def measure(trace: Any, k: Kernel) -> str:
        req = analysis.sectors(trace.where(op="ld", space="global"))
        if not len(req):
            return ""  # _coalesced says that no thread loaded x
        who = req.block.astype(np.int64) * (1 << 20) + req.warp.astype(np.int64)
        warps, counts = np.unique(who, return_counts=True)
        worst = int(np.argmax(counts))
        if counts[worst] <= LOADS_PER_WARP:
            return ""
        block, warp = divmod(int(warps[worst]), 1 << 20)
        lanes = req.lanes[who == warps[worst]]
        few, most = int(lanes.min()), int(lanes.max())
        span = f"{most} lane{'s' * (most != 1)}" if few == most else f"{few} to {most} lanes"
        return (f"warp {warp} of block {block} issued {int(counts[worst])} load requests of x, with "
                f"{span} each (rule: each thread loads its own four "
                f"elements, so a warp needs at most {LOADS_PER_WARP} requests, all its lanes in each but at the "
                "end of x)")  # fmt: skip

    return Target(f"four per thread: at most {LOADS_PER_WARP} load requests per warp", measure)


four = KernelExercise(
    key="reduction.four",
    title="first add during load, with four elements per thread",
    kernel="reduce4_four",
    stub=FOUR_STUB,
    options=OPTIONS,
    cases=lambda: [_four_case(*c) for c in FOUR_CASES],
    targets=(_coalesced(), _four_per_thread()),
    timing=_speed(128, 4, "reduce4"),
    draw=_draw_tree(32, 128, 4),
    hints=(
        "which elements should the 32 lanes of warp 0 read in its first load, so that the 32 words "
        "lie side by side in memory?",
        "kernel 4 gives thread t of block b the elements i and i + blockDim.x, with i = "
        "b·2·blockDim.x + t: each of its two loads covers blockDim.x neighbouring elements. Four "
        "loads work the same way",
        "none of the cases has N a multiple of 4 × block, and one has elements near 2^32: what did "
        "kernel 4's fix (the cell above) change in its load, besides the check?",
    ),
)


# ---------------------------------------------------------------- 6. predict: blocks per SM (occupancy)

OCCUPANCY_MODEL = "h100"  # the H100 and H200 models have the same per-SM limits
# (threads per block, registers per thread, shared bytes per block: static + dynamic)
OCCUPANCY_CASES = ((64, 16, 512), (32, 28, 256), (256, 64, 0), (128, 32, 40960), (96, 40, 3072),
                   (1024, 32, 49152), (512, 72, 8192), (64, 16, 22528))  # fmt: skip


def occupancy_truth() -> dict[tuple[int, int, int], tuple[int]]:
    """(threads, registers, shared bytes) -> blocks one SM of the H100 model holds at once
    (`course.occupancy.calculate`: CUDA's occupancy calculation)."""
    dev = backend.MODELS[OCCUPANCY_MODEL]
    return {c: (occupancy.calculate(dev, c[0], registers=c[1], shared=c[2]).blocks,) for c in OCCUPANCY_CASES}


blocks_per_sm = Prediction(
    key="reduction.blocks_per_sm",
    title="predict how many blocks an SM holds, from threads, registers and shared memory",
    truth=occupancy_truth,
    columns=("blocks per SM",),
    what="launch",
    source="the occupancy calculation gives",
    rules={
        "blocks per SM": "the least of four limits of an H100/H200 SM: 2048 threads (in whole warps of "
        "32); 32 blocks; 65 536 registers, split into 4 quarters of 16 384, each warp taking "
        "registers × 32 rounded up to a multiple of 256 from one quarter; 228 KB of shared memory, each "
        "block taking its bytes plus 1 KB the driver reserves, rounded up to 128 bytes",
    },
    hints=(
        "work out each of the four limits on its own, for every launch, then take the least",
        "registers: a warp of a kernel with r registers a thread takes 32·r registers rounded up to "
        "a multiple of 256; a quarter of the SM (16 384 registers) holds a whole number of such warps, "
        "and the SM holds four quarters' worth of warps, in whole blocks",
        "reduction.occupancy_table() above shows the four limits side by side for kernel 7. For "
        "shared memory, read the text again: what does the driver add to each block's bytes?",
    ),
)


# ---------------------------------------------------------------- 7. predict, then measure: the fewest blocks at full speed

GRID_VERSION = "reduce7"  # the text's latency table: blocks of 128 at N = 2^26
GRID_BLOCK = 512
GRID_N = 2**24
GRID_PER_SM = (1, 2, 4, 8, 16)  # the grids offered: SMs × this many blocks
FULL_SPEED = 0.90  # within 10 % of the fastest of the grids offered counts as full speed
LOADS_IN_FLIGHT = 2  # kernel 7's loop issues two 4-byte loads per thread before it adds them


def grid_bytes_in_flight(per_sm: int, block: int = GRID_BLOCK) -> int:
    """Bytes of loads each SM has in flight with `per_sm` blocks of kernel 7 per SM on the active
    device: only the blocks an SM holds at once (`lesson.holds`) run; the rest wait for a slot."""
    from .lesson import holds

    return min(per_sm, holds(block, GRID_VERSION)) * block * LOADS_IN_FLIGHT * 4


def grid_model_answer(block: int = GRID_BLOCK) -> int:
    """The course's wave model: the fewest blocks per SM whose bytes in flight reach Little's law
    (`occupancy.bytes_needed_per_sm`: the device's bandwidth × DRAM latency / SMs); where none does,
    the fewest that fill the SM."""
    need = occupancy.bytes_needed_per_sm()
    most = max(grid_bytes_in_flight(p, block) for p in GRID_PER_SM)
    return next(p for p in GRID_PER_SM if grid_bytes_in_flight(p, block) >= min(need, most))


def _grid_form(per_sm: Any) -> str:
    if isinstance(per_sm, bool) or not isinstance(per_sm, (int, np.integer)) or per_sm not in GRID_PER_SM:
        return f"answer with one of {', '.join(map(str, GRID_PER_SM))} (blocks per SM); got {per_sm!r}"
    return ""


def _judge_grid(per_sm: int, n: int = GRID_N, block: int = GRID_BLOCK, runs: int = 20) -> Verdict:
    dev = backend.device()
    head = f"{per_sm} block{'s' * (per_sm != 1)} of {block} per SM ({per_sm * dev.sm_count} blocks)"
    if dev.on_gpu:
        speeds = grid_speeds(n, block, runs)
        best = max(speeds.values())
        fewest = next(p for p in GRID_PER_SM if speeds[p] >= FULL_SPEED * best)
        lines = [f"{head}: {speeds[per_sm]:.0f} GB/s; the fastest of the {len(speeds)} grids: {best:.0f} GB/s "
                 f"(within {100 - FULL_SPEED * 100:.0f} % counts as full speed)"]  # fmt: skip
        if per_sm < fewest:
            lines.append("below full speed: too few loads in flight for the latency under load")
        elif per_sm > fewest:
            lines.append("at full speed, but a grid with fewer blocks per SM reaches it too")
        return Verdict(per_sm == fewest, lines)
    note = "(no GPU here: checked by the course's wave model on this device, not by a timing)"
    fly, want = grid_bytes_in_flight(per_sm, block), grid_model_answer(block)
    need, lat = occupancy.bytes_needed_per_sm(), dev.dram_latency_ns
    if per_sm < want:
        return Verdict(False, [
            f"{head}: each SM keeps {fly} B of loads in flight, too few for the latency under load "
            "(rule: the loads in flight per SM must reach the bytes from which the latency table stops "
            "gaining; Little's law with the idle latency falls short of them, for the latency grows "
            f"under load. The wave model stands in here: bandwidth × the device model's {lat:.0f} ns / "
            "SMs, course.occupancy.bytes_needed_per_sm())", note])  # fmt: skip
    if per_sm > want:
        return Verdict(False, [
            f"{head}: {fly} B in flight per SM, but fewer blocks per SM already keep enough in flight "
            "(rule: once the loads in flight cover the latency, more blocks add no bandwidth; blocks "
            "past those an SM holds wait for a slot)", note])  # fmt: skip
    return Verdict(True, [f"{head}: {fly} B of loads in flight per SM, enough by the wave model on this "
                          f"device (bandwidth × the device model's {lat:.0f} ns / SMs = {need} B)", note])  # fmt: skip


def grid_speeds(n: int, block: int, runs: int) -> dict[int, float]:
    """GB/s of kernel 7 (uint32 in, long long sums, blocks of `block`) on n elements with SMs × p
    blocks for each p of GRID_PER_SM (GPU only; inputs rotated past L2)."""
    from .. import bench

    xs = bench.rotated_copies(np.arange(1, n + 1, dtype=np.uint32))  # the article's input 1..n
    sms = backend.device().sm_count
    speeds = {}
    for p in GRID_PER_SM:
        launches = [ENGINE.plan(GRID_VERSION, x, block=block, grid=sms * p).launches[0] for x in xs]
        speeds[p] = 4 * n / bench.median_us(launches, runs=runs) / 1e3
    del xs
    bench.free_gpu_memory()
    return speeds


grid = Choice(
    key="reduction.grid",
    title="predict the fewest blocks per SM at which kernel 7 runs at full speed (blocks of 512, N = 2^24)",
    allowed=_grid_form,
    judge=_judge_grid,
    hints=(
        "first the occupancy: how many blocks of 512 threads does one SM hold at once? Blocks past "
        "those wait for a slot and add no loads in flight",
        "then the bytes: each thread of kernel 7 has two 4-byte loads in flight per loop iteration; "
        "multiply by the threads an SM runs at each grid",
        "the latency table above sets bytes in flight per SM against the share of the copy reached: "
        "find the bytes in flight from which the speed stops rising by much",
    ),
)


# ---------------------------------------------------------------- 8. write: the last warp with shuffles

SHUFFLE_STUB = r"""
extern "C" __global__ void reduce5_mine(const elem_t* x, acc_t* out, int n) {
    extern __shared__ acc_t sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    acc_t v = (i < n) ? (acc_t)x[i] : 0;
    if (i + blockDim.x < n) v += x[i + blockDim.x];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    // ---- your last warp: sdata[0 .. 63] to the block's sum, with __shfl_down_sync
    if (tid < 32) {
        volatile acc_t* vs = sdata;
        vs[tid] += vs[tid + 32]; vs[tid] += vs[tid + 16]; vs[tid] += vs[tid + 8];
        vs[tid] += vs[tid + 4]; vs[tid] += vs[tid + 2]; vs[tid] += vs[tid + 1];
    }
    // ----
    if (tid == 0) out[blockIdx.x] = sdata[0];
}"""

# (N, block): two elements per thread, so N / (2 block) rounded up blocks; blocks of 64 and more,
# powers of two, as kernel 5's loop needs
SHUFFLE_CASES = ((1, 64), (127, 64), (129, 64), (1000, 128), (511, 256), (513, 256), (5000, 128),
                 (4 * 1024 + 7, 1024))  # fmt: skip


def _shuffle_case(n: int, block: int) -> Case:
    grid = -(-n // (2 * block))
    x, want = _input(n), _block_sums(n, 2 * block)

    def args() -> tuple[Any, ...]:
        return arrays.asarray(x), arrays.zeros(grid, np.int64), np.int32(n)

    def judge(done: tuple[Any, ...], trace: Any) -> str:
        if twice := _out_written_twice(trace):
            return twice
        got = arrays.asnumpy(done[1])
        if (got == want).all():
            return ""
        return _wrong_block(got, want) + (
            " (rule: from the loop's end on, warp 0 adds all 64 partial sums, sdata[0] to sdata[63]: each "
            "lane its sdata[tid] and sdata[tid + 32], then the shuffles)"
        )

    return Case(
        f"N={n}, {blocks_in_words(grid, block)}", grid, block, args, judge, shared_mem=block * ACC_BYTES
    )


def _line(trace: Any, line: int) -> str:
    """'line 21, `if (tid == 0) out[blockIdx.x] = sdata[0];`': a line of the learner's kernel."""
    text = trace.source[line - 1].strip() if 0 < line <= len(trace.source) else ""
    return f"line {line}, `{text}`" if text else f"line {line}"


def _out_written_twice(trace: Any) -> str:
    """A block that stores its `out` element more than once: the last store is what it leaves, so
    a sum written from the register and then the stub's `out = sdata[0]` line leaves the stale one."""
    acc = analysis.steps(trace, "out")
    acc = analysis.subset(acc, np.isin(acc.op, analysis.WRITE_OPS))
    if not len(acc):
        return ""
    keys, counts = np.unique(np.stack([acc.block, acc.index]), axis=1, return_counts=True)
    if counts.max() < 2:
        return ""
    b, element = (int(v) for v in keys[:, int(np.argmax(counts > 1))])
    lines = [int(x) for x in acc.line[(acc.block == b) & (acc.index == element)]]
    return (f"block {b} stored out[{element}] {len(lines)} times ({'; then '.join(_line(trace, x) for x in lines)}): "
            "the last store is what the block leaves. Write out once: if your part writes it from the "
            "register, delete the stub's last line, which writes it again from sdata[0]")  # fmt: skip


def _last_warp() -> Target:
    """Warp 0 of block 0: no more __syncthreads() than kernel 5's loop has (so the tree below 64
    sums cannot be done in shared memory first); from its first shuffle on, at least 5 shuffles, each lane loads shared
    memory at most twice (sdata[tid], sdata[tid + 32]; reading back what the warp stored there
    does not count), and at most one lane stores to it (the block's sum in sdata[0])."""

    def measure(trace: Any, k: Kernel) -> str:
        w0 = trace.where(block=0, warp=0)
        block = trace.threads_per_block
        most = 1 + max(0, int(math.log2(block)) - 6)  # the store's barrier, one per step while s > 32
        bars = int((w0.opcode == "bar.sync").sum())
        if bars > most:
            return (f"warp 0 of a block of {block} reached {bars} __syncthreads() (at most {most}: the "
                    "one after the store and one per shared-memory step while s > 32; below that the "
                    "warp's halvings are shuffles, not shared-memory steps)")  # fmt: skip
        shuffles = w0.op == "shfl"
        if shuffles.sum() < 5:
            return (f"warp 0 made {int(shuffles.sum())} shuffles (at least 5 wanted, one per halving "
                    "of its 32 lanes' partial sums: offsets 16, 8, 4, 2, 1)")  # fmt: skip
        tail = w0.select(w0.epoch >= w0.epoch[np.flatnonzero(shuffles)[0]])
        shared = tail.select(tail.space == "shared")
        lanes, addr = shared.lanes(), shared.addr  # addr: the byte offset in the block's shared memory
        stored: set[int] = set()
        loads: list[list[int]] = [[] for _ in range(32)]  # per lane: the line of each load counted
        stores = 0
        for e in range(len(shared)):
            active = np.flatnonzero(lanes[e]).tolist()
            if shared.op[e] == "ld":
                for lane in active:
                    if int(addr[e, lane]) not in stored:
                        loads[lane].append(int(shared.line[e]))
            else:
                stores += len(active)
                stored.update(int(addr[e, lane]) for lane in active)
        lane = max(range(32), key=lambda a: len(loads[a]))
        if len(loads[lane]) > 2:
            where = "; ".join(_line(trace, x) for x in dict.fromkeys(loads[lane]))
            return (f"lane {lane} of warp 0 loaded shared memory {len(loads[lane])} times in the warp's "
                    f"last part ({where}; at most 2: sdata[tid] and sdata[tid + 32], once each; the "
                    "halvings below 32 go through registers)")  # fmt: skip
        if stores > 1:
            return (f"warp 0 stored to shared memory {stores} times in its last part (at most once: "
                    "the block's sum, if you keep the line that writes out from sdata[0])")  # fmt: skip
        return ""

    return Target("the last warp adds in registers: shuffles, sdata[tid] and sdata[tid + 32] read "
                  "once, at most one shared store", measure)  # fmt: skip


def _draw_last_warp(fig: Any, k: Kernel, block: int, n: int) -> None:
    """Warp 0 of block 0 after its last __syncthreads(), instruction by instruction (shared loads
    and stores, shuffles, warp syncs): which of its 32 lanes take part, from the trace. A shuffle
    row is a halving in registers; a shared row is a trip through shared memory."""
    grid = -(-n // (2 * block))
    args = (arrays.asarray(np.ones(n, np.uint32)), arrays.zeros(grid, np.int64), np.int32(n))
    t = k.trace((grid,), (block,), args, shared_mem=block * ACC_BYTES, blocks=[0])
    w0 = t.where(block=0, warp=0)
    bars = np.flatnonzero(w0.opcode == "bar.sync")
    tail = w0.select(w0.epoch > w0.epoch[bars[-1]]) if len(bars) else w0
    keep = (tail.space == "shared") | (tail.op == "shfl")
    rows = tail.select(keep)
    ax = fig.add_subplot()
    if not len(rows):
        ax.text(0.5, 0.5, "warp 0 touches no shared memory and makes no shuffle after its last barrier",
                ha="center", va="center")  # fmt: skip
        ax.set_axis_off()
        return
    lanes = rows.lanes()[:, :32].astype(float)
    kinds = ["shfl" if op == "shfl" else f"shared {op}" for op in rows.op]
    colour = np.array([2.0 if kd == "shfl" else 1.0 for kd in kinds])[:, None]
    ax.imshow(np.where(lanes > 0, colour, np.nan), cmap="coolwarm", vmin=0.5, vmax=2.5, aspect="auto")
    ax.set_yticks(
        range(len(rows)), [f"{kd}, line {int(line)}" for kd, line in zip(kinds, rows.line)], fontsize=8
    )
    ax.set_xticks(range(0, 32, 4))
    ax.set_xlabel("lane of warp 0 (coloured: takes part)")
    ax.set_title(
        f"your last warp: warp 0 of block 0 ({block} threads) after its last __syncthreads()\n"
        "red: shuffles, register to register (a long long takes two); blue: shared memory",
        fontsize=9,
    )
    fig.subplots_adjust(left=0.2)


shuffle = KernelExercise(
    key="reduction.shuffle",
    title="kernel 5's last warp with shuffles",
    kernel="reduce5_mine",
    stub=SHUFFLE_STUB,
    options=OPTIONS,
    cases=lambda: [_shuffle_case(*c) for c in SHUFFLE_CASES],
    targets=(_last_warp(),),
    timing=_speed(256, 2, "reduce5"),
    draw=lambda fig, k: _draw_last_warp(fig, k, 64, 128),
    hints=(
        "the shared-memory steps of the last warp race (the checker says where): a shuffle hands a "
        "value from one lane's register to another's, with the synchronisation built in",
        "__shfl_down_sync(0xffffffff, v, d) gives lane t the v of lane t + d: adding it halves "
        "the number of partial sums that matter, as one shared-memory step did, and lane 0 ends "
        "with the sum of all 32",
        "course/kernels/common.cuh's warp_sum is a warp's sum by shuffles: read it (your kernel is "
        "compiled without that header, so it cannot call it), compare it with your stub's last-warp "
        "steps, and ask what each lane must hold in a register before the first shuffle",
    ),
)

EXERCISES = (ways, wavefronts, warp_steps, any_block, four, blocks_per_sm, grid, shuffle)
