"""Trace in, tables out: the numbers behind every drawing and metric of the course.

Each function reads a `Trace` recorded by the emulator and returns a NumPy record
array (`table.line`, `table["ways"]`, one row per item), or a dict for totals. Nothing
here looks at the source: the trace is of the compiler's PTX, so an unrolled loop or two
neighbouring loads fused into one 64-bit load are counted as the hardware would see them.

Rows of a trace are warp-level events; `event` columns below are row numbers in the
trace passed in, so `trace.select(...)`/`trace.where(...)` results stay comparable.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np

from .emulator.ptx import source_name
from .emulator.trace import LANES, Trace, id_ranges

BANKS = 32
BANK_BYTES = 4
SECTOR_BYTES = 32
MEMORY_OPS = ("ld", "st", "atom", "red")
READ_OPS = ("ld", "atom", "red")  # an atomic reads the old value even when it discards it (red)
WRITE_OPS = ("st", "atom", "red")
_CHUNK = 1 << 15  # events per vectorised pass: bounds the (events, 32, k) temporaries


# ---------------------------------------------------------------- helpers

F = TypeVar("F", bound=Callable[..., Any])


def _kept_on_the_trace(f: F) -> F:
    """Keep f's table on the trace it read: a panel's picture and metrics ask for the same
    analyses of one trace (its steps, data flow, bank conflicts) several times. Kept tables are
    read-only, so no reader can change what the next one gets."""

    @functools.wraps(f)
    def kept(trace: Trace, *args: Any) -> Any:
        memo = trace.__dict__.setdefault("_analyses", {})
        key = (f.__name__, *args)
        if key not in memo:
            table = f(trace, *args)
            table.flags.writeable = False
            memo[key] = table
        return memo[key]

    return kept  # type: ignore[return-value]


def _table(**columns: np.ndarray) -> np.recarray:
    """A record array with one field per column; 2-D columns become sub-array fields."""
    cols = {k: np.asarray(v) for k, v in columns.items()}
    n = len(next(iter(cols.values())))
    out = np.empty(n, np.dtype([(k, v.dtype, v.shape[1:]) for k, v in cols.items()]))
    for k, v in cols.items():
        out[k] = v
    return out.view(np.recarray)


def subset(table: np.recarray, keep: Any) -> np.recarray:
    """The rows of a table that `keep` (a boolean mask, indices or a slice) selects."""
    return table[keep].view(np.recarray)


def _chunks(n: int) -> Iterator[slice]:
    for start in range(0, n, _CHUNK):
        yield slice(start, min(n, start + _CHUNK))


def _lanes(mask: np.ndarray) -> np.ndarray:
    """(n, 32) boolean: the lanes set in each mask."""
    return (np.asarray(mask, np.uint32)[:, None] >> np.arange(LANES, dtype=np.uint32)) & 1 == 1


def _popcount(mask: np.ndarray) -> np.ndarray:
    return _lanes(mask).sum(axis=1).astype(np.int32)


def _memory_events(trace: Trace, space: str) -> np.ndarray:
    """Row numbers of the loads, stores and atomics of one memory space."""
    return np.flatnonzero((trace.space == space) & np.isin(trace.op, MEMORY_OPS))


def _group_sum(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    uniq, inv = np.unique(keys, return_inverse=True)
    return uniq, np.bincount(inv, weights=values, minlength=len(uniq))


def buffer_index(trace: Trace, name: str) -> int:
    """The buffer called `name`: a kernel parameter, an `extern __shared__` array, or a static
    `__shared__` array by its source name (PTX calls it e.g. `_ZZ9transposePfS_E4tile`).
    Where several match (a module's unused `extern __shared__ s[]` beside a kernel's static
    `s`), the one this trace touches wins."""
    hits = [i for i, b in enumerate(trace.buffers) if name in (b.name, source_name(b.name))]
    if not hits:
        raise KeyError(f"no buffer {name!r} in this trace; it has {[b.name for b in trace.buffers]}")
    touched = [i for i in hits if (trace.buffer == i).any()]
    return (touched or hits)[0]


def element_size(trace: Trace, buffer: int) -> int:
    """Bytes per element of a buffer: its itemsize, or for untyped memory (dtype "", e.g. a
    `.b8` shared array) the most common access size, so indices count the kernel's elements."""
    info = trace.buffers[buffer]
    if info.dtype or info.itemsize > 1:
        return info.itemsize
    touched = (trace.buffer == buffer).any(axis=1)
    if not touched.any():
        return info.itemsize
    sizes, counts = np.unique(trace.size[touched], return_counts=True)
    return int(sizes[np.argmax(counts)])


# ---------------------------------------------------------------- who touched what


@_kept_on_the_trace
def steps(trace: Trace, buffer: str) -> np.recarray:
    """Every element of `buffer` each thread read or wrote, per barrier interval.

    One row per (lane, element): block, epoch (barrier interval), stage (see below),
    thread (linear id in the block), warp, lane, op (ld/st/atom/red as in the trace),
    index (element), line (.cu line) and event (row in the trace), in execution order.
    A vector or fused access (8 or 16 bytes per lane) yields one row per element it covers.

    `stage` numbers the logical steps of an in-block algorithm (a reduction or scan level):
    a new stage starts at a barrier once the current stage has written the buffer (so
    read-only intervals fold into the write that follows them), and also without a barrier
    when a load reads an element written earlier in the same stage (warp-synchronous code).
    """
    table = _accesses(trace, buffer)
    table.stage = _stages(table)
    return table


def _accesses(trace: Trace, buffer: str) -> np.recarray:
    """`steps` without its stage column (all zero): the stages cost a loop over warp instructions."""
    bid = buffer_index(trace, buffer)
    unit = element_size(trace, bid)
    itemsize = trace.buffers[bid].itemsize
    is_mem = np.isin(trace.op, MEMORY_OPS)
    ev, lane = np.nonzero(trace.lanes() & (trace.buffer == bid) & is_mem[:, None])
    per = np.maximum(1, trace.size[ev].astype(np.int64) // unit)
    rep = np.repeat(np.arange(len(ev)), per)
    offset = np.arange(len(rep)) - np.repeat(np.cumsum(per) - per, per)
    ev, lane = ev[rep], lane[rep]
    index = trace.index[ev, lane] * itemsize // unit + offset
    return _table(
        block=trace.columns["block"][ev],
        epoch=trace.epoch[ev],
        stage=np.zeros(len(ev), np.int32),
        thread=(trace.warp[ev].astype(np.int64) * LANES + lane).astype(np.int32),
        warp=trace.warp[ev],
        lane=lane.astype(np.int8),
        op=trace.op[ev],
        index=index,
        line=trace.line[ev],
        event=ev.astype(np.int64),
    )


def _stages(acc: np.recarray) -> np.ndarray:
    """The stage of every access row (rows in execution order); see `steps`."""
    stage = np.zeros(len(acc), np.int32)
    if not len(acc):
        return stage
    # plain arrays: a record array's attribute access costs microseconds, and this loops
    index, epochs, events = (np.asarray(acc[k]) for k in ("index", "epoch", "event"))
    reads, writes = np.asarray(acc["op"]) == "ld", np.isin(acc["op"], WRITE_OPS)
    written = np.zeros(int(index.max()) + 1, bool)  # elements written in the current stage
    by_block = np.argsort(acc["block"], kind="stable")
    block_starts = np.flatnonzero(np.r_[True, np.diff(acc["block"][by_block]) != 0])
    for rows in np.split(by_block, block_starts[1:]):
        written[:] = False
        current, has_writes, epoch = 0, False, epochs[rows[0]]
        ev = events[rows]
        starts = np.flatnonzero(np.r_[True, ev[1:] != ev[:-1]])
        for a, b in zip(starts.tolist(), np.r_[starts[1:], len(rows)].tolist()):
            r = rows[a:b]  # the lanes (and elements) of one warp instruction
            first = r[0]
            raw = reads[first] and written[index[r]].any()
            if (epochs[first] != epoch and has_writes) or raw:
                current, has_writes = current + 1, False
                written[:] = False
            epoch = epochs[first]
            stage[r] = current
            if writes[first]:
                has_writes = True
                written[index[r]] = True
    return stage


@_kept_on_the_trace
def dataflow(trace: Trace, buffer: str) -> np.recarray:
    """Which elements each write of `buffer` was computed from: one row per (write, source).

    Columns: block, stage, epoch, thread, src (element read), dst (element written), line,
    event (of the write). The trace has no register data flow, so a write's sources are the
    elements its thread read in the same stage since its previous write (or, if none, all it
    read in the stage): exact for `s[i] += s[j]`, `s[a] = s[b]; s[b] += t` and the like.
    src == dst marks an in-place update; a write with no source row is a plain store
    (e.g. the copy from global memory into shared memory).
    """
    return _dataflow(steps(trace, buffer))


_FLOW_COLUMNS = dict(
    block=np.int32,
    stage=np.int32,
    epoch=np.int32,
    thread=np.int32,
    src=np.int64,
    dst=np.int64,
    line=np.int32,
    event=np.int64,
)


def _dataflow(acc: np.recarray) -> np.recarray:
    """`dataflow` of a `steps` table, as one pass of sorts and searches (no loop over rows).

    Within a (block, stage, thread), reads are numbered by the writes before them (a segment);
    a write's sources are the reads of its segment, else all the reads before it."""
    if not np.isin(acc.op, WRITE_OPS).any():
        return _table(**{k: np.zeros(0, t) for k, t in _FLOW_COLUMNS.items()})
    order = np.lexsort((acc.thread, acc.stage, acc.block))  # stable: execution order within
    block, stage, thread = acc.block[order], acc.stage[order], acc.thread[order]
    new_group = np.r_[
        True, (block[1:] != block[:-1]) | (stage[1:] != stage[:-1]) | (thread[1:] != thread[:-1])
    ]
    group = np.cumsum(new_group) - 1
    is_r, is_w = np.isin(acc.op[order], READ_OPS), np.isin(acc.op[order], WRITE_OPS)
    earlier: np.ndarray = np.cumsum(is_w) - is_w  # writes before each row
    before = earlier - earlier[np.flatnonzero(new_group)][group]  # ... in its group
    width = int(before.max()) + 2
    key = group * width + before  # reads sorted by key: by group, then segment, in reading order
    reads, writes = np.flatnonzero(is_r), np.flatnonzero(is_w)
    rkey, wkey = key[reads], key[writes]
    lo, hi = np.searchsorted(rkey, wkey, "left"), np.searchsorted(rkey, wkey, "right")
    empty = lo == hi  # no reads since the last write: all the reads of the stage before it
    lo = np.where(empty, np.searchsorted(rkey, group[writes] * width, "left"), lo)
    counts = hi - lo  # a write with no reads before it in its stage is a plain store: no rows
    w = np.repeat(np.arange(len(writes)), counts)
    r = reads[np.repeat(lo, counts) + np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)]
    src = acc.index[order][r]
    # distinct sources per write, in reading order; rows by write in execution order
    pairs = np.lexsort((r, src, w))
    first = np.ones(len(pairs), bool)
    first[1:] = (w[pairs][1:] != w[pairs][:-1]) | (src[pairs][1:] != src[pairs][:-1])
    keep = pairs[first]
    at = order[writes[w[keep]]]  # the write's row in `acc`
    keep = keep[np.lexsort((r[keep], at))]
    row = order[writes[w[keep]]]
    return _table(
        block=acc.block[row].astype(np.int32), stage=acc.stage[row].astype(np.int32),
        epoch=acc.epoch[row].astype(np.int32), thread=acc.thread[row].astype(np.int32),
        src=src[keep].astype(np.int64), dst=acc.index[row].astype(np.int64),
        line=acc.line[row].astype(np.int32), event=acc.event[row].astype(np.int64),
    )  # fmt: skip


def _count_distinct(groups: np.ndarray, *values: np.ndarray, n: int) -> np.ndarray:
    """For each group 0..n-1, how many distinct tuples of `values` it has."""
    if not len(groups):
        return np.zeros(n, np.int64)
    cols = [np.asarray(groups, np.int64)] + [np.asarray(v, np.int64) - np.min(v) for v in values]
    dims = [int(c.max()) + 1 for c in cols]
    if math.prod(dims) < 2**62:  # one integer per tuple: sorting integers is fast
        uniq = np.unique(np.ravel_multi_index(cols, dims))
        return np.bincount(uniq // math.prod(dims[1:]), minlength=n)
    rows = np.unique(np.stack(cols, axis=1), axis=0)
    return np.bincount(rows[:, 0], minlength=n)


@_kept_on_the_trace
def step_counts(trace: Trace, buffer: str) -> np.recarray:
    """Per block and stage (a barrier step, see `steps`): how much work was done on `buffer`.

    Columns: block, stage, first_epoch, last_epoch, threads (distinct threads that wrote),
    warps (distinct warps that wrote), reads and writes (elements), ops (writes computed from
    at least one element of the buffer: the additions of a reduction or scan, excluding plain
    stores such as the initial copy), work (running total of ops in the block).
    Only stages that wrote the buffer are listed (a trailing read such as `out = s[0]` is not
    a step). The number of barrier steps of a block is its number of rows with ops > 0.
    """
    acc = steps(trace, buffer)
    flow = dataflow(trace, buffer)
    writes = np.isin(acc.op, WRITE_OPS)
    stages, group = np.unique(_stage_key(acc.block, acc.stage), return_inverse=True)
    n = len(stages)
    first = np.full(n, np.iinfo(np.int32).max, np.int64)
    last = np.full(n, -1, np.int64)
    np.minimum.at(first, group, acc.epoch)
    np.maximum.at(last, group, acc.epoch)
    ops = _count_distinct(
        np.searchsorted(stages, _stage_key(flow.block, flow.stage)), flow.event, flow.dst, flow.thread, n=n
    )
    cols: dict[str, np.ndarray] = dict(
        block=(stages >> 32).astype(np.int32),
        stage=(stages & 0xFFFFFFFF).astype(np.int32),
        first_epoch=first,
        last_epoch=last,
        threads=_count_distinct(group[writes], acc.thread[writes], n=n),
        warps=_count_distinct(group[writes], acc.warp[writes], n=n),
        reads=np.bincount(group[np.isin(acc.op, READ_OPS)], minlength=n),
        writes=np.bincount(group[writes], minlength=n),
        ops=ops,
    )
    keep = cols["writes"] > 0
    cols = {k: v[keep] for k, v in cols.items()}
    work = np.zeros(int(keep.sum()), np.int64)
    for block in np.unique(cols["block"]):
        sel = cols["block"] == block
        work[sel] = np.cumsum(cols["ops"][sel])
    return _table(**cols, work=work)


def _stage_key(block: np.ndarray, stage: np.ndarray) -> np.ndarray:
    return block.astype(np.int64) << 32 | stage.astype(np.int64)


def work_summary(trace: Trace, buffer: str, block: int = 0) -> dict[str, int]:
    """The work/span numbers of one block's algorithm on `buffer`.

    steps: stages that did ops (the barrier steps of the algorithm); work: ops in all of them;
    max_threads: the most threads busy in one step; barriers: the block's bar.sync count.
    """
    counts = step_counts(trace, buffer)
    counts = counts[(counts.block == block) & (counts.ops > 0)]
    bars = trace.where(op="bar", block=block)
    return {
        "steps": len(counts),
        "work": int(counts.ops.sum()),
        "max_threads": int(counts.threads.max()) if len(counts) else 0,
        "barriers": len(np.unique(bars.epoch)),
    }


def iterations(trace: Trace, buffer: str) -> np.recarray:
    """Which thread touched which element of `buffer` in which loop iteration.

    One row per (lane, element) as in `steps`, plus gthread (block * threads per block +
    thread) and iteration: how many earlier accesses of the same kind (load, store, atomic)
    that thread made to the buffer, so `y[i] = a * x[i] + y[i]` is iteration 0 for both
    the load and the store of y[i].
    """
    acc = steps(trace, buffer)
    gthread = acc.block.astype(np.int64) * _threads_per_block(trace, acc.event) + acc.thread
    kind = np.select([acc.op == "ld", acc.op == "st"], [0, 1], 2)  # atom and red count together
    order = np.lexsort((acc.event, kind, gthread))
    g, k, e = gthread[order], kind[order], acc.event[order]
    new_group = np.r_[True, (g[1:] != g[:-1]) | (k[1:] != k[:-1])]
    new_event = new_group | np.r_[True, e[1:] != e[:-1]]
    count = np.cumsum(new_event)
    start = np.maximum.accumulate(np.where(new_group, count, 0))
    iteration = np.empty(len(acc), np.int32)
    iteration[order] = count - start
    return _table(
        **{k: acc[k] for k in ("block", "thread", "warp", "lane", "op", "index", "line", "event")},
        gthread=gthread,
        iteration=iteration,
    )


# ---------------------------------------------------------------- shared memory banks


def _bank_counts(trace: Trace, events: np.ndarray) -> np.ndarray:
    """(events, 4, 32): distinct 32-bit words per (phase, bank) of shared-memory events.

    The model (NVIDIA's since Kepler, as Nsight Compute counts it): 32 banks of 4 bytes;
    lanes of one phase that touch the same word share it (broadcast), distinct words in
    one bank are serialised. A warp's accesses of 4 bytes or less are one phase; of 8 bytes
    two phases (half-warps, lanes 0-15 and 16-31); of 16 bytes four (quarter-warps).
    """
    out = np.zeros((len(events), 4, BANKS), np.int32)
    lane = np.arange(LANES)
    for sl in _chunks(len(events)):
        ev = events[sl]
        n = len(ev)
        size = trace.size[ev].astype(np.int64)
        words = np.maximum(1, -(-size // BANK_BYTES))  # words per lane
        phases = np.clip(size // BANK_BYTES, 1, 4)
        active = _lanes(trace.mask[ev])
        base = trace.addr[ev] // BANK_BYTES
        phase = lane[None, :] // (LANES // phases[:, None])
        e_idx, l_idx, k_idx = np.nonzero(
            active[:, :, None] & (np.arange(4)[None, None, :] < words[:, None, None])
        )
        word = base[e_idx, l_idx] + k_idx
        unit = e_idx * 4 + phase[e_idx, l_idx]
        key = np.unique(unit.astype(np.int64) << 32 | word)
        unit, word = key >> 32, key & 0xFFFFFFFF
        counts = np.bincount(unit * BANKS + word % BANKS, minlength=n * 4 * BANKS)
        out[sl] = counts.reshape(n, 4, BANKS)
    return out


def _event_ids(trace: Trace, ev: np.ndarray) -> dict[str, np.ndarray]:
    """The columns that say which warp instruction each row is, and where in the source."""
    return dict(
        event=ev.astype(np.int64),
        block=trace.columns["block"][ev],
        warp=trace.warp[ev],
        epoch=trace.epoch[ev],
        line=trace.line[ev],
    )


def _event_columns(trace: Trace, ev: np.ndarray) -> dict[str, np.ndarray]:
    return dict(
        **_event_ids(trace, ev),
        pc=trace.pc[ev],
        op=trace.op[ev],
        lane_bytes=trace.size[ev],
        lanes=_popcount(trace.mask[ev]),
    )


@_kept_on_the_trace
def bank_conflicts(trace: Trace) -> np.recarray:
    """One row per shared-memory warp instruction (ld, st, atom, red): how many wavefronts it took.

    Columns: event, block, warp, epoch, line, pc, op, lane_bytes (the trace's size), lanes (active), phases (phases
    with an active lane: the conflict-free minimum), ways, extra (ways - phases: the wavefronts
    that bank conflicts add; an 8-byte access needs two wavefronts with none).
    ways = sum over the instruction's phases of the largest number of distinct 32-bit words
    that fall in one of the 32 banks: 1 for a conflict-free 4-byte access, 32 for a warp
    reading a column of a 32x32 float tile, 2 for a conflict-free 8-byte access (two
    half-warps). Lanes reading the same word are a broadcast, not a conflict. Several lanes
    of an atomic on the same word are serialised by the hardware too; that contention is
    not counted here (see `contention`).
    """
    return _bank_table(trace, with_hits=False)


def bank_hits(trace: Trace) -> np.recarray:
    """Per shared-memory warp instruction, the distinct words hit in each bank (summed over phases).

    Columns as `bank_conflicts` plus hits, a (32,) sub-array: hits[i] for bank i (so the
    conflict degree of a one-phase access is hits.max()).
    """
    return _bank_table(trace, with_hits=True)


def _bank_table(trace: Trace, *, with_hits: bool) -> np.recarray:
    ev = _memory_events(trace, "shared")
    counts = _bank_counts(trace, ev)
    hits = {"hits": counts.sum(axis=1)} if with_hits else {}
    phases = (counts.sum(axis=2) > 0).sum(axis=1).astype(np.int32)
    ways = counts.max(axis=2).sum(axis=1).astype(np.int32)
    return _table(**_event_columns(trace, ev), phases=phases, ways=ways, extra=ways - phases, **hits)


def lane_words(trace: Trace, event: int) -> np.recarray:
    """The 32-bit words each active lane of one shared-memory warp instruction touches.

    One row per (lane, word): lane, phase (see `bank_conflicts`), word (byte offset // 4),
    bank (word % 32), conflict (True where another word of the same phase is in that bank).
    """
    size = int(trace.size[event])
    words = max(1, -(-size // BANK_BYTES))
    phases = int(np.clip(size // BANK_BYTES, 1, 4))
    active = np.flatnonzero(_lanes(trace.mask[event : event + 1])[0])
    lane = np.repeat(active, words)
    word = trace.addr[event, lane] // BANK_BYTES + np.tile(np.arange(words), len(active))
    phase = lane // (LANES // phases)
    bank = word % BANKS
    distinct = np.unique(np.stack([phase, bank, word], axis=1), axis=0)
    groups, per_group = np.unique(distinct[:, :2], axis=0, return_counts=True)
    crowded = {(int(p), int(b)) for (p, b), k in zip(groups, per_group) if k > 1}
    conflict = np.array([(int(p), int(b)) in crowded for p, b in zip(phase, bank)], bool)
    return _table(lane=lane, phase=phase, word=word, bank=bank, conflict=conflict)


def lane_sectors(trace: Trace, event: int) -> np.recarray:
    """The 32-byte sectors each active lane of one global-memory warp instruction touches.

    One row per (lane, sector): lane, sector (byte address // 32); a lane whose bytes
    straddle a sector boundary has two rows.
    """
    active = np.flatnonzero(_lanes(trace.mask[event : event + 1])[0])
    addr = trace.addr[event, active]
    first, last = addr // SECTOR_BYTES, (addr + int(trace.size[event]) - 1) // SECTOR_BYTES
    two = last != first
    lane = np.concatenate([active, active[two]])
    sector = np.concatenate([first, last[two]])
    order = np.lexsort((sector, lane))
    return _table(lane=lane[order], sector=sector[order])


def bank_conflicts_by_line(trace: Trace) -> np.recarray:
    """Bank conflicts summed per .cu line: line, requests, wavefronts (sum of ways),
    ideal (sum of phases), mean_ways, max_ways."""
    t = bank_conflicts(trace)
    lines, requests = np.unique(t.line, return_counts=True)
    _, wavefronts = _group_sum(t.line, t.ways)
    _, ideal = _group_sum(t.line, t.phases)
    max_ways = np.array([t.ways[t.line == ln].max() for ln in lines], np.int32)
    return _table(
        line=lines,
        requests=requests,
        wavefronts=wavefronts.astype(np.int64),
        ideal=ideal.astype(np.int64),
        mean_ways=wavefronts / np.maximum(requests, 1),
        max_ways=max_ways,
    )


# ---------------------------------------------------------------- global memory sectors


def _sector_counts(trace: Trace, events: np.ndarray) -> np.ndarray:
    """Distinct 32-byte sectors each event's active lanes touch (a lane may straddle two)."""
    out = np.zeros(len(events), np.int32)
    big = np.iinfo(np.int64).max
    for sl in _chunks(len(events)):
        ev = events[sl]
        active = _lanes(trace.mask[ev])
        addr = trace.addr[ev]
        last = addr + trace.size[ev].astype(np.int64)[:, None] - 1
        sec = np.concatenate([addr // SECTOR_BYTES, last // SECTOR_BYTES], axis=1)
        sec = np.sort(np.where(np.concatenate([active, active], axis=1), sec, big), axis=1)
        valid = sec != big
        out[sl] = valid[:, 0] + ((sec[:, 1:] != sec[:, :-1]) & valid[:, 1:]).sum(axis=1)
    return out


@_kept_on_the_trace
def sectors(trace: Trace) -> np.recarray:
    """One row per global-memory warp instruction (ld, st, atom, red): what it cost in sectors.

    Columns: event, block, warp, epoch, line, pc, op, lane_bytes, lanes, bytes (requested: active
    lanes x bytes per lane), sectors (distinct 32-byte sectors touched), ideal (ceil(bytes /
    32): the sectors of a perfectly coalesced access of the same bytes).
    A warp reading 32 consecutive floats touches 4 sectors; with a stride of 32 floats, 32.
    """
    ev = _memory_events(trace, "global")
    cols = _event_columns(trace, ev)
    nbytes = cols["lanes"].astype(np.int64) * cols["lane_bytes"]
    return _table(**cols, bytes=nbytes, sectors=_sector_counts(trace, ev), ideal=-(-nbytes // SECTOR_BYTES))


def summary(trace: Trace) -> str:
    """Who touched what, as a small table: one row per buffer and operation (ld, st, atom, red),
    with the .cu lines and the warp instructions (requests) that did it, the threads and the
    distinct elements they touched (in shared memory, elements of a block's window), the bytes the
    threads asked for and, in global memory, the 32-byte sectors each request fetched against the
    fewest that could hold those bytes (`sectors`). A warp reading 32 neighbouring floats fetches
    4 sectors; 32 floats a row apart, 32."""
    head = f"{trace.kernel}: grid {trace.grid} x block {trace.block_dim}"
    if trace.instructions[0]:
        head += f", {trace.instructions[0]} warp instructions issued"
    rows = [("buffer", "space", "op", "lines", "requests", "threads", "elements", "bytes", "sectors/request")]
    memory = np.flatnonzero(np.isin(trace.op, MEMORY_OPS))
    lanes = trace.lanes()[memory]
    buffer = trace.buffer[memory]
    cost = sectors(trace)
    for b, info in enumerate(trace.buffers):
        for op in MEMORY_OPS:
            hit = lanes & (buffer == b) & (trace.op[memory] == op)[:, None]
            events = np.flatnonzero(hit.any(axis=1))
            if not len(events):
                continue
            hit = hit[events]
            ev = memory[events]
            # a thread is its block and its id in the block (a joined trace's launches have their
            # own buffers, so one row never mixes launches)
            who = [trace.columns[k][ev, None] for k in ("block", "warp")]
            who = [np.broadcast_to(w, hit.shape)[hit].astype(np.int64) for w in who]
            who[-1] = who[-1] * LANES + np.nonzero(hit)[1]
            threads = len(np.unique(np.stack(who, axis=1), axis=0))
            nbytes = int((hit * trace.size[ev, None]).sum())
            fetched = "-"
            if info.space == "global":
                mine = np.isin(cost.event, ev)
                fetched = f"{cost.sectors[mine].mean():.2f} (fewest {cost.ideal[mine].mean():.2f})"
            rows.append((
                source_name(info.name), info.space, op, id_ranges(trace.line[ev]), str(len(events)),
                str(threads), str(len(np.unique(trace.index[ev][hit]))), str(nbytes), fetched,
            ))  # fmt: skip
    if len(rows) == 1:
        return head + "\nno loads, stores or atomics were recorded"
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(c.ljust(w) if i < 4 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in rows
    ]
    return "\n".join([head, *lines])


def sectors_by_line(trace: Trace) -> np.recarray:
    """Global-memory cost per .cu line: line, requests, bytes, sectors, sectors_per_request,
    ideal_per_request."""
    t = sectors(trace)
    lines, requests = np.unique(t.line, return_counts=True)
    _, nbytes = _group_sum(t.line, t.bytes)
    _, secs = _group_sum(t.line, t.sectors)
    _, ideal = _group_sum(t.line, t.ideal)
    per = np.maximum(requests, 1)
    return _table(
        line=lines,
        requests=requests,
        bytes=nbytes.astype(np.int64),
        sectors=secs.astype(np.int64),
        sectors_per_request=secs / per,
        ideal_per_request=ideal / per,
    )


# ---------------------------------------------------------------- divergence, atomics


def _threads_per_block(trace: Trace, events: np.ndarray) -> np.ndarray:
    """Threads per block of each event's own launch (a joined trace's geometry is its first launch's)."""
    per_launch = np.array([t.threads_per_block for t in trace.launches()], np.int64)
    if "launch" not in trace.columns:
        return np.full(len(events), per_launch[0], np.int64)
    return per_launch[trace.launch[events]]


@_kept_on_the_trace
def divergence(trace: Trace) -> np.recarray:
    """Active lanes of every recorded warp instruction except barriers.

    Columns: event, block, warp, epoch, line, space, op, active, possible (threads the warp
    has: 32 except in a block's last, partial warp). The trace records memory accesses,
    atomics and shuffles only, so divergence is seen at those instructions.
    """
    ev = np.flatnonzero(trace.space != "sync")
    possible = np.clip(_threads_per_block(trace, ev) - trace.warp[ev].astype(np.int64) * LANES, 0, LANES)
    return _table(
        **_event_ids(trace, ev),
        space=trace.space[ev],
        op=trace.op[ev],
        active=_popcount(trace.mask[ev]),
        possible=possible.astype(np.int32),
    )


def divergence_by_line(trace: Trace) -> np.recarray:
    """Divergence per .cu line: line, instructions, divergent (instructions with idle lanes),
    mean_active, min_active, efficiency (active / possible lanes)."""
    t = divergence(trace)
    lines, count = np.unique(t.line, return_counts=True)
    _, active = _group_sum(t.line, t.active)
    _, possible = _group_sum(t.line, t.possible)
    _, divergent = _group_sum(t.line, (t.active < t.possible).astype(np.int64))
    min_active = np.array([t.active[t.line == ln].min() for ln in lines], np.int32)
    return _table(
        line=lines,
        instructions=count,
        divergent=divergent.astype(np.int64),
        mean_active=active / np.maximum(count, 1),
        min_active=min_active,
        efficiency=active / np.maximum(possible, 1),
    )


@_kept_on_the_trace
def atomics(trace: Trace, buffer: str) -> np.recarray:
    """Lanes per element of every atomic warp instruction on `buffer`.

    One row per (event, element): event, block, warp, line, index (the bin), lanes (how
    many lanes of that warp instruction updated it: they are serialised).
    """
    acc = _accesses(trace, buffer)
    acc = subset(acc, np.isin(acc.op, ("atom", "red")))
    if not len(acc):
        keys = np.empty((0, 2), np.int64)
        lanes = np.empty(0, np.int64)
    else:
        keys, lanes = np.unique(np.stack([acc.event, acc.index], axis=1), axis=0, return_counts=True)
    ev = keys[:, 0]
    return _table(
        event=ev,
        block=trace.columns["block"][ev],
        warp=trace.warp[ev],
        line=trace.line[ev],
        index=keys[:, 1],
        lanes=lanes.astype(np.int32),
    )


@_kept_on_the_trace
def contention(trace: Trace, buffer: str) -> np.recarray:
    """Per atomic warp instruction on `buffer`: event, block, warp, line, lanes, bins (distinct
    elements), max_lanes (the most lanes on one element: the serialisation depth)."""
    t = atomics(trace, buffer)
    ev, first, bins = np.unique(t.event, return_index=True, return_counts=True)
    _, lanes = _group_sum(t.event, t.lanes)
    # rows come sorted by event (atomics groups them with np.unique): one maximum per run
    max_lanes = np.maximum.reduceat(t.lanes, first).astype(np.int32) if len(t) else np.empty(0, np.int32)
    return _table(
        event=ev,
        block=t.block[first],
        warp=t.warp[first],
        line=t.line[first],
        lanes=lanes.astype(np.int32),
        bins=bins.astype(np.int32),
        max_lanes=max_lanes,
    )


def totals(trace: Trace) -> dict[str, int]:
    """Whole-launch counters for benchmarks.

    global_bytes: bytes requested by global loads, stores and atomics; global_requests: their
    warp instructions; global_sectors: 32-byte sectors those touched; shared_requests and
    shared_wavefronts: shared-memory warp instructions and the sum of their ways;
    barrier_steps: the most barriers any one block passed (the depth of its step sequence);
    atomics: atomic operations performed (active lanes of atom/red instructions, any space).
    """
    glob = sectors(trace)
    shared = bank_conflicts(trace)
    bars = trace.where(op="bar")
    per_block = (
        np.unique(np.stack([bars.columns["block"], bars.epoch], axis=1), axis=0)
        if len(bars)
        else np.empty((0, 2))
    )
    is_atomic = np.isin(trace.op, ("atom", "red"))
    return {
        "global_bytes": int(glob.bytes.sum()),
        "global_requests": len(glob),
        "global_sectors": int(glob.sectors.sum()),
        "shared_requests": len(shared),
        "shared_wavefronts": int(shared.ways.sum()),
        "barrier_steps": int(np.bincount(per_block[:, 0].astype(np.int64)).max()) if len(per_block) else 0,
        "atomics": int(_popcount(trace.mask[is_atomic]).sum()),
    }
