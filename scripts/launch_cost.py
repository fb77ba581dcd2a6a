"""What a launch costs the host: `course.Kernel` beside `cupy.RawKernel`, same kernel, same run.

    python scripts/launch_cost.py --out docs/launch-cost.md        (on a GPU machine)

A trivial kernel is launched CALLS times through each API, alternating in rounds so both see
the same machine state; each call is timed on the host with perf_counter_ns and the stream is
synchronised once at the end of each round. The figure is the median host time per call: what
a notebook loop of small launches pays. The GPU work itself (a few µs) runs behind the host.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import course

SOURCE = r"""
extern "C" __global__ void noop(float* x, int n) {
    if (threadIdx.x == 0 && n < 0) x[0] = 0.0f;  // never true: the launch is all there is
}
"""
CALLS = 10_000  # per API, in all
ROUNDS = 10
WARMUP = 1_000


def per_call_ns(launch, calls: int) -> list[int]:
    import cupy

    out = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        launch()
        out.append(time.perf_counter_ns() - t0)
    cupy.cuda.get_current_stream().synchronize()
    return out


def measure() -> dict[str, list[int]]:
    import cupy

    if course.device().backend != "cupy":
        sys.exit("launch cost is a GPU figure: no GPU here")
    x, n = cupy.zeros(16, np.float32), np.int32(16)
    mine = course.Module(code=SOURCE).get_function("noop")
    theirs = cupy.RawKernel(SOURCE, "noop", options=("-ftz=true",))
    apis = {
        "course.Kernel": lambda: mine((1,), (32,), (x, n)),
        "cupy.RawKernel": lambda: theirs((1,), (32,), (x, n)),
    }
    for launch in apis.values():
        per_call_ns(launch, WARMUP)
    times: dict[str, list[int]] = {name: [] for name in apis}
    for _ in range(ROUNDS):
        for name, launch in apis.items():
            times[name] += per_call_ns(launch, CALLS // ROUNDS)
    return times


def report(times: dict[str, list[int]]) -> str:
    us = {name: statistics.median(t) / 1e3 for name, t in times.items()}
    ratio = us["course.Kernel"] / us["cupy.RawKernel"]
    import cupy

    lines = [
        f"# What a launch costs the host, on {course.device().name}",
        "",
        f"Measured {datetime.now(timezone.utc).date()} with `python scripts/launch_cost.py` "
        f"(CuPy {cupy.__version__}): a trivial kernel launched {CALLS:,} times through each API in "
        f"{ROUNDS} alternating rounds, each call timed on the host, the stream synchronised after each "
        "round. Median host time per call:",
        "",
        "| API | µs per call (median) | 10th–90th percentile µs |",
        "| --- | ---: | --- |",
    ]
    for name, t in times.items():
        q = np.percentile(np.array(t) / 1e3, [10, 90])
        lines.append(f"| `{name}` | {us[name]:.2f} | {q[0]:.2f}–{q[1]:.2f} |")
    lines += [
        "",
        f"`course.Kernel` costs **{ratio:.2f}×** what `cupy.RawKernel` does (the goal: at most 1.5×). "
        "It validates a launch (grid and block limits, shared memory, every argument against the "
        "kernel's C parameters) the first time it sees an argument signature, and after that only "
        "looks the signature up: the types of the arguments, and for arrays their dtype and contiguity.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help="write the markdown here (default: print it)")
    args = p.parse_args()
    text = report(measure())
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
