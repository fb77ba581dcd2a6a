"""Which device kernels run on: a GPU through CuPy, or the course's SIMT emulator.

`device()` picks CuPy when a GPU answers and the emulator otherwise; `COURSE_BACKEND=cupy` or
`=emulator` (or `set_backend`) forces one. The `Device` it returns holds the limits every
launch is validated against.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import BackendUnavailable

BACKENDS = ("cupy", "emulator")


@dataclass(frozen=True)
class Device:
    """The active backend and the limits every launch is validated against."""

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

    def __str__(self) -> str:
        return f"{self.name} ({self.backend} backend, {self.sm_count} SMs)"


EMULATED = Device(
    backend="emulator",
    name="SIMT emulator (H100-like)",
    max_threads_per_block=1024,
    max_block_dims=(1024, 1024, 64),
    max_grid_dims=(2**31 - 1, 65535, 65535),
    shared_memory_per_block=48 * 1024,
    shared_memory_per_block_optin=227 * 1024,
    warp_size=32,
    sm_count=132,
    l2_cache_bytes=50 * 1024 * 1024,
    compute_capability=(9, 0),
)

_active: Device | None = None


def device() -> Device:
    """The device kernels run on: CuPy's GPU if one works, else the emulator.

    `COURSE_BACKEND=cupy` or `=emulator` forces the choice.
    """
    global _active
    if _active is None:
        _active = _choose(os.environ.get("COURSE_BACKEND", "").strip().lower() or None)
    return _active


def set_backend(name: str | None) -> Device:
    """Switch backend for this process ("cupy", "emulator", or None for automatic)."""
    global _active
    if name is not None and name not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS} or None, not {name!r}")
    _active = _choose(name)
    return _active


def _choose(name: str | None) -> Device:
    if name not in (None, *BACKENDS):
        raise BackendUnavailable(f"COURSE_BACKEND must be 'cupy' or 'emulator', not {name!r}")
    if name == "emulator":
        return EMULATED
    try:
        return _cupy_device()
    except Exception as exc:  # no CuPy, no GPU, or a driver too old: all mean "no GPU here"
        if name == "cupy":
            raise BackendUnavailable(f"COURSE_BACKEND=cupy but CuPy cannot use a GPU: {exc}") from exc
        return EMULATED


def _cupy_device() -> Device:
    import cupy

    if not cupy.cuda.is_available():
        raise BackendUnavailable("cupy.cuda.is_available() is False")
    cupy.empty(1)  # the first allocation is where a missing or old driver shows up
    p = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    return Device(
        backend="cupy",
        name=p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"]),
        max_threads_per_block=p["maxThreadsPerBlock"],
        max_block_dims=tuple(p["maxThreadsDim"]),
        max_grid_dims=tuple(p["maxGridSize"]),
        shared_memory_per_block=p["sharedMemPerBlock"],
        shared_memory_per_block_optin=p.get("sharedMemPerBlockOptin", p["sharedMemPerBlock"]),
        warp_size=p["warpSize"],
        sm_count=p["multiProcessorCount"],
        l2_cache_bytes=p["l2CacheSize"],
        compute_capability=(p["major"], p["minor"]),
    )


@contextlib.contextmanager
def using(name: str | None) -> Iterator[Device]:
    """Run a block of code on another backend, then go back: `with using("emulator"): ...`."""
    global _active
    previous = _active
    set_backend(name)
    try:
        yield device()
    finally:
        _active = previous
