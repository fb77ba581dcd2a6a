"""One kernel API over two backends: a real GPU through CuPy, or the course's SIMT emulator.

The call shape mirrors `cupy.RawModule` / `cupy.RawKernel`, so code written here runs
unchanged in plain CuPy. Unlike CuPy, every launch is checked first: launch limits,
shared memory, and each argument against the kernel's declared parameters.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import compiler
from .emulator import Program, TraceRecorder, run_kernel
from .emulator.trace import Trace
from .errors import BackendUnavailable, LaunchError

if TYPE_CHECKING:
    from .checks import Findings

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


# ---------------------------------------------------------------- arrays


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


def _is_cupy_array(a: Any) -> bool:
    return type(a).__module__.startswith("cupy") and hasattr(a, "data") and hasattr(a, "get")


def asarray(a: Any, dtype: Any = None) -> Any:
    """`a` as an array of the active backend (a copy unless it already is one)."""
    if isinstance(a, EmulatorArray) or _is_cupy_array(a):
        a = asnumpy(a) if _backend_of(a) != device().backend else a
    if device().backend == "cupy":
        import cupy

        return cupy.asarray(a, dtype=dtype)
    if isinstance(a, EmulatorArray):
        return a if dtype is None or np.dtype(dtype) == a.dtype else EmulatorArray(a._data.astype(dtype))
    return EmulatorArray(np.array(a, dtype=dtype, order="C", copy=True))


def asnumpy(a: Any) -> np.ndarray:
    """A NumPy copy of an array of either backend (NumPy input passes through)."""
    if isinstance(a, EmulatorArray):
        return a.get()
    if _is_cupy_array(a):
        return a.get()
    return np.asarray(a)


def empty(shape: Any, dtype: Any = np.float32) -> Any:
    """An uninitialised array. On the emulator it holds garbage bytes (0xFF), as a GPU would."""
    if device().backend == "cupy":
        import cupy

        return cupy.empty(shape, dtype)
    data = np.empty(shape, dtype)
    data.view(np.uint8).fill(0xFF)
    return EmulatorArray(data, initialized=False)


def zeros(shape: Any, dtype: Any = np.float32) -> Any:
    if device().backend == "cupy":
        import cupy

        return cupy.zeros(shape, dtype)
    return EmulatorArray(np.zeros(shape, dtype))


def _backend_of(a: Any) -> str:
    return "emulator" if isinstance(a, EmulatorArray) else "cupy"


# ---------------------------------------------------------------- modules and kernels


@dataclass(frozen=True)
class ParamSpec:
    """One kernel parameter: PTX's view (type, size) and the C source's (name, type)."""

    name: str
    ptx_type: str
    size: int
    c_type: str  # "" when the source declaration could not be read
    is_pointer: bool | None  # None when unknown (a 64-bit parameter with no source info)

    def describe(self) -> str:
        return f"{self.c_type or self.ptx_type} {self.name}".strip()


class Module:
    """CUDA C source compiled for the active backend, like `cupy.RawModule`."""

    def __init__(
        self,
        code: str | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        options: tuple[str, ...] | list[str] = (),
        name_expressions: tuple[str, ...] | list[str] = (),
    ):
        if (code is None) == (path is None):
            raise TypeError("give exactly one of code= (CUDA C text) or path= (a .cu file)")
        if path is not None:
            code = Path(path).read_text()
            filename = Path(path).name
        else:
            filename = "kernel.cu"
        if isinstance(options, str) or isinstance(name_expressions, str):
            raise TypeError("options and name_expressions are tuples of strings, not one string")
        self.code: str = code  # type: ignore[assignment]
        self.options = tuple(options)
        self.name_expressions = tuple(name_expressions)
        self.compiled = compiler.compile_ptx(
            self.code, filename=filename, options=self.options, name_expressions=self.name_expressions
        )
        self.program = Program(self.compiled.ptx, self.code)
        self._cupy_module: Any = None

    @classmethod
    def from_file(
        cls,
        name: str,
        *,
        options: tuple[str, ...] | list[str] = (),
        name_expressions: tuple[str, ...] | list[str] = (),
    ) -> Module:
        """A module from `course/kernels/<name>`."""
        code = compiler.read_kernel(name)
        mod = cls.__new__(cls)
        mod.code, mod.options, mod.name_expressions = code, tuple(options), tuple(name_expressions)
        mod.compiled = compiler.compile_ptx(
            code, filename=name, options=mod.options, name_expressions=mod.name_expressions
        )
        mod.program = Program(mod.compiled.ptx, code)
        mod._cupy_module = None
        return mod

    @property
    def kernel_names(self) -> list[str]:
        return sorted(self.program.module.entries)

    def get_function(self, name: str) -> Kernel:
        """The kernel called `name`: an extern "C" name, or a template as in name_expressions."""
        return _kernel(self, name)

    def cupy_module(self) -> Any:
        if self._cupy_module is None:
            import cupy

            opts = tuple(o for o in self.compiled.options if not o.startswith("-arch"))
            self._cupy_module = cupy.RawModule(
                code=self.code, options=opts, name_expressions=self.name_expressions or None
            )
        return self._cupy_module


def _kernel(module: Module, name: str) -> Kernel:
    entries = module.program.module.entries
    ptx_name = module.compiled.lowered_names.get(name, name)
    if ptx_name not in entries:
        base = name.split("<")[0]
        hits = [e for e in entries if e == base or _demangled_base(e) == base]
        if name in module.name_expressions or len(hits) != 1:
            raise KeyError(
                f"no kernel {name!r} in this module; kernels are {sorted(entries)}"
                + ("; templates need name_expressions=(...)" if "<" in name else "")
            )
        ptx_name = hits[0]
    return Kernel(module, name, ptx_name)


def _demangled_base(mangled: str) -> str:
    m = re.match(r"_Z(\d+)", mangled)
    return mangled[len(m[0]) : len(m[0]) + int(m[1])] if m else mangled


class Kernel:
    """A compiled kernel, launched like `cupy.RawKernel`: `k(grid, block, args, shared_mem=...)`."""

    def __init__(self, module: Module, name: str, ptx_name: str):
        self.module = module
        self.name = name
        self.ptx_name = ptx_name
        self.params = _param_specs(module, name, ptx_name)
        self.static_shared_bytes = module.program.static_shared_bytes(ptx_name)
        self._cupy_kernel: Any = None

    def __repr__(self) -> str:
        return f"<Kernel {self.name}({', '.join(p.describe() for p in self.params)})>"

    def __call__(self, grid: Any, block: Any, args: Any, *, shared_mem: int = 0) -> None:
        dev = device()
        grid3, block3, shared_mem = self.validate(grid, block, args, shared_mem, dev)
        if dev.backend == "cupy":
            kern = self._cupy()
            if self.static_shared_bytes + shared_mem > dev.shared_memory_per_block:
                kern.max_dynamic_shared_size_bytes = shared_mem
            kern(grid3, block3, tuple(args), shared_mem=shared_mem)
        else:
            self._emulate(grid3, block3, args, shared_mem)

    def trace(
        self,
        grid: Any,
        block: Any,
        args: Any,
        *,
        shared_mem: int = 0,
        blocks: Any = None,
        spaces: Any = None,
        budget: int | None = None,
    ) -> Trace:
        """Run on the emulator (whatever the backend) and return what every warp did.

        The launch happens for real: output arrays are written as by `__call__`.
        `blocks` (ids, a range, or a predicate on the linear block id) and `spaces`
        (e.g. {"shared"}) limit what is recorded, to keep big launches small.
        """
        # a GPU's arrays take part through host copies, written back after the run
        host = [EmulatorArray(a.get()) if _is_cupy_array(a) else a for a in args]
        grid3, block3, shared_mem = self.validate(grid, block, host, shared_mem, EMULATED)
        recorder = TraceRecorder(blocks=blocks, spaces=spaces)
        trace = self._emulate(grid3, block3, host, shared_mem, recorder=recorder, budget=budget)
        for orig, h in zip(args, host):
            if _is_cupy_array(orig):
                orig.set(h._data)
        assert trace is not None
        return trace

    def check(
        self, grid: Any, block: Any, args: Any, *, shared_mem: int = 0, budget: int | None = None
    ) -> Findings:
        """Run on the emulator (whatever the backend) and name every bug the launch shows.

        Out-of-bounds and misaligned accesses, races, reads of uninitialised memory and
        barriers that part of a block misses: see `course.checks`. The launch runs on copies
        of the arrays, so the caller's are untouched. An empty list means nothing was found.
        """
        from .checks import check

        return check(self, grid, block, args, shared_mem=shared_mem, budget=budget)

    def _emulate(
        self,
        grid3: Any,
        block3: Any,
        args: Any,
        shared_mem: int,
        *,
        recorder: Any = None,
        budget: int | None = None,
    ) -> Trace | None:
        """One launch on the emulator, keeping track of which elements of course.empty() arrays it wrote."""
        trackers = _write_trackers(args)
        try:
            return run_kernel(
                self.module.program, self.ptx_name, grid3, block3, self._emulator_args(args), shared_mem,
                kernel_name=self.name, recorder=recorder, budget=budget,
                written=[(a._data, mask) for a, mask in trackers],
            )  # fmt: skip
        finally:
            _note_writes(trackers)

    # -- validation

    def validate(
        self, grid: Any, block: Any, args: Any, shared_mem: Any, dev: Device
    ) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
        grid3 = _dims("grid", grid, dev.max_grid_dims)
        block3 = _dims("block", block, dev.max_block_dims)
        threads = block3[0] * block3[1] * block3[2]
        if threads > dev.max_threads_per_block:
            raise LaunchError(
                f"block {block3} has {threads} threads; at most {dev.max_threads_per_block} are allowed"
            )
        for d, lim in zip(self.module.program.required_block(self.ptx_name) or (), block3):
            if d != lim:
                raise LaunchError(f"{self.name} was compiled for a block of exactly {d} threads")
        if isinstance(shared_mem, bool) or not isinstance(shared_mem, (int, np.integer)):
            raise TypeError(f"shared_mem must be an int number of bytes, not {type(shared_mem).__name__}")
        shared_mem = int(shared_mem)
        if shared_mem < 0:
            raise LaunchError(f"shared_mem must be >= 0 bytes, not {shared_mem}")
        total = self.static_shared_bytes + shared_mem
        if total > dev.shared_memory_per_block_optin:
            raise LaunchError(
                f"{self.name} needs {self.static_shared_bytes} B static + {shared_mem} B dynamic "
                f"shared memory = {total} B; a block may use at most "
                f"{dev.shared_memory_per_block_optin} B on {dev.name}"
            )
        self._check_args(args, dev)
        return grid3, block3, shared_mem

    def _check_args(self, args: Any, dev: Device) -> None:
        if not isinstance(args, (tuple, list)):
            raise TypeError(
                f"args must be a tuple of the kernel's arguments, e.g. (x, out, np.int32(n)); got {type(args).__name__}"
            )
        if len(args) != len(self.params):
            sig = ", ".join(p.describe() for p in self.params)
            raise TypeError(f"{self.name}({sig}) takes {len(self.params)} arguments, {len(args)} given")
        for i, (p, a) in enumerate(zip(self.params, args)):
            _check_arg(self.name, i, p, a, dev)

    # -- backends

    def _cupy(self) -> Any:
        if self._cupy_kernel is None:
            mod = self.module.cupy_module()
            self._cupy_kernel = mod.get_function(
                self.name if self.name in self.module.name_expressions else self.ptx_name
            )
        return self._cupy_kernel

    def _emulator_args(self, args: Any) -> list[tuple[str, Any]]:
        out = []
        for p, a in zip(self.params, args):
            if isinstance(a, EmulatorArray):
                out.append((p.name, a._data))
            elif isinstance(a, np.ndarray):
                out.append((p.name, a))
            else:
                out.append((p.name, a))
        return out


def _write_trackers(args: Any) -> list[tuple[EmulatorArray, np.ndarray]]:
    """A byte mask for each argument that course.empty() made and kernels have not filled yet."""
    out: dict[int, tuple[EmulatorArray, np.ndarray]] = {}
    for a in args:
        if isinstance(a, EmulatorArray) and a._written is not None:
            out[id(a)] = (a, np.repeat(a._written, a.itemsize))
    return list(out.values())


def _note_writes(trackers: list[tuple[EmulatorArray, np.ndarray]]) -> None:
    """After a launch: an element is initialised once all its bytes were written."""
    for a, mask in trackers:
        done = np.asarray(mask.reshape(-1, a.itemsize).all(axis=1), bool)
        a._written = None if done.all() else done


def _dims(what: str, value: Any, limits: tuple[int, int, int]) -> tuple[int, int, int]:
    vals = (value,) if isinstance(value, (int, np.integer)) else value
    if not isinstance(vals, (tuple, list)) or not 1 <= len(vals) <= 3:
        raise TypeError(f"{what} must be an int or a tuple of 1 to 3 ints, not {value!r}")
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in vals):
        raise TypeError(f"{what} must hold ints, not {value!r}")
    out = tuple(int(v) for v in vals) + (1,) * (3 - len(vals))
    for axis, v, lim in zip("xyz", out, limits):
        if not 1 <= v <= lim:
            raise LaunchError(f"{what}.{axis} = {v} is outside 1..{lim}")
    return out  # type: ignore[return-value]


_FLOAT_PTX = {"f16", "f32", "f64", "bf16"}


def _check_arg(kernel: str, i: int, p: ParamSpec, a: Any, dev: Device) -> None:
    where = f"{kernel}: argument {i} ({p.describe()})"
    is_array = isinstance(a, (EmulatorArray, np.ndarray)) or _is_cupy_array(a)
    wants_pointer = p.is_pointer if p.is_pointer is not None else (is_array and p.size == 8)
    if wants_pointer:
        if not is_array:
            raise TypeError(
                f"{where} is a pointer: pass an array made with course.asarray(...), not {type(a).__name__}"
            )
        if isinstance(a, np.ndarray) or _backend_of(a) != dev.backend:
            kind = (
                "a NumPy array" if isinstance(a, np.ndarray) else f"an array of the {_backend_of(a)} backend"
            )
            raise TypeError(f"{where} is a pointer to device memory: got {kind}; use course.asarray(x)")
        if _is_cupy_array(a) and not a.flags.c_contiguous:
            raise TypeError(
                f"{where}: the array is not C-contiguous (a kernel ignores strides); pass cupy.ascontiguousarray(x), a copy"
            )
        return
    if is_array:
        raise TypeError(f"{where} is a {p.size}-byte scalar, but an array was given")
    if not isinstance(a, np.generic):
        example = "np.float32(x)" if p.ptx_type in _FLOAT_PTX else f"np.int{8 * p.size}(x)"
        raise TypeError(
            f"{where} needs a {p.size}-byte NumPy scalar such as {example}; got Python "
            f"{type(a).__name__} (CuPy would pass it as 8 bytes and the kernel would read garbage)"
        )
    if a.dtype.itemsize != p.size:
        raise TypeError(f"{where} is {p.size} bytes wide; got {a.dtype} ({a.dtype.itemsize} bytes)")
    if (p.ptx_type in _FLOAT_PTX) != (a.dtype.kind == "f"):
        want = "a floating-point" if p.ptx_type in _FLOAT_PTX else "an integer"
        raise TypeError(f"{where} needs {want} scalar; got {a.dtype}")


def _param_specs(module: Module, name: str, ptx_name: str) -> list[ParamSpec]:
    fn = module.program.module.entries[ptx_name]
    decls = _source_params(module.code, name.split("<")[0], len(fn.params))
    out = []
    for j, p in enumerate(fn.params):
        c_type, c_name = decls[j] if decls else ("", f"param{j}")
        pointer: bool | None = ("*" in c_type or "[" in c_type) if decls else (None if p.size == 8 else False)
        out.append(ParamSpec(c_name, p.type, p.size, c_type, pointer))
    return out


def _source_params(code: str, base: str, count: int) -> list[tuple[str, str]] | None:
    """(type, name) of each parameter from the kernel's declaration in the source."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", code, flags=re.S)
    text = re.sub(r"__launch_bounds__\s*\([^)]*\)", " ", text)
    for m in re.finditer(r"__global__[^;{(]*?\b" + re.escape(base) + r"\s*\(", text):
        depth, j = 1, m.end()
        while depth and j < len(text):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        items = [s.strip() for s in _split_top(text[m.end() : j - 1])]
        items = [s for s in items if s and s != "void"]
        if len(items) != count:
            continue
        out = []
        for item in items:
            item = item.split("=")[0].strip()
            nm = re.search(r"([A-Za-z_]\w*)\s*(\[[^\]]*\])*\s*$", item)
            if not nm:
                return None
            out.append((" ".join(item[: nm.start(1)].split()) + (nm[2] or ""), nm[1]))
        return out
    return None


def _split_top(s: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for c in s:
        depth += {"<": 1, ">": -1, "(": 1, ")": -1}.get(c, 0)
        if c == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += c
    return out + [cur]
