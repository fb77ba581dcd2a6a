"""Linking: a parsed PTX module becomes code the SIMT machine can run.

`Program` holds a module (and its module-scope variables, which live across launches); for each
kernel it asks `Linker` once for a `LinkedKernel`: the kernel and every device function it calls laid
out in one list of built instructions (`ops.Op`), with shared, local and .param variables given
their offsets and every register its storage type. The linker is the `ctx` (`ops.Builder`) the
instruction builders ask for names, addresses and labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import CourseError, EmulatorDefect, UnsupportedInstruction
from . import ops
from .ptx import TYPE_SIZES, Function, Instr, PtxModule, Variable, parse

MODULE_VARS_BASE = 0x6000_0000_0000  # where module-scope __device__ and __constant__ variables live


def _storage(t: str) -> np.dtype:
    """How a register of PTX type t is stored: as an unsigned integer of its width (pred: bool)."""
    if t == "pred":
        return np.dtype(np.bool_)
    return np.dtype(ops.UINT[max(TYPE_SIZES.get(t, 4), 1)])


@dataclass
class SharedVar:
    """A __shared__ variable: its offset in the block's shared memory and its size in bytes."""

    name: str
    offset: int
    size: int


@dataclass
class LinkedKernel:
    """One entry and the functions it calls, built into closures once."""

    name: str
    code: list[ops.Op]  # the entry's instructions, then each callee's: the pc indexes this list
    storage: dict[str, np.dtype]  # register (callees' prefixed "fn::") -> how it is stored
    shared: list[SharedVar]
    static_shared: int  # bytes of static shared memory
    dynamic_offset: int  # where `extern __shared__` memory starts
    dynamic_names: frozenset[str]  # the name of the extern __shared__ array, if any
    local_size: int  # bytes of local memory per thread
    param_vars: dict[str, int]  # per-thread .param storage (calls): key -> bytes
    # call site -> (callee's return .param, caller's .param) pairs copied back on ret
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
        self._compiled: dict[str, LinkedKernel] = {}
        self._layouts: dict[str, tuple[int, int]] = {}
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
        return self.shared_layout(name)[0]

    def shared_layout(self, name: str) -> tuple[int, int]:
        """(static shared bytes, shared arrays) of a kernel, from its declarations alone: a kernel
        the emulator cannot run (an instruction it lacks) still launches on a GPU."""
        if name not in self._layouts:
            if name in self._compiled:
                k = self._compiled[name]
                self._layouts[name] = (k.static_shared, len(k.shared))
            else:
                linker = Linker(self, self.entry(name))
                self._layouts[name] = (linker.shared_layout(), len(linker.shared))
        return self._layouts[name]

    def required_block(self, name: str) -> list[int] | None:
        return self.entry(name).directives.get("reqntid")

    def compiled(self, name: str) -> LinkedKernel:
        if name not in self._compiled:
            builder = Linker(self, self.entry(name))
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


class Linker:
    """Lays out one kernel's memory symbols and builds its instructions and those of the device
    functions it calls (the `ops.Builder` the builders ask for names)."""

    def __init__(self, program: Program, entry: Function):
        self.program = program
        self.entry = entry
        self.recursive: set[str] = set()
        self.functions = self._reachable(entry)
        self.used = self._referenced()  # the symbols the entry and its callees name
        self.dynamic: list[str] = []  # its `extern __shared__` arrays (shared_layout sets them)
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

    def shared_layout(self) -> int:
        """Lay out the kernel's shared memory (`shared`, `aliases`) without building its
        instructions; the static bytes. A GPU launch needs only this, whatever the kernel's
        instructions are."""
        offset = 0
        used = self.used
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
        self.dynamic = dynamic = [v.name for v in module_shared if v.extern]
        for name in dynamic:  # every `extern __shared__` array starts where static shared memory ends
            self.aliases[name] = dyn_off
        if dynamic:  # NVRTC names a second `extern __shared__ sdata[]` sdata$1: one buffer, one name
            self.shared.append(SharedVar(dynamic[0].split("$")[0], dyn_off, 0))
        return static

    def build(self) -> LinkedKernel:
        static = self.shared_layout()
        dyn_off = -(-static // 16) * 16
        used, dynamic = self.used, self.dynamic
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
                code.append(ops.build(ins, self))
        return LinkedKernel(
            name=self.entry.name, code=code, storage=self.reg_types, shared=self.shared,
            static_shared=static, dynamic_offset=dyn_off, dynamic_names=frozenset(dynamic[:1] and [dynamic[0].split("$")[0]]),
            local_size=local, param_vars=self.param_vars, ret_maps=self.ret_maps, frames=self.frames,
            has_calls=len(self.functions) > 1 or any(i.parts[0] == "call" for i in self.entry.instrs),
            module_symbols=frozenset(used & set(self.program.module_vars)),
        )  # fmt: skip

    # -- what the instruction builders ask (ops.Builder)

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


def _callee(instr: Instr) -> str:
    for op in instr.operands:
        if op[0] == "sym":
            return op[1]
    raise UnsupportedInstruction(f"cannot find the callee of {instr.text}")


def _build_call(ctx: Linker, instr: Instr) -> ops.Op:
    """PTX ISA, Control Flow Instructions: call. A device function's .params are copied in on the
    call and its return values out on the ret; vprintf and __assertfail go to the machine."""
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

    def call(m: ops.Machine, idx: ops.LaneSet) -> None:
        m.enter_call(site, idx, pairs)

    return ops.Op(instr, call, "call", ctx.starts[callee])


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
