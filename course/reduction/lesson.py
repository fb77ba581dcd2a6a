"""The functions notebook 05 calls (`STORY` in topic.py names the versions it follows, in order).

Numbers and pictures notebook 05 tells the reduction story with, read from traces and timings.

Each helper traces the version's first launch (the kernel the story is about, not the pass
that adds its block sums) on the emulator, or times it on a GPU.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib as mpl
import numpy as np

from .. import analysis, arrays, backend, bench, draw, occupancy
from ..emulator import Trace
from ..source import Table
from .topic import BEYOND, ENGINE, STORY


def first_trace(name: str, x: Any, *, block: int = 128, grid: int | None = None, **kw: Any) -> Trace:
    """The trace of version `name`'s own launch on x (kw: `blocks`, `spaces`)."""
    return ENGINE.first_trace(name, x, block=block, grid=grid, **kw)


def step_table(name: str, n: int = 256, block: int = 256, dtype: Any = np.float32) -> Table:
    """Block 0's tree step by step: threads and warps that add, warps with idle lanes, worst
    bank conflict of the step's shared accesses. Read from the trace of version `name`.

    float32 by default: 4-byte shared words, one per bank, as in Harris's slides (the
    article's long long words take two banks, so every access counts at least 2 ways)."""
    t = first_trace(name, np.arange(1, n + 1).astype(dtype), block=block, blocks=[0])
    counts = analysis.step_counts(t, "sdata")
    shared = analysis.bank_conflicts(t)
    div = analysis.divergence(t.where(space="shared"))
    rows = Table()
    for c in counts[counts.ops > 0]:
        epochs = (shared.epoch >= c.first_epoch) & (shared.epoch <= c.last_epoch) & (shared.op == "st")
        writers = div[(div.epoch >= c.first_epoch) & (div.epoch <= c.last_epoch) & (div.op == "st")]
        rows.append({
            "step": int(c.stage), "threads adding": int(c.threads), "warps busy": int(c.warps),
            "of them divergent": int((writers.active < writers.possible).sum()),
            "worst bank conflict": f"{int(shared.ways[epochs].max()) if epochs.any() else 0}-way",
        })  # fmt: skip
    return rows


def loads_per_thread(name: str, n: int, block: int = 128, grid: int | None = None) -> dict[str, int]:
    """How many elements of x each thread loaded (min and max over threads), from the trace."""
    t = first_trace(name, np.ones(n, np.uint32), block=block, grid=grid, spaces={"global"})
    loads = t.where(op="ld")
    lanes = loads.lanes() & (loads.buffer == t.buffer_id("x"))
    per_elem = max(1, int(loads.size[0]) // 4) if len(loads) else 1
    thread = loads.thread_ids()[lanes] + block * np.repeat(loads.block, lanes.sum(axis=1))
    blocks = t.grid[0]
    counts = np.bincount(thread, minlength=blocks * block) * per_elem
    return {"blocks": blocks, "fewest": int(counts.min()), "most": int(counts.max())}


def writes_to(name: str, buffer: str, n: int = 512, block: int = 128) -> int:
    """How many threads stored to `buffer` (e.g. the article's `time`) in one launch."""
    t = first_trace(name, np.ones(n, np.uint32), block=block, spaces={"global"})
    stores = t.where(op="st")
    return int((stores.buffer == t.buffer_id(buffer)).sum())


def warp_syncs(name: str, block: int = 128) -> int:
    """__syncwarp() calls warp 0 of block 0 makes: 0 for the article's warp-synchronous code."""
    t = first_trace(name, np.ones(4 * block, np.uint32), block=block, blocks=[0], spaces={"sync"})
    return int(((t.opcode == "bar.warp.sync") & (t.warp == 0)).sum())


def compare_steps(ax: Any, names: Sequence[str], column: str, *, ylabel: str = "", **kw: Any) -> None:
    """Bars of one `step_table` column (a number, or 'N-way') per step, one colour per version."""
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        rows = step_table(name, **kw)
        values = [int(str(r[column]).split("-")[0]) for r in rows]
        if column == "worst bank conflict":  # 1-way is no conflict: draw the wavefronts it adds
            values = [v - 1 for v in values]
        steps = np.array([r["step"] for r in rows])
        ax.bar(steps + (k - (len(names) - 1) / 2) * width, values, width, label=name)
    if column == "worst bank conflict":
        ylabel = ylabel or "extra wavefronts (ways − 1)"
    ax.set_xlabel("tree step")
    ax.set_ylabel(ylabel or column)
    ax.set_title(f"{ylabel or column} per step, block of {kw.get('block', 256)}")
    ax.legend()


def lanes_per_warp(name: str, n: int = 256, block: int = 256) -> np.ndarray:
    """(steps, warps) active lanes of each warp in each tree step of block 0, from the trace:
    the shared-memory stores of the step (one row per step that added)."""
    t = first_trace(name, np.arange(1, n + 1, dtype=np.float32), block=block, blocks=[0], spaces={"shared"})
    counts = analysis.step_counts(t, "sdata")
    stores = t.where(op="st")
    warps = -(-block // 32)
    rows = []
    for c in counts[counts.ops > 0]:
        in_step = stores.select((stores.epoch >= c.first_epoch) & (stores.epoch <= c.last_epoch))
        lanes = np.zeros(warps, int)
        np.maximum.at(lanes, in_step.warp, in_step.lanes().sum(axis=1))
        rows.append(lanes)
    return np.array(rows)


def draw_lanes(ax: Any, name: str, **kw: Any) -> None:
    """Heat map of `lanes_per_warp`: 32 is a full warp, 1 to 31 a divergent one (it issues every
    instruction of the add for its few busy lanes), and 0, drawn white: no lane of the warp adds,
    but the warp still runs the loop, the compare and every barrier of the step. Colours on a log
    scale, so 1, 2, 4, 8, 16 and 32 lanes are as far apart as they are in halvings."""
    grid = lanes_per_warp(name, **kw)
    cmap = mpl.colormaps["viridis"].with_extremes(under="white")
    ax.imshow(
        np.where(grid > 0, grid, 0.5), cmap=cmap, norm=mpl.colors.LogNorm(vmin=0.9, vmax=32), aspect="auto"
    )
    for (step, warp), v in np.ndenumerate(grid):
        color = "0.5" if v == 0 else "white" if v < 12 else "black"
        ax.text(warp, step, str(v) if v else "–", ha="center", va="center", color=color, fontsize=9)
    ax.set_xlabel("warp")
    ax.set_ylabel("tree step")
    ax.set_xticks(range(grid.shape[1]))
    ax.set_yticks(range(len(grid)), [str(k + 1) for k in range(len(grid))])
    ax.set_title(
        f"{name}: lanes of each warp that add\n(– : none adds; the warp still loops and waits at the barrier)"
    )


def barriers_per_warp(name: str, n: int = 256, block: int = 256) -> Table:
    """What each warp of block 0 runs in the tree, from the trace: the `__syncthreads()` it reaches
    (a warp-wide instruction, counted once per warp), the tree steps in which at least one of its
    lanes adds, and the warp instructions it issues in all."""
    t = first_trace(
        name, np.arange(1, n + 1, dtype=np.float32), block=block, blocks=[0], spaces={"shared", "sync"}
    )
    adds = lanes_per_warp(name, n=n, block=block)
    bars = t.opcode == "bar.sync"
    count = np.bincount(t.warp[bars], minlength=adds.shape[1])
    rows = Table()
    for w in range(adds.shape[1]):
        rows.append(
            {
                "warp": w,
                "barriers it reaches": int(count[w]),
                "steps in which it adds": int((adds[:, w] > 0).sum()),
            }
        )
    return rows


def draw_tree(ax: Any, name: str, n: int = 64) -> None:
    """Block 0's tree for version `name` on n ones (so each cell shows how many inputs it holds),
    one thread per element: two warps for n = 64, so the warp boundary is in the picture."""
    x = np.ones(n, np.float32)
    draw.tree(ax, first_trace(name, x, block=n, blocks=[0]), "sdata", values=x)
    ax.set_title(f"{ax.get_title()} (4-byte float sums)")  # the bank conflicts drawn are float's
    fit_sums(ax, n)


FIT = 0.8  # a digit's width as a share of the font size, with room to spare: neighbours keep a gap
DIGIT_HEIGHT = 0.75  # a digit's height as a share of the font size: the width a turned label takes
SMALLEST = 8  # points: the smallest label a picture may have (NOTEBOOK.md)


def fit_sums(ax: Any, cells: int, first: str = "1") -> None:
    """Make the partial sums drawn in the cells fit their cells at a readable size (the element
    numbers above the first row stay as they are). The picture first takes the figure's width; a
    number too wide for its cell at 8 points is turned upright, where the cell's height is the
    room, rather than shrunk below 8 points. `first`: the value the first row stores (the label
    that marks it)."""
    fig = ax.figure
    if len(fig.axes) == 1 and fig.get_layout_engine() is None:  # the tree alone: the figure's width is its
        fig.subplots_adjust(left=0.01, right=0.99)
    fig.canvas.draw()  # the axes' final limits, so one element's size in points is known
    to_pt = 72 / fig.dpi
    origin = ax.transData.transform((0, 0))
    width_pt = abs(ax.transData.transform((1, 0))[0] - origin[0]) * to_pt  # the pitch: a cell and its gap
    height_pt = abs(ax.transData.transform((0, draw.CELL))[1] - origin[1]) * to_pt  # a cell's height
    ones = [t.get_position()[1] for t in ax.texts if t.get_text() == first]
    if not ones:
        return
    store_y = max(ones)
    down = ax.get_ylim()[0] - ax.get_ylim()[1]  # its sign: which way the rows go
    sums = [t for t in ax.texts if t.get_text().isdigit() and (t.get_position()[1] - store_y) * down >= 0]
    taken = {(round(t.get_position()[1], 3), round(t.get_position()[0])) for t in sums}
    for t in sums:
        label = t.get_text()
        if len(label) < 2:
            continue
        flat = width_pt / (FIT * len(label))
        upright = min(height_pt / (FIT * len(label)), draw.CELL * width_pt / DIGIT_HEIGHT)
        x, y = round(t.get_position()[0]), round(t.get_position()[1], 3)
        alone = (y, x - 1) not in taken and (y, x + 1) not in taken  # it may spill into empty neighbours
        if flat >= SMALLEST or (upright < SMALLEST and alone):
            t.set_fontsize(min(t.get_fontsize(), max(flat, SMALLEST if alone else flat)))
        else:  # upright: its length along the cell's height, its height across the cell's width
            t.set_fontsize(min(t.get_fontsize(), max(flat, upright)))
            t.set_rotation(90 if upright > flat else 0)


def worst_step(name: str, n: int = 256) -> int:
    """The tree step (1, 2, ...) whose shared-memory accesses conflict most, from `step_table`."""
    rows = step_table(name, n=n, block=n)
    return max(rows, key=lambda r: int(r["worst bank conflict"].split("-")[0]))["step"]


def draw_banks(ax: Any, name: str, step: int, n: int = 256) -> None:
    """Warp 0's shared-memory read in tree step `step` of version `name` (block of n float sums),
    lane by lane: which bank each lane's word is in; a stack in a bank is a conflict."""
    t = first_trace(name, np.ones(n, np.float32), block=n, blocks=[0], spaces={"shared", "sync"})
    counts = analysis.step_counts(t, "sdata")
    stage = counts[counts.ops > 0][step - 1]
    loads = np.flatnonzero(
        (t.space == "shared")
        & (t.op == "ld")
        & (t.warp == 0)
        & (t.epoch >= stage.first_epoch)
        & (t.epoch <= stage.last_epoch)
    )
    ways = analysis.bank_conflicts(t.select(np.isin(np.arange(len(t)), loads)))
    event = loads[int(np.argmax(ways.ways))]
    draw.warp_access(ax, t, int(event))


def draw_banks_pair(axes: Sequence[Any], names: Sequence[str], step: int, n: int = 256) -> None:
    """`draw_banks` for each version on its own axes, on one vertical scale, so the stacks compare.
    The title counts wavefronts (the hardware's passes over the banks: the ways of the access),
    against the fewest its width allows (the drawing's 'phases': 1 for 4-byte words)."""
    for ax, name in zip(axes, names):
        draw_banks(ax, name, step, n)
        ax.set_title(
            re.sub(r"(\d+)-way \(\d+ phases?: (\d+) is ideal\)", _wavefronts, ax.get_title()), fontsize=9
        )
    top = max(ax.get_ylim()[1] for ax in axes)
    bottom = min(ax.get_ylim()[0] for ax in axes)
    for ax in axes:
        ax.set_ylim(bottom, top)


def _wavefronts(m: re.Match) -> str:
    ways, ideal = int(m[1]), int(m[2])
    return f"{ways}-way: {ways} wavefront{'s' * (ways != 1)} ({ideal} is ideal)"


def wavefront_table(name: str = "reduce2", block: int = 128) -> Table:
    """Shared-memory wavefronts of block 0's tree, step by step, with 4-byte float sums (Harris's
    slides) and 8-byte long long sums (the article's): all of them, and those that bank conflicts
    add (an 8-byte access takes two wavefronts with none). Counted from the traces."""
    cols = {}
    for label, dtype in (("float", np.float32), ("long long", np.uint32)):
        t = first_trace(
            name, np.arange(1, block + 1).astype(dtype), block=block, blocks=[0], spaces={"shared", "sync"}
        )
        counts = analysis.step_counts(t, "sdata")
        shared = analysis.bank_conflicts(t)
        per = []
        for c in counts[counts.ops > 0]:
            inside = (shared.epoch >= c.first_epoch) & (shared.epoch <= c.last_epoch)
            per.append((int(shared.ways[inside].sum()), int(shared.extra[inside].sum())))
        cols[label] = per
    rows = Table()
    for k, ((fw, fx), (lw, lx)) in enumerate(zip(cols["float"], cols["long long"])):
        rows.append({"step": k + 1, "float wavefronts": fw, "of them conflicts (float)": fx,
                     "long long wavefronts": lw, "of them conflicts (long long)": lx})  # fmt: skip
    return rows


def one_wave(name: str = "reduce7", block: int = 128) -> int:
    """Blocks in one wave of version `name` at blocks of `block` (long long sums): SMs × the
    blocks one SM holds at once (`occupancy_table`)."""
    return backend.device().sm_count * holds(block, name)


def launch_table(name: str, x: Any, block: int | None = None) -> Table:
    """The launches one `run(name, x)` makes, in order: kernel, grid, block, dynamic shared memory."""
    plan = ENGINE.plan(name, arrays.asarray(x), block=block)
    rows = Table()
    for launch in plan.launches:
        rows.append({"kernel": launch.kernel.name, "grid": launch.grid[0], "block": launch.block[0],
                     "shared_mem": launch.shared_mem})  # fmt: skip
    return rows


def load_requests(
    names: Sequence[str] = ("reduce3", "reduce_vec4"), n: int = 8192, block: int = 256
) -> Table:
    """Bytes and 32-byte sectors per global load request (one warp's load), from the traces."""
    rows = Table()
    for name in names:
        loads = analysis.sectors(first_trace(name, np.ones(n, np.float32), block=block).where(op="ld"))
        rows.append({"kernel": name, "bytes per request": float(loads.bytes.mean()),
                     "sectors per request": float(loads.sectors.mean())})  # fmt: skip
    return rows


# Harris's G80 (GeForce 8800 GTX): 16 multiprocessors of 8 cores at 1.35 GHz; a warp instruction
# takes an SM 4 cycles (32 lanes over 8 cores): 16 × 1.35e9 / 4 warp instructions a second
G80_ISSUE_RATE = 16 * 1.35e9 / 4
G80_N = 2**22


def g80_floor(names: Sequence[str] = STORY, block: int = 128, count_n: int = 2**16) -> Table:
    """Harris's G80 times at 4M (the slides) beside the issue floor of the same kernels on the
    G80 (the instructions per element the emulator counts, times 4M, over the G80's issue rate):
    how much of his measured time issuing instructions alone would take."""
    rows = Table()
    for name in names:
        ipe = _issued(name, count_n, block) / count_n
        floor = 1e3 * ipe * G80_N / G80_ISSUE_RATE
        ms = G80[name][0]
        rows.append({"kernel": name, "warp instr per element": ipe, "G80 issue floor ms": floor,
                     "G80 measured ms": ms, "floor % of measured": 100 * floor / ms})  # fmt: skip
    return rows


def instructions_per_element(names: Sequence[str] = STORY[:6], n: int = 2**16, block: int = 128) -> Table:
    """Warp instructions each version issues per element summed (its own launch, counted by the
    emulator): what is left to cut once the memory accesses are clean."""
    rows = Table()
    for name in names:
        issued = _issued(name, n, block)
        rows.append({"kernel": name, "warp instructions": issued, "per element": issued / n})
    return rows


def _issued(name: str, n: int, block: int) -> int:
    """Warp instructions (PTX, as the emulator runs it) of version `name`'s own launch on n
    elements; kernel 7 with a grid small enough that each thread loops 8 times, as it does on a
    big input (its one-wave grid would give each thread one pair at this n)."""
    x = np.arange(1, n + 1, dtype=np.uint32)
    grid = max(1, n // (block * 2 * 8)) if name.startswith("reduce7") else None
    return int(first_trace(name, x, block=block, grid=grid, spaces=set()).instructions[0])


# each of an SM's four schedulers issues at most one warp instruction a cycle (Volta to Hopper)
SCHEDULERS_PER_SM = 4
# SM boost clocks of the emulator's device models (GHz, the datasheets): the device model has no clock
MODEL_CLOCK_GHZ = {"h100": 1.98, "h200": 1.98, "t4": 1.59}


def sm_clock_ghz() -> tuple[float, str]:
    """The SM clock the issue rate is computed with, and where it came from: the GPU's
    (cudaDevAttrClockRate, its boost clock) on a GPU, the device model's datasheet figure else."""
    dev = backend.device()
    if dev.on_gpu:
        try:
            import cupy

            return cupy.cuda.Device().attributes["ClockRate"] / 1e6, "the GPU (cudaDevAttrClockRate)"
        except Exception:  # an attribute CuPy does not list: the model's figure below
            pass
    return MODEL_CLOCK_GHZ.get(dev.model or "h100", 1.98), "the device model (datasheet boost clock)"


def issue_rate() -> float:
    """Warp instructions per second the whole GPU can issue at most: SMs × 4 schedulers × clock."""
    return backend.device().sm_count * SCHEDULERS_PER_SM * sm_clock_ghz()[0] * 1e9


def issue_table(
    names: Sequence[str] = ("reduce3", "reduce4", "reduce5", "reduce6", "reduce7"),
    n: int = 2**25,
    block: int = 128,
    count_n: int = 2**16,
    runs: int = 20,
) -> Table:
    """Kernels 3 to 7 at N = n with each one's own launch (blocks of `block`), read against two
    bounds: the **issue floor** (the warp instructions per element the emulator counts on
    `count_n` elements, times n, over `issue_rate()`: the least time the schedulers need to issue
    them) and the **waves** of blocks the grid takes (blocks over SMs × blocks an SM holds). On a
    GPU also the time (median of `runs` CUDA-event timings, inputs rotated past L2), the time per
    wave, the issue floor as a share of it, and the control: the same kernel and grid on an input
    of one element, so that its blocks load nothing and run only the per-block part (launch, the
    tree's barriers, the store, retire)."""
    rate, sms = issue_rate(), backend.device().sm_count
    rows = Table()
    xs = _inputs(n) if backend.on_gpu() else None
    for name in names:
        blocks = ENGINE.grid(name, n, block, np.uint32)[0]
        waves = blocks / (sms * holds(block, name))
        ipe = _issued(name, count_n, block) / count_n
        floor = 1e6 * ipe * n / rate
        row = {"kernel": name, "blocks": blocks, "waves": waves, "warp instr per element": ipe,
               "issue floor µs": floor}  # fmt: skip
        if xs is not None:
            us = bench.median_us([ENGINE.plan(name, x, block=block).launches[0] for x in xs], runs=runs)
            # the same kernel and grid on one element: every block but the first loads nothing
            empty = bench.median_us(
                [ENGINE.plan(name, xs[0][:1], block=block, grid=blocks).launches[0]], runs=runs
            )
            row.update({"µs": us, "µs per wave": us / waves, "floor % of µs": 100 * floor / us,
                        "µs, nothing to load": empty, "µs per wave, nothing to load": empty / waves})  # fmt: skip
        rows.append(row)
    if xs is not None:
        del xs
        bench.free_gpu_memory()
    return rows


def littles_law() -> Table:
    """Little's law on the active device, with where each figure came from: the bandwidth (the
    read stream `course.probe` measured on a GPU, else the memory's peak), the DRAM latency (an
    idle pointer chase on a GPU, else the device model's), and the bytes in flight they ask for,
    for the whole GPU and per SM (`occupancy.bytes_needed_per_sm`)."""
    dev = backend.device()
    stream = dev.read_stream_gbps is not None
    gbps = dev.read_stream_gbps if stream else dev.memory_peak_gbps
    per_sm = occupancy.bytes_needed_per_sm(dev)
    return Table([{
        "GB/s": gbps, "latency ns": dev.dram_latency_ns, "SMs": dev.sm_count,
        "bytes in flight, GPU": per_sm * dev.sm_count, "per SM": per_sm,
        "GB/s from": dev.source("read_stream_gbps" if stream else "memory_peak_gbps"),
    }])  # fmt: skip


def occupancy_table(name: str = "reduce7", blocks: Sequence[int] = (32, 64, 128, 256, 512, 1024)) -> Table:
    """Occupancy of version `name` (long long sums) at each block size: its registers and shared
    memory, how many blocks an SM could hold by each of its four limits alone (threads, block
    slots, registers, shared memory), the blocks it holds (the least of them; on a GPU, the
    driver's count), the threads that makes, and the limit that binds."""
    v = ENGINE.version(name)
    rows = Table()
    dev = backend.device()
    for b in blocks:
        k = ENGINE.kernel(v, np.uint32, b)
        o = occupancy.occupancy(k, b, v.shared_bytes(b, np.dtype(np.uint32)))
        rows.append({
            "block": b, "registers": o.registers, "shared B": o.shared, "by threads": o.by_threads,
            "by blocks": o.by_blocks, "by registers": o.by_registers, "by shared": o.by_shared,
            "blocks per SM": o.blocks, "occupancy %": 100 * o.blocks * b / dev.threads_per_sm,
            "limited by": " and ".join(o.limits),
        })  # fmt: skip
    return rows


def tradeoff(n: int = 65536, configs: Sequence[tuple[int, int]] = ((32, 512), (128, 128), (512, 8))) -> Table:
    """Kernel 7 with (block, grid) choices, from traces: elements per thread, the tree's levels
    (log2 block) and the `__syncthreads()` block 0 reaches (the fixed kernel waits with
    `__syncwarp()` in its last warp), the tree's additions in shared memory (block 0's, counted
    from its dataflow, times the blocks: every block runs the same tree), and the SMs the grid
    can use."""
    rows = Table()
    sms = backend.device().sm_count
    for block, grid in configs:
        loads = loads_per_thread("reduce7", n, block=block, grid=grid)
        t = first_trace(
            "reduce7", np.ones(n, np.uint32), block=block, grid=grid, blocks=[0], spaces={"shared", "sync"}
        )
        bars = int(((t.opcode == "bar.sync") & (t.warp == 0)).sum())
        flow = analysis.dataflow(t, "sdata")
        adds = int(((flow.block == 0) & (flow.src != flow.dst)).sum())
        rows.append({
            "block": block, "blocks": grid, "elements per thread": loads["most"],
            "tree levels": int(np.log2(block)), "__syncthreads per block": bars,
            "tree additions per block": adds, "tree additions in all": grid * adds, "SMs used": min(grid, sms),
        })  # fmt: skip
    return rows


# ---------------------------------------------------------------- timings on a GPU

ARTICLE_SIZES = (131072, 4194304, 33554432)  # the article's smallest, Harris's 4M, the article's largest
# Harris's 2007 G80 numbers (4M ints, block 128; peak 86.4 GB/s): ms and GB/s of kernels 1-7
G80 = {
    "reduce1": (8.054, 2.083), "reduce2": (3.456, 4.854), "reduce3": (1.722, 9.741),
    "reduce4": (0.965, 17.377), "reduce5": (0.536, 31.289), "reduce6": (0.381, 43.996),
    "reduce7": (0.268, 62.671),
}  # fmt: skip
G80_PEAK_GBPS = 86.4


def _gpu() -> None:
    if not backend.on_gpu():
        raise RuntimeError(bench.NEEDS_A_GPU)


def peak_gbps() -> float:
    """The GPU's theoretical DRAM bandwidth, from its memory clock and bus width."""
    import cupy

    dev = cupy.cuda.Device()
    clock_khz = dev.attributes["MemoryClockRate"]
    bus_bits = dev.attributes["GlobalMemoryBusWidth"]
    return 2 * clock_khz * 1e3 * bus_bits / 8 / 1e9


def _inputs(n: int) -> list[Any]:
    """Copies of the article's input 1..n on the GPU, enough to rotate them out of L2."""
    sets = bench.rotation_sets(4 * n, backend.device().l2_cache_bytes)
    first = arrays.asarray(np.arange(1, n + 1, dtype=np.uint32))
    return [first] + [first.copy() for _ in range(sets - 1)]


def article_table(
    sizes: Sequence[int] = ARTICLE_SIZES, block: int = 128, runs: int = 20
) -> list[dict[str, Any]]:
    """Kernels 1-7 (the fixed code) each launched two ways in the same run, beside a device copy
    of the same bytes and `cupy.sum` (the whole sum): as the article's main()
    launches every kernel (n/128 blocks of 128), and by the version's own rule (half the blocks
    for 4-6, one wave of the GPU for 7). `cupy.sum` of this uint32 input is CuPy's generic
    reduction, not `DeviceReduce` (`_library_row`). The kernel alone (its block sums), median of `runs`
    CUDA-event timings, inputs rotated past L2.
    On the emulator: an empty table that says why."""
    if not backend.on_gpu():
        return Table(note=bench.NEEDS_A_GPU)
    rows = Table()
    for n in sizes:
        xs = _inputs(n)

        def launches(name: str, xs: list = xs, n: int = n) -> tuple[list, list]:
            article = [ENGINE.plan(name, x, block=block, grid=-(-n // block)).launches[0] for x in xs]
            return article, [ENGINE.plan(name, x, block=block).launches[0] for x in xs]

        rows.extend(bench.launch_rule_rows(n, 4 * n, STORY, launches, runs=runs))
        rows.append(_library_row(n, xs, runs))
        del xs
        bench.free_gpu_memory()
    return rows


LIBRARY_ROW = "cupy.sum (generic)"


def _library_row(n: int, xs: list[Any], runs: int) -> dict[str, Any]:
    """`cupy.sum` on the same inputs, timed as the kernels are: the whole sum, one launch policy,
    so both columns hold it. On uint32 it is CuPy's generic reduction kernel, not CUB's
    `DeviceReduce`: the sum is promoted to uint64, and CuPy hands a sum to `DeviceReduce` only
    when no promotion is needed (cupy/cuda/cub.pyx: "CUB reduce_sum does not support dtype
    promotion"). `scripts/gpu_facts_reduction.py` checks which path it takes."""
    import cupy

    steps: list[Any] = [lambda x=x: cupy.sum(x) for x in xs]
    us = bench.median_us(steps, runs=runs)
    return {"N": n, "kernel": LIBRARY_ROW, "article grid": "", "article µs": us, "article GB/s": 4 * n / us / 1e3,
            "fixed grid": "", "fixed µs": us, "fixed GB/s": 4 * n / us / 1e3}  # fmt: skip


def g80_comparison(rows: Sequence[Mapping[str, Any]], n: int = ARTICLE_SIZES[-1]) -> Table:
    """This GPU (fixed launches, at n: big enough for its copy to near its peak) beside Harris's G80
    at 4M, each as a share of its own DRAM peak (an empty table without GPU timings)."""
    if not rows:
        return Table(note=bench.NEEDS_A_GPU)
    peak = peak_gbps()
    copy = next(r for r in rows if r["N"] == n and r["kernel"] == "device copy")
    out = Table([{"kernel": "device copy", "G80 ms": "", "G80 % of peak": "", "this GPU µs": copy["fixed µs"],
            "this GPU GB/s": copy["fixed GB/s"], "% of peak": 100 * copy["fixed GB/s"] / peak}])  # fmt: skip
    for name, (ms, gbps) in G80.items():
        mine = next(r for r in rows if r["N"] == n and r["kernel"] == name)
        out.append({
            "kernel": name, "G80 ms": ms, "G80 % of peak": 100 * gbps / G80_PEAK_GBPS,
            "this GPU µs": mine["fixed µs"], "this GPU GB/s": mine["fixed GB/s"],
            "% of peak": 100 * mine["fixed GB/s"] / peak,
        })  # fmt: skip
    return out


def in_flight(block: int, blocks: int, loads: int = 2, itemsize: int = 4) -> dict[str, Any]:
    """What a launch of kernel 7 keeps in flight per SM, from the launch (not timed): resident
    blocks per SM (at most as many as an SM holds: `holds`), and the bytes of loads each SM has
    issued and waits for."""
    sms = backend.device().sm_count
    per_sm = min(-(-blocks // sms), holds(block))
    return {"blocks": blocks, "blocks per SM": per_sm, "threads per SM": per_sm * block,
            "bytes in flight per SM": per_sm * block * loads * itemsize}  # fmt: skip


def holds(block: int, name: str = "reduce7") -> int:
    """Blocks of version `name` (long long sums, blocks of `block`) one SM holds at once
    (`course.occupancy`: its registers and shared memory against the device's limits)."""
    v = ENGINE.version(name)
    kernel = ENGINE.kernel(v, np.uint32, block)
    return occupancy.resident_blocks(kernel, block, v.shared_bytes(block, np.dtype(np.uint32)))


def latency_table(n: int = 2**26, block: int = 128, runs: int = 20) -> Table:
    """Kernel 7 with a grid of 1, 2, 4, ... blocks per SM up to one full wave (as many as an SM
    holds: 16 blocks of 128 on Hopper), then two and four waves: bytes in flight per SM against
    the bandwidth reached, beside a read + write copy of the same bytes (half read, half
    written), and the DRAM latency those two imply (Little's law: latency = bytes in flight /
    bandwidth). On the emulator: an empty table that says why."""
    if not backend.on_gpu():
        return Table(note=bench.NEEDS_A_GPU)
    xs = _inputs(n)
    copy = 1e3 * float(np.median(bench.time_copy(4 * n, runs=runs)))
    sms, full = backend.device().sm_count, holds(block)
    rows = Table()
    grids = [sms * p for p in sorted({*(p for p in (1, 2, 4, 8, 16) if p < full), full})]
    for blocks in [*grids, 2 * sms * full, 4 * sms * full]:
        launches = [ENGINE.plan("reduce7", x, block=block, grid=blocks).launches[0] for x in xs]
        us = bench.median_us(launches, runs=runs)
        fly = in_flight(block, blocks)
        gbps = 4 * n / us / 1e3
        rows.append({
            **fly, "waves": blocks / (sms * full), "µs": us, "GB/s": gbps, "% of copy": 100 * copy / us,
            # Little's law read backwards: the latency the bytes in flight and the bandwidth imply
            "implied latency ns": fly["bytes in flight per SM"] * sms / gbps,
        })  # fmt: skip
    del xs
    bench.free_gpu_memory()
    return rows


def plot_speed(ax: Any, records: Sequence[dict[str, Any]]) -> None:
    """GB/s against N, beside the device copy and the ceiling (the datasheet peak; on the emulator: says
    there is nothing to time). `reduce_shfl` is dashed: it lies on top of kernel 7."""
    bench.plot(
        list(records), ax, title="reduction, float32: the whole sum on the GPU", dashed=("reduce_shfl",)
    )


def speed_against_n(
    versions: Sequence[str] = ("reduce7", *BEYOND),
    sizes: Sequence[int] = bench.SPEED_SIZES,
) -> list[dict[str, Any]]:
    """The fixed kernel 7 and the versions beyond the article (the whole sum on the GPU), float32,
    beside cupy.sum and a device copy, from 2^16 to 2^28: course.bench records (none on the emulator)."""
    return bench.speed_against_n(ENGINE, sizes, dtypes=["float32"], kernels=list(versions))


def gpu_grid_speed(blocks: int, block: int, n: int, runs: int = 20) -> tuple[float, float]:
    """GB/s of kernel 7 with `blocks` blocks, and with one full wave, at n (GPU only)."""
    _gpu()
    xs = _inputs(n)
    wave = in_flight(block, 10**9)["blocks per SM"] * backend.device().sm_count
    speeds = []
    for grid in (blocks, wave):
        us = bench.median_us(
            [ENGINE.plan("reduce7", x, block=block, grid=grid).launches[0] for x in xs], runs=runs
        )
        speeds.append(4 * n / us / 1e3)
    del xs
    bench.free_gpu_memory()
    return speeds[0], speeds[1]
