"""The functions notebook 04 calls (`STORY` in topic.py names the versions it follows, in order).

Numbers and pictures notebook 04 tells the scan story with, read from traces of the kernels.

Inclusive and exclusive scans and the conversions between them; the steps of Kogge-Stone and
the up- and down-sweep trees of Brent-Kung and Blelloch (threads and adds per step); steps
against work for each algorithm and N; the tree's bank conflicts and GPU Gems 3's padding (its
16-bank offset and the precedence bug of its "zero conflicts" macro); the article's errors as the
checker and the compiler name them; why a single pass moves 2N elements and scan-then-propagate
4N; how far the look-back looks. Everything here runs on the emulator (traces always do).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, bench, compiler, draw
from ..checks import Findings
from ..emulator import Trace
from ..errors import CompileError
from ..gpu import Module
from ..source import Table
from .topic import ENGINE, ITEMS, TILE_BLOCKS, ScanVersion, options

EXAMPLE_BLOCK = 64  # two warps: enough to show what happens at a warp boundary
STEP_VERSIONS = ("kogge_stone", "kogge_stone_double_buffer", "brent_kung", "blelloch")


def example(n: int, dtype: Any = np.float32) -> np.ndarray:
    """1, 2, ..., n (mod 8, shifted to -3..4): small values whose partial sums a reader can check."""
    return (np.arange(n) % 8 - 3).astype(dtype)


def _version(name: str) -> ScanVersion:
    v = ENGINE.version(name)
    assert isinstance(v, ScanVersion)
    return v


def _block_for(name: str, n: int) -> int:
    """The block that covers n elements of a one-block version (at least two warps)."""
    v = _version(name)
    return max(EXAMPLE_BLOCK, -(-n // max(v.covers, 1)))


def first_trace(name: str, x: Any, *, block: int | None = None, **kw: Any) -> Trace:
    """The trace of version `name`'s own launch on x (not a conversion after it), on the emulator."""
    block = block or _block_for(name, len(x))
    return ENGINE.first_trace(name, x, block=block, **kw)


def _buffer(t: Trace) -> str:
    return "temp" if "temp" in {b.name for b in t.buffers} else "XY"


class Launches(list):  # type: ignore[type-arg]
    """The launches of one run, shown one per line as a learner would write each call."""

    def __repr__(self) -> str:
        return "\n".join(map(repr, self))


def launches(version: str, x: Any, *, block: int | None = None) -> Launches:
    """The launches one run of `version` on x makes (grid, block, arguments, dynamic shared
    memory), not run: a version past one block changes the grid from launch to launch."""
    return Launches(ENGINE.plan(version, arrays.asarray(x), block=block).launches)


# ---------------------------------------------------------------- inclusive and exclusive


def conversions(x: Any, block: int = 256) -> dict[str, np.ndarray]:
    """The exclusive scan as blelloch leaves it, the inclusive one after its conversion
    (y[i] += x[i]), and the exclusive one again from it (shift right, the identity in front):
    each computed by the kernels on the active backend. N ≤ 2 x block."""
    x = np.asarray(x)
    dx = arrays.asarray(x)
    plan = ENGINE.plan("blelloch", dx, block=block)
    blelloch, convert = plan.launches
    blelloch()
    exclusive = plan.answer()
    convert()
    inclusive = plan.answer()
    module = blelloch.kernel.module
    back = arrays.zeros(len(x), x.dtype)
    n = np.int32(len(x))
    module.get_function("exclusive_from_inclusive")(
        (-(-len(x) // 256),), (256,), (arrays.asarray(inclusive), back, n)
    )
    return {
        "x": x,
        "exclusive": exclusive,
        "inclusive": inclusive,
        "exclusive from inclusive": arrays.asnumpy(back),
    }


def exclusive(x: Any) -> np.ndarray:
    """NumPy's exclusive scan: the identity (0) in front, the inclusive scan without its last element."""
    x = np.asarray(x)
    return np.concatenate([np.zeros(1, x.dtype), np.cumsum(x, dtype=x.dtype)[:-1]])[: len(x)]


def conversion_table(x: Any, block: int = 32) -> Table:
    """`conversions` as a table: a row per array, a column per element."""
    x = np.asarray(x)
    rows = Table(columns=["", *map(str, range(len(x)))])
    for name, values in conversions(x, block=block).items():
        rows.append({"": name, **{str(i): _number(v) for i, v in enumerate(values)}})
    return rows


def _number(v: Any) -> str:
    return f"{v:g}" if isinstance(v, (float, np.floating)) else str(v)


# ---------------------------------------------------------------- steps, trees and work


def held_after_steps(name: str = "kogge_stone", n: int = 16, block: int = 32) -> Table:
    """What the first n elements of the shared array hold after each step of a one-block version
    run on ones: how many inputs each partial sum covers. Replayed from the trace's dataflow (each
    write adds the elements its thread read), so it shows what the threads did, step by step."""
    ones = np.ones(n, np.float32)
    t = first_trace(name, ones, block=block, blocks=[0])
    buffer = _buffer(t)
    flow = analysis.dataflow(t, buffer)
    counts = analysis.step_counts(t, buffer)
    size = int(analysis.steps(t, buffer).index.max()) + 1
    held = np.zeros(size)
    held[:n] = 1  # past N, the kernels load the identity
    rows = Table(columns=["after", *map(str, range(n))])
    rows.append({"after": "load", **{str(i): int(held[i]) for i in range(n)}})
    for k, stage in enumerate(counts.stage[counts.ops > 0].tolist()):
        moves = flow[(flow.stage == stage) & (flow.src != flow.dst)]
        after = held.copy()
        np.add.at(after, moves.dst, held[moves.src])
        held = after
        offset = int(np.median(moves.dst - moves.src)) if len(moves) else 0
        rows.append(
            {
                "after": f"step {k + 1} ({_loop_variable(name)} = {offset})",
                **{str(i): int(held[i]) for i in range(n)},
            }
        )
    return rows


def _loop_variable(name: str) -> str:
    """The kernel's own name for the distance a step reads back: `offset` in Blelloch's, `stride`
    in Kogge-Stone's and Brent-Kung's."""
    return "offset" if name.startswith("blelloch") else "stride"


def draw_steps(ax: Any, name: str, n: int = 64, *, block: int | None = None) -> None:
    """The steps of a one-block version, read from its trace: Kogge-Stone's rows with offsets
    1, 2, 4, ...; Brent-Kung's and Blelloch's up-sweep and down-sweep trees, every element drawn
    (the root at the right end). By default with two warps of threads (block 64), so that warp
    boundaries show. Each row is labelled with the kernel's own loop variable: `stride` for
    Kogge-Stone and Brent-Kung; for Blelloch `d` (the threads that work) and `offset`; Blelloch's
    root, cleared between the sweeps, is marked."""
    t = first_trace(name, example(n), block=block, blocks=[0])
    elements = int(analysis.steps(t, _buffer(t)).index.max()) + 1
    draw.scan_steps(ax, t, _buffer(t), max_elements=max(elements, 64))
    code_labels(ax, name, elements)


def code_labels(ax: Any, name: str, elements: int) -> None:
    """Row labels in the kernel's own words: the drawing's offset `d = k` becomes `stride = k`
    (Kogge-Stone, Brent-Kung) or `d = N / 2k, offset k` (Blelloch, whose `d` counts the threads
    that work); Blelloch's root-clear, which shares the last up-sweep step's barrier interval,
    gets a mark at the root. The first row, the threads' load of x into the shared array (a plain
    store to it), is named for what it is."""
    last_up = None
    stores = [t for t in ax.texts if t.get_text() == "store"]
    if stores:
        max(stores, key=lambda t: t.get_position()[1]).set_text("load x")
    for text in ax.texts:
        s = text.get_text()
        sep = next((p for p in ("\nd = ", "\ns = ") if p in s), None)
        if not s.startswith("step ") or sep is None:
            continue
        head, offset = s.split(sep)
        k = int(offset)
        if name.startswith("blelloch"):
            text.set_text(f"{head}\nd = {elements // (2 * k)}, offset {k}")
            if k == elements // 2 and last_up is None:
                last_up = text
        else:
            text.set_text(f"{head}\nstride = {k}")
    if last_up is not None:  # the note sits left, clear of the arrows of the root's children
        _, y = last_up.get_position()
        ax.annotate(
            f"then, before the next barrier,\nthread 0 clears the root: temp[{elements - 1}] = identity()",
            xy=(elements - 0.55, y - 0.1), xytext=(0.02 * elements, y - 0.62), fontsize=8, color="#d62728",
            ha="left", va="center", bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none"),
            arrowprops=dict(arrowstyle="->", color="#d62728", lw=0.8),
        )  # fmt: skip


def step_table(name: str, n: int = 64, *, block: int | None = None) -> Table:
    """Block 0's steps: threads and warps that add, warps with idle lanes, adds, worst bank
    conflict. Read from the trace of version `name` (a step is a barrier interval that wrote)."""
    t = first_trace(name, example(n), block=block, blocks=[0])
    buffer = _buffer(t)
    counts = analysis.step_counts(t, buffer)
    shared = analysis.bank_conflicts(t)
    div = analysis.divergence(t.where(space="shared", op="st"))
    rows = Table()
    for k, c in enumerate(counts[counts.ops > 0]):
        inside = (shared.epoch >= c.first_epoch) & (shared.epoch <= c.last_epoch)
        writers = div[(div.epoch >= c.first_epoch) & (div.epoch <= c.last_epoch)]
        rows.append({
            "step": k + 1, "threads adding": int(c.threads), "warps busy": int(c.warps),
            "of them with idle lanes": int((writers.active < writers.possible).sum()), "adds": int(c.ops),
            "worst bank conflict": f"{int(shared.ways[inside].max()) if inside.any() else 0}-way",
        })  # fmt: skip
    return rows


def steps_vs_work(
    sizes: Sequence[int] = (64, 256, 1024), names: Sequence[str] = ("naive", *STEP_VERSIONS)
) -> Table:
    """For each algorithm and N (one block covering it): the steps of the longest chain, the
    adds in all, and the barriers, counted from traces. An add is a thread's write in a step
    computed from two elements or more (each thread of these kernels adds at most once a step;
    the double buffer's copies of unchanged elements and Blelloch's copy to the left child are
    writes, not adds). The naive scan has no steps in shared memory: its thread i adds i
    elements of x one after another (the last thread: N - 1 in a row), and its adds are all the
    threads' together."""
    rows = Table()
    for name in names:
        for n in sizes:
            if name == "naive":
                t = ENGINE.trace(name, example(n), block=min(n, 1024), spaces={"global", "sync"})
                loads = t.where(op="ld")
                per_thread = np.bincount(
                    (loads.thread_ids() + loads.block[:, None] * t.threads_per_block)[loads.lanes()],
                    minlength=n,
                )
                steps, adds, barriers = int(per_thread.max()) - 1, int(per_thread.sum()) - n, 0
            else:
                t = first_trace(name, example(n), block=-(-n // _version(name).covers))
                work = analysis.work_summary(t, _buffer(t))
                steps, adds, barriers = work["steps"], adds_in(t), work["barriers"]
            rows.append({"algorithm": name, "N": n, "steps": steps, "adds": adds, "barriers": barriers})
    return rows


def adds_in(t: Trace) -> int:
    """The adds of a one-block scan's trace: per step, the threads that wrote an element computed
    from two elements or more of the shared array (read in that step)."""
    flow = analysis.dataflow(t, _buffer(t))
    if not len(flow):
        return 0
    writes = np.unique(np.stack([flow.stage, flow.thread, flow.event, flow.src], axis=1), axis=0)
    keys, sources = np.unique(writes[:, :3], axis=0, return_counts=True)
    return len(np.unique(keys[sources >= 2][:, :2], axis=0))


# ---------------------------------------------------------------- bank conflicts and padding


BANK_VARIANTS = {  # what the table compares: (kernel, extra -D options)
    "blelloch (no padding)": ("blelloch_scan", ()),
    "blelloch_padded (a word after every 32)": ("blelloch_scan_padded", ()),
    "GPU Gems 3's offset, for 16 banks": ("blelloch_scan_padded", ("-DLOG_NUM_BANKS=4",)),
    "GPU Gems 3's zero-conflict macro, as printed": (
        "blelloch_scan_padded", ("-DLOG_NUM_BANKS=4", "-DGEMS_ZERO_BANK_CONFLICTS"),
    ),
}  # fmt: skip


def bank_trace(variant: str, block: int = 1024) -> Trace:
    """The trace of one BANK_VARIANTS kernel on 2 x block float32 elements (one block)."""
    kernel, extra = BANK_VARIANTS[variant]
    name = f"{kernel}<{block}>"
    module = Module.from_file(
        "scan.cu", options=(*options(np.dtype(np.float32)), *extra), name_expressions=(name,)
    )
    n = 2 * block
    x = arrays.asarray(example(n))
    return module.get_function(name).trace((1,), (block,), (x, arrays.zeros(n, np.float32), np.int32(n)))


def bank_table(block: int = 1024) -> Table:
    """Shared-memory requests, extra wavefronts (ways - 1 per request, summed) and the worst
    conflict of each padding, from traces. With 32 banks a word every 32 removes nearly all of
    them; GPU Gems 3's offset pads every 16 (it was written for 16 banks) and leaves some; its
    "zero bank conflicts" macro `n >> NUM_BANKS + n >> (2 * LOG_NUM_BANKS)` parses as
    `n >> (NUM_BANKS + n) >> ...`: always 0, so no padding at all."""
    rows = Table()
    for variant in BANK_VARIANTS:
        bc = analysis.bank_conflicts(bank_trace(variant, block))
        rows.append({
            "padding": variant, "shared requests": len(bc), "extra wavefronts": int((bc.ways - bc.phases).sum()),
            "worst conflict": f"{int(bc.ways.max())}-way",
        })  # fmt: skip
    return rows


def draw_banks(ax: Any, variant: str = "blelloch (no padding)", block: int = 256) -> None:
    """The bank heat map of the tree's busiest line: a 16 in one bank without padding, a row of
    ones with it."""
    draw.bank_heatmap(ax, bank_trace(variant, block))


# ---------------------------------------------------------------- the article's errors


def article_findings(name: str, n: int | None = None, block: int = EXAMPLE_BLOCK) -> Findings:
    """What the checker finds in one of the article's kernels (on the emulator): Kogge-Stone's
    barrier divergence (and with n < block its reads of unloaded elements), the merged
    Brent-Kung's unloaded upper half and its write past the end of XY."""
    return ENGINE.check(name, example(n or block, np.int32), block=block)


def never_writes_y(block: int = EXAMPLE_BLOCK) -> np.ndarray:
    """The article's Kogge-Stone on x = 1, 2, ...: what it leaves in y (zeroed before): nothing."""
    with backend.using("emulator"):
        return ENGINE.run("kogge_stone_article", np.arange(1, block + 1, dtype=np.int32), block=block)


def wrong_last_element(block: int = EXAMPLE_BLOCK) -> Table:
    """The article's two Brent-Kung listings on 2 x block ones: a row per wrong element, what it
    holds (the upper half's sum only: the root never got the lower half's) and the truth."""
    x = np.ones(2 * block, np.int32)
    got = ENGINE.run("brent_kung_phases_article", x, block=block)
    want = ENGINE.reference(x)
    rows = Table(note="every element right")
    for i in np.flatnonzero(got != want).tolist():
        rows.append({"element": i, "the kernel's y": int(got[i]), "NumPy's": int(want[i])})
    return rows


def typo_error() -> str:
    """NVRTC's first error when the article's `_shared__` is put back into its Kogge-Stone: the
    message and the line it points at (the errors after it follow from the first)."""
    src = compiler.read_kernel("scan.cu")
    line = "\n  __shared__ elem_t XY[BLOCK_SIZE];\n"  # the article's kernel, as printed
    if src.count(line) != 1:
        raise RuntimeError("scan.cu no longer holds the article's Kogge-Stone line as printed")
    try:
        Module(code=src.replace(line, "\n  _shared__ elem_t XY[BLOCK_SIZE];\n"),
               name_expressions=("kogge_stone_scan_article<64>",))  # fmt: skip
    except CompileError as exc:
        lines = str(exc).splitlines()
        first = next(i for i, ln in enumerate(lines) if "error:" in ln)
        return "\n".join([*lines[first : first + 3], "(and more errors that follow from it)"])
    raise RuntimeError("the typo compiled: NVRTC accepted `_shared__`")


# ---------------------------------------------------------------- past one block


def bytes_moved(n: int = 1 << 14, block: int = 128) -> Table:
    """Global-memory elements each version reads and writes per element of x, from the trace of
    every launch: the single pass reads x and writes y (2N, as a copy); scan-then-propagate
    writes y, then reads and writes it again to add the tiles' prefixes (4N)."""
    x = example(n)
    rows = Table()
    for name in ("scan_then_propagate", "lookback"):
        t = ENGINE.trace(name, x, block=block, spaces={"global"})
        ld, st = t.where(op="ld"), t.where(op=["st", "atom"])
        read = float((ld.lanes().sum(axis=1) * ld.size).sum()) / (4 * n)
        written = float((st.lanes().sum(axis=1) * st.size).sum()) / (4 * n)
        rows.append({
            "version": name, "launches": len(t.launches()), "elements read per element": round(read, 3),
            "elements written per element": round(written, 3), "in all": round(read + written, 3),
        })  # fmt: skip
    return rows


def lookback_table(tiles: Sequence[int] = (1, 2, 3, 8, 16, 31, 32, 33, 39)) -> Table:
    """`lookback_reads` for a few tiles: the status loads each look-back made and the status words
    they read, with the warp-wide window of 32 and with one thread reading one word at a time."""
    rows = lookback_reads()
    return Table([rows[t] for t in tiles if t < len(rows)])


def lookback_reads(n: int = 40 * ITEMS * EXAMPLE_BLOCK, block: int = EXAMPLE_BLOCK) -> list[dict[str, Any]]:
    """How each tile's look-back went, with the warp-wide window of 32 and with one thread reading
    one predecessor at a time: its loads of status words (each one an L2 round trip on a GPU,
    polls included) and the words they read. From traces of every block on the emulator, whose
    scheduler runs the tiles' blocks side by side (and never pauses: -DLOOKBACK_SLEEP_NS is a GPU's)."""
    x = example(n)
    name = f"lookback_scan<{block}>"
    tiles = -(-n // (ITEMS * block))
    loads, words = {}, {}
    for window in (32, 1):
        module = Module.from_file(
            "scan.cu", options=(*options(np.dtype(np.float32)), f"-DLOOKBACK_WINDOW={window}"),
            name_expressions=(name,),
        )  # fmt: skip
        status = arrays.zeros(tiles + 1, np.uint64)
        t = module.get_function(name).trace(
            (tiles,), (block,), (arrays.asarray(x), arrays.zeros(n, np.float32), status, np.int32(n)),
            spaces={"global"},
        )  # fmt: skip
        ld = t.where(op="ld")
        on_status = (ld.lanes() & (ld.buffer == t.buffer_id("status"))).sum(axis=1)
        loads[window] = np.bincount(ld.block, weights=on_status > 0, minlength=tiles).astype(int)
        words[window] = np.bincount(ld.block, weights=on_status, minlength=tiles).astype(int)
    return [
        {"tile": b, "status loads (window 32)": int(loads[32][b]), "status loads (window 1)": int(loads[1][b]),
         "words read (window 32)": int(words[32][b]), "words read (window 1)": int(words[1][b])}
        for b in range(tiles)
    ]  # fmt: skip


# ---------------------------------------------------------------- what tuning did on an H200

# recorded.json: numbers measured on GPUs and recorded (docs/tuning/scan.md, docs/scan-h200.md),
# quoted here, not timed: lookback's tuning steps at N = 2^28 float32 on one H200 (% of a device
# copy of the same bytes, × cupy.cumsum), and that H200's read stream and DRAM latency
RECORDED = json.loads((Path(__file__).parent / "recorded.json").read_text())
TUNING_STEPS = tuple((c, float(p), float(x)) for c, p, x in RECORDED["tuning_steps"]["steps"])
TUNING_OTHERS = tuple((c, float(p), float(x)) for c, p, x in RECORDED["tuning_steps"]["others"])


def tuning_steps() -> Table:
    """The steps that took lookback from 57.6 % to 88.2 % of a copy on an H200 (2^28 float32), as
    measured and recorded in docs/tuning/scan.md, and two runs beside them that say where the time
    goes. The same text on every machine: these are recorded numbers, not timed here."""
    width = max(len(c) for c, _, _ in TUNING_STEPS + TUNING_OTHERS)
    what = "change".ljust(width)  # text columns read left-aligned: pad them to the widest
    rows = Table(columns=["% of copy", "× cupy.cumsum", what])
    for change, pct, x in TUNING_STEPS + TUNING_OTHERS:
        rows.append({"% of copy": f"{pct:.1f}", "× cupy.cumsum": f"{x:.2f}", what: change.ljust(width)})
    return rows


# an H200 like the tuning run's, for Little's law beside this device (recorded.json)
TUNING_GPU = tuple(
    RECORDED["tuning_gpu"][k] for k in ("name", "read_stream_gbps", "dram_latency_ns", "sm_count", "from")
)


def little_table() -> Table:
    """Little's law, bytes in flight = bandwidth × latency, for this device (on a GPU the read
    stream and the idle DRAM latency course.probe measured; on the emulator the device model's
    peak and latency) beside the tuning run's H200 (recorded): in flight on the whole GPU and per
    SM (`course.occupancy.bytes_needed_per_sm`)."""
    from .. import occupancy

    dev = backend.device()
    measured = dev.read_stream_gbps is not None
    mine = (
        f"this device: {dev.name}", dev.read_stream_gbps or dev.memory_peak_gbps, dev.dram_latency_ns,
        dev.sm_count, "measured by course.probe" if measured else "the device model (no GPU: not measured)",
    )  # fmt: skip
    rows = Table()
    for name, gbps, ns, sms, where in (mine, TUNING_GPU):
        total = gbps * ns  # GB/s × ns = bytes
        per_sm = occupancy.bytes_needed_per_sm(dev) if name == mine[0] else total / sms
        rows.append({
            "GPU": name, "GB/s": round(gbps), "latency ns": round(ns), "SMs": sms,
            "in flight MB": round(total / 1e6, 2), "per SM KB": round(per_sm / 1e3, 1), "from": where,
        })  # fmt: skip
    return rows


def residency_table(blocks: Sequence[int] = TILE_BLOCKS) -> Table:
    """lookback_scan as compiled here, for each tile block: registers a thread and shared bytes a
    block (the loaded function's on a GPU, NVRTC's cubin on the emulator) and the blocks an SM
    holds at once, with what limits them (the occupancy API on a GPU, the course's calculation on
    the emulator)."""
    from .. import occupancy

    rows = Table()
    for b in blocks:
        occ = occupancy.occupancy(ENGINE.kernel("lookback", np.float32, b), b)
        rows.append({
            "block": b, "registers a thread": occ.registers, "shared bytes a block": occ.shared,
            "blocks per SM": occ.blocks, "threads per SM": occ.blocks * b, "limited by": ", ".join(occ.limits),
        })  # fmt: skip
    return rows


# ---------------------------------------------------------------- timings on a GPU

TABLE_SIZES = (2**20, 2**24, 2**28)
TILED = ("scan_then_propagate", "lookback")
ONE_BLOCK = ("naive", "kogge_stone", "kogge_stone_double_buffer", "brent_kung", "blelloch", "blelloch_padded")


def _us(step: Any, runs: int) -> float:
    return 1e3 * float(np.median(bench.time_runs([step], runs=runs)))


def _whole(plan: Any) -> Any:
    """One run of a plan (every launch, and conversions on the device), as one timed step."""
    return lambda: [step() for step in plan.steps]


def one_block_table(n: int = 1024, runs: int = 50) -> Table:
    """The article's kind of kernel on its own scale: each one-block version scanning N = 1024
    float32 in one launch (block 1024 for Kogge-Stone and the naive scan, 512 for the trees),
    beside a device copy of the same bytes and cupy.cumsum. Median of `runs` CUDA-event timings.
    On the emulator: an empty table that says why."""
    if not backend.on_gpu():
        return Table(note=bench.NEEDS_A_GPU)
    x = arrays.asarray(example(n))
    rows = Table()
    copy = 1e3 * float(np.median(bench.time_copy(2 * 4 * n, runs=runs)))
    rows.append({"version": "device copy", "launches": 1, "block": "", "µs": copy})
    import cupy

    y = cupy.empty_like(x)
    rows.append(
        {
            "version": "cupy.cumsum",
            "launches": "",
            "block": "",
            "µs": _us(lambda: cupy.cumsum(x, out=y), runs),
        }
    )
    for name in ONE_BLOCK:
        block = n // max(_version(name).covers, 1)
        plan = ENGINE.plan(name, x, block=block)
        rows.append(
            {"version": name, "launches": len(plan.launches), "block": block, "µs": _us(_whole(plan), runs)}
        )
    return rows


def speed_against_n(
    versions: Sequence[str] = TILED, sizes: Sequence[int] = bench.SPEED_SIZES
) -> list[dict[str, Any]]:
    """The two versions that scan any N (the whole scan on the GPU), float32, beside cupy.cumsum
    and a device copy of the same 2N elements, from 2^16 to 2^28: course.bench records (none on
    the emulator)."""
    return bench.speed_against_n(ENGINE, sizes, dtypes=["float32"], kernels=list(versions))


PASS_N = 2**28  # the size where the text compares lookback with the tile pass alone


def pass_rows(
    n: int, time_us: Callable[[Any], float], copy_us: Callable[[int], float], block: int = 128
) -> Table:
    """The passes of scan-then-propagate at N timed one launch at a time, beside the whole of it
    and lookback: `time_us(step)` times one step, `copy_us(nbytes)` a read + write copy moving
    nbytes. scan_tiles alone is the tile pipeline without a look-back (lookback's 2N bytes and
    tile work); add_tile_prefix alone is the propagate pass (N − tile elements read and written)."""
    if n <= block * ITEMS:
        raise ValueError(f"pass_rows needs more than one tile of {block * ITEMS} elements; got N = {n}")
    x = arrays.asarray(example(n))
    plan = ENGINE.plan("scan_then_propagate", x, block=block)
    first, *middle, last = plan.launches
    tile = block * ITEMS
    bytes_of = {"scan_tiles": 2 * 4 * n, "add_tile_prefix": 2 * 4 * (n - tile)}
    copy = {k: copy_us(v) for k, v in bytes_of.items()}
    rows = Table()

    def row(what: str, us: float, nbytes: int | None, copy_same: float | None) -> None:
        rows.append({
            "pass": what, "µs": us, "MB moved": "" if nbytes is None else nbytes / 1e6,
            "% of copy": "" if copy_same is None else 100 * copy_same / us,
        })  # fmt: skip

    row("read + write copy of 2N elements", copy["scan_tiles"], bytes_of["scan_tiles"], copy["scan_tiles"])
    row(f"scan_tiles alone: {first.grid[0]} tiles, no look-back", time_us(first), bytes_of["scan_tiles"],
        copy["scan_tiles"])  # fmt: skip
    row(
        f"the tile totals scanned: {len(middle)} small launch{'es' * (len(middle) != 1)}",
        time_us(_whole_steps(middle)),
        None,
        None,
    )
    row(f"add_tile_prefix alone: {last.grid[0]} tiles", time_us(last), bytes_of["add_tile_prefix"],
        copy["add_tile_prefix"])  # fmt: skip
    row("scan_then_propagate, every launch", time_us(_whole(plan)), None, None)
    lookback = ENGINE.plan("lookback", x, block=block)
    row("lookback, one launch", time_us(_whole(lookback)), bytes_of["scan_tiles"], copy["scan_tiles"])
    return rows


def _whole_steps(steps: Sequence[Any]) -> Any:
    return lambda: [step() for step in steps]


def pass_table(n: int = PASS_N, runs: int = 20) -> Table:
    """`pass_rows` timed on a GPU (median of `runs` CUDA-event timings each; at 2^28 the arrays are
    far past the L2); on the emulator an empty table that says why."""
    if not backend.on_gpu():
        return Table(note=bench.NEEDS_A_GPU)
    rows = pass_rows(
        n,
        lambda step: _us(step, runs),
        lambda nbytes: 1e3 * float(np.median(bench.time_copy(nbytes, runs=runs))),
    )
    bench.free_gpu_memory()
    return rows


CUB = "cub::DeviceScan::InclusiveSum"  # course.bench times it beside the kernels (BenchSpec.cub)


def speed_table(records: Sequence[dict[str, Any]], sizes: Sequence[int] = TABLE_SIZES) -> Table:
    """`speed_against_n`'s records at a few sizes: µs, GB/s (2N elements moved), % of the copy,
    × cupy.cumsum and × CUB (CUB's DeviceScan, timed by the benchmark in the same run, is a row
    too); an empty table that says why without GPU timings."""
    rows = Table(note=bench.NEEDS_A_GPU)
    for r in records:
        if r["n"] in sizes:
            rows.append({
                "N": f"2^{int(np.log2(r['n']))}", "kernel": r["kernel"], "µs": 1e3 * r["ms"], "GB/s": r["gbps"],
                "% of copy": r["pct_of_copy"], "× cupy.cumsum": r["x_cupy"], "× CUB": r.get("x_cub"),
            })  # fmt: skip
    return rows


def plot_speed(ax: Any, records: Sequence[dict[str, Any]]) -> None:
    """GB/s against N, beside the device copy and the ceiling (the datasheet peak; on the emulator: says
    there is nothing to time)."""
    bench.plot(list(records), ax, title="scan, float32: the whole scan on the GPU (2N elements moved)")


def block_speeds(n: int = 2**26, runs: int = 20) -> dict[int, float]:
    """GB/s of lookback at N for every tile block size (GPU only): the whole scan, 2N elements moved."""
    if not backend.on_gpu():
        raise RuntimeError(bench.NEEDS_A_GPU)
    x = arrays.asarray(example(n))  # 256 MiB at 2^26: past the L2, no rotation needed
    out = {b: 2 * 4 * n / _us(_whole(ENGINE.plan("lookback", x, block=b)), runs) / 1e3 for b in TILE_BLOCKS}
    bench.free_gpu_memory()
    return out
