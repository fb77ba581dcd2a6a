"""Transpose as data: the naive kernels, the article's shared-memory tile and its fixes, and the
tuned tiles beyond it, each with its launch rule; the NumPy reference, the benchmark and the panel.

Every version moves an m × n matrix of 4-byte words (float32 or int32) into an n × m one,
out[c][r] = a[r][c]; nothing is computed, only the addressing changes. `run` returns the
transposed matrix as a NumPy array of the input's dtype.

The copy (`copy` in transpose.cu) is a read + write copy, not a transpose, so it is not a
version: the story launches it by hand (`lesson.copy_kernel`), and the benchmark's 100 % is a
device copy (cudaMemcpy).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import arrays
from ..bench import Goal, Inputs
from ..engine import BenchSpec, Block, Call, Engine, PanelSpec, Plan, Size, Tiles, Topic, Version
from ..errors import ArgumentError, InputError
from ..module import Kernel
from .panel import metrics, panel_input, picture, picture_input

KERNEL_FILE = "transpose.cu"
C_TYPES = {np.dtype(np.float32): "float", np.dtype(np.int32): "int"}  # 4-byte words only
MAX_ELEMENTS = 2**31 - 1  # the kernels index with int
MAX_GRID_Y = 65535  # a 2-D grid has at most this many blocks in y

# the tile of transpose_vec and transpose_grouped, and grouped's band height, from the tuning
# (docs/tuning/transpose.md): 64 × 64 tiles beat 32 × 32 and every non-square tile; bands as tall
# as the matrix (whole tile columns: `out` written front to back) beat every shorter band, 97 %
# of the copy against 94-95 %. 1024 tile rows is every matrix up to 65536 rows.
TILE = 64
GROUP = 1024


# ---------------------------------------------------------------- launch rules: how many blocks


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _shape(size: Size) -> tuple[int, int]:
    return size if isinstance(size, tuple) else (1, int(size))


def _block2(block: Block) -> tuple[int, int]:
    return block if isinstance(block, tuple) else (int(block), 1)


def _grid2(x: int, y: int, tile_rows: int) -> tuple[int, int, int]:
    if y > MAX_GRID_Y:
        raise InputError(
            f"a 2-D grid has at most {MAX_GRID_Y} blocks in y: at most {MAX_GRID_Y * tile_rows} rows "
            f"with {tile_rows} rows per block; transpose_grouped (a 1-D grid) takes more"
        )
    return (max(1, x), max(1, y), 1)


@dataclass(frozen=True)
class BlockTiles(Tiles):
    """One block per block-shaped patch: block (bx, by) covers by rows × bx columns of the input,
    or of the output (n × m) when `over_output`; a 2-D grid."""

    over_output: bool = False

    def __call__(self, size: Size, block: Block, where: Any) -> tuple[int, int, int]:
        rows, cols = _shape(size)
        if self.over_output:
            rows, cols = cols, rows
        bx, by = _block2(block)
        return _grid2(_cdiv(cols, bx), _cdiv(rows, by), by)

    def __str__(self) -> str:
        side = "output" if self.over_output else "input"
        return f"one block per by × bx patch of the {side}: grid (ceil(cols / bx), ceil(rows / by))"


@dataclass(frozen=True)
class SquareTiles(Tiles):
    """One block per bx × bx tile (block (bx, by): by rows of threads move bx rows); a 2-D grid."""

    def __call__(self, size: Size, block: Block, where: Any) -> tuple[int, int, int]:
        rows, cols = _shape(size)
        bx, _ = _block2(block)
        return _grid2(_cdiv(cols, bx), _cdiv(rows, bx), bx)

    def __str__(self) -> str:
        return "one block per bx × bx tile: grid (ceil(n / bx), ceil(m / bx))"


@dataclass(frozen=True)
class FixedTiles(Tiles):
    """One block per `tile` (rows, cols), whatever the block; a 2-D grid (`Tiles` with its limit)."""

    def __call__(self, size: Size, block: Block, where: Any) -> tuple[int, int, int]:
        rows, cols = _shape(size)
        return _grid2(_cdiv(cols, self.tile[1]), _cdiv(rows, self.tile[0]), self.tile[0])


@dataclass(frozen=True)
class BandTiles(Tiles):
    """One block per `tile`, numbered in a 1-D grid (the kernel orders them in bands)."""

    def __call__(self, size: Size, block: Block, where: Any) -> tuple[int, int, int]:
        rows, cols = _shape(size)
        return (max(1, _cdiv(cols, self.tile[1]) * _cdiv(rows, self.tile[0])), 1, 1)

    def __str__(self) -> str:
        return f"one block per {self.tile[0]}×{self.tile[1]} tile, a 1-D grid of them"


# ---------------------------------------------------------------- the versions


@dataclass(frozen=True)
class TransposeVersion(Version):
    """A version, and the dynamic shared memory a block needs (templates get their arguments
    from the 2-D block through `instance`)."""

    shared: Callable[[tuple[int, int]], int] | None = None  # block -> dynamic shared bytes

    def shared_bytes(self, block: Block, dtype: np.dtype) -> int:
        return self.shared(_block2(block)) if self.shared else 0


def _article(block: Block) -> str:
    """The article's template rule: <16> for block (16, 16) (the text), else <32> (the code)."""
    return "transpose_article<16>" if block == (16, 16) else "transpose_article<32>"


def _vec(kernel: str, extra: str = "") -> Callable[[Block], str]:
    """transpose_vec / transpose_grouped for block (32 / VEC, ROWS) on the fixed TILE × TILE tile."""
    return lambda b: f"{kernel}<{TILE}, {TILE}, {_block2(b)[1]}, {32 // _block2(b)[0]}{extra}>"


FIXED_TILE = (
    f"the {TILE}×{TILE} tile is the version's (from the tuning); the block (32 / VEC, ROWS) only picks "
    "the threads per tile and the vector width: each thread moves 4096 / (bx·by) words"
)
ANY = ((32, 8), (32, 32), (16, 16), (64, 4))  # any 2-D block; (32, 8): NVIDIA's transpose block
ARTICLE_BLOCKS = ((32, 32), (16, 16), (32, 8), (16, 32))  # the last two run into the article's bug
ROWS_BLOCKS = ((32, 8), (32, 16), (32, 32), (16, 16), (64, 8))
VEC_BLOCKS = ((32, 16), (32, 32), (32, 4), (16, 32), (8, 32))  # (32 / VEC, ROWS); (32, 16) tuned best

T = TransposeVersion
VERSIONS = (
    T("transpose_naive", "naive: coalesced reads, strided writes", BlockTiles(), ANY),
    T("transpose_naive_cols", "naive, threads over the output: strided reads, coalesced writes",
      BlockTiles(over_output=True), ANY),
    T("transpose_article", "the article's shared-memory tile (BLOCK_SIZE 32, or 16 for block 16×16)",
      BlockTiles(), ARTICLE_BLOCKS, listed=False, instance=_article,
      bug="reads the tile down a column: 32-way bank conflicts at BLOCK_SIZE 32 (8-way at 16); uses "
      "blockDim.x for both dimensions, so only a square block equal to the tile is right"),
    T("transpose_tiled", "shared-memory tile, fixed for any block (still read down a column)", BlockTiles(),
      ANY, shared=lambda b: b[0] * b[1] * 4),
    T("transpose_padded", "padded tile (row stride bx + 1): no bank conflicts at 32×32", BlockTiles(), ANY,
      shared=lambda b: (b[0] + 1) * b[1] * 4),
    T("transpose_rows", "bx × bx tile, by rows of threads: bx / by elements each (NVIDIA's 32×8)",
      SquareTiles(), ROWS_BLOCKS, instance=lambda b: f"transpose_rows<{_block2(b)[0]}, {_block2(b)[1]}>"),
    T("transpose_vec", f"{TILE}×{TILE} tile, loads batched; the block picks threads per tile and "
      "vector width (32 / bx words)", FixedTiles((TILE, TILE)), VEC_BLOCKS, instance=_vec("transpose_vec"),
      note=FIXED_TILE),
    T("transpose_grouped", f"{TILE}×{TILE} tiles visited down whole tile columns (1-D grid): out written "
      "front to back",
      BandTiles((TILE, TILE)), VEC_BLOCKS, instance=_vec("transpose_grouped", f", {GROUP}"), note=FIXED_TILE),
)  # fmt: skip
STORY = tuple(v.name for v in VERSIONS if v.listed)


def version(name: str) -> TransposeVersion:
    v = TOPIC.version(name)
    assert isinstance(v, TransposeVersion)
    return v


# ---------------------------------------------------------------- kernels


def options(dtype: Any) -> tuple[str, ...]:
    dt = np.dtype(dtype)
    if dt not in C_TYPES:
        raise ArgumentError(
            f"transpose moves float32 or int32 matrices (4-byte words), not {dt}; "
            "convert with a.astype(np.float32)"
        )
    return (f"-DELEM={C_TYPES[dt]}",)


def kernel(name: str, dtype: Any = np.float32, block: Block | None = None) -> Kernel:
    """The compiled kernel version `name` runs with `block` (its default if None), for `dtype`."""
    options(dtype)
    return ENGINE.kernel(name, dtype, block)


def copy_kernel(dtype: Any = np.float32) -> Kernel:
    """transpose.cu's `copy`: out[r][c] = a[r][c] (a read + write copy, no transpose), any 2-D block."""
    options(dtype)
    return ENGINE.kernel("copy", dtype)


# ---------------------------------------------------------------- inputs and the answer


def prepare(a: Any) -> tuple[np.ndarray]:
    m = np.array(a, copy=True)
    if m.ndim != 2:
        raise InputError(f"transpose takes a 2-D matrix (rows, cols); got shape {m.shape}")
    options(m.dtype)
    if m.size == 0:
        raise InputError(f"transpose takes a matrix with at least one element; got shape {m.shape}")
    if m.size > MAX_ELEMENTS:
        raise InputError(f"transpose takes at most {MAX_ELEMENTS} elements (int indexes); got {m.size}")
    return (np.ascontiguousarray(m),)


def reference(a: np.ndarray) -> np.ndarray:
    """NumPy's transpose, as a C-contiguous array (what every version writes)."""
    return np.ascontiguousarray(a.T)


def compare(got: Any, want: Any, inputs: tuple[np.ndarray, ...]) -> str:
    """ "" when the transpose is exact (nothing is computed: every bit must arrive)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"got a {got.dtype} array of shape {got.shape}, NumPy's is {want.dtype} {want.shape}"
    wrong = np.argwhere(got != want)
    if not len(wrong):
        return ""
    r, c = (int(i) for i in wrong[0])
    return (
        f"{len(wrong)} of {want.size} elements differ; the first, out[{r}][{c}]: "
        f"got {got[r, c]}, NumPy says {want[r, c]}"
    )


# ---------------------------------------------------------------- how each version is launched


def plan(call: Call) -> Plan:
    """One launch: a (m × n) in, a zeroed n × m out (a missed element shows), m and n as int32."""
    v = call.version
    assert isinstance(v, TransposeVersion)
    (a,) = call.inputs
    m, n = _shape(call.size)
    out = call.zeros((n, m), call.dtype)
    k = call.kernel()
    shared = v.shared_bytes(call.block, call.dtype)
    step = call.launch((a, out, np.int32(m), np.int32(n)), kernel=k, shared_mem=shared)
    return Plan([step], answer=lambda: arrays.asnumpy(out))


# ---------------------------------------------------------------- sizes for the tests


def shape_for(n: int) -> tuple[int, int]:
    """A matrix of about `n` elements, as square as it gets: rows ⌊√n⌋, columns enough for n."""
    rows = max(1, math.isqrt(int(n)))
    return (rows, _cdiv(int(n), rows))


def sample(size: Any, rng: np.random.Generator) -> tuple[np.ndarray]:
    """Random int32 (over the whole range) or float32 matrices, alternating by shape; an int size
    N means `shape_for(N)`."""
    shape = size if isinstance(size, tuple) else shape_for(size)
    if sum(shape) % 2:
        return (rng.integers(-(2**31), 2**31, size=shape, dtype=np.int32),)
    return (rng.standard_normal(shape, dtype=np.float32),)


def sample_sizes(block: Block) -> list[Size]:
    """Shapes awkward for a block's tile (bx × by, bx × bx, or the 64 × 64 of vec and grouped):
    1 × 1, 1 × N, N × 1, a tile ± 1 both ways, odd ones, and the article's 1111 × 113."""
    bx, by = _block2(block)
    out: set[tuple[int, int]] = {(1, 1), (37, 101), (1111, 113)}
    for t in sorted({bx, by, TILE}):
        out |= {(1, 2 * t + 3), (2 * t + 3, 1), (t - 1, t + 1), (t + 1, t - 1), (t, t)}
    return sorted(s for s in out if min(s) >= 1)


# ---------------------------------------------------------------- the benchmark


def _bench_input(size: Any, dtype: np.dtype, dist: str | None, rng: np.random.Generator) -> tuple:
    shape = size if isinstance(size, tuple) else shape_for(size)
    if dtype.kind == "f":
        return (rng.standard_normal(shape, dtype=dtype),)
    return (rng.integers(-(2**31), 2**31, size=shape, dtype=dtype),)


def _cupy_transpose(inputs: Inputs) -> Callable[[], Any]:
    import cupy

    (a,) = inputs.arrays
    return lambda: cupy.ascontiguousarray(a.T)


def moved(size: Any, dtype: np.dtype) -> int:
    """Every element read once and written once: 2 · rows · cols · itemsize bytes."""
    rows, cols = size if isinstance(size, tuple) else shape_for(size)
    return 2 * rows * cols * dtype.itemsize


# the goals of issue #13: near the copy and well past CuPy at 8192² and 16384² (float32); the
# article's 1111 × 113 int matrix within 2× the copy's time of the same bytes
GOALS = (
    Goal("transpose", (8192, 8192), "float32", min_pct_of_copy=95, min_x_cupy=3.3),
    Goal("transpose", (16384, 16384), "float32", min_pct_of_copy=95, min_x_cupy=3.3),
    Goal("transpose", (1111, 113), "int32", min_pct_of_copy=50),
)

BENCH = BenchSpec(
    dtypes=("float32", "int32"),
    sizes=((1111, 113), (1024, 1024), (2048, 2048), (4096, 4096), (8192, 8192), (16384, 16384)),
    quick_sizes=((1111, 113), (8192, 8192), (16384, 16384)),
    emulator_sizes=((256, 256),),
    moved=moved,
    generate=_bench_input,
    baselines={"cupy.ascontiguousarray(a.T)": _cupy_transpose},
    goals=GOALS,
)


TOPIC = Topic(
    name="transpose",
    title="Transpose: coalescing, a shared-memory tile, bank conflicts, and beyond",
    kernel_file=KERNEL_FILE,
    versions=VERSIONS,
    inputs=("a",),
    prepare=prepare,
    size=lambda a: tuple(a.shape),
    reference=reference,
    compare=compare,
    options=options,
    plan=plan,
    block=(32, 8),
    tolerance="exact: a transpose only moves bits",
    bench=BENCH,
    panel=PanelSpec(
        lambda n, rng: panel_input(shape_for(n)),
        picture,
        metrics,
        picture_input=picture_input,
        version="transpose_naive",
        n=4096,
    ),
    sample=sample,
    sample_sizes=sample_sizes,
)
ENGINE = Engine(TOPIC)
