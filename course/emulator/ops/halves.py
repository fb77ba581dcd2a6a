"""Half precision: f16, bf16 and their packed pairs f16x2, bf16x2 (PTX ISA, "Half Precision
Floating-Point Instructions").

A 16-bit float lives in a register as its bits (uint16, or two in a uint32 for the x2 types, the
first lane in the low half). Each lane is decoded exactly to float64, the operation is done
exactly (floating.exact_*), and the result is rounded once to 16 bits: as the GPU does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import UnsupportedInstruction
from ..ptx import Instr
from .contract import Builder, Op
from .floating import exact_add, exact_fma, exact_mul, exact_sub, round_exact, rounding_mode
from .operands import itype, simple

HALVES = ("f16", "bf16", "f16x2", "bf16x2")


F16_NAN, BF16_NAN = 0x7FFF, 0x7FFF  # the canonical NaNs the GPU writes (CUDART_NAN_FP16, _BF16)


def half_fmt(t: str) -> str:
    return "bf16" if t.startswith("bf16") else "f16"


def half_to_f64(bits: Any, fmt: str) -> np.ndarray:
    """16-bit float bits (uint16) -> exact float64 values."""
    b = np.ascontiguousarray(np.asarray(bits).astype(np.uint16))
    if fmt == "f16":
        return b.view(np.float16).astype(np.float64)
    return (b.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)


def f64_to_half(hi: Any, err: Any, fmt: str, mode: str = "rn") -> np.ndarray:
    """The exact value hi + err rounded once to f16 or bf16 in `mode`; bits as uint16."""
    hi = np.asarray(hi, np.float64)
    if fmt == "f16":
        r = round_exact(hi, err, mode, np.dtype(np.float16))
        return np.where(np.isnan(hi), np.uint16(F16_NAN), np.asarray(r, np.float16).view(np.uint16)).astype(
            np.uint16
        )
    # bfloat16: round to odd at float32 (16 spare bits keep every later rounding exact), then cut
    finite = np.isfinite(hi)
    r32 = np.asarray(round_exact(hi, err, "rz", np.dtype(np.float32)), np.float32)
    errv = np.where(finite, np.broadcast_to(np.asarray(err, np.float64), hi.shape), 0.0)
    inexact = finite & (((r32.astype(np.float64) - hi) - errv) != 0)
    u = np.ascontiguousarray(r32).view(np.uint32) | inexact.astype(np.uint32)
    top, low = u >> np.uint32(16), u & np.uint32(0xFFFF)
    neg = (u >> np.uint32(31)) == 1
    if mode == "rn":
        up = (low > 0x8000) | ((low == 0x8000) & ((top & np.uint32(1)) == 1))
    elif mode == "rp":
        up = (low != 0) & ~neg
    elif mode == "rm":
        up = (low != 0) & neg
    else:
        up = np.zeros(u.shape, bool)
    out = top + up.astype(np.uint32)
    return np.where(np.isnan(hi), np.uint32(BF16_NAN), out).astype(np.uint16)


def lanes16(x: Any, t: str) -> list[np.ndarray]:
    x = np.asarray(x)
    if t.endswith("x2"):
        x = x.astype(np.uint32)
        return [(x & np.uint32(0xFFFF)).astype(np.uint16), (x >> np.uint32(16)).astype(np.uint16)]
    return [x.astype(np.uint16)]


def pack16(lanes: list[np.ndarray], t: str) -> np.ndarray:
    if t.endswith("x2"):
        lo, hi = np.broadcast_arrays(*lanes)
        return lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(16))
    return np.asarray(lanes[0]).astype(np.uint16)


def storage16(t: str) -> np.dtype:
    return np.dtype(np.uint32 if t.endswith("x2") else np.uint16)


def half_flush(v: np.ndarray, fmt: str) -> np.ndarray:
    tiny = 2.0**-14 if fmt == "f16" else 2.0**-126
    return np.where((np.abs(v) < tiny) & (v != 0), np.copysign(0.0, v), v)


def half_finish(bits: np.ndarray, fmt: str, *, ftz: bool, sat: bool, relu: bool,
                 satfinite: bool = False) -> np.ndarray:  # fmt: skip
    """.ftz, .sat, .relu and .satfinite applied to rounded 16-bit results."""
    nan = F16_NAN if fmt == "f16" else BF16_NAN
    v = half_to_f64(bits, fmt)
    if ftz:
        tiny = 2.0**-14 if fmt == "f16" else 2.0**-126
        bits = np.where((np.abs(v) < tiny) & (v != 0), bits & np.uint16(0x8000), bits).astype(np.uint16)
    if sat:  # clamp to [0, 1]; NaN -> 0
        one = 0x3C00 if fmt == "f16" else 0x3F80
        bits = np.where(np.isnan(v) | (v <= 0), 0, np.where(v >= 1, one, bits)).astype(np.uint16)
    if relu:  # negative -> +0, NaN -> canonical NaN
        bits = np.where(np.isnan(v), nan, np.where(v <= 0, 0, bits)).astype(np.uint16)
    if satfinite:
        big = 0x7BFF if fmt == "f16" else 0x7F7F
        bits = np.where(np.isinf(v), np.where(v > 0, big, big | 0x8000), bits).astype(np.uint16)
    return bits


_EXACT_OPS: dict[str, Callable[..., tuple[np.ndarray, np.ndarray]]] = {
    "add": exact_add,
    "sub": exact_sub,
    "mul": exact_mul,
    "fma": exact_fma,
    "mad": exact_fma,
}


def half_arith(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Half Precision Floating-Point Instructions: add, sub, mul, fma, neg, abs, min, max,
    ex2, tanh (and the other approximations) on f16, bf16 and packed pairs, lane by lane."""
    op, t = instr.parts[0], itype(instr)
    fmt = half_fmt(t)
    mode = rounding_mode(instr)
    flags = {"ftz": "ftz" in instr.parts, "sat": "sat" in instr.parts, "relu": "relu" in instr.parts}

    def lane(*xs: np.ndarray) -> np.ndarray:
        vals = [half_to_f64(x, fmt) for x in xs]
        if flags["ftz"]:
            vals = [half_flush(v, fmt) for v in vals]
        if op in _EXACT_OPS:
            hi, err = _EXACT_OPS[op](*np.broadcast_arrays(*vals))
            return half_finish(f64_to_half(hi, err, fmt, mode), fmt, **flags)
        if op in ("min", "max"):
            return _half_minmax(instr, op, xs, vals, fmt, flags["ftz"])
        if op == "neg":
            return half_finish((np.asarray(xs[0]) ^ np.uint16(0x8000)).astype(np.uint16), fmt, **flags)
        if op == "abs":
            return half_finish((np.asarray(xs[0]) & np.uint16(0x7FFF)).astype(np.uint16), fmt, **flags)
        if op in ("ex2", "tanh", "rcp", "sqrt", "rsqrt", "lg2", "sin", "cos"):
            fns: dict[str, Callable[[np.ndarray], np.ndarray]] = {"ex2": np.exp2, "tanh": np.tanh, "rcp": lambda a: 1 / a, "sqrt": np.sqrt,
                 "rsqrt": lambda a: 1 / np.sqrt(a), "lg2": np.log2, "sin": np.sin, "cos": np.cos}  # fmt: skip
            r = fns[op](vals[0])  # approximate on the GPU: here the exact value rounded once
            return half_finish(f64_to_half(r, 0.0, fmt, "rn"), fmt, **flags)
        raise UnsupportedInstruction(f"the emulator does not implement '{instr.opcode}'")

    def f(*xs: Any) -> Any:
        lanes = [lanes16(x, t) for x in xs]
        out = [lane(*[ls[k] for ls in lanes]) for k in range(len(lanes[0]))]
        with np.errstate(all="ignore"):
            return pack16(out, t)

    return simple(instr, ctx, f, [storage16(t)] * (len(instr.operands) - 1))


def _half_minmax(instr: Instr, op: str, xs: tuple, vals: list[np.ndarray], fmt: str, ftz: bool) -> np.ndarray:
    """PTX min/max on 16-bit floats: a NaN loses to a number (.NaN: wins), -0 < +0; .xorsign.abs
    compares magnitudes and gives the result the xor of the signs."""
    nan = F16_NAN if fmt == "f16" else BF16_NAN
    a, b = np.broadcast_arrays(*[np.asarray(x).astype(np.uint16) for x in xs[:2]])
    va, vb = np.broadcast_arrays(*vals[:2])
    xorsign = "xorsign" in instr.parts
    if xorsign:
        sign = (a ^ b) & np.uint16(0x8000)
        a, b = a & np.uint16(0x7FFF), b & np.uint16(0x7FFF)
        va, vb = np.abs(va), np.abs(vb)
    # order by value, then by sign bit for zeros (-0 < +0)
    a_less = (va < vb) | ((va == vb) & ((a & 0x8000) > (b & 0x8000)))
    pick_a = (a_less if op == "min" else ~a_less) | (a == b)
    out = np.where(pick_a, a, b)
    na, nb = np.isnan(va), np.isnan(vb)
    if "NaN" in instr.parts:
        out = np.where(na | nb, nan, out)
    else:
        out = np.where(na & nb, nan, np.where(na, b, np.where(nb, a, out)))
    if xorsign:
        out = np.where(np.isnan(half_to_f64(out, fmt)), out, out | sign)
    if ftz:
        out = half_finish(out.astype(np.uint16), fmt, ftz=True, sat=False, relu=False)
    return out.astype(np.uint16)
