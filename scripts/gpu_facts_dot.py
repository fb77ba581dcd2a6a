"""The hardware facts notebook 01's prose states that no notebook cell prints, read on a GPU.

    python3 scripts/gpu_facts_dot.py OUT_DIR       (on a GPU machine; about a minute)

Prints, and writes to OUT_DIR/gpu_facts_dot.md:

1. the device;
2. the SASS of dot1, dot3, dot_shfl and dot_vec4 (dot.cu compiled as the course compiles it, for
   this GPU, read with `cuobjdump -sass`): LDS.128 in dot1 (thread 0 reads four products per
   shared load: "64 16-byte loads" for a block of 256), BAR.SYNC in dot3 and whether it is
   predicated (every warp runs every barrier), SHFL in dot_shfl, LDG.E.128 in dot_vec4;
3. ncu on `cupy.dot` at N = 2^24 and 2^28, float32: the kernels it launches (on two 1-D arrays
   CuPy with CUB on runs `(a * b).sum()`: an elementwise multiply into a temporary of N floats,
   then CUB's DeviceReduce, not cuBLAS), their grids, blocks, registers, achieved occupancy, DRAM
   throughput, DRAM bytes read and written, and time: why it reaches under half of the copy (the
   notebook's "What to call outside this course");
4. ncu on dot1 and dot3 under the article's launch (N / 256 blocks of 256) at N = 2^24, and dot3
   as one wave: warp instructions executed per block, the barrier and memory stalls, the time:
   why serial dot1 beats the tree dot3 under that launch (D5);
5. the spread of `launch_table`'s dot1 and dot3 times under the article's launch at 2^24 over 5
   repeats (does "dot1 beats dot3" hold on every repeat?), and the issue bound of both: their
   warp instructions (step 4) at 4 issues per clock per SM on every SM at the SM clock, against
   the time measured (are they issue-bound?);
6. the PTX of each version (no GPU needed): which kernels compile `sum += a[i] * b[i]` into an
   fma (the product never rounded) and which multiply first (dot1: the product rounded to float32);
7. dot1_article at N = 1024 (one block of 1024) beside the same kernel without its printf, and
   the same chain in float (dot1, one block of 1024): what its tens of µs are (the int
   accumulator's conversions in the chain, the device printf), against the launch floor;
8. ncu on `cupy.cublas.dot` (cuBLAS's cublasSdot) at N = 2^24 and 2^28: its kernels and grids,
   and the time, beside cupy.dot's (step 3);
9. `course.probe`'s read stream beside dot_vec4 at one wave, N = 2^28, in the same run: the
   probe's figure is a floor, not a ceiling, if dot_vec4 reads faster.

Every step that cannot run says why in the output (no GPU, no cuobjdump, no ncu) and the others
still run; the exit status is 1 when any step failed.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/facts.py, when loaded by path
import facts

ARTICLE_N = 2**24
BLOCK = 256
CUPY_NS = (2**24, 2**28)
BUDGET_S = 85  # the lead's limit is 90 s for the whole script
ISSUE_PER_CLOCK = 4  # warp instructions an SM can issue per clock (4 schedulers: Volta to Hopper)

REPORT = facts.Report()
say, step, gpu_or_die = REPORT.say, REPORT.step, facts.gpu_or_die


def left() -> float:
    return REPORT.left(BUDGET_S)


@step("1. device")
def device() -> None:
    facts.describe_gpu(say)


# ---------------------------------------------------------------- 2. SASS


def cubin(arch: str) -> bytes:
    """dot.cu compiled by NVRTC for `arch` with float32 elements, as the course compiles it."""
    from course import compiler
    from course.dot.topic import options

    opts = compiler.compile_options((f"-arch={arch}", *options(np.dtype(np.float32))))
    return compiler.compile_cubin(compiler.read_kernel("dot.cu"), "dot.cu", opts, ())


@step("2. SASS of dot1, dot3, dot_shfl, dot_vec4 (cuobjdump -sass)")
def sass(out: Path) -> None:
    from course.sass import disassemble

    arch = facts.gpu_arch()
    blob = cubin(arch)
    say(f"- cubin: dot.cu for {arch} ({len(blob)} bytes)")
    bodies = disassemble(blob, keep=out / "dot_sass.txt")
    ops = ("LDS.128", "LDS", "BAR.SYNC", "SHFL", "LDG.E.128", "LDG", "ATOM", "RED")
    say("| kernel | SASS instructions | " + " | ".join(ops) + " |")
    say("|---|---|" + "---|" * len(ops))
    for name in ("dot1", "dot3", "dot_shfl", "dot_vec4"):
        instr = bodies.get(name)
        if instr is None:
            say(f"| {name} | not in the cubin | " + " | ".join("" for _ in ops) + " |")
            continue
        counts = [sum(re.search(rf"\b{re.escape(o)}\b", i) is not None for i in instr) for o in ops]
        say(f"| {name} | {len(instr)} | " + " | ".join(map(str, counts)) + " |")
    for name in ("dot1", "dot3"):
        instr = bodies.get(name, [])
        bars = [i for i in instr if "BAR.SYNC" in i]
        say(f"- {name}: {len(bars)} BAR.SYNC in the code, predicated: {sum(i.startswith('@') for i in bars)} "
            "(0: every warp that is still running reaches every barrier)")  # fmt: skip
    dot1 = bodies.get("dot1", [])
    fadd = sum(re.search(r"\bFADD\b", i) is not None for i in dot1)
    lds, wide = sum("LDS" in i for i in dot1), sum("LDS.128" in i for i in dot1)
    say(
        f"- dot1: {lds} LDS in the code, of them {wide} LDS.128 (16 bytes: four products per load); {fadd} FADD"
    )


# ---------------------------------------------------------------- 3 and 4. ncu

CHILD = "--child"
BASE_METRICS = (
    "gpu__time_duration.sum",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "launch__waves_per_multiprocessor",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "smsp__inst_executed.sum",
)
STALL_METRICS = (
    "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
)


def profiler(on: bool) -> None:
    """cudaProfilerStart / Stop, which `ncu --profile-from-start off` waits for."""
    import cupy

    runtime = cupy.cuda.runtime
    if hasattr(runtime, "profilerStart"):
        (runtime.profilerStart if on else runtime.profilerStop)()
    else:  # older or newer CuPy: the profiler module
        from cupy.cuda import profiler as prof

        (prof.start if on else prof.stop)()


def child(what: str) -> None:
    """Run under ncu (profiling between cudaProfilerStart and Stop): cupy.dot, or dot1 and dot3."""
    import cupy

    import course
    from course import dot

    rng = np.random.default_rng(0)
    if what == "cublas":
        from cupy import cublas

        for n in CUPY_NS:
            a = cupy.asarray(rng.standard_normal(n, dtype=np.float32))
            b = cupy.asarray(rng.standard_normal(n, dtype=np.float32))
            cublas.dot(a, b)  # warm-up
            cupy.cuda.Device().synchronize()
            profiler(True)
            cublas.dot(a, b)
            cupy.cuda.Device().synchronize()
            profiler(False)
            del a, b
        return
    if what == "cupydot":
        for n in CUPY_NS:
            a = cupy.asarray(rng.standard_normal(n, dtype=np.float32))
            b = cupy.asarray(rng.standard_normal(n, dtype=np.float32))
            cupy.dot(a, b)  # warm-up: the multiply and CUB's reduction compiled, memory pooled
            cupy.cuda.Device().synchronize()
            profiler(True)
            cupy.dot(a, b)
            cupy.cuda.Device().synchronize()
            profiler(False)
            del a, b
        return
    n = ARTICLE_N
    a = course.asarray(rng.standard_normal(n, dtype=np.float32))
    b = course.asarray(rng.standard_normal(n, dtype=np.float32))
    wave = course.device().sm_count * dot.exercises.resident_blocks(BLOCK)  # what dot3's own rule launches
    for name, grid in (("dot1", n // BLOCK), ("dot3", n // BLOCK), ("dot3", wave)):
        k = dot.kernel(name, np.float32)
        c = course.zeros(grid, np.float32)
        args = (a, b, c, np.int32(n))
        k((grid,), (BLOCK,), args, shared_mem=BLOCK * 4)  # warm-up
        cupy.cuda.Device().synchronize()
        profiler(True)
        k((grid,), (BLOCK,), args, shared_mem=BLOCK * 4)
        cupy.cuda.Device().synchronize()
        profiler(False)


def ncu_rows(what: str, out: Path) -> list[dict[str, str]]:
    """ncu's raw CSV rows (one per kernel and metric) for `child(what)`; stall metrics are dropped
    and asked again without them if this ncu does not know them."""
    exe = shutil.which("ncu")
    if not exe:
        raise RuntimeError("NO ncu on PATH")
    for metrics in (BASE_METRICS + STALL_METRICS, BASE_METRICS):
        if left() < 15:
            raise RuntimeError(f"not run: {left():.0f} s left of the script's {BUDGET_S} s")
        cmd = [exe, "--profile-from-start", "off", "--print-units", "base", "--csv",
               "--metrics", ",".join(metrics), sys.executable, __file__, CHILD, what]  # fmt: skip
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=max(10, left() - 5))
        (out / f"dot_ncu_{what}.csv").write_text(res.stdout + "\n" + res.stderr)
        body = [ln for ln in res.stdout.splitlines() if ln.startswith('"')]
        rows = list(csv.DictReader(body))
        if rows:
            return rows
        say(f"(ncu rc {res.returncode} with {len(metrics)} metrics: {res.stderr.strip()[-300:]})")
    raise RuntimeError("ncu gave no rows: see the csv beside this file")


def by_launch(rows: list[dict[str, str]]) -> list[tuple[str, dict[str, str]]]:
    """(kernel name, {metric: value with unit}) per profiled launch, in launch order."""
    launches: dict[str, tuple[str, dict[str, str]]] = {}
    for r in rows:
        key = r.get("ID", "")
        name = r.get("Kernel Name", "?")
        launches.setdefault(key, (name, {}))[1][r.get("Metric Name", "")] = (
            f"{r.get('Metric Value', '')} {r.get('Metric Unit', '')}".strip()
        )
    return [launches[k] for k in sorted(launches, key=lambda k: int(k) if k.isdigit() else 0)]


def short(name: str, width: int = 70) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def number(text: str) -> float:
    try:
        return float(text.split()[0].replace(",", ""))
    except (ValueError, IndexError):
        return float("nan")


@step("3. ncu: what cupy.dot launches on two 1-D float32 arrays, N = 2^24 then 2^28")
def ncu_cupy(out: Path) -> None:
    gpu_or_die()
    launches = by_launch(ncu_rows("cupydot", out))
    cols = ("launch__grid_size", "launch__block_size", "launch__registers_per_thread",
            "launch__waves_per_multiprocessor", "sm__warps_active.avg.pct_of_peak_sustained_active",
            "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum",
            "dram__bytes_write.sum", "gpu__time_duration.sum",
            "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio")  # fmt: skip
    say(
        "| kernel | grid | block | registers | waves per SM | achieved occupancy % | DRAM throughput % of peak"
        " | DRAM bytes read | DRAM bytes written | time | long-scoreboard stall ratio |"
    )
    say("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, m in launches:
        say(f"| {short(name)} | " + " | ".join(m.get(c, "—") for c in cols) + " |")
    say(f"\n({len(launches)} kernels profiled for {len(CUPY_NS)} calls: the first half is N = 2^24, the second 2^28;"
        " full names in dot_ncu_cupydot.csv)")  # fmt: skip


@step("4. ncu: dot1 and dot3 under the article's launch (N / 256 blocks of 256), N = 2^24; dot3 as one wave")
def ncu_article(out: Path) -> None:
    gpu_or_die()
    launches = by_launch(ncu_rows("article", out))
    say(
        "| kernel | grid | warp instructions | per block | time | achieved occupancy % | barrier stall ratio | long-scoreboard stall ratio |"
    )
    say("|---|---|---|---|---|---|---|---|")
    for name, m in launches:
        grid = number(m.get("launch__grid_size", "nan"))
        inst = number(m.get("smsp__inst_executed.sum", "nan"))
        if grid == ARTICLE_N // BLOCK:
            ARTICLE_INSTRUCTIONS.setdefault(name, inst)
        say(f"| {name} | {grid:.0f} | {inst:.4g} | {inst / grid:.0f} | {m.get('gpu__time_duration.sum', '—')} | "
            f"{m.get('sm__warps_active.avg.pct_of_peak_sustained_active', '—')} | "
            f"{m.get('smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio', '—')} | "
            f"{m.get('smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio', '—')} |")  # fmt: skip
    say("\n(the notebook says: under the article's launch dot3 issues more per block than dot1 — 9 barriers"
        " that all 8 warps run — so 'per block' should be larger for dot3 than for dot1)")  # fmt: skip


# ---------------------------------------------------------------- 5. spread


@step("5. spread of launch_table's article-launch times at N = 2^24 over 5 repeats (median of 20 each)")
def spread() -> None:
    gpu_or_die()
    from course import dot

    times: dict[str, list[float]] = {"device copy": [], "dot1": [], "dot2": [], "dot3": []}
    for _ in range(5):
        if left() < 5:
            say(f"(stopped early: {left():.0f} s left)")
            break
        for r in dot.launch_table(sizes=(ARTICLE_N,)):
            times[r["kernel"]].append(float(r["article µs"]))
    say("| kernel | runs | min µs | median µs | max µs |")
    say("|---|---|---|---|---|")
    for k, t in times.items():
        if t:
            say(f"| {k} | {len(t)} | {min(t):.4g} | {float(np.median(t)):.4g} | {max(t):.4g} |")
    if times["dot1"] and times["dot3"]:
        wins = sum(d1 < d3 for d1, d3 in zip(times["dot1"], times["dot3"]))
        say(f"- dot1 faster than dot3 under the article's launch in {wins} of {len(times['dot1'])} repeats")
        issue_bound(times)


def issue_bound(times: dict[str, list[float]]) -> None:
    """The least time the warp instructions ncu counted (step 4) can take, issued at
    ISSUE_PER_CLOCK per clock on every SM at the SM clock, against the measured medians."""
    import cupy

    runtime = cupy.cuda.runtime
    sms = runtime.deviceGetAttribute(16, 0)  # cudaDevAttrMultiProcessorCount
    try:  # cudaDeviceProp.clockRate, else cudaDevAttrClockRate (13)
        khz = runtime.getDeviceProperties(0).get("clockRate") or runtime.deviceGetAttribute(13, 0)
    except Exception as exc:  # a CUDA without either: say so, keep the rest of the step
        say(f"- issue bound: no SM clock from this CUDA ({type(exc).__name__}: {exc})")
        return
    clock_ghz = khz / 1e6  # the boost clock: the fastest issue can go
    say(
        f"- issue bound at {ISSUE_PER_CLOCK} warp instructions per clock per SM, {sms} SMs, {clock_ghz:.2f} GHz:"
    )
    for name, inst in ARTICLE_INSTRUCTIONS.items():
        if times.get(name):
            floor_us = inst / (ISSUE_PER_CLOCK * sms * clock_ghz * 1e3)
            median = float(np.median(times[name]))
            say(f"  - {name}: {inst:.4g} warp instructions need ≥ {floor_us:.1f} µs; measured {median:.1f} µs: "
                f"issue slots {100 * floor_us / median:.0f} % busy")  # fmt: skip


ARTICLE_INSTRUCTIONS: dict[
    str, float
] = {}  # step 4 fills it: kernel -> warp instructions at the article's launch


# ---------------------------------------------------------------- 6. fma in the PTX


@step("6. PTX: which versions fuse sum += a[i] * b[i] into an fma (no GPU needed)")
def fma_in_ptx() -> None:
    from course import backend, dot

    say("| kernel | fma.rn.f32 | mul.f32 | add.f32 | fma.rn.f64 |")
    say("|---|---|---|---|---|")
    with backend.using("emulator"):  # NVRTC's PTX, the same on either backend
        for name in ("dot1", "dot2", "dot3", "dot_shfl", "dot_vec4", "dot_f64", "dot_compensated"):
            ptx = dot.ENGINE.kernel(name, np.float32).module.compiled.ptx
            body = re.search(rf"\.entry\s+{name}\s*\((.*?)\n\}}\n", ptx, re.S)
            text = body.group(0) if body else ""
            counts = [len(re.findall(p, text)) for p in
                      (r"fma\.rn(\.ftz)?\.f32", r"\bmul(\.rn)?(\.ftz)?\.f32", r"\badd(\.rn)?(\.ftz)?\.f32", r"fma\.rn\.f64")]  # fmt: skip
            say(f"| {name} | " + " | ".join(map(str, counts)) + " |")
    say("- the notebook says: dot2, dot3, dot_shfl and dot_vec4 fuse each product into the sum (fma.rn.f32, no"
        " mul.f32); dot1 multiplies first (mul.f32: the product rounded to float32), then adds")  # fmt: skip


# ---------------------------------------------------------------- 7. dot1_article's time


@step("7. dot1_article at N = 1024: the int chain, the printf, and the same chain in float")
def article_chain() -> None:
    gpu_or_die()
    import course
    from course import bench, compiler, dot
    from course.dot.lesson import muted_printf
    from course.dot.topic import options
    from course.engine import Launch
    from course.module import Module

    n = 1024
    a, b = (course.asarray(x) for x in dot.article_inputs(n))
    c = course.zeros(n, np.float32)
    code = compiler.read_kernel("dot.cu")
    quiet = code.replace('printf("sum Calculated on Device: %.6g\\n", *c);', "")
    assert quiet != code, "dot1_article's printf line not found in dot.cu"
    opts = (*options(np.dtype(np.float32)), f"-DARTICLE_N={n}")
    plain = Module(code=quiet, options=opts).get_function("dot1_article")
    launches = {
        "dot1_article (int sum, printf)": Launch(dot.article_kernel("dot1_article", n), (1, 1, 1), (n, 1, 1), (a, b, c)),
        "dot1_article without its printf (int sum)": Launch(plain, (1, 1, 1), (n, 1, 1), (a, b, c)),
        "dot1, one block of 1024 (float sum, no printf)": Launch(
            dot.kernel("dot1", np.float32), (1, 1, 1), (n, 1, 1), (a, b, c, np.int32(n)), shared_mem=4 * n),
        "dot2_article, 4 blocks of 256 (the launch floor)": Launch(
            dot.article_kernel("dot2_article", n), (4, 1, 1), (256, 1, 1), (a, b, c)),
    }  # fmt: skip
    with muted_printf():  # dot1_article's printf, once per launch; nothing said in here (stdout is muted)
        us = {label: bench.median_us([launch], runs=20) for label, launch in launches.items()}
    say("| kernel | µs (median of 20) |")
    say("|---|---|")
    for label, t in us.items():
        say(f"| {label} | {t:.1f} |")
    say("- the notebook says: dot1_article's time is mostly not 1024 float adds in a chain (the float row); the rest"
        " is the int conversions in every step of the chain and the device printf")  # fmt: skip


# ---------------------------------------------------------------- 8. cuBLAS


@step("8. ncu: what cupy.cublas.dot (cublasSdot) launches, float32, N = 2^24 then 2^28")
def ncu_cublas(out: Path) -> None:
    gpu_or_die()
    launches = by_launch(ncu_rows("cublas", out))
    cols = ("launch__grid_size", "launch__block_size", "launch__registers_per_thread",
            "sm__warps_active.avg.pct_of_peak_sustained_active",
            "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum",
            "dram__bytes_write.sum", "gpu__time_duration.sum")  # fmt: skip
    say("| kernel | grid | block | registers | achieved occupancy % | DRAM throughput % of peak | DRAM bytes read"
        " | DRAM bytes written | time |")  # fmt: skip
    say("|---|---|---|---|---|---|---|---|---|")
    for name, m in launches:
        say(f"| {short(name)} | " + " | ".join(m.get(c, "—") for c in cols) + " |")
    say("- the notebook says: cuBLAS's dot is one fused pass (a and b read once, 8 bytes per element), unlike"
        " cupy.dot's multiply into a temporary and CUB's sum (16 bytes per element)")  # fmt: skip


# ---------------------------------------------------------------- 9. the probe against dot_vec4


@step("9. course.probe's read stream beside dot_vec4 at one wave, N = 2^28, in the same run")
def probe_against_vec4() -> None:
    gpu_or_die()
    import course
    from course import bench, dot

    dev = course.device()
    n = 2**28
    rng = np.random.default_rng(0)
    a = course.asarray(rng.standard_normal(n, dtype=np.float32))
    b = course.asarray(rng.standard_normal(n, dtype=np.float32))
    us = bench.median_us([dot.ENGINE.plan("dot_vec4", a, b).launches[0]], runs=20)
    copy_us = 1e3 * float(np.median(bench.time_copy(8 * n, runs=20)))
    say(f"- course.probe read stream: {dev.read_stream_gbps} GB/s ({dev.source('read_stream_gbps')})")
    say(f"- dot_vec4, one wave, 2^28 (no inputs rotated: 2 GB is 40× the L2): {8 * n / us / 1e3:.0f} GB/s;"
        f" device copy (read + write) {8 * n / copy_us / 1e3:.0f} GB/s")  # fmt: skip
    say(
        "- the notebook says: dot_vec4 reads faster than the probe's stream, so the probe's figure is a floor"
    )
    del a, b
    bench.free_gpu_memory()


def main() -> None:
    if CHILD in sys.argv:
        child(sys.argv[sys.argv.index(CHILD) + 1])
        return
    if len(sys.argv) < 2:
        sys.exit("usage: python3 scripts/gpu_facts_dot.py OUT_DIR")
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("COURSE_BACKEND", "cupy")
    say("# Notebook 01 (dot): GPU facts its prose states")
    device()
    sass(out)
    ncu_cupy(out)
    ncu_article(out)
    spread()
    fma_in_ptx()
    article_chain()
    ncu_cublas(out)
    probe_against_vec4()
    sys.exit(REPORT.finish(out, "gpu_facts_dot"))


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
