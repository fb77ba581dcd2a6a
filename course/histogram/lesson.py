"""The functions notebook 03 calls (`STORY` in topic.py names the versions it follows, in order).

Numbers and pictures notebook 03 tells the histogram story with, read from traces and timings.

The article's errors (a cudaMemset that clears one bin, a kernel that assumes 256 threads, one
block per SM where its text says two, an int index, a timing that includes the host copy,
`rnd(255)` that almost never gives 255), which lanes meet on which bin, the private-then-merge
structure, bytes in flight, and what each kind of data costs. Traces run on the emulator;
timings need a GPU (on the emulator the timing helpers return a table that says so).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, bench, draw, occupancy
from ..emulator import Trace
from ..errors import InputError, KernelFault
from ..gpu import Kernel, Module
from ..source import Table
from ..ui.panel import Panel
from . import cpu, pictures
from .data import BINS, DISTS, histogram_bytes, photo_bytes
from .panel import counting_line, panel_input, picture
from .topic import ENGINE, STORY, HistogramVersion
from .wide import WIDE_BINS, wide_plan

ARTICLE_N = 100 * 2**20  # the article's 100 MiB of random bytes
ARTICLE_BLOCK = 256
COPIES = (1, 2, 4, 8, 16, 32)
BANK_SCALE = 4  # words per bank at the top of the bank pictures' colour scale  # sub-histograms per block of the tuning's hist5_copies<C>


class Report(dict):  # type: ignore[type-arg]
    """A story helper's result: its fields as a dict, shown in a notebook as a few lines of text."""

    def __init__(self, lines: Sequence[str], **fields: Any):
        super().__init__(fields)
        self.lines = list(lines)

    def __repr__(self) -> str:
        return "\n".join(self.lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(repr(self))


def _bytes(n: int, data: str, seed: int = 0) -> np.ndarray:
    return histogram_bytes(n, data, np.random.default_rng(seed))


def _version(name: str) -> HistogramVersion:
    v = ENGINE.version(name)
    assert isinstance(v, HistogramVersion)
    return v


def first_trace(name: str, x: Any, *, block: int | None = None, grid: int | None = None, **kw: Any) -> Trace:
    """The trace of version `name` on bytes x (kw: `blocks`, `spaces`), on the emulator."""
    return ENGINE.first_trace(name, x, block=block, grid=grid, **kw)


def _ranges(values: Sequence[int]) -> str:
    """[3, 4, 5, 9] -> '3-5, 9'."""
    out: list[str] = []
    for v in sorted(values):
        if out and out[-1].split("-")[-1] == str(v - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{v}"
        else:
            out.append(str(v))
    return ", ".join(out)


# ---------------------------------------------------------------- the article's errors


def rnd_table() -> Table:
    """What the article's `rnd(255)` = (int)(255.0f * rand() / RAND_MAX) gives, over every value
    rand() returns (MSVC) or its top 4096 (glibc): bin 255 only when rand() is (almost) RAND_MAX."""
    msvc = rnd_counts()
    glibc = rnd_255()
    return Table([
        {"C library": "MSVC", "RAND_MAX": 32767, "rand() values giving 255": int(msvc[255]),
         "share of 255": f"1 in {32768 // int(msvc[255])}", "share of bins 0-254": f"about 1 in {32768 // 128}"},
        {"C library": "glibc", "RAND_MAX": 2**31 - 1, "rand() values giving 255": glibc["values giving 255"],
         "share of 255": f"1 in {round(1 / glibc['share'])}", "share of bins 0-254": "about 1 in 255"},
    ])  # fmt: skip


def draw_data(axes: Sequence[Any], n: int = 2**16, dists: Sequence[str] = DISTS) -> None:
    """The histogram of n bytes of each kind of data, one panel each (NumPy's counts)."""
    for k, (ax, data) in enumerate(zip(axes, dists)):
        counts = np.bincount(_bytes(n, data), minlength=BINS)
        pictures.draw_counts(ax, counts, f"{data} bytes", color=f"C{k}")


def memset_replay(cleared: int = 4, n: int = 5000, seed: int = 0) -> Report:
    """The article's host code, replayed on the emulator: cudaMalloc (course.empty: memory that
    holds no value, 0xFF bytes), cudaMemset(d_hist, 0, `cleared` bytes) (the article clears
    sizeof(int) = 4: bin 0; 1024 is the fix), then hist1_article with the article's launch.

    Fields: the checker's findings on the launch, the counts it gave, NumPy's, and the bins that
    differ (255 bins one short at 4 bytes: 0xFFFFFFFF + count wraps to count - 1)."""
    x = _bytes(n, "uniform", seed)
    want = np.bincount(x, minlength=BINS).astype(np.int64)
    with backend.using("emulator"):
        hist = arrays.empty(BINS, np.uint32)  # cudaMalloc
        fill = ENGINE.kernel("fill_bytes", np.uint8)
        fill((1,), (256,), (hist, np.int32(0), np.int64(cleared)))  # cudaMemset(d_hist, 0, cleared)
        launch = ENGINE.plan("hist1_article", arrays.asarray(x), block=ARTICLE_BLOCK).launches[0]
        args = (launch.args[0], hist, *launch.args[2:])
        findings = launch.kernel.check(launch.grid, launch.block, args)  # on copies: hist is kept
        launch.kernel(launch.grid, launch.block, args)
        got = arrays.asnumpy(hist).astype(np.int64)
    wrong = np.flatnonzero(got != want)
    diffs = sorted({int(d) for d in (got - want)[wrong]})
    lines = [
        f"cudaMemset(d_hist, 0, {cleared}) clears {min(cleared, 4 * BINS)} of the {4 * BINS} bytes of hist "
        f"({'every bin' if cleared >= 4 * BINS else f'bins 0-{cleared // 4 - 1}' if cleared > 4 else 'bin 0 only'})",
        f"then hist1_article counts {n} bytes: {len(wrong)} of {BINS} bins wrong"
        + (f", each by {', '.join(map(str, diffs))}" if len(wrong) else ""),
        str(findings) if len(findings) else "the checker finds nothing",
    ]
    return Report(lines, **{"cleared bytes": cleared, "findings": findings, "got": got, "want": want,
                            "wrong bins": len(wrong), "got - want": diffs})  # fmt: skip


def block_bug(block: int, n: int = 5000, seed: int = 0, data: str = "uniform") -> Report:
    """hist2_article at `block` threads (256 is what it assumes), on the emulator: the bins it gets
    wrong, the error its launch raises (512: a write past its shared array) and the checker's
    findings (128: reads of shared bins nobody zeroed)."""
    x = _bytes(n, data, seed)
    want = ENGINE.reference(x)
    fields: dict[str, Any] = {"block": block, "error": "", "wrong bins": None, "bins left at 0": None}
    with backend.using("emulator"):
        try:
            got = ENGINE.run("hist2_article", x, block=block)
        except KernelFault as exc:
            fields["error"] = f"{type(exc).__name__}: {exc}"
        else:
            fields["wrong bins"] = np.flatnonzero(got != want).tolist()
            fields["bins left at 0"] = np.flatnonzero((got == 0) & (want > 0)).tolist()
    fields["findings"] = ENGINE.check("hist2_article", x, block=block)
    head = f"hist2_article, blocks of {block} threads, {n} {data} bytes: "
    if fields["error"]:
        lines = [head + "the launch stops", fields["error"]]
    elif fields["wrong bins"]:
        zero = fields["bins left at 0"]
        lines = [head + f"bins {_ranges(fields['wrong bins'])} wrong"
                 + (f" (bins {_ranges(zero)} left at 0)" if zero else "")]  # fmt: skip
    else:
        lines = [head + "every bin right"]
    lines.append(str(fields["findings"]) if len(fields["findings"]) else "the checker finds nothing")
    return Report(lines, **fields)


def int_index_bug(block: int = ARTICLE_BLOCK) -> Report:
    """The article's `int index` in a grid-stride loop: past 2^31 - 1 it wraps to a negative number,
    which is still `< data_size`, and the kernel reads before the start of the buffer. The last
    thread's indices at N = 2^31, in int32 arithmetic as the GPU does it, and what `plan` says."""
    sms = backend.device().sm_count
    stride = np.int32(sms * block)
    last = np.int32(sms * block - 1)
    n = 2**31
    k = (2**31 - 1 - int(last)) // int(stride)  # the last trip whose index is still representable
    index = np.int32(int(last) + k * int(stride))
    wrapped = np.array([index], np.int32) + np.array([stride], np.int32)  # array arithmetic wraps quietly
    fake = np.broadcast_to(np.uint8(7), (n,))  # no memory behind it: plan() only looks at its size
    try:
        ENGINE.plan("hist1_article", fake, block=block)
        refusal = ""
    except InputError as exc:
        refusal = str(exc)
    lines = [
        f"{sms} blocks of {block}: stride = {int(stride)}; at N = 2^31 = {n} bytes, thread {int(last)} "
        f"reaches index {int(index)}, then index += stride gives {int(wrapped[0])} (< data_size: it goes on)",
        f"the largest N the int index survives: {2**31 - int(stride)} bytes "
        f"(the article's 100 MiB is {ARTICLE_N}: far below)",
        f"histogram.run refuses larger inputs: {refusal}",
    ]
    return Report(lines, stride=int(stride), index=int(index), wrapped=int(wrapped[0]), refusal=refusal)


def article_grids(n: int = 2**16, block: int = ARTICLE_BLOCK) -> Table:
    """The article's launch (blocks = SM count), the one its text describes (2 x SM count) and a
    full GPU (hist1's one wave, as many blocks as an SM holds): warps an SM runs of those it holds,
    and bytes a thread loads one at a time, read from a trace at `n` and scaled to the article's
    100 MiB."""
    dev = backend.device()
    sms, warps = dev.sm_count, dev.threads_per_sm // dev.warp_size
    x = np.zeros(n, np.uint8)
    full = ENGINE.grid("hist1", ARTICLE_N, block, np.uint8)[0]  # its one wave at 100 MiB
    rows = Table()
    for label, name, grid in (
        ("the article's code: 1 block per SM", "hist1_article", sms),
        ("the article's text: 2 blocks per SM", "hist1_article", 2 * sms),
        ("a full GPU (hist1)", "hist1", full),
    ):
        t = first_trace(name, x, block=block, grid=grid, spaces={"global"})
        buffer = "buffer" if name == "hist1_article" else "x"
        it = analysis.iterations(t, buffer)
        loads = it[it.op == "ld"]
        rows.append({
            "launch": label, "blocks": grid, f"warps per SM (of {warps})": grid * block // 32 // sms,
            f"bytes per thread at N = {n}": int(loads.iteration.max()) + 1,
            "bytes per thread at 100 MiB": -(-ARTICLE_N // (grid * block)),
        })  # fmt: skip
    return rows


# ---------------------------------------------------------------- one wave, bytes in flight


def blocks_per_sm(block: int, shared: int) -> int:
    """Blocks of `block` threads and `shared` bytes of shared memory one SM of the device holds at
    once, by its threads, blocks and shared memory (with the driver's reservation per block):
    `course.occupancy.calculate`, registers left out (`occupancy.occupancy` counts a kernel's)."""
    return occupancy.calculate(backend.device(), block, shared=shared).blocks


def loaded_before_use(name: str, block: int = ARTICLE_BLOCK) -> int:
    """Bytes each lane of warp 0 loads from global memory before its first atomic, from the trace:
    the loads the compiled code lets a thread have in flight at once."""
    t = first_trace(name, _bytes(64 * block, "uniform"), block=block, grid=2, blocks=[0])
    w = t.where(warp=0)
    first_atomic = int(np.flatnonzero(np.isin(w.op, ("atom", "red")))[0])
    loads = (w.op[:first_atomic] == "ld") & (w.space[:first_atomic] == "global")
    return int(w.size[:first_atomic][loads].sum())


def little_bytes_per_sm() -> int:
    """Little's law: bytes each SM must have in flight to keep the device's DRAM busy
    (`course.occupancy.bytes_needed_per_sm`: its peak × its DRAM latency / its SMs)."""
    return occupancy.bytes_needed_per_sm()


def holds(name: str, block: int = ARTICLE_BLOCK) -> int:
    """Blocks of version `name`'s kernel (blocks of `block`) one SM holds at once: its registers
    and shared memory against the device's limits (`course.occupancy`)."""
    return occupancy.resident_blocks(ENGINE.kernel(name, np.uint8, block), block)


def _launches(block: int = ARTICLE_BLOCK) -> list[tuple[str, str, int]]:
    """(label, version, blocks) of the launches the grid story compares, blocks of `block`."""
    sms = backend.device().sm_count
    return [
        ("hist1_article: blocks = SMs (its code)", "hist1_article", sms),
        ("hist1: one full wave", "hist1", sms * holds("hist1", block)),
        ("hist2_article: blocks = SMs (its code)", "hist2_article", sms),
        ("hist2_article: 2 x SMs (its text)", "hist2_article", 2 * sms),
        ("hist2_article: one full wave", "hist2_article", sms * holds("hist2_article", block)),
        ("hist3_vec: one full wave", "hist3_vec", sms * holds("hist3_vec", block)),
        ("hist5_lanes: one full wave", "hist5_lanes", sms * holds("hist5_lanes", block)),
    ]


def launch_table(block: int = ARTICLE_BLOCK) -> Table:
    """For the article's launch and the ones after it (blocks of `block`): blocks an SM runs and
    holds at most (threads, blocks, registers and shared memory), warps an SM runs, the bytes a
    thread loads before it needs them (from the trace) and so the bytes in flight per SM, against
    what Little's law asks for on the device (`little_bytes_per_sm`)."""
    dev = backend.device()
    sms, warps = dev.sm_count, dev.threads_per_sm // dev.warp_size
    need = little_bytes_per_sm()
    rows = Table()
    for label, name, grid in _launches(block):
        shared = ENGINE.kernel(name, np.uint8).static_shared_bytes
        per_sm = -(-grid // sms)
        ahead = loaded_before_use(name, block)
        rows.append({
            "launch": label, "blocks": grid, "shared KiB a block": shared // 1024,
            "blocks an SM holds": holds(name, block), "blocks an SM runs": per_sm,
            f"warps an SM runs (of {warps})": per_sm * block // 32, "bytes a thread loads ahead": ahead,
            "bytes in flight an SM": per_sm * block * ahead,
            "% of Little's law": round(100 * per_sm * block * ahead / need, 1),
        })  # fmt: skip
    return rows


def _device_copies(host: np.ndarray) -> list[Any]:
    """`host` on the GPU, with enough copies to rotate them out of L2 between runs."""
    first = arrays.asarray(host)
    sets = bench.rotation_sets(host.nbytes, backend.device().l2_cache_bytes)
    return [first] + [first.copy() for _ in range(sets - 1)]


def _ms(name: str, xs: Sequence[Any], block: int | None, grid: int | None = None, runs: int = 20) -> float:
    launches = [ENGINE.plan(name, x, block=block, grid=grid).launches[0] for x in xs]
    return float(np.median(bench.time_runs(launches, runs=runs)))


def launch(name: str, x: Any, block: int | None = None) -> Any:
    """The launch version `name` makes for bytes x (grid, block, shared memory, arguments), as the
    course would run it: what a notebook cell shows instead of reaching into the plan."""
    return ENGINE.plan(name, arrays.asarray(x), block=block).launches[0]


def wide_launch(keys: Any, bins: int = WIDE_BINS) -> Any:
    """The launch hist_wide makes for the 16-bit keys (its dynamic shared memory is 4 * bins bytes)."""
    return wide_plan(arrays.asarray(keys), bins).launches[0]


def grid_timing(n: int = ARTICLE_N, block: int = ARTICLE_BLOCK, runs: int = 20) -> Table:
    """The launches of `launch_table`, timed on this GPU on n uniform bytes (the article's 100 MiB),
    beside a device copy of the same bytes. On the emulator: an empty table that says why."""
    if not backend.on_gpu():
        return Table(note=bench.NEEDS_A_GPU)
    xs = _device_copies(_bytes(n, "uniform"))
    copy = float(np.median(bench.time_copy(n, runs=runs)))
    rows = Table([{"launch": "device copy of the same bytes", "blocks": "", "ms": copy,
                   "GB/s": n / copy / 1e6, "% of copy": 100.0}])  # fmt: skip
    for label, name, grid in _launches(block):
        ms = _ms(name, xs, block, grid, runs)
        rows.append(
            {"launch": label, "blocks": grid, "ms": ms, "GB/s": n / ms / 1e6, "% of copy": 100 * copy / ms}
        )
    del xs
    bench.free_gpu_memory()
    return rows


SPREAD = 32  # words between bins in hist1_spread: one bin per 128-byte line


@functools.cache
def _study_module() -> Module:
    return Module.from_file("histogram.cu", options=("-DLOAD_BYTES=16",))


def global_atomics_timing(n: int = 2**26, block: int = 1024, runs: int = 10) -> Table:
    """Where hist1's global atomics queue, timed on this GPU on n uniform and n all-equal bytes, all
    with the same launch (one wave of blocks of `block`): hist1 (256 bins in 1 KiB, eight 128-byte
    lines), hist1 with its bins one line apart (`hist1_spread`: 256 lines), and hist1_agg (one atomic
    per distinct byte of a warp). On the emulator: an empty table that says why."""
    if not backend.on_gpu():
        return Table(note=bench.NEEDS_A_GPU)
    grid = backend.device().sm_count * blocks_per_sm(block, 0)
    spread = _study_module().get_function("hist1_spread")
    times: dict[str, dict[str, float]] = {}
    labels = {
        "hist1": "hist1: 256 bins in 8 lines of 128 bytes",
        "hist1_spread": "hist1, one line a bin (bins 128 bytes apart)",
        "hist1_agg": "hist1_agg: lanes agree, 1 atomic per distinct byte",
    }
    for data in ("uniform", "all-equal"):
        xs = _device_copies(_bytes(n, data))
        wide = arrays.zeros(BINS * SPREAD, np.uint32)
        times.setdefault("hist1", {})[data] = _ms("hist1", xs, block, grid, runs)
        steps = [
            lambda x=x, h=wide: spread((grid,), (block,), (x, h, np.int64(n), np.int32(SPREAD))) for x in xs
        ]
        times.setdefault("hist1_spread", {})[data] = float(np.median(bench.time_runs(steps, runs=runs)))
        times.setdefault("hist1_agg", {})[data] = _ms("hist1_agg", xs, block, grid, runs)
        xs, wide = [], None
        bench.free_gpu_memory()
    rows = Table()
    for name, t in times.items():
        rows.append({"launch": labels[name], "uniform ms": t["uniform"], "uniform GB/s": n / t["uniform"] / 1e6,
                     "all-equal ms": t["all-equal"], "all-equal GB/s": n / t["all-equal"] / 1e6})  # fmt: skip
    return rows


def article_timing(n: int = ARTICLE_N, runs: int = 20) -> Table:
    """What the article's 29.22 ms holds, on this GPU: its whole timed span (allocation, the 100 MiB
    copy from pageable host memory, the device properties, the kernel, the copy back), and each
    part alone (CUDA events, median of `runs`; the copy and the span of 5). On the emulator: an
    empty table that says why."""
    if not backend.on_gpu():
        return Table(note=bench.NEEDS_A_GPU)
    import cupy

    host = _bytes(n, "uniform")

    def events(step: Any) -> float:
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        step()
        end.record()
        end.synchronize()
        return float(cupy.cuda.get_elapsed_time(start, end))

    def span() -> None:  # the article's main() between its two events, with CuPy's allocator
        x = cupy.asarray(host)
        cupy.cuda.runtime.getDeviceProperties(0)
        ENGINE.plan("hist2_article", x, block=ARTICLE_BLOCK)()  # zeroed bins, the kernel, the copy back

    spans = [events(span) for _ in range(5)]
    copies = [events(lambda: cupy.asarray(host)) for _ in range(5)]
    xs = _device_copies(host)
    rows = Table([
        {"what": "the article's timed span (with hist2_article)", "ms": float(np.median(spans))},
        {"what": f"of it: cudaMemcpy of {n // 2**20} MiB from pageable host memory", "ms": float(np.median(copies))},
    ])  # fmt: skip
    cpu_ms, cpu_what = cpu.loop_ms(host)
    rows.append({"what": f"the CPU loop on the host, one core: {cpu_what}", "ms": cpu_ms})
    for name in ("hist2_article", "hist1_article", "hist5_lanes"):
        block = ARTICLE_BLOCK if name.endswith("article") else None
        launch = "blocks = SMs of 256 threads" if block else "one wave"
        rows.append({"what": f"the kernel {name} alone ({launch})", "ms": _ms(name, xs, block, runs=runs)})
    del xs
    bench.free_gpu_memory()
    return rows


def rnd_counts(rand_max: int = 32767) -> np.ndarray:
    """The bins of the article's `rnd(255)` = (int)(255.0f * rand() / RAND_MAX) over every value
    rand() returns once (MSVC's RAND_MAX = 32767): bin 255 gets 1 where the others get 128 or 129."""
    if rand_max > 2**24:
        raise ValueError(f"rand_max up to 2^24 (every value is computed); got {rand_max}")
    r = np.arange(rand_max + 1, dtype=np.float32)
    b = (np.float32(255) * r / np.float32(rand_max)).astype(np.int32)
    return np.bincount(b, minlength=256)


def rnd_255(rand_max: int = 2**31 - 1) -> dict[str, Any]:
    """How many rand() values give 255 in float arithmetic (glibc's RAND_MAX = 2^31 - 1: the top
    64, so 1 byte in 2^25 against 1 in 256)."""
    r = np.arange(max(0, rand_max - 4096), rand_max + 1, dtype=np.int64)  # 255 needs r near RAND_MAX
    hits = int(
        ((np.float32(255) * r.astype(np.float32) / np.float32(rand_max)).astype(np.int32) == 255).sum()
    )
    return {
        "RAND_MAX": rand_max,
        "values giving 255": hits,
        "share": hits / (rand_max + 1),
        "fair share": 1 / 256,
    }


# ---------------------------------------------------------------- contention, from the trace


def contention(name: str, data: str = "all-equal", n: int = 4096, block: int = 128) -> np.recarray:
    """Per atomic warp instruction on the version's counting buffer (`hist` for hist1, the shared
    `temp` after it): lanes, bins (distinct words) and max_lanes (the most lanes on one word:
    they are serialised). See `course.analysis.contention`."""
    t = first_trace(name, _bytes(n, data), block=block)
    return analysis.contention(t, _version(name).counts_in)


def lane_bins(name: str, data: str, n: int = 4096, block: int = 128, warps: int = 4) -> np.ndarray:
    """(warps, 32): the bin each lane of warps 0, 1, ... of block 0 hit with its first counting
    atomic, read from the trace (-1: the lane made no atomic in that instruction)."""
    t = first_trace(name, _bytes(n, data), block=block, blocks=[0])
    steps = analysis.steps(t, _version(name).counts_in)
    acc = analysis.subset(steps, np.isin(steps.op, ("atom", "red")))
    out = np.full((warps, 32), -1, np.int64)
    for w in range(warps):
        mine = acc[acc.warp == w]
        if len(mine):
            first = mine[mine.event == mine.event.min()]
            out[w, first.lane] = first.index
    return out


AGGREGATED = ("hist1_agg", "hist4_warp_agg")  # one lane adds for its warp's lanes with the same byte


def lane_adds(name: str, data: str, bins: np.ndarray, n: int = 4096) -> np.ndarray:
    """For an aggregated version, what each lane's first counting atomic adds (0: no atomic): the
    lanes of its warp whose first byte is the same. A lane's first byte is x[i] for hist1_agg and
    the first byte of its 16-byte vector, x[16 i], for hist4_warp_agg (i: the thread's index)."""
    x = _bytes(n, data)
    warps, lanes = bins.shape
    i = np.arange(warps * lanes).reshape(warps, lanes) * (16 if name == "hist4_warp_agg" else 1)
    keys = x[np.minimum(i, n - 1)].astype(int)
    same = (keys[:, :, None] == keys[:, None, :]).sum(axis=2)
    return np.where(bins >= 0, same, 0)


def draw_lane_bins(
    axes: Sequence[Any], name: str, dists: Sequence[str], n: int = 4096, block: int = 128
) -> None:
    """One panel per kind of data: the first counting atomic of warps 0-3 of block 0, lane by lane,
    coloured by how many lanes of the warp hit the same bin; one colour bar for all."""
    image = None
    for ax, data in zip(axes, dists):
        bins = lane_bins(name, data, n=n, block=block)
        adds = lane_adds(name, data, bins, n=n) if name in AGGREGATED else None
        what = "the bin each lane's atomic updates" + (" and what it adds" if adds is not None else "")
        title = f"{name} on {data} bytes: {what}, first atomic of warps 0-3"
        labels = [f"warp {w}" for w in range(len(bins))]
        image = pictures.draw_lane_bins(ax, bins, title, labels, adds)
    pictures.share_colorbar(axes[0].figure, image, list(axes))


def draw_banks(
    ax: Any, name: str, data: str = "uniform", n: int = 4096, block: int = 128, rows: int = 6
) -> None:
    """The banks of the counting atomics of block 0 of `name` on `data`: one row per warp
    instruction, the distinct words each bank holds (the worst is the conflict's ways)."""
    t = first_trace(name, _bytes(n, data), block=block, blocks=[0])
    v = ENGINE.version(name)
    d = draw.bank_heatmap(ax, t, line=counting_line(t, v), max_rows=rows)
    # one colour scale for every such picture (0 to BANK_SCALE words), so that hist3_vec's and
    # hist5_lanes' can be compared; numbers readable on it; rows named by instruction and warp
    for pc in d.cells:
        pc.set_clim(0, BANK_SCALE)
    row = 0
    numbers = []  # the bank numbers above the first row (0, 8, 16, 24), not words in a cell
    for text in ax.texts:
        label = text.get_text()
        if label.isdigit() and text.get_position()[1] > 1:
            numbers.append(text)
        elif label.isdigit():
            text.set_color("white" if int(label) > 0.6 * BANK_SCALE else "black")
        elif label.startswith("warp "):
            text.set_text(f"instruction {row} ({label})")
            row += 1
    if numbers:  # every 4th bank numbered, so a bank can be read off without counting columns
        x0, y = numbers[0].get_position()
        x0 -= int(numbers[0].get_text())
        for bank in range(4, 32, 8):
            ax.text(x0 + bank, y, str(bank), ha="center", va="center", color="0.3",
                    fontsize=numbers[0].get_fontsize())  # fmt: skip
    worst = re.search(r"worst \d+-way", ax.get_title())
    ax.set_title(
        f"{name} on {data} bytes, the counting atomic: distinct words per bank, one row per warp "
        f"instruction{f' ({worst[0]})' if worst else ''}; colour scale 0 to {BANK_SCALE} in every such picture",
        fontsize=10,
        wrap=True,
    )


def draw_contention(ax: Any, name: str, data: str = "all-equal", n: int = 4096, block: int = 128) -> Any:
    """The panel's picture of block 0 of `name` on `data`: lanes per bin of each atomic warp
    instruction (hist5 and hist6: the banks of their atomics)."""
    t = first_trace(name, _bytes(n, data), block=block, blocks=[0])
    return picture(ax, t, ENGINE.version(name))


def contention_table(
    names: Sequence[str] = (*STORY, "hist6_runs"),
    dists: Sequence[str] = DISTS,
    n: int = 4096,
    block: int = 256,
) -> Table:
    """What each kind of data costs each version (the story's, and hist6_runs), counted from the trace of the whole launch:
    atomic warp instructions on the counting buffer, lanes on the busiest bin and distinct bins
    (means per instruction), bank conflicts (mean ways, shared only), and every atomic performed
    (the merges included)."""
    rows = Table()
    for name in names:
        v = _version(name)
        for data in dists:
            t = first_trace(name, _bytes(n, data), block=block)
            c = analysis.contention(t, v.counts_in)
            shared = analysis.bank_conflicts(t)
            shared = shared[shared.op == "atom"]
            rows.append({
                "version": name, "data": data, "atomic warp instructions": len(c),
                "lanes on one word (mean)": round(float(c.max_lanes.mean()), 2) if len(c) else 0.0,
                "distinct words (mean)": round(float(c.bins.mean()), 1) if len(c) else 0.0,
                "bank conflict (mean ways)": round(float(shared.ways.mean()), 2) if len(shared) else "-",
                "atomics": analysis.totals(t)["atomics"],
            })  # fmt: skip
    return rows


def merge_table(
    names: Sequence[str] = STORY, n: int = 2**14, block: int = 256, data: str = "uniform"
) -> Table:
    """Private, then merge: where each version's atomics go, from the trace. hist1 makes one
    global atomic a byte; the others count in shared memory and add at most 256 per block, which
    pays once a block sees many more than 256 bytes (hist2's one byte a thread per block does not
    at small N: it launches N / block blocks)."""
    rows = Table()
    for name in names:
        t = first_trace(name, _bytes(n, data), block=block)
        glob = analysis.contention(t, "hist")
        shared = t.where(space="shared", op="atom")
        rows.append({
            "version": name, "blocks": int(t.grid[0]), "bytes per block": -(-n // int(t.grid[0])),
            "shared atomics": int(shared.lanes().sum()) if len(shared) else 0,
            "global atomics": int(glob.lanes.sum()),
            "global atomics per byte": round(float(glob.lanes.sum()) / n, 4),
        })  # fmt: skip
    return rows


def load_table(names: Sequence[str] = STORY, n: int = 4096, block: int = 256) -> Table:
    """Global loads of each version, from the trace: warp load instructions, bytes and 32-byte
    sectors each one asks for, and the bytes a thread loads before its first atomic."""
    rows = Table()
    x = _bytes(n, "uniform")
    for name in names:
        t = first_trace(name, x, block=block)
        loads = analysis.sectors(t.where(space="global", op="ld"))
        rows.append({
            "version": name, "warp load instructions": len(loads),
            "bytes per instruction": round(float(loads.bytes.mean()), 1),
            "sectors per instruction": round(float(loads.sectors.mean()), 1),
            "bytes a thread loads ahead": loaded_before_use(name),
        })  # fmt: skip
    return rows


# ---------------------------------------------------------------- privatisation: how many copies


@functools.cache
def _copies_module() -> Module:
    names = tuple(f"hist5_copies<{c}>" for c in COPIES)
    return Module.from_file("histogram.cu", options=("-DLOAD_BYTES=16",), name_expressions=names)


def copies_kernel(copies: int) -> Kernel:
    """The tuning's hist5_copies<C>: C sub-histograms per block, lane l counting in copy l % C."""
    if copies not in COPIES:
        raise InputError(f"copies must be one of {list(COPIES)}; got {copies!r}")
    return _copies_module().get_function(f"hist5_copies<{copies}>")


def copies_table(copies: Sequence[int] = COPIES, n: int = 4096, block: int = 256) -> Table:
    """hist5_copies<C> for each C, from traces of one block on uniform and all-equal bytes: shared
    memory a block, blocks an SM holds (blocks of `block` and of 1024), the worst lanes on one word
    and the mean bank conflict of the counting atomics. C = 1 is hist3_vec, C = 32 is hist5_lanes."""
    rows = Table()
    for c in copies:
        k = copies_kernel(c)
        row: dict[str, Any] = {"copies": c, "shared KiB a block": k.static_shared_bytes // 1024,
                               f"blocks an SM holds at {block}": occupancy.resident_blocks(k, block),
                               "at 1024": occupancy.resident_blocks(k, 1024)}  # fmt: skip
        for data in ("uniform", "all-equal"):
            with backend.using("emulator"):
                args = (arrays.asarray(_bytes(n, data)), arrays.zeros(BINS, np.uint32), np.int64(n))
                t = k.trace((1,), (block,), args)
            c_ = analysis.contention(t, "temp")
            line = int(np.bincount(c_.line).argmax())
            atoms = analysis.bank_conflicts(t.where(space="shared", op="atom"))
            atoms = atoms[atoms.line == line]
            row[f"{data}: lanes on one word (most)"] = int(c_.max_lanes.max())
            row[f"{data}: bank ways (mean)"] = round(float(atoms.ways.mean()), 2)
        rows.append(row)
    return rows


# ---------------------------------------------------------------- more bins: hist_wide


def wide_keys(n: int, data: str, bins: int = WIDE_BINS, seed: int = 0) -> np.ndarray:
    """n uint16 keys: uniform below `bins`, all-equal (bins - 1), or real (the photograph's RGB
    quantised to 16 levels a channel: 4096 colours)."""
    if data == "uniform":
        return np.random.default_rng(seed).integers(0, bins, n, dtype=np.uint16)
    if data == "all-equal":
        return np.full(n, bins - 1, np.uint16)
    if data == "real":
        rgb = photo_bytes().reshape(-1, 3).astype(np.uint16)
        keys = (rgb[:, 0] >> 4) << 8 | (rgb[:, 1] >> 4) << 4 | (rgb[:, 2] >> 4)
        return np.resize(keys, n)
    raise InputError(f"data must be uniform, all-equal or real; got {data!r}")


def shared_table(bins: Sequence[int] = (256, 4096, 12288)) -> Table:
    """Shared memory a block needs for one copy of the bins and for hist5's 32 per-lane copies,
    against the 48 KiB any kernel may take and the shared memory of one SM of the device."""
    dev = backend.device()
    sm_kib = dev.shared_memory_per_sm // 1024
    rows = Table()
    for b in bins:
        one, lanes = 4 * b, 32 * 4 * b
        rows.append({
            "bins": b, "one copy KiB": round(one / 1024, 1), "blocks an SM holds (1024 threads)": blocks_per_sm(1024, one),
            "32 per-lane copies KiB": round(lanes / 1024), "fit in 48 KiB": "yes" if lanes <= 48 * 1024 else "no",
            f"fit in one SM ({sm_kib} KiB)": "yes" if blocks_per_sm(32, lanes) else "no",
        })  # fmt: skip
    return rows


def wide_table(n: int = 2**14, bins: int = WIDE_BINS, block: int = 256) -> Table:
    """hist_wide on each kind of keys, from the trace of one launch: atomic warp instructions on the
    shared counts, atomics left after warp aggregation, lanes on one word, bank conflicts, and the
    global atomics of the merge."""
    rows = Table()
    for data in ("uniform", "all-equal", "real"):
        with backend.using("emulator"):
            plan = wide_plan(arrays.asarray(wide_keys(n, data, bins)), bins, block=block)
            (launch,) = plan.launches
            t = launch.trace()
        c = analysis.contention(t, "counts")
        atoms = analysis.bank_conflicts(t.where(space="shared", op="atom"))
        rows.append({
            "keys": data, "blocks": int(t.grid[0]), "atomic warp instructions": len(c),
            "shared atomics": int(c.lanes.sum()), "lanes on one word (most)": int(c.max_lanes.max()),
            "bank ways (mean)": round(float(atoms.ways.mean()), 2),
            "merge: global atomics": int(analysis.contention(t, "hist").lanes.sum()),
        })  # fmt: skip
    return rows


def _bincount(cupy: Any, x: Any, bins: int) -> Any:
    return lambda: cupy.bincount(x, minlength=bins)


def wide_timing(n: int = 2**27, bins: int = WIDE_BINS, runs: int = 20) -> Table:
    """hist_wide on n uint16 keys of each kind, timed on this GPU beside the same kernel without the
    lanes' agreement (`hist_wide_plain`: one plain shared atomic per key, same launch), cupy.bincount
    (minlength=bins) and a device copy of the same bytes. On the emulator: an empty table that says why."""
    if not backend.on_gpu():
        return Table(note=bench.NEEDS_A_GPU)
    import cupy

    copy = float(np.median(bench.time_copy(2 * n, runs=runs)))
    plain = _study_module().get_function("hist_wide_plain")
    rows = Table()
    for data in ("uniform", "all-equal", "real"):
        xs = _device_copies(wide_keys(n, data, bins))
        launches = [wide_plan(x, bins).launches[0] for x in xs]
        ms = float(np.median(bench.time_runs(launches, runs=runs)))
        out = arrays.zeros(bins, np.uint32)
        grid, block = launches[0].grid, launches[0].block
        steps = [
            lambda x=x, g=grid, b=block, o=out: plain(
                g, b, (x, o, np.int64(n), np.int32(bins)), shared_mem=4 * bins
            )
            for x in xs
        ]
        ms_plain = float(np.median(bench.time_runs(steps, runs=runs)))
        cp = float(np.median(bench.time_runs([_bincount(cupy, x, bins) for x in xs], runs=runs)))
        rows.append({"keys": data, "hist_wide ms": ms, "hist_wide_plain ms": ms_plain,
                     "plain % of copy": 100 * copy / ms_plain, "cupy.bincount ms": cp,
                     "hist_wide × cupy.bincount": cp / ms, "plain × cupy.bincount": cp / ms_plain})  # fmt: skip
        del xs, out
        bench.free_gpu_memory()
    return rows


# ---------------------------------------------------------------- the GPU table


def every_version() -> bench.WithCases:
    """The topic as the benchmark sees it, with every version (the article's with the article's
    launch: 256 threads, blocks = SM count), not only the listed ones."""
    setups = {
        v.name: (
            lambda inputs, name=v.name: list(
                ENGINE.plan(name, *inputs.arrays, block=_timed_block(name)).steps
            )
        )
        for v in ENGINE.topic.versions
    }
    return bench.WithCases(ENGINE, setups)


def gpu_table(n: int = 2**28, dists: Sequence[str] = DISTS, runs: int = 20) -> Table:
    """Every version on each kind of data, timed on this GPU beside a copy of the same bytes and
    cupy.bincount (`every_version`; hist1 takes 70 to 200 ms a run at 2^28, so about a minute in
    all): one row per kernel, ms and % of copy per kind of data. On the emulator: an empty table
    that says why."""
    if not backend.on_gpu():
        return Table(note=bench.NEEDS_A_GPU)
    records = bench.run(every_version(), n, dists=list(dists), runs=runs)
    names = ["device copy", "cupy.bincount", CUB_ROW, *(v.name for v in ENGINE.topic.versions)]
    rows = Table()
    for name in names:
        launch = "" if name in ("device copy", "cupy.bincount") else _cub_build() if name == CUB_ROW else (
            f"blocks = SMs of {ARTICLE_BLOCK}" if name.endswith("_article") else "one wave of 1024"
        )  # fmt: skip
        row: dict[str, Any] = {"version": name, "launch": launch}
        for dist in dists:
            r = next(r for r in records if r["dist"] == dist and (r["kernel"] == name or
                     (name == "device copy" and r["kind"] == "copy")))  # fmt: skip
            row[f"{dist} ms"] = r["ms"]
            row[f"{dist} %"] = r["pct_of_copy"]
        rows.append(row)
    return rows


CUB_ROW = "cub::DeviceHistogram::HistogramEven"  # course.bench times it beside the kernels (BenchSpec.cub)


def _cub_build() -> str:
    """Which CUB the benchmark timed (`course.bench.cub`): HistogramEven with 32-bit counters built
    with nvcc for this GPU, or, without nvcc, CuPy's precompiled one with 64-bit counters."""
    from ..bench import cub

    try:
        built = cub.nvcc_histogram() is not None
    except ImportError:  # no CuPy: nothing was timed
        return "CUB's own"
    return "CUB, 32-bit counters (nvcc)" if built else "CuPy's CUB, 64-bit counters"


def plot_times(ax: Any, rows: Sequence[dict[str, Any]], dists: Sequence[str] = DISTS) -> None:
    """`gpu_table`'s times as grouped bars (log scale), one colour per kind of data (on the
    emulator: says there is nothing to time)."""
    pictures.draw_times(ax, list(rows), dists, "Timings need a GPU:\nno times on the emulator")
    if rows:
        ax.set_title(f"what the data does to the time: {backend.device().name}, 2^28 bytes")


def speed_against_n(
    versions: Sequence[str] = ("hist2", "hist3_vec", "hist5_lanes"),
    dists: Sequence[str] = ("uniform", "all-equal"),
    sizes: Sequence[int] = bench.SPEED_SIZES,
) -> list[dict[str, Any]]:
    """The versions after the article (their own launch, block 1024) on uniform and all-equal bytes,
    beside cupy.bincount and a device copy, from 2^16 to 2^28: course.bench records (none on the
    emulator)."""
    return bench.speed_against_n(ENGINE, sizes, dists=list(dists), kernels=list(versions))


def plot_speed(ax: Any, records: Sequence[dict[str, Any]]) -> None:
    """GB/s against N, one colour per kernel and one line style per kind of data, beside the device
    copy and the ceiling (a measured read stream or the datasheet peak; on the emulator: says there
    is nothing to time)."""
    title = "histogram, 256 bins: bytes counted per second (colour: kernel; line and marker: data)"
    bench.plot(list(records), ax, title=title, lines=pictures.draw_speed_lines, x_label="N (bytes)",
               y_label="bytes counted per second (GB/s)", legend_columns=2)  # fmt: skip


def _timed_block(name: str) -> int | None:
    return ARTICLE_BLOCK if name.endswith("_article") else None


# ---------------------------------------------------------------- the panel with the kind of data


def panel(data: str = "uniform", **state: Any) -> Panel:
    """The interactive panel on bytes of kind `data` (uniform, all-equal, skewed or real): the
    engine's panel (version, block, N) with one more choice, because the data decides what the
    atomics cost; keyword arguments set where it starts (version, n, block).

        p = histogram.panel(data="all-equal")
        p.data.value = "uniform"         # what a learner's click does; tests do the same"""
    import ipywidgets as w

    if data not in DISTS:
        raise ValueError(f"data must be one of {list(DISTS)}, not {data!r}")
    p = ENGINE.panel(**state)
    p.data = w.Dropdown(options=list(DISTS), value=data, description="data", layout=w.Layout(width="220px"))  # type: ignore[attr-defined]
    p.widget.children[0].children += (p.data,)  # type: ignore[attr-defined]

    def changed(change: Any) -> None:
        p.spec = dataclasses.replace(p.spec, make_input=panel_input(change["new"]))
        p.update()

    p.data.observe(changed, names="value")  # type: ignore[attr-defined]
    if data != "uniform":  # the engine's panel starts on the topic's input: uniform bytes
        changed({"new": data})
    return p
