"""Numbers and pictures notebook 05 tells the reduction story with, read from traces and timings.

Each helper traces the version's first launch (the kernel the story is about, not the pass
that adds its block sums) on the emulator, or times it on a GPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, bench
from ..emulator import Trace
from .topic import ENGINE, STORY


def first_trace(name: str, x: Any, *, block: int = 128, grid: int | None = None, **kw: Any) -> Trace:
    """The trace of version `name`'s own launch on x (kw: `blocks`, `spaces`)."""
    return ENGINE.trace(name, x, block=block, grid=grid, **kw).launches()[0]


def step_table(name: str, n: int = 256, block: int = 256, dtype: Any = np.float32) -> list[dict[str, Any]]:
    """Block 0's tree step by step: threads and warps that add, warps with idle lanes, worst
    bank conflict of the step's shared accesses. Read from the trace of version `name`.

    float32 by default: 4-byte shared words, one per bank, as in Harris's slides (the
    article's long long words take two banks, so every access counts at least 2 ways)."""
    t = first_trace(name, np.arange(1, n + 1).astype(dtype), block=block, blocks=[0])
    counts = analysis.step_counts(t, "sdata")
    shared = analysis.bank_conflicts(t)
    div = analysis.divergence(t.where(space="shared"))
    rows = []
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


def compare_steps(ax: Any, names: Sequence[str], column: str, **kw: Any) -> Any:
    """Bars of one `step_table` column (a number, or 'N-way') per step, one colour per version."""
    width = 0.8 / len(names)
    for k, name in enumerate(names):
        rows = step_table(name, **kw)
        values = [int(str(r[column]).split("-")[0]) for r in rows]
        steps = np.array([r["step"] for r in rows])
        ax.bar(steps + (k - (len(names) - 1) / 2) * width, values, width, label=name)
    ax.set_xlabel("tree step")
    ax.set_ylabel(column)
    ax.legend()
    return ax


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


def draw_lanes(ax: Any, name: str, **kw: Any) -> Any:
    """Heat map of `lanes_per_warp`: a full warp is 32; anything between 0 and 32 is divergence."""
    grid = lanes_per_warp(name, **kw)
    image = ax.imshow(grid, cmap="viridis", vmin=0, vmax=32, aspect="auto")
    for (step, warp), v in np.ndenumerate(grid):
        ax.text(
            warp, step, str(v), ha="center", va="center", color="white" if v < 20 else "black", fontsize=8
        )
    ax.set_xlabel("warp")
    ax.set_ylabel("tree step")
    ax.set_yticks(range(len(grid)), [str(k + 1) for k in range(len(grid))])
    ax.set_title(f"{name}: active lanes per warp")
    return image


def tradeoff(
    n: int = 65536, configs: Sequence[tuple[int, int]] = ((32, 512), (128, 128), (512, 8))
) -> list[dict[str, Any]]:
    """Kernel 7 with (block, grid) choices: elements per thread against tree work, from traces."""
    rows = []
    for block, grid in configs:
        loads = loads_per_thread("reduce7", n, block=block, grid=grid)
        rows.append({
            "block": block, "blocks": grid, "elements per thread": loads["most"],
            "barrier steps per block": int(np.log2(block)), "tree additions in all": grid * (block - 1),
        })  # fmt: skip
    return rows


# ---------------------------------------------------------------- the article's table, on this GPU

ARTICLE_SIZES = tuple(131072 * 2**k for k in range(9))  # 131072 ... 33554432
# Harris's 2007 G80 numbers (4M ints, block 128; peak 86.4 GB/s): ms and GB/s of kernels 1-7
G80 = {
    "reduce1": (8.054, 2.083), "reduce2": (3.456, 4.854), "reduce3": (1.722, 9.741),
    "reduce4": (0.965, 17.377), "reduce5": (0.536, 31.289), "reduce6": (0.381, 43.996),
    "reduce7": (0.268, 62.671),
}  # fmt: skip
G80_PEAK_GBPS = 86.4


def peak_gbps() -> float:
    """The GPU's theoretical DRAM bandwidth, from its memory clock and bus width."""
    import cupy

    dev = cupy.cuda.Device()
    clock_khz = dev.attributes["MemoryClockRate"]
    bus_bits = dev.attributes["GlobalMemoryBusWidth"]
    return 2 * clock_khz * 1e3 * bus_bits / 8 / 1e9


def article_table(
    sizes: Sequence[int] = ARTICLE_SIZES, block: int = 128, runs: int = 20
) -> list[dict[str, Any]]:
    """Kernels 1-7 timed as the article launches them (uint32 in, long long sums, block 128):
    the first pass only, median of `runs` CUDA-event timings with inputs rotated past L2.
    On the emulator there is nothing to time: say so."""
    if backend.device().backend != "cupy":
        raise RuntimeError("timings need a GPU: on the emulator, the counts above tell the story")
    rows: list[dict[str, Any]] = []
    for n in sizes:
        sets = bench.rotation_sets(4 * n, backend.device().l2_cache_bytes)
        xs = [arrays.asarray(np.arange(1, n + 1, dtype=np.uint32)) for _ in range(sets)]
        previous = None
        for name in STORY:
            grid = -(-n // block) if name == "reduce7" else None
            launches = [ENGINE.plan(name, x, block=block, grid=grid).launches[0] for x in xs]
            ms = float(np.median(bench.time_runs(launches, runs=runs)))
            gbps = 4 * n / ms / 1e6
            rows.append({"N": n, "kernel": name, "ms": ms, "GB/s": gbps,
                         "step speedup": previous / ms if previous else 1.0})  # fmt: skip
            previous = ms
        del xs
        bench.free_gpu_memory()
    first: dict[int, float] = {r["N"]: r["ms"] for r in rows if r["kernel"] == "reduce1"}
    for r in rows:
        r["cumulative"] = first[r["N"]] / r["ms"]
    return rows


def g80_comparison(rows: Sequence[Mapping[str, Any]], n: int = 4194304) -> list[dict[str, Any]]:
    """This GPU beside the G80 at 4M elements, each as a share of its own peak bandwidth."""
    peak = peak_gbps()
    out = []
    for name, (ms, gbps) in G80.items():
        mine = next(r for r in rows if r["N"] == n and r["kernel"] == name)
        out.append({
            "kernel": name, "G80 ms": ms, "G80 % of peak": 100 * gbps / G80_PEAK_GBPS,
            "this GPU ms": mine["ms"], "this GPU GB/s": mine["GB/s"], "% of peak": 100 * mine["GB/s"] / peak,
        })  # fmt: skip
    return out
