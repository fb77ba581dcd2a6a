"""course.analysis on traces whose answers are known by hand.

Synthetic traces are built event by event the way the emulator records a warp (one row
per warp instruction, inactive lanes -1); they pin exact numbers. Real traces of small
kernels run on the emulator check that the same numbers come out of the compiler's PTX.
"""

from __future__ import annotations

import numpy as np
import pytest

from course import analysis
from course.emulator.trace import LANES, BufferInfo, Trace, TraceRecorder

GLOBAL_BASE = 0x7000_0000_0000


class Warps:
    """Builds a synthetic trace: each call records what every warp of one block did."""

    def __init__(
        self,
        threads: int,
        buffers: list[tuple[str, str, int, int]],
        grid: int = 1,
        kernel: str = "k",
        block_dim: tuple[int, int, int] | None = None,
    ):
        self.threads, self.grid, self.kernel = threads, grid, kernel
        self.block_dim = block_dim or (threads, 1, 1)
        self.buffers = [
            BufferInfo(n, sp, size, size * count, np.dtype(f"f{size}").str) for n, sp, size, count in buffers
        ]
        self.bases, shared = [], 0
        for i, b in enumerate(self.buffers):
            self.bases.append(GLOBAL_BASE + i * 0x10000 if b.space == "global" else shared)
            shared += b.nbytes if b.space == "shared" else 0
        self.recorder = TraceRecorder()
        self.step = 0
        self.epoch = [0] * grid

    def access(
        self,
        op: str,
        buffer: str,
        index,
        *,
        line: int = 1,
        size: int | None = None,
        block: int = 0,
        opcode: str | None = None,
    ) -> None:
        """Thread t accesses element index[t] (-1: the thread does not take part)."""
        bid = [b.name for b in self.buffers].index(buffer)
        info = self.buffers[bid]
        index = np.full(self.threads, -1, np.int64) if index is None else np.asarray(index, np.int64)
        size = size or info.itemsize
        for w in range(-(-self.threads // LANES)):
            idx = np.full(LANES, -1, np.int64)
            part = index[w * LANES : (w + 1) * LANES]
            idx[: len(part)] = part
            on = idx >= 0
            if not on.any():
                continue  # a warp whose lanes all skip the branch issues nothing
            mask = int(np.sum(1 << np.flatnonzero(on).astype(np.uint64)))
            self._event(
                block,
                w,
                line,
                info.space,
                op,
                opcode or f"{op}.{info.space}.b{size * 8}",
                mask,
                size,
                np.where(on, self.bases[bid] + idx * info.itemsize, -1),
                np.where(on, bid, -1),
                idx,
            )

    def barrier(self, *, line: int = 1, block: int = 0) -> None:
        for w in range(-(-self.threads // LANES)):
            n = min(LANES, self.threads - w * LANES)
            self._event(
                block,
                w,
                line,
                "sync",
                "bar",
                "bar.sync",
                (1 << n) - 1,
                0,
                np.full(LANES, -1),
                np.full(LANES, -1),
                np.full(LANES, -1),
            )
        self.epoch[block] += 1

    def _event(self, block, warp, line, space, op, opcode, mask, size, addr, buf, idx) -> None:
        self.recorder.add(
            {
                "block": np.array([block]),
                "warp": np.array([warp]),
                "epoch": np.array([self.epoch[block]]),
                "step": np.array([self.step]),
                "pc": np.array([line]),
                "ptx_line": np.array([line]),
                "line": np.array([line]),
                "space": np.array([space]),
                "op": np.array([op]),
                "opcode": np.array([opcode]),
                "mask": np.array([mask], np.uint32),
                "size": np.array([size]),
                "addr": addr[None],
                "buffer": buf[None],
                "index": idx[None],
            }
        )
        self.step += 1

    def build(self) -> Trace:
        return self.recorder.build(
            kernel=self.kernel, grid=(self.grid, 1, 1), block=self.block_dim, buffers=self.buffers, source=[]
        )


def one_warp(addr_index, *, size: int = 4, space: str = "shared", count: int = 4096, op: str = "ld") -> Trace:
    """A trace of a single warp instruction: lane l touches element addr_index[l]."""
    w = Warps(LANES, [("a", space, size, count)])
    w.access(op, "a", addr_index, line=7)
    return w.build()


# the three reductions of the course, as their warps execute them: line 4 loads, 7 adds, 10 writes out
REDUCTION_LINES = {"load": 4, "add": 7, "out": 10}


def reduction_trace(variant: str, n: int = 256, blocks: int = 1) -> Trace:
    buffers = [("in", "global", 4, n * blocks), ("out", "global", 4, blocks), ("s", "shared", 4, n)]
    w = Warps(n, buffers, grid=blocks, kernel=variant)
    tid = np.arange(n)
    for blk in range(blocks):
        w.access("ld", "in", blk * n + tid, line=4, block=blk)
        w.access("st", "s", tid, line=4, block=blk)
        w.barrier(line=5, block=blk)
        ks = (
            [n >> j for j in range(1, n.bit_length())]
            if variant == "sequential"
            else [1 << j for j in range(n.bit_length() - 1)]
        )
        for k in ks:
            if variant == "interleaved":
                on, a, b = tid % (2 * k) == 0, tid, tid + k
            elif variant == "strided":
                on, a, b = 2 * k * tid < n, 2 * k * tid, 2 * k * tid + k
            else:
                on, a, b = tid < k, tid, tid + k
            w.access("ld", "s", np.where(on, a, -1), line=7, block=blk)
            w.access("ld", "s", np.where(on, b, -1), line=7, block=blk)
            w.access("st", "s", np.where(on, a, -1), line=7, block=blk)
            w.barrier(line=8, block=blk)
        w.access("ld", "s", np.where(tid == 0, 0, -1), line=10, block=blk)
        w.access("st", "out", np.where(tid == 0, blk, -1), line=10, block=blk)
    return w.build()


def kogge_stone_trace(n: int = 16) -> Trace:
    """In-place Kogge-Stone: read s[tid - d] into a register, barrier, s[tid] += t, barrier."""
    w = Warps(n, [("x", "global", 4, n), ("s", "shared", 4, n)])
    tid = np.arange(n)
    w.access("ld", "x", tid, line=3)
    w.access("st", "s", tid, line=3)
    w.barrier(line=4)
    d = 1
    while d < n:
        w.access("ld", "s", np.where(tid >= d, tid - d, -1), line=6)
        w.barrier(line=7)
        w.access("ld", "s", np.where(tid >= d, tid, -1), line=8)
        w.access("st", "s", np.where(tid >= d, tid, -1), line=8)
        w.barrier(line=9)
        d *= 2
    w.access("ld", "s", tid, line=11)
    w.access("st", "x", tid, line=11)
    return w.build()


def blelloch_trace(n: int = 16) -> Trace:
    """Work-efficient exclusive scan of n elements with n/2 threads (up-sweep, clear, down-sweep)."""
    w = Warps(n // 2, [("x", "global", 4, n), ("s", "shared", 4, n)])
    tid = np.arange(n // 2)
    for half in (0, 1):
        w.access("ld", "x", tid + half * n // 2, line=3)
        w.access("st", "s", tid + half * n // 2, line=3)
    w.barrier(line=4)
    d = 1
    while d < n:  # up-sweep: s[b] += s[a]
        on = tid < n // (2 * d)
        a, b = d * (2 * tid + 1) - 1, d * (2 * tid + 2) - 1
        w.access("ld", "s", np.where(on, a, -1), line=7)
        w.access("ld", "s", np.where(on, b, -1), line=7)
        w.access("st", "s", np.where(on, b, -1), line=7)
        w.barrier(line=8)
        d *= 2
    w.access("st", "s", np.where(tid == 0, n - 1, -1), line=10)
    w.barrier(line=11)
    d = n // 2
    while d >= 1:  # down-sweep: t = s[a]; s[a] = s[b]; s[b] += t
        on = tid < n // (2 * d)
        a, b = d * (2 * tid + 1) - 1, d * (2 * tid + 2) - 1
        w.access("ld", "s", np.where(on, a, -1), line=14)
        w.access("ld", "s", np.where(on, b, -1), line=14)
        w.access("st", "s", np.where(on, a, -1), line=15)
        w.access("st", "s", np.where(on, b, -1), line=16)
        w.barrier(line=17)
        d //= 2
    return w.build()


# ---------------------------------------------------------------- bank conflicts


def test_tile_column_is_32_way_and_padding_makes_it_conflict_free():
    lane = np.arange(LANES)
    assert analysis.bank_conflicts(one_warp(lane * 32)).ways.tolist() == [32]  # tile[lane][0], rows of 32
    assert analysis.bank_conflicts(one_warp(lane * 33)).ways.tolist() == [1]  # rows padded to 33
    assert analysis.bank_conflicts(one_warp(lane)).ways.tolist() == [1]  # a row


@pytest.mark.parametrize(
    "index, ways",
    [
        (np.zeros(LANES, int), 1),  # every lane reads one word: a broadcast
        (np.arange(LANES) // 2, 1),  # pairs of lanes share words
        (np.where(np.arange(LANES) < 16, 0, 32), 2),  # two words of bank 0, each broadcast
        (np.arange(LANES) * 2, 2),  # stride 2
        (np.arange(LANES) * 16, 16),
        (np.where(np.arange(LANES) < 3, np.arange(LANES) * 32, -1), 3),  # only 3 lanes active
    ],
)
def test_broadcast_and_strides(index, ways):
    t = analysis.bank_conflicts(one_warp(index))
    assert t.ways.tolist() == [ways]
    assert t.phases.tolist() == [1]


@pytest.mark.parametrize(
    "size, index, ways, phases",
    [
        (8, np.arange(LANES), 2, 2),  # consecutive doubles: two conflict-free half-warps
        (8, np.arange(LANES) * 2, 4, 2),  # every other double: 2-way in each half-warp
        (8, np.zeros(LANES, int), 2, 2),  # one double broadcast to both half-warps
        (8, np.where(np.arange(LANES) < 16, np.arange(LANES), -1), 1, 1),  # one half-warp only
        (8, np.arange(LANES) * 16, 32, 2),  # 128-byte stride: 16 words in bank 0 (and 1) per half-warp
        (16, np.arange(LANES), 4, 4),  # float4: four conflict-free quarter-warps
        (16, np.arange(LANES) * 2, 8, 4),
    ],
)
def test_wide_accesses_are_split_into_phases(size, index, ways, phases):
    t = analysis.bank_conflicts(one_warp(index, size=size))
    assert (t.ways[0], t.phases[0], t.lane_bytes[0]) == (ways, phases, size)


def test_bank_hits_count_distinct_words_per_bank():
    hits = analysis.bank_hits(one_warp(np.arange(LANES) * 32)).hits[0]
    assert hits[0] == 32 and hits[1:].sum() == 0
    hits = analysis.bank_hits(one_warp(np.arange(LANES) * 33)).hits[0]
    assert hits.tolist() == [1] * 32
    hits = analysis.bank_hits(one_warp(np.zeros(LANES, int))).hits[0]
    assert hits.tolist() == [1] + [0] * 31


def test_lane_words_say_which_lanes_conflict():
    lw = analysis.lane_words(one_warp(np.arange(LANES) * 32), 0)
    assert lw.bank.tolist() == [0] * LANES and lw.conflict.all()
    lw = analysis.lane_words(one_warp(np.arange(LANES) * 33), 0)
    assert lw.bank.tolist() == list(range(LANES)) and not lw.conflict.any()
    lw = analysis.lane_words(one_warp(np.arange(LANES), size=8), 0)  # doubles: two words a lane
    assert len(lw) == 64 and lw.phase.tolist() == [0] * 32 + [1] * 32 and not lw.conflict.any()
    assert lw.word.tolist() == list(range(64))


def test_lane_sectors():
    ls = analysis.lane_sectors(one_warp(np.arange(LANES) * 2, space="global"), 0)
    assert ls.lane.tolist() == list(range(LANES))
    assert (ls.sector - ls.sector[0]).tolist() == [lane // 4 for lane in range(LANES)]
    ls = analysis.lane_sectors(one_warp(np.arange(LANES), space="global"), 0)  # floats: 8 to a sector
    assert ls.lane.tolist() == list(range(LANES))  # none straddles, not even the last of a sector
    assert (ls.sector - ls.sector[0]).tolist() == [lane // 8 for lane in range(LANES)]


def test_strided_index_reduction_ways_per_step():
    t = reduction_trace("strided")
    bc = analysis.bank_conflicts(t)
    adds = bc[bc.line == REDUCTION_LINES["add"]]
    per_epoch = [int(adds.ways[adds.epoch == e].max()) for e in np.unique(adds.epoch)]
    assert per_epoch == [2, 4, 8, 8, 8, 4, 2, 1]
    by_line = analysis.bank_conflicts_by_line(t)
    row = by_line[by_line.line == REDUCTION_LINES["add"]][0]
    # 128, 64, 32, 16, ... threads add: 4, 2, 1, 1, 1, 1, 1, 1 warps, three instructions each
    assert row.requests == 3 * (4 + 2 + 1 + 1 + 1 + 1 + 1 + 1)
    assert row.wavefronts == 3 * (4 * 2 + 2 * 4 + 8 + 8 + 8 + 4 + 2 + 1)
    assert row.max_ways == 8
    assert by_line[by_line.line == REDUCTION_LINES["load"]].max_ways.tolist() == [1]


@pytest.mark.parametrize("variant", ["interleaved", "sequential"])
def test_interleaved_and_sequential_reductions_are_conflict_free(variant):
    assert analysis.bank_conflicts(reduction_trace(variant)).ways.max() == 1


# ---------------------------------------------------------------- sectors


@pytest.mark.parametrize(
    "index, size, sectors, ideal",
    [
        (np.arange(LANES), 4, 4, 4),  # 32 consecutive floats
        (np.arange(LANES) * 32, 4, 32, 4),  # stride of 32 floats
        (np.arange(LANES) + 1, 4, 5, 4),  # consecutive but off by one float
        (np.arange(LANES) * 2, 4, 8, 4),  # stride 2
        (np.zeros(LANES, int), 4, 1, 4),  # all lanes read one float
        (np.arange(LANES), 8, 8, 8),  # consecutive doubles
        (np.arange(LANES), 16, 16, 16),  # float4
        (np.where(np.arange(LANES) < 8, np.arange(LANES), -1), 4, 1, 1),  # 8 active lanes
    ],
)
def test_sectors(index, size, sectors, ideal):
    t = analysis.sectors(one_warp(index, size=size, space="global"))
    assert (t.sectors[0], t.ideal[0]) == (sectors, ideal)
    assert t.bytes[0] == (np.asarray(index) >= 0).sum() * size


def test_sectors_by_line_and_totals():
    w = Warps(64, [("x", "global", 4, 64 * 32), ("y", "global", 4, 64)])
    tid = np.arange(64)
    w.access("ld", "x", tid * 32, line=3)
    w.access("st", "y", tid, line=4)
    t = w.build()
    by_line = analysis.sectors_by_line(t)
    assert by_line.line.tolist() == [3, 4]
    assert by_line.sectors_per_request.tolist() == [32.0, 4.0]
    assert by_line.ideal_per_request.tolist() == [4.0, 4.0]
    tot = analysis.totals(t)
    assert tot == dict(
        global_bytes=512,
        global_requests=4,
        global_sectors=72,
        shared_requests=0,
        shared_wavefronts=0,
        barrier_steps=0,
        atomics=0,
    )


def test_totals_of_a_reduction():
    tot = analysis.totals(reduction_trace("strided", blocks=2))
    assert tot["barrier_steps"] == 9  # one after the copy, one per level; per block, not summed
    assert tot["global_requests"] == 2 * (8 + 1)
    assert tot["global_bytes"] == 2 * (256 * 4 + 4)
    assert tot["shared_requests"] == 2 * (8 + 3 * 12 + 1)
    assert tot["shared_wavefronts"] == 2 * (8 + 3 * (8 + 8 + 8 + 8 + 8 + 4 + 2 + 1) + 1)
    assert tot["atomics"] == 0


# ---------------------------------------------------------------- divergence


def test_interleaved_reduction_active_lanes_per_step():
    dv = analysis.divergence(reduction_trace("interleaved"))
    adds = dv[(dv.line == REDUCTION_LINES["add"]) & (dv.op == "st")]
    epochs = np.unique(adds.epoch)
    assert [int(adds.active[adds.epoch == e].sum()) for e in epochs] == [128, 64, 32, 16, 8, 4, 2, 1]
    assert [int(adds.active[adds.epoch == e].max()) for e in epochs] == [16, 8, 4, 2, 1, 1, 1, 1]
    assert [int((adds.epoch == e).sum()) for e in epochs] == [8, 8, 8, 8, 8, 4, 2, 1]  # warps issuing
    assert (adds.active < adds.possible).all()  # every warp that adds is divergent


def test_sequential_reduction_diverges_only_below_a_warp():
    dv = analysis.divergence(reduction_trace("sequential"))
    adds = dv[(dv.line == REDUCTION_LINES["add"]) & (dv.op == "st")]
    divergent = [bool((adds.active < adds.possible)[adds.epoch == e].any()) for e in np.unique(adds.epoch)]
    assert divergent == [False, False, False, True, True, True, True, True]
    by_line = analysis.divergence_by_line(reduction_trace("sequential"))
    row = by_line[by_line.line == REDUCTION_LINES["add"]][0]
    assert row.instructions == 3 * (4 + 2 + 1 + 1 + 1 + 1 + 1 + 1)
    assert row.divergent == 3 * 5 and row.min_active == 1


def test_partial_last_warp_is_not_divergence():
    w = Warps(40, [("x", "global", 4, 40)])
    w.access("ld", "x", np.arange(40))
    dv = analysis.divergence(w.build())
    assert dv.active.tolist() == [32, 8] and dv.possible.tolist() == [32, 8]


@pytest.mark.parametrize("sizes", [(40, 64), (64, 40)], ids=["small-block-first", "big-block-first"])
def test_each_launch_of_a_joined_trace_has_the_warps_of_its_own_block_size(sizes):
    launches = []
    for threads in sizes:  # every thread of the block reads: no warp is divergent
        w = Warps(threads, [("x", "global", 4, threads)])
        w.access("ld", "x", np.arange(threads))
        launches.append(w.build())
    dv = analysis.divergence(Trace.concat(launches))
    lanes = {40: [32, 8], 64: [32, 32]}
    assert dv.possible.tolist() == lanes[sizes[0]] + lanes[sizes[1]]
    assert (dv.active == dv.possible).all()
    assert analysis.divergence_by_line(Trace.concat(launches)).divergent.tolist() == [0]


@pytest.mark.parametrize("sizes", [(40, 64), (64, 40)], ids=["small-block-first", "big-block-first"])
def test_iterations_number_the_threads_of_each_launch_of_a_joined_trace_by_its_own_block_size(sizes):
    launches = []
    for name, threads in zip("xy", sizes):  # every thread of both blocks reads its element twice
        w = Warps(threads, [(name, "global", 4, 2 * threads)], grid=2)
        for block in (0, 1):
            for _ in range(2):
                w.access("ld", name, block * threads + np.arange(threads), block=block)
        launches.append(w.build())
    joined = Trace.concat(launches)
    for name, threads in zip("xy", sizes):
        it = analysis.iterations(joined, name)
        assert (it.gthread == it.block * threads + it.thread).all()
        assert sorted(it.gthread.tolist()) == sorted(2 * list(range(2 * threads)))
        assert np.bincount(it.iteration).tolist() == [2 * threads, 2 * threads]  # iterations 0 and 1


# ---------------------------------------------------------------- steps, data flow, counts


def test_steps_lists_every_element_by_thread_and_epoch():
    st = analysis.steps(reduction_trace("interleaved", n=64), "s")
    first = st[(st.epoch == 1) & (st.op == "st")]
    assert first.thread.tolist() == list(range(0, 64, 2)) and first.index.tolist() == list(range(0, 64, 2))
    reads = st[(st.epoch == 1) & (st.op == "ld")]
    assert sorted(reads.index.tolist()) == list(range(64))
    assert set(st.stage[st.epoch == 0]) == {0} and set(st.stage[st.epoch == 6]) == {6}


def test_fused_64bit_load_covers_two_elements():
    w = Warps(32, [("s", "shared", 4, 64)])
    w.access("ld", "s", np.arange(32) * 2, size=8)  # s[2t] and s[2t+1] fused into one ld.shared.v2.f32
    t = w.build()
    st = analysis.steps(t, "s")
    assert len(st) == 64 and st.index.tolist() == list(range(64))
    assert st.thread.tolist() == list(np.repeat(np.arange(32), 2))
    assert analysis.bank_conflicts(t).ways.tolist() == [2]


@pytest.mark.parametrize(
    "variant, pairs",
    [
        ("interleaved", lambda k, n: [(t + k, t) for t in range(0, n, 2 * k)]),
        ("strided", lambda k, n: [(2 * k * t + k, 2 * k * t) for t in range(n // (2 * k))]),
        ("sequential", lambda k, n: [(t + n // (2 * k), t) for t in range(n // (2 * k))]),
    ],
)
def test_dataflow_of_the_reductions(variant, pairs):
    n = 32
    flow = analysis.dataflow(reduction_trace(variant, n=n), "s")
    moves = flow[flow.src != flow.dst]
    for stage, k in enumerate([1, 2, 4, 8, 16], start=1):
        got = sorted(zip(moves.src[moves.stage == stage].tolist(), moves.dst[moves.stage == stage].tolist()))
        assert got == sorted(pairs(k, n)), stage
    assert (flow.src == flow.dst).sum() == n - 1  # every add also reads its own element


def test_step_counts_of_a_reduction():
    sc = analysis.step_counts(reduction_trace("interleaved"), "s")
    assert sc.stage.tolist() == list(range(9))
    assert sc.ops.tolist() == [0, 128, 64, 32, 16, 8, 4, 2, 1]
    assert sc.threads.tolist() == [256, 128, 64, 32, 16, 8, 4, 2, 1]
    assert sc.warps.tolist() == [8, 8, 8, 8, 8, 8, 4, 2, 1]
    assert sc.writes[0] == 256 and sc.work[-1] == 255
    assert analysis.work_summary(reduction_trace("interleaved"), "s") == dict(
        steps=8, work=255, max_threads=128, barriers=9
    )
    # a buffer the block only loaded (no step did work on it), and a block the launch did not have
    nothing = dict(steps=0, work=0, max_threads=0)
    assert analysis.work_summary(reduction_trace("interleaved"), "in") == dict(**nothing, barriers=9)
    assert analysis.work_summary(reduction_trace("interleaved"), "s", block=1) == dict(**nothing, barriers=0)


def test_kogge_stone_folds_read_intervals_into_the_step_that_writes():
    n = 16
    t = kogge_stone_trace(n)
    sc = analysis.step_counts(t, "s")
    assert sc.ops.tolist() == [0, 15, 14, 12, 8]  # n - d additions at offsets 1, 2, 4, 8
    assert sc.first_epoch.tolist() == [0, 1, 3, 5, 7] and sc.last_epoch.tolist() == [0, 2, 4, 6, 8]
    flow = analysis.dataflow(t, "s")
    moves = flow[flow.src != flow.dst]
    for stage, d in enumerate([1, 2, 4, 8], start=1):
        m = moves[moves.stage == stage]
        assert (m.dst - m.src).tolist() == [d] * (n - d)
    assert analysis.work_summary(t, "s") == dict(steps=4, work=49, max_threads=15, barriers=9)


def test_blelloch_down_sweep_sources():
    n = 16
    flow = analysis.dataflow(blelloch_trace(n), "s")
    sc = analysis.step_counts(blelloch_trace(n), "s")
    assert sc.ops.tolist() == [0, 8, 4, 2, 1, 0, 2, 4, 8, 16]  # the clear of s[n-1] is a plain store
    assert sc.threads.tolist() == [8, 8, 4, 2, 1, 1, 1, 2, 4, 8]
    down = flow[(flow.stage == 6) & (flow.src != flow.dst)]  # d = 8: s[7] <-> s[15]
    assert sorted(zip(down.src.tolist(), down.dst.tolist())) == [(7, 15), (15, 7)]


def test_warp_synchronous_code_gets_a_stage_per_level():
    """The unrolled last warp of a reduction has no barriers: a reload of an element written
    earlier in the same interval starts the next stage."""
    w = Warps(32, [("s", "shared", 4, 64)])
    tid = np.arange(32)
    for k in (32, 16, 8, 4, 2, 1):
        w.access("ld", "s", tid, line=9)
        w.access("ld", "s", tid + k, line=9)
        w.access("st", "s", tid, line=9)
    t = w.build()
    sc = analysis.step_counts(t, "s")
    assert sc.stage.tolist() == list(range(6)) and (sc.first_epoch == 0).all()
    st = analysis.steps(t, "s")  # a level's loads belong to the stage of the store they feed
    level = np.searchsorted(np.unique(st.event), st.event) // 3
    assert st.stage.tolist() == level.tolist()


def test_a_rewrite_without_a_read_between_stays_in_its_stage():
    w = Warps(32, [("s", "shared", 4, 32)])
    w.access("st", "s", np.arange(32))
    w.access("st", "s", np.arange(32))  # overwrites: nothing was read, so no new stage
    w.access("ld", "s", np.arange(32))  # reads what was written: the next stage
    st = analysis.steps(w.build(), "s")
    assert st.stage.tolist() == [0] * 64 + [1] * 32


def test_iterations_of_a_grid_stride_loop():
    threads, blocks, n = 8, 2, 40
    w = Warps(threads, [("x", "global", 4, n), ("y", "global", 4, n)], grid=blocks)
    stride = threads * blocks
    for it in range(-(-n // stride)):
        for blk in range(blocks):
            i = it * stride + blk * threads + np.arange(threads)
            i = np.where(i < n, i, -1)
            w.access("ld", "x", i, block=blk, line=5)
            w.access("ld", "y", i, block=blk, line=5)
            w.access("st", "y", i, block=blk, line=5)
    t = w.build()
    it = analysis.iterations(t, "y")
    order = np.lexsort((it.op, it.index))
    assert it.index[order].tolist() == list(np.repeat(np.arange(n), 2))
    assert it.iteration[order].tolist() == list(np.repeat(np.arange(n) // stride, 2))
    assert it.gthread[order].tolist() == list(np.repeat(np.arange(n) % stride, 2))


def test_iterations_count_stores_and_atomics_apart():
    w = Warps(32, [("y", "global", 4, 64)])
    for rep in range(2):
        w.access("st", "y", np.arange(32) + 32 * rep, line=3)  # y[i] = ...
        w.access("atom", "y", np.arange(32) + 32 * rep, line=4)  # atomicAdd(&y[i], ...)
    it = analysis.iterations(w.build(), "y")
    for op in ("st", "atom"):
        assert it.iteration[it.op == op].tolist() == [0] * 32 + [1] * 32, op


def test_atomics_and_contention():
    w = Warps(32, [("x", "global", 4, 32), ("hist", "shared", 4, 8)])
    bins = np.arange(32) % 3  # 11 lanes on bin 0, 11 on 1, 10 on 2
    w.access("atom", "hist", bins, line=6)
    w.access("atom", "hist", np.where(np.arange(32) < 4, 7, -1), line=6)
    t = w.build()
    at = analysis.atomics(t, "hist")
    assert at.index.tolist() == [0, 1, 2, 7] and at.lanes.tolist() == [11, 11, 10, 4]
    ct = analysis.contention(t, "hist")
    assert ct.max_lanes.tolist() == [11, 4] and ct.bins.tolist() == [3, 1] and ct.lanes.tolist() == [32, 4]
    assert analysis.totals(t)["atomics"] == 36
    assert analysis.step_counts(t, "hist").ops.tolist() == [36]  # every lane's update counts, even on one bin
    assert analysis.bank_conflicts(t).ways.tolist() == [1, 1]


def test_untyped_shared_memory_counts_in_its_most_common_access_size():
    w = Warps(32, [("raw", "shared", 4, 256), ("unused", "shared", 4, 16)])
    for i in (0, 1):  # as `.b8` arrays (an extern __shared__ char[] cast to float*): no element type
        w.buffers[i] = BufferInfo(w.buffers[i].name, "shared", 1, w.buffers[i].nbytes, "")
    w.access("st", "raw", np.arange(32) * 4, size=4)  # byte offsets: float s[t] = ...
    w.access("ld", "raw", np.arange(32) * 4, size=4)
    w.access("ld", "raw", np.arange(16) * 8, size=8)  # one float2 load among them
    t = w.build()
    assert analysis.element_size(t, analysis.buffer_index(t, "raw")) == 4  # elements are floats
    assert analysis.element_size(t, analysis.buffer_index(t, "unused")) == 1  # untouched: bytes


def test_tables_are_record_arrays_and_empty_traces_work():
    t = Warps(32, [("s", "shared", 4, 32)]).build()
    for table in (
        analysis.bank_conflicts(t),
        analysis.sectors(t),
        analysis.divergence(t),
        analysis.steps(t, "s"),
        analysis.dataflow(t, "s"),
        analysis.step_counts(t, "s"),
        analysis.bank_conflicts_by_line(t),
        analysis.sectors_by_line(t),
        analysis.divergence_by_line(t),
        analysis.contention(t, "s"),
    ):
        assert isinstance(table, np.recarray) and len(table) == 0
    assert analysis.totals(t)["shared_wavefronts"] == 0
    with pytest.raises(KeyError, match="no buffer"):
        analysis.steps(t, "nope")


# ---------------------------------------------------------------- real traces from the emulator

REDUCTIONS_CU = r"""
extern "C" __global__ void interleaved(const float* in, float* out) {
    extern __shared__ float s[];
    unsigned tid = threadIdx.x;
    s[tid] = in[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned k = 1; k < blockDim.x; k *= 2) {
        if (tid % (2 * k) == 0) s[tid] += s[tid + k];  // add
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}
extern "C" __global__ void strided(const float* in, float* out) {
    extern __shared__ float s[];
    unsigned tid = threadIdx.x;
    s[tid] = in[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned k = 1; k < blockDim.x; k *= 2) {
        unsigned index = 2 * k * tid;
        if (index < blockDim.x) s[index] += s[index + k];  // add
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}
extern "C" __global__ void sequential(const float* in, float* out) {
    extern __shared__ float s[];
    unsigned tid = threadIdx.x;
    s[tid] = in[blockIdx.x * blockDim.x + tid];
    __syncthreads();
    for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];  // add
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}
// the same tree with the block size known to the compiler: the loop is unrolled
extern "C" __global__ void __launch_bounds__(256) unrolled(const float* in, float* out) {
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    s[tid] = in[blockIdx.x * 256 + tid];
    __syncthreads();
    #pragma unroll
    for (unsigned k = 128; k > 0; k >>= 1) {
        if (tid < k) s[tid] += s[tid + k];  // add
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s[0];
}
"""

MEMORY_CU = r"""
extern "C" __global__ void tile_column(const float* in, float* out) {
    __shared__ float tile[32][32];
    __shared__ float padded[32][33];
    unsigned x = threadIdx.x, y = threadIdx.y;
    tile[y][x] = in[y * 32 + x];
    padded[y][x] = in[y * 32 + x];
    __syncthreads();
    out[y * 32 + x] = tile[x][y];  // column of tile
    out[y * 32 + x] += padded[x][y];  // column of padded
}
extern "C" __global__ void reads(const float* x, float* y, int stride) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    y[t] = x[t * stride];  // read
}
extern "C" __global__ void pairs(const float2* x, float* y) {
    unsigned t = threadIdx.x;
    float2 v = x[t];  // one 8-byte load per lane
    y[t] = v.x + v.y;
}
extern "C" __global__ void doubles(const double* x, double* y) {
    __shared__ double s[64];
    unsigned t = threadIdx.x;
    s[t] = x[t];
    s[t + 32] = x[t + 32];
    __syncthreads();
    y[t] = s[t] + s[2 * t];  // shared doubles
}
extern "C" __global__ void histogram(const unsigned* data, unsigned* hist) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&hist[data[i] % 8], 1u);
}
"""


def line_of(source: str, marker: str) -> int:
    """The .cu line (1-based) holding `marker`: real tests find lines the way a reader would."""
    return next(i for i, text in enumerate(source.splitlines(), start=1) if marker in text)


@pytest.fixture(scope="module")
def real_reductions():
    course = pytest.importorskip("course")
    previous = course.device().backend
    course.set_backend("emulator")
    try:
        mod = course.Module(code=REDUCTIONS_CU)
        x = course.asarray(np.arange(512, dtype=np.float32))
        out = course.zeros(2, np.float32)
        traces = {}
        for name in ("interleaved", "strided", "sequential", "unrolled"):
            traces[name] = mod.get_function(name).trace(
                (2,), (256,), (x, out), shared_mem=0 if name == "unrolled" else 1024
            )
            assert course.asnumpy(out).tolist() == [32640.0, 98176.0]
        yield traces
    finally:
        course.set_backend(previous)


@pytest.fixture(scope="module")
def memory_module():
    course = pytest.importorskip("course")
    previous = course.device().backend
    course.set_backend("emulator")
    try:
        yield course, course.Module(code=MEMORY_CU)
    finally:
        course.set_backend(previous)


def _add_profile(trace: Trace, line: int) -> tuple[list[int], ...]:
    """Per barrier interval of the add line: worst ways, active lanes, divergent warps."""
    bc, dv = analysis.bank_conflicts(trace), analysis.divergence(trace)
    bc, dv = bc[bc.line == line], dv[(dv.line == line) & (dv.op == "st")]
    return (
        [int(bc.ways[bc.epoch == e].max()) for e in np.unique(bc.epoch)],
        [int(dv.active[dv.epoch == e].sum()) for e in np.unique(dv.epoch)],
        [int((dv.active < dv.possible)[dv.epoch == e].sum()) for e in np.unique(dv.epoch)],
    )


@pytest.mark.parametrize("variant", ["interleaved", "strided", "sequential"])
def test_real_reductions_match_the_synthetic_ones(real_reductions, variant):
    real = real_reductions[variant].where(block=0)
    synthetic = reduction_trace(variant)
    kernel_start = line_of(REDUCTIONS_CU, f"void {variant}(")
    add = kernel_start + line_of("\n".join(REDUCTIONS_CU.splitlines()[kernel_start:]), "// add")
    per_step = [_add_profile(real, add), _add_profile(synthetic, REDUCTION_LINES["add"])]
    assert per_step[0] == per_step[1]
    sc_real, sc_syn = analysis.step_counts(real, "s"), analysis.step_counts(synthetic, "s")
    for col in ("stage", "threads", "warps", "ops", "work", "first_epoch"):
        assert sc_real[col].tolist() == sc_syn[col].tolist(), col


def test_real_strided_reduction_ways_and_interleaved_lanes(real_reductions):
    bc = analysis.bank_conflicts(real_reductions["strided"])
    adds = bc[bc.line == line_of(REDUCTIONS_CU, "if (index < blockDim.x)")]
    assert [int(adds.ways[adds.epoch == e].max()) for e in np.unique(adds.epoch)] == [2, 4, 8, 8, 8, 4, 2, 1]
    dv = analysis.divergence(real_reductions["interleaved"].where(block=1))
    adds = dv[(dv.line == line_of(REDUCTIONS_CU, "if (tid % (2 * k) == 0)")) & (dv.op == "st")]
    assert [int(adds.active[adds.epoch == e].sum()) for e in np.unique(adds.epoch)] == [
        128,
        64,
        32,
        16,
        8,
        4,
        2,
        1,
    ]


def test_real_unrolled_reduction_counts_the_same_steps(real_reductions):
    """With the block size fixed the compiler unrolls the loop; the trace-based counts do not care."""
    t = real_reductions["unrolled"]
    sc = analysis.step_counts(t, "s")
    assert sc.ops[sc.block == 0].tolist() == [0, 128, 64, 32, 16, 8, 4, 2, 1]
    assert analysis.work_summary(t, "s", block=1) == dict(steps=8, work=255, max_threads=128, barriers=9)
    assert analysis.totals(t)["barrier_steps"] == 9
    assert analysis.bank_conflicts(t).ways.max() == 1


def test_real_tile_column_with_and_without_padding(memory_module):
    course, mod = memory_module
    x, out = course.asarray(np.arange(1024, dtype=np.float32)), course.zeros(1024, np.float32)
    t = mod.get_function("tile_column").trace((1,), (32, 32), (x, out))
    by_line = analysis.bank_conflicts_by_line(t)
    ways = dict(zip(by_line.line.tolist(), by_line.max_ways.tolist()))
    assert ways[line_of(MEMORY_CU, "// column of tile")] == 32
    assert ways[line_of(MEMORY_CU, "// column of padded")] == 1
    assert ways[line_of(MEMORY_CU, "tile[y][x] =")] == 1
    st = analysis.steps(t, "tile")  # a static __shared__ array, found by its source name
    reads = st[(st.op == "ld") & (st.warp == 3)]
    assert reads.index.tolist() == [lane * 32 + 3 for lane in range(32)]


@pytest.mark.parametrize("stride, sectors", [(1, 4), (2, 8), (32, 32)])
def test_real_coalesced_and_strided_reads(memory_module, stride, sectors):
    course, mod = memory_module
    x, y = course.asarray(np.zeros(64 * stride, np.float32)), course.zeros(64, np.float32)
    t = mod.get_function("reads").trace((2,), (32,), (x, y, np.int32(stride)))
    sc = analysis.sectors(t)
    reads = sc[(sc.line == line_of(MEMORY_CU, "// read")) & (sc.op == "ld")]
    assert reads.sectors.tolist() == [sectors, sectors] and reads.ideal.tolist() == [4, 4]
    writes = sc[sc.op == "st"]
    assert writes.sectors.tolist() == [4, 4]


def test_real_vector_load_is_one_request_of_8_bytes_per_lane(memory_module):
    course, mod = memory_module
    x, y = course.asarray(np.zeros(64, np.float32)), course.zeros(32, np.float32)
    t = mod.get_function("pairs").trace((1,), (32,), (x, y))
    sc = analysis.sectors(t)
    load = sc[sc.op == "ld"]
    assert load.lane_bytes.tolist() == [8] and load.sectors.tolist() == [8] and load.bytes.tolist() == [256]
    st = analysis.steps(t, "x")
    assert st.index.tolist() == list(range(64))  # each lane covers two floats


def test_real_shared_doubles(memory_module):
    course, mod = memory_module
    x, y = course.asarray(np.arange(64, dtype=np.float64)), course.zeros(32, np.float64)
    t = mod.get_function("doubles").trace((1,), (32,), (x, y))
    bc = analysis.bank_conflicts(t)
    assert set(bc.lane_bytes.tolist()) == {8}
    ld = bc[(bc.line == line_of(MEMORY_CU, "// shared doubles")) & (bc.op == "ld")]
    assert sorted(ld.ways.tolist()) == [2, 4]  # s[t]: two clean half-warps; s[2t]: 2-way in each
    assert bc.phases.max() == 2


def test_real_histogram_atomics(memory_module):
    course, mod = memory_module
    data = np.arange(64, dtype=np.uint32) % 3
    hist = course.zeros(8, np.uint32)
    t = mod.get_function("histogram").trace((2,), (32,), (course.asarray(data), hist))
    assert course.asnumpy(hist)[:3].tolist() == [22, 21, 21]
    ct = analysis.contention(t, "hist")
    assert ct.max_lanes.tolist() == [11, 11] and ct.bins.tolist() == [3, 3]
    assert analysis.totals(t)["atomics"] == 64


def test_a_traces_tables_are_kept_on_it_and_read_only():
    """The panel's picture and metrics ask for one trace's analyses several times: each is computed
    once per trace (a `where` is another trace), and nobody can change it for the next reader."""
    t = reduction_trace("sequential")
    counts = analysis.step_counts(t, "s")
    assert analysis.step_counts(t, "s") is counts
    assert analysis.steps(t, "s") is analysis.steps(t, "s")
    sub = t.where(warp=0)
    assert analysis.step_counts(sub, "s") is not counts
    assert len(analysis.steps(sub, "s")) < len(analysis.steps(t, "s"))
    with pytest.raises(ValueError, match="read-only"):
        counts.ops[0] = 99
    with pytest.raises(ValueError, match="read-only"):
        analysis.bank_conflicts(t).ways[:] = 0


def _dataflow_by_rows(acc: np.recarray) -> dict[str, list[int]]:
    """The data flow's definition, one access at a time (analysis._dataflow computes it in sorts)."""
    out: dict[str, list[int]] = {
        k: [] for k in ("block", "stage", "epoch", "thread", "src", "dst", "line", "event")
    }
    pending: dict[int, dict[int, list[int]]] = {}  # block -> thread -> reads since its last write
    in_stage: dict[int, dict[int, list[int]]] = {}  # block -> thread -> reads in the stage so far
    current: dict[int, int] = {}
    cols = [acc[k].tolist() for k in ("block", "stage", "epoch", "thread", "op", "index", "line", "event")]
    for block, stage, epoch, thread, op, index, line, event in zip(*cols):
        if current.get(block) != stage:
            current[block] = stage
            pending[block], in_stage[block] = {}, {}
        if op in analysis.READ_OPS:
            pending[block].setdefault(thread, []).append(index)
            in_stage[block].setdefault(thread, []).append(index)
        if op in analysis.WRITE_OPS:
            sources = pending[block].get(thread) or in_stage[block].get(thread, [])
            for src in dict.fromkeys(sources):
                for k, v in zip(out, (block, stage, epoch, thread, src, index, line, event)):
                    out[k].append(v)
            pending[block][thread] = []
    return out


def _random_accesses(rng: np.random.Generator, n: int) -> np.recarray:
    """Accesses of a few blocks interleaved, stages rising in each block, every kind of op."""
    block = rng.integers(0, 3, n)
    stage = np.zeros(n, np.int32)
    for b in range(3):
        rows = np.flatnonzero(block == b)
        stage[rows] = np.cumsum(rng.random(len(rows)) < 0.08)
    return analysis._table(
        block=block.astype(np.int32), epoch=stage * 2, stage=stage,
        thread=rng.integers(0, 5, n).astype(np.int32), warp=np.zeros(n, np.int32),
        lane=np.zeros(n, np.int8), op=rng.choice(np.array(["ld", "ld", "st", "atom", "red"]), n),
        index=rng.integers(0, 9, n), line=rng.integers(1, 50, n).astype(np.int32), event=np.arange(n),
    )  # fmt: skip


@pytest.mark.parametrize("seed", range(6))
def test_dataflow_is_its_definition_on_random_accesses(seed):
    acc = _random_accesses(np.random.default_rng(seed), [1, 7, 40, 333, 1000, 2500][seed])
    got, want = analysis._dataflow(acc), _dataflow_by_rows(acc)
    assert len(got) == len(want["src"]) and (seed == 0 or len(got) > 0)
    for k, v in want.items():
        assert got[k].tolist() == v, k


@pytest.mark.parametrize("variant", ["interleaved", "sequential"])
def test_dataflow_is_its_definition_on_reductions_and_scans(variant):
    stores = _random_accesses(np.random.default_rng(1), 50)
    stores.op[:] = "st"  # plain stores only: no data flow
    assert len(analysis._dataflow(stores)) == 0
    for t, buffer in ((reduction_trace(variant, n=512, blocks=3), "s"), (blelloch_trace(64), "s"),
                      (kogge_stone_trace(48), "s")):  # fmt: skip
        acc = analysis.steps(t, buffer)
        got, want = analysis._dataflow(acc), _dataflow_by_rows(acc)
        for k, v in want.items():
            assert got[k].tolist() == v, (buffer, k)
