"""The hardware facts notebook 05's prose states that no notebook cell prints, read on a GPU.

    python3 scripts/gpu_facts_reduction.py OUT_DIR       (on a GPU machine; about a minute)

Prints, and writes to OUT_DIR/gpu_facts_reduction.md:

1. the SM clock (the GPU's cudaDevAttrClockRate, nvidia-smi's current and maximum SM clock) and
   the issue rate the notebook's `issue_table` divides by (SMs × 4 schedulers × clock);
2. the SASS of kernels 3 to 7 (reduction.cu compiled as the course compiles it, for this GPU,
   read with `cuobjdump -sass`): instructions, BAR.SYNC, LDG, SHFL per kernel, and whether
   reduce3's BAR.SYNC sits outside the predicated add (every warp reaches every barrier: R1);
3. ncu, kernels 3 to 7 at N = 2^25 with each one's own launch (blocks of 128): warp
   instructions executed (SASS), the SM clock during the run, the time; from those the SASS
   instructions per element and the issue floor beside the time (the notebook counts PTX on
   the emulator: this says how far SASS differs);
4. the spread of the timings `issue_table` reports over 5 repeats of its median of 20;
5. which path `cupy.sum` (the notebook's library row) takes on the uint32 input: CuPy's reduction
   and routine accelerators, the result's dtype (uint64: promoted, so not `DeviceReduce`),
   cupy.sum timed with its reduction accelerators and without, and `DeviceReduce::Sum` itself
   on the same bytes (a 32-bit sum, which wraps: timed for its speed only);
6. the price per block (fresh read R101): kernels 3 to 7 at N = 2^25, each at its own grid on
   the input and on one element (every block but the first loads nothing), and at the article's
   grid (N / 128 blocks); µs per wave of each, and µs per wave of the extra, empty blocks;
7. the whole sum, second pass included: kernel 7 (`reduction.run`) beside `cupy.sum` of the same
   uint32 input, at 4M and 32M (the text says kernel 7 beats the generic reduction);
8. Little's law as `reduction.littles_law()` prints it (the probe's read stream and latency);
9. exercise 7's five grids timed (kernel 7, blocks of 512, N = 2^24): GB/s per blocks per SM,
   the fewest within 10 % of the fastest, and the wave model's answer;
10. the rate of starting blocks (third read R201): an empty kernel (`if (n < 0) out[blockIdx.x] = 0;`)
   launched on each of kernels 3 to 7's own grids and on the article's (N / 128 blocks of 128),
   timed as the kernels are beside each kernel on the same grid; ns per block, blocks per SM clock,
   and the bytes a block must read before the read stream, not starting blocks, sets the time.

Every step that cannot run says why in the output (no GPU, no cuobjdump, no ncu) and the others
still run; the exit status is 1 when any step failed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/facts.py, when loaded by path
import facts

N = 2**25
BLOCK = 128
KERNELS = ("reduce3", "reduce4", "reduce5", "reduce6", "reduce7")
SCHEDULERS = 4

REPORT = facts.Report()
say, step, gpu_or_die = REPORT.say, REPORT.step, facts.gpu_or_die


@step("1. SM clock and issue rate")
def clock() -> float:
    import cupy

    gpu_or_die()
    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    sms = int(props["multiProcessorCount"])
    khz = dev.attributes.get("ClockRate")
    say(f"- GPU: {name}, {sms} SMs, compute capability {props['major']}.{props['minor']}")
    say(f"- cudaDevAttrClockRate: {khz} kHz" if khz else "- cudaDevAttrClockRate: not listed by CuPy")
    if shutil.which("nvidia-smi"):
        q = subprocess.run(
            ["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,clocks.applications.graphics", "--format=csv"],
            capture_output=True, text=True, timeout=20,
        )  # fmt: skip
        say("- nvidia-smi: " + " | ".join(q.stdout.strip().splitlines()))
    ghz = (khz or 1.98e6) / 1e6
    rate = sms * SCHEDULERS * ghz * 1e9
    say(f"- issue rate: {sms} SMs × {SCHEDULERS} schedulers × {ghz:.3f} GHz = {rate:.3g} warp instructions/s")
    from course.reduction import lesson

    say(f"- the course's figure (lesson.issue_rate): {lesson.issue_rate():.3g} ({lesson.sm_clock_ghz()[1]})")
    return rate


def cubin(arch: str) -> bytes:
    """reduction.cu compiled by NVRTC for `arch`, with the notebook's types and every template
    instance, as the course compiles it (course.compiler)."""
    from course import compiler, reduction
    from course.reduction.topic import options

    names = tuple(
        dict.fromkeys(v.instance_for(b) for v in reduction.VERSIONS if v.template for b in v.blocks)
    )
    opts = compiler.compile_options((f"-arch={arch}", *options(np.dtype(np.uint32))))
    return compiler.compile_cubin(compiler.read_kernel("reduction.cu"), "reduction.cu", opts, names)


@step("2. SASS of kernels 3 to 7 (cuobjdump -sass)")
def sass(out: Path) -> None:
    from course.sass import disassemble

    arch = facts.gpu_arch()
    blob = cubin(arch)
    say(f"- cubin: reduction.cu for {arch} ({len(blob)} bytes)")
    bodies = disassemble(blob, keep=out / "reduction_sass.txt")
    say("| kernel (mangled) | SASS instructions | BAR.SYNC | LDG | SHFL | WARPSYNC |")
    say("|---|---|---|---|---|---|")
    for name, instr in bodies.items():
        if (
            not any(k in name for k in KERNELS)
            or "timed" in name
            or ("ILj" in name and "ILj128E" not in name)
        ):
            continue  # kernels 3 to 7, templates at blocks of 128
        ops = ("BAR.SYNC", "LDG", "SHFL", "WARPSYNC")
        counts = [sum(op in i for i in instr) for op in ops]
        say(f"| {name} | {len(instr)} | " + " | ".join(map(str, counts)) + " |")
    r3 = bodies.get("reduce3")
    if r3:
        say(
            "\nreduce3's loop, as compiled (an @P predicate guards an instruction; BAR.SYNC without one runs in every warp):"
        )
        for i in r3:
            if any(k in i for k in ("BAR", "LDS", "STS", "IADD", "ISETP", "BRA", "SHF", "@")):
                say(f"    {i}")
        bars = [i for i in r3 if "BAR.SYNC" in i]
        guarded = [i for i in bars if i.startswith("@")]
        say(f"- reduce3: {len(bars)} BAR.SYNC, of them predicated: {len(guarded)} "
            "(0: every warp runs every barrier, whether or not a lane adds)")  # fmt: skip


CHILD = "--child"


def child() -> None:
    """Run under ncu: each of kernels 3 to 7 once at N with its own launch."""
    import course
    from course import reduction

    x = course.asarray(np.ones(N, np.uint32))
    for name in KERNELS:
        plan = reduction.ENGINE.plan(name, x, block=BLOCK)
        plan.launches[0]()
    import cupy

    cupy.cuda.Device().synchronize()


@step("3. ncu: SASS warp instructions executed, SM clock, time (N = 2^25, own launches, blocks of 128)")
def ncu(out: Path) -> None:
    from course.ncu import to_base

    gpu_or_die()
    exe = shutil.which("ncu")
    if not exe:
        raise RuntimeError("NO ncu on PATH")
    metrics = "smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,dram__bytes_read.sum"
    cmd = [exe, "--clock-control", "none", "--print-units", "base", "--metrics", metrics, "--csv", "--kernel-name", "regex:reduce[3-7]",
           sys.executable, __file__, CHILD]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=75)
    (out / "reduction_ncu.csv").write_text(res.stdout + "\n" + res.stderr)
    rows = [r for r in res.stdout.splitlines() if r.startswith('"') and "reduce" in r]
    if not rows:
        raise RuntimeError(f"ncu gave no rows (rc {res.returncode}): {res.stderr[-800:]}")
    import csv

    found: dict[str, dict[str, float]] = {}
    for r in csv.reader(rows):
        kname = next((c for c in r if "reduce" in c), "")
        metric, unit, value = r[-3], r[-2], r[-1]
        short = re.sub(r"<.*", "", re.sub(r"^_Z\d+", "", kname.split("(")[0]))
        short = next((k for k in KERNELS if k in short), short)
        v = to_base(float(value.replace(",", "")), unit)
        found.setdefault(short, {})[metric + "|" + unit] = v
    from course import backend

    sms = backend.device().sm_count
    say(
        "| kernel | SASS warp instr | per element | SM clock GHz (during run) | issue floor µs | ncu time µs | floor % of time | DRAM bytes read / 4N |"
    )
    say("|---|---|---|---|---|---|---|---|")
    for k in KERNELS:
        m = found.get(k, {})

        def get(prefix: str, m: dict = m) -> float:
            return next((v for key, v in m.items() if key.startswith(prefix)), float("nan"))

        inst, hz = get("smsp__inst_executed.sum"), get("sm__cycles_elapsed.avg.per_second")
        ns = get("gpu__time_duration.sum") * 1e9  # seconds (to_base) to ns
        dram = get("dram__bytes_read.sum")
        floor_us = inst / (sms * SCHEDULERS * hz) * 1e6
        say(f"| {k} | {inst:.4g} | {inst / N:.3g} | {hz / 1e9:.3f} | {floor_us:.3g} | {ns / 1e3:.3g} | "
            f"{100 * floor_us / (ns / 1e3):.0f} | {dram / (4 * N):.3g} |")  # fmt: skip
    say("\n(ncu's own rows, with their units, are in reduction_ncu.csv)")


@step("4. spread of issue_table's timings over 5 repeats (median of 20 each)")
def spread() -> None:
    gpu_or_die()
    from course import bench, reduction

    xs = bench.rotated_copies(np.arange(1, N + 1, dtype=np.uint32))  # the article's input
    say("| kernel | min µs | median µs | max µs |")
    say("|---|---|---|---|")
    for name in KERNELS:
        launches = [reduction.ENGINE.plan(name, x, block=BLOCK).launches[0] for x in xs]
        t = [bench.median_us(launches, runs=20) for _ in range(5)]
        say(f"| {name} | {min(t):.4g} | {float(np.median(t)):.4g} | {max(t):.4g} |")
    del xs
    bench.free_gpu_memory()


@step("5. cupy.sum and CUB: which path a uint32 sum takes, timed with and without CUB")
def library() -> None:
    gpu_or_die()
    import cupy
    from cupy._core import _accelerator

    from course import bench

    say(f"- CUPY_ACCELERATORS={os.environ.get('CUPY_ACCELERATORS', '(unset)')}; "
        f"reduction accelerators: {_accelerator.get_reduction_accelerators()}; "
        f"routine accelerators: {getattr(_accelerator, 'get_routine_accelerators', lambda: '?')()}")  # fmt: skip
    xs = bench.rotated_copies(np.arange(1, N + 1, dtype=np.uint32))  # the article's input
    say(f"- cupy.sum of uint32 returns {cupy.sum(xs[0]).dtype} (a promoted sum: CuPy's cub.pyx sends "
        "a sum to DeviceReduce only without promotion)")  # fmt: skip
    before = _accelerator.get_reduction_accelerators()
    say("| what | µs at N = 2^25 (uint32) |")
    say("|---|---|")
    for acc in (before, []):
        _accelerator.set_reduction_accelerators([{1: "cub", 2: "cutensor"}.get(a, a) for a in acc])
        us = bench.median_us([lambda x=x: cupy.sum(x) for x in xs], runs=20)
        say(f"| cupy.sum, reduction accelerators {acc or 'none (CuPy own kernel)'} | {us:.4g} |")
    _accelerator.set_reduction_accelerators([{1: "cub", 2: "cutensor"}.get(a, a) for a in before])
    try:  # CuPy's wrapper may refuse a dtype it does not list: say so, keep the rows above
        import cupy.cuda.cub as c

        us = bench.median_us([lambda x=x: c.device_reduce(x, c.CUPY_CUB_SUM, (0,), ()) for x in xs], runs=20)
        say(f"| cub::DeviceReduce::Sum on the uint32 (32-bit sum, wraps) | {us:.4g} |")
    except Exception as exc:
        say(f"| cub::DeviceReduce::Sum on the uint32 | not timed: {type(exc).__name__}: {exc} |")
    del xs
    bench.free_gpu_memory()


@step("6. the price per block: each kernel's grid on the input, on one element, and the article's grid")
def per_block() -> None:
    gpu_or_die()
    from course import backend, bench, reduction
    from course.reduction import lesson

    xs = bench.rotated_copies(np.arange(1, N + 1, dtype=np.uint32))
    sms = backend.device().sm_count
    say("| kernel | blocks | waves | µs | µs per wave | µs, one element | per wave | article blocks | article µs "
        "| µs per extra (empty) wave |")  # fmt: skip
    say("|---|---|---|---|---|---|---|---|---|---|")
    for name in KERNELS:
        blocks = reduction.ENGINE.grid(name, N, BLOCK, np.uint32)[0]
        per_wave = sms * lesson.holds(BLOCK, name)
        us = bench.median_us([reduction.ENGINE.plan(name, x, block=BLOCK).launches[0] for x in xs], runs=20)
        one = reduction.ENGINE.plan(name, xs[0][:1], block=BLOCK, grid=blocks).launches[0]
        empty = bench.median_us([one], runs=20)
        art = -(-N // BLOCK)
        art_us = bench.median_us(
            [reduction.ENGINE.plan(name, x, block=BLOCK, grid=art).launches[0] for x in xs], runs=20
        )
        extra = (art_us - us) / ((art - blocks) / per_wave) if art > blocks else float("nan")
        say(f"| {name} | {blocks} | {blocks / per_wave:.3g} | {us:.4g} | {us * per_wave / blocks:.3g} | "
            f"{empty:.4g} | {empty * per_wave / blocks:.3g} | {art} | {art_us:.4g} | {extra:.3g} |")  # fmt: skip
    del xs
    bench.free_gpu_memory()


@step("7. the whole sum: kernel 7 with its second pass beside cupy.sum (uint32)")
def whole_sum() -> None:
    gpu_or_die()
    import cupy

    from course import bench, reduction

    say("| N | kernel 7 block sums µs | kernel 7 whole sum µs | cupy.sum µs |")
    say("|---|---|---|---|")
    for n in (2**22, 2**25):
        xs = bench.rotated_copies(np.arange(1, n + 1, dtype=np.uint32))
        plans = [reduction.ENGINE.plan("reduce7", x, block=BLOCK) for x in xs]
        first = bench.median_us([p.launches[0] for p in plans], runs=20)
        whole = bench.median_us(
            [lambda x=x: reduction.ENGINE.run("reduce7", x, block=BLOCK) for x in xs], runs=20
        )
        lib = bench.median_us([lambda x=x: cupy.sum(x) for x in xs], runs=20)
        say(f"| {n} | {first:.4g} | {whole:.4g} | {lib:.4g} |")
        del xs, plans
        bench.free_gpu_memory()
    say(
        "\n(the whole sum through `run` includes its host-side planning and the result's copy back: an upper bound)"
    )


@step("8. Little's law on this GPU (reduction.littles_law)")
def littles() -> None:
    from course import reduction

    say("```\n" + str(reduction.littles_law()) + "\n```")


@step("9. exercise 7: kernel 7 at blocks of 512, N = 2^24, five grids timed")
def grid_exercise() -> None:
    gpu_or_die()
    from course.reduction import exercises as ex

    speeds = ex.grid_speeds(ex.GRID_N, ex.GRID_BLOCK, 20)
    best = max(speeds.values())
    say("| blocks per SM | bytes in flight per SM | GB/s | % of the fastest |")
    say("|---|---|---|---|")
    for p, v in speeds.items():
        say(f"| {p} | {ex.grid_bytes_in_flight(p)} | {v:.0f} | {100 * v / best:.0f} |")
    fewest = next(p for p in ex.GRID_PER_SM if speeds[p] >= ex.FULL_SPEED * best)
    say(f"- the fewest within 10 % of the fastest: {fewest} per SM; the wave model's answer on this GPU: "
        f"{ex.grid_model_answer()} (solutions/reduction.py gives 4, the emulator's H100 model)")  # fmt: skip


EMPTY = r"""
extern "C" __global__ void empty_kernel(const unsigned int* x, long long* out, int n) {
    if (n < 0) out[blockIdx.x] = 0;  // never true: the kernel does nothing, but is not compiled away
}
"""


@step("10. the rate of starting blocks: an empty kernel on each kernel's grid (N = 2^25, blocks of 128)")
def block_rate() -> None:
    gpu_or_die()
    import cupy

    from course import backend, bench, reduction

    empty = cupy.RawKernel(EMPTY, "empty_kernel")
    xs = bench.rotated_copies(np.arange(1, N + 1, dtype=np.uint32))
    dev = backend.device()
    khz = cupy.cuda.Device().attributes.get("ClockRate") or 1.98e6
    grids = {name: reduction.ENGINE.grid(name, N, BLOCK, np.uint32)[0] for name in KERNELS}
    grids["article (N / 128)"] = -(-N // BLOCK)
    say(
        "| grid of | blocks | kernel µs | empty kernel µs | ns per block (empty) | blocks per SM clock (whole GPU) |"
    )
    say("|---|---|---|---|---|---|")
    rate_ns = float("nan")
    for name, blocks in grids.items():
        out = cupy.zeros(blocks, dtype=cupy.int64)
        launches = [lambda x=x, out=out, b=blocks: empty((b,), (BLOCK,), (x, out, np.int32(N))) for x in xs]
        e_us = bench.median_us(launches, runs=20)
        if name in KERNELS:
            k_us = f"{bench.median_us([reduction.ENGINE.plan(name, x, block=BLOCK).launches[0] for x in xs], runs=20):.4g}"
        else:
            k_us = "—"
        ns = 1e3 * e_us / blocks
        if name == "reduce3":
            rate_ns = ns
        per_clock = 1 / (ns * khz / 1e6)  # blocks the whole GPU starts per SM clock
        say(f"| {name} | {blocks} | {k_us} | {e_us:.4g} | {ns:.3g} | {per_clock:.2f} |")
        del out
    gbs = dev.read_stream_gbps or dev.memory_peak_gbps  # the probe's read stream on a GPU
    say(f"- at {rate_ns:.3g} ns a block (kernel 3's grid) and the probe's read stream of {gbs:.4g} GB/s, a block "
        f"must read at least {rate_ns * gbs:.3g} bytes before memory, not starting blocks, sets the time "
        f"(kernel 3's blocks read {4 * BLOCK} B, kernel 4's {8 * BLOCK} B, kernel 7's "
        f"{4 * N // grids['reduce7']} B); SM clock taken as {khz / 1e6:.3f} GHz (cudaDevAttrClockRate)")  # fmt: skip
    del xs
    bench.free_gpu_memory()


def main() -> None:
    if CHILD in sys.argv:
        child()
        return
    if len(sys.argv) < 2:
        sys.exit("usage: python3 scripts/gpu_facts_reduction.py OUT_DIR")
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("COURSE_BACKEND", "cupy")
    say("# Notebook 05 (reduction): GPU facts its prose states")
    clock()
    sass(out)
    ncu(out)
    spread()
    library()
    per_block()
    whole_sum()
    littles()
    grid_exercise()
    block_rate()
    sys.exit(REPORT.finish(out, "gpu_facts_reduction"))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
