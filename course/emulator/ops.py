"""What each PTX instruction does, as closures over NumPy arrays of threads.

`build(instr, ctx)` turns one parsed instruction into `run(m, idx)`, which applies it
to the threads `idx` (an index array, a slice of one run of threads, or None for every
thread of the wave) of the machine `m`. Control flow, barriers and warp collectives set `kind`
so the scheduler knows how to move the program counter.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import BarrierError, KernelFault, UnsupportedInstruction
from .ptx import Instr

DT: dict[str, Any] = {
    "u8": np.uint8, "s8": np.int8, "b8": np.uint8, "u16": np.uint16, "s16": np.int16, "b16": np.uint16,
    "f16": np.float16, "bf16": np.uint16, "u32": np.uint32, "s32": np.int32, "b32": np.uint32,
    "f32": np.float32, "f16x2": np.uint32, "bf16x2": np.uint32, "u64": np.uint64, "s64": np.int64,
    "b64": np.uint64, "f64": np.float64, "pred": np.bool_, "u16x2": np.uint32, "s16x2": np.uint32,
}  # fmt: skip
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
SINT = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
SPACES = ("global", "shared", "local", "const", "param")
CLOCKS = {"%clock", "%clock64", "%globaltimer", "%clock_hi"}

Run = Callable[[Any, Any], None]


class Op:
    """A built instruction: `run(m, idx)` plus how it moves the program counter."""

    __slots__ = ("guard", "instr", "kind", "run", "target")

    def __init__(self, instr: Instr, run: Run, kind: str = "normal", target: int = -1):
        self.instr = instr
        self.run = run
        self.kind = kind  # normal, branch, exit, ret, call, bar
        self.target = target
        self.guard: tuple[str, bool] | None = None  # the predicate register, resolved; negated?


def itype(instr: Instr) -> str:
    for p in reversed(instr.parts):
        if p in DT:
            return p
    raise UnsupportedInstruction(f"no operand type in {instr.opcode!r}")


def dtype(t: str) -> np.dtype:
    return np.dtype(DT[t])


# ---------------------------------------------------------------- operands


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


def reader(ctx: Any, op: tuple, dt: np.dtype) -> Callable[[Any, Any], Any]:
    kind = op[0]
    if kind == "reg":
        name = ctx.reg(op[1])
        if name in CLOCKS:
            return lambda m, idx: dt.type(m.steps)
        storage = ctx.storage(name)
        conv = _convert(storage, dt)
        if op[2]:  # !%p
            return lambda m, idx: ~(m.R[name] if idx is None else m.R[name][idx])
        if conv is None:
            return lambda m, idx: m.R[name] if idx is None else m.R[name][idx]
        return lambda m, idx: conv(m.R[name] if idx is None else m.R[name][idx])
    if kind == "imm":
        v = imm_value(op[1], dt)
        return lambda m, idx: v
    if kind == "sym":
        v = imm_value(32 if op[1] == "WARP_SZ" else ctx.symbol_address(op[1]), dt)
        return lambda m, idx: v
    if kind == "vec" and len(op[1]) == 1:
        return reader(ctx, op[1][0], dt)
    raise UnsupportedInstruction(f"cannot read operand {op!r}")


def writer(ctx: Any, op: tuple) -> Callable[[Any, Any, Any], None]:
    if op[0] == "vec" and len(op[1]) == 1:
        return writer(ctx, op[1][0])
    if op[0] != "reg":
        raise UnsupportedInstruction(f"cannot write to operand {op!r}")
    name = ctx.reg(op[1])
    if name == "_":  # the "don't care" sink
        return lambda m, idx, v: None
    storage = ctx.storage(name)

    def write(m: Any, idx: Any, v: Any) -> None:
        v = to_storage(v, storage)
        if idx is None:
            np.copyto(m.R[name], v, casting="unsafe")
        else:
            m.R[name][idx] = v

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


# ---------------------------------------------------------------- builders

BUILDERS: dict[str, Callable[[Instr, Any], Op]] = {}


def builds(*names: str) -> Callable:
    def deco(f: Callable) -> Callable:
        for n in names:
            BUILDERS[n] = f
        return f

    return deco


def build(instr: Instr, ctx: Any) -> Op:
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


def simple(instr: Instr, ctx: Any, fn: Callable[..., Any], types: list[np.dtype] | None = None) -> Op:
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


def _arr(x: Any) -> np.ndarray:
    return np.asarray(x)


def _select(c: Any, a: Any, b: Any) -> np.ndarray:
    return np.asarray(np.where(c, a, b))


# -- floating point details


FLT_MIN = np.float32(1.1754944e-38)  # the smallest normal float32, 2**-126


def _ftz(x: Any) -> Any:
    x = _arr(x)
    if x.dtype == np.float32:
        return np.where(np.abs(x) < FLT_MIN, np.copysign(np.float32(0), x), x)
    return x


def _flushes(exact: np.ndarray) -> np.ndarray:
    """Where an .ftz result becomes zero: the GPU rounds to 24 bits as if the exponent had no
    lower limit and flushes what is then below 2**-126 (it never rounds up onto 2**-126 from
    the subnormal grid, as float32 rounding would)."""
    m, e = np.frexp(np.asarray(exact, np.float64))
    rounded = np.ldexp(np.round(m * 2.0**24) / 2.0**24, e)
    return np.isfinite(rounded) & (rounded != 0) & (np.abs(rounded) < float(FLT_MIN))


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s, t with s = fl(a + b) and s + t == a + b exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p, e with p = fl(a * b) and p + e == a * b exactly (Dekker's split)."""
    p = a * b
    split = 134217729.0  # 2**27 + 1 cuts a double into two 26-bit halves
    ah = a * split
    ah = ah - (ah - a)
    bh = b * split
    bh = bh - (bh - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _round_exact(hi: np.ndarray, err: Any, mode: str, dt: np.dtype) -> np.ndarray:
    """Round the exact value hi + err (float64 pair) to `dt` in rounding mode `mode`."""
    hi = np.asarray(hi, np.float64)
    finite = np.isfinite(hi)  # infinities and NaNs round to themselves
    err = np.where(finite & np.isfinite(err), err, 0.0)
    r = hi.astype(dt)
    d = np.where(finite, (r.astype(np.float64) - hi) - err, 0.0)  # the sign of (r - exact)
    exact_sign = np.where(hi != 0, np.sign(hi), np.sign(err))
    if mode == "rn":  # hi itself may be a tie that err, however small, breaks
        other = np.nextafter(r, np.where(r.astype(np.float64) > hi, dt.type(-np.inf), dt.type(np.inf)))
        dr = r.astype(np.float64) - hi  # both exact: r and other are hi's neighbours
        do = other.astype(np.float64) - hi
        tie = np.isfinite(dr) & np.isfinite(do) & (dr == -do) & (dr != 0)
        return np.where(tie & (err != 0) & (np.sign(err) == np.sign(do)), other, r)
    if mode == "rm":
        step = d > 0
        toward = dt.type(-np.inf)
    elif mode == "rp":
        step = d < 0
        toward = dt.type(np.inf)
    else:  # rz
        step = d * exact_sign > 0
        toward = dt.type(0)
    return np.where(step & finite, np.nextafter(r, toward), r)


def _exact_add(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _two_sum(a, b)


def _exact_sub(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _two_sum(a, -b)


def _exact_mul(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p, e = _two_prod(a, b)
    lost = (p == 0) & (a != 0) & (b != 0)  # underflow: only the sign of the lost product is left
    tiny = np.finfo(np.float64).smallest_subnormal
    return p, np.where(lost, np.sign(a) * np.sign(b) * tiny, e)


def _exact_fma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p, e = _two_prod(a, b)
    s, t = _two_sum(p, c)
    rest, rest_err = _two_sum(t, e)
    hi, lo = _two_sum(s, rest)  # renormalised: hi is the nearest double to the exact value
    lo = lo + rest_err
    keep = ~np.isfinite(s) | (rest == 0)  # infinities, and the sign of an exact zero (-0 + -0)
    hi, lo = np.where(keep, s, hi), np.where(keep, 0.0, lo)
    # Dekker's split overflows for huge factors: IEEE's own answer for infinities, NaNs and zeros
    # (a finite product plus an infinite c is c; finite huge cases are redone exactly later)
    bad = ~np.isfinite(hi) | ~np.isfinite(lo)
    if bad.any():
        with np.errstate(all="ignore"):
            special = a * b + c
        special = np.where(np.isfinite(a) & np.isfinite(b) & np.isinf(c), c, special)
        hi, lo = np.where(bad, special, hi), np.where(bad, 0.0, lo)
    return hi, lo


def _exact_div(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    q = a / b
    return q, _fma64(-q, b, a) / b  # the remainder says which side of q the quotient lies


# div.approx{.ftz}.f32 (__fdividef) is a * (1/b): for 2^126 < |b| < 2^128 the reciprocal is below
# the smallest normal and flushes, so the quotient is a zero with the sign of a*b, or NaN where a is
# infinite. The CUDA C++ Programming Guide ("Intrinsic Functions"): "for 2^126 < |y| < 2^128,
# __fdividef(x,y) delivers a result of zero ... if x is infinity, __fdividef(x,y) delivers a NaN (as
# a result of multiplying infinity by zero)"; libdevice's __nv_fast_fdividef says the same, and an
# H200 gives -0.0 for __fdividef(-a, 2^127). Elsewhere the correctly rounded quotient stands in (the
# documented bound is 2 ulp for |b| in [2^-126, 2^126]). div.full.f32 scales its operands to keep its
# 2 ulp bound "across the full range of inputs" (PTX ISA), so it has no such range: plain quotient.
_DIV_APPROX_FLUSH = 2.0**126


def _div_approx(f: Callable[..., Any]) -> Callable[..., Any]:
    def g(a: Any, b: Any) -> Any:
        a, b = _arr(a), _arr(b)
        q = _arr(f(a, b))
        return np.where(np.abs(b) > _DIV_APPROX_FLUSH, a * np.copysign(q.dtype.type(0), b), q).astype(q.dtype)

    return g


def _div_approx_exact(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    hi, err = _exact_div(a, b)
    flushed = np.abs(b) > _DIV_APPROX_FLUSH
    return np.where(flushed, a * np.copysign(0.0, b), hi), np.where(flushed, 0.0, err)


def _exact_sqrt(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    q = np.sqrt(a)
    return q, _fma64(-q, q, a) / (2 * q)


def _exact_rcp(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _exact_div(np.ones_like(a), a)


def _rounding(instr: Instr) -> str:
    for m in ("rn", "rz", "rm", "rp"):
        if m in instr.parts:
            return m
    return "rn"


def float_op(
    instr: Instr,
    ctx: Any,
    fn: Callable[..., Any],
    exact: Callable[..., tuple[np.ndarray, np.ndarray]] | None = None,
) -> Op:
    """A float instruction with rounding modifiers, .ftz and .sat handled in one place.

    `exact` gives the result as a float64 pair hi + err that is exact (or exact in sign of
    err), so that .rz/.rm/.rp and float32 fma round the true value, not a rounded one.
    """
    dt = dtype(itype(instr))
    mode = _rounding(instr)
    ftz = "ftz" in instr.parts
    sat = "sat" in instr.parts
    directed = exact is not None and (mode != "rn" or (instr.parts[0] in ("fma", "mad") and dt == np.float32))

    flush32 = ftz and dt == np.float32
    # Where a float32 .ftz sum, difference or product could flush, float64 holds it exactly, so
    # round-to-nearest needs no exact pair (the common add.ftz.f32 of fast-math code stays cheap).
    # A sum of normal floats below 2**-126 is exact: for add and sub the rounded result decides
    # (with .sat, which clamps first, the exact value's sign picks the zero, as before).
    op = instr.parts[0]
    exact_path = directed or (flush32 and exact is not None and op not in ("add", "sub", "mul"))
    sum_only = op in ("add", "sub") and not sat

    def f(*xs: Any) -> Any:
        hi = None
        if ftz:
            xs = tuple(_ftz(x) for x in xs)
        if exact_path:
            assert exact is not None
            x64 = [_arr(x).astype(np.float64) for x in xs]
            hi, err = exact(*x64)
            r = _round_exact(hi, err, mode, dt)
            r = _exact_where_risky(op, x64, hi, r, mode, dt)
        else:
            r = _arr(fn(*xs)).astype(dt, copy=False)
            if flush32 and not sum_only:
                hi = _arr(fn(*[_arr(x).astype(np.float64) for x in xs]))
        if sat:  # NaN -> 0, and -0 + 0 is +0 as on the GPU
            r = (np.where(np.isnan(r), dt.type(0), np.clip(r, 0, 1)) + dt.type(0)).astype(dt)
        if flush32:
            r = _ftz(r) if hi is None else np.where(_flushes(hi), np.copysign(np.float32(0), hi), _ftz(r))
            r = r.astype(dt, copy=False)
        return r

    return simple(instr, ctx, f)


def _fma(a: Any, b: Any, c: Any) -> Any:
    a, b, c = _arr(a), _arr(b), _arr(c)
    if a.dtype == np.float32:  # exact product in float64, one rounding of the sum (double rounding is rare)
        return (a.astype(np.float64) * b + c).astype(np.float32)
    return _fma64(a, b, c)


def _fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a*b + c with one rounding: error-free transformations, exact fractions where they fail."""
    a, b, c = np.broadcast_arrays(
        np.asarray(a, np.float64), np.asarray(b, np.float64), np.asarray(c, np.float64)
    )
    p, e = _two_prod(a, b)
    r, t = _two_sum(p, c)
    rest, rest_err = _two_sum(t, e)
    fused = r + rest  # one rounding of the exact value, unless t + e itself was rounded
    finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    # Dekker's split is exact only away from underflow and overflow; zeros need their IEEE sign
    big = 2.0**990
    risky = finite & (
        (np.abs(p) < 2.0**-960) | (np.abs(p) > big) | (np.abs(a) > big) | (np.abs(b) > big)
        | (np.abs(c) > big) | (fused == 0) | ~np.isfinite(fused) | (rest_err != 0)
    )  # fmt: skip
    with np.errstate(all="ignore"):
        special = a * b + c
    # a finite product that overflows float64 plus an infinite c is c (the product is exact)
    special = np.where(np.isfinite(a) & np.isfinite(b) & np.isinf(c), c, special)
    out = np.where(finite, fused, special)
    for k in zip(*np.nonzero(risky)):
        out[k] = _fma_exact(float(a[k]), float(b[k]), float(c[k]))
    return out


def _fma_exact(a: float, b: float, c: float) -> float:
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:  # IEEE: -0 only when both the product and c are negative zeros or of that sign
        return -0.0 if math.copysign(1, a) * math.copysign(1, b) < 0 and math.copysign(1, c) < 0 else 0.0
    try:
        return float(exact)  # correctly rounded, subnormals included
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def _int_sat(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    info = np.iinfo(dt)
    return np.clip(x, info.min, info.max).astype(dt)


@builds("add", "sub", "mul", "mad", "fma", "div", "rem", "min", "max")
def _arith(instr: Instr, ctx: Any) -> Op:
    op, t = instr.parts[0], itype(instr)
    dt = dtype(t)
    f: Callable[..., Any]
    if "cc" in instr.parts:
        return _carry_op(instr, ctx)
    if t in HALVES:
        return _half_arith(instr, ctx)
    if t in ("u16x2", "s16x2"):
        return _simd16(instr, ctx)
    if "relu" in instr.parts and op in ("min", "max"):
        return _int_relu(instr, ctx)
    if dt.kind == "f":
        if op in ("add", "sub", "mul", "div"):
            f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
            ex = {"add": _exact_add, "sub": _exact_sub, "mul": _exact_mul, "div": _exact_div}[op]
            if op == "div" and "approx" in instr.parts:
                f, ex = _div_approx(f), _div_approx_exact
            return float_op(instr, ctx, f, ex)
        if op in ("fma", "mad"):
            return float_op(instr, ctx, _fma, _exact_fma)
        if op in ("min", "max"):
            nan = "NaN" in instr.parts  # .NaN propagates NaNs; the default returns the other operand
            f = {(0, 0): np.fmax, (0, 1): np.maximum, (1, 0): np.fmin, (1, 1): np.minimum}[(op == "min", nan)]
            return float_op(instr, ctx, f)
        raise UnsupportedInstruction(f"{instr.opcode} on floats")
    wide = "wide" in instr.parts
    hi = "hi" in instr.parts
    sat = "sat" in instr.parts
    if op in ("mul", "mad") and (wide or hi):
        return _mul_wide_hi(instr, ctx, dt, wide, op == "mad")
    if op == "add":
        f = (lambda a, b: _int_sat(_arr(a).astype(np.int64) + b, dt)) if sat else np.add
    elif op == "sub":
        f = (lambda a, b: _int_sat(_arr(a).astype(np.int64) - b, dt)) if sat else np.subtract
    elif op == "mul":
        f = np.multiply
    elif op == "mad":
        f = (
            (lambda a, b, c: _int_sat(_arr(a).astype(np.int64) * b + c, dt))
            if sat
            else (lambda a, b, c: a * b + c)
        )
    elif op == "div":
        f = _idiv
    elif op == "rem":
        f = _irem
    elif op == "min":
        f = np.minimum
    else:
        f = np.maximum
    return simple(instr, ctx, lambda *xs: _arr(f(*xs)).astype(dt, copy=False))


def _idiv(a: Any, b: Any) -> Any:
    a, b = np.broadcast_arrays(_arr(a), _arr(b))
    zero = b == 0
    bs = np.where(zero, 1, b)
    if a.dtype.kind == "u":
        return np.where(zero, a.dtype.type(-1 & np.iinfo(a.dtype).max), a // bs)
    q = np.trunc(np.divide(a, bs, dtype=np.float64)) if a.dtype.itemsize <= 4 else None
    if q is not None:
        return np.where(zero, a.dtype.type(-1), q.astype(np.int64).astype(a.dtype))
    q2 = a // bs
    fix = (q2 * bs != a) & ((a < 0) != (bs < 0))
    return np.where(zero, a.dtype.type(-1), q2 + fix.astype(a.dtype))


def _irem(a: Any, b: Any) -> Any:
    a, b = np.broadcast_arrays(_arr(a), _arr(b))
    zero = b == 0
    bs = np.where(zero, 1, b)
    r = np.fmod(a, bs) if a.dtype.kind == "i" else a % bs
    return np.where(zero, a, r)


def _mulhi_u64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    al, ah, bl, bh = a & m32, a >> s32, b & m32, b >> s32
    ll, lh, hl, hh = al * bl, al * bh, ah * bl, ah * bh
    mid = (ll >> s32) + (lh & m32) + (hl & m32)
    return hh + (lh >> s32) + (hl >> s32) + (mid >> s32)


def _mul_wide_hi(instr: Instr, ctx: Any, dt: np.dtype, wide: bool, mad: bool) -> Op:
    size = dt.itemsize
    signed = dt.kind == "i"
    if wide:
        out = (SINT if signed else UINT)[size * 2]

        def f(a: Any, b: Any, *c: Any) -> Any:
            r = _arr(a).astype(out) * _arr(b).astype(out)
            return r + c[0] if c else r

        types = [dt, dt, np.dtype(out)] if mad else None
        dst, *srcs = instr.operands
        w = writer(ctx, dst)
        rs = [reader(ctx, s, types[i] if types else dt) for i, s in enumerate(srcs)]
        return Op(instr, lambda m, idx: w(m, idx, f(*[r(m, idx) for r in rs])))
    if size <= 4:
        big = np.int64 if signed else np.uint64

        def f(a: Any, b: Any, *c: Any) -> Any:
            r = ((_arr(a).astype(big) * _arr(b).astype(big)) >> (8 * size)).astype(dt)
            return r + c[0] if c else r

        return simple(instr, ctx, f)

    def f64(a: Any, b: Any, *c: Any) -> Any:
        ua, ub = np.broadcast_arrays(
            _arr(a).view(np.uint64) if _arr(a).ndim else _arr(a).astype(np.uint64),
            _arr(b).view(np.uint64) if _arr(b).ndim else _arr(b).astype(np.uint64),
        )
        h = _mulhi_u64(ua, ub)
        if signed:
            h = (
                h
                - np.where(_arr(a) < 0, ub, 0).astype(np.uint64)
                - np.where(_arr(b) < 0, ua, 0).astype(np.uint64)
            )
        r = h.view(dt) if h.ndim else h.astype(dt)
        return r + c[0] if c else r

    return simple(instr, ctx, f64)


def _carry_add(a: np.ndarray, b: np.ndarray, cin: Any) -> tuple[np.ndarray, np.ndarray]:
    """a + b + cin with wrap-around, and the carry out (unsigned arrays of one width)."""
    s1 = a + b
    s2 = s1 + np.asarray(cin).astype(a.dtype)
    return s2, (s1 < a) | (s2 < s1)


@builds("addc", "subc", "madc")
def _carry_op(instr: Instr, ctx: Any) -> Op:
    """add.cc, addc, sub.cc, subc, mad{c}.lo/hi{.cc}: multi-word arithmetic through the carry flag."""
    op = instr.parts[0]
    dt = dtype(itype(instr))
    u = np.dtype(UINT[dt.itemsize])
    use_cf, set_cf = op.endswith("c"), "cc" in instr.parts
    dst, *srcs = instr.operands
    w = writer(ctx, dst)
    rs = [reader(ctx, x, u) for x in srcs]
    wcf, rcf = writer(ctx, ("reg", "%cc", False)), reader(ctx, ("reg", "%cc", False), np.dtype(np.bool_))
    hi = "hi" in instr.parts

    def run(m: Any, idx: Any) -> None:
        vals = np.broadcast_arrays(*[np.asarray(r(m, idx), u) for r in rs])
        cin = rcf(m, idx) if use_cf else False
        if op.startswith("sub"):  # a - b - borrow == a + ~b + (1 - borrow); CF is then the borrow
            a, b = vals
            d, carry = _carry_add(a, ~b, ~np.asarray(cin, bool))
            carry = ~carry
        elif op.startswith("mad"):
            a, b, c = vals
            if u.itemsize == 8:
                p = _mulhi_u64(a, b) if hi else a * b
            else:
                wide = a.astype(np.uint64) * b.astype(np.uint64)
                p = (wide >> np.uint64(8 * u.itemsize) if hi else wide).astype(u)
            d, carry = _carry_add(p, c, cin)
        else:
            a, b = vals
            d, carry = _carry_add(a, b, cin)
        w(m, idx, d.astype(u))
        if set_cf:
            wcf(m, idx, np.broadcast_to(carry, d.shape))

    return Op(instr, run)


@builds("dp4a", "dp2a")
def _dot_product(instr: Instr, ctx: Any) -> Op:
    """dp4a: c + the four byte products of a and b; dp2a: two 16x8-bit products (.lo/.hi bytes of b)."""
    ta, tb = (dtype(t) for t in [p for p in instr.parts if p in DT][:2])
    dst, a, b, c = instr.operands
    w = writer(ctx, dst)
    ra, rb = reader(ctx, a, np.dtype(np.uint32)), reader(ctx, b, np.dtype(np.uint32))
    rc = reader(ctx, c, np.dtype(np.int32 if ta.kind == "i" or tb.kind == "i" else np.uint32))
    four = instr.parts[0] == "dp4a"
    hi = "hi" in instr.parts

    def run(m: Any, idx: Any) -> None:
        x, y = np.broadcast_arrays(_arr(ra(m, idx)), _arr(rb(m, idx)))
        total = _arr(rc(m, idx)).astype(np.int64)
        if four:
            for k in range(4):
                total = total + _lane(x, k, 8, ta.kind == "i") * _lane(y, k, 8, tb.kind == "i")
        else:
            for k in range(2):
                total = total + _lane(x, k, 16, ta.kind == "i") * _lane(y, k + 2 * hi, 8, tb.kind == "i")
        w(m, idx, total.astype(np.uint32))

    return Op(instr, run)


def _lane(x: np.ndarray, k: int, bits: int, signed: bool) -> np.ndarray:
    """Lane k of `bits` bits of each word of x, sign-extended if `signed`."""
    v = (x.astype(np.int64) >> (bits * k)) & ((1 << bits) - 1)
    return np.where(signed & (v >= (1 << (bits - 1))), v - (1 << bits), v) if signed else v


@builds("sad")
def _sad(instr: Instr, ctx: Any) -> Op:
    dt = dtype(itype(instr))
    return simple(instr, ctx, lambda a, b, c: (c + _select(a > b, a - b, b - a)).astype(dt))


_VIDEO: dict[str, Callable[..., Any]] = {
    "vabsdiff": lambda a, b: np.abs(a - b), "vadd": np.add, "vsub": np.subtract, "vmin": np.minimum,
    "vmax": np.maximum, "vavrg": lambda a, b: (a + b + 1) >> 1,
}  # fmt: skip


@builds(*[f"{op}{n}" for op in _VIDEO for n in (2, 4)])
def _video(instr: Instr, ctx: Any) -> Op:
    """SIMD within a register: per-byte (4) or per-half (2) ops; .add sums the lanes into c."""
    name, lanes = instr.parts[0][:-1], int(instr.parts[0][-1])
    bits = 32 // lanes
    signed = [t.startswith("s") for t in instr.parts if t in DT]  # d, a, b
    dst, a, b, c = instr.operands
    w = writer(ctx, dst)
    ra, rb, rc = (reader(ctx, o, np.dtype(np.uint32)) for o in (a, b, c))
    sat, add = "sat" in instr.parts, "add" in instr.parts
    f = _VIDEO[name]

    def run(m: Any, idx: Any) -> None:
        x, y, z = np.broadcast_arrays(*(_arr(r(m, idx)) for r in (ra, rb, rc)))
        res = [f(_lane(x, k, bits, signed[1]), _lane(y, k, bits, signed[2])) for k in range(lanes)]
        if add:
            out = z.astype(np.int64) + sum(res)
        else:
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed[0] else (0, (1 << bits) - 1)
            out = np.zeros(x.shape, np.int64)
            for k, v in enumerate(res):
                out |= ((np.clip(v, lo, hi) if sat else v) & ((1 << bits) - 1)) << (bits * k)
        w(m, idx, (out & 0xFFFFFFFF).astype(np.uint32))

    return Op(instr, run)


@builds(
    "abs",
    "neg",
    "not",
    "cnot",
    "popc",
    "clz",
    "brev",
    "bfind",
    "sqrt",
    "rsqrt",
    "rcp",
    "sin",
    "cos",
    "lg2",
    "ex2",
    "tanh",
)
def _unary(instr: Instr, ctx: Any) -> Op:
    op, t = instr.parts[0], itype(instr)
    dt = dtype(t)
    if t in HALVES:
        return _half_arith(instr, ctx)
    if dt.kind == "f":
        fns: dict[str, Callable[..., Any]] = {
            "abs": np.abs, "neg": np.negative, "sqrt": np.sqrt, "rsqrt": lambda a: 1 / np.sqrt(a),
            "rcp": lambda a: np.divide(1, a), "sin": np.sin, "cos": np.cos, "lg2": np.log2, "ex2": np.exp2,
            "tanh": np.tanh,
        }  # fmt: skip
        if op not in fns:
            raise UnsupportedInstruction(instr.opcode)
        f: Callable[..., Any] = fns[op]
        if op in ("sin", "cos", "lg2", "ex2", "tanh", "rsqrt") or "approx" in instr.parts:
            g = f  # approximate on the GPU: computed in double here, then rounded
            f = lambda a: g(_arr(a).astype(np.float64))  # noqa: E731
        exact = {"sqrt": _exact_sqrt, "rcp": _exact_rcp}.get(op) if "approx" not in instr.parts else None
        return float_op(instr, ctx, f, exact)
    if op == "abs":
        return simple(instr, ctx, np.abs)
    if op == "neg":
        return simple(instr, ctx, np.negative)
    if op == "not":
        return simple(instr, ctx, np.invert if dt.kind != "b" else np.logical_not)
    if op == "cnot":
        return simple(instr, ctx, lambda a: (_arr(a) == 0).astype(dt))
    u32 = np.dtype(np.uint32)
    dst, src = instr.operands
    w, r = writer(ctx, dst), reader(ctx, src, dtype(UINT_NAME[dt.itemsize]))
    if op == "popc":
        return Op(instr, lambda m, idx: w(m, idx, popcount(r(m, idx)).astype(u32)))
    if op == "clz":
        return Op(instr, lambda m, idx: w(m, idx, (8 * dt.itemsize - bit_length(r(m, idx))).astype(u32)))
    if op == "brev":
        return Op(instr, lambda m, idx: w(m, idx, bit_reverse(r(m, idx))))
    # bfind: position of the most significant non-sign bit, 0xFFFFFFFF if none
    shiftamt = "shiftamt" in instr.parts
    rs = reader(ctx, src, dt)

    def bfind(m: Any, idx: Any) -> None:
        v = _arr(rs(m, idx))
        u = np.where(v < 0, ~v, v).astype(UINT[dt.itemsize]) if dt.kind == "i" else v
        pos = bit_length(u).astype(np.int64) - 1
        res = np.where(pos < 0, 0xFFFFFFFF, (8 * dt.itemsize - 1 - pos) if shiftamt else pos)
        w(m, idx, res.astype(u32))

    return Op(instr, bfind)


UINT_NAME = {1: "u8", 2: "u16", 4: "u32", 8: "u64"}
_BYTE_POPC = np.array([bin(i).count("1") for i in range(256)], np.uint8)
_BYTE_REV = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], np.uint8)


def popcount(v: Any) -> np.ndarray:
    a = np.ascontiguousarray(_arr(v))
    b = a.reshape(-1).view(np.uint8).reshape(a.size, a.itemsize)
    return _BYTE_POPC[b].sum(axis=1, dtype=np.uint32).reshape(a.shape)


def bit_length(v: Any) -> np.ndarray:
    a = _arr(v).astype(np.uint64)
    hi = (a >> np.uint64(32)).astype(np.float64)
    lo = (a & np.uint64(0xFFFFFFFF)).astype(np.float64)
    with np.errstate(divide="ignore"):
        bl_hi = np.where(hi > 0, np.floor(np.log2(np.maximum(hi, 1))) + 33, 0)
        bl_lo = np.where(lo > 0, np.floor(np.log2(np.maximum(lo, 1))) + 1, 0)
    return np.where(hi > 0, bl_hi, bl_lo).astype(np.int64)


def bit_reverse(v: Any) -> np.ndarray:
    a = np.ascontiguousarray(_arr(v))
    b = _BYTE_REV[a.reshape(-1).view(np.uint8).reshape(a.size, a.itemsize)[:, ::-1]]
    return np.ascontiguousarray(b).view(a.dtype).reshape(a.shape)


@builds("and", "or", "xor")
def _bitwise(instr: Instr, ctx: Any) -> Op:
    dt = dtype(itype(instr))
    f: Callable[..., Any]
    if dt.kind == "b":
        f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[instr.parts[0]]
    else:
        f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[instr.parts[0]]
    return simple(instr, ctx, f)


@builds("shl", "shr")
def _shift(instr: Instr, ctx: Any) -> Op:
    dt = dtype(itype(instr))
    bits = 8 * dt.itemsize
    if instr.parts[0] == "shr" and dt.kind == "i":
        f = lambda a, b: np.right_shift(a, np.minimum(_arr(b), bits - 1).astype(dt))  # noqa: E731
    else:
        sh = np.left_shift if instr.parts[0] == "shl" else np.right_shift

        def f(a: Any, b: Any) -> Any:
            b = _arr(b)
            return np.where(b >= bits, dt.type(0), sh(a, np.minimum(b, bits - 1).astype(dt)))

    return simple(instr, ctx, f, [dt, np.dtype(np.uint32)])


@builds("bfe")
def _bfe(instr: Instr, ctx: Any) -> Op:
    """Extract `len` bits from `pos`; bits past the field (or past the msb) copy the sign bit."""
    dt = dtype(itype(instr))
    bits = 8 * dt.itemsize
    u = UINT[dt.itemsize]

    def f(a: Any, pos: Any, ln: Any) -> Any:
        a, pos, ln = np.broadcast_arrays(
            _arr(a), _arr(pos).astype(np.int64) & 0xFF, _arr(ln).astype(np.int64) & 0xFF
        )
        ua = np.ascontiguousarray(a).view(u) if a.dtype.itemsize == dt.itemsize else a.astype(u)
        width = np.clip(np.minimum(ln, bits - pos), 0, bits)  # the part of the field inside the word
        mask = np.where(
            width >= bits, ~u(0), np.left_shift(u(1), np.minimum(width, bits - 1).astype(u)) - u(1)
        )
        field = np.where(pos >= bits, u(0), ua >> np.minimum(pos, bits - 1).astype(u)) & mask
        if dt.kind == "i":
            top = np.minimum(pos + ln - 1, bits - 1).astype(u)
            sign = (ln > 0) & (((ua >> top) & u(1)) == 1)
            field = np.where(sign, field | ~mask, field)
        return field.astype(u).view(dt)

    return simple(instr, ctx, f, [dt, np.dtype(np.uint32), np.dtype(np.uint32)])


@builds("bfi")
def _bfi(instr: Instr, ctx: Any) -> Op:
    dt = dtype(itype(instr))
    bits = 8 * dt.itemsize
    u = UINT[dt.itemsize]

    def f(a: Any, b: Any, pos: Any, ln: Any) -> Any:
        pos = np.minimum(_arr(pos).astype(np.int64) & 0xFF, bits)
        ln = _arr(ln).astype(np.int64) & 0xFF
        mask = np.where(ln >= bits, ~u(0), np.left_shift(u(1), np.minimum(ln, bits - 1).astype(u)) - u(1))
        mask = np.where(pos >= bits, u(0), np.left_shift(mask, np.minimum(pos, bits - 1).astype(u)))
        ins = np.where(
            pos >= bits, u(0), np.left_shift(_arr(a).astype(u), np.minimum(pos, bits - 1).astype(u))
        )
        return (ins & mask) | (_arr(b).astype(u) & ~mask)

    return simple(instr, ctx, f, [dt, dt, np.dtype(np.uint32), np.dtype(np.uint32)])


@builds("prmt")
def _prmt(instr: Instr, ctx: Any) -> Op:
    mode = next((p for p in instr.parts if p in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")), "")

    def f(a: Any, b: Any, c: Any) -> Any:
        a, b, c = np.broadcast_arrays(
            _arr(a).astype(np.uint64), _arr(b).astype(np.uint64), _arr(c).astype(np.uint64)
        )
        src = a | (b << np.uint64(32))  # bytes 0-3 from a, 4-7 from b
        out = np.zeros(a.shape, np.uint64)
        for k in range(4):
            sel = _prmt_selector(mode, c, k)
            byte = (src >> (8 * (sel & 7))) & 0xFF
            if mode == "":
                sign = (sel & 8) != 0
                byte = np.where(sign, np.where(byte & 0x80, 0xFF, 0), byte)
            out |= byte.astype(np.uint64) << np.uint64(8 * k)
        return out.astype(np.uint32)

    return simple(instr, ctx, f, [np.dtype(np.uint32)] * 3)


def _prmt_selector(mode: str, c: np.ndarray, k: int) -> np.ndarray:
    c = c.astype(np.uint64)
    if mode == "":
        return (c >> np.uint64(4 * k)) & np.uint64(0xF)
    s = c & np.uint64(3)
    table = {
        "f4e": lambda: (s + k) & 7, "b4e": lambda: (s - k) & 7, "rc8": lambda: s + 0 * k,
        "ecl": lambda: np.maximum(s, k), "ecr": lambda: np.minimum(s, k),
        "rc16": lambda: (c & np.uint64(1)) * 2 + (k & 1),
    }  # fmt: skip
    return np.asarray(table[mode]()).astype(np.uint64)


@builds("lop3")
def _lop3(instr: Instr, ctx: Any) -> Op:
    def f(a: Any, b: Any, c: Any, lut: Any) -> Any:
        lut = int(lut)
        out = np.zeros(np.broadcast(a, b, c).shape, np.uint32)
        for i in range(8):
            if lut >> i & 1:
                ta = a if i & 4 else ~_arr(a)
                tb = b if i & 2 else ~_arr(b)
                tc = c if i & 1 else ~_arr(c)
                out |= ta & tb & tc
        return out

    return simple(instr, ctx, f, [np.dtype(np.uint32)] * 4)


@builds("shf")
def _shf(instr: Instr, ctx: Any) -> Op:
    left = "l" in instr.parts
    clamp = "clamp" in instr.parts

    def f(a: Any, b: Any, c: Any) -> Any:
        n = np.minimum(_arr(c), 32) if clamp else _arr(c) & 31
        wide = _arr(a).astype(np.uint64) | (_arr(b).astype(np.uint64) << np.uint64(32))
        n = _arr(n).astype(np.uint64)
        if left:
            return ((wide << n) >> np.uint64(32)).astype(np.uint32)
        return (wide >> n).astype(np.uint32)

    return simple(instr, ctx, f, [np.dtype(np.uint32)] * 3)


@builds("copysign")
def _copysign(instr: Instr, ctx: Any) -> Op:
    return simple(instr, ctx, lambda a, b: np.copysign(b, a))


@builds("testp")
def _testp(instr: Instr, ctx: Any) -> Op:
    dt = dtype(itype(instr))
    tiny = np.finfo(dt).tiny
    fns: dict[str, Callable[..., Any]] = {
        "finite": np.isfinite, "infinite": np.isinf, "number": lambda a: ~np.isnan(a), "notanumber": np.isnan,
        "normal": lambda a: np.isfinite(a) & (np.abs(a) >= tiny),
        "subnormal": lambda a: (np.abs(a) < tiny) & (a != 0),
    }  # fmt: skip
    f = fns[instr.parts[1]]
    dst, src = instr.operands
    w, r = writer(ctx, dst), reader(ctx, src, dt)
    return Op(instr, lambda m, idx: w(m, idx, f(_arr(r(m, idx)))))


# -- comparisons and selection

_CMP = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal,
}  # fmt: skip


def comparison(cmp: str) -> Callable[[Any, Any], Any]:
    if cmp in _CMP:
        f = _CMP[cmp]
        if cmp == "ne":  # ordered: false when either is NaN
            return lambda a, b: (
                np.not_equal(a, b) & ~(np.isnan(a) | np.isnan(b)) if _arr(a).dtype.kind == "f" else f(a, b)
            )
        return f
    if cmp.endswith("u") and cmp[:-1] in _CMP:  # unordered: true when either is NaN
        g = _CMP[cmp[:-1]]
        return lambda a, b: g(a, b) | np.isnan(a) | np.isnan(b)
    if cmp == "num":
        return lambda a, b: ~(np.isnan(a) | np.isnan(b))
    if cmp == "nan":
        return lambda a, b: np.isnan(a) | np.isnan(b)
    raise UnsupportedInstruction(f"comparison {cmp!r}")


_BOOL = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


@builds("setp", "set")
def _setp(instr: Instr, ctx: Any) -> Op:
    if instr.parts[-1] in HALVES:
        return _half_setp(instr, ctx)
    cmp = comparison(instr.parts[1])
    boolop = next((_BOOL[p] for p in instr.parts[2:] if p in _BOOL), None)
    src_t = dtype(instr.parts[-1])
    ftz = "ftz" in instr.parts
    dst, a, b, *rest = instr.operands
    ra, rb = reader(ctx, a, src_t), reader(ctx, b, src_t)
    rc = reader(ctx, rest[0], np.dtype(np.bool_)) if rest else None
    if instr.parts[0] == "set":
        out_t = dtype(instr.parts[-2])
        ones = (
            np.float32(1.0)
            if out_t.kind == "f"
            else out_t.type(np.iinfo(out_t).max if out_t.kind == "u" else -1)
        )
        w = writer(ctx, dst)

        def run_set(m: Any, idx: Any) -> None:
            x, y = ra(m, idx), rb(m, idx)
            p = cmp(_ftz(x) if ftz else x, _ftz(y) if ftz else y)
            if rc is not None and boolop is not None:
                p = boolop(p, rc(m, idx))
            w(m, idx, np.where(p, ones, out_t.type(0)).astype(out_t))

        return Op(instr, run_set)
    outs = dst[1] if dst[0] == "pair" else [dst]
    wp = writer(ctx, outs[0])
    wq = writer(ctx, outs[1]) if len(outs) > 1 else None

    def run(m: Any, idx: Any) -> None:
        x, y = ra(m, idx), rb(m, idx)
        if ftz:
            x, y = _ftz(x), _ftz(y)
        p = _arr(cmp(x, y))
        if wq is not None:
            q = ~p
        if rc is not None and boolop is not None:
            c = rc(m, idx)
            p = boolop(p, c)
            if wq is not None:
                q = boolop(q, c)
        wp(m, idx, p)
        if wq is not None:
            wq(m, idx, q)

    return Op(instr, run)


@builds("selp")
def _selp(instr: Instr, ctx: Any) -> Op:
    dt = dtype(itype(instr))
    return simple(instr, ctx, lambda a, b, c: _select(c, a, b).astype(dt), [dt, dt, np.dtype(np.bool_)])


@builds("slct")
def _slct(instr: Instr, ctx: Any) -> Op:
    dt = dtype(instr.parts[-2])
    ct = dtype(instr.parts[-1])
    return simple(instr, ctx, lambda a, b, c: _select(_arr(c) >= 0, a, b).astype(dt), [dt, dt, ct])


# -- moves and conversions


@builds("mov")
def _mov(instr: Instr, ctx: Any) -> Op:
    dt = dtype(itype(instr))
    dst, src = instr.operands
    if dst[0] == "vec" and len(dst[1]) > 1:  # unpack: mov.b64 {lo, hi}, %rd
        parts = [writer(ctx, d) for d in dst[1]]
        piece = UINT[dt.itemsize // len(parts)]
        r = reader(ctx, src, dt)

        def unpack(m: Any, idx: Any) -> None:
            v = np.ascontiguousarray(_arr(r(m, idx)).reshape(-1))
            halves = v.view(piece).reshape(v.size, len(parts))
            for k, w in enumerate(parts):
                w(m, idx, halves[:, k] if idx is not None or v.size > 1 else halves[0, k])

        return Op(instr, unpack)
    if src[0] == "vec" and len(src[1]) > 1:  # pack: mov.b64 %rd, {lo, hi}
        piece_t = np.dtype(UINT[dt.itemsize // len(src[1])])
        rs = [reader(ctx, s, piece_t) for s in src[1]]
        w = writer(ctx, dst)

        def pack(m: Any, idx: Any) -> None:
            vals = np.broadcast_arrays(*[_arr(r(m, idx)) for r in rs])
            w(m, idx, np.ascontiguousarray(np.stack(vals, axis=-1)).view(dt).reshape(vals[0].shape))

        return Op(instr, pack)
    w = writer(ctx, dst)
    r = reader(ctx, src, dt)
    return Op(instr, lambda m, idx: w(m, idx, r(m, idx)))


@builds("cvt")
def _cvt(instr: Instr, ctx: Any) -> Op:
    types = [p for p in instr.parts if p in DT]
    if len(types) != 2 or any(p in instr.parts for p in ("tf32", "e4m3x2", "e5m2x2", "rna")):
        raise UnsupportedInstruction(f"the emulator does not implement the conversion '{instr.opcode}'")
    if types[0] in HALVES or types[1] in HALVES:
        return _half_cvt(instr, ctx, types)
    dt, st = dtype(types[0]), dtype(types[1])
    mode = next((p for p in instr.parts if p in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi")), "")
    sat, ftz = "sat" in instr.parts, "ftz" in instr.parts
    bf16_out = types[0] == "bf16"

    def f(a: Any) -> Any:
        a = _arr(a)
        if ftz:
            a = _ftz(a)
        if (st.kind == "f" and dt.kind == "f") or (bf16_out and st.kind == "f"):
            if mode in ("rni", "rzi", "rmi", "rpi"):
                a = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[mode](a)
            if bf16_out:
                return _to_bf16(a.astype(np.float32))
            if mode in ("rz", "rm", "rp") and dt.itemsize < st.itemsize:
                r = _round_exact(a.astype(np.float64), 0.0, mode, dt)
            else:
                r = a.astype(dt)
            if sat:  # NaN -> 0, and -0 + 0 is +0 as on the GPU
                r = (np.where(np.isnan(r), dt.type(0), np.clip(r, 0, 1)) + dt.type(0)).astype(dt)
            if ftz and dt == np.float32:  # a double too small for a normal float flushes
                r = np.where(_flushes(a), np.copysign(np.float32(0), a), r).astype(dt)
            return r
        if st.kind == "f":  # float -> int: round, then saturate (PTX always saturates here)
            rnd = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil, "": np.trunc}[mode or ""]
            return _float_to_int(rnd(a.astype(np.float64)), dt, types[1])
        if dt.kind == "f":  # int -> float: 64-bit integers are an exact pair of doubles
            if mode in ("rz", "rm", "rp") or (a.dtype.itemsize == 8 and dt.itemsize == 8):
                hi, err = _int_pair(a)
                return _round_exact(hi, err, mode or "rn", dt)
            return a.astype(dt)
        if sat:
            info = np.iinfo(dt)
            wide = a.astype(np.float64) if a.dtype.itemsize == 8 else a.astype(np.int64)
            return np.clip(wide, info.min, info.max).astype(dt)
        return a.astype(dt)

    return simple(instr, ctx, f, [st])


def nan_to_int(dt: np.dtype, src: str) -> int:
    """What cvt writes for a NaN source converted to the integer type dt (the bits, as a Python int).

    PTX leaves it unsaid: the cvt text only says that a float-to-integer conversion saturates to the
    destination's range (".sat is redundant"), and the CUDA Math API calls an input outside the
    range undefined. An H200 (sm_90) gives, for every cvt.{rni,rzi,rmi,rpi}:
      * a 64-bit destination (s64, u64), from any source (f64, f32, f16, bf16): 0x8000000000000000
        (__float2ll_*, __double2ull_*, __half2ll_*, __bfloat162ull_*, llrint, llround, ...);
      * an f64 source to a 32-bit destination (s32, u32): 0x80000000 (__double2int_*, __double2uint_*);
      * an f32, f16 or bf16 source to a 32-, 16- or 8-bit destination: 0 (__float2int_*,
        __float2uint_*, __half2int_*, __half2short_*, __bfloat162char_rz, ...).
    So the sign bit alone (the x86 "integer indefinite" value, which libdevice's llroundf also
    returns for NaN) when the destination is 64-bit or the source is f64, else 0. An f64 source to
    a 16- or 8-bit destination (no CUDA function compiles to it) is taken to follow the f64 rule.
    """
    if dt.itemsize == 8 or src == "f64":
        return 1 << (8 * dt.itemsize - 1)
    return 0


def _float_to_int(v: np.ndarray, dt: np.dtype, src: str) -> np.ndarray:
    """Rounded float64 values -> the integer type dt, saturated (cvt always saturates here); NaN
    -> `nan_to_int`."""
    info = np.iinfo(dt)
    nan = np.isnan(v)
    v = np.clip(np.where(nan, 0, v), float(info.min), float(info.max))
    # float64 cannot hold the 64-bit limits exactly: info.max as a double is 2^63 (2^64), one past
    top = v >= float(info.max)
    out = np.where(top, dt.type(info.max), np.where(top, 0, v).astype(dt))
    bits = np.asarray(nan_to_int(dt, src), dtype=UINT[dt.itemsize]).view(dt)
    return np.where(nan, bits, out).astype(dt)


def _to_bf16(a: np.ndarray) -> np.ndarray:
    u = np.ascontiguousarray(a).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return np.where(np.isnan(a), 0x7FC0, rounded).astype(np.uint16)


@builds("cvta")
def _cvta(instr: Instr, ctx: Any) -> Op:
    from .memory import LOCAL_WINDOW, SHARED_WINDOW

    to = "to" in instr.parts
    space = next(p for p in instr.parts if p in SPACES)
    base = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW}.get(space, 0)
    dt = dtype(itype(instr))
    dst, src = instr.operands
    w, r = writer(ctx, dst), reader(ctx, src, np.dtype(np.uint64) if not to or dt.itemsize == 8 else dt)
    if base == 0:
        return Op(instr, lambda m, idx: w(m, idx, r(m, idx)))
    if to:
        return Op(
            instr, lambda m, idx: w(m, idx, (_arr(r(m, idx)).astype(np.uint64) - np.uint64(base)).astype(dt))
        )
    return Op(instr, lambda m, idx: w(m, idx, _arr(r(m, idx)).astype(np.uint64) + np.uint64(base)))


@builds("isspacep")
def _isspacep(instr: Instr, ctx: Any) -> Op:
    from .memory import LOCAL_WINDOW, SHARED_WINDOW, WINDOW_SIZE

    space = instr.parts[1]
    dst, src = instr.operands
    w, r = writer(ctx, dst), reader(ctx, src, np.dtype(np.uint64))

    def f(m: Any, idx: Any) -> None:
        a = _arr(r(m, idx)).astype(np.uint64)
        sh = (a >= SHARED_WINDOW) & (a < SHARED_WINDOW + WINDOW_SIZE)
        lo = (a >= LOCAL_WINDOW) & (a < LOCAL_WINDOW + WINDOW_SIZE)
        w(m, idx, {"shared": sh, "local": lo}.get(space, ~sh & ~lo))

    return Op(instr, f)


# -- memory


def _space(instr: Instr) -> str:
    for p in instr.parts[1:]:
        s = p.split("::")[0]
        if s in SPACES:
            return s
    return "generic"


def _vec(instr: Instr) -> int:
    for p in instr.parts:
        if p in ("v2", "v4", "v8"):
            return int(p[1])
    return 1


def address(ctx: Any, op: tuple) -> Callable[[Any, Any], np.ndarray]:
    if op[0] != "addr":
        raise UnsupportedInstruction(f"expected an address, got {op!r}")
    base, off = op[1], op[2]
    if base is None:
        return lambda m, idx: np.full(m.count(idx), off, np.int64)
    if base.startswith("%"):
        name = ctx.reg(base)
        signed = ctx.storage(name).itemsize == 8

        def addr(m: Any, idx: Any) -> np.ndarray:
            v = m.R[name] if idx is None else m.R[name][idx]
            return (v.view(np.int64) if signed else v.astype(np.int64)) + off

        return addr
    value = ctx.symbol_address(base) + off
    return lambda m, idx: np.full(m.count(idx), value, np.int64)


@builds("ld", "ldu")
def _ld(instr: Instr, ctx: Any) -> Op:
    space = _space(instr)
    dt = dtype(itype(instr))
    n = _vec(instr)
    dst, src = instr.operands
    dsts = dst[1] if dst[0] == "vec" else [dst]
    ws = [writer(ctx, d) for d in dsts]
    if space == "param":
        return _ld_param(instr, ctx, src, dt, ws)
    addr = address(ctx, src)

    def run(m: Any, idx: Any) -> None:
        vals = m.load(instr, space, addr(m, idx), idx, dt, n)
        for k, w in enumerate(ws):
            w(m, idx, vals[:, k] if n > 1 else vals)

    return Op(instr, run)


def _ld_param(instr: Instr, ctx: Any, src: tuple, dt: np.dtype, ws: list) -> Op:
    name, off = src[1], src[2]
    if ctx.is_kernel_param(name):

        def run_kernel_param(m: Any, idx: Any) -> None:
            for k, w in enumerate(ws):
                w(m, idx, m.param_scalar(name, off + k * dt.itemsize, dt))

        return Op(instr, run_kernel_param)
    key = ctx.param_var(name)

    def run(m: Any, idx: Any) -> None:
        for k, w in enumerate(ws):
            w(m, idx, m.param_read(key, off + k * dt.itemsize, dt, idx))

    return Op(instr, run)


@builds("st")
def _st(instr: Instr, ctx: Any) -> Op:
    space = _space(instr)
    dt = dtype(itype(instr))
    n = _vec(instr)
    dst, src = instr.operands
    srcs = src[1] if src[0] == "vec" else [src]
    rs = [reader(ctx, s, dt) for s in srcs]
    if space == "param":
        key, off = ctx.param_var(dst[1]), dst[2]

        def run_param(m: Any, idx: Any) -> None:
            for k, r in enumerate(rs):
                m.param_write(key, off + k * dt.itemsize, dt, idx, r(m, idx))

        return Op(instr, run_param)
    addr = address(ctx, dst)

    def run(m: Any, idx: Any) -> None:
        cnt = m.count(idx)
        vals = np.stack([np.broadcast_to(np.asarray(r(m, idx), dt), (cnt,)) for r in rs], axis=1)
        m.store(instr, space, addr(m, idx), idx, vals if n > 1 else vals[:, 0], dt, n)

    return Op(instr, run)


@builds("atom", "red")
def _atom(instr: Instr, ctx: Any) -> Op:
    space = _space(instr)
    t = itype(instr)
    dt = dtype(t)
    kind = next((p for p in instr.parts[1:] if p in ATOMIC_OPS), None)
    if t in HALVES:  # atom.add.noftz.f16 and friends: a rounded 16-bit add per lane
        kind = f"add.{t}" if kind == "add" else None
        dt = _storage16(t)
    if kind is None or _vec(instr) > 1:
        raise UnsupportedInstruction(f"the emulator does not implement '{instr.opcode}'")
    if instr.parts[0] == "red":
        dst, ad, *srcs = None, *instr.operands
    else:
        dst, ad, *srcs = instr.operands
    w = writer(ctx, dst) if dst is not None else None
    addr = address(ctx, ad)
    rs = [reader(ctx, s, dt) for s in srcs]

    def run(m: Any, idx: Any) -> None:
        cnt = m.count(idx)
        operands = [np.broadcast_to(np.asarray(r(m, idx), dt), (cnt,)) for r in rs]
        old = m.atomic(instr, space, addr(m, idx), idx, dt, kind, operands)
        if w is not None:
            w(m, idx, old)

    return Op(instr, run)


def _inc(old: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(old >= b, old.dtype.type(0), old + old.dtype.type(1))


def _dec(old: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where((old == 0) | (old > b), b, old - old.dtype.type(1))


ATOMIC_OPS: dict[str, Callable[..., np.ndarray]] = {
    "add": lambda old, b: old + b,
    "min": lambda old, b: np.fmin(old, b) if old.dtype.kind == "f" else np.minimum(old, b),
    "max": lambda old, b: np.fmax(old, b) if old.dtype.kind == "f" else np.maximum(old, b),
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "exch": lambda old, b: b,
    "cas": lambda old, b, c: _select(old == b, c, old),
    "inc": _inc, "dec": _dec,
}  # fmt: skip


@builds("membar", "fence", "prefetch", "prefetchu", "nanosleep", "pmevent", "griddepcontrol")
def _nop(instr: Instr, ctx: Any) -> Op:
    return Op(instr, lambda m, idx: None)


# -- control flow


@builds("bra", "brx")
def _bra(instr: Instr, ctx: Any) -> Op:
    if instr.parts[0] == "brx":
        raise UnsupportedInstruction("indirect branches (brx.idx) are not supported")
    return Op(instr, lambda m, idx: None, "branch", ctx.label(instr.operands[0][1]))


@builds("ret")
def _ret(instr: Instr, ctx: Any) -> Op:
    return Op(instr, lambda m, idx: None, "exit" if ctx.is_entry else "ret")


@builds("exit")
def _exit(instr: Instr, ctx: Any) -> Op:
    return Op(instr, lambda m, idx: None, "exit")


@builds("trap", "brkpt")
def _trap(instr: Instr, ctx: Any) -> Op:
    def run(m: Any, idx: Any) -> None:
        raise KernelFault(f"{m.who_first(idx)} executed '{instr.opcode}' {m.where(instr)}")

    return Op(instr, run)


@builds("call")
def _call(instr: Instr, ctx: Any) -> Op:
    return ctx.build_call(instr)


# -- barriers and warp collectives


@builds("bar", "barrier")
def _bar(instr: Instr, ctx: Any) -> Op:
    if "warp" in instr.parts:
        mask = reader(ctx, instr.operands[0], np.dtype(np.uint32))

        def warp_sync(m: Any, idx: Any) -> None:
            m.check_converged(instr, idx, mask(m, idx))
            m.record_sync(instr, idx, "bar")

        return Op(instr, warp_sync)
    if "arrive" in instr.parts:
        raise UnsupportedInstruction("bar.arrive (split barriers) is not supported")
    if len(instr.operands) > 1 and "red" not in instr.parts:
        raise UnsupportedInstruction(
            "barriers with a thread count (named partial barriers) are not supported"
        )
    red = None
    if "red" in instr.parts:  # __syncthreads_count / _and / _or
        how = next(p for p in instr.parts if p in ("popc", "and", "or"))
        dst, _bid, *rest = instr.operands
        pred = reader(ctx, rest[-1], np.dtype(np.bool_))
        red = (how, writer(ctx, dst), pred)
    op = Op(instr, lambda m, idx: m.arrive(instr, idx, red), "bar")
    return op


def _lanes(m: Any, idx: Any) -> tuple[np.ndarray, np.ndarray]:
    t = m.threads(idx)
    return t, t & 31


@builds("shfl")
def _shfl(instr: Instr, ctx: Any) -> Op:
    mode = next(p for p in instr.parts if p in ("up", "down", "bfly", "idx"))
    dst, a, b, c, *maskop = instr.operands
    outs = dst[1] if dst[0] == "pair" else [dst]
    wd = writer(ctx, outs[0])
    wp = writer(ctx, outs[1]) if len(outs) > 1 else None
    name_a = ctx.reg(a[1]) if a[0] == "reg" else None
    ra = reader(ctx, a, np.dtype(np.uint32))
    rb, rc = reader(ctx, b, np.dtype(np.uint32)), reader(ctx, c, np.dtype(np.uint32))
    rmask = reader(ctx, maskop[0], np.dtype(np.uint32)) if maskop else (lambda m, idx: np.uint32(0xFFFFFFFF))

    def run(m: Any, idx: Any) -> None:
        t, lane = _lanes(m, idx)
        m.check_converged(instr, idx, rmask(m, idx))
        bval = _arr(rb(m, idx)).astype(np.int64) & 31
        cval = _arr(rc(m, idx)).astype(np.int64)
        seg = (cval >> 8) & 31
        clamp = cval & 31
        max_lane = (lane & seg) | (clamp & ~seg)
        min_lane = lane & seg
        if mode == "up":
            j = lane - bval
            ok = j >= max_lane
        elif mode == "down":
            j = lane + bval
            ok = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            ok = j <= max_lane
        else:
            j = min_lane | (bval & ~seg)
            ok = j <= max_lane
        j = np.where(ok, j, lane)
        src = t - lane + j
        if name_a is not None:
            full = m.R[name_a]
            val = full[src]
        else:
            val = np.broadcast_to(np.asarray(ra(m, idx)), t.shape)
        wd(m, idx, val)
        if wp is not None:
            wp(m, idx, ok)
        m.record_lanes(instr, idx, "reg", "shfl", src - (t - lane), 4)

    return Op(instr, run)


def warp_reduce(m: Any, idx: Any, values: np.ndarray, how: str) -> np.ndarray:
    """Combine `values` over the active lanes of each warp; every lane gets its warp's result."""
    t, _ = _lanes(m, idx)
    warp = t >> 5
    starts = np.flatnonzero(np.r_[True, warp[1:] != warp[:-1]])
    counts = np.diff(np.r_[starts, len(t)])
    ufunc = {
        "or": np.bitwise_or,
        "and": np.bitwise_and,
        "add": np.add,
        "min": np.minimum,
        "max": np.maximum,
        "xor": np.bitwise_xor,
        "any": np.logical_or,
        "all": np.logical_and,
    }[how]
    red = ufunc.reduceat(values, starts)
    return np.repeat(red, counts)


_IDENTITY = {"or": 0, "xor": 0, "add": 0, "any": False, "all": True}


def member_reduce(m: Any, idx: Any, values: np.ndarray, masks: Any, how: str) -> np.ndarray:
    """Combine `values` over the lanes each lane's member mask names (among the active ones):
    a *_sync collective with a partial mask (a cooperative-groups tile) sees only its members."""
    t, lane = _lanes(m, idx)
    values = np.broadcast_to(np.asarray(values), t.shape)
    masks = np.broadcast_to(np.asarray(masks, np.uint32), t.shape)
    if not np.any(masks != masks[0]) and int(masks[0]) == 0xFFFFFFFF:
        return warp_reduce(m, idx, values, how)
    warp = t >> 5
    uw, row = np.unique(warp, return_inverse=True)
    dt = values.dtype
    ident: Any
    if how in _IDENTITY:
        ident = _IDENTITY[how]
    elif how == "and":
        ident = ~dt.type(0)
    elif how == "min":
        ident = np.iinfo(dt).max if dt.kind in "iu" else np.inf
    else:
        ident = np.iinfo(dt).min if dt.kind in "iu" else -np.inf
    grid = np.full((len(uw), LANES32), ident, dt)
    grid[row, lane] = values
    here = np.zeros((len(uw), LANES32), bool)
    here[row, lane] = True
    member = ((masks[:, None].astype(np.int64) >> np.arange(LANES32)) & 1).astype(bool) & here[row]
    ufunc = {"or": np.bitwise_or, "and": np.bitwise_and, "add": np.add, "min": np.minimum, "max": np.maximum,
             "xor": np.bitwise_xor, "any": np.logical_or, "all": np.logical_and}[how]  # fmt: skip
    return ufunc.reduce(np.where(member, grid[row], dt.type(ident)), axis=1).astype(dt)


LANES32 = 32


@builds("vote")
def _vote(instr: Instr, ctx: Any) -> Op:
    mode = next(p for p in instr.parts if p in ("all", "any", "uni", "ballot"))
    dst, p, *maskop = instr.operands
    w = writer(ctx, dst)
    rp = reader(ctx, p, np.dtype(np.bool_))
    rmask = reader(ctx, maskop[0], np.dtype(np.uint32)) if maskop else (lambda m, idx: np.uint32(0xFFFFFFFF))

    def run(m: Any, idx: Any) -> None:
        t, lane = _lanes(m, idx)
        m.check_converged(instr, idx, rmask(m, idx))
        pred = np.broadcast_to(_arr(rp(m, idx)), t.shape)
        mask = rmask(m, idx)
        if mode == "ballot":
            bits = np.where(pred, np.left_shift(np.uint32(1), lane.astype(np.uint32)), np.uint32(0))
            w(m, idx, member_reduce(m, idx, bits.astype(np.uint32), mask, "or"))
        elif mode == "all":
            w(m, idx, member_reduce(m, idx, pred, mask, "all"))
        elif mode == "any":
            w(m, idx, member_reduce(m, idx, pred, mask, "any"))
        else:
            w(m, idx, member_reduce(m, idx, pred, mask, "all") | ~member_reduce(m, idx, pred, mask, "any"))
        m.record_sync(instr, idx, "vote")

    return Op(instr, run)


@builds("activemask")
def _activemask(instr: Instr, ctx: Any) -> Op:
    w = writer(ctx, instr.operands[0])

    def run(m: Any, idx: Any) -> None:
        _, lane = _lanes(m, idx)
        bits = np.left_shift(np.uint32(1), lane.astype(np.uint32)).astype(np.uint32)
        w(m, idx, warp_reduce(m, idx, bits, "or"))

    return Op(instr, run)


@builds("match")
def _match(instr: Instr, ctx: Any) -> Op:
    mode = "all" if "all" in instr.parts else "any"
    dt = dtype(itype(instr))
    dst, a, maskop = instr.operands[:3]
    outs = dst[1] if dst[0] == "pair" else [dst]
    wd = writer(ctx, outs[0])
    wp = writer(ctx, outs[1]) if len(outs) > 1 else None
    ra, rmask = reader(ctx, a, dt), reader(ctx, maskop, np.dtype(np.uint32))

    def run(m: Any, idx: Any) -> None:
        t, lane = _lanes(m, idx)
        m.check_converged(instr, idx, rmask(m, idx))
        v = np.broadcast_to(_arr(ra(m, idx)), t.shape)
        mask = np.broadcast_to(np.asarray(rmask(m, idx), np.uint32), t.shape)
        warp = t >> 5
        out = np.zeros(t.shape, np.uint32)
        bits = np.left_shift(np.uint32(1), lane.astype(np.uint32)).astype(np.uint32)
        for k in range(32):  # lanes of the same warp, in this lane's member mask, with the same value
            other = np.searchsorted(t, t - lane + k)
            other = np.minimum(other, len(t) - 1)
            same = (t[other] == t - lane + k) & (v[other] == v) & (warp[other] == warp)
            same &= ((mask >> np.uint32(k)) & np.uint32(1)) == 1
            out |= np.where(same, bits[other], 0).astype(np.uint32)
        if mode == "all":
            active = member_reduce(m, idx, bits, mask, "or")
            allsame = out == active
            wd(m, idx, np.where(allsame, active, 0).astype(np.uint32))
            if wp is not None:
                wp(m, idx, allsame)
        else:
            wd(m, idx, out)
        m.record_sync(instr, idx, "match")

    return Op(instr, run)


@builds("redux")
def _redux(instr: Instr, ctx: Any) -> Op:
    how = next(p for p in instr.parts if p in ("add", "min", "max", "and", "or", "xor"))
    dt = dtype(itype(instr))
    dst, a, maskop = instr.operands
    w, ra, rmask = writer(ctx, dst), reader(ctx, a, dt), reader(ctx, maskop, np.dtype(np.uint32))

    def run(m: Any, idx: Any) -> None:
        t, _ = _lanes(m, idx)
        m.check_converged(instr, idx, rmask(m, idx))
        v = np.broadcast_to(_arr(ra(m, idx)), t.shape).astype(dt)
        w(m, idx, member_reduce(m, idx, v, rmask(m, idx), how).astype(dt))
        m.record_sync(instr, idx, "vote")

    return Op(instr, run)


def check_mask_converged(active_bits: np.ndarray, masks: np.ndarray, lanes: np.ndarray) -> np.ndarray:
    """Lanes whose member mask names lanes that are not here (diverged or exited)."""
    own = np.left_shift(np.uint32(1), lanes.astype(np.uint32))
    return ((masks & ~active_bits) != 0) | ((masks & own) == 0)


__all__ = ["BUILDERS", "BarrierError", "Op", "build"]


# ---------------------------------------------------------------- 16-bit floats, packed pairs, SIMD16

HALVES = ("f16", "bf16", "f16x2", "bf16x2")
F16_NAN, BF16_NAN = 0x7FFF, 0x7FFF  # the canonical NaNs the GPU writes (CUDART_NAN_FP16, _BF16)


def _half_fmt(t: str) -> str:
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
        r = _round_exact(hi, err, mode, np.dtype(np.float16))
        return np.where(np.isnan(hi), np.uint16(F16_NAN), np.asarray(r, np.float16).view(np.uint16)).astype(
            np.uint16
        )
    # bfloat16: round to odd at float32 (16 spare bits keep every later rounding exact), then cut
    finite = np.isfinite(hi)
    r32 = np.asarray(_round_exact(hi, err, "rz", np.dtype(np.float32)), np.float32)
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


def _lanes16(x: Any, t: str) -> list[np.ndarray]:
    x = np.asarray(x)
    if t.endswith("x2"):
        x = x.astype(np.uint32)
        return [(x & np.uint32(0xFFFF)).astype(np.uint16), (x >> np.uint32(16)).astype(np.uint16)]
    return [x.astype(np.uint16)]


def _pack16(lanes: list[np.ndarray], t: str) -> np.ndarray:
    if t.endswith("x2"):
        lo, hi = np.broadcast_arrays(*lanes)
        return lo.astype(np.uint32) | (hi.astype(np.uint32) << np.uint32(16))
    return np.asarray(lanes[0]).astype(np.uint16)


def _storage16(t: str) -> np.dtype:
    return np.dtype(np.uint32 if t.endswith("x2") else np.uint16)


def _half_flush(v: np.ndarray, fmt: str) -> np.ndarray:
    tiny = 2.0**-14 if fmt == "f16" else 2.0**-126
    return np.where((np.abs(v) < tiny) & (v != 0), np.copysign(0.0, v), v)


def _half_finish(bits: np.ndarray, fmt: str, *, ftz: bool, sat: bool, relu: bool,
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
    "add": _exact_add,
    "sub": _exact_sub,
    "mul": _exact_mul,
    "fma": _exact_fma,
    "mad": _exact_fma,
}


def _half_arith(instr: Instr, ctx: Any) -> Op:
    """add, sub, mul, fma, min, max, neg, abs on f16, bf16 and their packed pairs (lane by lane)."""
    op, t = instr.parts[0], itype(instr)
    fmt = _half_fmt(t)
    mode = _rounding(instr)
    flags = {"ftz": "ftz" in instr.parts, "sat": "sat" in instr.parts, "relu": "relu" in instr.parts}
    nan = F16_NAN if fmt == "f16" else BF16_NAN

    def lane(*xs: np.ndarray) -> np.ndarray:
        vals = [half_to_f64(x, fmt) for x in xs]
        if flags["ftz"]:
            vals = [_half_flush(v, fmt) for v in vals]
        if op in _EXACT_OPS:
            hi, err = _EXACT_OPS[op](*np.broadcast_arrays(*vals))
            return _half_finish(f64_to_half(hi, err, fmt, mode), fmt, **flags)
        if op in ("min", "max"):
            return _half_minmax(instr, op, xs, vals, fmt, flags["ftz"])
        if op == "neg":
            return _half_finish((np.asarray(xs[0]) ^ np.uint16(0x8000)).astype(np.uint16), fmt, **flags)
        if op == "abs":
            return _half_finish((np.asarray(xs[0]) & np.uint16(0x7FFF)).astype(np.uint16), fmt, **flags)
        if op in ("ex2", "tanh", "rcp", "sqrt", "rsqrt", "lg2", "sin", "cos"):
            fns: dict[str, Callable[[np.ndarray], np.ndarray]] = {"ex2": np.exp2, "tanh": np.tanh, "rcp": lambda a: 1 / a, "sqrt": np.sqrt,
                 "rsqrt": lambda a: 1 / np.sqrt(a), "lg2": np.log2, "sin": np.sin, "cos": np.cos}  # fmt: skip
            r = fns[op](vals[0])  # approximate on the GPU: here the exact value rounded once
            return _half_finish(f64_to_half(r, 0.0, fmt, "rn"), fmt, **flags)
        raise UnsupportedInstruction(f"the emulator does not implement '{instr.opcode}'")

    def f(*xs: Any) -> Any:
        lanes = [_lanes16(x, t) for x in xs]
        out = [lane(*[ls[k] for ls in lanes]) for k in range(len(lanes[0]))]
        with np.errstate(all="ignore"):
            return _pack16(out, t)

    del nan
    return simple(instr, ctx, f, [_storage16(t)] * (len(instr.operands) - 1))


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
    pick_a = a_less if op == "min" else ~a_less & ~((va == vb) & (a == b))
    pick_a = pick_a | (a == b)
    out = np.where(pick_a, a, b)
    na, nb = np.isnan(va), np.isnan(vb)
    if "NaN" in instr.parts:
        out = np.where(na | nb, nan, out)
    else:
        out = np.where(na & nb, nan, np.where(na, b, np.where(nb, a, out)))
    if xorsign:
        out = np.where(np.isnan(half_to_f64(out, fmt)), out, out | sign)
    if ftz:
        out = _half_finish(out.astype(np.uint16), fmt, ftz=True, sat=False, relu=False)
    return out.astype(np.uint16)


def _half_setp(instr: Instr, ctx: Any) -> Op:
    """setp / set on f16, bf16 and packed pairs: setp.f16x2 writes p|q (low lane, high lane);
    set.*.f16x2.f16x2 writes 1.0 or 0.0 per lane, set.*.u32.f16x2 0xFFFF or 0 per lane."""
    src = instr.parts[-1]
    fmt = _half_fmt(src)
    cmp = comparison(instr.parts[1])
    boolop = next((_BOOL[p] for p in instr.parts[2:] if p in _BOOL), None)
    ftz = "ftz" in instr.parts
    dst, a, b, *rest = instr.operands
    ra, rb = reader(ctx, a, _storage16(src)), reader(ctx, b, _storage16(src))
    rc = reader(ctx, rest[0], np.dtype(np.bool_)) if rest else None

    def preds(m: Any, idx: Any) -> list[np.ndarray]:
        la, lb = _lanes16(ra(m, idx), src), _lanes16(rb(m, idx), src)
        out = []
        for x, y in zip(la, lb):
            vx, vy = half_to_f64(x, fmt), half_to_f64(y, fmt)
            if ftz:
                vx, vy = _half_flush(vx, fmt), _half_flush(vy, fmt)
            p = np.asarray(cmp(vx, vy))
            if rc is not None and boolop is not None:
                p = boolop(p, rc(m, idx))
            out.append(p)
        return out

    if instr.parts[0] == "set":
        out_t = instr.parts[-2]
        w = writer(ctx, dst)
        if out_t in HALVES:
            one = np.uint16(0x3C00 if _half_fmt(out_t) == "f16" else 0x3F80)
        else:
            one = np.uint16(0xFFFF) if src.endswith("x2") else None

        def run_set(m: Any, idx: Any) -> None:
            ps = preds(m, idx)
            if one is None:  # a 32-bit integer or float from one comparison
                dt = dtype(out_t)
                ones = (
                    np.float32(1.0) if dt.kind == "f" else dt.type(np.iinfo(dt).max if dt.kind == "u" else -1)
                )
                w(m, idx, np.where(ps[0], ones, dt.type(0)).astype(dt))
                return
            w(m, idx, _pack16([np.where(p, one, np.uint16(0)).astype(np.uint16) for p in ps], src))

        return Op(instr, run_set)
    outs = dst[1] if dst[0] == "pair" else [dst]
    ws = [writer(ctx, o) for o in outs]

    def run(m: Any, idx: Any) -> None:
        ps = preds(m, idx)
        if len(ps) == 1 and len(ws) == 2:  # p|q on a scalar: q is the complement
            ps = [ps[0], ~ps[0]]
        for w, p in zip(ws, ps):
            w(m, idx, p)

    return Op(instr, run)


def _simd16(instr: Instr, ctx: Any) -> Op:
    """add, sub, min, max (.relu, .sat) on two 16-bit integer lanes of a 32-bit register (sm_90)."""
    op, t = instr.parts[0], itype(instr)
    signed = t.startswith("s")
    relu, sat = "relu" in instr.parts, "sat" in instr.parts

    def lane(x: np.ndarray, k: int) -> np.ndarray:
        v = (np.asarray(x).astype(np.int64) >> (16 * k)) & 0xFFFF
        return np.where(v >= 0x8000, v - 0x10000, v) if signed else v

    f = {"add": np.add, "sub": np.subtract, "min": np.minimum, "max": np.maximum}.get(op)
    if f is None:
        raise UnsupportedInstruction(f"the emulator does not implement '{instr.opcode}'")

    def g(a: Any, b: Any) -> Any:
        out = np.zeros(np.broadcast(a, b).shape, np.int64)
        for k in range(2):
            r = f(lane(a, k), lane(b, k))
            if relu:
                r = np.maximum(r, 0)
            if sat:
                r = np.clip(r, -0x8000, 0x7FFF) if signed else np.clip(r, 0, 0xFFFF)
            out |= (r & 0xFFFF) << (16 * k)
        return out.astype(np.uint32)

    return simple(instr, ctx, g, [np.dtype(np.uint32)] * 2)


@builds("fns")
def _fns(instr: Instr, ctx: Any) -> Op:
    """fns.b32 d, mask, base, offset: the offset-th set bit of mask counting from bit base."""

    def f(mask: Any, base: Any, offset: Any) -> Any:
        mask, base, offset = np.broadcast_arrays(
            _arr(mask).astype(np.int64),
            _arr(base).astype(np.int64),
            _arr(offset).astype(np.int32).astype(np.int64),
        )
        out = np.full(mask.shape, 0xFFFFFFFF, np.int64)
        bit = lambda p: ((mask >> np.clip(p, 0, 31)) & 1).astype(bool) & (p >= 0) & (p < 32)  # noqa: E731
        out = np.where((offset == 0) & bit(base), base, out)
        count = np.abs(offset) - 1
        inc = np.where(offset > 0, 1, -1)
        found = offset == 0
        for step in range(32):
            pos = base + inc * step
            hit = ~found & bit(pos)
            take = hit & (count == 0)
            out = np.where(take, pos, out)
            found |= take
            count = np.where(hit & ~take, count - 1, count)
        return out.astype(np.uint32)

    return simple(instr, ctx, f, [np.dtype(np.uint32), np.dtype(np.uint32), np.dtype(np.int32)])


@builds("mul24", "mad24")
def _mul24(instr: Instr, ctx: Any) -> Op:
    """mul24.lo/.hi, mad24.lo/.hi: products of the low 24 bits (sign-extended for .s32)."""
    dt = dtype(itype(instr))
    signed = dt.kind == "i"
    hi = "hi" in instr.parts
    if "sat" in instr.parts:
        raise UnsupportedInstruction(f"the emulator does not implement '{instr.opcode}'")

    def low24(x: Any) -> np.ndarray:
        v = _arr(x).astype(np.int64) & 0xFFFFFF
        return np.where(v >= 0x800000, v - 0x1000000, v) if signed else v

    def f(a: Any, b: Any, *c: Any) -> Any:
        p = low24(a) * low24(b)  # at most 48 bits
        r = (p >> 16) if hi else p
        r = (r & 0xFFFFFFFF).astype(np.uint32)
        if c:
            r = r + _arr(c[0]).astype(np.uint32)
        return r.astype(np.uint32).view(dt) if np.ndim(r) else np.uint32(r).view(dt)

    return simple(instr, ctx, f, [dt] * (len(instr.operands) - 1))


def _int_relu(instr: Instr, ctx: Any) -> Op:
    """max.relu.s32 / min.relu.s32: the result clamped at 0 from below."""
    dt = dtype(itype(instr))
    f = np.maximum if instr.parts[0] == "max" else np.minimum
    return simple(instr, ctx, lambda a, b: np.maximum(f(a, b), 0).astype(dt))


def _half_cvt(instr: Instr, ctx: Any, types: list[str]) -> Op:
    """cvt where either side is f16, bf16 or a packed pair (cvt.rn.f16x2.f32 d, a, b: a -> high half)."""
    dst_t, src_t = types
    mode = next((p for p in instr.parts if p in ("rn", "rz", "rm", "rp")), "rn")
    rint = next((p for p in instr.parts if p in ("rni", "rzi", "rmi", "rpi")), "")
    flags = {"ftz": "ftz" in instr.parts, "sat": "sat" in instr.parts, "relu": "relu" in instr.parts,
             "satfinite": "satfinite" in instr.parts}  # fmt: skip
    dst, *srcs = instr.operands
    w = writer(ctx, dst)
    if dst_t.endswith("x2"):  # two float32 sources packed: the first goes to the upper half
        fmt = _half_fmt(dst_t)
        rs = [reader(ctx, s, dtype(src_t)) for s in srcs]

        def run_pack(m: Any, idx: Any) -> None:
            a, b = (_arr(r(m, idx)).astype(np.float64) for r in rs)
            hi_, lo_ = (_half_finish(f64_to_half(v, 0.0, fmt, mode), fmt, **flags) for v in (a, b))
            w(m, idx, _pack16([lo_, hi_], dst_t))

        return Op(instr, run_pack)
    if src_t.endswith("x2"):
        raise UnsupportedInstruction(f"the emulator does not implement the conversion '{instr.opcode}'")
    r = reader(ctx, srcs[0], _storage16(src_t) if src_t in HALVES else dtype(src_t))

    def value(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The source as an exact float64 pair."""
        if src_t in HALVES:
            v = half_to_f64(a, _half_fmt(src_t))
            return v, np.zeros_like(v)
        if dtype(src_t).kind == "f":
            v = a.astype(np.float64)
            if flags["ftz"] and a.dtype == np.float32:
                v = _ftz(a).astype(np.float64)
            return v, np.zeros_like(v)
        return _int_pair(a)

    def run(m: Any, idx: Any) -> None:
        a = _arr(r(m, idx))
        hi, err = value(a)
        if rint:
            hi = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[rint](hi)
            err = np.zeros_like(hi)
        if dst_t in HALVES:
            fmt = _half_fmt(dst_t)
            bits = f64_to_half(hi, err, fmt, mode)
            w(m, idx, _half_finish(bits, fmt, **flags))
            return
        dt = dtype(dst_t)
        if dt.kind == "f":
            out = _round_exact(hi, err, mode, dt) if dt.itemsize < 8 or np.any(err) else hi.astype(dt)
            if flags["sat"]:
                out = (np.where(np.isnan(out), dt.type(0), np.clip(out, 0, 1)) + dt.type(0)).astype(dt)
            w(m, idx, np.asarray(out, dt))
            return
        rnd = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil, "": np.trunc}[rint]
        w(m, idx, _float_to_int(rnd(hi), dt, src_t))

    return Op(instr, run)


def _int_pair(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An integer as an exact float64 pair hi + err (64-bit integers do not fit one double)."""
    if a.dtype.itemsize < 8:
        v = a.astype(np.float64)
        return v, np.zeros_like(v)
    if a.dtype.kind == "i":
        high = (a >> 32).astype(np.float64) * 4294967296.0
    else:
        high = (a >> np.uint64(32)).astype(np.float64) * 4294967296.0
    low = (a.astype(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.float64)
    return _two_sum(high, low)


def _half_atomic(fmt: str, t: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """atom.add.noftz.{f16,bf16,f16x2,bf16x2}: a rounded 16-bit add per lane, no flush."""

    def add(old: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = []
        for x, y in zip(_lanes16(old, t), _lanes16(b, t)):
            hi, err = _two_sum(*np.broadcast_arrays(half_to_f64(x, fmt), half_to_f64(y, fmt)))
            with np.errstate(all="ignore"):
                out.append(f64_to_half(hi, err, fmt, "rn"))
        return _pack16(out, t).astype(old.dtype)

    return add


for _t in HALVES:
    ATOMIC_OPS[f"add.{_t}"] = _half_atomic(_half_fmt(_t), _t)


# the exact value of an operation, in fractions (before the one rounding of a directed mode)
_EXACT: dict[str, Any] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "rcp": lambda a: 1 / a,
    "fma": lambda a, b, c: a * b + c, "mad": lambda a, b, c: a * b + c,
}  # fmt: skip


def _exact_where_risky(op: str, xs: list[np.ndarray], hi: np.ndarray, r: Any, mode: str, dt: np.dtype) -> Any:
    """Redo with exact fractions the elements where the float64 error terms cannot be trusted:
    near overflow (the pair overflows or Dekker's split does) and near underflow (the error term
    itself underflows, so the rounding direction is lost)."""
    if op not in ("add", "sub", "mul", "div", "fma", "mad", "rcp", "sqrt"):
        return r
    xs = list(np.broadcast_arrays(*xs))
    finite = np.logical_and.reduce([np.isfinite(x) for x in xs])
    big = np.logical_or.reduce([np.abs(x) > 2.0**990 for x in xs])
    small = np.logical_or.reduce([(np.abs(x) < 2.0**-960) & (x != 0) for x in xs])
    with np.errstate(all="ignore"):
        risky = finite & (big | small | ~np.isfinite(hi) | ((np.abs(hi) < 2.0**-960) & (hi != 0)))
    if op in ("mul", "fma", "mad"):  # a product too small for its error term to survive
        with np.errstate(all="ignore"):
            risky |= finite & (np.abs(xs[0] * xs[1]) < 2.0**-960) & (xs[0] != 0) & (xs[1] != 0)
    if op in ("div", "rcp"):
        risky &= xs[-1] != 0
    if op in ("mul", "div", "rcp", "sqrt"):
        risky &= np.logical_and.reduce([x != 0 for x in xs])
    if op == "sqrt":
        risky &= xs[0] > 0
    if not risky.any():
        return r
    out = np.array(r, dtype=dt, copy=True)
    flat_out = out.reshape(-1)
    cols = [np.broadcast_to(x, risky.shape).reshape(-1) for x in xs]
    for k in np.flatnonzero(risky.reshape(-1)):
        f = [Fraction(float(c[k])) for c in cols]
        if op == "sqrt":
            flat_out[k] = _round_sqrt_fraction(f[0], mode, dt)
            continue
        q = _EXACT[op](*f)
        if q != 0:
            flat_out[k] = _round_fraction(q, mode, dt)
    return out


def _bracket(q: Fraction, dt: np.dtype) -> tuple[Any, Any]:
    """The neighbours lo <= q <= hi of q in the format dt (hi may be infinite)."""
    try:
        c = dt.type(float(q))
    except OverflowError:
        c = dt.type(np.inf if q > 0 else -np.inf)
    if np.isinf(c):
        big = np.finfo(dt).max
        return (dt.type(big), c) if q > 0 else (c, dt.type(-big))
    if Fraction(float(c)) == q:
        return c, c
    if Fraction(float(c)) < q:
        return c, np.nextafter(c, dt.type(np.inf))
    return np.nextafter(c, dt.type(-np.inf)), c


def _round_fraction(q: Fraction, mode: str, dt: np.dtype) -> Any:
    lo, hi = _bracket(q, dt)
    if lo == hi:
        return lo
    if mode == "rz":
        return lo if q > 0 else hi
    if mode == "rm":
        return lo
    if mode == "rp":
        return hi
    if np.isinf(hi) or np.isinf(lo):  # past the largest finite value: the overflow threshold decides
        big = Fraction(float(np.finfo(dt).max))
        half_ulp = Fraction(2) ** (np.finfo(dt).maxexp - np.finfo(dt).nmant - 2)
        return (hi if q > 0 else lo) if abs(q) >= big + half_ulp else (lo if q > 0 else hi)
    dlo, dhi = q - Fraction(float(lo)), Fraction(float(hi)) - q
    if dlo != dhi:
        return lo if dlo < dhi else hi
    even = (np.asarray(lo).view(UINT[dt.itemsize]) & 1) == 0
    return lo if even else hi


def _round_sqrt_fraction(a: Fraction, mode: str, dt: np.dtype) -> Any:
    c = dt.type(math.sqrt(float(a)))
    lo = c if Fraction(float(c)) ** 2 <= a else np.nextafter(c, dt.type(0))
    hi = lo if Fraction(float(lo)) ** 2 == a else np.nextafter(lo, dt.type(np.inf))
    if lo == hi or mode in ("rz", "rm"):
        return lo
    if mode == "rp":
        return hi
    mid = (Fraction(float(lo)) + Fraction(float(hi))) / 2
    return lo if mid * mid > a else hi
