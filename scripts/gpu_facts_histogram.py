"""Hardware facts notebook 03 (histogram) states that no notebook cell prints, measured on the GPU.

    python3 scripts/gpu_facts_histogram.py OUT_DIR      # about a minute; writes OUT_DIR/gpu_facts_histogram.md

1. SASS (cuobjdump -sass on the cubin NVRTC makes for this GPU): which instructions hist1, hist1_agg,
   hist3_vec, hist4_warp_agg and hist_wide use for their loads, atomics and the lanes' agreement
   (LDG.E.128, MATCH.ANY, RED/ATOMG global atomics, ATOMS shared atomics, POPC).
2. The spread of hist1's time on 2^28 uniform bytes (review H3: 33 ms in one H200 run, 69 ms in
   another): several rounds of runs, each on a freshly allocated histogram and input, so that a
   round lands its 1 KiB of bins at another address; min, median, max and max / min, and the time
   of each round beside the bins' address.
3. Why hist_wide is slow on uniform keys (review H12): hist_wide (warp-aggregated shared atomics)
   beside hist_wide_plain (the same kernel with one plain shared atomic per key) and hist_wide_load
   (its loads and merge, no counting), on uniform, all-equal and real keys; the difference between
   the first two is what the __match_any_sync per key costs or saves.
4. CUB's DeviceHistogram (cupy.histogram with the CUB accelerator) beside cupy.bincount and hist5_lanes
   (CuPy's CUB, 64-bit counters; scripts/gpu_facts_cub.py times the 32-bit nvcc build the notebook's
   GPU table uses, and prints CUB's shared atomics).
5. The article's CPU loop (`hist[buffer[i]]++`, compiled with cc -O2: the notebook's CPU row,
   `course.histogram.cpu`) against np.bincount warmed up on the bytes widened to intp, on this
   host's CPU; 100 MiB. No GPU needed.
6. One shared-memory warp instruction against the number k of distinct keys among its 32 lanes
   (k = 1 ... 32, every key in its own bank; review 2026-11-27c H201/H202): __match_any_sync alone,
   the agreement with its ATOMS.ADD (add_aggregated), the course's atomicAdd(&s[b], 1u), an
   atomicAdd of a per-lane value (a weight) and a +1 into 64-bit words; ns per warp instruction per
   SM, the totals checked, and the shared atomics each compiles to.

Section 1 also prints `histogram.sass_table()`, the table notebook 03 shows (the counting atomics:
ATOMS.POPC.INC.32 for hist2, hist3_vec, hist5_lanes, hist_wide_plain; MATCH.ANY + POPC + ATOMS.ADD
for hist4_warp_agg and hist_wide; ATOMS.ADD of run lengths for hist6_runs). Sections 1 and 5 run
without a GPU (section 1 needs NVRTC and cuobjdump).

Without a GPU (or without cuobjdump) it says so loudly and exits 1 after writing what it could.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")
LINES: list[str] = []
PROBLEMS: list[str] = []


def say(line: str = "") -> None:
    print(line, flush=True)
    LINES.append(line)


def table(rows: list[dict], cols: list[str]) -> None:
    say("| " + " | ".join(cols) + " |")
    say("|" + "---|" * len(cols))
    for r in rows:
        say("| " + " | ".join(_fmt(r[c]) for c in cols) + " |")
    say()


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


# ---------------------------------------------------------------- 1. SASS

SASS_KERNELS = ("hist1", "hist1_agg", "hist3_vec", "hist4_warp_agg", "hist_wide", "hist_wide_plain")
SASS_PATTERNS = {
    "LDG.E.128 (16-byte loads)": r"\bLDG\.E\.128\b",
    "LDG.E.U8 (1-byte loads)": r"\bLDG\.E\.U8\b",
    "MATCH.ANY": r"\bMATCH\.ANY\b",
    "global atomics (RED / REDG / ATOMG)": r"\b(REDG?|ATOMG)\.",
    "shared atomics (ATOMS)": r"\bATOMS\.",
    "POPC": r"(?<![.\w])POPC\b",  # the instruction, not ATOMS.POPC
    "BAR.SYNC": r"\bBAR\.SYNC\b",
}


def sass_facts(arch: str) -> None:
    from course import compiler

    say(f"## 1. SASS of the histogram kernels ({arch}, NVRTC cubin, cuobjdump -sass)")
    say()
    tool = shutil.which("cuobjdump")
    if tool is None:
        PROBLEMS.append("cuobjdump not found: no SASS facts")
        say("**cuobjdump not found: no SASS facts.**")
        say()
        return
    src = compiler.read_kernel("histogram.cu")
    opts = compiler.compile_options((f"-arch={arch}", "-DLOAD_BYTES=16"))
    cubin = compiler.compile_cubin(src, "histogram.cu", opts, ())
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "histogram.cubin"
        path.write_bytes(cubin)
        sass = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True, check=True).stdout
    # cuobjdump prints "Function : name" before each kernel's code
    parts = re.split(r"^\s*Function : (\S+)\s*$", sass, flags=re.M)
    bodies = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    rows = []
    for k in SASS_KERNELS:
        body = bodies.get(k)
        if body is None:
            PROBLEMS.append(f"{k} not found in the SASS (functions: {sorted(bodies)[:12]})")
            continue
        row = {"kernel": k}
        for what, pat in SASS_PATTERNS.items():
            row[what] = len(re.findall(pat, body))
        rows.append(row)
        if k == "hist1_agg":  # the instructions around the agreement, as they are
            keep = [
                ln.strip() for ln in body.splitlines() if re.search(r"MATCH|POPC|RED\.|ATOMG|FLO|BREV", ln)
            ]
            say("hist1_agg's agreement and atomic, as cuobjdump prints them:")
            say()
            say("```")
            for ln in keep[:12]:
                say(re.sub(r"\s+", " ", ln))
            say("```")
            say()
    say("Instructions of each kind in each kernel (static count in the SASS):")
    say()
    table(rows, ["kernel", *SASS_PATTERNS])
    from course import histogram

    say("`histogram.sass_table()`, as notebook 03 shows it:")
    say()
    say("```")
    say(repr(histogram.sass_table(arch)))
    say("```")
    say()


# ---------------------------------------------------------------- 2. the spread of hist1's uniform time


def spread_facts(rounds: int = 8, runs: int = 5, n: int = 2**28) -> None:
    import cupy

    from course import bench, histogram

    say(f"## 2. hist1 on 2^28 uniform bytes: the spread between rounds ({rounds} rounds of {runs} runs)")
    say()
    say("Each round allocates a fresh input and a fresh 1 KiB histogram (so the bins may sit at another")
    say("address, in other L2 slices) and times `runs` launches with CUDA events; the same launch as the")
    say("notebook's GPU table (hist1's own: one wave of blocks of 1024).")
    say()
    host = histogram.histogram_bytes(n, "uniform", np.random.default_rng(0))
    rows, meds = [], []
    keep = []  # allocations kept alive, so the next round gets other addresses
    for r in range(rounds):
        if r % 2:  # shift the allocator: an odd-sized block in between
            keep.append(cupy.empty(1 + 4096 * r, np.uint8))
        x = cupy.asarray(host)
        plan = histogram.ENGINE.plan("hist1", x)
        (launch,) = plan.launches
        hist_ptr = int(getattr(getattr(launch.args[1], "data", None), "ptr", 0))  # (x, hist, n)
        ms = bench.time_runs([launch], runs=runs, warmup=1)
        meds.append(float(np.median(ms)))
        rows.append({"round": r, "bins at (address mod 2 MiB)": hex(hist_ptr % (2 << 20)),
                     "min ms": min(ms), "median ms": float(np.median(ms)), "max ms": max(ms)})  # fmt: skip
        keep += [x, plan]  # alive: the next round's input and bins go elsewhere
    table(rows, ["round", "bins at (address mod 2 MiB)", "min ms", "median ms", "max ms"])
    lo, hi = min(meds), max(meds)
    within = max(max(r["max ms"] / r["min ms"] for r in rows), 1.0)
    say(f"median of the rounds: {np.median(meds):.3g} ms; fastest round {lo:.3g} ms, slowest {hi:.3g} ms: "
        f"max / min = {hi / lo:.2f}; within a round at most {within:.2f}")  # fmt: skip
    say()
    del keep, x
    bench.free_gpu_memory()


# ---------------------------------------------------------------- 3. hist_wide on uniform keys


def wide_facts(n: int = 2**27, runs: int = 10) -> None:
    from course import Module, arrays, backend, bench
    from course.histogram import wide_keys
    from course.histogram.wide import WIDE_BINS, wide_plan

    say(f"## 3. hist_wide on 2^27 16-bit keys, {WIDE_BINS} bins: what its time on uniform keys is made of")
    say()
    module = Module.from_file("histogram.cu", options=("-DLOAD_BYTES=16",))  # the study kernels
    plain, load = module.get_function("hist_wide_plain"), module.get_function("hist_wide_load")
    rows = []
    copy = float(np.median(bench.time_copy(2 * n, runs=runs)))
    for data in ("uniform", "all-equal", "real"):
        xs = bench.rotated_copies(wide_keys(n, data, WIDE_BINS))
        launches = [wide_plan(x, WIDE_BINS).launches[0] for x in xs]
        grid, block = launches[0].grid, launches[0].block
        shared = 4 * WIDE_BINS
        agg = float(np.median(bench.time_runs(launches, runs=runs)))
        out = arrays.zeros(WIDE_BINS, np.uint32)

        def steps(k, xs=xs, out=out, grid=grid, block=block, shared=shared):
            args = [(x, out, np.int64(n), np.int32(WIDE_BINS)) for x in xs]
            return [lambda a=a: k(grid, block, a, shared_mem=shared) for a in args]

        ms_plain = float(np.median(bench.time_runs(steps(plain), runs=runs)))
        ms_load = float(np.median(bench.time_runs(steps(load), runs=runs)))
        rows.append({"keys": data, "hist_wide (aggregated) ms": agg, "hist_wide_plain ms": ms_plain,
                     "loads + merge only ms": ms_load, "copy ms": copy,
                     "aggregated / plain": agg / ms_plain})  # fmt: skip
        xs, out = [], None
        bench.free_gpu_memory()
    say(f"grid {grid}, block {block}, {4 * WIDE_BINS // 1024} KiB of shared memory a block; "
        f"device {backend.device().name}")  # fmt: skip
    say()
    table(rows, ["keys", "hist_wide (aggregated) ms", "hist_wide_plain ms", "loads + merge only ms", "copy ms",
                 "aggregated / plain"])  # fmt: skip
    u = rows[0]
    r = u["aggregated / plain"]
    verdict = (
        "the __match_any_sync per key costs time on uniform keys" if r > 1.2
        else "aggregation saves time even on uniform keys" if r < 0.9
        else "the __match_any_sync per key is NOT what makes uniform keys slow (plain takes about as long)"
    )  # fmt: skip
    say(f"uniform keys: aggregated / plain = {u['aggregated / plain']:.2f}: {verdict}; loads and merge alone "
        f"take {u['loads + merge only ms']:.3g} ms of the {u['hist_wide_plain ms']:.3g} ms without aggregation")  # fmt: skip
    say()


# ---------------------------------------------------------------- 4. CUB beside the course


def cub_facts(n: int = 2**28, runs: int = 10) -> None:
    """cupy.histogram with CuPy's CUB accelerator on (cub::DeviceHistogram::HistogramRange), beside
    cupy.bincount, hist5_lanes and the copy, on 2^28 uniform and all-equal bytes."""
    import cupy
    from cupy._core import _accelerator

    from course import bench, histogram

    say(
        "## 4. CUB's DeviceHistogram (through cupy.histogram, CUB accelerator on) beside the course, 2^28 bytes"
    )
    say()
    before = _accelerator.get_routine_accelerators()
    _accelerator.set_routine_accelerators(["cub"])
    try:
        copy = float(np.median(bench.time_copy(n, runs=runs)))
        rows = []
        for data in ("uniform", "all-equal"):
            xs = bench.rotated_copies(histogram.histogram_bytes(n, data, np.random.default_rng(0)))
            want = np.bincount(cupy.asnumpy(xs[0]), minlength=256)
            got = cupy.asnumpy(cupy.histogram(xs[0], bins=256, range=(0, 256))[0])
            cub = float(np.median(bench.time_runs([lambda x=x: cupy.histogram(x, bins=256, range=(0, 256))
                                                   for x in xs], runs=runs)))  # fmt: skip
            inc = float(np.median(bench.time_runs([lambda x=x: cupy.bincount(x, minlength=256) for x in xs],
                                                  runs=runs)))  # fmt: skip
            lanes = float(
                np.median(bench.time_runs([histogram.launch("hist5_lanes", x) for x in xs], runs=runs))
            )
            rows.append({"bytes": data, "cupy.histogram (CUB) ms": cub, "right": bool((got == want).all()),
                         "cupy.bincount ms": inc, "hist5_lanes ms": lanes, "copy ms": copy,
                         "CUB % of copy": 100 * copy / cub})  # fmt: skip
            xs = []
            bench.free_gpu_memory()
    finally:
        names = {_accelerator.ACCELERATOR_CUB: "cub", _accelerator.ACCELERATOR_CUTENSOR: "cutensor"}
        _accelerator.set_routine_accelerators([names[a] for a in before if a in names])
    table(rows, ["bytes", "cupy.histogram (CUB) ms", "right", "cupy.bincount ms", "hist5_lanes ms", "copy ms",
                 "CUB % of copy"])  # fmt: skip


# ---------------------------------------------------------------- 5. the article's CPU loop


def cpu_loop_facts(n: int = 100 * 2**20, runs: int = 3) -> None:
    """The article's loop in C, as notebook 03's article_timing times it (course.histogram.cpu),
    beside np.bincount warmed up on intp bytes (what stands in where no C compiler is found)."""
    import numpy as np

    from course.histogram import cpu, histogram_bytes

    say(f"## 5. The article's CPU loop on {n // 2**20} MiB of uniform bytes, on this host (one core)")
    say()
    host = histogram_bytes(n, "uniform", np.random.default_rng(0))
    loop, what = cpu.loop_ms(host, runs)
    if what != cpu.C_LABEL:
        PROBLEMS.append("no C compiler: the article's loop was not timed")
    numpy = cpu.numpy_ms(host, runs)
    table(
        [{"what": what, "ms": loop}, {"what": "np.bincount, warmed up, on intp bytes", "ms": numpy}],
        ["what", "ms"],
    )
    say(f"np.bincount / the loop = {numpy / loop:.2f}")
    say()


# ---------------------------------------------------------------- 6. one shared atomic against the distinct keys of a warp

ATOMIC_SASS = {
    "MATCH.ANY": r"\bMATCH\.ANY\b",
    "ATOMS.POPC.INC.32": r"\bATOMS\.POPC\.INC\.32\b",
    "ATOMS.ADD": r"\bATOMS\.ADD\b",
    "ATOMS.CAS* (compare-and-swap)": r"\bATOMS\.CAST?\b|\bATOMS\.CAST?\.",
}


def atomic_sass(arch: str) -> None:
    from course import compiler
    from course.histogram import atomic_cost

    tool = shutil.which("cuobjdump")
    if tool is None:
        say("(cuobjdump not found: the instructions of these kernels are not listed)")
        say()
        return
    opts = compiler.compile_options((f"-arch={arch}",))
    cubin = compiler.compile_cubin(atomic_cost.SOURCE, "atomics.cu", opts, ())
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "atomics.cubin"
        path.write_bytes(cubin)
        sass = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True, check=True).stdout
    parts = re.split(r"^\s*Function : (\S+)\s*$", sass, flags=re.M)
    bodies = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    rows = []
    for name in atomic_cost.KERNELS:
        body = bodies.get(name, "")
        row: dict = {"kernel": name}
        for what, pat in ATOMIC_SASS.items():
            row[what] = len(re.findall(pat, body))
        row["other ATOMS"] = sorted(
            {m for m in re.findall(r"\bATOMS\.[\w.]+", body)} - {"ATOMS.POPC.INC.32", "ATOMS.ADD"}
        )
        rows.append(row)
    say("Shared atomics and matches in these kernels' SASS (static count):")
    say()
    table(rows, ["kernel", *ATOMIC_SASS, "other ATOMS"])


def atomic_facts(arch: str, rounds: int = 4096, runs: int = 10) -> None:
    """Review H201/H202: what one warp instruction costs with k distinct keys among its 32 lanes
    (k in 1..32, 1-way: the k words are in k banks), for the match alone, the agreement with its
    ATOMS.ADD (add_aggregated), the course's +1 atomic, an atomic of a per-lane value, and a +1 into
    64-bit words. Full occupancy: two blocks of 1024 an SM."""
    import cupy

    from course import Module, backend, bench
    from course.histogram import atomic_cost

    say("## 6. One shared-memory warp instruction against the distinct keys of a warp (1-way)")
    say()
    say("Lane l of every warp holds key l % k: k distinct words in k banks, so no bank conflict; each")
    say(f"thread makes {rounds} such instructions. Time per warp instruction: the kernel's time over")
    say("the warp instructions an SM makes (all SMs, two blocks of 1024 each).")
    say()
    try:
        atomic_sass(arch)
    except Exception as exc:
        PROBLEMS.append(f"atomic SASS: {type(exc).__name__}: {exc}")
        say(f"**atomic SASS failed: {type(exc).__name__}: {exc}**")
    module = Module(atomic_cost.SOURCE, options=(f"-DROUNDS={rounds}",), filename="atomics.cu")
    dev = backend.device()
    grid, block = 2 * dev.sm_count, 1024
    per_sm = rounds * (grid * block // 32) / dev.sm_count  # warp instructions an SM makes
    out = cupy.zeros(256, np.uint64)
    rows = []
    wrong = []
    for k in atomic_cost.DISTINCT:
        row: dict = {"distinct keys k": k}
        for name, what in atomic_cost.KERNELS.items():
            fn = module.get_function(name)
            out[...] = 0
            fn((grid,), (block,), (out, np.int32(k)))  # once, to check the totals
            got = int(out.sum().get())
            if got != atomic_cost.expected_total(name, k, grid * block, rounds):
                wrong.append(f"{name} k={k}: {got}")
            args = (out, np.int32(k))
            step = [lambda fn=fn, args=args: fn((grid,), (block,), args)]
            ms = float(np.median(bench.time_runs(step, runs=runs)))
            row[what] = 1e6 * ms / per_sm  # ns per warp instruction per SM
        rows.append(row)
    if wrong:
        PROBLEMS.append("section 6 totals wrong: " + "; ".join(wrong))
    say(f"ns per warp instruction per SM (grid {grid}, block {block}, {rounds} rounds; "
        f"{'totals right' if not wrong else 'TOTALS WRONG: ' + '; '.join(wrong)}):")  # fmt: skip
    say()
    cols = ["distinct keys k", *atomic_cost.KERNELS.values()]
    table(rows, cols)
    first, last = rows[0], rows[-1]
    for what in atomic_cost.KERNELS.values():
        say(f"- {what}: k=32 / k=1 = {last[what] / first[what]:.2f}")
    say()
    del out
    bench.free_gpu_memory()


def main() -> int:
    start = time.time()
    OUT.mkdir(parents=True, exist_ok=True)
    say("# GPU facts for notebook 03 (histogram)")
    say()
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        say(f"**NO GPU: {type(exc).__name__}: {exc}. Nothing below is measured.**")
        PROBLEMS.append("no GPU")
        cupy = None
    os.environ.setdefault("COURSE_BACKEND", "cupy" if cupy else "emulator")
    from course import backend

    dev = backend.device()
    say(f"device: {dev.name} ({dev.backend} backend, {dev.sm_count} SMs)")
    say()
    arch = "sm_90"
    if cupy is not None:
        arch = f"sm_{cupy.cuda.Device().compute_capability}"  # CuPy gives "90" for 9.0
    try:
        sass_facts(arch)
    except Exception as exc:
        PROBLEMS.append(f"SASS: {type(exc).__name__}: {exc}")
        say(f"**SASS failed: {type(exc).__name__}: {exc}**")
    try:
        cpu_loop_facts()
    except Exception as exc:
        PROBLEMS.append(f"CPU loop: {type(exc).__name__}: {exc}")
        say(f"**cpu_loop_facts failed: {type(exc).__name__}: {exc}**")
    if cupy is not None:
        for part in (spread_facts, wide_facts, cub_facts, lambda: atomic_facts(arch)):
            try:
                part()
            except Exception as exc:
                name = getattr(part, "__name__", "atomic_facts").replace("<lambda>", "atomic_facts")
                PROBLEMS.append(f"{name}: {type(exc).__name__}: {exc}")
                say(f"**{name} failed: {type(exc).__name__}: {exc}**")
    say(f"({time.time() - start:.0f} s)")
    if PROBLEMS:
        say()
        say("**PROBLEMS: " + "; ".join(PROBLEMS) + "**")
    (OUT / "gpu_facts_histogram.md").write_text("\n".join(LINES) + "\n")
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    sys.exit(main())
