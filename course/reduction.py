"""Reduction launchers: one typed function per job, around the kernels of `kernels/reduction.cu`.

    from course import reduction
    reduction.total("reduce3", x, block=128)        # launch, then add the block sums on the host
    reduction.trace("reduce2", x[:64], block=32)     # what every warp did, for the drawings
    reduction.reference(x)                           # NumPy's answer in the accumulator type

Every version is launched the way its story needs: kernels 1-3 give each thread one
element, kernels 4-6 two, kernel 7 and later ones a grid-stride loop over a fixed grid.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import arrays, backend, bench, gpu
from .emulator.trace import Trace

KERNEL_FILE = "reduction.cu"
BLOCKS = (32, 64, 128, 256, 512, 1024)  # powers of two: the halving trees need them

# input dtype -> (C element type, C accumulator type, accumulator dtype)
TYPES: dict[np.dtype, tuple[str, str, Any]] = {
    np.dtype(np.uint32): ("unsigned int", "long long", np.int64),
    np.dtype(np.int32): ("int", "long long", np.int64),
    np.dtype(np.float32): ("float", "float", np.float32),
    np.dtype(np.float64): ("double", "double", np.float64),
    np.dtype(np.int64): ("long long", "long long", np.int64),
}
BENCH_BLOCK = 512  # with 4 blocks per SM and LOADS=2: the best of docs/reduction-tuning.md


@dataclass(frozen=True)
class Version:
    name: str  # the kernel's name in reduction.cu (templates: without <blockSize>)
    title: str
    per_thread: int  # elements each thread loads before the tree (kernels 4-6: two)
    template: bool = False  # instantiated per block size through name_expressions
    grid_stride: bool = False  # covers any n with a fixed grid
    dynamic_shared: bool = True  # one accumulator per thread in `extern __shared__`
    blocks: tuple[int, ...] = BLOCKS
    article_bug: str = ""  # what is wrong with the article's code, if this is it
    extra_args: tuple[str, ...] = ()


VERSIONS: dict[str, Version] = {
    v.name: v
    for v in (
        Version("reduce1", "interleaved addressing, divergent branch", 1),
        Version("reduce2", "interleaved addressing, strided index (bank conflicts)", 1),
        Version("reduce3", "sequential addressing", 1),
        Version("reduce4", "first add during load", 2),
        Version("reduce5", "unroll the last warp", 2),
        Version("reduce6", "completely unrolled (template block size)", 2, template=True),
        Version("reduce7", "multiple elements per thread", 2, template=True, grid_stride=True),
        Version("reduce_shfl", "warp shuffles + grid-stride loop", 1, grid_stride=True, dynamic_shared=False),
        Version("reduce_vec4", "16-byte loads + shuffles", 4, grid_stride=True, dynamic_shared=False),
        Version(
            "reduce_single_pass", "one pass: the last block adds the block sums", 4, grid_stride=True,
            dynamic_shared=False, extra_args=("partial",),
        ),
        Version("reduce4_article", "first add during load, as in the article", 2,
                article_bug="reads x[i + blockDim.x] past the end when n is not a multiple of 2*block"),
        Version("reduce5_article", "unroll the last warp, as in the article", 2,
                article_bug="warp-synchronous volatile code races since Volta; blocks < 64 read past shared memory"),
        Version("reduce6_article", "completely unrolled, as in the article", 2, template=True,
                article_bug="the same warp-synchronous race as kernel 5"),
        Version("reduce7_article", "multiple elements per thread, as in the article", 2, template=True,
                grid_stride=True, article_bug="reads x[i + blockSize] past the end when n is not a multiple of 2*block"),
        Version("reduce3_timed", "sequential addressing, timed with clock() as in the article", 1,
                extra_args=("time",), article_bug="every thread writes *time: a race that keeps one block's cycles"),
    )
}  # fmt: skip
STORY = ("reduce1", "reduce2", "reduce3", "reduce4", "reduce5", "reduce6", "reduce7")
BEYOND = ("reduce_shfl", "reduce_vec4", "reduce_single_pass")


def version(name: str) -> Version:
    try:
        return VERSIONS[name]
    except KeyError:
        raise ValueError(f"unknown reduction version {name!r}; choose one of {list(VERSIONS)}") from None


def accumulator(dtype: Any) -> np.dtype:
    """The dtype the kernels accumulate in for input `dtype`."""
    return np.dtype(_types(dtype)[2])


def _types(dtype: Any) -> tuple[str, str, Any]:
    dt = np.dtype(dtype)
    if dt not in TYPES:
        raise TypeError(f"reduction works on {[str(t) for t in TYPES]}, not {dt}")
    return TYPES[dt]


@functools.cache
def _module(dtype: np.dtype, backend: str) -> gpu.Module:
    elem, acc, _ = _types(dtype)
    names = tuple(f"{v.name}<{b}>" for v in VERSIONS.values() if v.template for b in v.blocks)
    return gpu.Module.from_file(
        KERNEL_FILE, options=(f"-DELEM={elem}", f"-DACC={acc}"), name_expressions=names
    )


def kernel(name: str, dtype: Any = np.uint32, block: int = 128) -> gpu.Kernel:
    """The compiled kernel of version `name` for inputs of `dtype` (templates: for `block`)."""
    v = version(name)
    check_block(v, block)
    return _kernel(v.name, np.dtype(dtype), int(block), backend.device().backend)


@functools.cache
def _kernel(name: str, dtype: np.dtype, block: int, backend: str) -> gpu.Kernel:
    v = VERSIONS[name]
    return _module(dtype, backend).get_function(f"{name}<{block}>" if v.template else name)


def check_block(v: Version, block: int) -> None:
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or block not in v.blocks:
        raise ValueError(f"{v.name} needs a block size in {list(v.blocks)}; got {block!r}")


def grid_size(name: str, n: int, block: int, grid: int | None = None) -> int:
    """Blocks to launch: enough to cover n, or for grid-stride kernels a few per SM.

    `grid` overrides the choice (the article launches kernel 7 with n/block blocks).
    """
    v = version(name)
    if n < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    if grid is not None:
        if isinstance(grid, bool) or not isinstance(grid, (int, np.integer)) or grid < 1:
            raise ValueError(f"grid must be a number of blocks, at least 1; got {grid!r}")
        return int(grid)
    covering = -(-n // (block * v.per_thread))
    if not v.grid_stride:
        return covering
    resident = backend.device().sm_count * max(1, 2048 // block)  # one full wave of the GPU
    return max(1, min(covering, resident))


def shared_bytes(name: str, dtype: Any, block: int) -> int:
    v = version(name)
    return block * accumulator(dtype).itemsize if v.dynamic_shared else 0


def _as_input(x: Any) -> Any:
    if isinstance(x, np.ndarray) or not hasattr(x, "dtype"):
        x = np.asarray(x)
        if x.ndim != 1:
            raise ValueError(f"reduce a 1-D array; got shape {x.shape}")
        return arrays.asarray(x)
    if len(x.shape) != 1:
        raise ValueError(f"reduce a 1-D array; got shape {x.shape}")
    return x


def launch(name: str, x: Any, *, block: int = 128, grid: int | None = None) -> tuple[Any, bench.Launch]:
    """Prepare (not run) version `name` on x: its output array and the launch."""
    v = version(name)
    dx = _as_input(x)
    n = int(dx.shape[0])
    if n >= 2**31:
        raise ValueError(f"the kernels index with int: n must be below 2**31, not {n}")
    acc = accumulator(dx.dtype)
    blocks = grid_size(name, n, block, grid)
    out = arrays.zeros(1 if v.name == "reduce_single_pass" else blocks, acc)
    # the one-pass kernel takes a scratch array before `out`; the timed one a clock word after `n`
    partial = (arrays.zeros(blocks, acc),) if "partial" in v.extra_args else ()
    clock = (arrays.zeros(1, np.int64),) if "time" in v.extra_args else ()
    args: tuple = (dx, *partial, out, np.int32(n), *clock)
    k = kernel(name, dx.dtype, block)
    return out, bench.Launch(k, (blocks,), (block,), args, shared_mem=shared_bytes(name, dx.dtype, block))


def device_total(name: str, x: Any, *, block: int = BENCH_BLOCK) -> tuple[Any, list[bench.Launch]]:
    """The whole sum on the device: version `name`, then (if it left block sums) a single-pass
    kernel over them. Returns the one-element result array and the launches, in order."""
    out, first = launch(name, x, block=block)
    if name == "reduce_single_pass":
        return out, [first]
    total_out, second = launch("reduce_single_pass", out, block=BENCH_BLOCK)
    return total_out, [first, second]


def block_sums(name: str, x: Any, *, block: int = 128, grid: int | None = None) -> Any:
    """Launch version `name` on x; return its output array (one sum per block)."""
    out, run = launch(name, x, block=block, grid=grid)
    run()
    return out


def total(name: str, x: Any, *, block: int = 128, grid: int | None = None) -> Any:
    """The sum of x by version `name`: the block sums added on the host, as the article does."""
    return finish(block_sums(name, x, block=block, grid=grid))


def finish(out: Any) -> Any:
    """Add up a kernel's block sums on the host, in the accumulator type."""
    sums = arrays.asnumpy(out)
    return sums.sum(dtype=sums.dtype)


def trace(name: str, x: Any, *, block: int = 128, grid: int | None = None, **trace_kw: Any) -> Trace:
    """Run version `name` on the emulator and return its trace (the output is discarded).

    `trace_kw` goes to Kernel.trace: `blocks=[0]` records block 0 only, `spaces={"shared"}`."""
    _, run = launch(name, x, block=block, grid=grid)
    return run.kernel.trace(run.grid, run.block, run.args, shared_mem=run.shared_mem, **trace_kw)


def reference(x: Any) -> Any:
    """NumPy's sum in the kernels' accumulator type (floats: in float64, then rounded)."""
    a = arrays.asnumpy(x)
    acc = accumulator(a.dtype)
    if acc.kind == "f":
        return acc.type(a.sum(dtype=np.float64))
    return a.sum(dtype=acc)


def matches(got: Any, x: Any) -> bool:
    """Whether a kernel's total equals the reference (floats: within rounding of the order)."""
    want = reference(x)
    if accumulator(arrays.asnumpy(x).dtype).kind == "f":
        scale = float(np.abs(arrays.asnumpy(x)).astype(np.float64).sum()) or 1.0
        return abs(float(got) - float(want)) <= 1e-5 * scale
    return bool(got == want)


def _bench_setup(name: str) -> bench.Setup:
    def setup(inputs: bench.Inputs) -> list[bench.Launch]:
        return device_total(name, inputs.arrays[0])[1]

    return setup


for _name in STORY + BEYOND:
    bench.register("reduction", _name, _bench_setup(_name))


# ---------------------------------------------------------------- the interactive panel


def metrics(t: Trace) -> dict[str, Any]:
    """The numbers the reduction story is about, read from a trace of one block."""
    from . import analysis

    out: dict[str, Any] = {}
    names = {b.name for b in t.buffers}
    if "sdata" in names:
        work = analysis.work_summary(t, "sdata", block=int(t.block[0]) if len(t) else 0)
        out["barrier steps"] = work["steps"]
        out["additions in shared memory"] = work["work"]
    shared = analysis.bank_conflicts(t)
    if len(shared):
        out["shared requests"] = len(shared)
        out["worst bank conflict"] = f"{int(shared.ways.max())}-way"
        out["shared wavefronts"] = int(shared.ways.sum())
    div = analysis.divergence(t)
    if len(div):
        partial = div.active < div.possible
        out["warp instructions with idle lanes"] = f"{int(partial.sum())} of {len(div)}"
    glob = analysis.sectors(t.where(op="ld"))
    if len(glob):
        out["global sectors per load"] = round(float(glob.sectors.sum()) / len(glob), 2)
    return out


def launch_facts(name: str, n: int, block: int) -> dict[str, Any]:
    """The launch for N elements: blocks, and how many elements each thread handles at most."""
    blocks = grid_size(name, n, block)
    return {"grid": f"{blocks} blocks of {block}", "elements per thread (at most)": -(-n // (blocks * block))}


def time_ms(name: str, x: np.ndarray, block: int) -> float:
    """Median GPU time of the whole sum (version `name`, then the block sums), in ms."""
    _, launches = device_total(name, arrays.asarray(x), block=block)

    def run() -> None:
        for step in launches:
            step()

    return float(np.median(bench.time_runs([run], runs=20)))


def panel(version: str = "reduce1", n: int = 1000, block: int = 128) -> Any:
    """The reduction panel: every version, N and block size, drawn from the trace of block 0."""
    from . import draw, widgets

    def run(name: str, x: np.ndarray, b: int) -> Any:
        return total(name, x, block=b)

    def check(got: Any, x: np.ndarray) -> str:
        return "" if matches(got, x) else f"got {got}, NumPy says {reference(x)}"

    def picture(ax: Any, t: Trace) -> Any:
        if "sdata" in {b.name for b in t.buffers}:
            return draw.reduction_tree(ax, t, "sdata")
        return draw.grid_stride_map(ax, t, "x")

    spec = widgets.Spec(
        title="Reduction",
        versions={name: v.title for name, v in VERSIONS.items()},
        blocks=lambda name: VERSIONS[name].blocks,
        make_input=lambda n, rng: np.arange(1, n + 1, dtype=np.uint32),  # the article's 1 + 2 + ... + N
        run=run,
        check=check,
        trace=lambda name, x, b: trace(name, x, block=b),
        draw=picture,
        metrics=metrics,
        time_ms=time_ms,
        launch_facts=launch_facts,
        version=version,
        n=n,
        block=block,
    )
    return widgets.panel(spec)


# ---------------------------------------------------------------- numbers the notebook tells the story with


def step_table(name: str, n: int = 256, block: int = 256, dtype: Any = np.float32) -> list[dict[str, Any]]:
    """Block 0's tree step by step: threads and warps that add, warps with idle lanes, worst
    bank conflict of the step's shared accesses. Read from the trace of version `name`.

    float32 by default: 4-byte shared words, one per bank, as in Harris's slides (the
    article's long long words take two banks, so every access counts at least 2 ways)."""
    from . import analysis

    t = trace(name, np.arange(1, n + 1).astype(dtype), block=block, blocks=[0])
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
    t = trace(name, np.ones(n, np.uint32), block=block, grid=grid, spaces={"global"})
    loads = t.where(op="ld")
    x_id = t.buffer_id("x")
    lanes = loads.lanes() & (loads.buffer == x_id)
    per_elem = max(1, int(loads.size[0]) // 4) if len(loads) else 1
    thread = loads.thread_ids()[lanes] + block * np.repeat(loads.block, lanes.sum(axis=1))
    blocks = grid_size(name, n, block, grid)
    counts = np.bincount(thread, minlength=blocks * block) * per_elem
    return {"blocks": blocks, "fewest": int(counts.min()), "most": int(counts.max())}


def writes_to(name: str, buffer: str, n: int = 512, block: int = 128) -> int:
    """How many threads stored to `buffer` (e.g. the article's `time`) in one launch."""
    t = trace(name, np.ones(n, np.uint32), block=block, spaces={"global"})
    stores = t.where(op="st")
    return int((stores.buffer == t.buffer_id(buffer)).sum())


def warp_syncs(name: str, block: int = 128) -> int:
    """__syncwarp() calls warp 0 of block 0 makes: 0 for the article's warp-synchronous code."""
    t = trace(name, np.ones(4 * block, np.uint32), block=block, blocks=[0], spaces={"sync"})
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
            launches = [launch(name, x, block=block, grid=-(-n // block) if name == "reduce7" else None)[1]
                        for x in xs]  # fmt: skip
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


# ---------------------------------------------------------------- exercises

# the learner's kernel sees the types of reduction.cu as macros, so its line numbers stay its own
EXERCISE_OPTIONS = ("-Delem_t=unsigned int", "-Dacc_t=long long")


def _sum_case(n: int, block: int, per_thread: int, extra: Callable[[Trace], str] | None = None) -> Any:
    from .exercises import Case

    x = (np.arange(n, dtype=np.uint64) * 2654435761 % 1000).astype(np.uint32)  # awkward, not all ones
    blocks = -(-n // (block * per_thread))

    def run(k: gpu.Kernel) -> tuple[Any, Trace]:
        out = arrays.zeros(blocks, np.int64)
        t = k.trace((blocks,), (block,), (arrays.asarray(x), out, np.int32(n)), shared_mem=block * 8)
        return finish(out), t

    def judge(result: tuple[Any, Trace]) -> str:
        got, t = result
        if got != reference(x):
            return f"the sum is {got}, NumPy says {reference(x)}"
        return extra(t) if extra else ""

    return Case(f"N={n}, block={block}", run, judge)


def exercise_bounds(source: str) -> Any:
    """Exercise 1: fix kernel 4's load. `source` defines reduce4_mine(const elem_t*, acc_t*, int)."""
    from . import exercises

    cases = [
        _sum_case(n, b, 2) for b in (128, 64) for n in (1, 100, 127, 128, 129, 255, 256, 257, 1000, 4099)
    ]
    return exercises.check(source, "reduce4_mine", cases, options=EXERCISE_OPTIONS)


def _uses_shuffles(t: Trace) -> str:
    """After the last __syncthreads, warp 0 should work in registers: shuffles, not shared memory."""
    block0 = t.where(block=0, warp=0)
    if not len(block0):
        return ""
    last = block0.epoch.max()
    tail = block0.select(block0.epoch == last)
    shared = int((tail.space == "shared").sum())
    shuffles = int((tail.op == "shfl").sum())
    if shuffles < 5:
        return (
            f"warp 0 made {shuffles} shuffles in the last step (5 or more expected: offsets 16, 8, 4, 2, 1)"
        )
    if shared > 3:
        return f"warp 0 still made {shared} shared-memory accesses in the last step (read sdata[tid] and sdata[tid + 32] once)"
    return ""


def exercise_shuffle(source: str) -> Any:
    """Exercise 2: the last warp with __shfl_down_sync. `source` defines reduce5_mine like reduce5."""
    from . import exercises

    cases = [_sum_case(n, b, 2, _uses_shuffles) for b in (64, 128, 256) for n in (1, 129, 1000, 5000)]
    return exercises.check(source, "reduce5_mine", cases, options=EXERCISE_OPTIONS)


def check(name: str, x: Any, *, block: int = 128, grid: int | None = None) -> Any:
    """The checker's findings for version `name` on x (races, bounds, uninitialised reads, barriers)."""
    _, run = launch(name, x, block=block, grid=grid)
    return run.kernel.check(run.grid, run.block, run.args, shared_mem=run.shared_mem)


def lanes_per_warp(name: str, n: int = 256, block: int = 256) -> np.ndarray:
    """(steps, warps) active lanes of each warp in each tree step of block 0, from the trace:
    the shared-memory stores of the step (one row per step that added)."""
    from . import analysis

    t = trace(name, np.arange(1, n + 1, dtype=np.float32), block=block, blocks=[0], spaces={"shared"})
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
