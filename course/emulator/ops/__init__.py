"""What each PTX instruction does, as closures over NumPy arrays of threads.

`build(instr, ctx)` turns one parsed instruction into an `Op` whose `run(m, idx)` applies it to
the lanes `idx` of the machine `m` (`contract.py` states what both sides may ask of each other).
Control flow, barriers and warp collectives set `Op.kind` so the machine knows how to move the
program counter.

The builders are grouped as the PTX ISA groups its instructions (section titles of "Instructions"
in NVIDIA's PTX ISA, docs.nvidia.com/cuda/parallel-thread-execution; their numbers change between
versions, the titles do not):

    operands.py     registers, immediates, symbols; the table of builders   Instruction Operands
    arith.py        add, sub, ... sqrt: to integer, floating or halves by type
    integer.py      integer arithmetic, carries, bits, shifts, dp4a, prmt   Integer Arithmetic, Logic and Shift
    floating.py     f32/f64 arithmetic and *all* float rounding             Floating-Point
    halves.py       f16, bf16, f16x2, bf16x2 arithmetic                     Half Precision Floating-Point
    compare.py      set, setp, selp, slct                                   Comparison and Selection
    conversions.py  mov, cvt                                                Data Movement and Conversion
    memory.py       ld, st, atom, red (every atomic), cvta, fence           Data Movement; Parallel Synchronization
    control.py      bra, call, ret, exit, trap                              Control Flow
    warp.py         bar.sync, shfl.sync, vote, match, redux, activemask     Parallel Synchronization and Communication

Each builder's docstring names the section it implements.
"""

from __future__ import annotations

from . import arith, compare, control, conversions, floating, halves, integer, memory, operands, warp
from .contract import Builder, LaneSet, Machine, Names, Op, Run
from .memory import ATOMIC_OPS, apply_atomic
from .operands import BUILDERS, CLOCKS, UINT, build, writer
from .warp import warp_reduce

# every family whose builders fill BUILDERS (importing one registers its instructions)
FAMILIES = (operands, arith, integer, floating, halves, compare, conversions, memory, control, warp)

__all__ = [
    "ATOMIC_OPS", "BUILDERS", "CLOCKS", "FAMILIES", "UINT", "Builder", "LaneSet", "Machine", "Names", "Op",
    "Run", "apply_atomic", "build", "warp_reduce", "writer",
]  # fmt: skip
