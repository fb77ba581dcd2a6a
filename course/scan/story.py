"""Numbers and pictures notebook 04 tells the scan story with, read from traces of the kernels.

Inclusive and exclusive scans and the conversions between them; the steps of Kogge-Stone and
the up- and down-sweep trees of Brent-Kung and Blelloch (threads and adds per step); steps
against work for each algorithm and N; the tree's bank conflicts and GPU Gems 3's padding (its
16-bank offset and the precedence bug of its "zero conflicts" macro); the article's errors as the
checker and the compiler name them; why a single pass moves 2N elements and scan-then-propagate
4N; how far the look-back looks. Everything here runs on the emulator (traces always do).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, compiler, draw
from ..checks import Findings
from ..emulator import Trace
from ..errors import CompileError
from ..gpu import Module
from .topic import ENGINE, ITEMS, ScanVersion, options

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
    return ENGINE.trace(name, x, block=block, **kw).launches()[0]


def _buffer(t: Trace) -> str:
    return "temp" if "temp" in {b.name for b in t.buffers} else "XY"


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


# ---------------------------------------------------------------- steps, trees and work


def draw_steps(ax: Any, name: str, n: int = 64, *, block: int | None = None) -> Any:
    """The steps of a one-block version, read from its trace: Kogge-Stone's rows with offsets
    1, 2, 4, ...; Brent-Kung's and Blelloch's up-sweep and down-sweep trees. By default with two
    warps of threads (block 64), so that warp boundaries show."""
    t = first_trace(name, example(n), block=block, blocks=[0])
    return draw.scan_steps(ax, t, _buffer(t))


def step_table(name: str, n: int = 64, *, block: int | None = None) -> list[dict[str, Any]]:
    """Block 0's steps: threads and warps that add, warps with idle lanes, adds, worst bank
    conflict. Read from the trace of version `name` (a step is a barrier interval that wrote)."""
    t = first_trace(name, example(n), block=block, blocks=[0])
    buffer = _buffer(t)
    counts = analysis.step_counts(t, buffer)
    shared = analysis.bank_conflicts(t)
    div = analysis.divergence(t.where(space="shared", op="st"))
    rows = []
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
) -> list[dict[str, Any]]:
    """For each algorithm and N (one block covering it): the steps of the longest chain, the
    adds in all, and the barriers, counted from traces. The naive scan has no steps in shared
    memory: its thread i adds i elements of x one after another (the last thread: N - 1 in a
    row), and its adds are all the threads' together."""
    rows = []
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
                steps, adds, barriers = work["steps"], work["work"], work["barriers"]
            rows.append({"algorithm": name, "N": n, "steps": steps, "adds": adds, "barriers": barriers})
    return rows


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


def bank_table(block: int = 1024) -> list[dict[str, Any]]:
    """Shared-memory requests, extra wavefronts (ways - 1 per request, summed) and the worst
    conflict of each padding, from traces. With 32 banks a word every 32 removes nearly all of
    them; GPU Gems 3's offset pads every 16 (it was written for 16 banks) and leaves some; its
    "zero bank conflicts" macro `n >> NUM_BANKS + n >> (2 * LOG_NUM_BANKS)` parses as
    `n >> (NUM_BANKS + n) >> ...`: always 0, so no padding at all."""
    rows = []
    for variant in BANK_VARIANTS:
        bc = analysis.bank_conflicts(bank_trace(variant, block))
        rows.append({
            "padding": variant, "shared requests": len(bc), "extra wavefronts": int((bc.ways - bc.phases).sum()),
            "worst conflict": f"{int(bc.ways.max())}-way",
        })  # fmt: skip
    return rows


def draw_banks(ax: Any, variant: str = "blelloch (no padding)", block: int = 256) -> Any:
    """The bank heat map of the tree's busiest line: a 16 in one bank without padding, a row of
    ones with it."""
    return draw.bank_heatmap(ax, bank_trace(variant, block))


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


def wrong_last_element(block: int = EXAMPLE_BLOCK) -> dict[str, Any]:
    """The article's two Brent-Kung listings on 2 x block ones: which elements are wrong, what
    they hold (the upper half's sum only: the root never got the lower half's), and the truth."""
    x = np.ones(2 * block, np.int32)
    got = ENGINE.run("brent_kung_phases_article", x, block=block)
    want = ENGINE.reference(x)
    wrong = np.flatnonzero(got != want)
    return {"wrong at": wrong.tolist(), "got": got[wrong].tolist(), "want": want[wrong].tolist()}


def typo_error() -> str:
    """NVRTC's message when the article's `_shared__` is put back into its Kogge-Stone."""
    src = compiler.read_kernel("scan.cu")
    line = "\n  __shared__ elem_t XY[BLOCK_SIZE];\n"  # the article's kernel, as printed
    if src.count(line) != 1:
        raise RuntimeError("scan.cu no longer holds the article's Kogge-Stone line as printed")
    try:
        Module(code=src.replace(line, "\n  _shared__ elem_t XY[BLOCK_SIZE];\n"),
               name_expressions=("kogge_stone_scan_article<64>",))  # fmt: skip
    except CompileError as exc:
        return str(exc)
    raise RuntimeError("the typo compiled: NVRTC accepted `_shared__`")


# ---------------------------------------------------------------- past one block


def bytes_moved(n: int = 1 << 14, block: int = 128) -> list[dict[str, Any]]:
    """Global-memory elements each version reads and writes per element of x, from the trace of
    every launch: the single pass reads x and writes y (2N, as a copy); scan-then-propagate
    writes y, then reads and writes it again to add the tiles' prefixes (4N)."""
    x = example(n)
    rows = []
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
