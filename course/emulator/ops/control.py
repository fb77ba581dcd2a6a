"""Control flow (PTX ISA, "Control Flow Instructions"): bra, call, ret, exit; and trap.

These only say where the program counter goes (`Op.kind`, `Op.target`); the machine moves it.
"""

from __future__ import annotations

from ...errors import KernelFault, UnsupportedInstruction
from ..ptx import Instr
from .contract import Builder, LaneSet, Machine, Op
from .operands import builds


@builds("bra", "brx")
def _bra(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Control Flow Instructions: bra (the machine splits the lanes of a divergent one);
    brx.idx is not implemented."""
    if instr.parts[0] == "brx":
        raise UnsupportedInstruction("indirect branches (brx.idx) are not supported")
    return Op(instr, lambda m, idx: None, "branch", ctx.label(instr.operands[0][1]))


@builds("ret")
def _ret(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Control Flow Instructions: ret (from the kernel itself: the thread exits)."""
    return Op(instr, lambda m, idx: None, "exit" if ctx.is_entry else "ret")


@builds("exit")
def _exit(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Control Flow Instructions: exit."""
    return Op(instr, lambda m, idx: None, "exit")


@builds("trap", "brkpt")
def _trap(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Miscellaneous Instructions: trap, brkpt: a KernelFault naming the thread and line."""

    def run(m: Machine, idx: LaneSet) -> None:
        raise KernelFault(f"{m.who_first(idx)} executed '{instr.opcode}' {m.where(instr)}")

    return Op(instr, run)


@builds("call")
def _call(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Control Flow Instructions: call, built by the linker (`link._build_call`), which
    knows the callee."""
    return ctx.build_call(instr)


@builds("nanosleep", "pmevent", "griddepcontrol")
def _nop(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Miscellaneous Instructions: nanosleep, pmevent; Parallel Synchronization and
    Communication Instructions: griddepcontrol. Nothing for them to do here."""
    return Op(instr, lambda m, idx: None)
