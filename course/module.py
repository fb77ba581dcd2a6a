"""One kernel API over two backends: a real GPU through CuPy, or the course's SIMT emulator.

The call shape mirrors `cupy.RawModule` / `cupy.RawKernel`, so code written here runs
unchanged in plain CuPy. Unlike CuPy, every launch is checked first: launch limits, shared
memory, and each argument against the kernel's declared parameters (scalar widths, pointer
element types). The checks run once per argument signature; later launches with arguments
of the same kinds cost what a CuPy launch costs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import checks, compiler, params
from .arrays import EmulatorArray, backend_of, emulator_copies, is_cupy_array, is_device_array
from .backend import EMULATED, Device, device
from .emulator import Program, Trace, TraceRecorder, run_checked, run_kernel
from .emulator.ptx import source_name
from .errors import ArgumentError, LaunchError

Dim3 = tuple[int, int, int]

# Notes a plain launch on the emulator prints about a kernel a learner wrote (a Module built from
# code= or path=; the course's own files, from_file, are checked by the notebooks explicitly):
#   "hint"  (default) a barrier that part of a block never reached, which the emulator lets pass;
#           and once per kernel that uses shared memory, a pointer to .check() (a race seldom
#           shows in the emulator's answer)
#   "check" as "hint", but launches of up to CHECK_THREADS threads also run the race check and
#           name a race they find (it costs 1.5 to 15 times a plain launch: see Kernel.__call__)
#   "off"   no notes
# Set COURSE_LAUNCH_NOTES, or course.module.LAUNCH_NOTES in a notebook.
LAUNCH_NOTES = os.environ.get("COURSE_LAUNCH_NOTES", "hint")
NOTE_MODES = ("hint", "check", "off")
CHECK_THREADS = 4096


class Module:
    """CUDA C source compiled for the active backend, like `cupy.RawModule`.

    `filename` names the source in NVRTC's messages and the emulator's (default kernel.cu, or
    the file's name with `path=`).
    """

    def __init__(
        self,
        code: str | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        options: tuple[str, ...] | list[str] = (),
        name_expressions: tuple[str, ...] | list[str] = (),
        filename: str | None = None,
    ):
        if (code is None) == (path is None):
            raise TypeError("give exactly one of code= (CUDA C text) or path= (a .cu file)")
        if path is not None:
            code = Path(path).read_text()
            filename = filename or Path(path).name
        if isinstance(options, str) or isinstance(name_expressions, str):
            raise TypeError("options and name_expressions are tuples of strings, not one string")
        assert code is not None
        self.code = code
        self.options = tuple(options)
        self.name_expressions = tuple(name_expressions)
        self.compiled = compiler.compile_ptx(
            code,
            filename=filename or "kernel.cu",
            options=self.options,
            name_expressions=self.name_expressions,
        )
        self.program = Program(self.compiled.ptx, code)
        self._cupy_module: Any = None
        self.launch_notes = True  # a learner's kernel: see LAUNCH_NOTES (from_file turns it off)

    @classmethod
    def from_file(
        cls,
        name: str,
        *,
        options: tuple[str, ...] | list[str] = (),
        name_expressions: tuple[str, ...] | list[str] = (),
    ) -> Module:
        """A module from `course/kernels/<name>`."""
        module = cls(
            compiler.read_kernel(name), options=options, name_expressions=name_expressions, filename=name
        )
        module.launch_notes = False  # the notebooks check the course's kernels, bugs and all
        return module

    @property
    def kernel_names(self) -> list[str]:
        return sorted(self.program.module.entries)

    def get_function(self, name: str) -> Kernel:
        """The kernel called `name`: an extern "C" name, or a template as in name_expressions."""
        entries = self.program.module.entries
        ptx_name = self.compiled.lowered_names.get(name, name)
        if ptx_name not in entries:
            base = name.split("<")[0]
            hits = [e for e in entries if source_name(e) == base]
            if name in self.name_expressions or len(hits) != 1:
                raise KeyError(
                    f"no kernel {name!r} in this module; kernels are {sorted(entries)}"
                    + ("; templates need name_expressions=(...)" if "<" in name else "")
                )
            ptx_name = hits[0]
        return Kernel(self, name, ptx_name)

    def cupy_module(self) -> Any:
        if self._cupy_module is None:
            import cupy

            opts = tuple(o for o in self.compiled.options if not o.startswith("-arch"))
            self._cupy_module = cupy.RawModule(
                code=self.code, options=opts, name_expressions=self.name_expressions or None
            )
        return self._cupy_module


@dataclass(frozen=True)
class _Checked:
    """A launch configuration that passed validation: what a launch with the same signature reuses."""

    grid: Dim3
    block: Dim3
    shared_mem: int


class Kernel:
    """A compiled kernel, launched like `cupy.RawKernel`: `k(grid, block, args, shared_mem=...)`."""

    def __init__(self, module: Module, name: str, ptx_name: str):
        self.module = module
        self.name = name
        self.ptx_name = ptx_name
        fn = module.program.module.entries[ptx_name]
        self.params = params.read(
            module.code, name.split("<")[0], [(p.type, p.size) for p in fn.params], module.options
        )
        self.static_shared_bytes = module.program.static_shared_bytes(ptx_name)
        if not device().on_gpu:  # an instruction the emulator lacks is named here, not at a launch
            module.program.compiled(ptx_name)
        self._cupy_kernel: Any = None
        self._checked: dict[Any, _Checked] = {}
        self._noted: set[str] = set()  # the kinds of note this kernel has printed, each once

    def __repr__(self) -> str:
        return f"<Kernel {self.name}({', '.join(p.describe() for p in self.params)})>"

    def __call__(self, grid: Any, block: Any, args: Any, *, shared_mem: int = 0) -> None:
        dev = device()
        ok = self._validated(grid, block, args, shared_mem, dev)
        if dev.on_gpu:
            self._cupy()(
                ok.grid, ok.block, args if type(args) is tuple else tuple(args), shared_mem=ok.shared_mem
            )
        elif self.module.launch_notes and _notes_mode() != "off":
            self._emulate_with_notes(ok, args)
        else:
            self._emulate(ok, args)

    def _emulate_with_notes(self, ok: _Checked, args: Any) -> None:
        """A launch of a learner's kernel on the emulator, then a one-line note for what it does
        that the answer hides. The race check records a trace (on small launches, with "check");
        measured on the course's kernels, that costs 1.5x to 15x a plain launch, so by default
        a kernel with shared memory gets a pointer to .check() instead."""
        barrier: list[str] = []
        threads = int(np.prod(ok.grid)) * int(np.prod(ok.block))
        race_check = self._shares_memory() and _notes_mode() == "check" and threads <= CHECK_THREADS
        trace = self._emulate(ok, args, recorder=TraceRecorder() if race_check else None, notes=barrier)
        notes = [("barrier", n) for n in barrier]
        if trace is not None and (found := checks.races(trace)):
            f = found[0]
            notes.append((
                "race",
                f"{self.name}: a race in {f.space} memory `{f.buffer}` ({f.scope}), line"
                f"{'s' * (len(f.lines) > 1)} {' and '.join(map(str, f.lines))}: the answer may differ "
                "on a GPU; .check(...) with the same arguments says more",
            ))  # fmt: skip
        elif not race_check and self._shares_memory() and not notes:
            notes.append((
                "hint",
                f"{self.name} uses shared memory: a race (a missing or misplaced __syncthreads()) seldom "
                "shows in the emulator's answer; .check(...) with the same arguments looks for one",
            ))  # fmt: skip
        for kind, note in notes:  # each kind once per kernel: a loop of launches prints it once
            if kind not in self._noted:
                self._noted.update((kind, "hint"))  # every note points to .check()
                print(f"note: {note}")

    def _shares_memory(self) -> bool:
        """Whether the kernel uses shared memory, where a missing barrier makes a race."""
        return bool(self.module.program.shared_layout(self.ptx_name)[1])

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
        host = [EmulatorArray(a.get()) if is_cupy_array(a) else a for a in args]
        ok = self._validated(grid, block, host, shared_mem, EMULATED)
        trace = self._emulate(ok, host, recorder=TraceRecorder(blocks=blocks, spaces=spaces), budget=budget)
        for orig, h in zip(args, host):
            if is_cupy_array(orig):
                orig.set(h.ndarray)
        assert trace is not None
        return trace

    def check(
        self, grid: Any, block: Any, args: Any, *, shared_mem: int = 0, budget: int | None = None
    ) -> checks.Findings:
        """Run on the emulator (whatever the backend) and name every bug the launch shows.

        Out-of-bounds and misaligned accesses, races, reads of uninitialised memory and
        barriers that part of a block misses: see `course.checks`. The launch runs on copies
        of the arrays, so the caller's are untouched. An empty list means nothing was found.
        """
        host = emulator_copies(args) if isinstance(args, (tuple, list)) else args
        return self.inspect(grid, block, host, shared_mem=shared_mem, budget=budget)[0]

    def inspect(
        self, grid: Any, block: Any, args: Any, *, shared_mem: int = 0, budget: int | None = None
    ) -> tuple[checks.Findings, Trace]:
        """`check` and `trace` in one run on the emulator, on the arrays given (emulator arrays:
        they are written as by a launch, up to a fault). Returns the findings and the trace of
        everything that ran."""
        ok = self._validated(grid, block, args, shared_mem, EMULATED)
        initialized = {
            p.name: mask
            for p, a in zip(self.params, args)
            if isinstance(a, EmulatorArray) and a.size and (mask := a.write_mask()) is not None
        }
        masks = {
            id(a): (a, m) for a in args if isinstance(a, EmulatorArray) and (m := a.write_mask()) is not None
        }
        try:  # what this launch writes counts as written for the next one, as in _emulate
            trace, fault = run_checked(
                self.module.program, self.ptx_name, ok.grid, ok.block, self._emulator_args(args), ok.shared_mem,
                kernel_name=self.name, budget=budget, written=[(a.ndarray, m) for a, m in masks.values()],
            )  # fmt: skip
        finally:
            for a, m in masks.values():
                a.note_writes(m)
        return checks.findings(trace, fault, initialized=initialized), trace

    def _emulate(
        self,
        ok: _Checked,
        args: Any,
        *,
        recorder: TraceRecorder | None = None,
        budget: int | None = None,
        notes: list[str] | None = None,
    ) -> Trace | None:
        """One launch on the emulator, keeping track of which elements of course.empty() arrays it wrote."""
        masks = {
            id(a): (a, m) for a in args if isinstance(a, EmulatorArray) and (m := a.write_mask()) is not None
        }
        try:
            return run_kernel(
                self.module.program, self.ptx_name, ok.grid, ok.block, self._emulator_args(args), ok.shared_mem,
                kernel_name=self.name, recorder=recorder, budget=budget,
                written=[(a.ndarray, m) for a, m in masks.values()], notes=notes,
            )  # fmt: skip
        finally:
            for a, m in masks.values():
                a.note_writes(m)

    def _emulator_args(self, args: Any) -> list[tuple[str, Any]]:
        return [(p.name, a.ndarray if isinstance(a, EmulatorArray) else a) for p, a in zip(self.params, args)]

    def _cupy(self) -> Any:
        if self._cupy_kernel is None:
            mod = self.module.cupy_module()
            self._cupy_kernel = mod.get_function(
                self.name if self.name in self.module.name_expressions else self.ptx_name
            )
        return self._cupy_kernel

    # -- validation, once per signature

    def _validated(self, grid: Any, block: Any, args: Any, shared_mem: Any, dev: Device) -> _Checked:
        try:
            key: Any = (dev.backend, grid, block, shared_mem, *map(_signature, args))
            hit = self._checked.get(key)
        except TypeError:  # lists for grid or block, or args that is not a sequence: check in full
            key, hit = None, None
        if hit is None:
            hit = self.validate(grid, block, args, shared_mem, dev)
            if key is not None:
                self._checked[key] = hit
        return hit

    def validate(self, grid: Any, block: Any, args: Any, shared_mem: Any, dev: Device) -> _Checked:
        """Check a launch against the device's limits and the kernel's parameters; raise
        `LaunchError` or `TypeError` saying what is wrong and what is allowed."""
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
            raise ArgumentError(f"shared_mem must be an int number of bytes, not {type(shared_mem).__name__}")
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
        if not isinstance(args, (tuple, list)):
            raise ArgumentError(
                f"args must be a tuple of the kernel's arguments, e.g. (x, out, np.int32(n)); got {type(args).__name__}"
            )
        if len(args) != len(self.params):
            sig = ", ".join(p.describe() for p in self.params)
            raise ArgumentError(f"{self.name}({sig}) takes {len(self.params)} arguments, {len(args)} given")
        for i, (p, a) in enumerate(zip(self.params, args)):
            _validate_arg(self.name, i, p, a, dev)
        if dev.on_gpu and total > dev.shared_memory_per_block:
            self._cupy().max_dynamic_shared_size_bytes = shared_mem  # opt in, as CUDA requires
        return _Checked(grid3, block3, shared_mem)


def _notes_mode() -> str:
    if LAUNCH_NOTES not in NOTE_MODES:
        raise ValueError(
            f"course.module.LAUNCH_NOTES (or COURSE_LAUNCH_NOTES) must be one of {NOTE_MODES}, not {LAUNCH_NOTES!r}"
        )
    return LAUNCH_NOTES


_KINDS: dict[type, str] = {}  # argument type -> "array", "cupy" or "other", learned once per type


def _signature(a: Any) -> Any:
    """What about an argument decides whether it passes validation: its type, and for arrays
    the dtype and (CuPy) contiguity. Cheap: this runs on every launch."""
    t = type(a)
    kind = _KINDS.get(t)
    if kind is None:
        kind = _KINDS[t] = "cupy" if is_cupy_array(a) else "array" if t is EmulatorArray else "other"
    if kind == "other":
        return t
    if kind == "cupy":
        return (t, a.dtype, a.flags.c_contiguous)
    return (t, a.dtype)


def _dims(what: str, value: Any, limits: tuple[int, int, int]) -> Dim3:
    vals = (value,) if isinstance(value, (int, np.integer)) else value
    if not isinstance(vals, (tuple, list)) or not 1 <= len(vals) <= 3:
        raise ArgumentError(f"{what} must be an int or a tuple of 1 to 3 ints, not {value!r}")
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in vals):
        raise ArgumentError(f"{what} must hold ints, not {value!r}")
    out = tuple(int(v) for v in vals) + (1,) * (3 - len(vals))
    for axis, v, lim in zip("xyz", out, limits):
        if not 1 <= v <= lim:
            raise LaunchError(f"{what}.{axis} = {v} is outside 1..{lim}")
    return out  # type: ignore[return-value]


_FLOAT_PTX = {"f16", "f32", "f64", "bf16"}


def _validate_arg(kernel: str, i: int, p: params.Param, a: Any, dev: Device) -> None:
    where = f"{kernel}: argument {i} ({p.describe()})"
    is_array = isinstance(a, np.ndarray) or is_device_array(a)
    wants_pointer = p.is_pointer if p.is_pointer is not None else (is_array and p.size == 8)
    if wants_pointer:
        if not is_array:
            raise ArgumentError(
                f"{where} is a pointer: pass an array made with course.asarray(...), not {type(a).__name__}"
            )
        if isinstance(a, np.ndarray) or backend_of(a) != dev.backend:
            kind = (
                "a NumPy array" if isinstance(a, np.ndarray) else f"an array of the {backend_of(a)} backend"
            )
            raise ArgumentError(f"{where} is a pointer to device memory: got {kind}; use course.asarray(x)")
        if is_cupy_array(a) and not a.flags.c_contiguous:
            raise ArgumentError(
                f"{where}: the array is not C-contiguous (a kernel ignores strides); pass cupy.ascontiguousarray(x), a copy"
            )
        if not params.dtype_fits(p, a.dtype):
            assert p.dtypes is not None
            want = " or ".join(p.dtypes)
            raise ArgumentError(
                f"{where} points to {want} elements, but the array holds {a.dtype}: the kernel would read "
                f"its bytes as {want} and compute garbage. Pass x.astype(np.{p.dtypes[0]})"
                + (" (NumPy's default dtype is float64)" if a.dtype == np.float64 else "")
            )
        return
    if is_array:
        raise ArgumentError(f"{where} is a {p.size}-byte scalar, but an array was given")
    if not isinstance(a, np.generic):
        example = "np.float32(x)" if p.ptx_type in _FLOAT_PTX else f"np.int{8 * p.size}(x)"
        raise ArgumentError(
            f"{where} needs a {p.size}-byte NumPy scalar such as {example}; got Python "
            f"{type(a).__name__} (CuPy would pass it as 8 bytes and the kernel would read garbage)"
        )
    if a.dtype.itemsize != p.size:
        raise ArgumentError(f"{where} is {p.size} bytes wide; got {a.dtype} ({a.dtype.itemsize} bytes)")
    if (p.ptx_type in _FLOAT_PTX) != (a.dtype.kind == "f"):
        want = "a floating-point" if p.ptx_type in _FLOAT_PTX else "an integer"
        raise ArgumentError(f"{where} needs {want} scalar; got {a.dtype}")
