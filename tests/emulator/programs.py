"""A catalogue of small CUDA C programs the emulator has never seen, each with a NumPy reference.

Every `Program` says how to build a launch from a seeded generator (`make`), what the outputs
must be (`reference`, keyed by argument index), which PTX instructions the compiler must emit for
the program to test what it claims to (`ptx_must_contain`), and facts its trace must show.
Source lines that a trace fact points at carry a marker comment `// @TAG`.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

import course

if TYPE_CHECKING:
    from course.emulator.trace import Trace

Args = tuple[Any, ...]
Dim = tuple[int, ...]
I32_MIN, I32_MAX = -(2**31), 2**31 - 1
M32, M64 = 2**32 - 1, 2**64 - 1


class Launch(NamedTuple):
    grid: Dim
    block: Dim
    args: Args  # NumPy arrays (copied to the device) and NumPy scalars
    shared_mem: int = 0


@dataclass(frozen=True)
class Tol:
    """An expected float array with a tolerance of its own."""

    value: np.ndarray
    rtol: float
    atol: float = 0.0


@dataclass(frozen=True)
class Expect:
    """Trace events matching `where` (and touching `buffer`) exist, and all sit on the `// @tag` line.

    `events`, when given, is the exact number of such (warp-level) events.
    """

    tag: str | None
    where: dict[str, Any]
    buffer: str | None = None
    events: int | None = None


@dataclass(frozen=True)
class Program:
    id: str
    source: str
    kernel: str
    make: Callable[[np.random.Generator], Launch]
    reference: Callable[[Args], dict[int, Any]]
    ptx_must_contain: tuple[str, ...] = ()
    rtol: float = 0.0
    atol: float = 0.0
    name_expressions: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    unordered: frozenset[int] = frozenset()  # outputs whose order atomics decide: compared sorted
    expect: tuple[Expect, ...] = ()
    check_trace: Callable[[Trace, Launch], None] | None = None
    needs_header: str | None = None  # a header NVRTC may not find here: skip if it is missing


# ---------------------------------------------------------------- running a program


@dataclass
class Run:
    launch: Launch  # as made: the NumPy inputs, untouched
    names: list[str]  # the kernel's parameter names
    outputs: dict[int, np.ndarray]  # every array argument after the launch
    trace: Trace | None


def kernel_of(program: Program) -> course.Kernel:
    module = course.Module(
        code=program.source, options=program.options, name_expressions=program.name_expressions
    )
    return module.get_function(program.kernel)


def execute(program: Program, rng: np.random.Generator, *, trace: bool = False) -> Run:
    """Build the launch, run it on the active backend (or trace it on the emulator)."""
    launch = program.make(rng)
    kernel = kernel_of(program)
    args = tuple(course.asarray(a) if isinstance(a, np.ndarray) else a for a in launch.args)
    recorded = None
    if trace:
        recorded = kernel.trace(launch.grid, launch.block, args, shared_mem=launch.shared_mem)
    else:
        kernel(launch.grid, launch.block, args, shared_mem=launch.shared_mem)
    outputs = {i: course.asnumpy(a) for i, a in enumerate(args) if isinstance(launch.args[i], np.ndarray)}
    return Run(launch, [p.name for p in kernel.params], outputs, recorded)


def assert_same(label: str, got: np.ndarray, want: Any, rtol: float, atol: float, unordered: bool) -> None:
    """Integers (and floats with no tolerance) must match exactly; NaNs must sit in the same places."""
    if isinstance(want, Tol):
        want, rtol, atol = want.value, want.rtol, want.atol
    want = np.asarray(want)
    assert got.dtype == want.dtype, f"{label}: reference dtype {want.dtype} != output dtype {got.dtype}"
    assert got.shape == want.shape, f"{label}: reference shape {want.shape} != output shape {got.shape}"
    if unordered:
        got, want = np.sort(got, axis=None), np.sort(want, axis=None)
    if got.dtype.kind != "f" or (rtol == 0 and atol == 0):
        np.testing.assert_array_equal(got, want, err_msg=label, strict=True)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=label)


def check_outputs(program: Program, run: Run) -> None:
    expected = program.reference(run.launch.args)
    assert expected, f"{program.id}: the reference checks nothing"
    for i, want in expected.items():
        label = f"{program.id}: output {i} ({run.names[i]})"
        assert_same(label, run.outputs[i], want, program.rtol, program.atol, i in program.unordered)


def line_of(source: str, tag: str) -> int:
    """The 1-based line of `source` holding the marker comment `// @tag`."""
    hits = [n for n, text in enumerate(source.splitlines(), 1) if re.search(rf"//.*@{tag}\b", text)]
    assert len(hits) == 1, f"marker @{tag} found on lines {hits}"
    return hits[0]


def buffer_ids(trace: Trace, name: str) -> list[int]:
    """Indices of the trace buffers called `name` (a static __shared__ variable may be mangled)."""
    return [
        i for i, b in enumerate(trace.buffers)
        if b.name == name or b.name.endswith((f"E{len(name)}{name}", f"::{name}"))
    ]  # fmt: skip


def touching(trace: Trace, name: str) -> Trace:
    """The events in which some active lane accessed the buffer `name`."""
    ids = buffer_ids(trace, name)
    assert ids, f"no buffer {name!r} in the trace; it has {[b.name for b in trace.buffers]}"
    return trace.select(np.isin(trace.buffer, ids).any(axis=1) & trace.lanes().any(axis=1))


def global_thread_ids(trace: Trace) -> np.ndarray:
    """(events, 32) linear global thread id of each lane of a 1-D launch (-1 where inactive)."""
    tid = trace.thread_ids()
    return np.where(tid >= 0, trace.block[:, None].astype(np.int64) * trace.threads_per_block + tid, -1)


# ---------------------------------------------------------------- helpers for data and references


def cu(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def uniform32(rng: np.random.Generator, n: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return rng.uniform(lo, hi, n).astype(np.float32)


def ints(rng: np.random.Generator, n: int, lo: int, hi: int, dtype: Any = np.int32) -> np.ndarray:
    """n integers in [lo, hi] (inclusive)."""
    return rng.integers(lo, hi, n, dtype=dtype, endpoint=True)


def wrap(values: Iterable[int], dtype: Any) -> np.ndarray:
    """Python ints reduced modulo the width of `dtype` (two's complement for signed types)."""
    bits = np.dtype(dtype).itemsize * 8
    out = [v & ((1 << bits) - 1) for v in values]
    if np.dtype(dtype).kind == "i":
        out = [v - (1 << bits) if v >> (bits - 1) else v for v in out]
    return np.array(out, dtype=dtype)


def round_f32(x: Fraction | int, mode: str = "rn") -> np.float32:
    """The exact value x rounded once to float32 ("rn": nearest even, "rz": toward zero)."""
    x = Fraction(x)
    if x == 0:
        return np.float32(0.0)
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while a >= Fraction(2) ** (e + 1):
        e += 1
    while a < Fraction(2) ** e:
        e -= 1
    step = Fraction(2) ** (max(e, -126) - 23)
    q = a / step
    m = q.numerator // q.denominator
    rest = q - m
    if mode == "rn" and (rest > Fraction(1, 2) or (rest == Fraction(1, 2) and m % 2 == 1)):
        m += 1
    value = float(m * step)
    return np.float32(-value if x < 0 else value)


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """fmaf, element by element, exactly rounded."""
    return np.array(
        [round_f32(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))) for x, y, z in zip(a, b, c)],
        dtype=np.float32,
    )


def fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """fma on doubles, exactly rounded (int/int true division in Python rounds correctly)."""
    return np.array(
        [float(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))) for x, y, z in zip(a, b, c)]
    )


def c_div(a: int, b: int) -> tuple[int, int]:
    """C's division: the quotient truncates toward zero and the remainder takes the dividend's sign."""
    q = abs(a) // abs(b)
    q = q if (a < 0) == (b < 0) else -q
    return q, a - b * q


# ---------------------------------------------------------------- the catalogue

PROGRAMS: list[Program] = []


def program(**fields: Any) -> Program:
    p = Program(**fields)
    assert p.id not in {q.id for q in PROGRAMS}, p.id
    PROGRAMS.append(p)
    return p


# -- grid-stride SAXPY: few blocks of 50 threads (not a multiple of 32), awkward lengths

SAXPY = cu("""
    extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
        int stride = blockDim.x * gridDim.x;
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
            y[i] = a * x[i] + y[i];  // @AXPY
        }
    }
""")


def saxpy_make(n: int) -> Callable[[np.random.Generator], Launch]:
    def make(rng: np.random.Generator) -> Launch:
        a = np.float32(rng.uniform(-3, 3))
        return Launch((3,), (50,), (a, uniform32(rng, n), uniform32(rng, n), np.int32(n)))

    return make


def saxpy_reference(args: Args) -> dict[int, Any]:
    a, x, y, _ = args
    return {2: fma32(np.full_like(x, a), x, y)}


def check_grid_stride(trace: Trace, launch: Launch) -> None:
    """Lane l of a warp loads x[first + l + k * stride]; together the lanes load every element once."""
    n, stride = int(launch.args[3]), launch.grid[0] * launch.block[0]
    loads = touching(trace.where(space="global", op="ld"), "x")
    gid, idx = global_thread_ids(loads), loads.index
    on = gid >= 0
    assert np.all((idx[on] - gid[on]) % stride == 0) and np.all(idx[on] >= gid[on])
    np.testing.assert_array_equal(np.sort(idx[on]), np.arange(n))
    stores = touching(trace.where(space="global", op="st"), "y")
    first = [b * launch.block[0] + w * 32 for b in range(launch.grid[0]) for w in range(cdiv(launch.block[0], 32))]
    assert len(stores) == sum(max(0, cdiv(n - g, stride)) for g in first)
    assert set(stores.line) == {line_of(SAXPY, "AXPY")}


for _n in (1, 31, 33, 49, 51, 149, 151, 3001):
    program(
        id=f"saxpy_grid_stride_n{_n}", source=SAXPY, kernel="saxpy", make=saxpy_make(_n),
        reference=saxpy_reference, ptx_must_contain=("fma.rn.f32", "ld.global.f32", "st.global.f32"),
        check_trace=check_grid_stride,
    )  # fmt: skip


# -- tiled shared-memory matmul on sizes that are not multiples of the tile; dim3 grid and block

MATMUL = cu("""
    #define TILE 16
    extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int K, int N) {
        __shared__ float As[TILE][TILE];
        __shared__ float Bs[TILE][TILE];
        int row = blockIdx.y * TILE + threadIdx.y;
        int col = blockIdx.x * TILE + threadIdx.x;
        float acc = 0.0f;
        for (int t = 0; t < K; t += TILE) {
            int ak = t + threadIdx.x, bk = t + threadIdx.y;
            As[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;  // @LOAD_A
            Bs[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;  // @LOAD_B
            __syncthreads();
            for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
            __syncthreads();
        }
        if (row < M && col < N) C[row * N + col] = acc;  // @STORE_C
    }
""")


def matmul_make(rng: np.random.Generator) -> Launch:
    m, k, n = 37, 53, 29
    a = rng.uniform(0.25, 1.0, (m, k)).astype(np.float32)
    b = rng.uniform(0.25, 1.0, (k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    return Launch((cdiv(n, 16), cdiv(m, 16)), (16, 16), (a, b, c, np.int32(m), np.int32(k), np.int32(n)))


def matmul_reference(args: Args) -> dict[int, Any]:
    a, b = args[0].astype(np.float64), args[1].astype(np.float64)
    return {2: (a @ b).astype(np.float32)}


def check_matmul(trace: Trace, launch: Launch) -> None:
    """Thread (tx, ty) of block (bx, by) loads A[row, t + tx] with row = 16 * by + ty."""
    k, gx = int(launch.args[4]), launch.grid[0]
    loads = touching(trace.where(space="global", op="ld"), "A")
    assert set(loads.line) == {line_of(MATMUL, "LOAD_A")}
    tid = loads.thread_ids()
    on = tid >= 0
    row = (loads.block[:, None] // gx) * 16 + tid // 16
    assert np.all((loads.index // k)[on] == row[on])
    assert np.all(((loads.index % k) - tid % 16)[on] % 16 == 0)
    per_tile = trace.where(op="bar")
    assert len(per_tile) == 2 * cdiv(k, 16) * 8 * launch.grid[0] * launch.grid[1]


program(
    id="matmul_tiled_37x53x29", source=MATMUL, kernel="matmul", make=matmul_make, reference=matmul_reference,
    rtol=1e-5, ptx_must_contain=("bar.sync", "ld.shared.f32", "st.shared.f32", "fma.rn.f32"),
    expect=(Expect("STORE_C", {"space": "global", "op": "st"}, buffer="C"),
            Expect("LOAD_B", {"space": "global", "op": "ld"}, buffer="B")),
    check_trace=check_matmul,
)  # fmt: skip


# -- 1-D stencil with halos in shared memory

STENCIL = cu("""
    extern "C" __global__ void stencil(const int* src, const int* w, int* out, int n) {
        __shared__ int s[BLOCK + 2 * RADIUS];
        int g = blockIdx.x * BLOCK + threadIdx.x;
        int l = threadIdx.x + RADIUS;
        s[l] = g < n ? src[g] : 0;  // @CENTER
        if (threadIdx.x < RADIUS) {
            int left = g - RADIUS, right = g + BLOCK;
            s[l - RADIUS] = left >= 0 ? src[left] : 0;  // @LEFT
            s[l + BLOCK] = right < n ? src[right] : 0;  // @RIGHT
        }
        __syncthreads();  // @SYNC
        if (g < n) {
            int acc = 0;
            for (int j = -RADIUS; j <= RADIUS; ++j) acc += w[j + RADIUS] * s[l + j];
            out[g] = acc;
        }
    }
""")
STENCIL_BLOCK, STENCIL_RADIUS = 64, 3


def stencil_make(n: int) -> Callable[[np.random.Generator], Launch]:
    def make(rng: np.random.Generator) -> Launch:
        src, w = ints(rng, n, -1000, 1000), ints(rng, 2 * STENCIL_RADIUS + 1, -5, 5)
        out = np.full(n, -7, np.int32)
        return Launch((cdiv(n, STENCIL_BLOCK),), (STENCIL_BLOCK,), (src, w, out, np.int32(n)))

    return make


def stencil_reference(args: Args) -> dict[int, Any]:
    src, w, _, n = args
    r = STENCIL_RADIUS
    padded = np.concatenate([np.zeros(r, np.int64), src, np.zeros(r, np.int64)])
    out = sum(int(w[j]) * padded[j : j + int(n)] for j in range(2 * r + 1))
    return {2: out.astype(np.int32)}


def check_stencil(trace: Trace, launch: Launch) -> None:
    """The centre load of lane l reads src[g]; the left halo (threads < RADIUS) reads src[g - RADIUS]."""
    loads = touching(trace.where(space="global", op="ld"), "src")
    lines = {tag: line_of(STENCIL, tag) for tag in ("CENTER", "LEFT", "RIGHT")}
    assert set(loads.line) <= set(lines.values()) and lines["CENTER"] in set(loads.line)
    for tag, shift in (("CENTER", 0), ("LEFT", -STENCIL_RADIUS), ("RIGHT", STENCIL_BLOCK)):
        sel = loads.where(line=lines[tag])
        gid = global_thread_ids(sel)
        on = gid >= 0
        np.testing.assert_array_equal(sel.index[on], gid[on] + shift, err_msg=tag)
        if tag != "CENTER":
            assert np.all(sel.thread_ids()[on] < STENCIL_RADIUS), tag


for _n in (STENCIL_BLOCK - 1, STENCIL_BLOCK + 1, 1000):
    program(
        id=f"stencil_1d_shared_halo_n{_n}", source=STENCIL, kernel="stencil", make=stencil_make(_n),
        reference=stencil_reference, options=(f"-DBLOCK={STENCIL_BLOCK}", f"-DRADIUS={STENCIL_RADIUS}"),
        ptx_must_contain=("bar.sync", "st.shared.u32", "ld.shared.u32"),
        expect=(Expect("SYNC", {"op": "bar"}, events=2 * cdiv(_n, STENCIL_BLOCK)),),
        check_trace=check_stencil,
    )  # fmt: skip


# -- a 2-D kernel: dim3 grid and a non-square dim3 block

TRANSPOSE = cu("""
    extern "C" __global__ void transpose_mix(const int* src, int* dst, int H, int W) {
        int x = blockIdx.x * blockDim.x + threadIdx.x;
        int y = blockIdx.y * blockDim.y + threadIdx.y;
        if (x < W && y < H) {
            int v = src[y * W + x];  // @READ
            dst[x * H + y] = 3 * v + y - 2 * x;  // @WRITE
        }
    }
""")


def transpose_make(rng: np.random.Generator) -> Launch:
    h, w = 45, 70
    src = ints(rng, h * w, -10**6, 10**6).reshape(h, w)
    dst = np.zeros((w, h), np.int32)
    return Launch((cdiv(w, 16), cdiv(h, 6)), (16, 6), (src, dst, np.int32(h), np.int32(w)))


def transpose_reference(args: Args) -> dict[int, Any]:
    src = args[0].astype(np.int64)
    h, w = src.shape
    y, x = np.mgrid[0:h, 0:w]
    return {1: (3 * src + y - 2 * x).T.astype(np.int32)}


def check_transpose(trace: Trace, launch: Launch) -> None:
    """Lane (tx, ty) of block (bx, by) reads src[(6 by + ty) * W + 16 bx + tx]."""
    w, gx = int(launch.args[3]), launch.grid[0]
    loads = touching(trace.where(space="global", op="ld"), "src")
    tid = loads.thread_ids()
    on = tid >= 0
    bx, by = loads.block[:, None] % gx, loads.block[:, None] // gx
    want = (6 * by + tid // 16) * w + 16 * bx + tid % 16
    np.testing.assert_array_equal(loads.index[on], want[on])
    assert on.sum() == launch.args[0].size


program(
    id="transpose_2d_block16x6", source=TRANSPOSE, kernel="transpose_mix", make=transpose_make,
    reference=transpose_reference, ptx_must_contain=("%ctaid.y", "%tid.y", "%ntid.y"),
    expect=(Expect("READ", {"space": "global", "op": "ld"}, buffer="src"),
            Expect("WRITE", {"space": "global", "op": "st"}, buffer="dst")),
    check_trace=check_transpose,
)  # fmt: skip


# -- bitonic sort of up to 512 keys in one block (padded with INT_MAX)

BITONIC = cu("""
    #define SIZE 512
    extern "C" __global__ void bitonic(int* data, int n) {
        __shared__ int s[SIZE];
        unsigned t = threadIdx.x;
        s[t] = t < n ? data[t] : 0x7fffffff;
        __syncthreads();
        for (unsigned k = 2; k <= SIZE; k <<= 1) {
            for (unsigned j = k >> 1; j > 0; j >>= 1) {
                unsigned p = t ^ j;
                if (p > t) {
                    int a = s[t], b = s[p];
                    bool up = (t & k) == 0;
                    if ((a > b) == up) { s[t] = b; s[p] = a; }
                }
                __syncthreads();
            }
        }
        if (t < n) data[t] = s[t];
    }
""")


def bitonic_make(n: int) -> Callable[[np.random.Generator], Launch]:
    def make(rng: np.random.Generator) -> Launch:
        data = ints(rng, n, -50, 50) if n > 100 else ints(rng, n, I32_MIN, I32_MAX)
        return Launch((1,), (512,), (data, np.int32(n)))

    return make


for _n in (1, 33, 300, 512):
    program(
        id=f"bitonic_sort_n{_n}", source=BITONIC, kernel="bitonic", make=bitonic_make(_n),
        reference=lambda args: {0: np.sort(args[0])}, ptx_must_contain=("bar.sync", "ld.shared.u32"),
        expect=(Expect(None, {"op": "bar"}, events=16 * 46),),
    )  # fmt: skip


# -- stream compaction: __ballot_sync + __popc per warp, atomicAdd for the block's offset

COMPACT = cu("""
    extern "C" __global__ void compact(const int* x, int* out, int* count, int n) {
        __shared__ int warp_base[32];
        __shared__ int block_base;
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        bool keep = i < n && x[i] % 3 == 0;
        unsigned votes = __ballot_sync(0xffffffffu, keep);  // @BALLOT
        int rank = __popc(votes & ((1u << lane) - 1u));
        if (lane == 0) warp_base[warp] = __popc(votes);
        __syncthreads();
        if (threadIdx.x == 0) {
            int total = 0;
            for (int w = 0; w < (blockDim.x >> 5); ++w) { int c = warp_base[w]; warp_base[w] = total; total += c; }
            block_base = atomicAdd(count, total);  // @BASE
        }
        __syncthreads();
        if (keep) out[block_base + warp_base[warp] + rank] = i;
    }
""")


def compact_make(n: int) -> Callable[[np.random.Generator], Launch]:
    def make(rng: np.random.Generator) -> Launch:
        x = ints(rng, n, -10**6, 10**6)
        x[0] = -3 * int(rng.integers(1, 1000))
        out = np.full(np.count_nonzero(x % 3 == 0), -1, np.int32)  # exactly the kept count: no slack
        return Launch((cdiv(n, 256),), (256,), (x, out, np.zeros(1, np.int32), np.int32(n)))

    return make


def compact_reference(args: Args) -> dict[int, Any]:
    kept = np.flatnonzero(np.fmod(args[0], 3) == 0).astype(np.int32)
    return {1: kept, 2: np.array([len(kept)], np.int32)}


for _n in (33, 3001):
    program(
        id=f"ballot_compaction_n{_n}", source=COMPACT, kernel="compact", make=compact_make(_n),
        reference=compact_reference, unordered=frozenset({1}),
        ptx_must_contain=("vote.sync.ballot.b32", "popc.b32", "atom.global.add.u32"),
        expect=(Expect("BALLOT", {"op": "vote"}, events=8 * cdiv(_n, 256)),
                Expect("BASE", {"space": "global", "op": ["atom", "red"]}, buffer="count", events=cdiv(_n, 256))),
    )  # fmt: skip


# -- warp shuffles: an inclusive block scan built on __shfl_up_sync

SCAN = cu("""
    #define FULL 0xffffffffu
    extern "C" __global__ void block_scan(const int* x, int* out, int n) {
        __shared__ int warp_sums[32];
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
        int v = i < n ? x[i] : 0;
        for (int d = 1; d < 32; d <<= 1) {
            int y = __shfl_up_sync(FULL, v, d);  // @UP
            if (lane >= d) v += y;
        }
        if (lane == 31) warp_sums[warp] = v;
        __syncthreads();
        if (warp == 0) {
            int w = lane < nwarps ? warp_sums[lane] : 0;
            for (int d = 1; d < 32; d <<= 1) {
                int y = __shfl_up_sync(FULL, w, d);  // @UP2
                if (lane >= d) w += y;
            }
            if (lane < nwarps) warp_sums[lane] = w;
        }
        __syncthreads();
        if (warp > 0) v += warp_sums[warp - 1];
        if (i < n) out[i] = v;
    }
""")


def scan_make(rng: np.random.Generator) -> Launch:
    n = 1000
    return Launch((cdiv(n, 128),), (128,), (ints(rng, n, -1000, 1000), np.zeros(n, np.int32), np.int32(n)))


def scan_reference(args: Args) -> dict[int, Any]:
    x = args[0].astype(np.int64)
    out = np.concatenate([np.cumsum(x[s : s + 128]) for s in range(0, len(x), 128)])
    return {1: out.astype(np.int32)}


def check_shuffles(trace: Trace, source: str, tag: str, sources: Callable[[int, np.ndarray], np.ndarray],
                   per_warp: int) -> None:
    """Each warp makes `per_warp` shuffles on the tagged line; the k-th reads lane sources(k, lane) (-1: any)."""
    shfl = trace.where(op="shfl", line=line_of(source, tag))
    assert len(shfl) > 0
    lanes = np.arange(32)
    for key in sorted(set(zip(shfl.block.tolist(), shfl.warp.tolist()))):
        mine = shfl.where(block=key[0], warp=key[1])
        assert len(mine) == per_warp, f"block {key[0]} warp {key[1]}: {len(mine)} shuffles"
        for k in range(per_warp):
            want = sources(k, lanes)
            on = mine.lanes()[k] & (want >= 0)
            np.testing.assert_array_equal(mine.addr[k][on], want[on], err_msg=f"{tag} shuffle {k}")


def check_scan(trace: Trace, launch: Launch) -> None:
    up = lambda k, lane: np.where(lane >= 1 << k, lane - (1 << k), -1)  # noqa: E731
    check_shuffles(trace, SCAN, "UP", up, 5)
    check_shuffles(trace, SCAN, "UP2", up, 5)
    assert set(trace.where(op="shfl", line=line_of(SCAN, "UP2")).warp) == {0}
    assert len(trace.where(op="shfl", line=line_of(SCAN, "UP"))) == 5 * 4 * launch.grid[0]


program(
    id="warp_shfl_up_block_scan", source=SCAN, kernel="block_scan", make=scan_make, reference=scan_reference,
    ptx_must_contain=("shfl.sync.up.b32", "bar.sync"), check_trace=check_scan,
)  # fmt: skip


# -- warp shuffles: sum with __shfl_down_sync, max with __shfl_xor_sync, broadcast with __shfl_sync

REDUCE = cu("""
    #define FULL 0xffffffffu
    extern "C" __global__ void warp_reduce(const int* x, int* sums, int* maxes, int* centered, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        int lane = threadIdx.x & 31, gw = i >> 5;
        int v = i < n ? x[i] : 0;
        int s = v;
        for (int d = 16; d > 0; d >>= 1) s += __shfl_down_sync(FULL, s, d);  // @DOWN
        int m = i < n ? v : (int)0x80000000;
        for (int d = 16; d > 0; d >>= 1) m = max(m, __shfl_xor_sync(FULL, m, d));  // @XOR
        int b = __shfl_sync(FULL, v, 7);  // @IDX
        if (lane == 0) sums[gw] = s;
        if (lane == (gw & 31)) maxes[gw] = m;
        if (i < n) centered[i] = v - b;
    }
""")


def reduce_make(rng: np.random.Generator) -> Launch:
    n, block = 1000, 96
    grid = cdiv(n, block)
    warps = grid * block // 32
    x = ints(rng, n, -10**6, 10**6)
    return Launch((grid,), (block,), (x, np.zeros(warps, np.int32), np.zeros(warps, np.int32),
                                      np.zeros(n, np.int32), np.int32(n)))


def reduce_reference(args: Args) -> dict[int, Any]:
    x, sums = args[0].astype(np.int64), args[1]
    warps = len(sums)
    padded = np.zeros(warps * 32, np.int64)
    padded[: len(x)] = x
    w = padded.reshape(warps, 32)
    for_max = np.full(warps * 32, I32_MIN, np.int64)
    for_max[: len(x)] = x
    centered = x - np.repeat(w[:, 7], 32)[: len(x)]
    return {1: w.sum(1).astype(np.int32), 2: for_max.reshape(warps, 32).max(1).astype(np.int32),
            3: centered.astype(np.int32)}


def check_reduce(trace: Trace, launch: Launch) -> None:
    down = lambda k, lane: np.where(lane + (16 >> k) < 32, lane + (16 >> k), -1)  # noqa: E731
    check_shuffles(trace, REDUCE, "DOWN", down, 5)
    check_shuffles(trace, REDUCE, "XOR", lambda k, lane: lane ^ (16 >> k), 5)
    check_shuffles(trace, REDUCE, "IDX", lambda k, lane: np.full_like(lane, 7), 1)
    assert len(trace.where(op="shfl")) == 11 * launch.grid[0] * launch.block[0] // 32


program(
    id="warp_shfl_down_xor_idx_reduce", source=REDUCE, kernel="warp_reduce", make=reduce_make,
    reference=reduce_reference, check_trace=check_reduce,
    ptx_must_contain=("shfl.sync.down.b32", "shfl.sync.bfly.b32", "shfl.sync.idx.b32"),
)  # fmt: skip


# -- warp votes: __any_sync, __all_sync and __ballot_sync over a partly filled last warp

VOTES = cu("""
    extern "C" __global__ void votes(const int* x, int* any_neg, int* all_pos, unsigned* zeros, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        int v = i < n ? x[i] : 1;
        int a = __any_sync(0xffffffffu, v < 0);
        int b = __all_sync(0xffffffffu, v > 0);
        unsigned z = __ballot_sync(0xffffffffu, v == 0);
        if ((threadIdx.x & 31) == 5) {
            int w = i >> 5;
            any_neg[w] = a;
            all_pos[w] = b;
            zeros[w] = z;
        }
    }
""")


def votes_make(rng: np.random.Generator) -> Launch:
    n = 200
    x = ints(rng, n, 1, 100)
    x[rng.choice([40, 41, 140, 141, 150], 3, replace=False)] = -ints(rng, 3, 1, 9)
    x[rng.choice([70, 75, 150, 151, 195], 3, replace=False)] = 0
    return Launch((4,), (64,), (x, np.full(8, 9, np.int32), np.full(8, 9, np.int32),
                                np.full(8, 9, np.uint32), np.int32(n)))


def votes_reference(args: Args) -> dict[int, Any]:
    v = np.ones(256, np.int64)
    v[: len(args[0])] = args[0]
    w = v.reshape(8, 32)
    ballot = ((w == 0) * (1 << np.arange(32, dtype=np.uint64))).sum(1).astype(np.uint32)
    return {1: (w < 0).any(1).astype(np.int32), 2: (w > 0).all(1).astype(np.int32), 3: ballot}


program(
    id="warp_vote_any_all_ballot", source=VOTES, kernel="votes", make=votes_make, reference=votes_reference,
    ptx_must_contain=("vote.sync.any.pred", "vote.sync.all.pred", "vote.sync.ballot.b32"),
    expect=(Expect(None, {"op": "vote"}, events=3 * 8),),
)  # fmt: skip


# -- __match_any_sync / __match_all_sync

MATCH = cu("""
    extern "C" __global__ void match(const int* keys, unsigned* any_mask, unsigned* all_mask, int* all_pred, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        int k = i < n ? keys[i] : -1;
        unsigned m = __match_any_sync(0xffffffffu, k);  // @ANY
        int p;
        unsigned a = __match_all_sync(0xffffffffu, k, &p);  // @ALL
        if (i < n) {
            any_mask[i] = m;
            all_mask[i] = a;
            all_pred[i] = p;
        }
    }
""")


def match_make(rng: np.random.Generator) -> Launch:
    n = 150
    keys = ints(rng, n, 0, 4)
    keys[32:64] = 3  # one warp where every key agrees
    return Launch((3,), (64,), (keys, np.zeros(n, np.uint32), np.zeros(n, np.uint32), np.zeros(n, np.int32),
                                np.int32(n)))


def match_reference(args: Args) -> dict[int, Any]:
    n = len(args[0])
    k = np.full(192, -1, np.int64)
    k[:n] = args[0]
    w = k.reshape(6, 32)
    bits = 1 << np.arange(32, dtype=np.uint64)
    any_mask = ((w[:, :, None] == w[:, None, :]) * bits).sum(2).astype(np.uint32).ravel()
    same = (w == w[:, :1]).all(1)
    all_mask = np.repeat(np.where(same, M32, 0), 32).astype(np.uint32)
    return {1: any_mask[:n], 2: all_mask[:n], 3: np.repeat(same, 32).astype(np.int32)[:n]}


program(
    id="warp_match_any_all", source=MATCH, kernel="match", make=match_make, reference=match_reference,
    ptx_must_contain=("match.any.sync.b32", "match.all.sync.b32"),
    expect=(Expect("ANY", {"op": "match"}, events=6), Expect("ALL", {"op": "match"}, events=6)),
)  # fmt: skip


# -- __activemask in a divergent branch, after some lanes have returned

ACTIVE = cu("""
    extern "C" __global__ void active(const int* x, unsigned* odd_mask, unsigned* even_mask, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        if (x[i] & 1) {
            odd_mask[i] = __activemask();  // @ODD
        } else {
            even_mask[i] = __activemask() ^ 0x0f0f0f0fu;  // @EVEN
        }
    }
""")


def active_make(rng: np.random.Generator) -> Launch:
    n = 77
    fill = np.full(n, 0xDEADBEEF, np.uint32)
    return Launch((2,), (64,), (ints(rng, n, -1000, 1000), fill, fill.copy(), np.int32(n)))


def branch_masks(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per element: the mask of the lanes of its warp with odd x, and with even x."""
    n = len(x)
    lanes = np.arange(n) % 32
    odd = (x & 1) == 1
    out = []
    for want in (odd, ~odd):
        per_warp = np.zeros(cdiv(n, 32), np.uint64)
        np.add.at(per_warp, np.arange(n) // 32, np.where(want, np.uint64(1) << lanes.astype(np.uint64), 0))
        out.append(per_warp.astype(np.uint32)[np.arange(n) // 32])
    return out[0], out[1]


def active_reference(args: Args) -> dict[int, Any]:
    x, odd_fill, even_fill = args[0], args[1], args[2]
    odd, even = branch_masks(x)
    is_odd = (x & 1) == 1
    return {1: np.where(is_odd, odd, odd_fill), 2: np.where(is_odd, even_fill, even ^ np.uint32(0x0F0F0F0F))}


def check_active(trace: Trace, launch: Launch) -> None:
    """The stores in each branch run with exactly the lanes that took that branch."""
    x = launch.args[0]
    odd, even = branch_masks(x)
    for tag, masks in (("ODD", odd), ("EVEN", even)):
        st = trace.where(op="st", line=line_of(ACTIVE, tag))
        assert len(st) > 0
        first = (st.block.astype(np.int64) * 64 + st.warp * 32)
        np.testing.assert_array_equal(st.mask, masks[first], err_msg=tag)


program(
    id="activemask_divergent_branch", source=ACTIVE, kernel="active", make=active_make,
    reference=active_reference, ptx_must_contain=("activemask.b32",), check_trace=check_active,
)  # fmt: skip


# -- atomicMax on floats through an atomicCAS loop (many lanes of a warp hit the same word)

CAS_FMAX = cu("""
    __device__ float atomic_max_float(float* addr, float val) {
        int* p = (int*)addr;
        int old = *p;
        while (__int_as_float(old) < val) {
            int assumed = old;
            old = atomicCAS(p, assumed, __float_as_int(val));  // @CAS
            if (old == assumed) break;
        }
        return __int_as_float(old);
    }
    extern "C" __global__ void bucket_max(const float* x, const int* bucket, float* out, int n) {
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
            atomic_max_float(&out[bucket[i]], x[i]);
    }
""")


def cas_make(rng: np.random.Generator) -> Launch:
    n = 3001
    x = rng.normal(size=n).astype(np.float32)
    return Launch((5,), (128,), (x, ints(rng, n, 0, 12), np.full(13, -np.inf, np.float32), np.int32(n)))


def cas_reference(args: Args) -> dict[int, Any]:
    out = args[2].copy()
    np.maximum.at(out, args[1], args[0])
    return {2: out}


program(
    id="atomic_cas_float_max", source=CAS_FMAX, kernel="bucket_max", make=cas_make, reference=cas_reference,
    ptx_must_contain=("atom.global.cas.b32",),
    expect=(Expect("CAS", {"space": "global", "op": "atom"}, buffer="out"),),
)  # fmt: skip


# -- atomicAdd on doubles

DSUM = cu("""
    extern "C" __global__ void dsum(const double* x, const int* bin, double* sums, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) atomicAdd(&sums[bin[i]], x[i]);  // @DADD
    }
""")


def dsum_make(rng: np.random.Generator) -> Launch:
    n = 2500
    return Launch((cdiv(n, 256),), (256,), (rng.uniform(0.5, 1.5, n), ints(rng, n, 0, 6),
                                            rng.uniform(-1, 1, 7), np.int32(n)))


def dsum_reference(args: Args) -> dict[int, Any]:
    sums = args[2].copy()
    np.add.at(sums, args[1], args[0])
    return {2: sums}


program(
    id="atomic_add_double", source=DSUM, kernel="dsum", make=dsum_make, reference=dsum_reference, rtol=1e-12,
    ptx_must_contain=("add.f64",),
    expect=(Expect("DADD", {"space": "global", "op": ["atom", "red"]}, buffer="sums", events=cdiv(2500, 32)),),
)  # fmt: skip


# -- every integer atomic on 32-bit int and unsigned (lanes of a warp collide on 7 addresses)

ATOMICS32 = cu("""
    extern "C" __global__ void atomics32(const int* v, int* iadd, int* imin, int* imax, unsigned* umin,
                                         unsigned* umax, unsigned* uand, unsigned* uor, unsigned* uxor,
                                         unsigned* inc, unsigned* dec, int* slots, int* olds, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        int x = v[i], k = i % 7;
        unsigned u = (unsigned)x;
        atomicAdd(&iadd[k], x);
        atomicMin(&imin[k], x);
        atomicMax(&imax[k], x);
        atomicMin(&umin[k], u);
        atomicMax(&umax[k], u);
        atomicAnd(&uand[k], ~(1u << (u & 31u)));
        atomicOr(&uor[k], 1u << ((u >> 5) & 31u));
        atomicXor(&uxor[k], u);
        atomicInc(&inc[k], 17u);
        atomicDec(&dec[k], 23u);
        olds[i] = atomicExch(&slots[i], x);
    }
""")
ATOMIC32_OPS = {"iadd": "add", "imin": "min", "imax": "max", "umin": "min", "umax": "max", "uand": "and",
                "uor": "or", "uxor": "xor", "inc": "inc", "dec": "dec", "slots": "exch"}


def atomics32_make(rng: np.random.Generator) -> Launch:
    n = 1000
    u = lambda lo, hi: ints(rng, 7, lo, hi, np.uint32)  # noqa: E731
    v = ints(rng, n, I32_MIN, I32_MAX)
    v[::97] = ints(rng, len(v[::97]), -3, 3)
    return Launch((cdiv(n, 128),), (128,), (
        v, ints(rng, 7, -1000, 1000), ints(rng, 7, I32_MIN, I32_MAX), ints(rng, 7, I32_MIN, I32_MAX),
        u(0, M32), u(0, M32), u(0, M32), u(0, 255), u(0, M32), u(0, 20), u(0, 30),
        ints(rng, n, I32_MIN, I32_MAX), np.zeros(n, np.int32), np.int32(n)))


def repeat_op(start: int, times: int, step: Callable[[int], int]) -> int:
    for _ in range(times):
        start = step(start)
    return start


def atomics32_reference(args: Args) -> dict[int, Any]:
    v = [int(a) for a in args[0]]
    init = [[int(a) for a in arr] for arr in args[1:11]]
    out: list[list[int]] = [[0] * 7 for _ in range(10)]
    for k in range(7):
        xs = v[k::7]
        us = [x & M32 for x in xs]
        iadd, imin, imax, umin, umax, uand, uor, uxor, inc, dec = (a[k] for a in init)
        for x, u in zip(xs, us):
            iadd, imin, imax = iadd + x, min(imin, x), max(imax, x)
            umin, umax = min(umin, u), max(umax, u)
            uand, uor, uxor = uand & ~(1 << (u & 31)), uor | (1 << ((u >> 5) & 31)), uxor ^ u
        inc = repeat_op(inc, len(xs), lambda o: 0 if o >= 17 else o + 1)
        dec = repeat_op(dec, len(xs), lambda o: 23 if o == 0 or o > 23 else o - 1)
        for j, value in enumerate((iadd, imin, imax, umin, umax, uand, uor, uxor, inc, dec)):
            out[j][k] = value
    dtypes = [np.int32] * 3 + [np.uint32] * 7
    expected = {j + 1: wrap(out[j], dt) for j, dt in enumerate(dtypes)}
    return expected | {11: args[0].copy(), 12: args[11].copy()}


def check_atomic_opcodes(ops: dict[str, str], width: str) -> Callable[[Trace, Launch], None]:
    def check(trace: Trace, launch: Launch) -> None:
        atoms = trace.where(space="global", op=["atom", "red"])
        for name, op in ops.items():
            codes = set(touching(atoms, name).opcode)
            assert codes and all(f".{op}." in c and c.endswith(width) for c in codes), (name, codes)

    return check


program(
    id="atomics_int32_all_ops", source=ATOMICS32, kernel="atomics32", make=atomics32_make,
    reference=atomics32_reference, check_trace=check_atomic_opcodes(ATOMIC32_OPS, "32"),
    ptx_must_contain=("add.u32", "min.s32", "max.s32", "min.u32", "max.u32", "and.b32", "or.b32", "xor.b32",
                      "inc.u32", "dec.u32", "atom.global.exch.b32"),
)  # fmt: skip


# -- 64-bit atomics, and a 64-bit atomicCAS loop

ATOMICS64 = cu("""
    typedef unsigned long long u64;
    extern "C" __global__ void atomics64(const long long* v, u64* uadd, long long* smin, long long* smax,
                                         u64* umin, u64* umax, u64* uand, u64* uor, u64* uxor,
                                         u64* slots, u64* olds, u64* cas_sum, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        long long x = v[i];
        u64 u = (u64)x;
        int k = i % 5;
        atomicAdd(&uadd[k], u);
        atomicMin(&smin[k], x);
        atomicMax(&smax[k], x);
        atomicMin(&umin[k], u);
        atomicMax(&umax[k], u);
        atomicAnd(&uand[k], ~(1ull << (u & 63ull)));
        atomicOr(&uor[k], 1ull << ((u >> 6) & 63ull));
        atomicXor(&uxor[k], u);
        olds[i] = atomicExch(&slots[i], u);
        u64 seen = cas_sum[k], assumed;
        do {
            assumed = seen;
            seen = atomicCAS(&cas_sum[k], assumed, assumed + (u >> 3));  // @CAS64
        } while (seen != assumed);
    }
""")
ATOMIC64_OPS = {"uadd": "add", "smin": "min", "smax": "max", "umin": "min", "umax": "max", "uand": "and",
                "uor": "or", "uxor": "xor", "slots": "exch", "cas_sum": "cas"}


def atomics64_make(rng: np.random.Generator) -> Launch:
    n = 777
    i64 = lambda m: ints(rng, m, -(2**63), 2**63 - 1, np.int64)  # noqa: E731
    u64 = lambda m: ints(rng, m, 0, M64, np.uint64)  # noqa: E731
    return Launch((cdiv(n, 64),), (64,), (
        i64(n), u64(5), i64(5), i64(5), u64(5), u64(5), u64(5), u64(5), u64(5), u64(n),
        np.zeros(n, np.uint64), u64(5), np.int32(n)))


def atomics64_reference(args: Args) -> dict[int, Any]:
    v = [int(a) for a in args[0]]
    init = [[int(a) for a in arr] for arr in args[1:9]] + [[int(a) for a in args[11]]]
    out: list[list[int]] = [[0] * 5 for _ in range(9)]
    for k in range(5):
        uadd, smin, smax, umin, umax, uand, uor, uxor, cas = (a[k] for a in init)
        for x in v[k::5]:
            u = x & M64
            uadd, smin, smax, umin, umax = uadd + u, min(smin, x), max(smax, x), min(umin, u), max(umax, u)
            uand, uor, uxor, cas = uand & ~(1 << (u & 63)), uor | (1 << ((u >> 6) & 63)), uxor ^ u, cas + (u >> 3)
        for j, value in enumerate((uadd, smin, smax, umin, umax, uand, uor, uxor, cas)):
            out[j][k] = value
    dtypes = [np.uint64, np.int64, np.int64] + [np.uint64] * 6
    got = {j + 1: wrap(out[j], dt) for j, dt in enumerate(dtypes[:8])}
    return got | {9: args[0].view(np.uint64).copy(), 10: args[9].copy(), 11: wrap(out[8], np.uint64)}


program(
    id="atomics_int64_all_ops", source=ATOMICS64, kernel="atomics64", make=atomics64_make,
    reference=atomics64_reference, check_trace=check_atomic_opcodes(ATOMIC64_OPS, "64"),
    ptx_must_contain=("add.u64", "min.s64", "max.s64", "min.u64", "max.u64", "and.b64", "or.b64", "xor.b64",
                      "atom.global.exch.b64", "atom.global.cas.b64"),
    expect=(Expect("CAS64", {"space": "global", "op": "atom"}, buffer="cas_sum"),),
)  # fmt: skip


# -- per-block histogram with shared-memory atomics on bytes; 97 threads a block

HISTOGRAM = cu("""
    #define BINS 37
    extern "C" __global__ void histogram(const unsigned char* data, unsigned* hist, int n) {
        __shared__ unsigned s_hist[BINS];
        for (int b = threadIdx.x; b < BINS; b += blockDim.x) s_hist[b] = 0;
        __syncthreads();
        for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
            atomicAdd(&s_hist[data[i] % BINS], 1u);  // @SHARED_ATOM
        __syncthreads();
        for (int b = threadIdx.x; b < BINS; b += blockDim.x) atomicAdd(&hist[b], s_hist[b]);  // @GLOBAL_ATOM
    }
""")


def histogram_make(rng: np.random.Generator) -> Launch:
    n = 5000
    data = ints(rng, n, 0, 255, np.uint8)
    return Launch((7,), (97,), (data, ints(rng, 37, 0, 10, np.uint32), np.int32(n)))


def histogram_reference(args: Args) -> dict[int, Any]:
    return {1: args[1] + np.bincount(args[0] % 37, minlength=37).astype(np.uint32)}


program(
    id="shared_atomic_histogram_block97", source=HISTOGRAM, kernel="histogram", make=histogram_make,
    reference=histogram_reference, ptx_must_contain=("atom.shared.add.u32", "ld.global.u8", "bar.sync"),
    expect=(Expect("SHARED_ATOM", {"space": "shared", "op": ["atom", "red"]}, buffer="s_hist"),
            Expect("GLOBAL_ATOM", {"space": "global", "op": ["atom", "red"]}, buffer="hist", events=7 * 2)),
)  # fmt: skip


# -- a template kernel instantiated through name_expressions

TEMPLATE = cu("""
    template <int BLOCK, typename T>
    __global__ void block_sum(const T* x, T* out, int n) {
        __shared__ T s[BLOCK];
        int i = blockIdx.x * BLOCK + threadIdx.x;
        s[threadIdx.x] = i < n ? x[i] : T(0);
        __syncthreads();
        for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
            if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];  // @TREE
            __syncthreads();
        }
        if (threadIdx.x == 0) out[blockIdx.x] = s[0];
    }
""")
TEMPLATE_NAMES = ("block_sum<128, int>", "block_sum<64, double>")


def template_make(block: int, n: int, dtype: Any) -> Callable[[np.random.Generator], Launch]:
    def make(rng: np.random.Generator) -> Launch:
        x = ints(rng, n, -10**5, 10**5) if dtype == np.int32 else rng.uniform(0.5, 2.0, n)
        return Launch((cdiv(n, block),), (block,), (x, np.zeros(cdiv(n, block), dtype), np.int32(n)))

    return make


def template_reference(block: int) -> Callable[[Args], dict[int, Any]]:
    def reference(args: Args) -> dict[int, Any]:
        x = args[0]
        sums = [x[s : s + block].sum(dtype=np.float64 if x.dtype.kind == "f" else np.int64)
                for s in range(0, len(x), block)]
        return {1: np.array(sums).astype(x.dtype)}

    return reference


program(
    id="template_block_sum_128_int", source=TEMPLATE, kernel=TEMPLATE_NAMES[0], name_expressions=TEMPLATE_NAMES,
    make=template_make(128, 3001, np.int32), reference=template_reference(128),
    ptx_must_contain=("_Z9block_sumILi128EiEvPKT0_PS0_i", "bar.sync"),
    expect=(Expect(None, {"op": "bar"}, events=cdiv(3001, 128) * 4 * 8),),
)  # fmt: skip
program(
    id="template_block_sum_64_double", source=TEMPLATE, kernel=TEMPLATE_NAMES[1],
    name_expressions=TEMPLATE_NAMES, make=template_make(64, 999, np.float64), reference=template_reference(64),
    rtol=1e-13, ptx_must_contain=("ld.shared.f64", "add.f64"),
    expect=(Expect(None, {"op": "bar"}, events=cdiv(999, 64) * 2 * 7),),
)  # fmt: skip


# -- 64-bit integers: wrapping multiply, mul.hi, division by a runtime value and by a constant, big shifts

INT64 = cu("""
    typedef unsigned long long u64;
    extern "C" __global__ void int64_ops(const long long* a, const long long* b, const u64* u, const int* sh, u64 d,
                                         long long* prod, u64* hi, u64* qrun, u64* qconst, u64* rconst,
                                         u64* shl, long long* sar, u64* shr, unsigned* shl32, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        long long x = a[i], y = b[i];
        u64 w = u[i];
        int s = sh[i];
        prod[i] = x * y;
        hi[i] = __umul64hi((u64)x, w);
        qrun[i] = w / d;
        qconst[i] = w / 1000000007ull;
        rconst[i] = w % 1000000007ull;
        shl[i] = w << s;
        sar[i] = x >> s;
        shr[i] = w >> s;
        shl32[i] = (unsigned)w << s;
    }
""")


def int64_make(rng: np.random.Generator) -> Launch:
    n = 513
    i64 = lambda: ints(rng, n, -(2**63), 2**63 - 1, np.int64)  # noqa: E731
    sh = ints(rng, n, 0, 70)
    sh[:8] = [0, 31, 32, 33, 63, 64, 65, 70]
    u = ints(rng, n, 0, M64, np.uint64)
    u[:4] = [0, 1, M64, 2**63]
    out = lambda dt: np.zeros(n, dt)  # noqa: E731
    d = np.uint64(rng.integers(3, 2**40))
    return Launch((cdiv(n, 128),), (128,), (
        i64(), i64(), u, sh, d, out(np.int64), out(np.uint64), out(np.uint64), out(np.uint64), out(np.uint64),
        out(np.uint64), out(np.int64), out(np.uint64), out(np.uint32), np.int32(n)))


def int64_reference(args: Args) -> dict[int, Any]:
    a, b, u, sh = ([int(v) for v in arr] for arr in args[:4])
    d = int(args[4])
    c = 1000000007
    return {
        5: wrap([x * y for x, y in zip(a, b)], np.int64),
        6: wrap([((x & M64) * w) >> 64 for x, w in zip(a, u)], np.uint64),
        7: wrap([w // d for w in u], np.uint64),
        8: wrap([w // c for w in u], np.uint64),
        9: wrap([w % c for w in u], np.uint64),
        # PTX clamps shift amounts to the register width: shl/shr by >= 64 give 0, shr.s gives the sign
        10: wrap([w << s if s < 64 else 0 for w, s in zip(u, sh)], np.uint64),
        11: wrap([x >> min(s, 63) for x, s in zip(a, sh)], np.int64),
        12: wrap([w >> s if s < 64 else 0 for w, s in zip(u, sh)], np.uint64),
        13: wrap([(w & M32) << s if s < 32 else 0 for w, s in zip(u, sh)], np.uint32),
    }


program(
    id="int64_mul_div_shift", source=INT64, kernel="int64_ops", make=int64_make, reference=int64_reference,
    ptx_must_contain=("mul.lo.s64", "mul.hi.u64", "div.u64", "shl.b64", "shr.s64", "shr.u64", "shl.b32"),
)  # fmt: skip


# -- signed division and remainder of negatives, by runtime values and by constants

DIVREM = cu("""
    extern "C" __global__ void divrem(const int* a, const int* b, const long long* la, const long long* lb,
                                      int* q, int* r, int* q7, int* r7, int* qm7, long long* lq, long long* lr,
                                      unsigned* uq, unsigned* ur, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        int x = a[i], y = b[i];
        q[i] = x / y;
        r[i] = x % y;
        q7[i] = x / 7;
        r7[i] = x % 7;
        qm7[i] = x / -7;
        lq[i] = la[i] / lb[i];
        lr[i] = la[i] % lb[i];
        uq[i] = (unsigned)x / (unsigned)y;
        ur[i] = (unsigned)x % (unsigned)y;
    }
""")


def divrem_make(rng: np.random.Generator) -> Launch:
    n = 999
    a = ints(rng, n, I32_MIN + 1, I32_MAX)
    a[: n // 3] = ints(rng, n // 3, -100, 100)
    b = ints(rng, n, -1000, 1000)
    b[b == 0] = -3
    b[::50] = ints(rng, len(b[::50]), I32_MIN + 1, I32_MAX)
    la = ints(rng, n, -(2**62), 2**62, np.int64)
    lb = ints(rng, n, -(2**40), 2**40, np.int64)
    lb[lb == 0] = 5
    lb[::3] = ints(rng, len(lb[::3]), -9, 9, np.int64) | 1
    outs = [np.zeros(n, dt) for dt in [np.int32] * 5 + [np.int64] * 2 + [np.uint32] * 2]
    return Launch((cdiv(n, 128),), (128,), (a, b, la, lb, *outs, np.int32(n)))


def divrem_reference(args: Args) -> dict[int, Any]:
    a, b, la, lb = ([int(v) for v in arr] for arr in args[:4])
    qr = [c_div(x, y) for x, y in zip(a, b)]
    by7 = [c_div(x, 7) for x in a]
    lqr = [c_div(x, y) for x, y in zip(la, lb)]
    ua, ub = [x & M32 for x in a], [y & M32 for y in b]
    return {
        4: wrap([q for q, _ in qr], np.int32), 5: wrap([r for _, r in qr], np.int32),
        6: wrap([q for q, _ in by7], np.int32), 7: wrap([r for _, r in by7], np.int32),
        8: wrap([c_div(x, -7)[0] for x in a], np.int32),
        9: wrap([q for q, _ in lqr], np.int64), 10: wrap([r for _, r in lqr], np.int64),
        11: wrap([x // y for x, y in zip(ua, ub)], np.uint32), 12: wrap([x % y for x, y in zip(ua, ub)], np.uint32),
    }


program(
    id="signed_div_rem_negatives", source=DIVREM, kernel="divrem", make=divrem_make, reference=divrem_reference,
    ptx_must_contain=("div.s32", "rem.s32", "mul.hi.s32", "div.s64", "rem.s64", "div.u32", "rem.u32"),
)  # fmt: skip


# -- bytes and shorts: 8/16-bit loads and stores, sign and zero extension, wrap-around

BYTES = cu("""
    extern "C" __global__ void bytes(const unsigned char* a, const unsigned char* b, const signed char* c,
                                     const short* h, unsigned char* sum8, signed char* mul8, int* widened,
                                     signed char* wrapped, short* h2, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        unsigned char x = a[i], y = b[i];
        signed char z = c[i];
        sum8[i] = x + y;  // @SUM8
        mul8[i] = (signed char)(z * 3);
        widened[i] = z + x;
        signed char w = z;
        w += 100;
        wrapped[i] = w;
        h2[i] = (short)(h[i] * 7 - z);
    }
""")


def bytes_make(rng: np.random.Generator) -> Launch:
    n = 1001
    outs = [np.full(n, 0x5A, dt) for dt in (np.uint8, np.int8, np.int32, np.int8, np.int16)]
    return Launch((cdiv(n, 256),), (256,), (
        ints(rng, n, 0, 255, np.uint8), ints(rng, n, 0, 255, np.uint8), ints(rng, n, -128, 127, np.int8),
        ints(rng, n, -(2**15), 2**15 - 1, np.int16), *outs, np.int32(n)))


def bytes_reference(args: Args) -> dict[int, Any]:
    a, b, c, h = (arr.astype(np.int64) for arr in args[:4])
    return {4: ((a + b) & 0xFF).astype(np.uint8), 5: (c * 3).astype(np.int8), 6: (c + a).astype(np.int32),
            7: (c + 100).astype(np.int8), 8: (h * 7 - c).astype(np.int16)}


def check_bytes(trace: Trace, launch: Launch) -> None:
    """Byte stores are one byte wide and land at consecutive byte addresses within a warp."""
    st = touching(trace.where(space="global", op="st"), "sum8")
    assert set(st.size) == {1} and set(st.line) == {line_of(BYTES, "SUM8")}
    gid = global_thread_ids(st)
    on = gid >= 0
    np.testing.assert_array_equal(st.index[on], gid[on])
    rows = [r[m] for r, m in zip(st.addr, on)]
    assert all(np.all(np.diff(r) == 1) for r in rows)


program(
    id="byte_short_arith_wrap", source=BYTES, kernel="bytes", make=bytes_make, reference=bytes_reference,
    ptx_must_contain=("ld.global.u8", "ld.global.s8", "st.global.u8", "ld.global.u16", "st.global.u16"),
    check_trace=check_bytes,
)  # fmt: skip


# -- bit intrinsics: brev, clz, popc, ffs (32 and 64 bit), byte_perm, bfe, funnel shifts

BITS = cu("""
    typedef unsigned long long u64;
    extern "C" __global__ void bits(const unsigned* x, const unsigned* y, const unsigned* sel, const u64* w,
                                    unsigned* brev, int* clz, int* popc, int* ffs, unsigned* perm,
                                    unsigned* field, unsigned* bfe_u, int* bfe_s, u64* brev64, int* clz64,
                                    int* popc64, int* ffs64, unsigned* fshl, unsigned* fshr, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        unsigned a = x[i], c = y[i], s = sel[i];
        brev[i] = __brev(a);
        clz[i] = __clz((int)a);
        popc[i] = __popc(a);
        ffs[i] = __ffs((int)a);
        perm[i] = __byte_perm(a, c, s);
        field[i] = (a >> 7) & 0x1fffu;
        unsigned pos = c & 63u, len = (c >> 8) & 63u, r;
        int rs;
        asm("bfe.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(pos), "r"(len));
        asm("bfe.s32 %0, %1, %2, %3;" : "=r"(rs) : "r"((int)a), "r"(pos), "r"(len));
        bfe_u[i] = r;
        bfe_s[i] = rs;
        u64 v = w[i];
        brev64[i] = __brevll(v);
        clz64[i] = __clzll((long long)v);
        popc64[i] = __popcll(v);
        ffs64[i] = __ffsll((long long)v);
        fshl[i] = __funnelshift_l(a, c, s >> 16);
        fshr[i] = __funnelshift_rc(a, c, s >> 24);
    }
""")


def bits_make(rng: np.random.Generator) -> Launch:
    n = 300
    x = ints(rng, n, 0, M32, np.uint32)
    x[:6] = [0, M32, 1, 2**31, 0x00F00000, 0x80000001]
    x[6:40] >>= ints(rng, 34, 0, 31, np.uint32)  # leading zeros of every count
    w = ints(rng, n, 0, M64, np.uint64)
    w[:5] = [0, M64, 1, 2**63, 2**40]
    w[5:70] >>= ints(rng, 65, 0, 63, np.uint64)
    outs = [np.zeros(n, dt) for dt in (np.uint32, np.int32, np.int32, np.int32, np.uint32, np.uint32, np.uint32,
                                        np.int32, np.uint64, np.int32, np.int32, np.int32, np.uint32, np.uint32)]
    y = ints(rng, n, 0, M32, np.uint32)
    return Launch((cdiv(n, 128),), (128,), (x, y, ints(rng, n, 0, M32, np.uint32), w, *outs, np.int32(n)))


def bit_reverse(v: int, bits: int) -> int:
    return int(f"{v:0{bits}b}"[::-1], 2)


def ffs(v: int) -> int:
    return (v & -v).bit_length()


def byte_perm(x: int, y: int, s: int) -> int:
    """PTX prmt.b32 (default mode): selector nibble bit 3 replicates the sign bit of the chosen byte."""
    data = (y << 32) | x
    out = 0
    for k in range(4):
        nib = (s >> (4 * k)) & 0xF
        byte = (data >> (8 * (nib & 7))) & 0xFF
        out |= (0xFF if byte & 0x80 else 0) << (8 * k) if nib & 8 else byte << (8 * k)
    return out


def bfe(a: int, pos: int, length: int, signed: bool, width: int = 32) -> int:
    """PTX bfe: the field [pos, pos + len) of a, zero- or sign-extended; clamps past the msb."""
    msb = width - 1
    bit = lambda j: (a >> j) & 1  # noqa: E731
    sbit = 0 if not signed or length == 0 else bit(min(pos + length - 1, msb))
    d = 0
    for j in range(width):
        d |= (bit(pos + j) if j < length and pos + j <= msb else sbit) << j
    return d


def bits_reference(args: Args) -> dict[int, Any]:
    x, y, s, w = ([int(v) for v in arr] for arr in args[:4])
    u32 = lambda vals: wrap(vals, np.uint32)  # noqa: E731
    i32 = lambda vals: wrap(vals, np.int32)  # noqa: E731
    return {
        4: u32([bit_reverse(a, 32) for a in x]), 5: i32([32 - a.bit_length() for a in x]),
        6: i32([a.bit_count() for a in x]), 7: i32([ffs(a) for a in x]),
        8: u32([byte_perm(a, c, t) for a, c, t in zip(x, y, s)]), 9: u32([(a >> 7) & 0x1FFF for a in x]),
        10: u32([bfe(a, c & 63, (c >> 8) & 63, False) for a, c in zip(x, y)]),
        11: i32([bfe(a, c & 63, (c >> 8) & 63, True) for a, c in zip(x, y)]),
        12: wrap([bit_reverse(v, 64) for v in w], np.uint64), 13: i32([64 - v.bit_length() for v in w]),
        14: i32([v.bit_count() for v in w]), 15: i32([ffs(v) for v in w]),
        16: u32([(((c << 32) | a) << ((t >> 16) & 31)) >> 32 for a, c, t in zip(x, y, s)]),
        17: u32([((c << 32) | a) >> min(t >> 24, 32) for a, c, t in zip(x, y, s)]),
    }


program(
    id="bit_intrinsics", source=BITS, kernel="bits", make=bits_make, reference=bits_reference,
    ptx_must_contain=("brev.b32", "clz.b32", "popc.b32", "prmt.b32", "bfe.u32", "bfe.s32", "brev.b64",
                      "clz.b64", "popc.b64", "shf.l.wrap.b32", "shf.r.clamp.b32"),
)  # fmt: skip
