"""Tune the one-pass reduction on a GPU: loads in flight, block size, blocks per SM.

    python scripts/reduction_tuning.py > docs/reduction-tuning.md     (on a GPU machine)

Every variant is timed by course.bench in the same run as the copy and cupy.sum.
"""

from __future__ import annotations

import itertools

import numpy as np

import course
from course import bench, reduction
from course.engine import Launch
from course.reduction.topic import TYPES

SIZES = (2**22, 2**24, 2**28)
VARIANTS = [
    (loads, block, per_sm)
    for loads, block, per_sm in itertools.product((2, 4, 8), (256, 512, 1024), (1, 2, 4, 8))
    if block * per_sm <= 2048
]


def variant(dtype: str, loads: int, block: int, per_sm: int) -> tuple[str, bench.Setup]:
    elem, acc, acc_dt = TYPES[np.dtype(dtype)]
    mod = course.Module.from_file(
        "reduction.cu", options=(f"-DELEM={elem}", f"-DACC={acc}", f"-DLOADS={loads}")
    )
    k = mod.get_function("reduce_single_pass")
    grid = course.device().sm_count * per_sm
    name = f"single_pass loads={loads} block={block} blocks/SM={per_sm}"

    def setup(inputs: bench.Inputs) -> list[Launch]:
        x = inputs.arrays[0]
        out, partial = course.zeros(1, acc_dt), course.zeros(grid, acc_dt)
        return [Launch(k, (grid, 1, 1), (block, 1, 1), (x, partial, out, np.int32(inputs.n)))]

    return name, setup


def main() -> None:
    print(f"# One-pass reduction tuning on {course.device().name}\n")
    print("Measured with `python scripts/reduction_tuning.py` (course.bench timing: median of 20 runs,")
    print("CUDA events, rotating inputs). × CuPy > 1 means faster than cupy.sum.\n")
    for dtype in ("float32", "int32"):
        cases = dict(variant(dtype, *v) for v in VARIANTS)
        names = list(cases)
        for n in SIZES:
            records = bench.run(bench.WithCases(reduction.ENGINE, cases), n, dtypes=[dtype])
            base = {r["kernel"]: r for r in records}
            print(f"\n## {dtype}, N = 2^{n.bit_length() - 1}\n")
            print(f"copy {base['copy']['ms'] * 1e3:.1f} µs, cupy.sum {base['cupy.sum']['ms'] * 1e3:.1f} µs\n")
            print("| variant | µs | % of copy | × cupy.sum |\n|---|---:|---:|---:|")
            best = sorted((r for r in records if r["kernel"] in names), key=lambda r: r["ms"])
            for r in best[:8]:
                print(f"| {r['kernel']} | {r['ms'] * 1e3:.1f} | {r['pct_of_copy']:.1f} | {r['x_cupy']:.2f} |")
            bench.free_gpu_memory()


if __name__ == "__main__":
    main()
