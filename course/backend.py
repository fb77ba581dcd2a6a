"""Which device kernels run on: a GPU through CuPy, or the course's SIMT emulator.

`device()` picks CuPy when a GPU answers and the emulator otherwise; `COURSE_BACKEND=cupy` or
`=emulator` (or `set_backend`) forces one. The `Device` it returns holds the limits every
launch is validated against, the per-SM limits that decide how many blocks run at once, and the
memory figures the Little's-law estimates use, each with where it came from.

On the emulator those figures come from a device model: an H100 SXM by default, or an H200 or a
T4 (Colab's GPU), chosen with `set_backend("emulator", model="t4")` or `COURSE_DEVICE_MODEL=t4`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .errors import BackendUnavailable

BACKENDS = ("cupy", "emulator")

DATASHEET = "NVIDIA's datasheet"
LATENCY_NOTE = "the course's round-trip figure for a DRAM load, not measured"

# what `describe()` lists: field, what it is, how to show its value
_LIMITS = (
    ("sm_count", "SMs", "{}"),
    ("threads_per_sm", "threads per SM", "{}"),
    ("blocks_per_sm", "blocks per SM", "{}"),
    ("registers_per_sm", "registers per SM", "{}"),
    ("registers_per_block", "registers per block", "{}"),
    ("shared_memory_per_sm", "shared memory per SM", "{} B"),
    ("shared_memory_per_block", "shared memory per block", "{} B"),
    ("shared_memory_per_block_optin", "shared memory per block, opted in", "{} B"),
    ("shared_memory_reserved_per_block", "shared memory reserved per block", "{} B"),
    ("max_threads_per_block", "threads per block", "{}"),
    ("warp_size", "warp size", "{}"),
    ("l2_cache_bytes", "L2 cache", "{} B"),
    ("compute_capability", "compute capability", "{0[0]}.{0[1]}"),
    ("memory_peak_gbps", "DRAM bandwidth peak", "{:.0f} GB/s"),
    ("dram_latency_ns", "DRAM latency", "{:.0f} ns"),
    ("read_stream_gbps", "DRAM read stream", "{:.0f} GB/s"),
)


@dataclass(frozen=True)
class Device:
    """The active backend, the limits every launch is validated against, the per-SM limits that
    decide how many blocks an SM holds at once, and the memory's peak and latency.

    `source(field)` says where a figure came from; `describe()` lists them all."""

    backend: str
    name: str
    max_threads_per_block: int
    max_block_dims: tuple[int, int, int]
    max_grid_dims: tuple[int, int, int]
    shared_memory_per_block: int  # static + dynamic without opting in
    shared_memory_per_block_optin: int  # the most a kernel may ask for
    warp_size: int
    sm_count: int
    l2_cache_bytes: int
    compute_capability: tuple[int, int]
    shared_memory_banks: int = 32
    bank_bytes: int = 4
    # what one SM holds at once (the occupancy calculation's inputs); the defaults are Hopper's
    threads_per_sm: int = 2048
    blocks_per_sm: int = 32
    registers_per_sm: int = 64 * 1024
    registers_per_block: int = 64 * 1024
    shared_memory_per_sm: int = 228 * 1024
    shared_memory_reserved_per_block: int = 1024  # the driver's, from compute capability 8.0 on
    memory_peak_gbps: float = 3350.0  # DRAM bandwidth, the datasheet's figure
    dram_latency_ns: float = (
        600.0  # a DRAM load's round trip: measured on a GPU (course.probe), else a model's
    )
    read_stream_gbps: float | None = None  # what a read-only kernel reaches: measured on a GPU, else unknown
    model: str = ""  # the emulator's device model ("h100", "h200", "t4"); "" on a GPU
    sources: tuple[tuple[str, str], ...] = ()  # (field, where its value came from)

    def __str__(self) -> str:
        return (
            f"{self.name} ({self.backend} backend, {self.sm_count} SMs × {self.threads_per_sm} threads, "
            f"{self.memory_peak_gbps / 1000:.3g} TB/s)"
        )

    @property
    def on_gpu(self) -> bool:
        """Whether this is a GPU run through CuPy (else the emulator's model)."""
        return self.backend == "cupy"

    @property
    def arch(self) -> str:
        """The real architecture NVRTC compiles for to count registers, e.g. "sm_90"."""
        return f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"

    @property
    def peak_label(self) -> str:
        """How a plot names the memory peak: 'datasheet peak (3.35 TB/s)'."""
        return f"datasheet peak ({self.memory_peak_gbps / 1000:.3g} TB/s)"

    def source(self, name: str) -> str:
        """Where the figure `name` (a field) came from."""
        if name not in {f.name for f in dataclasses.fields(self)}:
            raise ValueError(f"Device has no field {name!r}")
        return dict(self.sources).get(name, "the course's default")

    def describe(self) -> Any:
        """Every limit, its value and where it came from, as a table a notebook shows."""
        from .table import Table

        return Table(
            (
                {
                    "limit": what,
                    "value": "—" if getattr(self, name) is None else fmt.format(getattr(self, name)),
                    "from": self.source(name),
                }
                for name, what, fmt in _LIMITS
            ),
            columns=("limit", "value", "from"),
        )


def _emulated(
    key: str, label: str, sources: dict[str, str], **limits: Any
) -> Device:  # a device model: Hopper's launch limits unless `limits` says otherwise
    base: dict[str, Any] = dict(
        backend="emulator",
        name=f"SIMT emulator ({label}-like)",
        max_threads_per_block=1024,
        max_block_dims=(1024, 1024, 64),
        max_grid_dims=(2**31 - 1, 65535, 65535),
        shared_memory_per_block=48 * 1024,
        shared_memory_per_block_optin=227 * 1024,
        warp_size=32,
        sm_count=132,
        l2_cache_bytes=50 * 1024 * 1024,
        compute_capability=(9, 0),
        model=key,
    )
    base.update(limits)
    where = {f.name: f"the {label} model (datasheet, CUDA's tables)" for f in dataclasses.fields(Device)}
    where["dram_latency_ns"] = f"the {label} model: {LATENCY_NOTE}"
    where["read_stream_gbps"] = "not measured without a GPU (Little's law uses the peak)"
    where.update(sources)
    return Device(**base, sources=tuple(sorted(where.items())))


# the emulator's device models; the default is the first
MODELS: dict[str, Device] = {
    "h100": _emulated("h100", "H100", {"memory_peak_gbps": "the H100 model (H100 SXM datasheet)"}),
    "h200": _emulated("h200", "H200", {}, memory_peak_gbps=4800.0),
    "t4": _emulated(
        "t4", "T4", {},
        sm_count=40, threads_per_sm=1024, blocks_per_sm=16, shared_memory_per_sm=64 * 1024,
        shared_memory_per_block_optin=64 * 1024, shared_memory_reserved_per_block=0,
        l2_cache_bytes=4 * 1024 * 1024, compute_capability=(7, 5), memory_peak_gbps=320.0,
    ),
}  # fmt: skip
DEFAULT_MODEL = "h100"
EMULATED = MODELS[DEFAULT_MODEL]  # the default model (what trace() and check() validate against)

_active: Device | None = None
_model: str | None = None  # the model set_backend chose; None: COURSE_DEVICE_MODEL, else the default


def device() -> Device:
    """The device kernels run on: CuPy's GPU if one works, else the emulator.

    `COURSE_BACKEND=cupy` or `=emulator` forces the choice; `COURSE_DEVICE_MODEL` picks the
    emulator's model (h100, h200 or t4)."""
    global _active
    if _active is None:
        _active = _choose(os.environ.get("COURSE_BACKEND", "").strip().lower() or None)
    return _active


def on_gpu() -> bool:
    """Whether kernels run on a GPU through CuPy now; False on the emulator (nothing to time there)."""
    return device().on_gpu


def set_backend(name: str | None, *, model: str | None = None) -> Device:
    """Switch backend for this process ("cupy", "emulator", or None for automatic); `model` picks
    the emulator's device model (one of MODELS: "h100", the default, "h200" or "t4")."""
    global _active, _model
    if name is not None and name not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS} or None, not {name!r}")
    if model is not None:
        _model = _model_key(model, "model")
    _active = _choose(name)
    return _active


def emulated() -> Device:
    """The emulator's device model in use: set_backend's model, else COURSE_DEVICE_MODEL, else H100."""
    if _model is not None:
        return MODELS[_model]
    env = os.environ.get("COURSE_DEVICE_MODEL", "").strip().lower()
    return MODELS[_model_key(env, "COURSE_DEVICE_MODEL")] if env else EMULATED


def _model_key(key: str, what: str) -> str:
    if not isinstance(key, str) or key.lower() not in MODELS:
        raise ValueError(f"{what} must be one of {list(MODELS)}, not {key!r}")
    return key.lower()


def _choose(name: str | None) -> Device:
    if name not in (None, *BACKENDS):
        raise BackendUnavailable(f"COURSE_BACKEND must be 'cupy' or 'emulator', not {name!r}")
    if name == "emulator":
        return emulated()
    try:
        return _cupy_device()
    except Exception as exc:  # no CuPy, no GPU, or a driver too old: all mean "no GPU here"
        if name == "cupy":
            raise BackendUnavailable(f"COURSE_BACKEND=cupy but CuPy cannot use a GPU: {exc}") from exc
        return emulated()


# DRAM bandwidth by the name a GPU reports (GB/s, the datasheets); the first match wins
PEAKS = (
    ("H200", 4800.0), ("H100 NVL", 3900.0), ("H100 PCIe", 2000.0), ("H100", 3350.0),
    ("A100-SXM4-80GB", 2039.0), ("A100 80GB PCIe", 1935.0), ("A100", 1555.0),
    ("L40S", 864.0), ("L4", 300.0), ("A10G", 600.0), ("A10", 600.0), ("T4", 320.0),
    ("V100", 900.0), ("P100", 732.0),
)  # fmt: skip


def datasheet_peak(name: str) -> float | None:
    """The DRAM bandwidth (GB/s) NVIDIA's datasheet gives for a GPU of this name (as the GPU reports
    it, e.g. "NVIDIA H100 80GB HBM3"), or None for a GPU the course does not know."""
    return next((gbps for key, gbps in PEAKS if key in name), None)


def _cupy_device() -> Device:
    import cupy

    if not cupy.cuda.is_available():
        raise BackendUnavailable("cupy.cuda.is_available() is False")
    cupy.empty(1)  # the first allocation is where a missing or old driver shows up
    dev_id = cupy.cuda.Device().id
    p = cupy.cuda.runtime.getDeviceProperties(dev_id)

    def prop(key: str, attribute: int) -> int:  # the property, or the attribute where CuPy's dict lacks it
        return int(p[key]) if key in p else int(cupy.cuda.runtime.deviceGetAttribute(attribute, dev_id))

    name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
    props = "the GPU (cudaGetDeviceProperties)"
    peak = datasheet_peak(name)
    if peak is not None:
        peak_from = f"{DATASHEET} for {name}"
    else:  # DDR: two transfers a clock, over the bus's width
        peak = 2 * prop("memoryClockRate", 36) * 1e3 * prop("memoryBusWidth", 37) / 8 / 1e9
        peak_from = "the GPU's memory clock and bus width (cudaDevAttrMemoryClockRate, GlobalMemoryBusWidth)"
    cc = (int(p["major"]), int(p["minor"]))
    sources = {f.name: props for f in dataclasses.fields(Device)}
    sources.update(memory_peak_gbps=peak_from, dram_latency_ns=f"the course's figure: {LATENCY_NOTE}")
    sources.update(shared_memory_banks="CUDA's documentation", bank_bytes="CUDA's documentation")
    gpu = Device(
        backend="cupy",
        name=name,
        max_threads_per_block=p["maxThreadsPerBlock"],
        max_block_dims=tuple(p["maxThreadsDim"]),
        max_grid_dims=tuple(p["maxGridSize"]),
        shared_memory_per_block=p["sharedMemPerBlock"],
        shared_memory_per_block_optin=p.get("sharedMemPerBlockOptin", p["sharedMemPerBlock"]),
        warp_size=p["warpSize"],
        sm_count=p["multiProcessorCount"],
        l2_cache_bytes=p["l2CacheSize"],
        compute_capability=cc,
        threads_per_sm=prop("maxThreadsPerMultiProcessor", 39),
        blocks_per_sm=prop("maxBlocksPerMultiProcessor", 106),
        registers_per_sm=prop("regsPerMultiprocessor", 82),
        registers_per_block=prop("regsPerBlock", 12),
        shared_memory_per_sm=prop("sharedMemPerMultiprocessor", 81),
        shared_memory_reserved_per_block=prop("reservedSharedMemPerBlock", 111),
        memory_peak_gbps=float(peak),
        sources=tuple(sorted(sources.items())),
    )
    return _measured(gpu, cupy)


def _measured(gpu: Device, cupy: Any) -> Device:
    """The GPU with its DRAM latency and read stream measured (course.probe, cached); as it was,
    with the reason in its sources, where the measurement is off or fails."""
    from . import probe

    sources = dict(gpu.sources)
    if not probe.enabled():
        sources["read_stream_gbps"] = "not measured: COURSE_PROBE=off"
        return dataclasses.replace(gpu, sources=tuple(sorted(sources.items())))
    try:
        m = probe.measure(gpu.name, cupy.cuda.runtime.driverGetVersion(), cupy.__version__, probe.SOURCE)
    except Exception as exc:  # a probe that fails must not take the GPU away
        sources["read_stream_gbps"] = f"not measured: {type(exc).__name__}: {exc}"[:200]
        return dataclasses.replace(gpu, sources=tuple(sorted(sources.items())))
    sources.update(dram_latency_ns=probe.HOW, read_stream_gbps=probe.HOW)
    return dataclasses.replace(
        gpu,
        dram_latency_ns=m["dram_latency_ns"],
        read_stream_gbps=m["read_stream_gbps"],
        sources=tuple(sorted(sources.items())),
    )


@contextlib.contextmanager
def using(name: str | None, *, model: str | None = None) -> Iterator[Device]:
    """Run a block of code on another backend (and emulator model), then go back:
    `with using("emulator", model="t4"): ...`."""
    global _active, _model
    previous = _active, _model
    set_backend(name, model=model)
    try:
        yield device()
    finally:
        _active, _model = previous
