"""A catalogue of small CUDA C programs the emulator has never seen, each with a NumPy reference.

Every `Program` says how to build a launch from a seeded generator (`make`), what the outputs
must be (`reference`, keyed by argument index), which PTX instructions the compiler must emit for
the program to test what it claims to (`ptx_must_contain`), and facts its trace must show.
Source lines that a trace fact points at carry a marker comment `// @TAG`.
"""

from __future__ import annotations

import math
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
    """Trace events matching `where` (and touching `buffer`) exist on the `// @tag` line.

    `only`: no such event sits on any other line. `events`: the exact number of such (warp-level)
    events on the tag line (or in the whole trace when there is no tag).
    """

    tag: str | None
    where: dict[str, Any]
    buffer: str | None = None
    events: int | None = None
    only: bool = True


@dataclass(frozen=True)
class Program:
    id: str
    source: str
    kernel: str
    make: Callable[[np.random.Generator], Launch]
    reference: Callable[[Args], dict[int, Any]]
    ptx_must_contain: tuple[str, ...] = ()
    ptx_must_not_contain: tuple[str, ...] = ()  # tells apart programs whose PTX shares the markers above
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
    """Every output matches the reference, and every other array is as it was (no stray writes)."""
    expected = program.reference(run.launch.args)
    assert expected, f"{program.id}: the reference checks nothing"
    for i, got in run.outputs.items():
        label = f"{program.id}: output {i} ({run.names[i]})"
        if i in expected:
            assert_same(label, got, expected[i], program.rtol, program.atol, i in program.unordered)
        else:
            assert_same(f"{label}, an input", got, run.launch.args[i], 0.0, 0.0, False)


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


def elementwise(name: str) -> Callable[[Trace, Launch], None]:
    """A trace check: lane l of every load of buffer `name` reads element (global thread id)."""

    def check(trace: Trace, launch: Launch) -> None:
        loads = touching(trace.where(space="global", op="ld"), name)
        gid = global_thread_ids(loads)
        on = (gid >= 0) & np.isin(loads.buffer, buffer_ids(trace, name))
        assert on.any()
        np.testing.assert_array_equal(loads.index[on], gid[on], err_msg=f"loads of {name}")
        assert len(np.unique(gid[on])) == len(launch.args[0])

    return check


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


def round_exact(x: Fraction | int, mode: str = "rn", bits: int = 24, emin: int = -126) -> float:
    """The exact value x rounded once to a binary format with `bits` of precision (float32 by default).

    mode: "rn" nearest even, "rz" toward zero, "rd" toward -inf, "ru" toward +inf. No overflow handling.
    """
    x = Fraction(x)
    if x == 0:
        return 0.0
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while a >= Fraction(2) ** (e + 1):
        e += 1
    while a < Fraction(2) ** e:
        e -= 1
    step = Fraction(2) ** (max(e, emin) - (bits - 1))
    q = a / step
    m = q.numerator // q.denominator
    rest = q - m
    away = {"rz": False, "rd": x < 0, "ru": x > 0}.get(mode)
    if (away is None and (rest > Fraction(1, 2) or (rest == Fraction(1, 2) and m % 2 == 1))) or (
        away and rest
    ):
        m += 1
    value = float(m * step)
    return -value if x < 0 else value


def round_f32(x: Fraction | int, mode: str = "rn") -> np.float32:
    return np.float32(round_exact(x, mode))


F32_TINY = np.float32(2.0**-126)  # the smallest normal float32
NO_EMIN = -(2**20)  # round_exact's emin for a format with no subnormals: `bits` of precision at any exponent


def ftz32(a: Any) -> np.ndarray:
    """Values as a float32 instruction with .ftz leaves them: rounded to float32, subnormals flushed.

    Every kernel is compiled with -ftz=true (as CuPy does), so float32 arithmetic carries .ftz: it reads a
    subnormal operand as a zero of its sign, and turns a result below the smallest normal into a zero of
    its sign. A reference follows it by flushing each operation's inputs and its result. The GPU judges a
    result after rounding it to 24 bits as if the exponent had no lower limit, not on the subnormal grid:
    on an H200 __fmul_rn(2^-126, 1 - 2^-24) is 0, although the subnormal grid rounds it up to 2^-126. So
    `a` is float32 values, or float64 values that are exact results (or rounded to 24 bits already), and
    this rounds them to nearest that way before it flushes.
    """
    a = np.asarray(a, np.float64)
    scale = np.where(np.abs(a) < 2.0**-100, 2.0**128, 1.0)  # powers of two: exact, and no float32 subnormals
    with np.errstate(over="ignore"):
        r = (a * scale).astype(np.float32).astype(np.float64) / scale
    return np.where(np.abs(r) < F32_TINY, np.copysign(0.0, a), r).astype(np.float32)


def round_f64(x: Fraction | int, mode: str = "rn") -> float:
    return round_exact(x, mode, 53, -1022)


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
    first = [
        b * launch.block[0] + w * 32 for b in range(launch.grid[0]) for w in range(cdiv(launch.block[0], 32))
    ]
    assert len(stores) == sum(max(0, cdiv(n - g, stride)) for g in first)
    assert set(stores.line) == {line_of(SAXPY, "AXPY")}


for _n in (1, 31, 33, 49, 51, 149, 151, 3001):
    program(
        id=f"saxpy_grid_stride_n{_n}", source=SAXPY, kernel="saxpy", make=saxpy_make(_n),
        reference=saxpy_reference, ptx_must_contain=("fma.rn.ftz.f32", "ld.global.f32", "st.global.f32"),
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
    rtol=1e-5, ptx_must_contain=("bar.sync", "ld.shared.f32", "st.shared.f32", "fma.rn.ftz.f32"),
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
    src = ints(rng, h * w, -(10**6), 10**6).reshape(h, w)
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
        x = ints(rng, n, -(10**6), 10**6)
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


def check_shuffles(
    trace: Trace, source: str, tag: str, sources: Callable[[int, np.ndarray], np.ndarray], per_warp: int
) -> None:
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
    x = ints(rng, n, -(10**6), 10**6)
    return Launch(
        (grid,),
        (block,),
        (x, np.zeros(warps, np.int32), np.zeros(warps, np.int32), np.zeros(n, np.int32), np.int32(n)),
    )


def reduce_reference(args: Args) -> dict[int, Any]:
    x, sums = args[0].astype(np.int64), args[1]
    warps = len(sums)
    padded = np.zeros(warps * 32, np.int64)
    padded[: len(x)] = x
    w = padded.reshape(warps, 32)
    for_max = np.full(warps * 32, I32_MIN, np.int64)
    for_max[: len(x)] = x
    centered = x - np.repeat(w[:, 7], 32)[: len(x)]
    return {
        1: w.sum(1).astype(np.int32),
        2: for_max.reshape(warps, 32).max(1).astype(np.int32),
        3: centered.astype(np.int32),
    }


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
    return Launch(
        (4,),
        (64,),
        (x, np.full(8, 9, np.int32), np.full(8, 9, np.int32), np.full(8, 9, np.uint32), np.int32(n)),
    )


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
    return Launch(
        (3,),
        (64,),
        (keys, np.zeros(n, np.uint32), np.zeros(n, np.uint32), np.zeros(n, np.int32), np.int32(n)),
    )


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
    expect=(Expect("ANY", {"op": "match", "opcode": "match.any.sync.b32"}, events=6),
            Expect("ALL", {"op": "match", "opcode": "match.all.sync.b32"}, events=6)),
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
        first = st.block.astype(np.int64) * 64 + st.warp * 32
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
    return Launch(
        (cdiv(n, 256),),
        (256,),
        (rng.uniform(0.5, 1.5, n), ints(rng, n, 0, 6), rng.uniform(-1, 1, 7), np.int32(n)),
    )


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
ATOMIC32_OPS = {
    "iadd": "add",
    "imin": "min",
    "imax": "max",
    "umin": "min",
    "umax": "max",
    "uand": "and",
    "uor": "or",
    "uxor": "xor",
    "inc": "inc",
    "dec": "dec",
    "slots": "exch",
}


def atomics32_make(rng: np.random.Generator) -> Launch:
    n = 1000
    u = lambda lo, hi: ints(rng, 7, lo, hi, np.uint32)  # noqa: E731
    v = ints(rng, n, I32_MIN, I32_MAX)
    v[::97] = ints(rng, len(v[::97]), -3, 3)
    return Launch(
        (cdiv(n, 128),),
        (128,),
        (
            v,
            ints(rng, 7, -1000, 1000),
            ints(rng, 7, I32_MIN, I32_MAX),
            ints(rng, 7, I32_MIN, I32_MAX),
            u(0, M32),
            u(0, M32),
            u(0, M32),
            u(0, 255),
            u(0, M32),
            u(0, 20),
            u(0, 30),
            ints(rng, n, I32_MIN, I32_MAX),
            np.zeros(n, np.int32),
            np.int32(n),
        ),
    )


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
ATOMIC64_OPS = {
    "uadd": "add",
    "smin": "min",
    "smax": "max",
    "umin": "min",
    "umax": "max",
    "uand": "and",
    "uor": "or",
    "uxor": "xor",
    "slots": "exch",
    "cas_sum": "cas",
}


def atomics64_make(rng: np.random.Generator) -> Launch:
    n = 777
    i64 = lambda m: ints(rng, m, -(2**63), 2**63 - 1, np.int64)  # noqa: E731
    u64 = lambda m: ints(rng, m, 0, M64, np.uint64)  # noqa: E731
    return Launch(
        (cdiv(n, 64),),
        (64,),
        (
            i64(n),
            u64(5),
            i64(5),
            i64(5),
            u64(5),
            u64(5),
            u64(5),
            u64(5),
            u64(5),
            u64(n),
            np.zeros(n, np.uint64),
            u64(5),
            np.int32(n),
        ),
    )


def atomics64_reference(args: Args) -> dict[int, Any]:
    v = [int(a) for a in args[0]]
    init = [[int(a) for a in arr] for arr in args[1:9]] + [[int(a) for a in args[11]]]
    out: list[list[int]] = [[0] * 5 for _ in range(9)]
    for k in range(5):
        uadd, smin, smax, umin, umax, uand, uor, uxor, cas = (a[k] for a in init)
        for x in v[k::5]:
            u = x & M64
            uadd, smin, smax, umin, umax = uadd + u, min(smin, x), max(smax, x), min(umin, u), max(umax, u)
            uand, uor, uxor, cas = (
                uand & ~(1 << (u & 63)),
                uor | (1 << ((u >> 6) & 63)),
                uxor ^ u,
                cas + (u >> 3),
            )
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
        x = ints(rng, n, -(10**5), 10**5) if dtype == np.int32 else rng.uniform(0.5, 2.0, n)
        return Launch((cdiv(n, block),), (block,), (x, np.zeros(cdiv(n, block), dtype), np.int32(n)))

    return make


def template_reference(block: int) -> Callable[[Args], dict[int, Any]]:
    def reference(args: Args) -> dict[int, Any]:
        x = args[0]
        sums = [
            x[s : s + block].sum(dtype=np.float64 if x.dtype.kind == "f" else np.int64)
            for s in range(0, len(x), block)
        ]
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
    return Launch(
        (cdiv(n, 128),),
        (128,),
        (
            i64(),
            i64(),
            u,
            sh,
            d,
            out(np.int64),
            out(np.uint64),
            out(np.uint64),
            out(np.uint64),
            out(np.uint64),
            out(np.uint64),
            out(np.int64),
            out(np.uint64),
            out(np.uint32),
            np.int32(n),
        ),
    )


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
    check_trace=elementwise("a"),
    ptx_must_contain=("mul.lo.s64", "mul.hi.u64", "div.u64", "shl.b64", "shr.s64", "shr.u64", "shl.b32"),
)  # fmt: skip


# -- signed division and remainder of negatives, by runtime values and by constants

DIVREM = cu("""
    extern "C" __global__ void divrem(const int* a, const int* b, const int* m, const long long* la,
                                      const long long* lb, int* q, int* r, int* q7, int* r7, int* qm7,
                                      long long* lq, long long* lr, unsigned* uq, unsigned* ur, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        int x = a[i], y = b[i];
        q[i] = x / y;
        r[i] = x % m[i];
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
    b[b == 0] = -3
    m = ints(rng, n, -70, 70)
    m[m == 0] = 9
    m[::40] = ints(rng, len(m[::40]), 2**20, 2**31 - 1) * rng.choice([-1, 1], len(m[::40])).astype(np.int32)
    la = ints(rng, n, -(2**62), 2**62, np.int64)
    lb = ints(rng, n, -(2**40), 2**40, np.int64)
    lb[lb == 0] = 5
    lb[::3] = ints(rng, len(lb[::3]), -9, 9, np.int64) | 1
    outs = [np.zeros(n, dt) for dt in [np.int32] * 5 + [np.int64] * 2 + [np.uint32] * 2]
    return Launch((cdiv(n, 128),), (128,), (a, b, m, la, lb, *outs, np.int32(n)))


def divrem_reference(args: Args) -> dict[int, Any]:
    a, b, m, la, lb = ([int(v) for v in arr] for arr in args[:5])
    qs = [c_div(x, y)[0] for x, y in zip(a, b)]
    rs = [c_div(x, y)[1] for x, y in zip(a, m)]
    by7 = [c_div(x, 7) for x in a]
    lqr = [c_div(x, y) for x, y in zip(la, lb)]
    ua, ub = [x & M32 for x in a], [y & M32 for y in b]
    return {
        5: wrap(qs, np.int32),
        6: wrap(rs, np.int32),
        7: wrap([q for q, _ in by7], np.int32),
        8: wrap([r for _, r in by7], np.int32),
        9: wrap([c_div(x, -7)[0] for x in a], np.int32),
        10: wrap([q for q, _ in lqr], np.int64),
        11: wrap([r for _, r in lqr], np.int64),
        12: wrap([x // y for x, y in zip(ua, ub)], np.uint32),
        13: wrap([x % y for x, y in zip(ua, ub)], np.uint32),
    }


program(
    id="signed_div_rem_negatives", source=DIVREM, kernel="divrem", make=divrem_make, reference=divrem_reference,
    check_trace=elementwise("a"),
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
    return Launch(
        (cdiv(n, 256),),
        (256,),
        (
            ints(rng, n, 0, 255, np.uint8),
            ints(rng, n, 0, 255, np.uint8),
            ints(rng, n, -128, 127, np.int8),
            ints(rng, n, -(2**15), 2**15 - 1, np.int16),
            *outs,
            np.int32(n),
        ),
    )


def bytes_reference(args: Args) -> dict[int, Any]:
    a, b, c, h = (arr.astype(np.int64) for arr in args[:4])
    return {
        4: ((a + b) & 0xFF).astype(np.uint8),
        5: (c * 3).astype(np.int8),
        6: (c + a).astype(np.int32),
        7: (c + 100).astype(np.int8),
        8: (h * 7 - c).astype(np.int16),
    }


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
    ptx_must_contain=("ld.global.u8", "cvt.s32.s8", "st.global.u8", "ld.global.u16", "st.global.u16"),
    check_trace=check_bytes,
)  # fmt: skip


# -- bit intrinsics: brev, clz, popc, ffs (32 and 64 bit), byte_perm, bfe, funnel shifts

BITS = cu("""
    typedef unsigned long long u64;
    extern "C" __global__ void bits(const unsigned* x, const unsigned* y, const unsigned* sel, const u64* w,
                                    unsigned* brev, int* clz, int* popc, int* ffs, unsigned* perm,
                                    unsigned* field, unsigned* bfe_u, int* bfe_s, u64* brev64, int* clz64,
                                    int* popc64, int* ffs64, unsigned* fshl, unsigned* fshr, unsigned* prmt,
                                    int n) {
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
        asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(c), "r"(s));
        prmt[i] = r;
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
    outs = [
        np.zeros(n, dt)
        for dt in (
            np.uint32,
            np.int32,
            np.int32,
            np.int32,
            np.uint32,
            np.uint32,
            np.uint32,
            np.int32,
            np.uint64,
            np.int32,
            np.int32,
            np.int32,
            np.uint32,
            np.uint32,
            np.uint32,
        )
    ]
    y = ints(rng, n, 0, M32, np.uint32)
    return Launch((cdiv(n, 128),), (128,), (x, y, ints(rng, n, 0, M32, np.uint32), w, *outs, np.int32(n)))


def bit_reverse(v: int, bits: int) -> int:
    return int(f"{v:0{bits}b}"[::-1], 2)


def ffs(v: int) -> int:
    return (v & -v).bit_length()


def byte_perm(x: int, y: int, s: int) -> int:
    """PTX prmt.b32 (default mode): selector nibble bit 3 replicates the sign bit of the chosen byte.

    __byte_perm masks the selector with 0x7777 first, so only raw prmt sees that bit.
    """
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
        4: u32([bit_reverse(a, 32) for a in x]),
        5: i32([32 - a.bit_length() for a in x]),
        6: i32([a.bit_count() for a in x]),
        7: i32([ffs(a) for a in x]),
        8: u32([byte_perm(a, c, t & 0x7777) for a, c, t in zip(x, y, s)]),
        9: u32([(a >> 7) & 0x1FFF for a in x]),
        10: u32([bfe(a, c & 63, (c >> 8) & 63, False) for a, c in zip(x, y)]),
        11: i32([bfe(a, c & 63, (c >> 8) & 63, True) for a, c in zip(x, y)]),
        12: wrap([bit_reverse(v, 64) for v in w], np.uint64),
        13: i32([64 - v.bit_length() for v in w]),
        14: i32([v.bit_count() for v in w]),
        15: i32([ffs(v) for v in w]),
        16: u32([(((c << 32) | a) << ((t >> 16) & 31)) >> 32 for a, c, t in zip(x, y, s)]),
        17: u32([((c << 32) | a) >> min(t >> 24, 32) for a, c, t in zip(x, y, s)]),
        18: u32([byte_perm(a, c, t) for a, c, t in zip(x, y, s)]),
    }


program(
    id="bit_intrinsics", source=BITS, kernel="bits", make=bits_make, reference=bits_reference,
    check_trace=elementwise("x"),
    ptx_must_contain=("brev.b32", "clz.b32", "popc.b32", "prmt.b32", "bfe.u32", "bfe.s32", "brev.b64",
                      "clz.b64", "popc.b64", "shf.l.wrap.b32", "shf.r.clamp.b32"),
)  # fmt: skip


# -- single precision: fmaf, sqrtf, 1/x, division, the four roundings (all exactly rounded without fast math)

FLOATS = cu("""
    extern "C" __global__ void fops(const float* a, const float* b, const float* c, float* fma_out, float* sq,
                                    float* rcp, float* quot, float* rnd, float* flo, float* cei, float* trn,
                                    float* absdiff, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float x = a[i], y = b[i], z = c[i];
        fma_out[i] = fmaf(x, y, z);
        sq[i] = sqrtf(x);
        rcp[i] = 1.0f / y;
        quot[i] = x / y;
        rnd[i] = rintf(z);
        flo[i] = floorf(z);
        cei[i] = ceilf(z);
        trn[i] = truncf(z);
        absdiff[i] = fabsf(x - y);
    }
""")


def floats_make(rng: np.random.Generator) -> Launch:
    n = 333
    a = uniform32(rng, n, 0, 100)
    a[:3] = [0, 2, 1e-30]
    b = uniform32(rng, n, -10, 10)
    b[:3] = [3, -7, 1e-30]
    c = (rng.integers(-20, 20, n) + rng.choice([0.5, 0.25, 0.75, 0.0, 0.49999997], n)).astype(np.float32)
    c[:8] = [-0.5, 0.5, 1.5, 2.5, -2.5, 8388609.0, -0.0, 3e9]
    outs = [np.zeros(n, np.float32) for _ in range(9)]
    return Launch((cdiv(n, 128),), (128,), (a, b, c, *outs, np.int32(n)))


def floats_reference(args: Args) -> dict[int, Any]:
    a, b, c = args[:3]
    return {
        3: fma32(a, b, c),
        4: np.sqrt(a),
        5: np.float32(1) / b,
        6: a / b,
        7: np.rint(c),
        8: np.floor(c),
        9: np.ceil(c),
        10: np.trunc(c),
        11: np.abs(a - b),
    }


program(
    id="float_ops_exact_rounding", source=FLOATS, kernel="fops", make=floats_make, reference=floats_reference,
    check_trace=elementwise("a"),
    ptx_must_contain=("fma.rn.ftz.f32", "sqrt.rn.ftz.f32", "rcp.rn.ftz.f32", "div.rn.ftz.f32",
                      "cvt.rni.f32.f32", "cvt.rmi.ftz.f32.f32", "cvt.rpi.ftz.f32.f32", "cvt.rzi.f32.f32",
                      "abs.ftz.f32"),
)  # fmt: skip


# -- conversions between floats and integers: rounding modes and saturation at the ends of the range

CONVERT = cu("""
    extern "C" __global__ void convert(const float* f, const int* iv, const unsigned long long* uv, const double* dv,
                                       int* rn, unsigned* urz, int* cast_i, unsigned* cast_u, float* sat,
                                       float* i2f, float* i2f_rz, float* u64_2f, int* d2i, float* d2f,
                                       long long* f2ll, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float x = f[i];
        rn[i] = __float2int_rn(x);
        urz[i] = __float2uint_rz(x);
        cast_i[i] = (int)x;
        cast_u[i] = (unsigned)x;
        sat[i] = __saturatef(x);
        i2f[i] = (float)iv[i];
        i2f_rz[i] = __int2float_rz(iv[i]);
        u64_2f[i] = (float)uv[i];
        d2i[i] = __double2int_rn(dv[i]);
        d2f[i] = (float)dv[i];
        f2ll[i] = __float2ll_rd(x);
    }
""")
SPECIAL_FLOATS = [
    0.5,
    1.5,
    2.5,
    -0.5,
    -1.5,
    -2.5,
    -0.7,
    0.7,
    2147483520.0,
    2147483648.0,
    -2147483648.0,
    -2147483904.0,
    3e9,
    4294967040.0,
    4294967296.0,
    5e9,
    -5e9,
    1e20,
    -1e20,
    np.inf,
    -np.inf,
    -0.0,
    0.99999994,
    1.0000001,
    9.3e18,
    -9.3e18,
]


def convert_make(rng: np.random.Generator) -> Launch:
    n = 200
    f = (rng.uniform(-1e3, 1e3, n) * rng.choice([1, 1e-3, 1e6], n)).astype(np.float32)
    f[: len(SPECIAL_FLOATS)] = SPECIAL_FLOATS
    iv = ints(rng, n, I32_MIN, I32_MAX)
    iv[:4] = [16777217, -16777217, I32_MAX, I32_MIN]
    uv = ints(rng, n, 0, M64, np.uint64) >> ints(rng, n, 0, 60, np.uint64)
    uv[:2] = [2**24 + 1, M64]
    dv = rng.uniform(-3e9, 3e9, n) * rng.choice([1, 1e-9, 1e290], n)
    dv[:6] = [0.5, 1.5, -2.5, 3.4e38, 3.5e38, 1e-50]
    outs = [
        np.zeros(n, dt)
        for dt in (
            np.int32,
            np.uint32,
            np.int32,
            np.uint32,
            np.float32,
            np.float32,
            np.float32,
            np.float32,
            np.int32,
            np.float32,
            np.int64,
        )
    ]
    return Launch((cdiv(n, 64),), (64,), (f, iv, uv, dv, *outs, np.int32(n)))


def saturate(v: np.ndarray, lo: int, hi: int, dtype: Any) -> np.ndarray:
    """Float to integer as PTX cvt does it: values past the range clamp to its ends (no NaNs here)."""
    return np.array([lo if x <= lo else hi if x >= hi else int(x) for x in v.astype(np.float64)], dtype)


def convert_reference(args: Args) -> dict[int, Any]:
    f, iv, uv, dv = args[:4]
    f, d2f = ftz32(f), ftz32(dv)  # cvt.*.ftz: float32 subnormals in (and out of double -> float) are zeros
    return {
        4: saturate(np.rint(f), I32_MIN, I32_MAX, np.int32),
        5: saturate(np.trunc(f), 0, M32, np.uint32),
        6: saturate(np.trunc(f), I32_MIN, I32_MAX, np.int32),
        7: saturate(np.trunc(f), 0, M32, np.uint32),
        8: np.where(f > 0, np.minimum(f, np.float32(1)), np.float32(0)),  # .sat: -0 (and NaN) give +0
        9: np.array([round_f32(int(v)) for v in iv], np.float32),
        10: np.array([round_f32(int(v), "rz") for v in iv], np.float32),
        11: np.array([round_f32(int(v)) for v in uv], np.float32),
        12: saturate(np.rint(dv), I32_MIN, I32_MAX, np.int32),
        13: d2f,
        14: saturate(np.floor(f), -(2**63), 2**63 - 1, np.int64),
    }


program(
    id="float_int_conversions_saturating", source=CONVERT, kernel="convert", make=convert_make,
    check_trace=elementwise("f"),
    reference=convert_reference,
    ptx_must_contain=("cvt.rni.ftz.s32.f32", "cvt.rzi.ftz.u32.f32", "cvt.rzi.ftz.s32.f32",
                      "cvt.ftz.sat.f32.f32", "cvt.rn.f32.s32", "cvt.rz.f32.s32", "cvt.rn.f32.u64",
                      "cvt.rni.s32.f64", "cvt.rn.ftz.f32.f64", "cvt.rmi.ftz.s64.f32"),
)  # fmt: skip


# -- double precision: fma, sqrt, division, reciprocal, exp

DOUBLES = cu("""
    extern "C" __global__ void dops(const double* a, const double* b, const double* c, double* fma_out,
                                    double* sq, double* quot, double* rcp, double* ex, double* mixed, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        double x = a[i], y = b[i], z = c[i];
        fma_out[i] = fma(x, y, z);
        sq[i] = sqrt(x);
        quot[i] = x / y;
        rcp[i] = 1.0 / y;
        ex[i] = exp(-x / 16.0);
        mixed[i] = (double)(float)y * 0.25 - (double)(float)z;
    }
""")


def doubles_make(rng: np.random.Generator) -> Launch:
    n = 257
    a = rng.uniform(0, 1e3, n)
    b = rng.uniform(-1e3, 1e3, n) * rng.choice([1, 1e-200, 1e200], n)
    c = rng.uniform(-1, 1, n)
    return Launch((cdiv(n, 64),), (64,), (a, b, c, *(np.zeros(n) for _ in range(6)), np.int32(n)))


def doubles_reference(args: Args) -> dict[int, Any]:
    a, b, c = args[:3]
    fb, fc = ftz32(b).astype(np.float64), ftz32(c).astype(np.float64)  # (float) is cvt.rn.ftz.f32.f64
    mixed = fb * 0.25 - fc  # a power-of-two product is exact: no fma doubt
    return {
        3: fma64(a, b, c),
        4: np.sqrt(a),
        5: a / b,
        6: 1.0 / b,
        7: Tol(np.exp(-a / 16.0), 1e-15),
        8: mixed,
    }


program(
    id="double_precision_ops", source=DOUBLES, kernel="dops", make=doubles_make, reference=doubles_reference,
    check_trace=elementwise("a"),
    ptx_must_contain=("fma.rn.f64", "sqrt.rn.f64", "div.rn.f64", "rcp.rn.f64", "cvt.rn.ftz.f32.f64",
                      "cvt.ftz.f64.f32"),
)  # fmt: skip


# -- softmax over rows: block max then a max-subtracted sum of exponentials (expf and __expf)

SOFTMAX = cu("""
    #define FULL 0xffffffffu
    __device__ float block_reduce(float v, float* red, bool is_max) {
        for (int d = 16; d > 0; d >>= 1) {
            float o = __shfl_xor_sync(FULL, v, d);
            v = is_max ? fmaxf(v, o) : v + o;
        }
        int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        __syncthreads();
        if (lane == 0) red[warp] = v;
        __syncthreads();
        v = red[0];
        for (int w = 1; w < (blockDim.x >> 5); ++w) v = is_max ? fmaxf(v, red[w]) : v + red[w];
        return v;
    }
    extern "C" __global__ void softmax(const float* x, float* y, int cols) {
        __shared__ float red[32];
        const float* row = x + blockIdx.x * cols;
        float m = __int_as_float(0xff800000);
        for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
        m = block_reduce(m, red, true);
        float s = 0.0f;
        for (int c = threadIdx.x; c < cols; c += blockDim.x) s += EXP(row[c] - m);
        s = block_reduce(s, red, false);
        for (int c = threadIdx.x; c < cols; c += blockDim.x) y[blockIdx.x * cols + c] = EXP(row[c] - m) / s;
    }
""")


def softmax_make(rng: np.random.Generator) -> Launch:
    rows, cols = 37, 300
    x = (rng.normal(size=(rows, cols)) * 3 + rng.uniform(-200, 200, (rows, 1))).astype(np.float32)
    return Launch((rows,), (128,), (x, np.zeros_like(x), np.int32(cols)))


def softmax_reference(args: Args) -> dict[int, Any]:
    x = args[0].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {1: (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}


# both end in the hardware ex2.approx (.ftz, like all their float32 arithmetic); only expf's accurate
# range reduction rounds toward -inf (fma.rm), so that instruction tells the library from the intrinsic
SOFTMAX_REDUCTION = ("fma.rm.ftz.f32",)
for _exp, _rtol, _has, _lacks in (
    ("expf", 1e-5, SOFTMAX_REDUCTION, ()),
    ("__expf", 1e-4, (), SOFTMAX_REDUCTION),
):
    program(
        id=f"softmax_{_exp.strip('_')}{'_fast' if _exp.startswith('__') else ''}", source=SOFTMAX,
        kernel="softmax", options=(f"-DEXP={_exp}",), make=softmax_make, reference=softmax_reference,
        rtol=_rtol, atol=1e-12, ptx_must_not_contain=_lacks,
        ptx_must_contain=("ex2.approx.ftz.f32", *_has, "shfl.sync.bfly.b32", "max.ftz.f32", "bar.sync"),
        expect=(Expect(None, {"op": "shfl"}, events=37 * 4 * 2 * 5), Expect(None, {"op": "bar"}, events=37 * 4 * 2 * 2),
                Expect(None, {"space": "global", "op": "st"}, buffer="y", events=37 * cdiv(300, 32))),
    )  # fmt: skip


# -- transcendentals: the accurate library versions and the fast hardware approximations

TRANSCENDENTAL = cu("""
    extern "C" __global__ void transcendental(const float* x, const float* p, float* s, float* c, float* l,
                                              float* l2, float* fs, float* fc, float* fl2, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float v = x[i], q = p[i];
        s[i] = sinf(v);
        c[i] = cosf(v);
        l[i] = logf(q);
        l2[i] = log2f(q);
        fs[i] = __sinf(v * 0.0625f);
        fc[i] = __cosf(v * 0.0625f);
        fl2[i] = __log2f(q);
    }
""")


def transcendental_make(rng: np.random.Generator) -> Launch:
    n = 401
    x = uniform32(rng, n, -50, 50)
    x[:3] = [0, 1e-3, 49.5]
    p = (rng.uniform(0.1, 10, n) * rng.choice([1e-20, 1, 1e20], n)).astype(np.float32)
    p[:3] = [1, 2, 0.5]
    return Launch((cdiv(n, 128),), (128,), (x, p, *(np.zeros(n, np.float32) for _ in range(7)), np.int32(n)))


def transcendental_reference(args: Args) -> dict[int, Any]:
    x, p = (a.astype(np.float64) for a in args[:2])
    f32 = lambda v, rtol, atol: Tol(v.astype(np.float32), rtol, atol)  # noqa: E731
    return {
        2: f32(np.sin(x), 2e-6, 1e-7),
        3: f32(np.cos(x), 2e-6, 1e-7),
        4: f32(np.log(p), 2e-6, 1e-7),
        5: f32(np.log2(p), 2e-6, 1e-7),
        6: f32(np.sin(x / 16), 0, 2e-6),
        7: f32(np.cos(x / 16), 0, 2e-6),
        8: f32(np.log2(p), 1e-5, 2e-6),
    }


program(
    id="transcendentals_accurate_and_fast", source=TRANSCENDENTAL, kernel="transcendental",
    check_trace=elementwise("x"),
    make=transcendental_make, reference=transcendental_reference,
    ptx_must_contain=("sin.approx.ftz.f32", "cos.approx.ftz.f32", "lg2.approx"),
)  # fmt: skip


# -- NaN handling: fminf/fmaxf return the other operand; a comparison-based select does not

NANS = cu("""
    extern "C" __global__ void nan_minmax(const float* a, const float* b, const double* c, const double* d,
                                          float* mn, float* mx, double* dmn, double* dmx, float* sel, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        mn[i] = fminf(a[i], b[i]);
        mx[i] = fmaxf(a[i], b[i]);
        dmn[i] = fmin(c[i], d[i]);
        dmx[i] = fmax(c[i], d[i]);
        sel[i] = a[i] < b[i] ? a[i] : b[i];
    }
""")


def nans_make(rng: np.random.Generator) -> Launch:
    n = 65
    a, b = uniform32(rng, n, -5, 5), uniform32(rng, n, -5, 5)
    a[::4], b[1::4] = np.nan, np.nan
    b[::8] = np.nan
    a[2::9], b[3::9] = np.inf, -np.inf
    c, d = a.astype(np.float64), b[::-1].astype(np.float64)
    outs = [np.zeros(n, dt) for dt in (np.float32, np.float32, np.float64, np.float64, np.float32)]
    return Launch((1,), (96,), (a, b, c, d, *outs, np.int32(n)))


def nans_reference(args: Args) -> dict[int, Any]:
    a, b, c, d = args[:4]
    return {4: np.fmin(a, b), 5: np.fmax(a, b), 6: np.fmin(c, d), 7: np.fmax(c, d), 8: np.where(a < b, a, b)}


program(
    id="nan_fminf_fmaxf", source=NANS, kernel="nan_minmax", make=nans_make, reference=nans_reference,
    check_trace=elementwise("a"),
    ptx_must_contain=("min.ftz.f32", "max.ftz.f32", "min.f64", "max.f64", "setp.lt.ftz.f32"),
)  # fmt: skip


# -- half precision: float -> half (round to nearest even, overflow to inf) -> float

HALF_ASM = cu("""
    extern "C" __global__ void half_round_trip(const float* x, unsigned short* bits, float* back, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        unsigned short h;
        float f;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x[i]));
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
        bits[i] = h;
        back[i] = f;
    }
""")
HALF_HEADER = cu("""
    #include <cuda_fp16.h>
    extern "C" __global__ void half_round_trip(const float* x, unsigned short* bits, float* back, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        __half h = __float2half(x[i]);
        bits[i] = __half_as_ushort(h);
        back[i] = __half2float(h);
    }
""")


def half_make(rng: np.random.Generator) -> Launch:
    n = 129
    x = (rng.normal(size=n) * rng.choice([1e-6, 1e-3, 1, 100, 1e4], n)).astype(np.float32)
    x[:9] = [65504, 65520, 70000, -1e9, 6e-8, 3e-8, 2.98e-8, 1 + 2**-11, 1 + 3 * 2**-11]
    return Launch((cdiv(n, 64),), (64,), (x, np.zeros(n, np.uint16), np.zeros(n, np.float32), np.int32(n)))


def half_reference(args: Args) -> dict[int, Any]:
    with np.errstate(over="ignore"):
        h = args[0].astype(np.float16)
    return {1: h.view(np.uint16), 2: h.astype(np.float32)}


program(
    id="half_conversion_asm", source=HALF_ASM, kernel="half_round_trip", make=half_make, reference=half_reference,
    check_trace=elementwise("x"),
    ptx_must_contain=("cvt.rn.f16.f32", "cvt.f32.f16"),
)  # fmt: skip
program(
    id="half_conversion_cuda_fp16", source=HALF_HEADER, kernel="half_round_trip", make=half_make,
    check_trace=elementwise("x"),
    reference=half_reference, ptx_must_contain=("cvt.rn.f16.f32", "cvt.f32.f16"), needs_header="cuda_fp16.h",
)  # fmt: skip


# -- vector loads and stores: float4 (ld.global.nc.v4.f32) and int2

VECTORS = cu("""
    extern "C" __global__ void vec(const float4* __restrict__ a, const float4* __restrict__ b, float4* out,
                                   const int2* __restrict__ p, int2* q, float s, int n4) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n4) return;
        float4 u = a[i];  // @V4
        float4 v = b[i];
        out[i] = make_float4(s * u.x + v.x, s * u.y + v.y, s * u.z + v.z, s * u.w + v.w);  // @ST4
        int2 t = p[i];
        q[i] = make_int2(t.y - t.x, t.x ^ t.y);
    }
""")


def vectors_make(rng: np.random.Generator) -> Launch:
    n4 = 251
    f4 = lambda: uniform32(rng, 4 * n4, -100, 100).reshape(n4, 4)  # noqa: E731
    return Launch(
        (cdiv(n4, 64),),
        (64,),
        (
            f4(),
            f4(),
            np.zeros((n4, 4), np.float32),
            ints(rng, 2 * n4, -(10**9), 10**9).reshape(n4, 2),
            np.zeros((n4, 2), np.int32),
            np.float32(2.0),
            np.int32(n4),
        ),
    )


def vectors_reference(args: Args) -> dict[int, Any]:
    a, b, _, p = args[:4]
    q = np.stack([p[:, 1].astype(np.int64) - p[:, 0], p[:, 0] ^ p[:, 1]], axis=1).astype(np.int32)
    return {2: a * args[5] + b, 4: q}  # s = 2: the product is exact, so fma and mul+add agree


def check_vectors(trace: Trace, launch: Launch) -> None:
    """A float4 load is one 16-byte access per lane, at element 4 * i of the float buffer."""
    for name, op in (("a", "ld"), ("out", "st")):
        ev = touching(trace.where(space="global", op=op), name)
        assert set(ev.size) == {16}, (name, set(ev.size))
        gid = global_thread_ids(ev)
        on = gid >= 0
        np.testing.assert_array_equal(ev.index[on], 4 * gid[on], err_msg=name)
        assert on.sum() == launch.args[0].shape[0]


program(
    id="float4_int2_vector_access", source=VECTORS, kernel="vec", make=vectors_make, reference=vectors_reference,
    ptx_must_contain=("ld.global.nc.v4.f32", "st.global.v4.f32", "ld.global.nc.v2.u32", "st.global.v2.u32"),
    expect=(Expect("V4", {"space": "global", "op": "ld"}, buffer="a"),
            Expect("ST4", {"space": "global", "op": "st"}, buffer="out")),
    check_trace=check_vectors,
)  # fmt: skip


# -- a local-memory array indexed by a runtime value

LOCAL = cu("""
    extern "C" __global__ void local_pick(const unsigned* x, const int* idx, unsigned* out, int n) {
        unsigned buf[24];
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        unsigned acc = 0;
        for (int j = 0; j < 24; ++j) {
            acc = acc * 2654435761u + x[(i + j) % n];
            buf[j] = acc;  // @LOCAL_ST
        }
        out[i] = buf[idx[i]] ^ buf[idx[(i + 5) % n]];  // @LOCAL_LD
    }
""")


def local_make(rng: np.random.Generator) -> Launch:
    n = 150
    return Launch(
        (3,),
        (64,),
        (ints(rng, n, 0, M32, np.uint32), ints(rng, n, 0, 23), np.zeros(n, np.uint32), np.int32(n)),
    )


def local_reference(args: Args) -> dict[int, Any]:
    x, idx = [int(v) for v in args[0]], [int(v) for v in args[1]]
    n = len(x)
    out = []
    for i in range(n):
        acc, buf = 0, []
        for j in range(24):
            acc = (acc * 2654435761 + x[(i + j) % n]) & M32
            buf.append(acc)
        out.append(buf[idx[i]] ^ buf[idx[(i + 5) % n]])
    return {2: wrap(out, np.uint32)}


program(
    id="local_array_runtime_index", source=LOCAL, kernel="local_pick", make=local_make, reference=local_reference,
    ptx_must_contain=("st.local.v4.u32", "ld.local.u32", ".local .align"),
    expect=(Expect("LOCAL_LD", {"space": "local", "op": "ld"}, events=2 * cdiv(150, 32)),),
)  # fmt: skip


# -- __noinline__ device functions (call.uni), one taking a pointer and doing an atomic

NOINLINE = cu("""
    __device__ __noinline__ int collatz(unsigned v) {
        int steps = 0;
        while (v != 1u && steps < 1000) {
            v = (v & 1u) ? 3u * v + 1u : v >> 1;
            ++steps;
        }
        return steps;
    }
    __device__ __noinline__ void bump(unsigned* counter, unsigned v) {
        atomicAdd(counter, v);  // @BUMP
    }
    extern "C" __global__ void collatz_kernel(const unsigned* x, int* steps, unsigned* total, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) {
            int s = collatz(x[i]);
            steps[i] = s;
            bump(total, (unsigned)s);
        }
    }
""")


def collatz(v: int) -> int:
    steps = 0
    while v != 1 and steps < 1000:
        v = (3 * v + 1) & M32 if v & 1 else v >> 1
        steps += 1
    return steps


def noinline_make(rng: np.random.Generator) -> Launch:
    n = 300
    x = ints(rng, n, 1, 20000, np.uint32)
    x[:3] = [1, 27, 2]
    return Launch((cdiv(n, 128),), (128,), (x, np.zeros(n, np.int32), np.array([5], np.uint32), np.int32(n)))


def noinline_reference(args: Args) -> dict[int, Any]:
    steps = [collatz(int(v)) for v in args[0]]
    return {1: np.array(steps, np.int32), 2: np.array([5 + sum(steps)], np.uint32)}


program(
    id="noinline_device_function_call", source=NOINLINE, kernel="collatz_kernel", make=noinline_make,
    reference=noinline_reference, ptx_must_contain=("call.uni", ".func", "atom.global.add.u32"),
    expect=(Expect("BUMP", {"space": "global", "op": ["atom", "red"]}, buffer="total", events=cdiv(300, 32)),),
)  # fmt: skip


# -- __constant__ arrays read at runtime indices

CONSTANT_TABLE = [(37 * k * k + 11 * k - 500) % 1009 - 504 for k in range(37)]
CONSTANT = cu("""
    __constant__ int table[37] = {TABLE};
    __constant__ float scale[3] = {0.5f, -2.0f, 8.0f};
    extern "C" __global__ void lookup(const int* keys, int* out, float* fout, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        int k = keys[i];
        out[i] = table[k % 37] - table[(k * 7) % 37];  // @CONST
        fout[i] = scale[k % 3] * (float)k;
    }
""").replace("TABLE", ", ".join(map(str, CONSTANT_TABLE)))


def constant_make(rng: np.random.Generator) -> Launch:
    n = 333
    return Launch(
        (cdiv(n, 96),),
        (96,),
        (ints(rng, n, 0, 10**6), np.zeros(n, np.int32), np.zeros(n, np.float32), np.int32(n)),
    )


def constant_reference(args: Args) -> dict[int, Any]:
    k = args[0].astype(np.int64)
    table = np.array(CONSTANT_TABLE)
    scale = np.array([0.5, -2.0, 8.0], np.float32)
    return {1: (table[k % 37] - table[(k * 7) % 37]).astype(np.int32), 2: scale[k % 3] * k.astype(np.float32)}


def check_constant(trace: Trace, launch: Launch) -> None:
    """Each thread reads exactly the table entries k % 37 and 7k % 37 of its key k."""
    keys = launch.args[0].astype(np.int64)
    reads = touching(trace.where(space="const", op="ld"), "table")
    assert set(reads.line) == {line_of(CONSTANT, "CONST")}
    gid = global_thread_ids(reads)
    itemsize = trace.buffers[buffer_ids(trace, "table")[0]].itemsize  # a .b8 array in PTX: may count bytes
    element = reads.index * itemsize // 4
    seen: dict[int, set[int]] = {}
    for g, j in zip(gid[gid >= 0].tolist(), element[gid >= 0].tolist()):
        seen.setdefault(g, set()).add(j)
    assert seen == {g: {k % 37, 7 * k % 37} for g, k in enumerate(keys.tolist())}


program(
    id="constant_memory_table", source=CONSTANT, kernel="lookup", make=constant_make,
    reference=constant_reference, ptx_must_contain=("ld.const.u32", "ld.const.f32", ".const .align 4 .b8 table"),
    check_trace=check_constant,
)  # fmt: skip


# -- __device__ global variables: an atomic ticket counter and an initialised table

DEVICE_GLOBAL = cu("""
    __device__ unsigned int counter;
    __device__ int weights[5] = {3, -1, 4, -1, 5};
    extern "C" __global__ void tickets(const int* x, unsigned* ticket, int* weighted, unsigned* final_count, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        unsigned t = atomicAdd(&counter, 1u);  // @TICKET
        ticket[i] = t;
        weighted[i] = x[i] * weights[i % 5];
        if (t == (unsigned)n - 1u) final_count[0] = atomicAdd(&counter, 0u);
    }
""")


def device_global_make(rng: np.random.Generator) -> Launch:
    n = 1234
    return Launch(
        (cdiv(n, 256),),
        (256,),
        (
            ints(rng, n, -(10**6), 10**6),
            np.zeros(n, np.uint32),
            np.zeros(n, np.int32),
            np.zeros(1, np.uint32),
            np.int32(n),
        ),
    )


def device_global_reference(args: Args) -> dict[int, Any]:
    x, n = args[0], len(args[0])
    w = np.array([3, -1, 4, -1, 5])[np.arange(n) % 5]
    return {1: np.arange(n, dtype=np.uint32), 2: (x * w).astype(np.int32), 3: np.array([n], np.uint32)}


program(
    id="device_global_counter", source=DEVICE_GLOBAL, kernel="tickets", make=device_global_make,
    reference=device_global_reference, unordered=frozenset({1}),
    ptx_must_contain=(".global .align 4 .u32 counter", ".global .align 4 .b8 weights", "atom.global.add.u32"),
    expect=(Expect("TICKET", {"space": "global", "op": "atom"}, buffer="counter", events=cdiv(1234, 32),
                   only=False),),
)  # fmt: skip


# -- dynamic shared memory (extern __shared__) sized by the launch; 100 threads a block

DYNAMIC_SHARED = cu("""
    extern "C" __global__ void reverse_blocks(const int* x, int* out, int* aux, int n) {
        extern __shared__ int dyn[];
        int* rev = dyn;
        int* sq = dyn + blockDim.x;
        int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
        rev[blockDim.x - 1 - t] = i < n ? x[i] : -1;  // @DYN_ST
        sq[t] = t * t;
        __syncthreads();
        if (i < n) {
            out[i] = rev[t];
            aux[i] = sq[blockDim.x - 1 - t] + rev[(t + 1) % blockDim.x];
        }
    }
""")


def dynamic_shared_make(rng: np.random.Generator) -> Launch:
    n, block = 950, 100
    return Launch(
        (cdiv(n, block),),
        (block,),
        (ints(rng, n, -(10**6), 10**6), np.zeros(n, np.int32), np.zeros(n, np.int32), np.int32(n)),
        2 * block * 4,
    )


def dynamic_shared_reference(args: Args) -> dict[int, Any]:
    x, n, b = args[0], len(args[0]), 100
    padded = np.full(cdiv(n, b) * b, -1, np.int64)
    padded[:n] = x
    rev = padded.reshape(-1, b)[:, ::-1]
    t = np.arange(b)
    aux = (b - 1 - t) ** 2 + rev[:, (t + 1) % b]
    return {1: rev.ravel()[:n].astype(np.int32), 2: aux.ravel()[:n].astype(np.int32)}


program(
    id="dynamic_shared_extern_block100", source=DYNAMIC_SHARED, kernel="reverse_blocks", make=dynamic_shared_make,
    reference=dynamic_shared_reference, ptx_must_contain=(".extern .shared", "bar.sync"),
    expect=(Expect("DYN_ST", {"space": "shared", "op": "st"}, buffer="dyn", events=4 * 10, only=False),),
)  # fmt: skip


# -- chained scan across blocks: block b spins on a volatile flag that block b - 1 sets

CHAINED = cu("""
    extern "C" __global__ void chained_scan(const int* x, int* out, int* ticket, volatile int* flags,
                                            volatile int* prefix, int n) {
        __shared__ int s[BLOCK];
        __shared__ int s_bid, s_prev;
        int t = threadIdx.x;
        if (t == 0) s_bid = atomicAdd(ticket, 1);  // @TICKET
        __syncthreads();
        int bid = s_bid, i = bid * BLOCK + t;
        s[t] = i < n ? x[i] : 0;
        __syncthreads();
        for (int d = 1; d < BLOCK; d <<= 1) {
            int v = t >= d ? s[t - d] : 0;
            __syncthreads();
            s[t] += v;
            __syncthreads();
        }
        if (t == 0) {
            int prev = 0;
            if (bid > 0) {
                while (flags[bid - 1] == 0) {}  // @SPIN
                __threadfence();
                prev = prefix[bid - 1];
            }
            prefix[bid] = prev + s[BLOCK - 1];
            __threadfence();
            flags[bid] = 1;  // @FLAG
            s_prev = prev;
        }
        __syncthreads();
        if (i < n) out[i] = s[t] + s_prev;
    }
""")


def chained_make(n: int) -> Callable[[np.random.Generator], Launch]:
    def make(rng: np.random.Generator) -> Launch:
        blocks = cdiv(n, 128)
        z = lambda m: np.zeros(m, np.int32)  # noqa: E731
        return Launch(
            (blocks,), (128,), (ints(rng, n, -100, 100), z(n), z(1), z(blocks), z(blocks), np.int32(n))
        )

    return make


def chained_reference(args: Args) -> dict[int, Any]:
    x, blocks = args[0].astype(np.int64), len(args[3])
    total = np.cumsum(x)
    ends = total[np.minimum(np.arange(1, blocks + 1) * 128, len(x)) - 1]
    return {
        1: total.astype(np.int32),
        2: np.array([blocks], np.int32),
        3: np.ones(blocks, np.int32),
        4: ends.astype(np.int32),
    }


def check_chained(trace: Trace, launch: Launch) -> None:
    """Flags are set in ticket order, and each on the marked line."""
    sets = touching(trace.where(space="global", op="st"), "flags")
    assert set(sets.line) == {line_of(CHAINED, "FLAG")}
    order = sets.index[sets.lanes()]
    np.testing.assert_array_equal(order, np.arange(launch.grid[0]))


for _n in (129, 3001):
    program(
        id=f"chained_scan_lookback_n{_n}", source=CHAINED, kernel="chained_scan", make=chained_make(_n),
        reference=chained_reference, options=("-DBLOCK=128",), check_trace=check_chained,
        ptx_must_contain=("ld.volatile.global.u32", "st.volatile.global.u32", "membar.gl", "atom.global.add.u32"),
        expect=(Expect("TICKET", {"space": "global", "op": "atom"}, buffer="ticket", events=cdiv(_n, 128)),),
    )  # fmt: skip


# -- __syncthreads_count / _or / _and in blocks of 97 threads

BLOCK_VOTES = cu("""
    extern "C" __global__ void block_votes(const int* x, int* counts, int* anys, int* alls, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        int v = i < n ? x[i] : 0;
        int c = __syncthreads_count(v > 0);
        int o = __syncthreads_or(v < -90);
        int a = __syncthreads_and(v != 0);
        if (threadIdx.x == blockDim.x - 1) {
            counts[blockIdx.x] = c;
            anys[blockIdx.x] = o;
            alls[blockIdx.x] = a;
        }
    }
""")


def block_votes_make(rng: np.random.Generator) -> Launch:
    n, block = 500, 97
    x = ints(rng, n, 1, 100) * rng.choice([-1, 1], n).astype(np.int32)
    x[block : 2 * block] = np.maximum(x[block : 2 * block], -90)  # block 1: nothing below -90
    x[[5, 4 * block + 3]] = 0  # blocks 0 and 4: a zero
    blocks = cdiv(n, block)
    return Launch((blocks,), (block,), (x, *(np.full(blocks, 7, np.int32) for _ in range(3)), np.int32(n)))


def block_votes_reference(args: Args) -> dict[int, Any]:
    x, blocks, b = args[0], len(args[1]), 97
    v = np.zeros(blocks * b, np.int64)
    v[: len(x)] = x
    v = v.reshape(blocks, b)
    return {
        1: (v > 0).sum(1).astype(np.int32),
        2: (v < -90).any(1).astype(np.int32),
        3: (v != 0).all(1).astype(np.int32),
    }


program(
    id="syncthreads_count_or_and_block97", source=BLOCK_VOTES, kernel="block_votes", make=block_votes_make,
    reference=block_votes_reference, ptx_must_contain=("bar.red.popc.u32", "bar.red.or.pred", "bar.red.and.pred"),
    expect=(Expect(None, {"op": "bar"}, events=3 * 4 * cdiv(500, 97)),),
)  # fmt: skip


# -- directed rounding: the _rz/_rd/_ru intrinsics on floats and doubles (add, mul, fma, div, sqrt, rcp)

ROUNDING = cu("""
    extern "C" __global__ void rounding(const float* a, const float* b, const double* c, const double* d,
                                        float* f, double* g, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float x = a[i], y = b[i];
        double u = c[i], v = d[i];
        f[0 * n + i] = __fadd_rz(x, y);
        f[1 * n + i] = __fadd_rd(x, y);
        f[2 * n + i] = __fadd_ru(x, y);
        f[3 * n + i] = __fmul_rz(x, y);
        f[4 * n + i] = __fmul_rd(x, y);
        f[5 * n + i] = __fmul_ru(x, y);
        f[6 * n + i] = __fmaf_rz(x, y, x);
        f[7 * n + i] = __fmaf_rd(x, y, x);
        f[8 * n + i] = __fmaf_ru(x, y, x);
        f[9 * n + i] = __fdiv_rz(x, y);
        f[10 * n + i] = __fdiv_rd(x, y);
        f[11 * n + i] = __fdiv_ru(x, y);
        f[12 * n + i] = __fsqrt_rd(fabsf(x));
        f[13 * n + i] = __fsqrt_ru(fabsf(x));
        f[14 * n + i] = __frcp_rz(y);
        f[15 * n + i] = __frcp_ru(y);
        f[16 * n + i] = __fsub_rd(x, y);
        g[0 * n + i] = __dadd_rz(u, v);
        g[1 * n + i] = __dadd_ru(u, v);
        g[2 * n + i] = __dmul_rd(u, v);
        g[3 * n + i] = __dmul_ru(u, v);
        g[4 * n + i] = __fma_rz(u, v, u);
        g[5 * n + i] = __ddiv_ru(u, v);
        g[6 * n + i] = __dsqrt_rd(fabs(u));
        g[7 * n + i] = __drcp_rz(v);
    }
""")


def rounding_make(rng: np.random.Generator) -> Launch:
    n = 203
    scale = lambda: rng.choice([1.0, 1e-3, 1e5, 1e-30], n)  # noqa: E731
    a = (rng.uniform(-10, 10, n) * scale()).astype(np.float32)
    b = (rng.uniform(-10, 10, n) * scale()).astype(np.float32)
    b[b == 0] = 3
    c, d = rng.uniform(-10, 10, n) * scale(), rng.uniform(-10, 10, n) * scale()
    d[:4] = [3.0, -3.0, 7.0, 1e-300]
    return Launch(
        (cdiv(n, 64),), (64,), (a, b, c, d, np.zeros((17, n), np.float32), np.zeros((8, n)), np.int32(n))
    )


def directed_sqrt(x: float, mode: str, dtype: Any) -> float:
    """sqrt(x) rounded down ("rd") or up ("ru"): the nearest result, moved one ulp where needed."""
    r = dtype(np.sqrt(dtype(x)))
    exact, sq = Fraction(float(x)), Fraction(float(r)) ** 2
    if mode == "ru" and sq < exact:
        r = np.nextafter(r, dtype(np.inf))
    if mode == "rd" and sq > exact:
        r = np.nextafter(r, dtype(-np.inf))
    return float(r)


def rounding_reference(args: Args) -> dict[int, Any]:
    fr = lambda arr: [Fraction(float(v)) for v in arr]  # noqa: E731
    a, b = ftz32(args[0]), ftz32(args[1])  # the float32 intrinsics are .ftz instructions
    x, y, u, v = fr(a), fr(b), fr(args[2]), fr(args[3])
    f32 = lambda vals, mode: ftz32([round_exact(t, mode, 24, NO_EMIN) for t in vals])  # noqa: E731
    f64 = lambda vals, mode: [round_f64(t, mode) for t in vals]  # noqa: E731
    add, mul = [a + b for a, b in zip(x, y)], [a * b for a, b in zip(x, y)]
    fma, div = [a * b + a for a, b in zip(x, y)], [a / b for a, b in zip(x, y)]
    f = [
        f32(add, "rz"),
        f32(add, "rd"),
        f32(add, "ru"),
        f32(mul, "rz"),
        f32(mul, "rd"),
        f32(mul, "ru"),
        f32(fma, "rz"),
        f32(fma, "rd"),
        f32(fma, "ru"),
        f32(div, "rz"),
        f32(div, "rd"),
        f32(div, "ru"),
        ftz32([directed_sqrt(abs(float(t)), "rd", np.float32) for t in x]),
        ftz32([directed_sqrt(abs(float(t)), "ru", np.float32) for t in x]),
        f32([1 / b for b in y], "rz"),
        f32([1 / b for b in y], "ru"),
        f32([a - b for a, b in zip(x, y)], "rd"),
    ]
    uv = list(zip(u, v))
    g = [
        f64([a + b for a, b in uv], "rz"),
        f64([a + b for a, b in uv], "ru"),
        f64([a * b for a, b in uv], "rd"),
        f64([a * b for a, b in uv], "ru"),
        f64([a * b + a for a, b in uv], "rz"),
        f64([a / b for a, b in uv], "ru"),
        [directed_sqrt(abs(float(a)), "rd", np.float64) for a in u],
        f64([1 / b for b in v], "rz"),
    ]
    return {4: np.array(f, np.float32), 5: np.array(g, np.float64)}


program(
    id="directed_rounding_intrinsics", source=ROUNDING, kernel="rounding", make=rounding_make,
    reference=rounding_reference, check_trace=elementwise("a"),
    ptx_must_contain=("add.rz.ftz.f32", "add.rm.ftz.f32", "add.rp.ftz.f32", "mul.rz.ftz.f32",
                      "mul.rm.ftz.f32", "mul.rp.ftz.f32", "fma.rz.ftz.f32", "fma.rm.ftz.f32", "fma.rp.ftz.f32",
                      "div.rz.ftz.f32", "div.rm.ftz.f32", "div.rp.ftz.f32", "sqrt.rm.ftz.f32", "sqrt.rp.ftz.f32",
                      "rcp.rz.ftz.f32", "rcp.rp.ftz.f32", "sub.rm.ftz.f32", "add.rz.f64", "add.rp.f64",
                      "mul.rm.f64", "mul.rp.f64", "fma.rz.f64", "div.rp.f64", "sqrt.rm.f64", "rcp.rz.f64"),
)  # fmt: skip


# -- shuffles within segments (the width argument), a lane index past 31, and __reduce_*_sync

SEGMENTS = cu("""
    #define FULL 0xffffffffu
    extern "C" __global__ void segments(const int* x, int* out, unsigned* red, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x, T = gridDim.x * blockDim.x;
        int v = i < n ? x[i] : -7 - i;
        out[0 * T + i] = __shfl_xor_sync(FULL, v, 3, 8);
        out[1 * T + i] = __shfl_xor_sync(FULL, v, 16, 16);
        out[2 * T + i] = __shfl_down_sync(FULL, v, 5, 16);
        out[3 * T + i] = __shfl_up_sync(FULL, v, 3, 4);
        out[4 * T + i] = __shfl_sync(FULL, v, 11, 8);
        out[5 * T + i] = __shfl_sync(FULL, v, 37);
        unsigned u = (unsigned)v;
        red[0 * T + i] = __reduce_add_sync(FULL, u);
        red[1 * T + i] = (unsigned)__reduce_min_sync(FULL, v);
        red[2 * T + i] = __reduce_max_sync(FULL, u);
        red[3 * T + i] = __reduce_and_sync(FULL, u | 0x10101u);
        red[4 * T + i] = __reduce_or_sync(FULL, u & 0x0f0f00f0u);
        red[5 * T + i] = __reduce_xor_sync(FULL, u);
    }
""")


def segments_make(rng: np.random.Generator) -> Launch:
    n, total = 150, 192
    return Launch(
        (3,),
        (64,),
        (
            ints(rng, n, I32_MIN, I32_MAX),
            np.zeros((6, total), np.int32),
            np.zeros((6, total), np.uint32),
            np.int32(n),
        ),
    )


def shfl_sources(mode: str, b: int, width: int) -> np.ndarray:
    """The lane each lane reads under PTX shfl.sync semantics with CUDA's c = ((32 - width) << 8) | clamp."""
    lane = np.arange(32)
    seg = 32 - width
    clamp = 0 if mode == "up" else 31
    max_lane = (lane & seg) | (clamp & ~seg)
    j = {"up": lane - b, "down": lane + b, "bfly": lane ^ b, "idx": (lane & seg) | (b & ~seg & 31)}[mode]
    ok = j >= max_lane if mode == "up" else j <= max_lane
    return np.where(ok, j, lane)


def segments_reference(args: Args) -> dict[int, Any]:
    x, total = args[0].astype(np.int64), args[1].shape[1]
    v = -7 - np.arange(total, dtype=np.int64)
    v[: len(x)] = x
    w = v.reshape(-1, 32)
    cases = [("bfly", 3, 8), ("bfly", 16, 16), ("down", 5, 16), ("up", 3, 4), ("idx", 11, 8), ("idx", 37, 32)]
    out = np.array([w[:, shfl_sources(*c)].ravel() for c in cases], np.int32)
    u = w & M32
    red = [
        u.sum(1) & M32,
        w.min(1) & M32,
        u.max(1),
        np.bitwise_and.reduce(u | 0x10101, 1),
        np.bitwise_or.reduce(u & 0x0F0F00F0, 1),
        np.bitwise_xor.reduce(u, 1),
    ]
    return {1: out, 2: np.array([np.repeat(r, 32) for r in red], np.uint64).astype(np.uint32)}


program(
    id="shuffle_width_segments_and_redux", source=SEGMENTS, kernel="segments", make=segments_make,
    reference=segments_reference,
    ptx_must_contain=("shfl.sync.bfly.b32", "shfl.sync.down.b32", "shfl.sync.up.b32", "shfl.sync.idx.b32",
                      "redux.sync.add", "redux.sync.min.s32", "redux.sync.max.u32", "redux.sync.and.b32",
                      "redux.sync.or.b32", "redux.sync.xor.b32"),
)  # fmt: skip


# -- generic pointers: __noinline__ functions reading shared, local and global memory; recursion

GENERIC = cu("""
    __device__ __noinline__ int dot8(const int* p, const int* q) {
        int s = 0;
        for (int j = 0; j < 8; ++j) s += p[j] * q[j];  // @GENERIC
        return s;
    }
    __device__ __noinline__ void fill8(int* p, int v) {
        for (int j = 0; j < 8; ++j) p[j] = v + 3 * j;  // @FILL
    }
    extern "C" __global__ void generic(const int* g, int* out, int n) {
        __shared__ int tile[64];
        int loc[8];
        int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
        tile[t] = i < n ? g[i] : 0;
        __syncthreads();
        fill8(loc, t);
        int base = t & ~7;
        int a = dot8(&tile[base], loc);
        int b = i + 8 <= n ? dot8(&g[i], &tile[base]) : 0;
        if (i < n) out[i] = a - 2 * b;
    }
""")


def generic_make(rng: np.random.Generator) -> Launch:
    n = 100
    return Launch((2,), (64,), (ints(rng, n, -100, 100), np.zeros(n, np.int32), np.int32(n)))


def generic_reference(args: Args) -> dict[int, Any]:
    g = args[0].astype(np.int64)
    n = len(g)
    tile = np.zeros(128, np.int64)
    tile[:n] = g
    out = []
    for i in range(n):
        t, base = i % 64, (i // 64) * 64 + (i % 64 & ~7)
        a = sum(int(tile[base + j]) * (t + 3 * j) for j in range(8))
        b = sum(int(g[i + j]) * int(tile[base + j]) for j in range(8)) if i + 8 <= n else 0
        out.append(a - 2 * b)
    return {1: wrap(out, np.int32)}


def check_generic(trace: Trace, launch: Launch) -> None:
    """Loads through generic pointers resolve to the space the pointer points into."""
    dots = trace.where(op="ld", line=line_of(GENERIC, "GENERIC"))
    assert set(dots.space) == {"shared", "local", "global"}, set(dots.space)
    fills = trace.where(op="st", line=line_of(GENERIC, "FILL"))
    assert set(fills.space) == {"local"}, set(fills.space)


program(
    id="generic_pointers_shared_local_global", source=GENERIC, kernel="generic", make=generic_make,
    reference=generic_reference, check_trace=check_generic,
    ptx_must_contain=("cvta.shared.u64", "cvta.local.u64", "cvta.to.local.u64", "ld.u32", "call.uni"),
)  # fmt: skip


# -- recursive __noinline__ device functions (a call stack), one walking a local array through a pointer

RECURSION = cu("""
    __device__ __noinline__ unsigned fib(unsigned k) {
        return k < 2 ? k : fib(k - 1) + fib(k - 2);
    }
    __device__ __noinline__ int sum_rec(const int* p, int m) {
        return m == 0 ? 0 : p[m - 1] + sum_rec(p, m - 1);
    }
    extern "C" __global__ void recursion(const unsigned* k, unsigned* fibs, int* sums, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        int loc[12];
        for (int j = 0; j < 12; ++j) loc[j] = (int)k[i] * j - 7;
        fibs[i] = fib(k[i]);
        sums[i] = sum_rec(loc, 1 + (int)(k[i] % 12));
    }
""")


def recursion_make(rng: np.random.Generator) -> Launch:
    n = 100
    return Launch(
        (2,),
        (64,),
        (ints(rng, n, 0, 11, np.uint32), np.zeros(n, np.uint32), np.zeros(n, np.int32), np.int32(n)),
    )


def fib(k: int) -> int:
    a, b = 0, 1
    for _ in range(k):
        a, b = b, a + b
    return a


def recursion_reference(args: Args) -> dict[int, Any]:
    k = [int(v) for v in args[0]]
    sums = [sum(v * j - 7 for j in range(1 + v % 12)) for v in k]
    return {1: np.array([fib(v) for v in k], np.uint32), 2: np.array(sums, np.int32)}


program(
    id="recursive_device_functions", source=RECURSION, kernel="recursion", make=recursion_make,
    reference=recursion_reference, ptx_must_contain=("call.uni", ".func  (.param .b32 func_retval0) _Z3fibj"),
)  # fmt: skip


# -- divergent loops that reconverge before warp collectives; a leader chosen from __activemask

RECONVERGE = cu("""
    #define FULL 0xffffffffu
    extern "C" __global__ void reconverge(const unsigned* x, int* steps, int* warp_total, int* leader_val, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        unsigned v = i < n ? x[i] : 1u;
        int s = 0;
        while (v != 1u) {
            v = (v & 1u) ? 3u * v + 1u : v >> 1;
            ++s;
        }
        __syncwarp();
        int total = s;
        for (int d = 16; d > 0; d >>= 1) total += __shfl_xor_sync(FULL, total, d);
        if (i < n) steps[i] = s;
        if ((threadIdx.x & 31) == 0) warp_total[i >> 5] = total;
        if (i < n && (s & 1)) {
            unsigned m = __activemask();
            int got = __shfl_sync(m, s, __ffs(m) - 1);  // @LEADER
            __syncwarp(m);
            leader_val[i] = got;
        }
    }
""")


def reconverge_make(rng: np.random.Generator) -> Launch:
    n = 250
    return Launch(
        (3,),
        (96,),
        (
            ints(rng, n, 1, 3000, np.uint32),
            np.zeros(n, np.int32),
            np.zeros(9, np.int32),
            np.full(n, -1, np.int32),
            np.int32(n),
        ),
    )


def reconverge_reference(args: Args) -> dict[int, Any]:
    n = len(args[0])
    s = np.zeros(9 * 32, np.int64)
    s[:n] = [collatz(int(v)) for v in args[0]]
    leader = np.full(n, -1, np.int64)
    for w in range(9):
        odd = [i for i in range(32 * w, min(32 * w + 32, n)) if s[i] & 1]
        leader[odd] = s[odd[0]] if odd else -1
    return {
        1: s[:n].astype(np.int32),
        2: s.reshape(9, 32).sum(1).astype(np.int32),
        3: leader.astype(np.int32),
    }


program(
    id="divergent_loop_reconverge_then_shuffle", source=RECONVERGE, kernel="reconverge", make=reconverge_make,
    reference=reconverge_reference, ptx_must_contain=("bar.warp.sync", "activemask.b32", "shfl.sync.idx.b32"),
    expect=(Expect("LEADER", {"op": "shfl", "opcode": "shfl.sync.idx.b32"}),),
)  # fmt: skip


# -- a 3-D grid of 3-D blocks (8 x 4 x 2) with a padded 3-D shared tile

VOLUME = cu("""
    extern "C" __global__ void volume(const int* src, int* dst, int D, int H, int W) {
        __shared__ int tile[2][4][8 + 1];
        int x = blockIdx.x * 8 + threadIdx.x, y = blockIdx.y * 4 + threadIdx.y, z = blockIdx.z * 2 + threadIdx.z;
        bool in = x < W && y < H && z < D;
        tile[threadIdx.z][threadIdx.y][threadIdx.x] = in ? src[(z * H + y) * W + x] : 0;  // @LOAD3
        __syncthreads();
        int mirrored = tile[threadIdx.z][threadIdx.y][7 - threadIdx.x];
        int own = tile[threadIdx.z][threadIdx.y][threadIdx.x];
        if (in) dst[(z * H + y) * W + x] = 7 * own + mirrored + 100 * blockIdx.z + 10 * threadIdx.z + threadIdx.y;
    }
""")


def volume_make(rng: np.random.Generator) -> Launch:
    d, h, w = 5, 19, 23
    src = ints(rng, d * h * w, -1000, 1000).reshape(d, h, w)
    return Launch(
        (cdiv(w, 8), cdiv(h, 4), cdiv(d, 2)),
        (8, 4, 2),
        (src, np.zeros_like(src), np.int32(d), np.int32(h), np.int32(w)),
    )


def volume_reference(args: Args) -> dict[int, Any]:
    src = args[0].astype(np.int64)
    d, h, w = src.shape
    p = np.zeros((cdiv(d, 2) * 2, cdiv(h, 4) * 4, cdiv(w, 8) * 8), np.int64)
    p[:d, :h, :w] = src
    mirrored = p.reshape(p.shape[0], p.shape[1], -1, 8)[..., ::-1].reshape(p.shape)
    z, y = np.arange(p.shape[0])[:, None, None], np.arange(p.shape[1])[None, :, None]
    out = 7 * p + mirrored + 100 * (z // 2) + 10 * (z % 2) + y % 4
    return {1: out[:d, :h, :w].astype(np.int32)}


def check_volume(trace: Trace, launch: Launch) -> None:
    """Thread (tx, ty, tz) = linear id tx + 8 ty + 32 tz; block ids are linear x-fastest."""
    d, h, w = (int(a) for a in launch.args[2:])
    gx, gy, _ = launch.grid
    loads = touching(trace.where(space="global", op="ld"), "src")
    assert set(loads.line) == {line_of(VOLUME, "LOAD3")}
    tid, blk = loads.thread_ids(), loads.block[:, None].astype(np.int64)
    on = tid >= 0
    x = (blk % gx) * 8 + tid % 8
    y = (blk // gx % gy) * 4 + tid // 8 % 4
    z = (blk // (gx * gy)) * 2 + tid // 32
    np.testing.assert_array_equal(loads.index[on], ((z * h + y) * w + x)[on])
    assert on.sum() == d * h * w


program(
    id="grid3d_block3d_shared_tile", source=VOLUME, kernel="volume", make=volume_make, reference=volume_reference,
    check_trace=check_volume, ptx_must_contain=("%ctaid.z", "%tid.z", "bar.sync"),
    expect=(Expect(None, {"op": "bar"}, events=3 * 5 * 3 * 2),),
)  # fmt: skip


# -- 128-bit integers in C (--device-int128): the compiler chains add.cc / addc.cc

INT128 = cu("""
    typedef unsigned __int128 u128;
    extern "C" __global__ void wide(const u128* a, const u128* b, u128* out, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        out[i] = a[i] * b[i] + a[(i + 1) % n];
    }
""")


def int128_make(rng: np.random.Generator) -> Launch:
    n = 77
    u64 = lambda: ints(rng, 2 * n, 0, M64, np.uint64).reshape(n, 2)  # noqa: E731
    a = u64()
    a[0] = [M64, M64]
    return Launch((cdiv(n, 32),), (32,), (a, u64(), np.zeros((n, 2), np.uint64), np.int32(n)))


def u128(row: np.ndarray) -> int:
    return int(row[0]) | (int(row[1]) << 64)


def int128_reference(args: Args) -> dict[int, Any]:
    a, b = args[0], args[1]
    n = len(a)
    out = [(u128(a[i]) * u128(b[i]) + u128(a[(i + 1) % n])) & ((1 << 128) - 1) for i in range(n)]
    return {2: np.array([[v & M64, v >> 64] for v in out], np.uint64)}


program(
    id="int128_c_arithmetic", source=INT128, kernel="wide", make=int128_make, reference=int128_reference,
    options=("--device-int128",), ptx_must_contain=("mul.hi.u64", "add.cc.s64", "addc.cc.s64"),
)  # fmt: skip


# -- carry flags in inline PTX: add.cc/addc, sub.cc/subc, mad.lo.cc/madc.hi

CARRY = cu("""
    extern "C" __global__ void carry(const unsigned* x, unsigned* sum3, unsigned* diff2, unsigned* mad2, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        unsigned x0 = x[4 * i], x1 = x[4 * i + 1], x2 = x[4 * i + 2], x3 = x[4 * i + 3], r0, r1, r2;
        asm("add.cc.u32 %0, %3, %5;\\n\\taddc.cc.u32 %1, %4, %6;\\n\\taddc.u32 %2, 0, 0;"
            : "=r"(r0), "=r"(r1), "=r"(r2) : "r"(x0), "r"(x1), "r"(x2), "r"(x3));
        sum3[3 * i] = r0;
        sum3[3 * i + 1] = r1;
        sum3[3 * i + 2] = r2;
        asm("sub.cc.u32 %0, %2, %4;\\n\\tsubc.u32 %1, %3, %5;" : "=r"(r0), "=r"(r1) : "r"(x0), "r"(x1), "r"(x2), "r"(x3));
        diff2[2 * i] = r0;
        diff2[2 * i + 1] = r1;
        asm("mad.lo.cc.u32 %0, %2, %3, %4;\\n\\tmadc.hi.u32 %1, %2, %3, %5;"
            : "=r"(r0), "=r"(r1) : "r"(x0), "r"(x1), "r"(x2), "r"(x3));
        mad2[2 * i] = r0;
        mad2[2 * i + 1] = r1;
    }
""")


def carry_make(rng: np.random.Generator) -> Launch:
    n = 77
    x = ints(rng, 4 * n, 0, M32, np.uint32)
    x[:8] = [M32, M32, 1, 0, 0, 0, 1, 0]  # a carry through both words; a borrow through both
    return Launch(
        (cdiv(n, 32),),
        (32,),
        (x, np.zeros(3 * n, np.uint32), np.zeros(2 * n, np.uint32), np.zeros(2 * n, np.uint32), np.int32(n)),
    )


def carry_reference(args: Args) -> dict[int, Any]:
    x = [int(v) for v in args[0]]
    sum3, diff2, mad2 = [], [], []
    for i in range(len(x) // 4):
        x0, x1, x2, x3 = x[4 * i : 4 * i + 4]
        s = (x0 | x1 << 32) + (x2 | x3 << 32)
        sum3 += [s & M32, (s >> 32) & M32, s >> 64]
        dlt = ((x0 | x1 << 32) - (x2 | x3 << 32)) & M64
        diff2 += [dlt & M32, dlt >> 32]
        lo = (x0 * x1 & M32) + x2
        mad2 += [lo & M32, ((x0 * x1 >> 32) + x3 + (lo >> 32)) & M32]
    return {1: wrap(sum3, np.uint32), 2: wrap(diff2, np.uint32), 3: wrap(mad2, np.uint32)}


program(
    id="carry_flags_inline_ptx", source=CARRY, kernel="carry", make=carry_make, reference=carry_reference,
    ptx_must_contain=("add.cc.u32", "addc.cc.u32", "addc.u32", "sub.cc.u32", "subc.u32", "mad.lo.cc.u32",
                      "madc.hi.u32"),
)  # fmt: skip


# -- integer intrinsics: mul24, mulhi, hadd, 64-bit abs/min/max, SIMD byte ops; and sad, dp4a, dp2a

INT_ROWS: dict[str, tuple[str, str]] = {  # name -> (C expression, element type)
    "mul24": ("__mul24(x, y)", "int"),
    "mulhi": ("__mulhi(x, y)", "int"),
    "hadd": ("__hadd(x, y)", "int"),
    "rhadd": ("__rhadd(x, y)", "int"),
    "abs": ("abs(x)", "int"),
    "umul24": ("__umul24(a, b)", "unsigned"),
    "umulhi": ("__umulhi(a, b)", "unsigned"),
    "uhadd": ("__uhadd(a, b)", "unsigned"),
    "urhadd": ("__urhadd(a, b)", "unsigned"),
    "vadd4": ("__vadd4(a, b)", "unsigned"),
    "vcmpgtu4": ("__vcmpgtu4(a, b)", "unsigned"),
    "mul64hi": ("__mul64hi(w, v)", "long long"),
    "llabs": ("llabs(w)", "long long"),
    "llmin": ("llmin(w, v)", "long long"),
    "llmax": ("llmax(w, v)", "long long"),
    "dp4a": ("__dp4a(x, y, z)", "int"),
    "dp2a_lo": ("__dp2a_lo(x, y, z)", "int"),
    "dp2a_hi": ("__dp2a_hi(x, y, z)", "int"),
    "sad": ("__sad(x, y, (unsigned)z)", "unsigned"),
    "usad": ("__usad(a, b, c)", "unsigned"),
    "dp4a_u": ("__dp4a(a, b, c)", "unsigned"),
    "vabsdiffu4": ("__vabsdiffu4(a, b)", "unsigned"),
}
INT_BASIC = (
    "mul24",
    "mulhi",
    "hadd",
    "rhadd",
    "abs",
    "umul24",
    "umulhi",
    "uhadd",
    "urhadd",
    "vadd4",
    "vcmpgtu4",
    "mul64hi",
    "llabs",
    "llmin",
    "llmax",
)
INT_DOT = ("dp4a", "dp2a_lo", "dp2a_hi", "sad", "usad", "dp4a_u", "vabsdiffu4")
INT_TYPES = {"int": np.int32, "unsigned": np.uint32, "long long": np.int64}


def int_source(rows: tuple[str, ...]) -> str:
    """A kernel writing row r of out_<type>[r, i] for each named intrinsic."""
    lines, count = [], dict.fromkeys(INT_TYPES, 0)
    for name in rows:
        expr, ctype = INT_ROWS[name]
        lines.append(f"    o_{ctype.replace(' ', '')}[{count[ctype]} * n + i] = {expr};  // @{name.upper()}")
        count[ctype] += 1
    return (
        cu("""
        extern "C" __global__ void intrinsics(const int* s, const unsigned* u, const long long* l, int* o_int,
                                              unsigned* o_unsigned, long long* o_longlong, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i >= n) return;
            int x = s[i], y = s[i + 1], z = s[i + 2];
            unsigned a = u[i], b = u[i + 1], c = u[i + 2];
            long long w = l[i], v = l[i + 1];
    """)
        + "\n".join(lines)
        + "\n}\n"
    )


def sbyte(v: int, k: int, width: int = 8) -> int:
    """The k-th `width`-bit field of v, as a signed number."""
    f = (v >> (width * k)) & ((1 << width) - 1)
    return f - (1 << width) if f >> (width - 1) else f


def int_row(name: str, x: int, y: int, z: int, a: int, b: int, c: int, w: int, v: int) -> int:
    ba, bb = [(a >> 8 * k) & 255 for k in range(4)], [(b >> 8 * k) & 255 for k in range(4)]
    per_byte = lambda f: sum(f(p, q) << 8 * k for k, (p, q) in enumerate(zip(ba, bb)))  # noqa: E731
    return {
        "mul24": lambda: sbyte(x, 0, 24) * sbyte(y, 0, 24),
        "mulhi": lambda: (x * y) >> 32,
        "hadd": lambda: (x + y) >> 1,
        "rhadd": lambda: (x + y + 1) >> 1,
        "abs": lambda: abs(x),
        "umul24": lambda: (a & 0xFFFFFF) * (b & 0xFFFFFF),
        "umulhi": lambda: (a * b) >> 32,
        "uhadd": lambda: (a + b) >> 1,
        "urhadd": lambda: (a + b + 1) >> 1,
        "vadd4": lambda: per_byte(lambda p, q: (p + q) & 255),
        "vcmpgtu4": lambda: per_byte(lambda p, q: 255 * (p > q)),
        "mul64hi": lambda: (w * v) >> 64,
        "llabs": lambda: abs(w),
        "llmin": lambda: min(w, v),
        "llmax": lambda: max(w, v),
        "dp4a": lambda: sum(sbyte(x, k) * sbyte(y, k) for k in range(4)) + z,
        "dp2a_lo": lambda: sbyte(x, 0, 16) * sbyte(y, 0) + sbyte(x, 1, 16) * sbyte(y, 1) + z,
        "dp2a_hi": lambda: sbyte(x, 0, 16) * sbyte(y, 2) + sbyte(x, 1, 16) * sbyte(y, 3) + z,
        "sad": lambda: abs(x - y) + (z & M32),
        "usad": lambda: abs(a - b) + c,
        "dp4a_u": lambda: sum(p * q for p, q in zip(ba, bb)) + c,
        "vabsdiffu4": lambda: per_byte(lambda p, q: abs(p - q)),
    }[name]()


def int_make(rows: tuple[str, ...]) -> Callable[[np.random.Generator], Launch]:
    def make(rng: np.random.Generator) -> Launch:
        n = 130
        s = ints(rng, n + 2, I32_MIN, I32_MAX)
        s[:3] = [I32_MIN, I32_MAX, -1]
        u = ints(rng, n + 2, 0, M32, np.uint32)
        u[:3] = [M32, M32, 0]
        w = ints(rng, n + 1, -(2**63), 2**63 - 1, np.int64)
        w[:2] = [-(2**63), -1]
        outs = [
            np.zeros((max(1, sum(INT_ROWS[r][1] == t for r in rows)), n), dt) for t, dt in INT_TYPES.items()
        ]
        return Launch((cdiv(n, 64),), (64,), (s, u, w, *outs, np.int32(n)))

    return make


def int_reference(rows: tuple[str, ...]) -> Callable[[Args], dict[int, Any]]:
    def reference(args: Args) -> dict[int, Any]:
        s, u, w = ([int(v) for v in arr] for arr in args[:3])
        n = args[3].shape[1]
        out: dict[str, list[list[int]]] = {t: [] for t in INT_TYPES}
        for name in rows:
            vals = [
                int_row(name, s[i], s[i + 1], s[i + 2], u[i], u[i + 1], u[i + 2], w[i], w[i + 1])
                for i in range(n)
            ]
            out[INT_ROWS[name][1]].append(vals)
        return {
            3 + k: np.array([wrap(r, dt) for r in out[t]]).reshape(args[3 + k].shape)
            if out[t]
            else args[3 + k]
            for k, (t, dt) in enumerate(INT_TYPES.items())
        }

    return reference


program(
    id="integer_intrinsics_mul24_mulhi_hadd_simd", source=int_source(INT_BASIC), kernel="intrinsics",
    make=int_make(INT_BASIC), reference=int_reference(INT_BASIC),
    ptx_must_contain=("mul.hi.s32", "mul.hi.u32", "mul.hi.s64", "abs.s32", "abs.s64", "min.s64", "max.s64"),
)  # fmt: skip
program(
    id="integer_intrinsics_sad_dp4a_dp2a_vabsdiff", source=int_source(INT_DOT), kernel="intrinsics",
    make=int_make(INT_DOT), reference=int_reference(INT_DOT),
    ptx_must_contain=("sad.s32", "sad.u32", "dp4a.s32.s32", "dp4a.u32.u32", "dp2a.lo.s32.s32", "dp2a.hi.s32.s32",
                      "vabsdiff4.u32.u32.u32"),
)  # fmt: skip


# -- the math library: functions with exact results, single-precision approximations, double precision

MATH_EXACT = cu("""
    extern "C" __global__ void math_exact(const float* a, const float* b, const int* e, float* ex, int* ix, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float x = a[i], y = b[i], ip;
        int k;
        ex[0 * n + i] = fmodf(x, y);
        ex[1 * n + i] = remainderf(x, y);
        ex[2 * n + i] = copysignf(x, y);
        ex[3 * n + i] = fdimf(x, y);
        ex[4 * n + i] = nextafterf(x, y);
        ex[5 * n + i] = ldexpf(x, e[i]);
        ex[6 * n + i] = frexpf(x, &k);
        ix[0 * n + i] = k;
        ex[7 * n + i] = modff(x, &ip);
        ex[8 * n + i] = ip;
        ix[1 * n + i] = ilogbf(x);
        ix[2 * n + i] = isnan(y) ? 1 : 0;
        ix[3 * n + i] = isinf(y) ? 1 : 0;
        ix[4 * n + i] = signbit(y) ? 1 : 0;
        ix[5 * n + i] = isfinite(y) ? 1 : 0;
    }
""")
MATH_APPROX = cu("""
    extern "C" __global__ void math_approx(const float* a, const float* b, float* ap, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float x = a[i], y = b[i];
        ap[0 * n + i] = rsqrtf(fabsf(x) + 0.5f);
        ap[1 * n + i] = hypotf(x, y);
        ap[2 * n + i] = tanhf(x / 256.0f);
        ap[3 * n + i] = erff(x / 256.0f);
        ap[4 * n + i] = exp2f(x / 8.0f);
        ap[5 * n + i] = expm1f(x / 1024.0f);
        ap[6 * n + i] = log1pf(fabsf(y));
        ap[7 * n + i] = powf(fabsf(x) + 1.0f, y / 16.0f);
        ap[8 * n + i] = atan2f(x, y);
        ap[9 * n + i] = cbrtf(x);
    }
""")
MATH_DOUBLE = cu("""
    extern "C" __global__ void math_double(const double* c, double* dd, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        double u = c[i];
        dd[0 * n + i] = sin(u);
        dd[1 * n + i] = log(fabs(u));
        dd[2 * n + i] = pow(fabs(u), 0.37);
        dd[3 * n + i] = atan(u);
    }
""")
MATH_N = 181


def math_inputs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    x = (rng.uniform(-1000, 1000, MATH_N) * rng.choice([1, 1e-3, 1e-36], MATH_N)).astype(np.float32)
    x[:6] = [5.0, -5.5, 7.25, 1e-40, 3.0, -2.0]
    y = uniform32(rng, MATH_N, -10, 10)
    y[:6] = [np.inf, -np.inf, np.nan, -0.0, 3.0, -3.0]
    return x, y


def math_exact_make(rng: np.random.Generator) -> Launch:
    x, y = math_inputs(rng)
    n = MATH_N
    return Launch(
        (cdiv(n, 64),),
        (64,),
        (x, y, ints(rng, n, -20, 20), np.zeros((9, n), np.float32), np.zeros((6, n), np.int32), np.int32(n)),
    )


def ieee_remainder(x: float, y: float) -> float:
    if np.isnan(x) or np.isnan(y) or y == 0 or np.isinf(x):
        return np.nan
    return x if np.isinf(y) else math.remainder(x, y)


def nextafter_ftz(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """nextafterf built with .ftz: it steps over the float32 values that are not subnormal.

    So the step from a (flushed) zero towards a nonzero y lands on the smallest normal of y's sign, and
    a step down from the smallest normal lands on zero; zero towards zero gives y (flushed), as equal
    values do.
    """
    fx, fy = ftz32(x), ftz32(y)
    from_zero = (fx == 0) & (np.abs(fy) > 0)  # NaN y: not this case, the NaN comes through
    return np.where(from_zero, np.copysign(F32_TINY, fy), ftz32(np.nextafter(fx, fy))).astype(np.float32)


def math_exact_reference(args: Args) -> dict[int, Any]:
    x, y, e = args[:3]
    # the library's float32 arithmetic is .ftz: it reads a subnormal x as a zero of its sign and flushes
    # subnormal results (copysignf, signbit and the classifications work on the bits and see x unchanged)
    fx, fy = ftz32(x), ftz32(y)
    with np.errstate(invalid="ignore"):
        fmod = np.fmod(fx, fy)
        fdim = np.where(np.isnan(fx) | np.isnan(fy), np.nan, np.where(fx > fy, fx - fy, 0)).astype(np.float32)
    mant, expo = np.frexp(fx)
    frac, whole = np.modf(fx)
    rem = np.array([ieee_remainder(float(a), float(b)) for a, b in zip(fx, fy)], np.float32)
    scaled = np.ldexp(fx.astype(np.float64), e)  # exact: ftz32 rounds it as mul.rn.ftz does
    ex = [fmod, rem, np.copysign(x, y), fdim, nextafter_ftz(x, y), scaled, mant, frac, whole]
    ex = [row if k == 2 else ftz32(row) for k, row in enumerate(ex)]
    ilogb = np.where(fx == 0, I32_MIN, expo - 1)  # ilogbf(0) is FP_ILOGB0, INT_MIN here
    ix = [expo, ilogb, np.isnan(y), np.isinf(y), np.signbit(y), np.isfinite(y)]
    return {3: np.array(ex, np.float32), 4: np.array(ix, np.int32)}


def math_approx_make(rng: np.random.Generator) -> Launch:
    x, y = math_inputs(rng)
    return Launch((cdiv(MATH_N, 64),), (64,), (x, y, np.zeros((10, MATH_N), np.float32), np.int32(MATH_N)))


def math_approx_reference(args: Args) -> dict[int, Any]:
    # .ftz: subnormal inputs, and the quotients x / 256 ... that underflow in float32, read as zeros of their
    # sign; the functions themselves are approximations, so only their results are flushed after them
    x, y = ftz32(args[0]), ftz32(args[1])
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    f32 = lambda v: ftz32(v).astype(np.float64)  # noqa: E731  # a float32 step of the kernel (v exact)
    base = f32(np.abs(x) + np.float32(1))  # rounded to float32 first, as in the kernel
    with np.errstate(all="ignore"):
        ap = [
            1 / np.sqrt(f32(np.abs(x) + np.float32(0.5))),
            np.hypot(x64, y64),
            np.tanh(f32(x64 / 256)),
            np.array([math.erf(v) for v in f32(x64 / 256)]),
            np.exp2(f32(x64 / 8)),
            np.expm1(f32(x64 / 1024)),
            np.log1p(np.abs(y64)),
            base ** f32(y64 / 16),
            np.arctan2(x64, y64),
            np.cbrt(x64),
        ]
    return {2: ftz32(np.array(ap))}


def math_double_make(rng: np.random.Generator) -> Launch:
    u = rng.uniform(-1000, 1000, MATH_N) * rng.choice([1, 1e-5, 1e8], MATH_N)
    u[:4] = [1e15 + 0.5, -3.0, 0.5, 1e-300]
    return Launch((cdiv(MATH_N, 64),), (64,), (u, np.zeros((4, MATH_N)), np.int32(MATH_N)))


def math_double_reference(args: Args) -> dict[int, Any]:
    u = args[0]
    return {1: np.array([np.sin(u), np.log(np.abs(u)), np.abs(u) ** 0.37, np.arctan(u)])}


program(
    id="math_library_exact_results", source=MATH_EXACT, kernel="math_exact", make=math_exact_make,
    reference=math_exact_reference, check_trace=elementwise("a"), ptx_must_contain=("copysign.f32",),
)  # fmt: skip
program(
    id="math_library_float_approximations", source=MATH_APPROX, kernel="math_approx", make=math_approx_make,
    reference=math_approx_reference, rtol=4e-6, atol=1e-42, check_trace=elementwise("a"),
    ptx_must_contain=("rsqrt.approx.ftz.f32", "ex2.approx", "lg2.approx"),
)  # fmt: skip
program(
    id="math_library_double_sin_log_pow_atan", source=MATH_DOUBLE, kernel="math_double", make=math_double_make,
    reference=math_double_reference, rtol=2e-15, atol=1e-300, check_trace=elementwise("c"),
    ptx_must_contain=("call.uni", "__internal_trig_reduction_slowpathd", "fma.rn.f64"),
)  # fmt: skip


# -- float and double atomics (global and shared), block/system scope, a 16-bit atomicCAS loop

FLOAT_ATOMICS = cu("""
    extern "C" __global__ void float_atomics(const int* bin, const float* w, float* gsum, float* counts,
                                             double* dsum, unsigned short* h16, float* last, int n) {
        __shared__ float s_sum[8];
        __shared__ double s_dsum[8];
        int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
        if (t < 8) {
            s_sum[t] = 0.0f;
            s_dsum[t] = 0.0;
        }
        __syncthreads();
        if (i < n) {
            int k = bin[i];
            atomicAdd(&gsum[k], w[i]);
            atomicAdd(&s_sum[k], w[i]);  // @SHARED_F32
            atomicAdd(&s_dsum[k], (double)w[i] * 0.5);  // @SHARED_F64
            atomicAdd_block(&counts[k], 1.0f);
            atomicAdd_system(&counts[8 + k], 2.0f);
            unsigned short seen, old = h16[k];
            do {
                seen = old;
                old = atomicCAS(&h16[k], seen, (unsigned short)(seen + 1));  // @CAS16
            } while (old != seen);
            atomicExch(&last[i], 2.0f * w[i]);
        }
        __syncthreads();
        if (t < 8) {
            atomicAdd(&gsum[8 + t], s_sum[t]);
            atomicAdd(&dsum[t], s_dsum[t]);
        }
    }
""")


def float_atomics_make(rng: np.random.Generator) -> Launch:
    n = 1500
    w = (ints(rng, n, -40, 40) / 2).astype(np.float32)  # halves: every partial sum is exact in any order
    return Launch(
        (cdiv(n, 128),),
        (128,),
        (ints(rng, n, 0, 7), w, uniform32(rng, 16, -4, 4).round(), np.zeros(16, np.float32), np.zeros(8),
         ints(rng, 8, 0, 65535, np.uint16), np.zeros(n, np.float32), np.int32(n)),
    )  # fmt: skip


def float_atomics_reference(args: Args) -> dict[int, Any]:
    bins, w, gsum, counts, dsum, h16 = args[:6]
    per_bin = np.bincount(bins, weights=w.astype(np.float64), minlength=8)
    hits = np.bincount(bins, minlength=8)
    return {
        2: (gsum + np.tile(per_bin, 2)).astype(np.float32),
        3: (counts + np.concatenate([hits, 2 * hits])).astype(np.float32),
        4: dsum + 0.5 * per_bin,
        5: ((h16.astype(np.int64) + hits) % 65536).astype(np.uint16),
        6: 2 * w,
    }


program(
    id="float_double_short_atomics", source=FLOAT_ATOMICS, kernel="float_atomics", make=float_atomics_make,
    reference=float_atomics_reference,
    ptx_must_contain=("atom.global.add.f32", "atom.shared.add.f32", "atom.shared.add.f64", "atom.global.cas.b16",
                      "atom.global.cta.add.f32", "atom.global.sys.add.f32", "atom.global.exch.b32"),
    expect=(Expect("SHARED_F32", {"space": "shared", "op": ["atom", "red"]}, buffer="s_sum"),
            Expect("SHARED_F64", {"space": "shared", "op": ["atom", "red"]}, buffer="s_dsum"),
            Expect("CAS16", {"space": "global", "op": "atom"}, buffer="h16")),
)  # fmt: skip


# -- message passing between blocks with ld.acquire / st.release / fence, and __nanosleep while waiting

HANDOFF = cu("""
    extern "C" __global__ void handoff(const int* x, int* out, int* ticket, int* data, unsigned* flags, int n) {
        __shared__ int s_bid;
        if (threadIdx.x == 0) s_bid = atomicAdd(ticket, 1);
        __syncthreads();
        int bid = s_bid, i = bid * blockDim.x + threadIdx.x;
        if (i < n) data[i] = 3 * x[i];
        __syncthreads();
        if (threadIdx.x == 0) {
            asm volatile("fence.acq_rel.gpu;" ::: "memory");
            asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(flags + bid), "r"(1u) : "memory");  // @RELEASE
        }
        if (bid == 0) {
            if (i < n) out[i] = x[i];
            return;
        }
        if (threadIdx.x == 0) {
            unsigned f;
            do {
                asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(f) : "l"(flags + bid - 1) : "memory");
                if (f == 0) __nanosleep(64);
            } while (f == 0);
        }
        __syncthreads();
        if (i < n) out[i] = data[i - blockDim.x] + x[i];
    }
""")


def handoff_make(rng: np.random.Generator) -> Launch:
    n, block = 1000, 96
    blocks = cdiv(n, block)
    return Launch(
        (blocks,),
        (block,),
        (ints(rng, n, -10**6, 10**6), np.zeros(n, np.int32), np.zeros(1, np.int32), np.zeros(n, np.int32),
         np.zeros(blocks, np.uint32), np.int32(n)),
    )  # fmt: skip


def handoff_reference(args: Args) -> dict[int, Any]:
    x, blocks = args[0].astype(np.int64), len(args[4])
    out = x.copy()
    out[96:] += 3 * x[:-96]
    return {1: out.astype(np.int32), 2: np.array([blocks], np.int32), 3: (3 * x).astype(np.int32),
            4: np.ones(blocks, np.uint32)}  # fmt: skip


program(
    id="acquire_release_handoff_between_blocks", source=HANDOFF, kernel="handoff", make=handoff_make,
    reference=handoff_reference,
    ptx_must_contain=("ld.acquire.gpu.global.u32", "st.release.gpu.global.u32", "fence.acq_rel.gpu",
                      "nanosleep.u32"),
    expect=(Expect("RELEASE", {"space": "global", "op": "st"}, buffer="flags", events=cdiv(1000, 96)),),
)  # fmt: skip


# -- special registers: %laneid, lane masks, %dynamic_smem_size, clocks; 3-D blocks of 60 threads

SPECIALS = cu("""
    extern "C" __global__ void specials(unsigned* out, int* ok, int n) {
        unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
        unsigned g = b * blockDim.x * blockDim.y * blockDim.z + t, r;
        long long c0 = clock64();
        asm("mov.u32 %0, %%laneid;" : "=r"(r));
        out[0 * n + g] = r;
        asm("mov.u32 %0, %%lanemask_lt;" : "=r"(r));
        out[1 * n + g] = r;
        asm("mov.u32 %0, %%lanemask_ge;" : "=r"(r));
        out[2 * n + g] = r;
        asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
        out[3 * n + g] = r;
        out[4 * n + g] = gridDim.z * 100 + blockDim.z * 10 + blockIdx.z;
        __threadfence_block();
        ok[g] = clock64() >= c0 ? 1 : 0;
    }
""")


def specials_make(rng: np.random.Generator) -> Launch:
    grid, block = (2, 3, 2), (5, 4, 3)
    n = 12 * 60
    return Launch(grid, block, (np.zeros((5, n), np.uint32), np.zeros(n, np.int32), np.int32(n)), 256)


def specials_reference(args: Args) -> dict[int, Any]:
    n = args[0].shape[1]
    g = np.arange(n)
    lane = (g % 60 % 32).astype(np.uint64)
    below = (np.uint64(1) << lane) - np.uint64(1)
    bz = g // 60 // 6
    rows = [lane, below, below ^ np.uint64(M32), np.full(n, 256), 2 * 100 + 3 * 10 + bz]
    return {0: np.array(rows).astype(np.uint32), 1: np.ones(n, np.int32)}


program(
    id="special_registers_3d_block60", source=SPECIALS, kernel="specials", make=specials_make,
    reference=specials_reference,
    ptx_must_contain=("%laneid", "%lanemask_lt", "%lanemask_ge", "%dynamic_smem_size", "%clock64", "membar.cta"),
)  # fmt: skip


# -- fma (explicit, and contracted from a * b + c) on infinities, NaNs, signed zeros, overflow, subnormals

FMA_SPECIAL = cu("""
    extern "C" __global__ void fma_special(const float* a, const float* b, const float* c, const double* d,
                                           float* f, int* fs, float* unfused, double* g, int* gs, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        float x = a[i], y = b[i], z = c[i], r = fmaf(x, y, z);
        f[i] = r;
        fs[i] = isnan(r) ? 2 : signbit(r) ? 1 : 0;
        unfused[i] = __fmul_rn(x, y) - z;  // mul.rn: rounded on its own, never fused into an fma
        double q = fma(d[3 * i], d[3 * i + 1], d[3 * i + 2]);
        g[i] = q;
        gs[i] = isnan(q) ? 2 : signbit(q) ? 1 : 0;
    }
""")
SPECIAL32 = [0.0, -0.0, 1.0, -1.5, 3e38, -3e38, 1e-30, -1e-20, 1e-45, 2.0**-126, np.inf, -np.inf, np.nan]
SPECIAL64 = [
    0.0,
    -0.0,
    1.0,
    -1.5,
    1e308,
    -1e308,
    1e-300,
    -1e-170,
    5e-324,
    2.0**-1022,
    np.inf,
    -np.inf,
    np.nan,
]


def fma_special_make(rng: np.random.Generator) -> Launch:
    n = 500
    f = np.array(SPECIAL32, np.float32)[rng.integers(0, len(SPECIAL32), (3, n))]
    d = np.array(SPECIAL64)[rng.integers(0, len(SPECIAL64), 3 * n)]
    outs = (
        np.zeros(n, np.float32),
        np.zeros(n, np.int32),
        np.zeros(n, np.float32),
        np.zeros(n),
        np.zeros(n, np.int32),
    )
    return Launch((cdiv(n, 128),), (128,), (f[0], f[1], f[2], d, *outs, np.int32(n)))


def fma_exact(a: float, b: float, c: float, bits: int, emin: int, big: float) -> float:
    """IEEE fma rounded to nearest: specials as in float64 arithmetic, finite values exactly."""
    if not all(np.isfinite([a, b, c])):
        if np.isfinite(a) and np.isfinite(b) and np.isinf(c):
            return float(c)  # the exact product is finite, however large: c wins
        with np.errstate(all="ignore"):
            return float(np.float64(a) * b + c)
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:  # -0 only for (a zero product of negative sign) + (-0)
        product_negative = bool(np.signbit(a) != np.signbit(b))
        return -0.0 if (a == 0 or b == 0) and c == 0 and product_negative and np.signbit(c) else 0.0
    try:
        value = round_exact(exact, "rn", bits, emin)
    except OverflowError:
        value = float("inf") if exact > 0 else float("-inf")
    return value if abs(value) < big else float(np.copysign(np.inf, value))


def sign_code(v: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(v), 2, np.signbit(v).astype(np.int32)).astype(np.int32)


def fma_special_reference(args: Args) -> dict[int, Any]:
    d = args[3]
    a, b, c = (ftz32(v) for v in args[:3])  # fma.rn.ftz, mul.rn.ftz, sub.ftz: subnormals read as signed zeros
    f32 = [fma_exact(float(x), float(y), float(z), 24, NO_EMIN, 2.0**128) for x, y, z in zip(a, b, c)]
    f32 = ftz32(f32)  # and a result below the smallest normal is flushed
    with np.errstate(all="ignore"):
        unfused = ftz32(ftz32(a.astype(np.float64) * b) - c)  # the float64 product is exact
    f64 = np.array([fma_exact(*map(float, d[3 * i : 3 * i + 3]), 53, -1022, np.inf) for i in range(len(a))])
    return {4: f32, 5: sign_code(f32), 6: unfused, 7: f64, 8: sign_code(f64)}


program(
    id="fma_infinities_nans_signed_zeros", source=FMA_SPECIAL, kernel="fma_special", make=fma_special_make,
    reference=fma_special_reference,
    ptx_must_contain=("fma.rn.ftz.f32", "mul.rn.ftz.f32", "sub.ftz.f32", "fma.rn.f64", "setp.gtu.f64"),
)  # fmt: skip


# -- threads that return before a __syncthreads(): exited threads no longer hold the barrier back

EARLY_EXIT = cu("""
    extern "C" __global__ void early_exit(const int* x, int* y, int n) {
        __shared__ int s[128];
        int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
        if (i >= n) return;
        s[t] = x[i];
        __syncthreads();  // @SYNC
        int m = min(n - (int)(blockIdx.x * blockDim.x), (int)blockDim.x);
        y[i] = s[m - 1 - t];
    }
""")


def early_exit_make(rng: np.random.Generator) -> Launch:
    n = 300
    return Launch((3,), (128,), (ints(rng, n, -1000, 1000), np.zeros(n, np.int32), np.int32(n)))


def early_exit_reference(args: Args) -> dict[int, Any]:
    x = args[0]
    return {1: np.concatenate([x[s : s + 128][::-1] for s in range(0, len(x), 128)])}


program(
    id="early_return_before_syncthreads", source=EARLY_EXIT, kernel="early_exit", make=early_exit_make,
    reference=early_exit_reference, ptx_must_contain=("bar.sync", "ret;"),
    expect=(Expect("SYNC", {"op": "bar"}, events=4 + 4 + 2),),
)  # fmt: skip
