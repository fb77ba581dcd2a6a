"""The contract between the instructions (`ops`) and the two things they are built by and run on.

An instruction is built once, at link time, by a `Builder` (the linker, `link.Linker`), which
resolves register, symbol, label and parameter names. Building returns an `Op` whose `run(m, idx)`
is called by the SIMT machine (`machine.Machine`) every time a group of lanes executes it: `m` is
the `Machine` below, `idx` the `LaneSet` of the lanes that run it. Everything an instruction may do
to the machine is listed in `Machine`; mypy checks both sides against these protocols.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from ..ptx import Instr

# Which lanes of the wave an instruction runs on: None (every thread of the wave), a slice (one run
# of consecutive threads: registers are read as views) or a sorted array of thread numbers.
LaneSet = slice | np.ndarray | None

# One memory access split by space and buffer: (which of the lanes, or None for all of them;
# the typed array they address; each lane's element index in it).
Piece = tuple[Any, np.ndarray, np.ndarray]


class Machine(Protocol):
    """What an instruction may read and change in the SIMT machine while it runs."""

    registers: dict[str, np.ndarray]  # register name -> one value per thread of the wave
    steps: int  # scheduler steps so far (what %clock reads)

    def count(self, idx: LaneSet) -> int:
        """How many lanes idx names."""

    def threads(self, idx: LaneSet) -> np.ndarray:
        """The thread numbers (in the wave) idx names; lane = thread & 31, warp = thread >> 5."""

    # memory (bounds, alignment, the trace and `course.empty`'s written bytes are the machine's job)
    def load(
        self, instr: Instr, space: str, addr: np.ndarray, idx: LaneSet, dt: np.dtype, n: int
    ) -> np.ndarray:
        """Each lane's n values of type dt at addr (shape (lanes,) or (lanes, n))."""

    def store(
        self, instr: Instr, space: str, addr: np.ndarray, idx: LaneSet, vals: np.ndarray, dt: np.dtype, n: int
    ) -> None:
        """Write each lane's n values of type dt at addr."""

    def access(
        self, instr: Instr, space: str, addr: np.ndarray, idx: LaneSet, dt: np.dtype, n: int, op: str
    ) -> list[Piece]:
        """Checked and recorded access to addr, split by buffer, for an instruction that reads and
        writes memory itself (the atomics)."""

    def param_scalar(self, name: str, off: int, dt: np.dtype) -> Any:
        """A kernel parameter's value (the same for every thread)."""

    def param_read(self, key: str, off: int, dt: np.dtype, idx: LaneSet) -> np.ndarray:
        """A device-function call's .param bytes, per lane."""

    def param_write(self, key: str, off: int, dt: np.dtype, idx: LaneSet, value: Any) -> None:
        """Write a device-function call's .param bytes, per lane."""

    # warp collectives and barriers
    def check_converged(self, instr: Instr, idx: LaneSet, masks: Any) -> None:
        """Before a *_sync collective: the lanes each member mask names must be here; if some are on
        their way, the lanes here wait (the collective runs later, nothing happens now)."""

    def arrive(self, instr: Instr, idx: LaneSet, red: Any) -> None:
        """The lanes reach a bar.sync: they wait until their whole block has arrived."""

    # calls
    def enter_call(self, site: int, idx: LaneSet, params: list[tuple[str, str]]) -> None:
        """Call a device function: pass its .params (caller key, callee key) and push the return."""

    def external_call(self, name: str, keys: list[str], idx: LaneSet, instr: Instr) -> None:
        """vprintf or __assertfail, the runtime functions CUDA C calls."""

    # the trace and messages
    def record_sync(self, instr: Instr, idx: LaneSet, op: str) -> None:
        """Record a barrier, fence, vote or exit of these lanes in the trace."""

    def record_lanes(
        self, instr: Instr, idx: LaneSet, space: str, op: str, values: np.ndarray, size: int
    ) -> None:
        """Record a per-lane value (the source lane of a shuffle) in the trace."""

    def who_first(self, idx: LaneSet) -> str:
        """'kernel: block (b) thread (t)' of the first lane, for messages."""

    def where(self, instr: Instr) -> str:
        """'at line 12 of reduce.cu: `...`', for messages."""


Run = Callable[[Machine, LaneSet], None]


class Op:
    """A built instruction: `run(m, idx)` plus how it moves the program counter (`kind`)."""

    __slots__ = ("guard", "instr", "kind", "run", "target")

    def __init__(self, instr: Instr, run: Run, kind: str = "normal", target: int = -1):
        self.instr = instr
        self.run = run
        self.kind = kind  # normal, branch, exit, ret, call, bar
        self.target = target  # the pc a branch or call goes to
        self.guard: tuple[str, bool] | None = None  # the predicate register, resolved; negated?


class Names(Protocol):
    """What reading and writing an operand needs: a register's resolved name and storage type."""

    def reg(self, name: str) -> str:
        """The register's name as the machine stores it (callees' registers are prefixed)."""

    def storage(self, name: str) -> np.dtype:
        """The type a resolved register is stored as (b32 -> uint32, pred -> bool, ...)."""


class Builder(Names, Protocol):
    """What building an instruction may ask the linker."""

    is_entry: bool  # building the kernel itself, not a device function it calls

    def symbol_address(self, name: str) -> int:
        """The address of a shared, local or module-scope variable."""

    def label(self, name: str) -> int:
        """The pc of a label in the function being built."""

    def is_kernel_param(self, name: str) -> bool:
        """Whether name is one of the kernel's own parameters."""

    def param_var(self, name: str) -> str:
        """The key of a per-thread .param variable (device-function calls)."""

    def build_call(self, instr: Instr) -> Op:
        """A call instruction, built by the linker (it knows the callee)."""
