"""Arrays in device memory: CuPy arrays on a GPU, `EmulatorArray`s on the emulator.

`asarray`, `asnumpy`, `empty` and `zeros` work on the active backend, as CuPy's do. Neither
kind turns into a NumPy array by accident: a kernel argument must be device memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .backend import device, on_gpu


class EmulatorArray:
    """An array in the emulator's 'device memory': a C-contiguous NumPy array underneath.

    Like a CuPy array it does not turn into a NumPy array implicitly: use
    `course.asnumpy(a)` or `a.get()`.
    """

    __array_priority__ = 100

    def __init__(self, data: np.ndarray, *, initialized: bool = True):
        self._data = np.ascontiguousarray(data)
        # per element (flat): written since course.empty()? None once all are; the checker reads it
        self._written: np.ndarray | None = None
        self.initialized = initialized

    @property
    def initialized(self) -> bool:
        """Whether every element holds a value (False for course.empty() until kernels wrote it all)."""
        return self._written is None

    @initialized.setter
    def initialized(self, value: bool) -> None:
        self._written = None if value else np.zeros(self._data.size, bool)

    def initialized_elements(self) -> np.ndarray:
        """Per element (flat, C order): whether it was ever written since course.empty()."""
        return np.ones(self._data.size, bool) if self._written is None else self._written.copy()

    @property
    def ndarray(self) -> np.ndarray:
        """The NumPy array the emulator reads and writes (no copy)."""
        return self._data

    def write_mask(self) -> np.ndarray | None:
        """A byte mask of what holds a value, for a launch to mark what it writes (None: all does)."""
        return None if self._written is None else np.repeat(self._written, self.itemsize)

    def note_writes(self, mask: np.ndarray) -> None:
        """After a launch: an element is initialised once all its bytes were written."""
        done = np.asarray(mask.reshape(-1, self.itemsize).all(axis=1), bool)
        self._written = None if done.all() else done

    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    size = property(lambda self: self._data.size)
    nbytes = property(lambda self: self._data.nbytes)
    ndim = property(lambda self: self._data.ndim)
    itemsize = property(lambda self: self._data.itemsize)

    def __len__(self) -> int:
        return len(self._data)

    def get(self) -> np.ndarray:
        return self._data.copy()

    def copy(self) -> EmulatorArray:
        out = EmulatorArray(self._data.copy())
        out._written = None if self._written is None else self._written.copy()
        return out

    def fill(self, value: Any) -> None:
        self._data.fill(value)
        self.initialized = True

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError(
            "an emulator array does not convert to NumPy implicitly (nor does a CuPy array); "
            "use course.asnumpy(a)"
        )

    def __repr__(self) -> str:
        return f"EmulatorArray({np.array2string(self._data, threshold=20)}, dtype={self.dtype})"


def is_cupy_array(a: Any) -> bool:
    return type(a).__module__.startswith("cupy") and hasattr(a, "data") and hasattr(a, "get")


def is_device_array(a: Any) -> bool:
    """An array of either backend (not NumPy)."""
    return isinstance(a, EmulatorArray) or is_cupy_array(a)


def backend_of(a: Any) -> str:
    """ "emulator" or "cupy": which backend a device array belongs to."""
    return "emulator" if isinstance(a, EmulatorArray) else "cupy"


def misalignment(a: Any, boundary: int) -> int:
    """How far a device array's first element is past a `boundary`-byte boundary (0: aligned).
    An emulator array is a buffer of its own, which starts aligned."""
    return int(a.data.ptr) % boundary if is_cupy_array(a) else 0


def asarray(a: Any, dtype: Any = None) -> Any:
    """`a` as an array of the active backend (a copy unless it already is one)."""
    if is_device_array(a):
        a = asnumpy(a) if backend_of(a) != device().backend else a
    if on_gpu():
        import cupy

        return cupy.asarray(a, dtype=dtype)
    if isinstance(a, EmulatorArray):
        return a if dtype is None or np.dtype(dtype) == a.dtype else EmulatorArray(a._data.astype(dtype))
    return EmulatorArray(np.array(a, dtype=dtype, order="C", copy=True))


def asnumpy(a: Any) -> np.ndarray:
    """A NumPy copy of an array of either backend (NumPy input passes through)."""
    if is_device_array(a):
        return a.get()
    return np.asarray(a)


def empty(shape: Any, dtype: Any = np.float32) -> Any:
    """An uninitialised array. On the emulator it holds garbage bytes (0xFF), as a GPU would."""
    if on_gpu():
        import cupy

        return cupy.empty(shape, dtype)
    data = np.empty(shape, dtype)
    data.view(np.uint8).fill(0xFF)
    return EmulatorArray(data, initialized=False)


def zeros(shape: Any, dtype: Any = np.float32) -> Any:
    if on_gpu():
        import cupy

        return cupy.zeros(shape, dtype)
    return EmulatorArray(np.zeros(shape, dtype))


def emulator_copies(args: Any) -> list[Any]:
    """The arguments with every device array replaced by an emulator copy (a GPU's through the
    host); an array passed twice stays one array (in-place kernels). Other arguments pass as they are."""
    copies: dict[int, EmulatorArray] = {}
    out = []
    for a in args:
        if is_device_array(a):
            if id(a) not in copies:
                copies[id(a)] = a.copy() if isinstance(a, EmulatorArray) else EmulatorArray(a.get())
            a = copies[id(a)]
        out.append(a)
    return out
