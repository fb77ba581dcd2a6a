"""The transpose kernels' tuning sweep (`python -m course.bench.tune transpose`, see course.bench.tune):
every version of course/kernels/transpose.cu, then the knobs of the fast ones (tile, threads per
tile, elements per thread, vector width, tile order) at the goal sizes, beside a device-to-device
copy of the same bytes and CuPy's `cupy.ascontiguousarray(a.T)`.

Stages:
  stage1   every version, and every (tile shape, rows, vec) of transpose_vec, at every size;
  stage2   the three best transpose_vec of stage 1 on the float32 sizes, their tiles visited in
           bands of GROUP tile rows (transpose_grouped);
  verdict  the best configuration of each size against its goal;
  beyond   (named only) the candidates of `candidates()`: tile orders, cache hints, pipelined tiles
           (kernels appended to transpose.cu's source, EXTRA), 3 passes each, the copy timed again
           at the start of each pass. docs/tuning/transpose.md holds what its runs found.

Every configuration's answer is checked against NumPy's a.T (computed once per size, uploaded,
compared on the device) before it is timed. Compiling takes ~30-40 s of a GPU run (NVRTC, ~100
instantiations, built a stage at a time).
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import arrays, compiler
from ..backend import device, on_gpu
from ..bench.tune import Data, Run, Stage, Sweep, Tuning, equal
from ..engine import Launch
from ..module import Kernel, Module

KERNEL_FILE = "transpose.cu"
C_TYPES = {"float32": "float", "int32": "int"}
SIZES = (((1111, 113), "int32"), ((8192, 8192), "float32"), ((16384, 16384), "float32"))
DRY_SIZES = (((70, 45), "int32"), ((96, 128), "float32"), ((128, 64), "float32"))
ARTICLE_SHAPE = (1111, 113)
GOAL_PCT, GOAL_X_CUPY, GOAL_ARTICLE = 95.0, 3.3, 2.0  # % of copy, x CuPy, article: at most 2x the copy's time
GROUPS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024)
STAGE2_BEST = 3
PASSES = 3  # beyond: every candidate timed once per pass, the copy again at the start of each pass


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

    def __str__(self) -> str:
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


def stage1_configs() -> list[Config]:
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
    for shape in ((32, 64), (64, 32), (64, 128), (128, 64)):  # non-square tiles, 16-byte accesses
        for rows in (8, 16, 32):
            if rows <= min(shape) and shape[0] * shape[1] // (8 * rows) <= 64:
                configs.append(Config("transpose_vec", (8, rows), shape, rows, 4))
    return configs


def stage2_configs(best: Sequence[Config]) -> list[Config]:
    return [Config("transpose_grouped", c.block, c.tile, c.rows, c.vec, g) for c in best for g in GROUPS]


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


@dataclass(frozen=True)
class Candidate:
    kernel: str  # with its template arguments
    block: tuple[int, int]
    tile: tuple[int, int] = (64, 64)
    group: int = 64
    tiles: int = 1  # tiles per block (0: a persistent grid of `blocks_per_sm` per SM)
    blocks_per_sm: int = 0
    copy: int = 0  # 1 or 4: a copy kernel moving that many words per access

    def __str__(self) -> str:
        if self.copy:
            return f"{self.kernel} block={self.block[0]} per_sm={self.blocks_per_sm or '-'}"
        extra = f" tiles={self.tiles}" if self.tiles != 1 else ""
        extra += f" per_sm={self.blocks_per_sm}" if not self.tiles else ""
        return f"{self.kernel} block={self.block[0]}x{self.block[1]}{extra}"

    def grid(self, m: int, n: int, sms: int) -> tuple[int, ...]:
        if self.copy:
            need = -(-(m * n // self.copy) // self.block[0])
            return (min(need, sms * self.blocks_per_sm) if self.blocks_per_sm else need,)
        total = -(-m // self.tile[0]) * -(-n // self.tile[1])
        if not self.tiles:
            return (min(total, sms * self.blocks_per_sm),)
        return (-(-total // self.tiles),)


def candidates() -> list[Candidate]:
    """The second device run: tile orders (band height, Morton, skew) and L2 prefetch hints on the
    first sweep's best tile (the first run's cache hints, tile shapes, pipelined and persistent
    tiles all lost: docs/tuning/transpose.md)."""
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


Item = Config | Candidate

# ---------------------------------------------------------------- compiling: one module a stage and dtype

_built: dict[tuple[bool, str, str], Module] = {}  # (beyond?, dtype, kernel) -> the module that has it


def build(items: Sequence[Item], dtypes: Sequence[str] = tuple(C_TYPES)) -> None:
    """Compile the kernels `items` need that are not compiled yet: one NVRTC run per dtype and source."""
    for beyond in (False, True):
        names = {c.kernel for c in items if isinstance(c, Candidate) == beyond}
        for dtype in dtypes:
            todo = tuple(sorted(k for k in names if (beyond, dtype, k) not in _built))
            if not todo:
                continue
            options = (f"-DELEM={C_TYPES[dtype]}",)
            templates = tuple(k for k in todo if "<" in k)
            if beyond:
                mod = Module(
                    code=compiler.read_kernel(KERNEL_FILE) + EXTRA,
                    options=options,
                    name_expressions=templates,
                )
            else:
                mod = Module.from_file(KERNEL_FILE, options=options, name_expressions=templates)
            _built.update({(beyond, dtype, k): mod for k in todo})


def kernel(c: Item, dtype: str) -> Kernel:
    build([c], (dtype,))
    return _built[(isinstance(c, Candidate), dtype, c.kernel)].get_function(c.kernel)


# ---------------------------------------------------------------- inputs, launches, checks


def size_label(key: Any) -> str:
    (m, n), dtype = key
    return f"{m}x{n} {dtype}"


def data(key: Any) -> Data:
    """((m, n), dtype): rotating (input, output, copy's output) sets; NumPy's a.T uploaded."""
    (m, n), dtype = key
    rng = np.random.default_rng(0)
    host: Any
    if dtype == "float32":
        host = rng.standard_normal((m, n), dtype=np.float32)
    else:
        host = rng.integers(-(2**31), 2**31, size=(m, n), dtype=np.int32)
    nbytes = 2 * host.nbytes
    first = arrays.asarray(host)
    want = arrays.asarray(np.ascontiguousarray(host.T))
    builtin = None
    count = 1
    if on_gpu():
        import cupy

        from ..bench.timing import rotation_sets

        count = rotation_sets(nbytes, device().l2_cache_bytes)
        builtin = lambda s: cupy.ascontiguousarray(s[0].T)  # noqa: E731
        assert bool(cupy.array_equal(builtin((first,)), want)), (
            "cupy.ascontiguousarray(a.T) disagrees with NumPy"
        )
    inputs = [first] + [first.copy() for _ in range(count - 1)]
    sets = [(a, arrays.empty((n, m), dtype), arrays.empty((m, n), dtype)) for a in inputs]
    return Data(size_label(key), sets, host, want, nbytes, builtin,
                {"shape": [m, n], "dtype": dtype, "rotating_sets": count})  # fmt: skip


def dim3(t: tuple[int, ...]) -> tuple[int, int, int]:
    x, y, z = (*t, 1, 1)[:3]
    return (x, y, z)


def launch(c: Item, d: Data) -> Run:
    m, n = d.fields["shape"]
    k = kernel(c, d.fields["dtype"])
    if isinstance(c, Candidate):
        grid = c.grid(m, n, device().sm_count)
        size = (np.int32(m * n // c.copy),) if c.copy else (np.int32(m), np.int32(n))
        launches = [
            Launch(k, dim3(grid), dim3(c.block), (a, cp if c.copy else o, *size)) for a, o, cp in d.sets
        ]
    else:
        args = (np.int32(m), np.int32(n))
        launches = [Launch(k, dim3(c.grid(m, n)), dim3(c.block), (a, cp if c.version == "copy" else o, *args),
                           shared_mem=c.shared_bytes()) for a, o, cp in d.sets]  # fmt: skip
    out = launches[0].args[1]

    def first() -> None:
        out.fill(0)
        launches[0]()

    return Run(launches, lambda: out, first)


def check(c: Item, got: Any, d: Data) -> bool:
    is_copy = c.copy if isinstance(c, Candidate) else c.version == "copy"
    return equal(got, d.sets[0][0] if is_copy else d.want)


def columns(c: Item, d: Data) -> dict[str, Any]:
    m, n = d.fields["shape"]
    grid = c.grid(m, n, device().sm_count) if isinstance(c, Candidate) else c.grid(m, n)
    threads = c.block[0] * c.block[1]
    return {"grid": "x".join(map(str, grid)), "threads": threads}


# ---------------------------------------------------------------- stages


def stage1(s: Sweep) -> Iterator[tuple[Item, Hashable]]:
    configs = stage1_configs()
    build(configs, sorted({dtype for _, dtype in s.sizes}))
    for key in s.sizes:
        for c in configs:
            yield c, key


def stage2(s: Sweep) -> Iterator[tuple[Item, Hashable]]:
    """The best (tile, rows, vec) on the float sizes, its tiles visited in bands of GROUP rows (the
    article's small matrix is ~140 tiles: one wave, no order to choose)."""
    floats = [k for k in s.sizes if k[1] == "float32"]
    labels = {size_label(k) for k in floats}
    rows = [r for r in s.of("stage1") if r.config.version == "transpose_vec" and r.data in labels]
    if s.dry:
        best = s.best(rows, STAGE2_BEST)
    else:
        pcts: dict[Config, list[float]] = {}
        for r in rows:
            if r.pct_of_copy is not None:
                pcts.setdefault(r.config, []).append(r.pct_of_copy)
        score = {c: float(np.mean(p)) if len(p) == len(floats) else 0.0 for c, p in pcts.items()}
        best = sorted(score, key=lambda c: -score[c])[:STAGE2_BEST]
    configs = stage2_configs(best)
    build(configs, ("float32",))
    for key in floats:
        for c in configs:
            yield c, key


def verdict(s: Sweep) -> dict[str, Any]:
    """The best configuration of each size against its goal."""
    out = {}
    for key in s.sizes:
        d = s.inputs.get(key)
        timed = [r for r in s.rows if r.data == size_label(key) and r.ms and r.config.version != "copy"]
        if d is None or d.copy_ms is None or not timed:
            continue
        best = min(timed, key=lambda r: r.ms or 0.0)
        assert best.ms is not None and best.pct_of_copy is not None and best.x_builtin is not None
        if tuple(key[0]) == ARTICLE_SHAPE:
            ok = best.ms <= GOAL_ARTICLE * d.copy_ms
            goal = f"time ≤ {GOAL_ARTICLE}× the copy's: {best.ms / d.copy_ms:.2f}×"
        else:
            ok = best.pct_of_copy >= GOAL_PCT and best.x_builtin >= GOAL_X_CUPY
            goal = f"≥ {GOAL_PCT}% of copy and ≥ {GOAL_X_CUPY}× CuPy: {best.pct_of_copy:.1f}%, {best.x_builtin:.2f}×"
        print(f"\nBest on {d.label}: {best.label}; goal {goal} -> {'MET' if ok else 'NOT MET'}")
        out[d.label] = {"config": best.label, "ms": best.ms, "goal": goal, "met": ok}
    return out


def beyond(s: Sweep) -> list[dict[str, Any]]:
    """Every candidate, PASSES passes (one in a dry run), the copy timed again at each pass's start;
    % of copy: median, min and max over the passes."""
    cands = candidates()
    build(cands, sorted({dtype for _, dtype in s.sizes}))
    passes = 1 if s.dry else PASSES
    for p in range(passes):
        for key in s.sizes:
            d = s.data(key)
            if p:
                s.time_baselines(d)
            m, n = d.fields["shape"]
            for c in cands:
                if not (c.copy == 4 and (m * n) % 4):
                    s.measure("beyond", c, key, fields={"pass": p})
    out = []
    for key in s.sizes:
        rows = [r for r in s.of("beyond", size_label(key))]
        print(f"\n## Beyond: {size_label(key)}, {passes} passes\n")
        print(
            "| config | ms (median) | % of copy: median | min | max | × CuPy |\n|---|---:|---:|---:|---:|---:|"
        )
        by: dict[str, list[Any]] = {}
        for r in rows:
            by.setdefault(r.label, []).append(r)
        for label, rs in sorted(
            by.items(), key=lambda kv: -statistics.median([r.pct_of_copy or 0 for r in kv[1]])
        ):
            if not all(r.correct for r in rs):
                print(f"| {label} | WRONG ANSWER | | | | |")
            elif all(r.ms for r in rs):
                pcts = [r.pct_of_copy for r in rs]
                print(f"| {label} | {statistics.median(r.ms for r in rs):.4f} | {statistics.median(pcts):.1f} | "
                      f"{min(pcts):.1f} | {max(pcts):.1f} | {statistics.median(r.x_builtin for r in rs):.2f} |")  # fmt: skip
            out.append({"config": label, "data": size_label(key), "correct": all(r.correct for r in rs),
                        "pct_of_copy": [r.pct_of_copy for r in rs]})  # fmt: skip
    return out


TUNING = Tuning(
    name="transpose",
    title="Transpose tuning",
    stages=(
        Stage("stage1", stage1),
        Stage("stage2", stage2),
        Stage("verdict", run=verdict),
        Stage("beyond", run=beyond, default=False),
    ),
    data=data,
    launch=launch,
    sizes=SIZES,
    dry_sizes=DRY_SIZES,
    check=check,
    columns=columns,
    builtin_name="cupy.ascontiguousarray(a.T)",
)
