"""Numbers and pictures notebook 03 tells the histogram story with, read from traces and timings.

The article's errors (a cudaMemset that clears one bin, a kernel that assumes 256 threads, one
block per SM where its text says two, a timing that includes the host copy, `rnd(255)` that
almost never gives 255), which lanes meet on which bin, the private-then-merge structure, and
what each kind of data costs. Traces run on the emulator; timings need a GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, bench
from ..emulator import Trace
from ..errors import KernelFault
from .data import BINS, DISTS, histogram_bytes
from .topic import ENGINE, STORY, HistogramVersion, picture

ARTICLE_N = 100 * 2**20  # the article's 100 MiB of random bytes
ARTICLE_BLOCK = 256


def _bytes(n: int, data: str, seed: int = 0) -> np.ndarray:
    return histogram_bytes(n, data, np.random.default_rng(seed))


def _version(name: str) -> HistogramVersion:
    v = ENGINE.version(name)
    assert isinstance(v, HistogramVersion)
    return v


def first_trace(name: str, x: Any, *, block: int | None = None, grid: int | None = None, **kw: Any) -> Trace:
    """The trace of version `name` on bytes x (kw: `blocks`, `spaces`), on the emulator."""
    return ENGINE.trace(name, x, block=block, grid=grid, **kw).launches()[0]


# ---------------------------------------------------------------- the article's errors


def memset_replay(cleared: int = 4, n: int = 5000, seed: int = 0) -> dict[str, Any]:
    """The article's host code, replayed on the emulator: cudaMalloc (course.empty: memory that
    holds no value, 0xFF bytes), cudaMemset(d_hist, 0, `cleared` bytes) (the article clears
    sizeof(int) = 4: bin 0; 1024 is the fix), then hist1_article with the article's launch.

    Returns the checker's findings on the launch, the counts it gave, NumPy's, and the bins that
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
    return {
        "cleared bytes": cleared,
        "findings": findings,
        "got": got,
        "want": want,
        "wrong bins": len(wrong),
        "got - want": sorted({int(d) for d in (got - want)[wrong]}),
    }


def block_bug(block: int, n: int = 5000, seed: int = 0) -> dict[str, Any]:
    """hist2_article at `block` threads (256 is what it assumes), on the emulator: the bins it gets
    wrong, the error its launch raises (512: a write past its shared array) and the checker's
    findings (128: reads of shared bins nobody zeroed)."""
    x = _bytes(n, "uniform", seed)
    want = ENGINE.reference(x)
    out: dict[str, Any] = {"block": block, "error": "", "wrong bins": None, "bins left at 0": None}
    with backend.using("emulator"):
        try:
            got = ENGINE.run("hist2_article", x, block=block)
        except KernelFault as exc:
            out["error"] = f"{type(exc).__name__}: {exc}"
        else:
            out["wrong bins"] = np.flatnonzero(got != want).tolist()
            out["bins left at 0"] = np.flatnonzero((got == 0) & (want > 0)).tolist()
    out["findings"] = ENGINE.check("hist2_article", x, block=block)
    return out


def article_grids(n: int = 2**16, block: int = ARTICLE_BLOCK) -> list[dict[str, Any]]:
    """The article's launch (blocks = SM count), the one its text describes (2 x SM count) and a
    full GPU (hist1's one wave of 2048 threads an SM): warps an SM holds of its 64, and bytes a
    thread loads one at a time, read from a trace at `n` and scaled to the article's 100 MiB."""
    sms = backend.device().sm_count
    x = np.zeros(n, np.uint8)
    full = ENGINE.version("hist1").grid(ARTICLE_N, block, backend.device())[0]  # its one wave at 100 MiB
    rows = []
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
            "launch": label, "blocks": grid, "warps per SM (of 64)": grid * block // 32 // sms,
            f"bytes per thread at N = {n}": int(loads.iteration.max()) + 1,
            "bytes per thread at 100 MiB": -(-ARTICLE_N // (grid * block)),
        })  # fmt: skip
    return rows


def article_timing(n: int = ARTICLE_N, runs: int = 20) -> dict[str, float]:
    """What the article's 29.22 ms holds, on this GPU: the 100 MiB copy from pageable host memory
    (its timing starts before cudaMemcpy) beside the kernels alone (CUDA events, median of `runs`)."""
    if backend.device().backend != "cupy":
        raise RuntimeError("timings need a GPU: on the emulator, the counts above tell the story")
    import cupy

    host = _bytes(n, "uniform")
    copies = []
    for _ in range(5):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        x = cupy.asarray(host)  # cudaMemcpy from pageable memory, as the article's `new unsigned char[]`
        end.record()
        end.synchronize()
        copies.append(cupy.cuda.get_elapsed_time(start, end))
    out = {"host-to-device copy ms": float(np.median(copies))}
    for name in ("hist1_article", "hist2_article", "hist5_lanes"):
        block = ARTICLE_BLOCK if name.endswith("article") else None
        launch = ENGINE.plan(name, x, block=block).launches[0]
        out[f"{name} ms"] = float(np.median(bench.time_runs([launch], runs=runs)))
    del x
    bench.free_gpu_memory()
    return out


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


def draw_contention(ax: Any, name: str, data: str = "all-equal", n: int = 4096, block: int = 128) -> Any:
    """The panel's picture of block 0 of `name` on `data`: lanes per bin of each atomic warp
    instruction (hist5 and hist6: the banks of their atomics)."""
    t = first_trace(name, _bytes(n, data), block=block, blocks=[0])
    return picture(ax, t, ENGINE.version(name))


def contention_table(
    names: Sequence[str] = STORY, dists: Sequence[str] = DISTS, n: int = 4096, block: int = 256
) -> list[dict[str, Any]]:
    """What each kind of data costs each version, counted from the trace of the whole launch:
    atomic warp instructions on the counting buffer, lanes on the busiest bin and distinct bins
    (means per instruction), bank conflicts (mean ways, shared only), and every atomic performed
    (the merges included)."""
    rows = []
    for name in names:
        v = _version(name)
        for data in dists:
            t = first_trace(name, _bytes(n, data), block=block)
            c = analysis.contention(t, v.counts_in)
            shared = analysis.bank_conflicts(t)
            shared = shared[shared.op == "atom"]
            rows.append({
                "version": name, "data": data, "atomic warp instructions": len(c),
                "lanes on one bin (mean)": round(float(c.max_lanes.mean()), 2) if len(c) else 0.0,
                "distinct bins (mean)": round(float(c.bins.mean()), 1) if len(c) else 0.0,
                "bank conflict (mean ways)": round(float(shared.ways.mean()), 2) if len(shared) else None,
                "atomics": analysis.totals(t)["atomics"],
            })  # fmt: skip
    return rows


def merge_table(
    names: Sequence[str] = STORY, n: int = 2**14, block: int = 256, data: str = "uniform"
) -> list[dict[str, Any]]:
    """Private, then merge: where each version's atomics go, from the trace. hist1 makes one
    global atomic a byte; the others count in shared memory and add at most 256 per block, which
    pays once a block sees many more than 256 bytes (hist2's one byte a thread per block does not
    at small N: it launches N / block blocks)."""
    rows = []
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


def gpu_table(n: int = 2**28, dists: Sequence[str] = DISTS, runs: int = 20) -> list[dict[str, Any]]:
    """Every version on each kind of data, timed on this GPU beside a copy of the same bytes and
    cupy.bincount (`every_version`; hist1 takes 70 to 200 ms a run at 2^28, so about a minute in
    all). On the emulator there is nothing to time: say so."""
    if backend.device().backend != "cupy":
        raise RuntimeError("timings need a GPU: on the emulator, the contention counts tell the story")
    records = bench.run(every_version(), n, dists=list(dists), runs=runs)
    return [
        {"version": r["kernel"], "data": r["dist"], "ms": r["ms"], "% of copy": r["pct_of_copy"],
         "× cupy.bincount": r["x_cupy"]}
        for r in records if r["kind"] == "kernel"
    ]  # fmt: skip


def _timed_block(name: str) -> int | None:
    return ARTICLE_BLOCK if name.endswith("_article") else None
