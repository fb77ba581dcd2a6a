"""The emulator's memory: global buffers, per-block shared memory, per-thread local memory.

One 64-bit generic address space holds them all, as on a GPU: global buffers sit at
their own addresses, and the shared and local windows are fixed ranges that
`cvta` converts to and from. The checks live here (bounds against the exact buffer,
not an allocation granule; alignment); the machine applies them to every access
(`access.py`), and what each instruction does with memory is in `ops/memory.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import MisalignedAccessError, OutOfBoundsError

GLOBAL_BASE = 0x7000_0000_0000
SHARED_WINDOW = 0x1000_0000_0000
LOCAL_WINDOW = 0x2000_0000_0000
WINDOW_SIZE = 1 << 32
BUFFER_ALIGN = 512  # CuPy's pool hands out 512-byte aligned blocks
POISON = 0xFF  # fresh shared/local memory reads as NaN or -1, never as a silent 0


@dataclass
class Buffer:
    name: str
    space: str  # global or const
    base: int
    data: np.ndarray  # flat uint8 view of the caller's array (writes go straight into it)
    itemsize: int
    dtype: str

    @property
    def nbytes(self) -> int:
        return self.data.size


class Region:
    """A byte array split into equal rows (one per block, or one per thread)."""

    def __init__(self, rows: int, row_bytes: int, used_bytes: int, space: str):
        self.row_bytes = max(16, -(-row_bytes // 16) * 16)
        self.used = used_bytes
        self.space = space
        self.data = np.full((rows, self.row_bytes), POISON, np.uint8)
        self._views: dict[np.dtype, np.ndarray] = {}

    def view(self, dtype: np.dtype) -> np.ndarray:
        v = self._views.get(dtype)
        if v is None:
            v = self._views[dtype] = self.data.reshape(-1).view(dtype)
        return v


class Memory:
    def __init__(self) -> None:
        self.buffers: list[Buffer] = []
        self._bases = np.empty(0, np.int64)
        self._ends = np.empty(0, np.int64)
        self._views: dict[tuple[int, np.dtype], np.ndarray | None] = {}
        self._next = GLOBAL_BASE

    # -- global buffers

    def add_buffer(self, name: str, array: np.ndarray, space: str = "global", base: int | None = None) -> int:
        """Map an array into global memory (at `base` if given); the same array twice maps once."""
        for b in self.buffers:
            if b.data.size == array.nbytes and b.data.ctypes.data == array.ctypes.data:
                return b.base
        if base is None:
            base = self._next
            self._next = base + (-(-max(array.nbytes, 1) // BUFFER_ALIGN) + 1) * BUFFER_ALIGN
        flat = array.reshape(-1).view(np.uint8)
        self.buffers.append(Buffer(name, space, base, flat, array.itemsize, array.dtype.str))
        self.buffers.sort(key=lambda b: b.base)
        self._bases = np.array([b.base for b in self.buffers], np.int64)
        self._ends = np.array([b.base + b.nbytes for b in self.buffers], np.int64)
        self._views.clear()
        return base

    def locate(self, addr: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
        """Buffer number of each address, and whether the whole access lies inside it."""
        j = np.searchsorted(self._bases, addr, side="right") - 1
        jj = np.maximum(j, 0)
        inside = (
            (j >= 0) & (addr + size <= self._ends[jj]) if len(self._bases) else np.zeros(addr.shape, bool)
        )
        return jj, inside

    def nearest(self, addr: int) -> str:
        """Words for where a stray global address points, relative to the closest buffer."""
        if not self.buffers:
            return "no buffer is mapped"
        best = min(self.buffers, key=lambda b: min(abs(addr - b.base), abs(addr - (b.base + b.nbytes))))
        off = addr - best.base
        n = best.nbytes // best.itemsize
        if off < 0:
            return f"{-off} bytes before buffer '{best.name}' (index {off // best.itemsize}, length {n})"
        plural = "element" if n == 1 else "elements"
        return f"buffer '{best.name}' at index {off // best.itemsize}, but its length is {n} {plural} ({best.nbytes} bytes)"

    def typed(self, j: int, dtype: np.dtype) -> np.ndarray | None:
        key = (j, dtype)
        if key not in self._views:
            data = self.buffers[j].data
            self._views[key] = data.view(dtype) if data.size % dtype.itemsize == 0 else None
        return self._views[key]


def check_alignment(addr: np.ndarray, size: int) -> np.ndarray | None:
    """Lanes whose address is not a multiple of the access size (PTX requires it)."""
    if size <= 1:
        return None
    bad = (addr & (size - 1)) != 0
    return bad if bad.any() else None


def raise_misaligned(addr: int, size: int, who: str, where: str) -> None:
    raise MisalignedAccessError(
        f"{who}: a {size}-byte access at address {addr:#x} is not {size}-byte aligned "
        f"(a pointer cast from a byte offset?), {where}"
    )


def raise_out_of_bounds(message: str) -> None:
    raise OutOfBoundsError(message)
