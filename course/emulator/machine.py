"""The SIMT machine: warps of 32 lanes, scheduled fairly, executed in NumPy batches.

Each scheduler step, every warp with a runnable lane executes one instruction: the
lanes at the warp's lowest program counter (that is how diverged lanes reconverge).
Warps sitting at the same instruction run as one NumPy operation — the speed of the
emulator. Blocks run in waves of at most `WAVE_THREADS` threads, in block order, so a
block may wait on a flag set by an earlier block (chained scans) and still finish.
"""

from __future__ import annotations

import contextlib
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import (
    BarrierError,
    CourseError,
    EmulatorDefect,
    InstructionBudgetExceeded,
    KernelFault,
    UnsupportedInstruction,
)
from . import ops
from .memory import (
    LOCAL_WINDOW,
    SHARED_WINDOW,
    WINDOW_SIZE,
    Memory,
    Region,
    check_alignment,
    raise_misaligned,
    raise_out_of_bounds,
)
from .names import display
from .ptx import TYPE_SIZES, Function, Instr, PtxModule, Variable, parse, source_name
from .trace import LANES, BufferInfo, Trace, TraceRecorder, id_ranges

# WAIT: a lane at a *_sync warp collective whose member mask names lanes still on their way there;
# as on Volta and later, it waits for them (PTX: "until all non-exited threads in membermask have
# executed" it), and the collective runs once they have all arrived
RUN, BAR, EXIT, WAIT = 0, 1, 2, 3
WAVE_THREADS = 1 << 17
NO_PC = np.iinfo(np.int64).max  # where a lane that is not running is scheduled: never
DEFAULT_BUDGET = 2_000_000  # scheduler steps; a step runs one instruction of every runnable warp
MODULE_VARS_BASE = 0x6000_0000_0000
MAX_CALL_DEPTH = 32


# A group of lanes the scheduler runs as one: its pc, its lanes (None: every thread of the wave),
# how many warps issue it, and its ceiling: the lowest pc of a running lane of its warps left out of
# it (NO_PC if none; -1 while lanes wait at a collective). While the group moves as one to a pc
# below its ceiling, it stays its warps' lowest-pc lanes: the next step needs no schedule.
Group = tuple[int, Any, int, int]

# thread-instructions a launch may run: about ten seconds of emulation, so a launch far too big
# for the emulator (or a runaway grid-stride loop) stops with an error instead of hanging
DEFAULT_WORK = 500_000_000


def _run_of(idx: np.ndarray) -> Any:
    """Sorted lanes as a slice where they are one run of threads: a slice reads registers as views
    and writes them without an index array (divergent blocks are such runs), else the array."""
    n = len(idx)
    if n and int(idx[-1]) - int(idx[0]) + 1 == n:
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


def _array_of(idx: Any) -> np.ndarray:
    return np.arange(idx.start, idx.stop) if isinstance(idx, slice) else idx


def _regroup(groups: list[Group], moved: list[Any]) -> list[Group]:
    """The next step's groups when every group moved as one to a known pc below its ceiling: by pc,
    in pc order, groups that meet at one pc merged (as the schedule would find them)."""
    if len(set(moved)) == len(moved):  # no two meet: the same groups, in pc order
        out = [(pc, g[1], g[2], g[3]) for pc, g in zip(moved, groups)]
        return out if moved == sorted(moved) else sorted(out, key=lambda g: g[0])
    at: dict[int, list[Group]] = {}
    for g, pc in zip(groups, moved):
        at.setdefault(pc, []).append(g)
    out = []
    for pc in sorted(at):
        parts = at[pc]
        idx = (
            parts[0][1]
            if len(parts) == 1
            else _run_of(np.sort(np.concatenate([_array_of(g[1]) for g in parts])))
        )
        out.append((pc, idx, sum(g[2] for g in parts), min(g[3] for g in parts)))
    return out


class _Regroup(Exception):
    """A warp collective parked or released waiting lanes: the scheduler regroups the lanes."""


def set_budget(steps: int | None = None, *, work: int | None = None) -> None:
    """Change the default budgets: scheduler steps per launch, and thread-instructions per launch."""
    global DEFAULT_BUDGET, DEFAULT_WORK
    for name, value in (("steps", steps), ("work", work)):
        if value is not None and value < 1:
            raise ValueError(f"the {name} budget must be positive, not {value}")
    DEFAULT_BUDGET = int(steps) if steps is not None else DEFAULT_BUDGET
    DEFAULT_WORK = int(work) if work is not None else DEFAULT_WORK


@contextlib.contextmanager
def budget(steps: int | None = None, *, work: int | None = None) -> Iterator[None]:
    """The default budgets changed for a block of code (every launch in it that names none), then
    restored: `with budget(steps=200_000): ...`."""
    global DEFAULT_BUDGET, DEFAULT_WORK
    saved = DEFAULT_BUDGET, DEFAULT_WORK
    set_budget(steps, work=work)
    try:
        yield
    finally:
        DEFAULT_BUDGET, DEFAULT_WORK = saved


def _storage(t: str) -> np.dtype:
    if t == "pred":
        return np.dtype(np.bool_)
    return np.dtype(ops.UINT[max(TYPE_SIZES.get(t, 4), 1)])


@dataclass
class Fault:
    """What the KernelFault being raised is about, as data: the bug checker turns it into a finding."""

    kind: str  # out-of-bounds, misaligned, barrier (a block's threads at different bar.sync), collective
    pc: int  # the instruction (-1 for a barrier: see the threads' bar_pc)
    threads: np.ndarray  # machine thread ids at fault (barrier: every thread of the block)
    addr: np.ndarray | None = None  # their addresses (collective: the mask's lanes that are elsewhere)
    space: str = ""
    op: str = ""
    size: int = 0


@dataclass
class SharedVar:
    name: str
    offset: int
    size: int


@dataclass
class Compiled:
    """One entry and the functions it calls, built into closures once."""

    name: str
    code: list[ops.Op]
    storage: dict[str, np.dtype]
    shared: list[SharedVar]
    static_shared: int
    dynamic_offset: int
    dynamic_names: frozenset[str]
    local_size: int
    param_vars: dict[str, int]  # per-thread .param storage (calls): key -> bytes
    ret_maps: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    has_calls: bool = False
    # recursive callees: the registers and local bytes a call saves, by call site
    frames: dict[int, tuple[list[str], tuple[int, int]]] = field(default_factory=dict)
    # the module-scope variables the entry and its callees name (the only ones it can reach)
    module_symbols: frozenset[str] | None = None


class Program:
    """A parsed PTX module, with its module-scope variables living across launches."""

    def __init__(self, ptx: str, source: str = ""):
        self.ptx = ptx
        self.source = source
        try:
            self.module: PtxModule = parse(ptx)
        except CourseError:
            raise
        except Exception as exc:
            raise defect(exc, "parsing the PTX of this module") from exc
        self._compiled: dict[str, Compiled] = {}
        self.module_vars: dict[str, tuple[int, np.ndarray, Variable]] = {}
        base = MODULE_VARS_BASE
        for v in self.module.variables:
            if v.space in ("global", "const"):
                data = np.zeros(max(v.size, 1), np.uint8)
                if v.init is not None:
                    data[: len(v.init)] = np.frombuffer(v.init, np.uint8)
                self.module_vars[v.name] = (base, data, v)
                base += -(-max(v.size, 1) // 512) * 512 + 512

    def entry(self, name: str) -> Function:
        try:
            return self.module.entries[name]
        except KeyError:
            raise KeyError(f"no kernel {name!r}; this module has {sorted(self.module.entries)}") from None

    def static_shared_bytes(self, name: str) -> int:
        return self.compiled(name).static_shared

    def required_block(self, name: str) -> list[int] | None:
        return self.entry(name).directives.get("reqntid")

    def compiled(self, name: str) -> Compiled:
        if name not in self._compiled:
            builder = _Builder(self, self.entry(name))
            try:
                self._compiled[name] = builder.build()
            except UnsupportedInstruction as exc:
                ins = builder.current
                if ins is None:
                    raise
                raise UnsupportedInstruction(f"{exc} {self.where(ins)}") from None
            except CourseError:
                raise
            except Exception as exc:
                raise defect(exc, f"building kernel {name}", builder.current, self) from exc
        return self._compiled[name]

    def where(self, instr: Instr) -> str:
        """'line 12 of reduce.cu: `sdata[tid] += ...`' for messages."""
        files = self.module.files
        fname = files.get(instr.cu_file, "the kernel").split("/")[-1]
        lines = self.source.splitlines()
        if instr.cu_file == self.module.main_file and 1 <= instr.line <= len(lines):
            return f"at line {instr.line} of {fname}: `{lines[instr.line - 1].strip()}`"
        inside = f"line {instr.cu_line} of {fname} (PTX: {instr.text})"
        if 1 <= instr.line <= len(lines):  # code inlined from a header: name the call too
            return f"at line {instr.line}: `{lines[instr.line - 1].strip()}`, in {inside}"
        return f"at {inside}"


class _Builder:
    """Lays out memory symbols and turns instructions into closures (the `ctx` of ops.py)."""

    def __init__(self, program: Program, entry: Function):
        self.program = program
        self.entry = entry
        self.recursive: set[str] = set()
        self.functions = self._reachable(entry)
        self.reg_types: dict[str, np.dtype] = {}
        self.shared: list[SharedVar] = []
        self.aliases: dict[str, int] = {}
        self.local: dict[str, int] = {}
        self.param_vars: dict[str, int] = {}
        self.starts: dict[str, int] = {}
        self.ret_maps: dict[int, list[tuple[str, str]]] = {}
        self.frames: dict[int, tuple[list[str], tuple[int, int]]] = {}
        self.local_spans: dict[str, tuple[int, int]] = {}
        self.fn: Function = entry
        self.prefix = ""
        self.is_entry = True
        self.index = 0
        self.current: Instr | None = None  # the instruction being built (for error messages)

    def _reachable(self, entry: Function) -> list[Function]:
        seen: list[Function] = [entry]
        stack: list[tuple[Function, tuple[str, ...]]] = [(entry, (entry.name,))]
        while stack:
            fn, path = stack.pop()
            for ins in fn.instrs:
                if ins.parts[0] != "call":
                    continue
                callee = _callee(ins)
                if callee in path:  # recursion: its calls save and restore the callee's registers
                    self.recursive.add(callee)
                    continue
                target = self.program.module.functions.get(callee)
                if target is not None:
                    if target not in seen:
                        seen.append(target)
                    stack.append((target, path + (callee,)))
        return seen

    def _referenced(self) -> set[str]:
        """Symbols the entry and its callees name (module-scope shared arrays are shared by all
        entries of a module; a kernel owns only those it uses)."""
        names = set()
        for fn in self.functions:
            for ins in fn.instrs:
                for op in ins.operands:
                    if op[0] == "sym" or (op[0] == "addr" and op[1] and not op[1].startswith("%")):
                        names.add(op[1])
        return names

    def build(self) -> Compiled:
        offset = 0
        used = self._referenced()
        module_shared = [v for v in self.program.module.variables if v.space == "shared" and v.name in used]
        shared_decls = [v for v in module_shared if not v.extern]
        for fn in self.functions:
            shared_decls += [v for v in fn.variables if v.space == "shared"]
        for v in shared_decls:
            offset = -(-offset // v.align) * v.align
            self.shared.append(SharedVar(v.name, offset, v.size))
            offset += v.size
        static = offset
        dyn_off = -(-static // 16) * 16
        dynamic = [v.name for v in module_shared if v.extern]
        for name in dynamic:  # every `extern __shared__` array starts where static shared memory ends
            self.aliases[name] = dyn_off
        if dynamic:  # NVRTC names a second `extern __shared__ sdata[]` sdata$1: one buffer, one name
            self.shared.append(SharedVar(dynamic[0].split("$")[0], dyn_off, 0))
        local = 0
        for fn in self.functions:
            pre = "" if fn is self.entry else fn.name + "::"
            first = local
            for v in fn.variables:
                if v.space == "local":
                    local = -(-local // max(v.align, 1)) * max(v.align, 1)
                    self.local[pre + v.name] = local
                    local += v.size
                elif v.space == "param":  # call sequences reuse names with other sizes: keep the largest
                    self.param_vars[pre + v.name] = max(v.size, 8, self.param_vars.get(pre + v.name, 0))
            if fn is not self.entry:
                for p in fn.params + fn.returns:
                    self.param_vars[pre + p.name] = max(p.size, 8)
            self.local_spans[fn.name] = (first, local)
            for r, t in fn.regs.items():
                self.reg_types[pre + r] = _storage(t)
            if any(i.parts[0] in ("addc", "subc", "madc") or "cc" in i.parts for i in fn.instrs):
                self.reg_types["%cc"] = np.dtype(np.bool_)  # the carry flag
        pos = 0
        for fn in self.functions:
            self.starts[fn.name] = pos
            pos += len(fn.instrs)
        code: list[ops.Op] = []
        for fn in self.functions:
            self.fn, self.is_entry = fn, fn is self.entry
            self.prefix = "" if self.is_entry else fn.name + "::"
            for ins in fn.instrs:
                self.index = len(code)
                self.current = ins
                op = ops.build(ins, self)
                if ins.parts[0] in ("membar", "fence"):  # recorded: the bug checker orders blocks by them
                    op.run = _record_fence(ins)
                code.append(op)
        return Compiled(
            name=self.entry.name, code=code, storage=self.reg_types, shared=self.shared,
            static_shared=static, dynamic_offset=dyn_off, dynamic_names=frozenset(dynamic[:1] and [dynamic[0].split("$")[0]]),
            local_size=local, param_vars=self.param_vars, ret_maps=self.ret_maps, frames=self.frames,
            has_calls=len(self.functions) > 1 or any(i.parts[0] == "call" for i in self.entry.instrs),
            module_symbols=frozenset(used & set(self.program.module_vars)),
        )  # fmt: skip

    # -- the ctx interface used by ops.build

    def reg(self, name: str) -> str:
        if name in SPECIAL or name in ops.CLOCKS or name in ("_", "%cc"):
            return name
        if name not in self.fn.regs:
            raise UnsupportedInstruction(f"register {name} is used in {self.fn.name} but not declared")
        return self.prefix + name

    def storage(self, name: str) -> np.dtype:
        if name == "%cc":
            return np.dtype(np.bool_)
        return np.dtype(np.uint32) if name in SPECIAL else self.reg_types[name]

    def symbol_address(self, name: str) -> int:
        if name in self.aliases:
            return self.aliases[name]
        for s in self.shared:
            if s.name == name:
                return s.offset
        if self.prefix + name in self.local:
            return self.local[self.prefix + name]
        if name in self.program.module_vars:
            return self.program.module_vars[name][0]
        raise UnsupportedInstruction(f"unknown symbol {name!r} in {self.fn.name}")

    def label(self, name: str) -> int:
        if name not in self.fn.labels:
            raise UnsupportedInstruction(f"unknown label {name!r} in {self.fn.name}")
        return self.starts[self.fn.name] + self.fn.labels[name]

    def is_kernel_param(self, name: str) -> bool:
        return self.is_entry and any(p.name == name for p in self.entry.params)

    def param_var(self, name: str) -> str:
        key = self.prefix + name
        if key not in self.param_vars:
            raise UnsupportedInstruction(f"unknown .param {name!r} in {self.fn.name}")
        return key

    def build_call(self, instr: Instr) -> ops.Op:
        return _build_call(self, instr)


SPECIAL = {
    f"%{r}.{a}" for r in ("tid", "ntid", "ctaid", "nctaid") for a in "xyz"
} | {
    "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%gridid", "%lanemask_eq", "%lanemask_le",
    "%lanemask_lt", "%lanemask_ge", "%lanemask_gt", "%dynamic_smem_size", "%total_smem_size",
}  # fmt: skip


def _record_fence(instr: Instr) -> ops.Run:
    """A fence changes nothing here (every access completes in order); the trace records it."""
    return lambda m, idx: m.record_sync(instr, idx, "fence")


def _callee(instr: Instr) -> str:
    for op in instr.operands:
        if op[0] == "sym":
            return op[1]
    raise UnsupportedInstruction(f"cannot find the callee of {instr.text}")


def _build_call(ctx: _Builder, instr: Instr) -> ops.Op:
    callee = _callee(instr)
    pos = next(k for k, op in enumerate(instr.operands) if op[0] == "sym" and op[1] == callee)
    rets = instr.operands[pos - 1][1] if pos > 0 else []
    args = instr.operands[pos + 1][1] if pos + 1 < len(instr.operands) else []
    arg_keys = [ctx.param_var(a[1]) for a in args]
    if callee in ("vprintf", "__assertfail"):
        return ops.Op(instr, lambda m, idx: m.external_call(callee, arg_keys, idx, instr))
    fn = ctx.program.module.functions.get(callee)
    if fn is None:
        raise UnsupportedInstruction(f"call to the external function {callee!r} is not supported")
    pairs = [(a, callee + "::" + p.name) for a, p in zip(arg_keys, fn.params)]
    ctx.ret_maps[ctx.index] = [
        (callee + "::" + p.name, ctx.param_var(r[1])) for r, p in zip(rets, fn.returns)
    ]
    site = ctx.index
    if callee in ctx.recursive:
        ctx.frames[site] = ([callee + "::" + r for r in fn.regs], ctx.local_spans[callee])

    def call(m: Any, idx: Any) -> None:
        if site in m.k.frames:
            m.save_frame(site, idx)
        for src, dst in pairs:
            m._copy_param(src, dst, m.threads(idx))
        m.push_call(idx, site)

    return ops.Op(instr, call, "call", ctx.starts[callee])


# ---------------------------------------------------------------- the machine


def run_kernel(
    program: Program,
    entry: str,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    args: list[tuple[str, Any]],
    shared_mem: int = 0,
    *,
    kernel_name: str | None = None,
    recorder: TraceRecorder | None = None,
    budget: int | None = None,
    written: list[tuple[np.ndarray, np.ndarray]] | None = None,
    notes: list[str] | None = None,
) -> Trace | None:
    """Run one launch. Arrays in `args` are written in place. Returns a Trace if recording.

    `written`: (array, byte mask) pairs; every byte of the array a thread stores to (or updates
    atomically) is set True in its mask (how `course.empty` arrays learn what is initialised).
    `notes`: a list that gets what the launch did that a GPU may not (see Machine.notes).
    """
    m = Machine(
        program, entry, grid, block, args, shared_mem, kernel_name or entry, recorder, budget, written=written
    )
    with np.errstate(all="ignore"):
        m.run()
    if notes is not None:
        notes += m.notes()
    return m.trace() if recorder is not None else None


def defect(exc: BaseException, doing: str, instr: Instr | None = None, program: Program | None = None,
           kernel: str = "") -> EmulatorDefect:  # fmt: skip
    """An internal error turned into words a learner can act on: which kernel and instruction, that
    the emulator is at fault, and how to run the same kernel on a GPU instead."""
    where = ""
    if instr is not None:
        where = f" at PTX line {instr.ptx_line} (`{instr.text}`)"
        if program is not None:
            where += f", {program.where(instr)}"
    who = f" kernel {kernel}" if kernel else ""
    return EmulatorDefect(
        f"the course's emulator failed while {doing}{who}{where}: {type(exc).__name__}: {exc}. "
        "This is a defect of the emulator, not of your kernel; please report it with the kernel's "
        "source. To run the same kernel on a GPU instead: course.set_backend('cupy') (or set "
        "COURSE_BACKEND=cupy) on a machine with CUDA and CuPy."
    )


class Machine:
    def __init__(
        self,
        program: Program,
        entry: str,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: list[tuple[str, Any]],
        shared_mem: int,
        kernel_name: str,
        recorder: TraceRecorder | None,
        budget: int | None,
        *,
        written: list[tuple[np.ndarray, np.ndarray]] | None = None,
    ):
        self.program = program
        self.fn = program.entry(entry)
        self.k = program.compiled(entry)
        self.name = kernel_name
        self.grid, self.block = grid, block
        self.shared_mem = shared_mem
        self.recorder = recorder
        self.budget = budget or DEFAULT_BUDGET
        self.steps = 0
        self.work = 0  # thread-instructions executed
        self.issued = 0  # warp-instructions issued: what the SMs' schedulers spend their cycles on
        self.mem = Memory()
        self.params: dict[str, bytes] = {}
        self.param_names: dict[str, str] = {}
        self._map_args(args)
        for name, (base, data, var) in program.module_vars.items():
            if self.k.module_symbols is None or name in self.k.module_symbols:
                self.mem.add_buffer(name, data, var.space, base=base)
        self.n_global = len(self.mem.buffers)
        self.tpb = block[0] * block[1] * block[2]
        self.tpb_pad = -(-self.tpb // LANES) * LANES
        self.warps_per_block = self.tpb_pad // LANES
        self.nblocks = grid[0] * grid[1] * grid[2]
        self.shared_used = (
            self.k.dynamic_offset + shared_mem if self.k.dynamic_names else self.k.static_shared
        )
        self.shared_offsets = np.array([s.offset for s in self.k.shared], np.int64)
        self.shared_sizes = [shared_mem if s.name in self.k.dynamic_names else s.size for s in self.k.shared]
        self.shared_itemsize: dict[int, int] = {}
        self.fault: Fault | None = None  # what the KernelFault being raised is about (for the checker)
        # the first barrier that let a block through while some of its threads had exited:
        # (wave slot, pc, threads there, threads exited), and how many blocks did so in all
        self.partial_barrier: tuple[int, int, np.ndarray, np.ndarray] | None = None
        self.partial_barrier_block = (0, 0, 0)
        self.partial_blocks = 0
        self.written = {self.mem.add_buffer("", a): mask for a, mask in written or ()}  # base -> byte mask

    def _map_args(self, args: list[tuple[str, Any]]) -> None:
        for (cname, value), p in zip(args, self.fn.params):
            if isinstance(value, np.ndarray):
                base = self.mem.add_buffer(cname, value)
                raw = np.uint64(base).tobytes()
            else:
                raw = np.asarray(value).tobytes()
            self.params[p.name] = raw.ljust(max(p.size, 8), b"\0")
            self.param_names[p.name] = cname

    # -- running

    def run(self) -> None:
        try:
            per_wave = max(1, WAVE_THREADS // self.tpb_pad)
            for first in range(0, self.nblocks, per_wave):
                self._start_wave(np.arange(first, min(first + per_wave, self.nblocks)))
                self._run_wave()
        except CourseError:
            raise
        except Exception as exc:
            pc = getattr(self, "cur_pc", None)
            ins = self.k.code[pc].instr if pc is not None and 0 <= pc < len(self.k.code) else None
            raise defect(exc, "running", ins, self.program, self.name) from exc

    def _start_wave(self, blocks: np.ndarray) -> None:
        self.block_ids = blocks
        nb = len(blocks)
        self.T = T = nb * self.tpb_pad
        self.W = T // LANES
        t = self.all_threads = np.arange(T, dtype=np.int64)
        self.slot = t // self.tpb_pad
        ltid = t % self.tpb_pad
        valid = ltid < self.tpb
        self.pc = np.zeros(T, np.int64)
        self.state = np.where(valid, RUN, EXIT).astype(np.int8)
        self.bar_pc = np.full(T, -1, np.int64)
        self.bar_pred = np.zeros(T, np.bool_)
        self.epoch = np.zeros(nb, np.int32)
        self.depth = np.zeros(T, np.int64)
        self.stack = np.zeros((T, MAX_CALL_DEPTH), np.int64) if self.k.has_calls else None
        self.saved: dict[str, np.ndarray] = {}  # frames of recursive calls
        self.R = {name: np.zeros(T, dt) for name, dt in self.k.storage.items()}
        bx, by, _ = self.block
        gx, gy, _ = self.grid
        b = blocks[self.slot]
        lane = (ltid & 31).astype(np.uint32)
        specials = {
            "%tid.x": ltid % bx, "%tid.y": (ltid // bx) % by, "%tid.z": ltid // (bx * by),
            "%ntid.x": bx, "%ntid.y": by, "%ntid.z": self.block[2],
            "%ctaid.x": b % gx, "%ctaid.y": (b // gx) % gy, "%ctaid.z": b // (gx * gy),
            "%nctaid.x": gx, "%nctaid.y": gy, "%nctaid.z": self.grid[2],
            "%laneid": lane, "%warpid": ltid >> 5, "%nwarpid": self.warps_per_block,
            "%smid": b % 132, "%nsmid": 132, "%gridid": 0,
            "%lanemask_eq": np.left_shift(1, lane), "%lanemask_lt": np.left_shift(1, lane) - 1,
            "%lanemask_le": np.left_shift(2, lane.astype(np.uint64)) - 1,
            "%lanemask_gt": ~(np.left_shift(2, lane.astype(np.uint64)) - 1),
            "%lanemask_ge": ~(np.left_shift(1, lane) - 1),
            "%dynamic_smem_size": self.shared_mem, "%total_smem_size": self.shared_used,
        }  # fmt: skip
        for name, v in specials.items():
            self.R[name] = np.broadcast_to(np.asarray(v).astype(np.int64).astype(np.uint32), (T,)).copy()
        self.shared = Region(nb, self.shared_used, self.shared_used, "shared")
        self.local = Region(T, self.k.local_size, self.k.local_size, "local")
        self.P = {key: np.zeros((T, size), np.uint8) for key, size in self.k.param_vars.items()}
        keep = self.recorder is not None
        self.slot_keep = self._block_filter(blocks) if keep else None
        self.barrier_pending = False
        self.waiting = 0  # lanes in WAIT
        self.wait_mask = np.zeros(T, np.uint32)  # the member mask each of them waits with

    def _block_filter(self, blocks: np.ndarray) -> np.ndarray:
        want = self.recorder.block_filter if self.recorder else None
        if want is None:
            return np.ones(len(blocks), bool)
        if callable(want):
            return np.array([bool(want(int(b))) for b in blocks])
        if isinstance(want, (int, np.integer)):
            want = [want]
        return np.isin(blocks, np.fromiter(want, np.int64))

    def _run_wave(self) -> None:
        same: list[Group] | None = None  # the next step's groups when known without a schedule
        while True:
            if self.steps >= self.budget:
                self._out_of_budget()
            if same is not None:
                groups = same
            else:
                groups = self._schedule()
                if not groups:
                    if (self.state == BAR).any():
                        self._release_barriers(force=True)
                        continue
                    return
            same = self._run_group(*groups[0]) if len(groups) == 1 else self._run_groups(groups)

    def _run_groups(self, groups: list[Group]) -> list[Group] | None:
        """Run several groups a step at a time for as long as each moves as one below its ceiling;
        return the next step's groups if known."""
        code = self.k.code
        while True:
            moved = []
            for p, idx, w, _ in groups:
                self.work += self.count(idx)
                self.issued += w
                moved.append(self._execute(code[p], p, idx))
            if self._end_step():
                return None
            for m, g in zip(moved, groups):
                if m is None or not 0 <= m < g[3] or m >= len(code):
                    return None
            groups = _regroup(groups, moved)
            if self.steps >= self.budget:
                return groups

    def _run_group(self, p: int, idx: Any, warps: int, ceiling: int) -> list[Group] | None:
        """Run the wave's only group for as long as it moves as one below its ceiling (straight-line
        code and uniform branches: most of a kernel's steps); return its next step if known."""
        code, lanes, top = self.k.code, self.count(idx), min(ceiling, len(self.k.code))
        while True:
            self.work += lanes
            self.issued += warps
            moved = self._execute(code[p], p, idx)
            if self._end_step():
                return None
            if moved is None or not 0 <= moved < top:
                return None
            if self.steps >= self.budget:
                return [(moved, idx, warps, ceiling)]
            p = moved

    def _end_step(self) -> bool:
        """Count a step and its limits; True if it released a barrier (the lanes regroup)."""
        self.steps += 1
        if self.work > DEFAULT_WORK:
            self._out_of_work()
        if self.barrier_pending:
            self._release_barriers()
            return True
        return False

    def _schedule(self) -> list[Group]:
        """The lanes that run next, grouped by pc: in each warp, the running lanes at its lowest pc
        (see Group). Called on every step of divergent code, so it keeps to a few whole-array steps."""
        if self.waiting:
            self._check_waiting()
        pcr = np.where(self.state == RUN, self.pc, NO_PC).reshape(self.W, LANES)
        wmin = pcr.min(axis=1)
        live = wmin != NO_PC
        mins = wmin[live]
        if not len(mins):
            return []
        lo, hi = int(mins.min()), int(mins.max())
        if not live.all():
            wmin[~live] = -1  # a warp with no running lane has none to pick
        picked = pcr == wmin[:, None]
        act = np.flatnonzero(picked)
        if self.waiting:  # lanes parked at a collective may be released by any step: schedule each
            behind, ceiling = None, -1
        elif len(act) == np.count_nonzero(pcr != NO_PC):
            behind = None if lo == hi else np.full(len(mins), NO_PC)
            ceiling = NO_PC
        else:  # per warp, the lowest pc of its running lanes not picked
            behind = np.where(picked, NO_PC, pcr).min(axis=1)[live]
            ceiling = int(behind.min())
        if lo == hi:
            return [(lo, None if len(act) == self.T else _run_of(act), len(mins), ceiling)]
        pcs = pcr.reshape(-1)[act]
        order = np.argsort(mins, kind="stable")
        by_pc = mins[order]
        starts = np.flatnonzero(np.r_[True, by_pc[1:] != by_pc[:-1]])
        warps = np.diff(np.r_[starts, len(by_pc)])
        ceilings = (
            np.minimum.reduceat(behind[order], starts).tolist() if behind is not None else [-1] * len(starts)
        )
        return [
            (p, _run_of(act[pcs == p]), w, c)
            for p, w, c in zip(by_pc[starts].tolist(), warps.tolist(), ceilings)
        ]

    def _execute(self, op: ops.Op, p: int, idx: Any) -> int | None:
        """Run op on idx; return the next pc if all of idx moved to one known place (and no lane
        changed state: barriers, exits, calls and returns answer None)."""
        self.cur_pc = p
        if op.guard is not None:
            g = self.R[op.guard[0]] if idx is None else self.R[op.guard[0]][idx]
            if op.guard[1]:
                g = ~g
            if op.kind == "branch":
                if g.all():
                    return self._goto(idx, op.target)
                if not g.any():
                    return self._goto(idx, p + 1)
                t = self.threads(idx)
                self.pc[t[g]] = op.target
                self.pc[t[~g]] = p + 1
                return None
            if not g.all():
                t = self.threads(idx)
                self.pc[t[~g]] = p + 1
                if not g.any():
                    return None
                idx = _run_of(t[g])
        kind = op.kind
        if kind == "branch":
            return self._goto(idx, op.target)
        try:
            op.run(self, idx)
        except _Regroup:  # a warp collective parked or released lanes before it had any effect
            return None
        if kind == "normal":
            if idx is None:
                self.pc += 1
            else:
                self.pc[idx] += 1
            return p + 1
        t = self.threads(idx)
        if kind == "exit":
            self.state[t] = EXIT
            self.barrier_pending = True
            self.record_sync(op.instr, idx, "exit")
        elif kind == "bar":
            self.pc[t] = p + 1
        elif kind == "call":
            self.pc[t] = op.target
        elif kind == "ret":
            self._return(t)
        return None

    def _goto(self, idx: Any, target: int) -> int:
        if idx is None:
            self.pc[:] = target
        else:
            self.pc[idx] = target
        return target

    # -- barriers

    def arrive(self, instr: Instr, idx: Any, red: Any) -> None:
        t = self.threads(idx)
        self.state[t] = BAR
        self.bar_pc[t] = self.pc[t]
        if red is not None:
            self.bar_pred[t] = np.broadcast_to(red[2](self, idx), t.shape)
        self.barrier_pending = True
        self.record_sync(instr, idx, "bar")

    def _release_barriers(self, force: bool = False) -> None:
        self.barrier_pending = False
        st = self.state.reshape(-1, self.tpb_pad)
        at_bar = st == BAR
        waiting = at_bar.any(axis=1)
        if not waiting.any():
            return
        ready = waiting & ~((st == RUN) | (st == WAIT)).any(axis=1)
        if not ready.any():
            return
        bp = self.bar_pc.reshape(-1, self.tpb_pad)
        big = np.iinfo(np.int64).max
        lo = np.where(at_bar, bp, big).min(axis=1)
        hi = np.where(at_bar, bp, -1).max(axis=1)
        bad = ready & (lo != hi)
        if bad.any():
            self._barrier_divergence(int(np.flatnonzero(bad)[0]))
        partial = ready & (st[:, : self.tpb] == EXIT).any(axis=1)
        if partial.any():  # passed while threads of the block had exited: fine here, undefined on a GPU
            self._note_partial_barrier(partial, lo)
        release = at_bar & ready[:, None]
        flat = release.reshape(-1)
        for p in np.unique(bp[release]):
            op = self.k.code[int(p)]
            if "red" in op.instr.parts:  # __syncthreads_count / _and / _or: combine the block's votes
                self._finish_bar_red(op, flat & (self.bar_pc == p))
        self.state[flat] = RUN
        self.epoch[ready] += 1

    def _finish_bar_red(self, op: ops.Op, threads: np.ndarray) -> None:
        how = next(p for p in op.instr.parts if p in ("popc", "and", "or"))
        pred = self.bar_pred.reshape(-1, self.tpb_pad)
        arrived = threads.reshape(-1, self.tpb_pad)
        live = self.state.reshape(-1, self.tpb_pad) != EXIT
        vals = pred & live
        if how == "popc":
            per_block = vals.sum(axis=1).astype(np.uint32)
        elif how == "and":
            per_block = (vals | ~live).all(axis=1).astype(np.uint32)
        else:
            per_block = vals.any(axis=1).astype(np.uint32)
        idx = np.flatnonzero(arrived.reshape(-1))
        writer = ops.writer(_RegCtx(self.k), op.instr.operands[0])
        writer(self, idx, per_block[self.slot[idx]])

    def _note_partial_barrier(self, partial: np.ndarray, pcs: np.ndarray) -> None:
        """Keep the first barrier that let a block through with threads missing (for `notes`)."""
        self.partial_blocks += int(partial.sum())
        if self.partial_barrier is None:
            slot = int(np.flatnonzero(partial)[0])
            st = self.state.reshape(-1, self.tpb_pad)[slot, : self.tpb]
            self.partial_barrier = (
                slot,
                int(pcs[slot]),
                np.flatnonzero(st == BAR),
                np.flatnonzero(st == EXIT),
            )
            self.partial_barrier_block = self._block_coords(slot)

    def notes(self) -> list[str]:
        """What a finished launch did that a GPU does not promise to do the same way: a barrier
        that part of a block never reached (its other threads had returned)."""
        if self.partial_barrier is None:
            return []
        _, pc, arrived, exited = self.partial_barrier
        more = self.partial_blocks - 1
        return [
            f"{self.name}: block {self.partial_barrier_block} passed the __syncthreads() at line "
            f"{self.k.code[pc].instr.line} with threads {id_ranges(arrived)} only ({id_ranges(exited)} had "
            f"returned{f'; {more} more blocks did too' if more else ''}): undefined on a GPU, where every "
            "thread must reach each barrier; .check(...) says more"
        ]

    def _barrier_divergence(self, slot: int) -> None:
        bp = self.bar_pc.reshape(-1, self.tpb_pad)[slot]
        st = self.state.reshape(-1, self.tpb_pad)[slot]
        where = []
        for p in np.unique(bp[st == BAR]):
            tids = np.flatnonzero((bp == p) & (st == BAR))
            where.append(f"threads {id_ranges(tids)} wait {self.program.where(self.k.code[int(p)].instr)}")
        exited = np.flatnonzero(st[: self.tpb] == EXIT)
        self.fault = Fault("barrier", -1, slot * self.tpb_pad + np.arange(self.tpb))
        if len(exited):
            where.append(f"threads {id_ranges(exited)} have exited")
        raise BarrierError(
            f"{self.name}: block {self._block_coords(slot)} is stuck: its threads wait at different "
            "__syncthreads() calls, which never meet (a barrier inside a divergent branch?):\n  "
            + "\n  ".join(where)
        )

    def check_converged(self, instr: Instr, idx: Any, masks: Any) -> None:
        """Before a *_sync collective runs: the lanes its member mask names must all be here.

        Lanes already waiting at this instruction count as here. If named lanes are still running
        elsewhere, the lanes here wait for them (raises _Regroup: nothing has happened yet); once
        the last arrives, the waiting lanes are released and all run the collective together on the
        next step. A named lane waiting at a __syncthreads() can never come: an error."""
        t = self.threads(idx)
        lane = t & 31
        masks = np.broadcast_to(np.asarray(masks, np.uint32), t.shape)
        here = ops.warp_reduce(self, idx, np.left_shift(np.uint32(1), lane.astype(np.uint32)), "or")
        warp = t >> 5
        parked = self._lane_bits((self.state == WAIT) & (self.pc == self.cur_pc)) if self.waiting else None
        if parked is not None:
            here = here | parked[warp]
        missing = masks & self._lane_bits(self.state != EXIT)[warp] & ~here
        if not missing.any():
            if parked is not None and parked[warp].any():  # the last lanes came: run it all together
                back = (self.state == WAIT) & (self.pc == self.cur_pc)
                back &= np.isin(np.arange(len(back)) >> 5, warp)
                self.state[back] = RUN
                self.waiting -= int(back.sum())
                raise _Regroup
            return
        if (missing & self._lane_bits(self.state == BAR)[warp]).any():
            self._collective_divergence(instr, t, masks, missing)
        stay = np.isin(warp, warp[missing != 0])  # every lane here of a warp still missing lanes
        self.state[t[stay]] = WAIT
        self.wait_mask[t[stay]] = masks[stay]
        self.waiting += int(stay.sum())
        raise _Regroup

    def _lane_bits(self, lanes: np.ndarray) -> np.ndarray:
        """Per warp, the bit mask of its lanes where `lanes` is true."""
        bits = np.uint64(1) << np.arange(LANES, dtype=np.uint64)
        return (lanes.reshape(self.W, LANES) * bits).sum(axis=1).astype(np.uint32)

    def _check_waiting(self) -> None:
        """A warp whose lanes all wait (or have exited, or wait at a __syncthreads) never moves again."""
        st = self.state.reshape(self.W, LANES)
        stuck = (st == WAIT).any(axis=1) & ~(st == RUN).any(axis=1)
        if not stuck.any():
            return
        w = int(np.flatnonzero(stuck)[0])
        t = w * LANES + np.flatnonzero(st[w] == WAIT)
        pc = int(self.pc[t[0]])
        t = t[self.pc[t] == pc]
        self.cur_pc = pc
        here = self._lane_bits((self.state == WAIT) & (self.pc == pc))[w]
        missing = self.wait_mask[t] & ~here
        self._collective_divergence(self.k.code[pc].instr, t, self.wait_mask[t], missing)

    def _collective_divergence(
        self, instr: Instr, t: np.ndarray, masks: np.ndarray, missing: np.ndarray
    ) -> None:
        k = int(np.flatnonzero(missing)[0])
        self.fault = Fault("collective", self.cur_pc, t, missing.astype(np.int64))
        raise BarrierError(
            f"{self.name}: {self.who(int(t[k]))} runs '{instr.opcode}' with member mask "
            f"{int(masks[k]):#010x}, but lanes {int(missing[k]):#010x} of its warp are elsewhere "
            f"(diverged) {self.program.where(instr)}"
        )

    def _out_of_work(self) -> None:
        raise InstructionBudgetExceeded(
            f"{self.name} has run {self.work:,} thread-instructions on the emulator "
            f"({self.nblocks} blocks of {self.tpb} threads) and is not finished: that is more than "
            "the emulator should take on (it would run for minutes). Use a smaller N, a GPU, or "
            "course.emulator.set_budget(work=...) if you mean it"
        )

    def _out_of_budget(self) -> None:
        running = np.flatnonzero(self.state == RUN)
        at = ""
        if len(running):
            t = int(running[0])
            at = f"; {self.who(t)} is {self.program.where(self.k.code[int(self.pc[t])].instr)}"
        raise InstructionBudgetExceeded(
            f"{self.name} ran {self.budget} scheduler steps without finishing (an endless loop, or a "
            f"thread waiting for something that never happens?){at}. For a long but correct kernel, "
            "pass budget=... to Kernel.trace or call course.emulator.set_budget(...)"
        )

    # -- calls

    def push_call(self, idx: Any, site: int) -> None:
        t = self.threads(idx)
        if self.stack is None or (self.depth[t] >= MAX_CALL_DEPTH).any():
            raise KernelFault(f"{self.name}: device function calls nested deeper than {MAX_CALL_DEPTH}")
        self.stack[t, self.depth[t]] = site
        self.depth[t] += 1

    def _return(self, t: np.ndarray) -> None:
        assert self.stack is not None
        self.depth[t] -= 1
        sites = self.stack[t, self.depth[t]]
        for site in np.unique(sites):
            sel = t[sites == site]
            for src, dst in self.k.ret_maps.get(int(site), []):
                self._copy_param(src, dst, sel)
            if int(site) in self.k.frames:
                self.restore_frame(int(site), sel)
            self.pc[sel] = site + 1

    def _copy_param(self, src: str, dst: str, t: np.ndarray) -> None:
        """Pass a .param between caller and callee (names are reused with other sizes)."""
        width = min(self.P[src].shape[1], self.P[dst].shape[1])
        self.P[dst][t, :width] = self.P[src][t, :width]

    def save_frame(self, site: int, idx: Any) -> None:
        """Before a recursive call: keep the callee's registers and local bytes of this depth."""
        t = self.threads(idx)
        regs, (lo, hi) = self.k.frames[site]
        d = self.depth[t]
        for r in regs:
            if r not in self.saved:
                self.saved[r] = np.zeros((self.T, MAX_CALL_DEPTH), self.R[r].dtype)
            self.saved[r][t, d] = self.R[r][t]
        if hi > lo:
            key = f"local:{lo}"
            if key not in self.saved:
                self.saved[key] = np.zeros((self.T, MAX_CALL_DEPTH, hi - lo), np.uint8)
            self.saved[key][t, d] = self.local.data[t, lo:hi]

    def restore_frame(self, site: int, t: np.ndarray) -> None:
        regs, (lo, hi) = self.k.frames[site]
        d = self.depth[t]
        for r in regs:
            self.R[r][t] = self.saved[r][t, d]
        if hi > lo:
            self.local.data[t, lo:hi] = self.saved[f"local:{lo}"][t, d]

    def external_call(self, name: str, keys: list[str], idx: Any, instr: Instr) -> None:
        """The two functions CUDA C calls into the runtime: printf and assert."""
        t = self.threads(idx)
        ptrs = [self.P[k][t, :8].copy().view(np.uint64)[:, 0] for k in keys]
        if name == "__assertfail":
            msg = self.read_cstring(int(t[0]), int(ptrs[0][0]))
            raise KernelFault(
                f"{self.name}: assertion `{msg}` failed in {self.who(int(t[0]))} {self.program.where(instr)}"
            )
        for k, thread in enumerate(t):
            fmt = self.read_cstring(int(thread), int(ptrs[0][k]))
            args = int(ptrs[1][k]) if len(ptrs) > 1 else 0
            print(_printf(fmt, lambda a, n, th=int(thread): self.read_bytes(th, a, n), args), end="")

    def read_bytes(self, t: int, addr: int, n: int) -> bytes:
        """Bytes at a generic address, as thread t sees them."""
        for region, window, row in (
            (self.local, LOCAL_WINDOW, t),
            (self.shared, SHARED_WINDOW, self.slot[t]),
        ):
            if window <= addr < window + WINDOW_SIZE:
                off = addr - window
                return region.data[row, off : off + n].tobytes()
        j, inside = self.mem.locate(np.array([addr], np.int64), n)
        if not inside[0]:
            raise KernelFault(f"{self.name}: printf was given a bad pointer {addr:#x}")
        buf = self.mem.buffers[int(j[0])]
        return buf.data[addr - buf.base : addr - buf.base + n].tobytes()

    def read_cstring(self, t: int, addr: int) -> str:
        out = b""
        while b"\0" not in out and len(out) < 4096:
            out += self.read_bytes(t, addr + len(out), 1)
        return out.split(b"\0", 1)[0].decode(errors="replace")

    # -- params of device-function calls (per thread)

    def param_read(self, key: str, off: int, dt: np.dtype, idx: Any) -> np.ndarray:
        rows = self.P[key] if idx is None else self.P[key][idx]
        return np.ascontiguousarray(rows[:, off : off + dt.itemsize]).view(dt)[:, 0]

    def param_write(self, key: str, off: int, dt: np.dtype, idx: Any, value: Any) -> None:
        n = self.count(idx)
        raw = (
            np.ascontiguousarray(np.broadcast_to(np.asarray(value, dt), (n,)))
            .view(np.uint8)
            .reshape(n, dt.itemsize)
        )
        if idx is None:
            self.P[key][:, off : off + dt.itemsize] = raw
        else:
            self.P[key][idx, off : off + dt.itemsize] = raw

    def param_scalar(self, name: str, off: int, dt: np.dtype) -> Any:
        return np.frombuffer(self.params[name], dt, count=1, offset=off)[0]

    # -- memory

    def count(self, idx: Any) -> int:
        if idx is None:
            return self.T
        return idx.stop - idx.start if isinstance(idx, slice) else len(idx)

    def threads(self, idx: Any) -> np.ndarray:
        """The thread numbers (in the wave) of a group's lanes: idx is None (all), a slice or an array."""
        if idx is None:
            return self.all_threads
        return self.all_threads[idx] if isinstance(idx, slice) else idx

    def load(self, instr: Instr, space: str, addr: np.ndarray, idx: Any, dt: np.dtype, n: int) -> np.ndarray:
        cnt = self.count(idx)
        out = np.empty((cnt, n), dt) if n > 1 else None
        for sel, arr, flat in self._resolve(instr, space, addr, idx, dt, n, "ld"):
            vals = arr[flat[:, None] + np.arange(n)] if n > 1 else arr[flat]
            if sel is None:
                if out is None:
                    return vals
                out[:] = vals
            else:
                if out is None:
                    out = np.empty(cnt, dt)
                out[sel] = vals
        return out  # type: ignore[return-value]

    def store(
        self, instr: Instr, space: str, addr: np.ndarray, idx: Any, vals: np.ndarray, dt: np.dtype, n: int
    ) -> None:
        for sel, arr, flat in self._resolve(instr, space, addr, idx, dt, n, "st"):
            v = vals if sel is None else vals[sel]
            if n > 1:
                arr[flat[:, None] + np.arange(n)] = v
            else:
                arr[flat] = v

    def atomic(
        self,
        instr: Instr,
        space: str,
        addr: np.ndarray,
        idx: Any,
        dt: np.dtype,
        kind: str,
        operands: list[np.ndarray],
    ) -> np.ndarray:
        old = np.empty(self.count(idx), dt)
        op = instr.parts[0]
        for sel, arr, flat in self._resolve(instr, space, addr, idx, dt, 1, op):
            o = [x if sel is None else x[sel] for x in operands]
            res = _apply_atomic(arr, flat, kind, o, returns=op == "atom")
            if sel is None:
                old = res
            else:
                old[sel] = res
        return old

    def _resolve(
        self, instr: Instr, space: str, addr: np.ndarray, idx: Any, dt: np.dtype, n: int, op: str
    ) -> list[tuple[Any, np.ndarray, np.ndarray]]:
        """Split an access by memory space and buffer; check bounds and alignment; record it."""
        t = self.threads(idx)
        if space == "generic":
            sh = (addr >= SHARED_WINDOW) & (addr < SHARED_WINDOW + WINDOW_SIZE)
            lo = (addr >= LOCAL_WINDOW) & (addr < LOCAL_WINDOW + WINDOW_SIZE)
            gl = ~(sh | lo)
            parts = []
            for mask, sp, base in (
                (gl, "global", 0),
                (sh, "shared", SHARED_WINDOW),
                (lo, "local", LOCAL_WINDOW),
            ):
                if not mask.any():
                    continue
                if mask.all():
                    return self._resolve_space(instr, sp, addr - base, t, dt, n, op)
                sel = np.flatnonzero(mask)
                for s2, arr, flat in self._resolve_space(instr, sp, addr[sel] - base, t[sel], dt, n, op):
                    parts.append((sel if s2 is None else sel[s2], arr, flat))
            return parts
        return self._resolve_space(instr, space, addr, t, dt, n, op)

    def _resolve_space(
        self, instr: Instr, space: str, addr: np.ndarray, t: np.ndarray, dt: np.dtype, n: int, op: str
    ) -> list[tuple[Any, np.ndarray, np.ndarray]]:
        size = dt.itemsize * n
        bad = check_alignment(addr, size)
        if bad is not None:
            k = int(np.flatnonzero(bad)[0])
            self.fault = Fault("misaligned", self.cur_pc, t[bad], addr[bad], space, op, size)
            raise_misaligned(
                int(addr[k]), size, f"{self.name}: {self.who(int(t[k]))}", self.program.where(instr)
            )
        if space in ("shared", "local"):
            region = self.shared if space == "shared" else self.local
            out = (addr < 0) | (addr + size > region.used)
            if out.any():
                self._oob_region(instr, space, addr, out, t, op, size)
            rows = self.slot[t] if space == "shared" else t
            per_row = region.row_bytes // dt.itemsize
            flat = rows * per_row + addr // dt.itemsize
            if self.recorder is not None and self.recorder.wants_space(space):
                if space == "shared":
                    var = np.maximum(np.searchsorted(self.shared_offsets, addr, side="right") - 1, 0)
                    elem = (addr - self.shared_offsets[var]) // dt.itemsize
                    self.shared_itemsize.setdefault(int(var[0]), dt.itemsize)
                    bufid = self.n_global + var
                else:
                    elem = addr // dt.itemsize
                    bufid = np.full(len(t), self.n_global + len(self.k.shared))
                self.record(instr, space, op, t, addr, size, bufid, elem)
            return [(None, region.view(dt), flat)]
        j, inside = self.mem.locate(addr, size)
        if not inside.all():
            self._oob_global(instr, addr, inside, t, op, size)
        bufs = np.unique(j) if len(j) else j
        groups = []
        for b in bufs:
            sel = None if len(bufs) == 1 else np.flatnonzero(j == b)
            a = addr if sel is None else addr[sel]
            buf = self.mem.buffers[int(b)]
            arr = self.mem.typed(int(b), dt)
            if arr is None:
                usable = buf.data.size // dt.itemsize * dt.itemsize
                arr = buf.data[:usable].view(dt)
            groups.append((sel, arr, (a - buf.base) // dt.itemsize))
            mask = self.written.get(buf.base) if self.written and op != "ld" else None
            if mask is not None:
                mask[((a - buf.base)[:, None] + np.arange(size)).reshape(-1)] = True
            if self.recorder is not None:
                rec_space = buf.space if space == "global" else space
                if self.recorder.wants_space(rec_space):
                    tt = t if sel is None else t[sel]
                    elem = (a - buf.base) // max(buf.itemsize, 1)
                    self.record(instr, rec_space, op, tt, a, size, np.full(len(tt), int(b)), elem)
        return groups

    def _oob_global(
        self, instr: Instr, addr: np.ndarray, inside: np.ndarray, t: np.ndarray, op: str, size: int
    ) -> None:
        k = int(np.flatnonzero(~inside)[0])
        self.fault = Fault("out-of-bounds", self.cur_pc, t[~inside], addr[~inside], "global", op, size)
        others = int((~inside).sum()) - 1
        verb = {"ld": "read", "st": "write"}.get(op, f"{op} (atomic)")
        raise_out_of_bounds(
            f"{self.name}: {self.who(int(t[k]))} tried to {verb} {size} bytes at {self.mem.nearest(int(addr[k]))}"
            f"{f' (and {others} more threads went out of bounds)' if others else ''}, "
            f"{self.program.where(instr)}"
        )

    def _oob_region(
        self, instr: Instr, space: str, addr: np.ndarray, out: np.ndarray, t: np.ndarray, op: str, size: int
    ) -> None:
        k = int(np.flatnonzero(out)[0])
        self.fault = Fault("out-of-bounds", self.cur_pc, t[out], addr[out], space, op, size)
        verb = {"ld": "read", "st": "write"}.get(op, f"{op} (atomic)")
        used = self.shared_used if space == "shared" else self.k.local_size
        detail = ""
        if space == "shared" and len(self.k.shared):
            parts = [
                display(s.name, f"{self.shared_sizes[i]} B at offset {s.offset}")
                for i, s in enumerate(self.k.shared)
            ]
            detail = ": " + " and ".join(parts)
            if self.k.dynamic_names and self.shared_mem == 0:
                detail += "; the launch gave 0 bytes of dynamic shared memory: pass shared_mem=..."
        raise_out_of_bounds(
            f"{self.name}: {self.who(int(t[k]))} tried to {verb} {size} bytes at {space} offset {int(addr[k])}, "
            f"but the block has only {used} bytes of {space} memory{detail}, {self.program.where(instr)}"
        )

    # -- the trace

    def _rows(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sorted threads by warp: each warp, where its lanes start in t, and each lane's row."""
        w = t >> 5
        if w[0] == w[-1]:  # one warp: most recorded instructions
            return w[:1], np.zeros(1, np.int64), np.zeros(len(t), np.int64)
        starts = np.concatenate(([0], np.flatnonzero(w[1:] != w[:-1]) + 1))
        row = np.cumsum(np.concatenate(([0], (w[1:] != w[:-1]).astype(np.int64))))
        return w[starts], starts, row

    def record(
        self,
        instr: Instr,
        space: str,
        op: str,
        t: np.ndarray,
        addr: np.ndarray,
        size: int,
        bufid: np.ndarray,
        elem: np.ndarray,
    ) -> None:
        if self.recorder is None or self.slot_keep is None or len(t) == 0:
            return
        keep = self.slot_keep[self.slot[t]]
        if not keep.all():
            self.recorder.dropped += int((~keep).sum())
            if not keep.any():
                return
            t, addr, bufid, elem = t[keep], addr[keep], bufid[keep], elem[keep]
        wave_warp, starts, row = self._rows(t)
        lane = t & 31
        nrow = len(starts)
        per_lane = {}
        for name, vals in (("addr", addr), ("buffer", bufid), ("index", elem)):
            mat = np.full((nrow, LANES), -1, np.int64)
            mat[row, lane] = vals
            per_lane[name] = mat
        self._add_rows(instr, space, op, wave_warp, starts, lane, size, per_lane)

    def record_lanes(
        self, instr: Instr, idx: Any, space: str, op: str, values: np.ndarray, size: int
    ) -> None:
        if self.recorder is None:
            return
        t = self.threads(idx)
        none = np.full(len(t), -1)
        self.record(instr, space, op, t, np.asarray(values, np.int64), size, none, none)

    def record_sync(self, instr: Instr, idx: Any, op: str) -> None:
        if self.recorder is None or not self.recorder.wants_space("sync"):
            return
        t = self.threads(idx)
        none = np.full(len(t), -1)
        self.record(instr, "sync", op, t, none, 0, none, none)

    def _add_rows(
        self,
        instr: Instr,
        space: str,
        op: str,
        wave_warp: np.ndarray,
        starts: np.ndarray,
        lane: np.ndarray,
        size: int,
        per_lane: dict[str, np.ndarray],
    ) -> None:
        slot = wave_warp // self.warps_per_block
        bits = np.left_shift(np.uint64(1), lane.astype(np.uint64))
        mask = np.bitwise_or.reduceat(bits, starts).astype(np.uint32)
        assert self.recorder is not None
        self.recorder.add({
            "block": self.block_ids[slot], "warp": wave_warp % self.warps_per_block, "epoch": self.epoch[slot],
            "mask": mask, **per_lane,  # and what every row of this instruction shares:
            "step": self.steps, "pc": self.cur_pc, "ptx_line": instr.ptx_line, "line": instr.line,
            "space": space, "op": op, "opcode": instr.opcode, "size": size,
        })  # fmt: skip

    def trace(self) -> Trace:
        assert self.recorder is not None
        bufs = [BufferInfo(b.name, b.space, b.itemsize, b.nbytes, b.dtype, b.base) for b in self.mem.buffers]
        for i, s in enumerate(self.k.shared):
            item = self.shared_itemsize.get(i, 4)
            bufs.append(BufferInfo(source_name(s.name), "shared", item, self.shared_sizes[i], "", s.offset))
        bufs.append(BufferInfo("local", "local", 1, self.k.local_size, ""))
        return self.recorder.build(
            kernel=self.name,
            grid=self.grid,
            block=self.block,
            buffers=bufs,
            source=self.program.source.splitlines(),
            instructions=(self.issued, self.work),
        )

    # -- words for messages

    def _block_coords(self, slot: int) -> tuple[int, int, int]:
        b = int(self.block_ids[slot])
        gx, gy, _ = self.grid
        return (b % gx, (b // gx) % gy, b // (gx * gy))

    def who(self, t: int) -> str:
        ltid = t % self.tpb_pad
        bx, by, _ = self.block
        tid = (ltid % bx, (ltid // bx) % by, ltid // (bx * by))
        return f"block {self._block_coords(t // self.tpb_pad)} thread {tid}"

    def who_first(self, idx: Any) -> str:
        return f"{self.name}: {self.who(int((self.threads(idx))[0]))}"

    def where(self, instr: Instr) -> str:
        return self.program.where(instr)


class _RegCtx:
    """The minimal ctx for writing an entry register after the fact."""

    def __init__(self, k: Compiled):
        self.k = k

    def reg(self, name: str) -> str:
        return name

    def storage(self, name: str) -> np.dtype:
        return self.k.storage[name]


def _apply_atomic(
    arr: np.ndarray, flat: np.ndarray, kind: str, operands: list[np.ndarray], returns: bool
) -> np.ndarray:
    """Apply an atomic for every lane in thread order; return the values each lane saw."""
    f = ops.ATOMIC_OPS[kind]
    n = len(flat)
    order = np.argsort(flat, kind="stable")
    fs = flat[order]
    first = np.r_[True, fs[1:] != fs[:-1]]
    if first.all():
        old = arr[flat].copy()
        arr[flat] = f(old, *operands)
        return old
    if not returns and kind in ("add", "min", "max", "and", "or", "xor"):
        ufunc = {
            "add": np.add,
            "and": np.bitwise_and,
            "or": np.bitwise_or,
            "xor": np.bitwise_xor,
            "min": np.fmin if arr.dtype.kind == "f" else np.minimum,
            "max": np.fmax if arr.dtype.kind == "f" else np.maximum,
        }[kind]
        old = arr[flat].copy()
        ufunc.at(arr, flat, operands[0])
        return old
    seg = np.cumsum(first) - 1
    seg_start = np.flatnonzero(first)
    if kind == "add" and arr.dtype.kind in "iu":
        vals = operands[0][order].astype(arr.dtype)
        incl = np.cumsum(vals, dtype=arr.dtype)
        excl = incl - vals
        prefix = excl - excl[seg_start][seg]
        init = arr[fs[seg_start]]
        old_sorted = init[seg] + prefix
        last = np.r_[seg_start[1:], n] - 1
        arr[fs[seg_start]] = old_sorted[last] + vals[last]
        old = np.empty(n, arr.dtype)
        old[order] = old_sorted
        return old
    rank = np.arange(n) - seg_start[seg]
    old = np.empty(n, arr.dtype)
    for r in range(int(rank.max()) + 1):
        pos = order[rank == r]
        o = arr[flat[pos]]
        old[pos] = o
        arr[flat[pos]] = f(o, *[x[pos] for x in operands])
    return old


_FMT = re.compile(r"%([-+ #0]*)(\d+)?(?:\.(\d+))?(hh|h|ll|l|z)?([diouxXcsfFeEgGpa%])")


def _printf(fmt: str, read: Any, argbuf: int) -> str:
    """C printf over vprintf's packed argument buffer (each argument aligned to its size)."""
    out, pos, off = [], 0, 0
    for m in _FMT.finditer(fmt):
        out.append(fmt[pos : m.start()])
        pos = m.end()
        flags, width, prec, length, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        size = 8 if conv in "fFeEgGaps" or length in ("l", "ll", "z") else 4
        off = -(-off // size) * size
        raw = read(argbuf + off, size)
        off += size
        spec = "%" + (flags or "") + (width or "") + (f".{prec}" if prec else "")
        if conv in "fFeEgGa":
            value: Any = struct.unpack("<d", raw)[0]
            out.append((spec + ("e" if conv == "a" else conv)) % value)
        elif conv == "s":
            out.append((spec + "s") % _cstring(read, struct.unpack("<Q", raw)[0]))
        elif conv == "p":
            out.append(hex(struct.unpack("<Q", raw)[0]))
        elif conv == "c":
            out.append(chr(raw[0]))
        else:
            signed = conv in "di"
            value = int.from_bytes(raw, "little", signed=signed)
            out.append((spec + {"u": "d", "i": "d"}.get(conv, conv)) % value)
    out.append(fmt[pos:])
    return "".join(out)


def _cstring(read: Any, addr: int) -> str:
    out = b""
    while b"\0" not in out and len(out) < 4096:
        out += read(addr + len(out), 1)
    return out.split(b"\0", 1)[0].decode(errors="replace")
