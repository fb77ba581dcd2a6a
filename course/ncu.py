"""Agreement with the hardware (issue #4): what `course.analysis` predicts from an emulator trace,
against Nsight Compute's counters for the same launch. The cases, the prediction, ncu's command and
its CSV, the 10 % rule and the Markdown table; `scripts/ncu_agreement.py` is the command line.

How each prediction is computed from the trace of the whole launch (every block, as ncu counts):

    shared ld / st wavefronts  sum of `ways` (course.analysis.bank_conflicts) over the shared-memory
                               warp instructions with op "ld" / "st"
    global ld / st requests    number of global-memory warp instructions with op "ld" / "st"
                               (rows of course.analysis.sectors: one per warp instruction with at
                               least one active lane)
    global ld / st sectors     sum over those instructions of the distinct 32-byte sectors their
                               active lanes touch

Atomics (op "atom" / "red", global or shared) are in neither: ncu counts them under _op_atom /
_op_red, which are not compared; the table's notes say how many each case had. Constant, param
and local memory are not global memory for these counters and are not in the trace's global rows.
"""

from __future__ import annotations

import csv
import functools
import io
import math
import os
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import analysis, backend, compiler, reduction
from .arrays import asarray, zeros
from .engine import Launch
from .module import Kernel, Module
from .toolkit import find_tool, newest

SEED = 4
TOLERANCE = 0.10

# prediction key -> Nsight Compute metric, in the table's column order
METRICS: dict[str, str] = {
    "shared_ld_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "shared_st_wavefronts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "global_ld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "global_ld_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "global_st_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "global_st_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
}
HEADINGS = {
    "shared_ld_wavefronts": "shared ld wavefronts",
    "shared_st_wavefronts": "shared st wavefronts",
    "global_ld_sectors": "global ld sectors",
    "global_ld_requests": "global ld requests",
    "global_st_sectors": "global st sectors",
    "global_st_requests": "global st requests",
}

# Small kernels whose answers are known by hand (the patterns of tests/test_analysis.py).
# Every block works on its own slice, so the counts are per-block numbers times the grid.
SOURCE = r"""
// a 32x32 tile read by column: all 32 lanes of a warp hit bank y, 32 distinct words (32-way)
extern "C" __global__ void tile_column(const float* in, float* out) {
    __shared__ float tile[32][32];
    unsigned x = threadIdx.x, y = threadIdx.y, base = blockIdx.x * 1024;
    tile[y][x] = in[base + y * 32 + x];
    __syncthreads();
    out[base + y * 32 + x] = tile[x][y];
}
// the same with rows padded to 33 floats: the column spreads over all 32 banks (1-way)
extern "C" __global__ void tile_column_padded(const float* in, float* out) {
    __shared__ float tile[32][33];
    unsigned x = threadIdx.x, y = threadIdx.y, base = blockIdx.x * 1024;
    tile[y][x] = in[base + y * 32 + x];
    __syncthreads();
    out[base + y * 32 + x] = tile[x][y];
}
// stride 1: a warp reads 128 consecutive bytes (4 sectors); stride 32: one sector per lane (32)
extern "C" __global__ void strided_read(const float* x, float* y, int stride) {
    unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    y[t] = x[t * stride];
}
// 8 bytes per lane: two half-warp phases; reading every other float2 makes each phase 2-way
extern "C" __global__ void shared_float2(const float2* x, float2* y) {
    __shared__ float2 s[128];
    unsigned t = threadIdx.x, i = blockIdx.x * 128 + t;
    s[t] = x[i];
    __syncthreads();
    y[i] = s[(2 * t) & 127];
}
// 16 bytes per lane: four quarter-warp phases; every other float4 makes each phase 2-way
extern "C" __global__ void shared_float4(const float4* x, float4* y) {
    __shared__ float4 s[128];
    unsigned t = threadIdx.x, i = blockIdx.x * 128 + t;
    s[t] = x[i];
    __syncthreads();
    y[i] = s[(2 * t) & 127];
}
// doubles: s[t] is two clean half-warps (2 wavefronts), s[2t] 2-way in each (4)
extern "C" __global__ void shared_double(const double* x, double* y) {
    __shared__ double s[64];
    unsigned t = threadIdx.x, base = blockIdx.x * 64;
    s[t] = x[base + t];
    s[t + 32] = x[base + t + 32];
    __syncthreads();
    y[blockIdx.x * 32 + t] = s[t] + s[2 * t];
}
// two neighbouring floats, read as written: the compiler fuses each pair into one 8-byte load
// (ld.shared.v2.f32, ld.global.v2.f32) because it knows both arrays are 8-byte aligned
extern "C" __global__ void fused_pair(const float* xin, float* y) {
    __shared__ __align__(16) float s[256];
    const float* x = (const float*)__builtin_assume_aligned(xin, 8) + blockIdx.x * 256;
    unsigned t = threadIdx.x;
    s[t] = x[t];
    s[t + 128] = x[t + 128];
    __syncthreads();
    y[blockIdx.x * 128 + t] = (s[2 * t] + s[2 * t + 1]) + (x[2 * t] + x[2 * t + 1]);
}
// a loop of four 4-byte loads: unrolled, then fused into one ld.shared.v4.f32
extern "C" __global__ void unrolled_quad(const float* x, float* y) {
    __shared__ __align__(16) float s[512];
    unsigned t = threadIdx.x;
    x += blockIdx.x * 512;
#pragma unroll
    for (int k = 0; k < 4; ++k) s[t + 128 * k] = x[t + 128 * k];
    __syncthreads();
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; ++k) sum += s[4 * t + k];
    y[blockIdx.x * 128 + t] = sum;
}
"""


# ---------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    name: str
    kernel: str  # the function name as ncu's Kernel Name starts (templates: without <...>)
    build: Callable[[], Launch]  # inputs from SEED, on the active backend
    note: str = ""
    ptx_expect: tuple[str, ...] = ()  # regexes the kernel's PTX must match (the compiler's choices)


@functools.cache
def _module() -> Module:
    return Module(code=SOURCE)


def _random(rng: np.random.Generator, n: int, dtype: Any = np.float32) -> Any:
    return asarray(rng.standard_normal(n).astype(dtype))


def _reduction(name: str, n: int, block: int, grid: int | None = None) -> Callable[[], Launch]:
    """A course reduction; grid-stride versions get an explicit grid, as their default depends
    on the device's SM count (the emulator's and the GPU's could differ)."""

    def build() -> Launch:
        x = asarray(np.random.default_rng(SEED).standard_normal(n).astype(np.float32))
        return reduction.ENGINE.plan(name, x, block=block, grid=grid).launches[0]

    return build


def _kernel(
    name: str, grid: int, block: tuple[int, int], make_args: Callable[[np.random.Generator], tuple]
) -> Callable[[], Launch]:
    def build() -> Launch:
        args = make_args(np.random.default_rng(SEED))
        return Launch(_module().get_function(name), (grid, 1, 1), (*block, 1), args)

    return build


def _floats_in_out(n_in: int, n_out: int, dtype: Any = np.float32) -> Callable[[np.random.Generator], tuple]:
    return lambda rng: (_random(rng, n_in, dtype), zeros(n_out, dtype))


def _strided(stride: int) -> Callable[[np.random.Generator], tuple]:
    return lambda rng: (_random(rng, 1024 * stride), zeros(1024, np.float32), np.int32(stride))


FUSION_NOTE = (
    "read as written (two 4-byte loads per sum) the source would predict {src}; the PTX has {ptx}, "
    "so the trace predicts {trace} per warp"
)
CASES: tuple[Case, ...] = (
    Case("reduce1", "reduce1", _reduction("reduce1", 2**14, 256)),
    Case("reduce2", "reduce2", _reduction("reduce2", 2**14, 256), "strided index: bank conflicts"),
    Case("reduce3", "reduce3", _reduction("reduce3", 2**14, 256)),
    Case("reduce4", "reduce4", _reduction("reduce4", 2**15, 128)),
    Case("reduce5", "reduce5", _reduction("reduce5", 2**15, 128)),
    Case(
        "reduce6",
        "reduce6",
        _reduction("reduce6", 2**15, 128),
        "template: ncu lists it as `void reduce6<128>(const float *, float *, int)`",
    ),
    Case(
        "reduce7",
        "reduce7",
        _reduction("reduce7", 2**16, 128, grid=8),
        "template reduce7<128>; 8 blocks, so each thread loops 32 times",
    ),
    Case("reduce_shfl", "reduce_shfl", _reduction("reduce_shfl", 2**16, 256, grid=16)),
    Case(
        "reduce_vec4",
        "reduce_vec4",
        _reduction("reduce_vec4", 2**16, 256, grid=16),
        "16-byte loads",
        (r"ld\.global(\.nc)?\.v4\.f32",),
    ),
    Case(
        "reduce_single_pass",
        "reduce_single_pass",
        _reduction("reduce_single_pass", 2**16, 256, grid=16),
        "the atomicInc on the `__device__` counter is an atomic: not compared",
        (r"ld\.global(\.nc)?\.v4\.f32", r"atom\.global\.inc\.u32"),
    ),
    Case("tile_column", "tile_column", _kernel("tile_column", 8, (32, 32), _floats_in_out(8192, 8192))),
    Case(
        "tile_column_padded",
        "tile_column_padded",
        _kernel("tile_column_padded", 8, (32, 32), _floats_in_out(8192, 8192)),
    ),
    Case("coalesced_read", "strided_read", _kernel("strided_read", 8, (128, 1), _strided(1)), "stride 1"),
    Case("stride32_read", "strided_read", _kernel("strided_read", 8, (128, 1), _strided(32)), "stride 32"),
    Case(
        "shared_float2",
        "shared_float2",
        _kernel("shared_float2", 8, (128, 1), _floats_in_out(2048, 2048)),
        "",
        (r"st\.shared\.v2\.[bfu]32", r"ld\.shared\.v2\.[bfu]32"),
    ),
    Case(
        "shared_float4",
        "shared_float4",
        _kernel("shared_float4", 8, (128, 1), _floats_in_out(4096, 4096)),
        "",
        (r"st\.shared\.v4\.[bfu]32", r"ld\.shared\.v4\.[bfu]32"),
    ),
    Case(
        "shared_double",
        "shared_double",
        _kernel("shared_double", 8, (32, 1), _floats_in_out(512, 256, np.float64)),
        "",
        (r"st\.shared\.[bf]64", r"ld\.shared\.[bf]64"),
    ),
    Case(
        "fused_pair",
        "fused_pair",
        _kernel("fused_pair", 8, (128, 1), _floats_in_out(2048, 1024)),
        FUSION_NOTE.format(
            src="4 shared ld wavefronts (two 2-way loads) and 4 global ld requests / 24 sectors",
            ptx="one ld.shared.v2.f32 and one ld.global.v2.f32",
            trace="2 wavefronts and 3 requests / 16 sectors",
        ),
        (r"ld\.shared\.v2\.f32", r"ld\.global(\.nc)?\.v2\.f32"),
    ),
    Case(
        "unrolled_quad",
        "unrolled_quad",
        _kernel("unrolled_quad", 8, (128, 1), _floats_in_out(4096, 1024)),
        "the source's loop of four 4-way loads would predict 16 shared ld wavefronts per warp; "
        "unrolled and fused into one ld.shared.v4.f32 (conflict-free quarter-warps) the trace predicts 4",
        (r"ld\.shared\.v4\.f32",),
    ),
)


def _version(engine: Any, version: str) -> Callable[[], Launch]:
    """A topic version's first launch on its panel's input (the panel's N, seed SEED, the version's
    default block). A grid that depends on the device (one wave) is taken from the emulator's device
    model, so the traced launch and the profiled one are the same launch."""

    def build() -> Launch:
        inputs = engine.topic.panel.make_input(engine.topic.panel.n, np.random.default_rng(SEED))
        v = engine.version(version)
        block = engine.block_for(v, None)
        with backend.using("emulator"):
            dims = engine.grid(v, engine.topic.size(*inputs), block, inputs[0].dtype)
        grid = dims[0] if dims[1:] == (1, 1) else None
        return engine.plan(v, *(asarray(a) for a in inputs), block=block, grid=grid).launches[0]

    return build


def _topic_cases() -> tuple[Case, ...]:
    """Every listed version of every topic (course.topics), except those a hand-made case above
    already measures: a new version joins the table by existing."""
    from .topics import TOPICS

    named = {c.name for c in CASES}
    return tuple(
        Case(
            name,
            engine.version(name).kernel_name,  # ncu names the kernel (a template without <...>)
            _version(engine, name),
            f"{engine.name}: the panel's input, N={engine.topic.panel.n}",
        )
        for engine in TOPICS
        if engine.topic.panel is not None
        for name in engine.versions()
        if name not in named
    )


CASES = CASES + _topic_cases()
BY_NAME = {c.name: c for c in CASES}


def select(names: Sequence[str] | None) -> list[Case]:
    if not names:
        return list(CASES)
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise ValueError(f"unknown case(s) {unknown}; cases are {list(BY_NAME)}")
    return [BY_NAME[n] for n in names]


# ---------------------------------------------------------------- predictions


@dataclass
class Prediction:
    case: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    counts: dict[str, int]
    atomics: int  # atomic warp instructions in the trace: excluded from the counts
    ptx: dict[str, str] = field(default_factory=dict)  # ptx_expect pattern -> the opcode found ("": none)


def counts(trace: Any) -> dict[str, int]:
    """The six counters the analysis predicts for a trace (see the module docstring)."""
    bc, sc = analysis.bank_conflicts(trace), analysis.sectors(trace)
    return {
        "shared_ld_wavefronts": int(bc.ways[bc.op == "ld"].sum()),
        "shared_st_wavefronts": int(bc.ways[bc.op == "st"].sum()),
        "global_ld_sectors": int(sc.sectors[sc.op == "ld"].sum()),
        "global_ld_requests": int((sc.op == "ld").sum()),
        "global_st_sectors": int(sc.sectors[sc.op == "st"].sum()),
        "global_st_requests": int((sc.op == "st").sum()),
    }


def kernel_ptx(kernel: Kernel) -> str:
    """The PTX of one kernel's entry (a module may hold many)."""
    ptx = kernel.module.compiled.ptx
    m = re.search(rf"\.entry\s+{re.escape(kernel.ptx_name)}\s*\(", ptx)
    if m is None:
        return ptx
    end = ptx.find(".entry", m.end())
    return ptx[m.start() : end if end >= 0 else len(ptx)]


def predict(case: Case) -> Prediction:
    """Trace the case's launch on the emulator (all blocks) and count."""
    with backend.using("emulator"):
        launch = case.build()
        trace = launch.trace()
    ptx = kernel_ptx(launch.kernel)
    return Prediction(
        case=case.name,
        grid=trace.grid,
        block=trace.block_dim,
        counts=counts(trace),
        atomics=int(np.isin(trace.op, ("atom", "red")).sum()),
        ptx={p: m[0] if (m := re.search(p, ptx)) else "" for p in case.ptx_expect},
    )


# ---------------------------------------------------------------- one launch on the GPU


def run_on_gpu(case: Case) -> None:
    """Launch the case once through CuPy and wait for it: what ncu profiles."""
    backend.set_backend("cupy")
    import cupy

    launch = case.build()
    launch()
    cupy.cuda.runtime.deviceSynchronize()


# ---------------------------------------------------------------- Nsight Compute


def find_ncu(explicit: str | None = None) -> str:
    """`explicit`, else ncu on PATH, in /usr/local/cuda/bin, or the newest Nsight Compute install."""
    places = [
        "/usr/local/cuda/bin/ncu",
        *newest("/opt/nvidia/nsight-compute/*/ncu"),
        *newest("/usr/local/cuda*/bin/ncu"),
    ]
    searched = "not on PATH, not in /usr/local/cuda/bin, not in /opt/nvidia/nsight-compute"
    return find_tool("ncu", explicit, "--ncu", places, searched)


def ncu_command(ncu: str, case: str, runner: Sequence[str]) -> list[str]:
    """ncu profiling `runner + [case]`, the command that launches one case once on the GPU (the
    command line's `run`)."""
    # --print-units base: counts as plain numbers, never rescaled to K/M units;
    # --clock-control none: counters do not need locked clocks, and the clocks are left alone
    return [
        ncu,
        "--csv",
        "--print-units",
        "base",
        "--clock-control",
        "none",
        "--target-processes",
        "all",
        "--metrics",
        ",".join(METRICS.values()),
        *runner,
        case,
    ]


def ncu_version(ncu: str) -> str:
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown ({exc})"
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    return next((ln for ln in lines if ln.lower().startswith("version")), lines[-1] if lines else "unknown")


@dataclass
class KernelCounters:
    """One kernel's metrics from an ncu CSV, summed over its launches."""

    name: str  # the Kernel Name column as ncu printed it
    launches: set[str] = field(default_factory=set)  # the ID column
    metrics: dict[str, float] = field(default_factory=dict)


def kernel_base(name: str) -> str:
    """`reduce1`, `void reduce6<128u>(const float *, float *, int)` or `_Z7reduce6ILj128EEvPKfPfi`
    -> the bare function name."""
    name = name.strip()
    m = re.match(r"_Z(\d+)", name)
    if m:
        return name[m.end() : m.end() + int(m[1])]
    m = re.search(r"([A-Za-z_]\w*)\s*(?:<|\(|$)", name)
    return m[1] if m else name


_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}


def metric_value(value: str, unit: str = "") -> float:
    """A Metric Value cell as a number: thousands separators dropped, a K/M/G unit prefix applied."""
    text = value.strip().replace("\u202f", "").replace("\xa0", "").replace(" ", "")
    if text.lower() in ("", "n/a", "nan"):
        return math.nan
    number = float(text.replace(",", ""))
    m = re.fullmatch(r"([KMG]?)(sector|request|wavefront)s?", unit.strip())
    return number * _PREFIX[m[1]] if m else number


# unit prefixes of ncu's values (without --print-units base: "Ghz", "Minst", "Kbyte")
SCALE = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}
# ncu's time units: with --print-units base it writes "ns" (gpu__time_duration.sum, "1,277,728"
# ns in dot_ncu_*.csv of the H100 run); without it "nsecond", "usecond", "msecond", "second".
SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
SECONDS |= {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0}


def to_base(v: float, unit: str) -> float:
    """ncu's value in base units: seconds, per second, bytes, instructions ('ns' and 'nsecond'
    -> s, 'cycle/ns' and 'cycle/nsecond' -> cycles per s, 'Ghz' -> Hz, 'Minst' -> inst).

    >>> to_base(162_800, "ns"), to_base(162.8, "usecond"), to_base(1.979, "cycle/ns")
    (0.0001628, 0.0001628, 1979000000.0)
    """
    u = unit.strip()
    if "/" in u:  # a rate: cycle/nsecond, cycle/ns, cycle/second
        per = u.split("/", 1)[1].strip()
        if per not in SECONDS:
            raise ValueError(f"ncu rate unit {unit!r}: per what?")
        return v / SECONDS[per]
    if u in SECONDS:
        return v * SECONDS[u]
    if u.lower().endswith("hz"):
        return v * SCALE.get(u[:-2].upper() if u[:-2] else "", 1.0)
    for suffix in ("inst", "byte", "cycle"):
        if u.endswith(suffix) and u[: -len(suffix)] in SCALE:
            return v * SCALE[u[: -len(suffix)]]
    return v


def parse_ncu_csv(text: str) -> dict[str, KernelCounters]:
    """Kernel base name -> its counters, from ncu --csv output mixed with other lines (==PROF==,
    the program's own output): only the lines from the header on that look like CSV rows count."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return {}
    rows = csv.DictReader(io.StringIO("\n".join(ln for ln in lines[start:] if ln.startswith('"'))))
    out: dict[str, KernelCounters] = {}
    for row in rows:
        name, metric = row.get("Kernel Name") or "", row.get("Metric Name") or ""
        if not metric or row.get("ID") == "ID":
            continue
        k = out.setdefault(kernel_base(name), KernelCounters(name))
        k.launches.add(row.get("ID") or "")
        value = metric_value(row.get("Metric Value") or "", row.get("Metric Unit") or "")
        k.metrics[metric] = k.metrics.get(metric, 0.0) + value
    return out


@dataclass
class Measurement:
    counters: KernelCounters | None
    error: str = ""
    seconds: float = 0.0


def measure_case(
    ncu: str, case: Case, runner: Sequence[str], timeout: float = 240.0, raw: Path | None = None
) -> Measurement:
    """Run `ncu ... <runner> <case>` in a subprocess (see ncu_command); `raw`: a folder to keep
    ncu's output in."""
    env = {**os.environ, "COURSE_BACKEND": "cupy"}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            ncu_command(ncu, case.name, runner), capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired:
        return Measurement(None, f"ncu took more than {timeout:.0f} s", time.perf_counter() - t0)
    seconds = time.perf_counter() - t0
    if raw is not None:
        raw.mkdir(parents=True, exist_ok=True)
        (raw / f"{case.name}.txt").write_text(proc.stdout + "\n==STDERR==\n" + proc.stderr)
    found = parse_ncu_csv(proc.stdout).get(case.kernel)
    if found is None:
        problems = [
            ln.strip()
            for ln in (proc.stdout + proc.stderr).splitlines()
            if "ERR" in ln or "Error" in ln or "WARNING" in ln
        ]
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        return Measurement(None, f"no {case.kernel} in ncu's CSV (rc {proc.returncode}): "
                           + " | ".join(problems[:3] or tail), seconds)  # fmt: skip
    return Measurement(found, "", seconds)


# ---------------------------------------------------------------- comparison and the table


@dataclass(frozen=True)
class Comparison:
    case: str
    counter: str  # a key of METRICS
    predicted: int
    measured: float | None  # None: ncu gave no value

    @property
    def ratio(self) -> float | None:
        if self.measured is None or math.isnan(self.measured):
            return None
        if self.predicted == 0:
            return 1.0 if self.measured == 0 else math.inf
        return self.measured / self.predicted

    @property
    def ok(self) -> bool:
        r = self.ratio
        return r is not None and abs(r - 1.0) <= TOLERANCE + 1e-12


def compare(pred: Prediction, measured: KernelCounters | None) -> list[Comparison]:
    out = []
    for key, metric in METRICS.items():
        value = None if measured is None else measured.metrics.get(metric)
        out.append(Comparison(pred.case, key, pred.counts[key], value))
    return out


def _dims(d: tuple[int, ...]) -> str:
    d = tuple(d)
    while len(d) > 1 and d[-1] == 1:
        d = d[:-1]
    return "×".join(str(v) for v in d)


def _cell(c: Comparison) -> str:
    measured = "–" if c.measured is None or math.isnan(c.measured) else f"{c.measured:,.0f}"
    text = f"{c.predicted:,} / {measured}"
    if c.ok:
        return text
    r = c.ratio
    return f"**{text}** ({'no value' if r is None else f'×{r:.2f}'})"


def case_notes(case: Case, pred: Prediction, meas: Measurement | None) -> list[str]:
    notes = [case.note] if case.note else []
    for pattern, found in pred.ptx.items():
        notes.append(f"PTX has `{found}`" if found else f"PTX has NO match for `{pattern}`")
    if pred.atomics:
        notes.append(f"{pred.atomics} atomic warp instruction(s) excluded")
    if meas is not None and meas.counters is not None and len(meas.counters.launches) != 1:
        notes.append(f"ncu profiled {len(meas.counters.launches)} launches of it: summed")
    if meas is not None and meas.error:
        notes.append(f"ncu: {meas.error}")
    return notes


def render(
    cases: Sequence[Case],
    preds: dict[str, Prediction],
    measured: dict[str, Measurement],
    meta: dict[str, str],
) -> str:
    """The Markdown report: header, summary line, one row per case (predicted / measured)."""
    comps = {c.name: compare(preds[c.name], measured[c.name].counters) for c in cases}
    total = sum(len(v) for v in comps.values())
    good = sum(x.ok for v in comps.values() for x in v)
    cases_ok = sum(all(x.ok for x in comps[c.name]) for c in cases)
    verdict = "PASS" if good == total else "FAIL"
    out = [
        "# Emulator-trace analysis against Nsight Compute",
        "",
        f"Device: {meta.get('device', 'unknown')}. Nsight Compute: {meta.get('ncu_version', 'unknown')}. "
        f"{meta.get('toolchain', '')}. Measured {meta.get('date', '')}.",
        "",
        f"Made with `{meta.get('command', 'python scripts/ncu_agreement.py measure')}`, which runs, once per case,",
        "",
        f"    {meta.get('ncu_command', '')}",
        "",
        f"**{verdict}: {good} of {total} counts agree within {TOLERANCE:.0%} "
        f"({cases_ok} of {len(cases)} cases agree on all six).**",
        "",
        "Each cell is *predicted / measured*: predicted from the emulator's trace of the same launch "
        "(all blocks, the compiler's PTX) by `course.analysis`, measured by ncu. A count agrees when "
        f"measured / predicted is within {TOLERANCE:.0%} of 1, or both are 0; cells that do not are bold, "
        "with the ratio. Tiny counts are reported as they are.",
        "",
        "| counter | Nsight Compute metric | predicted as |",
        "|---|---|---|",
        f"| {HEADINGS['shared_ld_wavefronts']} | `{METRICS['shared_ld_wavefronts']}` | sum of `ways` over shared `ld` |",
        f"| {HEADINGS['shared_st_wavefronts']} | `{METRICS['shared_st_wavefronts']}` | sum of `ways` over shared `st` |",
        f"| {HEADINGS['global_ld_sectors']} | `{METRICS['global_ld_sectors']}` | distinct 32-byte sectors per global `ld`, summed |",
        f"| {HEADINGS['global_ld_requests']} | `{METRICS['global_ld_requests']}` | global `ld` warp instructions |",
        f"| {HEADINGS['global_st_sectors']} | `{METRICS['global_st_sectors']}` | distinct 32-byte sectors per global `st`, summed |",
        f"| {HEADINGS['global_st_requests']} | `{METRICS['global_st_requests']}` | global `st` warp instructions |",
        "",
        "Atomics (`atom`, `red`) are counted by neither side of this table (ncu: `_op_atom`, `_op_red`).",
        "",
        "The cases are the hand-made ones (reductions at chosen sizes, small kernels whose counts are known "
        "by hand) and then every listed version of every topic (`course.topics`), each version's first launch "
        "on its panel's input: a new version joins the table by existing.",
        "",
        "Where the two disagree it is the limit of tracing PTX: ptxas, which turns PTX into the GPU's "
        "machine code (SASS), may fuse neighbouring 4-byte accesses into one 8- or 16-byte access, or keep a "
        "value in a register instead of reloading it. The emulator counts the accesses the PTX makes, so a "
        "panel's shared or global counts for such a kernel are what the source asks for: an upper bound on "
        "the accesses (and wavefronts) the hardware makes. The bold cells below are such cases; the notes "
        "name the PTX the fused cases compile to.",
        "",
        "| case | kernel | grid × block | " + " | ".join(HEADINGS.values()) + " | agrees |",
        "|---|---|---|" + "---:|" * len(HEADINGS) + "---|",
    ]  # fmt: skip
    for c in cases:
        p, row = preds[c.name], comps[c.name]
        agrees = "yes" if all(x.ok for x in row) else f"no ({sum(x.ok for x in row)} of {len(row)})"
        launch = f"{_dims(p.grid)} × {_dims(p.block)}"
        out.append(
            f"| {c.name} | `{c.kernel}` | {launch} | " + " | ".join(_cell(x) for x in row) + f" | {agrees} |"
        )
    out += ["", "## Notes", ""]
    for c in cases:
        notes = case_notes(c, preds[c.name], measured.get(c.name))
        if notes:
            out.append(f"- **{c.name}**: " + "; ".join(notes) + ".")
    return "\n".join(out) + "\n"


def device_name() -> str:
    """The GPU's name and driver, from nvidia-smi (else CuPy)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
        if out.strip():
            name, _, driver = out.strip().splitlines()[0].partition(",")
            return f"{name.strip()} (driver {driver.strip()})" if driver else name.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        with backend.using("cupy") as gpu:
            return gpu.name
    except Exception:
        return "unknown"


def toolchain() -> str:
    """CuPy (which compiles what ncu profiles) and the NVRTC the emulator's PTX comes from."""
    parts = []
    try:
        import cupy

        parts.append(f"CuPy {cupy.__version__}")
    except Exception:
        parts.append("CuPy unknown")
    try:
        major, minor = compiler.nvrtc_version()
        parts.append(f"emulator PTX from NVRTC {major}.{minor}")
    except Exception:
        pass
    return ", ".join(parts)
