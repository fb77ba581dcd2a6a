"""Operands: reading and writing registers, immediates and symbols as an instruction's type, and
the table of instruction builders.

PTX ISA, "Instruction Operands" and "Types": a register is stored as its declared width (b32 ->
uint32, pred -> bool) and read as the instruction's type (`reader`), so `add.f32` on a b32
register sees its bits as a float32. `build(instr, ctx)` looks the opcode up in `BUILDERS`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import UnsupportedInstruction
from ..ptx import Instr
from .contract import Builder, LaneSet, Machine, Names, Op

DT: dict[str, Any] = {
    "u8": np.uint8, "s8": np.int8, "b8": np.uint8, "u16": np.uint16, "s16": np.int16, "b16": np.uint16,
    "f16": np.float16, "bf16": np.uint16, "u32": np.uint32, "s32": np.int32, "b32": np.uint32,
    "f32": np.float32, "f16x2": np.uint32, "bf16x2": np.uint32, "u64": np.uint64, "s64": np.int64,
    "b64": np.uint64, "f64": np.float64, "pred": np.bool_, "u16x2": np.uint32, "s16x2": np.uint32,
}  # fmt: skip


UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}  # by size in bytes
SINT = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
UINT_NAME = {1: "u8", 2: "u16", 4: "u32", 8: "u64"}
SPACES = ("global", "shared", "local", "const", "param")
CLOCKS = {"%clock", "%clock64", "%globaltimer", "%clock_hi"}  # read as the scheduler's step count

# a closure that reads an operand for the lanes idx, and one that writes a destination
Read = Callable[[Machine, LaneSet], Any]
Write = Callable[[Machine, LaneSet, Any], None]


def itype(instr: Instr) -> str:
    for p in reversed(instr.parts):
        if p in DT:
            return p
    raise UnsupportedInstruction(f"no operand type in {instr.opcode!r}")


def dtype(t: str) -> np.dtype:
    return np.dtype(DT[t])


def imm_value(value: int | float, dt: np.dtype) -> Any:
    if dt.kind == "b":
        return np.bool_(value)
    if isinstance(value, float) and dt.kind in "iu":  # a float's bits moved into an integer register
        raw = struct.pack("<d" if dt.itemsize == 8 else "<f", value)
        return np.frombuffer(raw, UINT[len(raw)])[0].astype(dt)
    if dt.kind in "iu":
        return np.array(int(value) & ((1 << (8 * dt.itemsize)) - 1), UINT[dt.itemsize]).view(dt)[()]
    return dt.type(value)


def _convert(storage: np.dtype, dt: np.dtype) -> Callable[[np.ndarray], np.ndarray] | None:
    """How to read a register stored as `storage` as the instruction's type `dt`."""
    if storage == dt:
        return None
    if storage.kind == "b" or dt.kind == "b":
        return lambda a: a.astype(dt)
    if storage.itemsize == dt.itemsize:
        return lambda a: a.view(dt)
    if dt.kind == "f":
        u = UINT[dt.itemsize]
        return lambda a: a.astype(u).view(dt)
    if dt.itemsize < storage.itemsize:
        return lambda a: a.astype(dt)
    src = SINT[storage.itemsize] if dt.kind == "i" else UINT[storage.itemsize]
    return lambda a: a.view(src).astype(dt)


def reader(ctx: Builder, op: tuple, dt: np.dtype) -> Read:
    """How to read operand `op` (a register, an immediate, a symbol's address) as the type dt."""
    kind = op[0]
    if kind == "reg":
        name = ctx.reg(op[1])
        if name in CLOCKS:
            return lambda m, idx: dt.type(m.steps)
        storage = ctx.storage(name)
        conv = _convert(storage, dt)
        if op[2]:  # !%p
            return lambda m, idx: ~(m.registers[name] if idx is None else m.registers[name][idx])
        if conv is None:
            return lambda m, idx: m.registers[name] if idx is None else m.registers[name][idx]
        return lambda m, idx: conv(m.registers[name] if idx is None else m.registers[name][idx])
    if kind == "imm":
        v = imm_value(op[1], dt)
        return lambda m, idx: v
    if kind == "sym":
        v = imm_value(32 if op[1] == "WARP_SZ" else ctx.symbol_address(op[1]), dt)
        return lambda m, idx: v
    if kind == "vec" and len(op[1]) == 1:
        return reader(ctx, op[1][0], dt)
    raise UnsupportedInstruction(f"cannot read operand {op!r}")


def writer(ctx: Names, op: tuple) -> Write:
    """How to write a value to the register `op`, stored as its declared width."""
    if op[0] == "vec" and len(op[1]) == 1:
        return writer(ctx, op[1][0])
    if op[0] != "reg":
        raise UnsupportedInstruction(f"cannot write to operand {op!r}")
    name = ctx.reg(op[1])
    if name == "_":  # the "don't care" sink
        return lambda m, idx, v: None
    storage = ctx.storage(name)

    def write(m: Machine, idx: LaneSet, v: Any) -> None:
        v = to_storage(v, storage)
        if idx is None:
            np.copyto(m.registers[name], v, casting="unsafe")
        else:
            m.registers[name][idx] = v

    return write


def to_storage(v: Any, storage: np.dtype) -> Any:
    if not isinstance(v, (np.ndarray, np.generic)):
        v = np.asarray(v)
    if storage.kind == "b" or v.dtype == storage:
        return v
    if v.dtype.kind == "f" or v.dtype.itemsize == storage.itemsize:
        if v.dtype.itemsize == storage.itemsize:
            return v.view(storage)
        return v.view(UINT[v.dtype.itemsize])
    return v


# the first part of an opcode (add, ld, shfl, ...) -> the function that builds its instructions
BUILDERS: dict[str, Callable[[Instr, Builder], Op]] = {}
Build = Callable[[Instr, Builder], Op]


def builds(*names: str) -> Callable[[Build], Build]:
    """Register the decorated builder for the opcodes `names`."""

    def deco(f: Build) -> Build:
        for n in names:
            BUILDERS[n] = f
        return f

    return deco


def build(instr: Instr, ctx: Builder) -> Op:
    """The instruction built by its opcode's builder, with its guard predicate (@%p) resolved."""
    b = BUILDERS.get(instr.parts[0])
    if b is None:
        raise UnsupportedInstruction(
            f"the emulator does not implement the PTX instruction '{instr.opcode}' "
            f"(PTX line {instr.ptx_line}: {instr.text})"
        )
    op = b(instr, ctx)
    if instr.guard is not None:
        op.guard = (ctx.reg(instr.guard[0]), instr.guard[1])
    return op


def simple(instr: Instr, ctx: Builder, fn: Callable[..., Any], types: list[np.dtype] | None = None) -> Op:
    """dst = fn(src...) with every source read as the instruction's type."""
    dt = dtype(itype(instr))
    dst, *srcs = instr.operands
    w = writer(ctx, dst)
    rs = [reader(ctx, s, (types[i] if types else dt)) for i, s in enumerate(srcs)]
    if len(rs) == 1:
        r0 = rs[0]
        return Op(instr, lambda m, idx: w(m, idx, fn(r0(m, idx))))
    if len(rs) == 2:
        r0, r1 = rs
        return Op(instr, lambda m, idx: w(m, idx, fn(r0(m, idx), r1(m, idx))))
    return Op(instr, lambda m, idx: w(m, idx, fn(*[r(m, idx) for r in rs])))


def arr(x: Any) -> np.ndarray:
    """x as an array (a read may give a NumPy scalar: an immediate, or one lane)."""
    return np.asarray(x)


def select(c: Any, a: Any, b: Any) -> np.ndarray:
    return np.asarray(np.where(c, a, b))
