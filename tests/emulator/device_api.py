"""The CUDA device API as one table: every row is a function on a type, turned into a kernel.

A `Row` names a CUDA function, its signature in type letters (`"h:hh"`: returns `__half`, takes
two `__half`), the C that computes the outputs `o0`, `o1` from the inputs `a`, `b`, `c`, a NumPy
reference, and how close the GPU promises to be (`ulp`, `abs_tol`: 0 means bit for bit). Rows of
one family compile as one source (one kernel per row), run on random inputs that include the edge
values of their types, and are compared with the reference (on the emulator, in CI) and with the
emulator (on a GPU). Kernels that are not elementwise (warp collectives, atomics, cooperative
groups) are `Case`s: a whole source, a launch and a reference of their own.

Whether the GPU is exact for a row is read off its PTX: a kernel whose PTX has no approximate
instruction (`ex2.approx`, `sin.approx`, ...) must agree bit for bit; one that has must agree
within the row's documented error.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import course

from .fpref import BF16, F16, F32, F64, Fmt, decode, ordered, to_bits

# ---------------------------------------------------------------- types


@dataclass(frozen=True)
class CType:
    letter: str
    c: str
    dtype: Any  # NumPy storage of one element
    fmt: Fmt | None = None  # a float format (bits compared through it)
    lanes: int = 1  # packed floats (__half2: 2 halves in a uint32)


TYPES = {
    t.letter: t
    for t in (
        CType("f", "float", np.float32, F32),
        CType("d", "double", np.float64, F64),
        CType("h", "__half", np.uint16, F16),
        CType("H", "__half2", np.uint32, F16, 2),
        CType("b", "__nv_bfloat16", np.uint16, BF16),
        CType("B", "__nv_bfloat162", np.uint32, BF16, 2),
        CType("F", "float2", np.uint64, F32, 2),
        CType("i", "int", np.int32),
        CType("u", "unsigned", np.uint32),
        CType("l", "long long", np.int64),
        CType("L", "unsigned long long", np.uint64),
        CType("s", "short", np.int16),
        CType("S", "unsigned short", np.uint16),
        CType("c", "signed char", np.int8),
        CType("C", "unsigned char", np.uint8),
    )
}

HEADER = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"

# ---------------------------------------------------------------- rows


@dataclass
class Row:
    id: str  # unique: the function, and the type where a name is overloaded
    func: str  # the CUDA function as the coverage table names it
    family: str  # float, double, half, half2, bfloat16, bfloat162, integer, conversion
    sig: str  # "o:abc" in type letters
    body: str  # C setting o0 (o1) from a, b, c
    ref: Callable[..., Any] | None = None  # inputs (storage arrays) -> expected outputs (bits / ints)
    ulp: float = 0.0  # the GPU's documented error, in ulps of the output type (0: exact)
    abs_tol: float = 0.0  # or an absolute error (whichever is larger)
    ref_ulp: float | None = None  # emulator vs reference, where the reference is itself approximate
    ref_abs: float | None = None
    dom: tuple[str, ...] = ()  # per-input domain ("" = the type's whole range, edges included)
    n: int = 0  # inputs (0: by arity)
    ref_where: Callable[..., bool] | None = None  # on decoded inputs: where the reference's bound holds
    # on decoded inputs: the documented error of one element, in ulps, where it grows with the inputs
    # (__powf's with |y|); it replaces `ulp`, which then only names the bound in the report
    ulp_at: Callable[..., float] | None = None
    note: str = ""

    @property
    def outs(self) -> list[CType]:
        return [TYPES[x] for x in self.sig.split(":")[0]]

    @property
    def ins(self) -> list[CType]:
        return [TYPES[x] for x in self.sig.split(":")[1]]

    @property
    def kernel(self) -> str:
        return "k_" + re.sub(r"\W", lambda m: f"_{ord(m[0]):x}_", self.id)


def kernel_source(row: Row) -> str:
    params = [f"const {t.c}* __restrict__ p{k}" for k, t in enumerate(row.ins)]
    params += [f"{t.c}* __restrict__ q{k}" for k, t in enumerate(row.outs)]
    loads = " ".join(f"{t.c} {'abc'[k]} = p{k}[i];" for k, t in enumerate(row.ins))
    decl = " ".join(f"{t.c} o{k};" for k, t in enumerate(row.outs))
    stores = " ".join(f"q{k}[i] = o{k};" for k in range(len(row.outs)))
    return (
        f'extern "C" __global__ void {row.kernel}({", ".join(params)}, int n) {{\n'
        f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"    if (i >= n) return;\n"
        f"    {loads} {decl}\n"
        f"    {row.body}\n"
        f"    {stores}\n"
        f"}}\n"
    )


def group_source(rows: Sequence[Row]) -> str:
    return HEADER + "\n".join(kernel_source(r) for r in rows)


# ---------------------------------------------------------------- inputs


def float_edges(fmt: Fmt) -> list[float]:
    """0, -0, subnormals, the normal boundary, 1 and its neighbours, overflow, inf, NaN."""
    tiny = math.ldexp(1, fmt.emin - fmt.p + 1)
    least = math.ldexp(1, fmt.emin)
    big = decode(fmt, fmt.max_bits)
    eps = math.ldexp(1, 1 - fmt.p)
    return [
        0.0, -0.0, tiny, -tiny, least - tiny, least, -least, 1.0, -1.0, 1 + eps, 1 - eps / 2, 0.5, 1.5,
        -2.5, 3.0, 0.1, math.pi, -100.0, 1000.5, big, -big, big / 2, 65504.0, 65520.0, math.inf, -math.inf,
        math.nan, 2.0 ** (fmt.p) + 1, -(2.0**31), 2.0**31, 4294967296.0, 2.0**63, -(2.0**64),
    ]  # fmt: skip


INT_EDGES = [0, 1, -1, 2, -2, 3, 7, 31, 32, 33, 63, 64, 127, 128, 255, 256, 0x7FFF, 0x8000, 0xFFFF,
             0x10000, 0x55555555, 0x7FFFFFFF, -0x80000000, 0x80000001, 0xFFFFFFFF, 0x123456789,
             0x7FFFFFFFFFFFFFFF, -0x8000000000000000]  # fmt: skip


def _fit_int(values: Sequence[int], dtype: Any) -> np.ndarray:
    bits = 8 * np.dtype(dtype).itemsize
    wrapped = [v & ((1 << bits) - 1) for v in values]
    return np.array(wrapped, dtype=f"u{bits // 8}").view(dtype)


def _float_values(fmt: Fmt, rng: np.random.Generator, n: int, dom: str) -> np.ndarray:
    """n values (bits) of a float format: edges first, then random ones."""
    if dom.startswith("range"):
        lo, hi = (float(x) for x in dom.split(":")[1:])
        v = rng.uniform(lo, hi, n)
        return to_bits(fmt, v)
    if dom == "int":
        return to_bits(fmt, rng.integers(-20, 21, n).astype(np.float64))
    edges = to_bits(fmt, float_edges(fmt))
    if dom == "pos":
        edges = edges[[decode(fmt, int(b)) > 0 for b in edges]]
    k = n - len(edges)
    raw = rng.integers(0, 1 << fmt.bits, max(k, 0), dtype=np.uint64).astype(fmt.dtype)
    mag = np.exp2(rng.uniform(-24, 24, max(k, 0))) * rng.choice([-1.0, 1.0], max(k, 0))
    smallint = rng.integers(-64, 65, max(k, 0)) / rng.choice([1.0, 2.0, 4.0, 3.0], max(k, 0))
    pick = rng.integers(0, 4, max(k, 0))
    out = np.where(pick == 0, raw, np.where(pick == 3, to_bits(fmt, smallint), to_bits(fmt, mag)))
    allv = np.concatenate([edges, out])[:n]
    if dom == "pos":
        allv = np.where([decode(fmt, int(b)) >= 0 or decode(fmt, int(b)) != decode(fmt, int(b))
                         for b in allv], allv, allv ^ fmt.sign_bit).astype(fmt.dtype)  # fmt: skip
    return allv.astype(fmt.dtype)


def _int_values(dtype: Any, rng: np.random.Generator, n: int, dom: str) -> np.ndarray:
    if dom.startswith("range"):
        lo, hi = (int(x) for x in dom.split(":")[1:])
        return rng.integers(lo, hi + 1, n).astype(dtype)
    edges = _fit_int(INT_EDGES, dtype)
    bits = 8 * np.dtype(dtype).itemsize
    raw = rng.integers(0, 1 << min(bits, 63), max(n - len(edges), 0), dtype=np.uint64)
    raw = raw ^ (rng.integers(0, 2, len(raw), dtype=np.uint64) << np.uint64(bits - 1))
    small = rng.integers(-300, 300, len(raw)).astype(np.int64).astype(np.uint64)
    raw = np.where(rng.integers(0, 3, len(raw)) == 0, small, raw)
    return np.concatenate([edges, _fit_int(raw.tolist(), dtype)])[:n]


def values_for(t: CType, rng: np.random.Generator, n: int, dom: str = "") -> np.ndarray:
    if t.fmt is None:
        return _int_values(t.dtype, rng, n, dom)
    if t.lanes == 1:
        v = _float_values(t.fmt, rng, n, dom)
        return v.view(np.float32) if t.fmt is F32 else v.view(np.float64) if t.fmt is F64 else v
    lo = _float_values(t.fmt, rng, n, dom).astype(np.uint64)
    hi = _float_values(t.fmt, rng, n, dom)
    hi = hi[rng.permutation(n)].astype(np.uint64)
    return (lo | (hi << np.uint64(t.fmt.bits))).astype(t.dtype)


def row_seed(row_id: str) -> int:
    return int.from_bytes(hashlib.sha256(row_id.encode()).digest()[:4], "little")


def make_inputs(row: Row) -> list[np.ndarray]:
    """The row's inputs: deterministic (seeded by the row id); binary rows cross the edge values."""
    rng = np.random.default_rng(row_seed(row.id))
    ins = row.ins
    n = row.n or {0: 1, 1: 512, 2: 1536, 3: 1536}[len(ins)]
    doms = list(row.dom) + [""] * (len(ins) - len(row.dom))
    cols = [values_for(t, rng, n, d) for t, d in zip(ins, doms)]
    if len(ins) >= 2:  # every pair of the first 32 values of the first two inputs
        k = min(32, n)
        a, b = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
        m = min(k * k, n)
        cols[0][:m] = cols[0][a.reshape(-1)[:m]]
        cols[1][:m] = cols[1][b.reshape(-1)[:m]]
        for c in cols[2:]:
            c[:m] = c[rng.integers(0, k, m)]
    return cols


# ---------------------------------------------------------------- cases (not elementwise)


@dataclass
class Launch:
    grid: int
    block: int
    args: list[Any]  # NumPy arrays and NumPy scalars
    outputs: list[int]  # which args to compare
    shared_mem: int = 0


@dataclass
class Case:
    id: str
    func: str
    family: str  # warp, atomic, cooperative groups
    source: str  # a whole source (HEADER is prepended) with one kernel named `kernel`
    make: Callable[[np.random.Generator], Launch]
    ref: Callable[[Launch], list[np.ndarray]]
    sort: bool = False  # outputs whose order the hardware decides: compared sorted
    note: str = ""

    @property
    def kernel(self) -> str:
        return "c_" + re.sub(r"\W", lambda m: f"_{ord(m[0]):x}_", self.id)


CG_HEAD = """#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;
"""


def cases_source(cases: Sequence[Case]) -> str:
    """One source for several cases: each one's `kernel` renamed after its id."""
    body = "\n".join(c.source.replace(" void kernel(", f" void {c.kernel}(") for c in cases)
    return HEADER + CG_HEAD + body


def case_launch(case: Case) -> Launch:
    return case.make(np.random.default_rng(row_seed(case.id)))


# ---------------------------------------------------------------- running


@dataclass
class Outcome:
    """What one row or case did on one backend."""

    id: str
    status: str  # ok, unsupported, error
    outputs: list[np.ndarray] = field(default_factory=list)
    detail: str = ""
    seconds: float = 0.0


_MODULES: dict[tuple[str, str], course.Module] = {}


def module_for(source: str) -> course.Module:
    key = (course.device().backend, hashlib.sha256(source.encode()).hexdigest())
    if key not in _MODULES:
        _MODULES[key] = course.Module(code=source)
    return _MODULES[key]


def run_row(row: Row, source: str) -> Outcome:
    t0 = time.perf_counter()
    try:
        kern = module_for(source).get_function(row.kernel)
        with np.errstate(all="ignore"):
            ins = make_inputs(row)
        n = len(ins[0]) if ins else 1
        outs = [course.zeros(n, t.dtype) for t in row.outs]
        args = [course.asarray(a) for a in ins] + outs + [np.int32(n)]
        kern(((n + 127) // 128,), (128,), tuple(args))
        got = [course.asnumpy(o) for o in outs]
    except course.errors.UnsupportedInstruction as exc:
        return Outcome(row.id, "unsupported", detail=str(exc), seconds=time.perf_counter() - t0)
    except Exception as exc:
        return Outcome(
            row.id, "error", detail=f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - t0
        )
    return Outcome(row.id, "ok", got, seconds=time.perf_counter() - t0)


def run_case(case: Case, source: str | None = None) -> Outcome:
    t0 = time.perf_counter()
    try:
        kern = module_for(source or cases_source([case])).get_function(case.kernel)
        launch = case_launch(case)
        args = [course.asarray(a) if isinstance(a, np.ndarray) else a for a in launch.args]
        kern((launch.grid,), (launch.block,), tuple(args), shared_mem=launch.shared_mem)
        got = [course.asnumpy(args[i]) for i in launch.outputs]
    except course.errors.UnsupportedInstruction as exc:
        return Outcome(case.id, "unsupported", detail=str(exc), seconds=time.perf_counter() - t0)
    except Exception as exc:
        return Outcome(
            case.id, "error", detail=f"{type(exc).__name__}: {exc}", seconds=time.perf_counter() - t0
        )
    return Outcome(case.id, "ok", got, seconds=time.perf_counter() - t0)


# ---------------------------------------------------------------- comparing


def lanes_of(t: CType, a: np.ndarray) -> np.ndarray:
    """Float outputs as (n, lanes) bits in their format; others as they are."""
    a = np.ascontiguousarray(a)
    if t.fmt is None:
        return a.reshape(-1, 1)
    storage = t.fmt.dtype
    return a.view(storage).reshape(-1, t.lanes)


@dataclass
class Diff:
    """How two outputs differ: mismatching elements, the worst distance, an example."""

    bad: int = 0
    worst: float = 0.0  # in ulps (floats) or absolute (integers)
    example: str = ""

    @property
    def ok(self) -> bool:
        return self.bad == 0


def compare(t: CType, got: np.ndarray, want: np.ndarray, ulp: float | np.ndarray = 0, abs_tol: float = 0,
            inputs: Sequence[np.ndarray] = ()) -> Diff:  # fmt: skip
    """Bits must match (any NaN matches any NaN) or lie within ulp / abs_tol of each other (ulp: one
    bound, or one per element)."""
    with np.errstate(all="ignore"):
        return _compare(t, got, want, ulp, abs_tol, inputs)


def _compare(t: CType, got: np.ndarray, want: np.ndarray, ulp: float | np.ndarray, abs_tol: float,
             inputs: Sequence[np.ndarray]) -> Diff:  # fmt: skip
    g, w = lanes_of(t, got), lanes_of(t, want)
    ulps = np.asarray(ulp, np.float64)
    ulps = ulps.reshape(-1, 1) if ulps.ndim == 1 else ulps  # one bound per element, for every lane
    if g.shape != w.shape:
        return Diff(int(g.size), math.inf, f"shape {g.shape} != {w.shape}")
    if t.fmt is None:
        bad = g != w
        dist = np.zeros(g.shape)
    else:
        fmt = t.fmt
        gv = np.array([decode(fmt, int(x)) for x in g.reshape(-1)]).reshape(g.shape)
        wv = np.array([decode(fmt, int(x)) for x in w.reshape(-1)]).reshape(w.shape)
        both_nan = np.isnan(gv) & np.isnan(wv)
        same = (g == w) | both_nan | ((gv == 0) & (wv == 0) & (bool(np.any(ulps > 0)) or abs_tol > 0))
        og, ow = ordered(fmt, g), ordered(fmt, w)
        with np.errstate(over="ignore"):  # exact for the near misses that matter; huge ones saturate
            dist = np.where(np.sign(og) == np.sign(ow), np.abs(og - ow), np.abs(og) + np.abs(ow)).astype(
                np.float64
            )
        with np.errstate(invalid="ignore"):
            # the largest finite value and infinity are neighbours here: ulps count across overflow
            # (an exact row wants the bits: +0 and -0 are 0 ulps apart but not the same answer)
            near = ((dist <= ulps) & (ulps > 0)) | ((np.abs(gv - wv) <= abs_tol) & (abs_tol > 0))
            close = ~np.isnan(gv) & ~np.isnan(wv) & near
        bad = ~(same | close)
        dist = np.where(both_nan | (g == w), 0, np.where(np.isnan(gv) | np.isnan(wv), np.inf, dist))
    rows = np.flatnonzero(bad.any(axis=1))
    if not len(rows):
        return Diff(0, float(dist.max()) if dist.size else 0.0)
    k = int(rows[0])
    shown = ", ".join(_show(x, k) for x in inputs)
    ex = f"element {k} (inputs {shown}): got {_show(got, k, t)}, want {_show(want, k, t)}"
    return Diff(len(rows), float(dist[bad].max()) if t.fmt is not None else 0.0, ex)


def _show(a: np.ndarray, k: int, t: CType | None = None) -> str:
    v = a.reshape(-1)[k] if a.ndim == 1 else a[k]
    if t is not None and t.fmt is not None and t.fmt in (F16, BF16):
        bits = lanes_of(t, np.asarray(a))[k]
        return "{" + ", ".join(f"{decode(t.fmt, int(b))!r} ({int(b):#06x})" for b in bits) + "}"
    if isinstance(v, (np.floating, float)):
        return f"{float(v)!r} ({np.asarray(v).view(f'u{np.asarray(v).itemsize}')!s:})"
    return repr(v.tolist() if isinstance(v, np.ndarray) else v)


def element_ulp(row: Row, ins: Sequence[np.ndarray]) -> float | np.ndarray:
    """The row's documented error: `ulp`, or `ulp_at` element by element on these inputs."""
    if row.ulp_at is None:
        return row.ulp
    cols = [_decoded(t, a) for t, a in zip(row.ins, ins)]
    return np.array([float(row.ulp_at(*xs)) for xs in zip(*cols)])


def ref_tolerance(row: Row, ins: Sequence[np.ndarray] = ()) -> tuple[float | np.ndarray, float]:
    """Emulator vs reference: the row's documented error, plus one ulp for the reference's own rounding."""
    ulp: float | np.ndarray
    if row.ref_ulp is not None:
        ulp = row.ref_ulp
    elif row.ulp_at is not None:
        ulp = element_ulp(row, ins) + 1
    else:
        ulp = row.ulp + 1 if row.ulp else 0
    abs_tol = row.ref_abs if row.ref_abs is not None else row.abs_tol
    return ulp, abs_tol


def against_reference(row: Row, got: list[np.ndarray]) -> list[Diff]:
    """Each output of the emulator against the row's reference (where `ref_where` holds)."""
    assert row.ref is not None
    with np.errstate(all="ignore"):
        ins = make_inputs(row)
        want = row.ref(*ins)
        return _against(row, got, ins, want)


def _against(row: Row, got: list[np.ndarray], ins: list[np.ndarray], want: list[np.ndarray]) -> list[Diff]:
    keep = np.ones(len(got[0]), bool)
    if row.ref_where is not None:
        cols = [_decoded(t, a) for t, a in zip(row.ins, ins)]
        keep = np.array([bool(row.ref_where(*xs)) for xs in zip(*cols)])
    ulp, abs_tol = ref_tolerance(row, ins)
    if isinstance(ulp, np.ndarray):
        ulp = ulp[keep]
    out = []
    for t, g, w in zip(row.outs, got, want):
        w = (
            np.asarray(w).astype(t.dtype)
            if np.asarray(w).dtype != t.dtype and t.fmt is None
            else np.asarray(w)
        )
        w = w.view(t.dtype) if w.dtype != t.dtype and w.dtype.itemsize == np.dtype(t.dtype).itemsize else w
        out.append(compare(t, g[keep], w[keep], ulp, abs_tol, [a[keep] for a in ins]))
    return out


def _decoded(t: CType, a: np.ndarray) -> list[Any]:
    if t.fmt is None or t.lanes > 1:
        return np.asarray(a).tolist()
    return [decode(t.fmt, int(b)) for b in np.ascontiguousarray(a).view(t.fmt.dtype).tolist()]


def case_diffs(case: Case, got: list[np.ndarray]) -> list[Diff]:
    """A case's outputs against its reference: bit for bit (NaNs alike)."""
    launch = case_launch(case)
    with np.errstate(all="ignore"):
        want = case.ref(launch)
    out = []
    for g, w in zip(got, want):
        w = np.asarray(w)
        if w.dtype != g.dtype:
            w = w.astype(g.dtype)
        letter = {np.dtype(np.float32): "f", np.dtype(np.float64): "d"}.get(g.dtype)
        t = TYPES[letter] if letter else CType("x", "", g.dtype)
        out.append(compare(t, g, w))
    return out


# ---------------------------------------------------------------- coverage: every row and case, both backends

APPROX = ("approx", "div.full")


def gpu_exact(source: str, kernel: str) -> bool:
    """Whether the GPU computes this kernel exactly: its PTX (callees included) has no approximate
    instruction (ex2.approx, sin.approx, rsqrt.approx, div.full, ...)."""
    program = module_for_emulator(source).program
    names = {kernel} | {f for f in program.module.functions if not program.module.functions[f].is_entry}
    return not any(
        any(a in ins.opcode for a in APPROX) or ins.opcode.startswith("tanh")
        for f in names
        for ins in program.module.functions[f].instrs
    )


def module_for_emulator(source: str) -> course.Module:
    previous = course.device().backend
    course.set_backend("emulator")
    try:
        return module_for(source)
    finally:
        course.set_backend(previous)


def sources(rows: Sequence[Row], cases: Sequence[Case]) -> tuple[dict[str, str], dict[str, str]]:
    """One source per family of rows, one per family of cases."""
    fams: dict[str, list[Row]] = {}
    for r in rows:
        fams.setdefault(r.family, []).append(r)
    cfams: dict[str, list[Case]] = {}
    for c in cases:
        cfams.setdefault(c.family, []).append(c)
    return ({f: group_source(rs) for f, rs in fams.items()}, {f: cases_source(cs) for f, cs in cfams.items()})


def coverage(rows: Sequence[Row], cases: Sequence[Case], gpu: bool) -> list[dict[str, Any]]:
    """Run everything on the emulator (against the references) and, if `gpu`, on the GPU too."""
    row_src, case_src = sources(rows, cases)
    out = []
    for item in [*rows, *cases]:
        is_row = isinstance(item, Row)
        src = row_src[item.family] if is_row else case_src[item.family]
        course.set_backend("emulator")
        emu = run_row(item, src) if is_row else run_case(item, src)  # type: ignore[arg-type]
        rec: dict[str, Any] = {"id": item.id, "function": item.func, "family": item.family,
                               "emulator": emu.status, "detail": emu.detail, "seconds": round(emu.seconds, 3)}  # fmt: skip
        exact_gpu = True
        ulp: float | np.ndarray = 0.0
        abs_tol = 0.0
        if is_row:
            assert isinstance(item, Row)
            rec["signature"] = item.sig
            try:
                exact_gpu = gpu_exact(src, item.kernel)
            except Exception:
                exact_gpu = True
            if not exact_gpu:
                with np.errstate(all="ignore"):
                    ulp, abs_tol = element_ulp(item, make_inputs(item)), item.abs_tol
        rec["bound"] = "bit-exact" if exact_gpu else _bound(ulp, abs_tol)
        if emu.status == "ok":
            diffs = against_reference(item, emu.outputs) if is_row else case_diffs(item, emu.outputs)  # type: ignore[arg-type]
            bad = [d for d in diffs if not d.ok]
            rec["emulator"] = "pass" if not bad else "fail"
            rec["detail"] = bad[0].example if bad else ""
        if gpu:
            course.set_backend("cupy")
            dev = run_row(item, src) if is_row else run_case(item, src)  # type: ignore[arg-type]
            course.set_backend("emulator")
            rec["gpu"] = dev.status
            if dev.status == "ok" and emu.status == "ok":
                outs = item.outs if is_row else [_ctype_of(g) for g in dev.outputs]  # type: ignore[union-attr]
                ds = [compare(t, e, g, ulp, abs_tol) for t, e, g in zip(outs, emu.outputs, dev.outputs)]
                bad = [d for d in ds if not d.ok]
                rec["gpu"] = "agree" if not bad else "differ"
                rec["gpu_worst_ulp"] = max((d.worst for d in ds), default=0.0)
                rec["gpu_detail"] = bad[0].example if bad else ""
                if is_row and item.ref is not None:  # type: ignore[union-attr]
                    rd = against_reference(item, dev.outputs)  # type: ignore[arg-type]
                    rec["gpu_vs_reference"] = (
                        "pass" if all(d.ok for d in rd) else next(d.example for d in rd if not d.ok)
                    )
            elif dev.status != "ok":
                rec["gpu_detail"] = dev.detail
        out.append(rec)
    return out


def _ctype_of(a: np.ndarray) -> CType:
    letter = {np.dtype(np.float32): "f", np.dtype(np.float64): "d"}.get(a.dtype)
    return TYPES[letter] if letter else CType("x", "", a.dtype)


def _bound(ulp: float | np.ndarray, abs_tol: float) -> str:
    if isinstance(ulp, np.ndarray):  # one per element: the range it takes on the row's inputs
        lo, hi = (float(ulp.min()), float(ulp.max())) if ulp.size else (0.0, 0.0)
        return f"within {lo:g} to {hi:g} ulp by element" + (f" or abs {abs_tol:.2g}" if abs_tol else "")
    parts = ([f"{ulp:g} ulp"] if ulp else []) + ([f"abs {abs_tol:.2g}"] if abs_tol else [])
    return "within " + " or ".join(parts) if parts else "bit-exact"


def coverage_markdown(records: Sequence[dict[str, Any]], command: str) -> str:
    """The coverage table: a summary per family, then every function x type."""
    gpu = any("gpu" in r for r in records)
    fams: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        fams.setdefault(r["family"], []).append(r)
    lines = [
        "# Emulator coverage of the CUDA device API",
        "",
        f"Made by `{command}` from the table in `tests/emulator/device_table.py` and",
        "`tests/emulator/device_cases.py`. Each row is one function on one type, run on edge values",
        "(0, -0, subnormals, the normal boundary, overflow, inf, NaN, INT_MIN...) and random inputs.",
        "*Emulator* compares the emulator with an exact (or documented-bound) NumPy reference;",
        "*GPU* compares the GPU with the emulator: bit for bit where the kernel's PTX has no approximate",
        "instruction, else within the bound the CUDA Programming Guide documents (NaN payloads aside).",
        "",
        "| family | functions x types | emulator pass | unsupported (clear error) | emulator fail | "
        + ("GPU agrees | GPU differs |" if gpu else "GPU |"),
        "|---|---|---|---|---|" + ("---|---|" if gpu else "---|"),
    ]
    for fam, rs in fams.items():

        def cnt(key: str, val: str, rs: list = rs) -> int:
            return sum(1 for r in rs if r.get(key) == val)

        row = f"| {fam} | {len(rs)} | {cnt('emulator', 'pass')} | {cnt('emulator', 'unsupported')} | " + (
            f"{cnt('emulator', 'fail') + cnt('emulator', 'error')} | "
        )
        row += f"{cnt('gpu', 'agree')} | {len(rs) - cnt('gpu', 'agree')} |" if gpu else "not run here |"
        lines.append(row)
    total = len(records)
    lines += [
        "",
        f"{total} rows in all; {sum(r['emulator'] == 'pass' for r in records)} pass on the emulator.",
    ]
    bad = [r for r in records if r["emulator"] != "pass" or (gpu and r.get("gpu") != "agree")]
    if bad:
        lines += ["", "## Rows that do not pass", "", "| id | emulator | GPU | detail |", "|---|---|---|---|"]
        for r in bad:
            detail = (
                (r.get("detail") or r.get("gpu_detail") or "").replace("|", "\\|").replace("\n", " ")[:200]
            )
            lines.append(f"| `{r['id']}` | {r['emulator']} | {r.get('gpu', '-')} | {detail} |")
    for fam, rs in fams.items():
        lines += [
            "",
            f"## {fam}",
            "",
            "| id | function | emulator | GPU | GPU bound |",
            "|---|---|---|---|---|",
        ]
        for r in rs:
            g = r.get("gpu", "-")
            if g == "agree" and r.get("gpu_worst_ulp"):
                g += f" ({r['gpu_worst_ulp']:g} ulp)"
            lines.append(f"| `{r['id']}` | `{r['function']}` | {r['emulator']} | {g} | {r['bound']} |")
    return "\n".join(lines) + "\n"
