"""Arithmetic by operand type: one builder per PTX name that several type families share.

`add.s32` is an integer instruction, `add.f32` a floating-point one and `add.f16x2` a half
precision one: three sections of the PTX ISA under one opcode. The builders here only read the
type and hand the instruction to its family (integer.py, floating.py, halves.py).
"""

from __future__ import annotations

from ..ptx import Instr
from .contract import Builder, Op
from .floating import float_arith, float_unary
from .halves import HALVES, half_arith
from .integer import carry_op, int_arith, int_unary
from .operands import builds, dtype, itype


@builds("add", "sub", "mul", "mad", "fma", "div", "rem", "min", "max")
def _arith(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Integer Arithmetic, Extended-Precision Integer Arithmetic (.cc), Floating-Point and
    Half Precision Floating-Point Instructions: add, sub, mul, mad, fma, div, rem, min, max."""
    t = itype(instr)
    if "cc" in instr.parts:
        return carry_op(instr, ctx)
    if t in HALVES:
        return half_arith(instr, ctx)
    if dtype(t).kind == "f" and not ("relu" in instr.parts and instr.parts[0] in ("min", "max")):
        return float_arith(instr, ctx)
    return int_arith(instr, ctx)


@builds("abs", "neg", "not", "cnot", "popc", "clz", "brev", "bfind",
        "sqrt", "rsqrt", "rcp", "sin", "cos", "lg2", "ex2", "tanh")  # fmt: skip
def _unary(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Integer Arithmetic, Logic and Shift, Floating-Point and Half Precision
    Floating-Point Instructions: the one-operand instructions."""
    t = itype(instr)
    if t in HALVES:
        return half_arith(instr, ctx)
    if dtype(t).kind == "f":
        return float_unary(instr, ctx)
    return int_unary(instr, ctx)
