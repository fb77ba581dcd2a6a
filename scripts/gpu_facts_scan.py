"""The hardware facts notebook 04's prose states that no notebook cell prints, read on a GPU.

    python3 scripts/gpu_facts_scan.py OUT_DIR       (on a GPU machine; about a minute)

Prints, and writes to OUT_DIR/gpu_facts_scan.md:

1. the device;
2. registers of lookback_scan<128> from NVRTC's cubin for this GPU, with `__launch_bounds__(128, 8)`
   and with `__launch_bounds__(128)` only, and what the driver loads (num_regs, blocks per SM):
   the .cu header's and the notebook's "64 registers, 8 blocks" against the tuning run's "56, 9";
3. the SASS of scan_tiles<128> and lookback_scan<128> (scan.cu compiled as the course compiles it,
   read with `cuobjdump -sass`): SHFL.UP (warp_scan: 5 per call), BAR.SYNC (block_exclusive_scan:
   2 in scan_tiles), no BAR between warp_scan's first and fifth SHFL.UP, LDG.E.128/STG.E.128 (the
   16-byte tile loads), ATOMG (the ticket), NANOSLEEP (the pauses), CCTL (the L2 prefetch);
4. the GPU table of the tiled versions at 2^20, 2^24 and 2^28 with CUB's DeviceScan beside them
   (`scan.speed_table`), and the claims the "How fast" prose reads from it: scan-then-propagate
   under half of the copy at every size, lookback the course's closest to the copy at 2^28,
   cupy.cumsum slower than scan-then-propagate at 2^28; CUB's row as `course.bench` times it
   (`BenchSpec.cub`: `cupy.cuda.cub.device_scan`), or, where that is missing, `cub::DeviceScan::InclusiveSum` built with nvcc and called through
   ctypes; and `cupy.cumsum` with CuPy's CUB accelerator on, off and as loaded, with and without out=
   (CUB after a copy, the notebook says); scan-then-propagate's % of copy at 2^22 (above half?);
5. exercise 8 (`scan.exercises.block`): lookback at N = 300 000 for blocks 32, 64, 128, 256, five
   repeats: medians, spread, the blocks within 10 % of the fastest, against the emulator rule's
   {64, 128} (`exercises.block_model`: the busiest SM's bytes plus the look-back's chain): AGREE
   or DISAGREE;
6. exercise 7's solution timed (`scan.exercises.propagate` on a GPU): the element-wise add against
   add_tile_prefix and a copy; exercise 1's and 3's solutions timed;
7. `one_block_table`: the naive scan's time over the copy's and over Kogge-Stone's ("several times
   longer"); the double buffer the fastest one-block kernel, Brent-Kung no faster than Kogge-Stone,
   `cupy.cumsum` slower than every course kernel but the naive one (the notebook's reading);
8. `scan.pass_table()` at 2^28: scan_tiles alone, the totals' launches, add_tile_prefix alone, the
   whole scan-then-propagate and lookback, and the claims the text reads from it (lookback beside
   scan_tiles alone: what the look-back's waits cost on this GPU; which big pass is further from a
   copy of its bytes);
9. `scan.little_table()`: the read stream and idle DRAM latency course.probe measured, and the bytes
   in flight per SM (the text's "2940 GB/s × 350 ns ≈ 1.0 MB, some 8 KB per SM").

Every step that cannot run says why (no GPU, no cuobjdump, no nvcc) and the others still run; the
exit status is 1 when any step failed.
"""

from __future__ import annotations

import ctypes
import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/facts.py, when loaded by path
import facts

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from course.sass import disassemble, opcode  # noqa: E402

BUDGET_S = 85  # the lead's limit is 90 s for the whole script
MODEL_ACCEPTS = {64, 128}  # scan.exercises.block on the emulator (tests/test_scan.py holds it there)
TABLE_SIZES = (2**20, 2**24, 2**28)

REPORT = facts.Report()
say, step = REPORT.say, REPORT.step
on_gpu, gpu_or_die, arch = facts.on_gpu, facts.gpu_or_die, facts.gpu_arch


def left() -> float:
    return REPORT.left(BUDGET_S)


@step("1. device")
def device() -> None:
    import course

    facts.describe_gpu(say)
    say(f"- course.device(): {course.device()}")


# ---------------------------------------------------------------- 2. registers

BOUND = "__launch_bounds__(BLOCK, 1024 / BLOCK) lookback_scan"


def scan_source(min_blocks: bool = True) -> str:
    from course import compiler

    src = compiler.read_kernel("scan.cu")
    if BOUND not in src:
        raise RuntimeError(f"scan.cu no longer has {BOUND!r}")
    return src if min_blocks else src.replace(BOUND, "__launch_bounds__(BLOCK) lookback_scan")


@step("2. registers of lookback_scan<128> (NVRTC cubin; the driver's on a GPU)")
def registers() -> None:
    from course import cubin
    from course.scan.topic import options

    opts = options(np.dtype(np.float32))
    names = ("lookback_scan<128>", "scan_tiles<128>")
    a = arch()
    say(f"- NVRTC cubin for {a}, options {opts}:")
    for label, bound in (("__launch_bounds__(128, 8)", True), ("__launch_bounds__(128) only", False)):
        regs = cubin.registers(
            scan_source(bound), filename="scan.cu", options=opts, name_expressions=names, arch=a
        )
        mine = {k: v for k, v in regs.items() if "lookback_scan" in k or "scan_tiles" in k}
        say(f"  - {label}: " + ", ".join(f"{k}: {v}" for k, v in sorted(mine.items())))
    say(
        "- the notebook and the .cu header say: the tuning run's compiler 72 -> 56 (9 blocks); NVRTC 13: 64 (8 blocks)"
    )
    if not on_gpu():
        say("- (no GPU: the driver's numbers are not read)")
        return
    from course import scan

    say("- what the driver loaded, `scan.residency_table()` on this GPU:")
    say("```\n" + repr(scan.residency_table()) + "\n```")


# ---------------------------------------------------------------- 3. SASS


def cubin(a: str) -> bytes:
    """scan.cu (as the notebook compiles it) for `a`, with the two tiled kernels at blocks of 128."""
    from course import compiler
    from course.scan.topic import options

    opts = compiler.compile_options((f"-arch={a}", *options(np.dtype(np.float32))))
    return compiler.compile_cubin(scan_source(), "scan.cu", opts, ("scan_tiles<128>", "lookback_scan<128>"))


@step("3. SASS of scan_tiles<128> and lookback_scan<128> (cuobjdump -sass)")
def sass(out: Path) -> None:
    a = arch()
    blob = cubin(a)
    say(f"- cubin: scan.cu for {a} ({len(blob)} bytes)")
    bodies = disassemble(blob, keep=out / "scan_sass.txt")
    kinds = (
        "SHFL.UP",
        "SHFL.IDX",
        "BAR.SYNC",
        "WARPSYNC",
        "LDG.E.128",
        "STG.E.128",
        "LDS",
        "STS",
        "ATOMG",
        "NANOSLEEP",
        "CCTL",
    )
    say("| kernel | SASS instructions | " + " | ".join(kinds) + " |")
    say("|---|---|" + "---|" * len(kinds))
    for name, body in bodies.items():
        if "scan_tiles" not in name and "lookback_scan" not in name:
            continue
        ops = [opcode(i) for i in body]
        counts = [sum(o.startswith(k) for o in ops) for k in kinds]
        say(f"| {name} | {len(ops)} | " + " | ".join(map(str, counts)) + " |")
        ups = [k for k, o in enumerate(ops) if o.startswith("SHFL.UP")]
        if len(ups) >= 5:
            first, fifth = ups[0], ups[4]
            between = [o for o in ops[first:fifth] if o.startswith(("BAR", "LDS", "STS"))]
            say(
                f"  - {name}: warp_scan's first five SHFL.UP at instructions {ups[:5]}; between the first and "
                f"the fifth: {len(between)} BAR/LDS/STS ({', '.join(between) or 'none'}): "
                + (
                    "no barrier, no shared memory, as the notebook says"
                    if not between
                    else "NOT as the notebook says"
                )
            )


# ---------------------------------------------------------------- 4. the GPU table with CUB


CUB_SRC = r"""
#include <cub/device/device_scan.cuh>
extern "C" int cub_inclusive_sum(const float* in, float* out, int n, void* temp, size_t* temp_bytes) {
    return (int)cub::DeviceScan::InclusiveSum(temp, *temp_bytes, in, out, n);
}
"""


def nvcc_cub(out: Path):
    """cub::DeviceScan::InclusiveSum built with nvcc into a shared library: a step maker, or None."""
    from course.bench.cub import nvcc_library

    try:
        lib = nvcc_library(CUB_SRC, arch(), timeout=max(10, int(left()) - 20))
    except RuntimeError as exc:
        say(f"- CUB cannot be built here either: {exc}")
        return None
    so = ctypes.CDLL(str(lib))
    so.cub_inclusive_sum.restype = ctypes.c_int
    so.cub_inclusive_sum.argtypes = [
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_size_t),
    ]

    def make(x):
        import cupy

        y = cupy.empty_like(x)
        size = ctypes.c_size_t(0)
        so.cub_inclusive_sum(x.data.ptr, y.data.ptr, x.size, None, ctypes.byref(size))
        temp = cupy.empty(max(1, size.value), np.uint8)
        run = lambda: so.cub_inclusive_sum(x.data.ptr, y.data.ptr, x.size, temp.data.ptr, ctypes.byref(size))  # noqa: E731
        run()
        cupy.cuda.runtime.deviceSynchronize()
        if not bool(cupy.allclose(y, cupy.cumsum(x), rtol=1e-4, atol=1e-2)):
            raise RuntimeError("nvcc-built CUB scan disagrees with cupy.cumsum")
        return run

    return make


@step("4. the tiled versions, CUB's DeviceScan and cupy.cumsum at 2^20, 2^24, 2^28")
def table(out: Path) -> None:
    gpu_or_die()
    import cupy

    from course import bench, scan
    from course.scan import lesson

    records = scan.speed_against_n(sizes=TABLE_SIZES)
    reachable = any(r["kernel"] == lesson.CUB for r in records)  # course.bench timed CUB (cupy.cuda.cub)
    say(f"- CUB through cupy.cuda.cub: {'reachable' if reachable else 'NOT reachable in this CuPy'}")
    rows = scan.speed_table(records, sizes=TABLE_SIZES)
    say("```\n" + repr(rows) + "\n```")
    if not reachable and left() > 40:
        make = nvcc_cub(out)
        if make is not None:
            for r in records:
                if r["kernel"] != "lookback":
                    continue
                n = r["n"]
                run = make(cupy.asarray(lesson.example(n)))
                ms = statistics.median(bench.time_runs([run], runs=20))
                say(f"- nvcc-built cub::DeviceScan::InclusiveSum at 2^{int(np.log2(n))}: {1e3 * ms:.1f} µs, "
                    f"{100 * r['copy_ms'] / ms:.1f} % of copy, lookback {r['pct_of_copy']:.1f} % of copy")  # fmt: skip
                bench.free_gpu_memory()
    by = {(r["N"], r["kernel"]): r for r in rows}
    say("\nClaims the prose reads from this table:")
    for n in TABLE_SIZES:
        key = f"2^{int(np.log2(n))}"
        stp = by.get((key, "scan_then_propagate"))
        if stp:
            say(
                f"- {key}: scan-then-propagate at {stp['% of copy']:.1f} % of copy: under half? {stp['% of copy'] < 50}"
            )
    course_rows = [r for r in rows if r["N"] == "2^28" and r["kernel"] in ("scan_then_propagate", "lookback")]
    if course_rows:
        best = max(course_rows, key=lambda r: r["% of copy"])
        say(
            f"- 2^28: the course's closest to the copy: {best['kernel']} ({best['% of copy']:.1f} %): lookback? {best['kernel'] == 'lookback'}"
        )
    cum, stp = by.get(("2^28", "cupy.cumsum")), by.get(("2^28", "scan_then_propagate"))
    if cum and stp:
        say(
            f"- 2^28: cupy.cumsum {cum['% of copy']:.1f} % < scan-then-propagate {stp['% of copy']:.1f} %? {cum['% of copy'] < stp['% of copy']}"
        )
    cub = by.get(("2^28", lesson.CUB))
    lb = by.get(("2^28", "lookback"))
    if cub and lb:
        say(
            f"- 2^28: CUB {cub['% of copy']:.1f} % of copy against lookback {lb['% of copy']:.1f} % (the prose asks the reader to compare them)"
        )
    # cupy.cumsum with CuPy's CUB accelerator on and off
    from cupy._core import _accelerator

    n = 2**24
    xs = cupy.asarray(lesson.example(n))
    ys = cupy.empty_like(xs)
    saved = _accelerator.get_routine_accelerators()
    say(f"- CuPy's routine accelerators as loaded (CUPY_ACCELERATORS): {saved!r}")
    times = {}
    for label, acc in (("accelerators off", []), ("cub on", ["cub"]), ("as loaded", saved)):
        _accelerator.set_routine_accelerators(acc)
        times[label] = 1e3 * statistics.median(bench.time_runs([lambda: cupy.cumsum(xs)], runs=20))
        times[label + ", out=y"] = 1e3 * statistics.median(
            bench.time_runs([lambda: cupy.cumsum(xs, out=ys)], runs=20)
        )
    _accelerator.set_routine_accelerators(saved)
    say("- cupy.cumsum at 2^24: " + ", ".join(f"{k} {v:.1f} µs" for k, v in times.items())
        + " (the notebook: with CUB on, cumsum copies x into its output, then CUB scans it in place;"
        " CUB off is CuPy's own kernel, slower)")  # fmt: skip
    bench.free_gpu_memory()
    # S201: at 2^22 y (16 MB) fits the H100's 50 MB L2, and scan-then-propagate may pass its 4N bound
    mid = scan.speed_against_n(sizes=(2**22,))
    pct = {r["kernel"]: r["pct_of_copy"] for r in mid if "pct_of_copy" in r}
    if "scan_then_propagate" in pct:
        p22 = pct["scan_then_propagate"]
        say(f"- 2^22: scan-then-propagate at {p22:.1f} % of copy: above the half-copy bound? {p22 > 50} "
            "(the notebook: 'a little above the bound, just over half the copy's speed', read off the plot)")  # fmt: skip
    bench.free_gpu_memory()


# ---------------------------------------------------------------- 5. exercise 8's block choice


@step("5. exercise 8: lookback at N = 300 000, blocks 32-256, five repeats")
def block_choice() -> None:
    gpu_or_die()
    from course.scan import exercises

    repeats = [exercises.block_speeds(runs=50) for _ in range(5)]
    say(
        "| block | GB/s (median of 5 repeats) | min | max | tiles | windows walked | busy SMs | KB per SM | model µs |"
    )
    say("|---|---|---|---|---|---|---|---|---|")
    med = {}
    for b in sorted(repeats[0]):
        v = [r[b] for r in repeats]
        med[b] = statistics.median(v)
        m = exercises.block_model(b)  # on this GPU's SMs and read stream (the rule's parts)
        say(
            f"| {b} | {med[b]:.0f} | {min(v):.0f} | {max(v):.0f} | {exercises.tiles(b)} | {exercises.windows_walked(b)} "
            f"| {m['busy SMs']} | {m['KB per SM']:.0f} | {m['spread µs'] + m['chain µs']:.2f} |"
        )
    best = max(med.values())
    within = {b for b, v in med.items() if v >= 0.9 * best}
    per_repeat = [{b for b, v in r.items() if v >= 0.9 * max(r.values())} for r in repeats]
    say(
        f"- within 10 % of the fastest (medians): {sorted(within)}; in each repeat: {[sorted(s) for s in per_repeat]}"
    )
    verdict = "AGREE" if within == MODEL_ACCEPTS else "DISAGREE"
    say(f"- the emulator rule accepts {sorted(MODEL_ACCEPTS)}: **{verdict}**")


# ---------------------------------------------------------------- 6. the kernel exercises' solutions timed


@step("6. exercises 1, 3 and 7: the solutions timed on this GPU")
def kernels_timed() -> None:
    gpu_or_die()
    import importlib.util

    from course.scan import exercises

    spec = importlib.util.spec_from_file_location("solutions_scan", ROOT / "solutions" / "scan.py")
    sol = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sol)
    for ex, answer in (
        (exercises.propagate, sol.PROPAGATE),
        (exercises.exclusive, sol.EXCLUSIVE),
        (exercises.warp, sol.WARP),
    ):
        if left() < 10:
            say(f"- {ex.key}: skipped (time budget)")
            continue
        say(f"- {ex.key}:\n```\n{ex.check(answer)}\n```")


# ---------------------------------------------------------------- 7. one block at N = 1024


@step("7. one_block_table: the naive scan against the copy and Kogge-Stone")
def one_block() -> None:
    gpu_or_die()
    from course import scan

    rows = scan.one_block_table(runs=50)
    say("```\n" + repr(rows) + "\n```")
    us = {r["version"]: r["µs"] for r in rows}
    say(f"- naive / copy: {us['naive'] / us['device copy']:.1f}×, naive / kogge_stone: {us['naive'] / us['kogge_stone']:.1f}× "
        "(the notebook: 'several times longer'); trees and Kogge-Stone / copy: "
        + ", ".join(f"{k} {us[k] / us['device copy']:.1f}×" for k in ("kogge_stone", "brent_kung", "blelloch")))  # fmt: skip
    one = {k: us[k] for k in ("kogge_stone", "kogge_stone_double_buffer", "brent_kung")}
    say("- above the copy: " + ", ".join(f"{k} {v - us['device copy']:.2f} µs" for k, v in one.items())
        + f"; the double buffer the fastest of the three? {min(one, key=one.get) == 'kogge_stone_double_buffer'}; "
        f"Brent-Kung no faster than Kogge-Stone? {us['brent_kung'] >= us['kogge_stone']}")  # fmt: skip
    course = [k for k in us if k not in ("device copy", "cupy.cumsum", "naive")]
    say(f"- cupy.cumsum {us['cupy.cumsum']:.2f} µs slower than every course kernel but the naive one? "
        f"{all(us['cupy.cumsum'] > us[k] for k in course)}")  # fmt: skip


# ---------------------------------------------------------------- 8. the passes at 2^28


@step("8. pass_table: each launch of scan-then-propagate alone at 2^28, beside lookback")
def passes() -> None:
    gpu_or_die()
    from course import scan

    rows = scan.pass_table()
    say("```\n" + repr(rows) + "\n```")
    pct = {r["pass"].split(":")[0].split(",")[0]: r["% of copy"] for r in rows}
    tiles, look = pct["scan_tiles alone"], pct["lookback"]
    say(f"- lookback {look:.1f} % of copy against scan_tiles alone {tiles:.1f} %: the look-back's waits cost "
        f"{tiles - look:.1f} points on this GPU at 2^28 (the H200's tuning log: 97.4 against 88.2)")  # fmt: skip
    add = pct["add_tile_prefix alone"]
    further = "add_tile_prefix" if add < tiles else "scan_tiles"
    say(f"- scan-then-propagate's big passes, each against a copy of its bytes: scan_tiles {tiles:.1f} %, "
        f"add_tile_prefix {add:.1f} %: further from its copy: {further}")  # fmt: skip


# ---------------------------------------------------------------- 9. Little's law on this GPU


@step("9. little_table: the probe's read stream and latency, bytes in flight per SM")
def little() -> None:
    gpu_or_die()
    from course import occupancy, scan

    say("```\n" + repr(scan.little_table()) + "\n```")
    say(f"- course.occupancy.bytes_needed_per_sm(): {occupancy.bytes_needed_per_sm()} B "
        "(the text: some 8 KB per SM on the H100)")  # fmt: skip


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    say("# GPU facts for notebook 04 (scan)")
    device()
    registers()
    sass(out)
    table(out)
    block_choice()
    kernels_timed()
    one_block()
    passes()
    little()
    return REPORT.finish(out, "gpu_facts_scan")


if __name__ == "__main__":
    sys.exit(main())
