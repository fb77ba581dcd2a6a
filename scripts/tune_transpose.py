"""Tune the transpose kernels on a GPU: every version of course/kernels/transpose.cu, then the
knobs of the fast ones (tile, threads per tile, elements per thread, vector width, tile order)
at the goal sizes, each beside a device-to-device copy of the same bytes and CuPy's
`cupy.ascontiguousarray(a.T)`, all timed by course.bench in one run.

    OUT=/tmp/out python scripts/tune_transpose.py             (from the repository root, on a GPU)
    OUT=/tmp/out python scripts/tune_transpose.py --beyond    (the candidates beyond the sweep, ~30 s)

Stage 1 times every version and every (tile shape, rows, vec) of transpose_vec at every size;
stage 2 takes the three best of those on the float32 sizes and times them there again with
the tiles visited in bands of GROUP tile rows (transpose_grouped). Every configuration's answer
is checked against NumPy's a.T (computed once per size, uploaded) before it is timed; a wrong
one is reported, not timed. Compiling takes ~30-40 s of the run (NVRTC, ~100 instantiations).
Prints one table per size and writes every row to $OUT/tune_transpose.json.

--beyond times the candidates of `candidates()` instead (tile orders, cache hints, pipelined
tiles: kernels appended to transpose.cu's source, see EXTRA), 3 passes each, and writes
$OUT/tune_transpose_beyond.json; docs/tuning/transpose.md holds what its runs found.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

import course
from course import bench, compiler
from course.engine import Launch

KERNEL_FILE = "transpose.cu"
C_TYPES = {"float32": "float", "int32": "int"}
SIZES = [((1111, 113), "int32"), ((8192, 8192), "float32"), ((16384, 16384), "float32")]
RUNS = 20
GOAL_PCT, GOAL_X_CUPY, GOAL_ARTICLE = 95.0, 3.3, 2.0  # % of copy, x CuPy, article: at most 2x the copy's time
GROUPS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024)
STAGE2_BEST = 3


@dataclass(frozen=True)
class Config:
    version: str  # the kernel's base name in transpose.cu
    block: tuple[int, int]
    tile: tuple[int, int] = (0, 0)  # (rows, columns) of the tile; (0, 0): the block is the tile
    rows: int = 0
    vec: int = 1
    group: int = 0  # transpose_grouped's band height in tiles; 0: a 2-D grid

    @property
    def kernel(self) -> str:
        (tr, tc), r, v, g = self.tile, self.rows, self.vec, self.group
        return {
            "transpose_article": f"transpose_article<{self.block[0]}>",
            "transpose_rows": f"transpose_rows<{tr}, {r}>",
            "transpose_vec": f"transpose_vec<{tr}, {tc}, {r}, {v}>",
            "transpose_grouped": f"transpose_grouped<{tr}, {tc}, {r}, {v}, {g}>",
        }.get(self.version, self.version)

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1]

    @property
    def per_thread(self) -> int:
        return self.tile[0] * self.tile[1] // self.threads if self.tile[0] else 1

    @property
    def label(self) -> str:
        b = f"{self.block[0]}x{self.block[1]}"
        if not self.tile[0]:
            return f"{self.version} block={b}"
        knobs = f"tile={self.tile[0]}x{self.tile[1]} block={b} ({self.per_thread}/thread) vec={self.vec}"
        return f"{self.version} {knobs}" + (f" group={self.group}" if self.group else "")

    def grid(self, m: int, n: int) -> tuple[int, ...]:
        bx, by = self.block
        if self.version == "transpose_naive_cols":  # threads laid over the output
            return (-(-m // bx), -(-n // by))
        tr, tc = self.tile
        if not tr:
            return (-(-n // bx), -(-m // by))
        if self.group:
            return (-(-n // tc) * -(-m // tr),)
        return (-(-n // tc), -(-m // tr))

    def shared_bytes(self) -> int:
        bx, by = self.block
        return {"transpose_tiled": bx * by * 4, "transpose_padded": (bx + 1) * by * 4}.get(self.version, 0)


def stage1() -> list[Config]:
    configs = [
        Config(v, b)
        for v in ("copy", "transpose_naive", "transpose_naive_cols", "transpose_tiled", "transpose_padded")
        for b in ((32, 8), (32, 32))
    ]
    configs += [Config("transpose_article", (b, b)) for b in (16, 32)]
    configs += [Config("transpose_rows", (t, r), (t, t), r) for t, r in [(32, 4), (32, 8), (32, 16), (32, 32),
                                                                     (64, 8), (64, 16)]]  # fmt: skip
    for tile in (32, 64):  # square tiles: every vector width and threads per tile
        for vec in (1, 2, 4):
            for rows in (4, 8, 16, 32, 64):
                threads = 32 // vec * rows
                if (rows <= tile and 64 <= threads <= 1024) or (tile, rows, vec) == (32, 4, 4):
                    configs.append(Config("transpose_vec", (32 // vec, rows), (tile, tile), rows, vec))
    for tile in ((32, 64), (64, 32), (64, 128), (128, 64)):  # non-square tiles, 16-byte accesses
        for rows in (8, 16, 32):
            if rows <= min(tile) and tile[0] * tile[1] // (8 * rows) <= 64:
                configs.append(Config("transpose_vec", (8, rows), tile, rows, 4))
    return configs


def stage2(best: list[Config]) -> list[Config]:
    return [Config("transpose_grouped", c.block, c.tile, c.rows, c.vec, g) for c in best for g in GROUPS]


def build(configs: list[Config], dtypes: tuple[str, ...] = tuple(C_TYPES)) -> dict[str, course.Module]:
    names = tuple(sorted({c.kernel for c in configs if "<" in c.kernel}))
    return {
        dtype: course.Module.from_file(
            KERNEL_FILE, options=(f"-DELEM={C_TYPES[dtype]}",), name_expressions=names
        )
        for dtype in dtypes
    }


class Size:
    """One matrix size: rotating input sets on the device, outputs, NumPy's answer, the baselines."""

    def __init__(self, shape: tuple[int, int], dtype: str):
        self.shape, self.dtype = shape, dtype
        m, n = shape
        rng = np.random.default_rng(0)
        if dtype == "float32":
            host = rng.standard_normal(shape, dtype=np.float32)
        else:
            host = rng.integers(-(2**31), 2**31, size=shape, dtype=np.int32)
        self.nbytes = 2 * shape[0] * shape[1] * np.dtype(dtype).itemsize  # 2 * m * n * 4
        self.sets = bench.rotation_sets(self.nbytes, course.device().l2_cache_bytes)
        first = course.asarray(host)
        self.inputs = [first] + [first.copy() for _ in range(self.sets - 1)]
        self.outputs = [course.empty((n, m), dtype) for _ in range(self.sets)]
        self.copies = [course.empty((m, n), dtype) for _ in range(self.sets)]  # the copy kernel's outputs
        self.reference = course.asarray(np.ascontiguousarray(host.T))  # NumPy's transpose, uploaded
        self.original = first
        del host
        self.copy_ms = statistics.median(bench.time_copy(self.nbytes, runs=RUNS))
        import cupy

        self.cupy_ms = statistics.median(
            bench.time_runs([lambda a=a: cupy.ascontiguousarray(a.T) for a in self.inputs], runs=RUNS)
        )
        cupy_out = cupy.ascontiguousarray(self.inputs[0].T)
        assert bool(cupy.array_equal(cupy_out, self.reference)), (
            "cupy.ascontiguousarray(a.T) disagrees with NumPy"
        )

    @property
    def name(self) -> str:
        return f"{self.shape[0]}x{self.shape[1]} {self.dtype}"

    def launches(self, c: Config, mod: course.Module) -> list[Launch]:
        m, n = self.shape
        k = mod.get_function(c.kernel)
        outs = self.copies if c.version == "copy" else self.outputs
        return [
            Launch(k, c.grid(m, n), c.block, (a, o, np.int32(m), np.int32(n)), shared_mem=c.shared_bytes())
            for a, o in zip(self.inputs, outs)
        ]

    def correct(self, c: Config, launch: Launch) -> bool:
        out = launch.args[1]
        out.fill(0)
        launch()
        want = self.original if c.version == "copy" else self.reference
        import cupy

        return bool(cupy.array_equal(out, want))


def measure(size: Size, c: Config, mod: course.Module, device: str) -> dict[str, Any]:
    launches = size.launches(c, mod)
    ok = size.correct(c, launches[0])
    row: dict[str, Any] = {"device": device, "shape": list(size.shape), "dtype": size.dtype, "config": c.label,
                           "kernel": c.kernel, **asdict(c), "grid": list(c.grid(*size.shape)),
                           "threads": c.threads, "per_thread": c.per_thread, "correct": ok,
                           "copy_ms": size.copy_ms, "cupy_ms": size.cupy_ms, "rotating_sets": size.sets}  # fmt: skip
    if not ok:
        row.update(ms=None, gbps=None, pct_of_copy=None, x_cupy=None)
        return row
    ms = statistics.median(bench.time_runs(launches, runs=RUNS))
    gbps, copy_gbps = bench.gbps(size.nbytes, ms), bench.gbps(size.nbytes, size.copy_ms)
    row.update(
        ms=ms,
        gbps=gbps,
        pct_of_copy=bench.pct_of_copy(gbps, copy_gbps),
        x_cupy=bench.x_cupy(ms, size.cupy_ms),
    )
    return row


def table(size: Size, rows: list[dict[str, Any]]) -> str:
    copy_gbps = bench.gbps(size.nbytes, size.copy_ms)
    lines = [
        f"\n## {size.name}: {size.nbytes / 1e6:.1f} MB moved, {size.sets} rotating input set(s)\n",
        f"copy (cudaMemcpy D2D): {size.copy_ms:.4f} ms, {copy_gbps:.0f} GB/s; "
        f"cupy.ascontiguousarray(a.T): {size.cupy_ms:.4f} ms, "
        f"{bench.gbps(size.nbytes, size.cupy_ms):.0f} GB/s\n",
        "| config | ms | GB/s | % of copy | × CuPy | time / copy |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: (r["ms"] is None, r["ms"] or 0.0)):
        if r["ms"] is None:
            lines.append(f"| {r['config']} | WRONG ANSWER | | | | |")
            continue
        lines.append(
            f"| {r['config']} | {r['ms']:.4f} | {r['gbps']:.0f} | {r['pct_of_copy']:.1f} | "
            f"{r['x_cupy']:.2f} | {r['ms'] / size.copy_ms:.2f} |"
        )
    return "\n".join(lines)


def verdict(size: Size, rows: list[dict[str, Any]]) -> str:
    timed = [r for r in rows if r["ms"] is not None and r["version"] != "copy"]
    best = min(timed, key=lambda r: r["ms"])
    if size.shape == (1111, 113):
        ok = best["ms"] <= GOAL_ARTICLE * size.copy_ms
        goal = f"time ≤ {GOAL_ARTICLE}× the copy's: {best['ms'] / size.copy_ms:.2f}×"
    else:
        ok = best["pct_of_copy"] >= GOAL_PCT and best["x_cupy"] >= GOAL_X_CUPY
        goal = f"≥ {GOAL_PCT}% of copy and ≥ {GOAL_X_CUPY}× CuPy: {best['pct_of_copy']:.1f}%, {best['x_cupy']:.2f}×"
    return f"\nBest on {size.name}: {best['config']}; goal {goal} -> {'MET' if ok else 'NOT MET'}"


# ---------------------------------------------------------------- beyond: the ideas left open

# Candidates appended to transpose.cu's source (they reuse its Tile phases and band_corner): the
# winner moves into transpose.cu, the rest stay here with their numbers in docs/tuning/.
#   x_grouped<..., HINT>: transpose_grouped with cache hints: HINT 1 stores through __stcs
#     (evict-first), 2 loads through __ldcs, 3 both.
#   x_pipe<..., TILES, HINT>: a block moves TILES consecutive tiles of the band order (TILES 0:
#     a persistent grid, tile t, t + gridDim.x, ...); the next tile's loads are issued before
#     this tile's stores, so a block always has loads in flight (software pipelining).
#   x_copy4 / x_copy1: copies by an SM kernel (16-byte grid-stride / one word per thread), to see
#     how close a kernel gets to cudaMemcpy at all.
EXTRA = r"""
template <int TR, int TC, int ROWS, int VEC>
__device__ __forceinline__ void x_load_cs(const elem_t* __restrict__ in, int m, int n, int r0, int c0,
                                          typename Tile<TR, TC, ROWS, VEC>::Regs& v) {
    const int x = VEC * threadIdx.x, y = threadIdx.y;
#pragma unroll
    for (int r = 0; r < TR / ROWS; ++r)
#pragma unroll
        for (int h = 0; h < TC / 32; ++h) {
            const int row = r0 + y + r * ROWS, col = c0 + x + 32 * h;
#pragma unroll
            for (int k = 0; k < VEC; ++k) v[r][h].v[k] = 0;
            if (row < m) {
                const elem_t* p = in + row * n + col;
                if (n % VEC == 0 && col < n) {
                    if (VEC == 4) *reinterpret_cast<uint4*>(&v[r][h]) = __ldcs(reinterpret_cast<const uint4*>(p));
                    else if (VEC == 2) *reinterpret_cast<uint2*>(&v[r][h]) = __ldcs(reinterpret_cast<const uint2*>(p));
                    else *reinterpret_cast<unsigned*>(&v[r][h]) = __ldcs(reinterpret_cast<const unsigned*>(p));
                } else {
#pragma unroll
                    for (int k = 0; k < VEC; ++k)
                        if (col + k < n) v[r][h].v[k] = in[row * n + col + k];
                }
            }
        }
}

// VEC 1 only: each load asks L2 to fetch the whole 256-byte block around it (ld ... .L2::256B)
template <int TR, int TC, int ROWS>
__device__ __forceinline__ void x_load_256(const elem_t* __restrict__ in, int m, int n, int r0, int c0,
                                           typename Tile<TR, TC, ROWS, 1>::Regs& v) {
    const int x = threadIdx.x, y = threadIdx.y;
#pragma unroll
    for (int r = 0; r < TR / ROWS; ++r)
#pragma unroll
        for (int h = 0; h < TC / 32; ++h) {
            const int row = r0 + y + r * ROWS, col = c0 + x + 32 * h;
            unsigned w = 0;
            if (row < m && col < n)
                asm volatile("ld.global.nc.L2::256B.u32 %0, [%1];" : "=r"(w) : "l"(in + row * n + col));
            *reinterpret_cast<unsigned*>(&v[r][h]) = w;
        }
}

template <int TR, int TC, int ROWS, int VEC, int HINT>
__device__ __forceinline__ void x_load(const elem_t* __restrict__ in, int m, int n, int r0, int c0,
                                       typename Tile<TR, TC, ROWS, VEC>::Regs& v) {
    if (HINT & 4) x_load_256<TR, TC, ROWS>(in, m, n, r0, c0, reinterpret_cast<typename Tile<TR, TC, ROWS, 1>::Regs&>(v));
    else if (HINT & 2) x_load_cs<TR, TC, ROWS, VEC>(in, m, n, r0, c0, v);
    else Tile<TR, TC, ROWS, VEC>::load(in, m, n, r0, c0, v);
}

template <int TR, int TC, int ROWS, int VEC, int GROUP, int HINT>
__global__ void x_grouped(const elem_t* __restrict__ in, elem_t* __restrict__ out, int m, int n) {
    typedef Tile<TR, TC, ROWS, VEC> T;
    __shared__ typename T::Shared tile;
    typename T::Regs v;
    int r0, c0;
    band_corner<TR, TC, GROUP>(blockIdx.x, m, n, r0, c0);
    x_load<TR, TC, ROWS, VEC, HINT>(in, m, n, r0, c0, v);
    T::stash(v, tile);
    __syncthreads();
    T::template store<(HINT & 1) != 0>(tile, out, m, n, r0, c0);
}

template <int TR, int TC, int ROWS, int VEC, int GROUP, int TILES, int HINT>
__global__ void x_pipe(const elem_t* __restrict__ in, elem_t* __restrict__ out, int m, int n) {
    typedef Tile<TR, TC, ROWS, VEC> T;
    __shared__ typename T::Shared tile;
    typename T::Regs v;
    const int total = ((m + TR - 1) / TR) * ((n + TC - 1) / TC);
    const int step = TILES ? 1 : gridDim.x;
    int t = TILES ? blockIdx.x * TILES : blockIdx.x;
    const int last = TILES ? min(total, t + TILES) : total;
    if (t >= last) return;
    int r0, c0;
    band_corner<TR, TC, GROUP>(t, m, n, r0, c0);
    x_load<TR, TC, ROWS, VEC, HINT>(in, m, n, r0, c0, v);
    while (true) {
        T::stash(v, tile);
        __syncthreads();
        const int next = t + step;
        int r1 = 0, c1 = 0;
        if (next < last) {
            band_corner<TR, TC, GROUP>(next, m, n, r1, c1);
            x_load<TR, TC, ROWS, VEC, HINT>(in, m, n, r1, c1, v);  // in flight while this tile is stored
        }
        T::template store<(HINT & 1) != 0>(tile, out, m, n, r0, c0);
        if (next >= last) break;
        __syncthreads();
        t = next, r0 = r1, c0 = c1;
    }
}

// tiles in Morton (Z) order: for a square grid of power-of-two tiles per side (others are wrong)
template <int TR, int TC, int ROWS, int VEC>
__global__ void x_morton(const elem_t* __restrict__ in, elem_t* __restrict__ out, int m, int n) {
    unsigned t = blockIdx.x, tx = 0, ty = 0;
    for (int b = 0; b < 16; ++b) {
        tx |= ((t >> (2 * b)) & 1u) << b;
        ty |= ((t >> (2 * b + 1)) & 1u) << b;
    }
    transpose_tile<TR, TC, ROWS, VEC>(in, out, m, n, ty * TR, tx * TC);
}

// bands of GROUP tile rows as transpose_grouped, tile row j of a band shifted SKEW * j tile columns
template <int TR, int TC, int ROWS, int VEC, int GROUP, int SKEW>
__global__ void x_skew(const elem_t* __restrict__ in, elem_t* __restrict__ out, int m, int n) {
    const int tiles_x = (n + TC - 1) / TC, tiles_y = (m + TR - 1) / TR;
    const int band = blockIdx.x / (GROUP * tiles_x);
    const int height = min(GROUP, tiles_y - band * GROUP);
    const int i = blockIdx.x - band * GROUP * tiles_x;
    const int j = i % height;
    transpose_tile<TR, TC, ROWS, VEC>(in, out, m, n, (band * GROUP + j) * TR, ((i / height + SKEW * j) % tiles_x) * TC);
}

extern "C" __global__ void x_copy4(const elem_t* __restrict__ in, elem_t* __restrict__ out, int n4) {
    const uint4* a = reinterpret_cast<const uint4*>(in);
    uint4* b = reinterpret_cast<uint4*>(out);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) b[i] = a[i];
}

extern "C" __global__ void x_copy1(const elem_t* __restrict__ in, elem_t* __restrict__ out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i];
}
"""
PASSES = 3  # every candidate timed once per pass, the copy again at the start of each pass


@dataclass(frozen=True)
class Candidate:
    kernel: str  # with its template arguments
    block: tuple[int, int]
    tile: tuple[int, int] = (64, 64)
    group: int = 64
    tiles: int = 1  # tiles per block (0: a persistent grid of `blocks_per_sm` per SM)
    blocks_per_sm: int = 0
    copy: int = 0  # 1 or 4: a copy kernel moving that many words per access

    @property
    def label(self) -> str:
        if self.copy:
            return f"{self.kernel} block={self.block[0]} per_sm={self.blocks_per_sm or '-'}"
        extra = f" tiles={self.tiles}" if self.tiles != 1 else ""
        extra += f" per_sm={self.blocks_per_sm}" if not self.tiles else ""
        return f"{self.kernel} block={self.block[0]}x{self.block[1]}{extra}"

    def grid(self, m: int, n: int, sms: int) -> tuple[int, ...]:
        if self.copy:
            units = m * n // self.copy
            per_block = self.block[0]
            need = -(-units // per_block)
            return (min(need, sms * self.blocks_per_sm) if self.blocks_per_sm else need,)
        total = -(-m // self.tile[0]) * -(-n // self.tile[1])
        if not self.tiles:
            return (min(total, sms * self.blocks_per_sm),)
        return (-(-total // self.tiles),)


def candidates() -> list[Candidate]:
    """The second device run: tile orders (band height, Morton, skew) and L2 prefetch hints on the
    first sweep's best tile (the first run's cache hints, tile shapes, pipelined and persistent
    tiles all lost: docs/tuning/transpose-beyond-2026-11-25.md)."""
    b = (32, 16)
    out = [
        Candidate(f"transpose_grouped<64, 64, 16, 1, {g}>", b, group=g) for g in (32, 48, 64, 96, 128, 256)
    ]
    out += [Candidate(f"x_grouped<64, 64, 16, 1, {g}, 4>", b, group=g) for g in (16, 64, 128)]
    out += [Candidate(f"x_grouped<64, 64, 16, 1, 64, {h}>", b) for h in (0, 5)]
    out += [Candidate("x_morton<64, 64, 16, 1>", b)]
    out += [Candidate(f"x_skew<64, 64, 16, 1, {g}, {k}>", b, group=g) for g, k in ((64, 1), (64, 8), (16, 1))]
    out += [Candidate("transpose_grouped<64, 64, 8, 1, 64>", (32, 8)), Candidate("x_copy4", (256, 1), copy=4)]
    return out


def build_beyond(cands: list[Candidate]) -> dict[str, course.Module]:
    names = tuple(sorted({c.kernel for c in cands if "<" in c.kernel}))
    code = compiler.read_kernel(KERNEL_FILE) + EXTRA
    return {
        dtype: course.Module(code=code, options=(f"-DELEM={ctype}",), name_expressions=names)
        for dtype, ctype in C_TYPES.items()
    }


def beyond(out_dir: Path) -> int:
    start = time.perf_counter()
    dev = course.device()
    cands = candidates()
    mods = build_beyond(cands)
    print(f"compiled {len(cands)} candidates: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    sizes = [Size(shape, dtype) for shape, dtype in SIZES]
    rows: list[dict[str, Any]] = []
    for p in range(PASSES):
        for s in sizes:
            m, n = s.shape
            copy_ms = statistics.median(bench.time_copy(s.nbytes, runs=RUNS))
            for c in cands:
                k = mods[s.dtype].get_function(c.kernel)
                grid, block = c.grid(m, n, dev.sm_count), c.block
                if c.copy:
                    units = np.int32(m * n // c.copy)
                    launches = [Launch(k, grid, block, (a, o, units)) for a, o in zip(s.inputs, s.copies)]
                    want = s.original
                else:
                    launches = [Launch(k, grid, block, (a, o, np.int32(m), np.int32(n)))
                                for a, o in zip(s.inputs, s.outputs)]  # fmt: skip
                    want = s.reference
                if c.copy == 4 and (m * n) % 4:
                    continue
                out = launches[0].args[1]
                out.fill(0)
                launches[0]()
                import cupy

                ok = bool(cupy.array_equal(out, want))
                ms = statistics.median(bench.time_runs(launches, runs=RUNS)) if ok else None
                rows.append({"pass": p, "shape": list(s.shape), "dtype": s.dtype, "config": c.label,
                             "kernel": c.kernel, "block": list(block), "grid": list(grid), "correct": ok,
                             "ms": ms, "copy_ms": copy_ms, "cupy_ms": s.cupy_ms,
                             "pct_of_copy": 100 * copy_ms / ms if ms else None,
                             "x_cupy": s.cupy_ms / ms if ms else None})  # fmt: skip
        print(f"pass {p} timed: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    print(f"# Transpose, beyond the first sweep, on {dev.name}\n")
    print(f"`python scripts/tune_transpose.py --beyond`: {PASSES} passes, each the median of {RUNS} runs;"
          " % of copy against that pass's cudaMemcpy D2D.")  # fmt: skip
    for s in sizes:
        mine = [r for r in rows if r["shape"] == list(s.shape) and r["dtype"] == s.dtype]
        print(f"\n## {s.name}\n")
        print("| config | ms (median) | % of copy: median | min | max | × CuPy |")
        print("|---|---:|---:|---:|---:|---:|")
        by: dict[str, list[dict[str, Any]]] = {}
        for r in mine:
            by.setdefault(r["config"], []).append(r)

        def key(rs: list[dict[str, Any]]) -> float:
            pcts = [r["pct_of_copy"] for r in rs if r["pct_of_copy"]]
            return -statistics.median(pcts) if pcts else 1e9

        for label, rs in sorted(by.items(), key=lambda kv: key(kv[1])):
            if not all(r["correct"] for r in rs):
                print(f"| {label} | WRONG ANSWER | | | | |")
                continue
            pcts = [r["pct_of_copy"] for r in rs]
            ms = statistics.median(r["ms"] for r in rs)
            xs = statistics.median(r["x_cupy"] for r in rs)
            print(
                f"| {label} | {ms:.4f} | {statistics.median(pcts):.1f} | {min(pcts):.1f} | {max(pcts):.1f} | {xs:.2f} |"
            )
    path = out_dir / "tune_transpose_beyond.json"
    path.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"\n{len(rows)} rows written to {path}; {time.perf_counter() - start:.0f} s in all")
    return 0


def main() -> int:
    if course.device().backend != "cupy":
        print("tune_transpose.py times kernels: it needs a GPU (CuPy found none).", file=sys.stderr)
        return 1
    if "--beyond" in sys.argv[1:]:
        out = Path(os.environ.get("OUT", "."))
        out.mkdir(parents=True, exist_ok=True)
        return beyond(out)
    start = time.perf_counter()
    device = course.device().name
    out_dir = Path(os.environ.get("OUT", "."))
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"# Transpose tuning on {device}\n")
    print(f"`python scripts/tune_transpose.py`: median of {RUNS} runs (CUDA events, inputs rotated past L2).")
    first = stage1()
    mods = build(first)
    print(
        f"compiled {len(first)} stage-1 configurations: {time.perf_counter() - start:.0f} s", file=sys.stderr
    )
    sizes = [Size(shape, dtype) for shape, dtype in SIZES]  # all stay on the device: about 6 GB
    print(f"inputs, references, copy and CuPy timed: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    results = {s.name: [measure(s, c, mods[s.dtype], device) for c in first] for s in sizes}
    print(f"stage 1 timed: {time.perf_counter() - start:.0f} s", file=sys.stderr)

    # stage 2: the best (tile, rows, vec) on the float sizes, its tiles visited in bands of GROUP rows
    def score(c: Config) -> float:
        pcts = [r["pct_of_copy"] for s in sizes if s.dtype == "float32" for r in results[s.name]
                if r["config"] == c.label and r["pct_of_copy"] is not None]  # fmt: skip
        return float(np.mean(pcts)) if len(pcts) == 2 else 0.0

    best = sorted((c for c in first if c.version == "transpose_vec"), key=score, reverse=True)[:STAGE2_BEST]
    second = stage2(best)
    mods = build(second, ("float32",))
    for s in sizes:
        if s.dtype == "float32":  # the article's small matrix is ~140 tiles: one wave, no order to choose
            results[s.name] += [measure(s, c, mods[s.dtype], device) for c in second]
    print(f"stage 2 timed: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    for s in sizes:
        print(table(s, results[s.name]))
        print(verdict(s, results[s.name]))
    rows = [r for rs in results.values() for r in rs]
    path = out_dir / "tune_transpose.json"
    path.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"\n{len(rows)} rows written to {path}; {time.perf_counter() - start:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
