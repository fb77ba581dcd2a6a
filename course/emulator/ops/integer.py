"""Integer arithmetic and bit manipulation (PTX ISA, "Integer Arithmetic Instructions",
"Extended-Precision Integer Arithmetic Instructions", "Logic and Shift Instructions").

Integers wrap around at their width as on the GPU (NumPy's fixed-width arithmetic); .sat clamps
through int64; .hi and .wide keep the upper half of the double-width product.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import UnsupportedInstruction
from ..ptx import Instr
from .contract import Builder, LaneSet, Machine, Op
from .operands import DT, SINT, UINT, UINT_NAME, arr, builds, dtype, itype, reader, select, simple, writer

# ---------------------------------------------------------------- arithmetic


def int_arith(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Integer Arithmetic Instructions: add, sub, mul, mad, div, rem, min, max on integers
    (.sat, .hi, .wide, .relu; u16x2/s16x2 lane by lane). div and rem by zero give what the GPU
    gives (tests/emulator/ptx_truth.json, an H200): all ones, for both."""
    op, t = instr.parts[0], itype(instr)
    dt = dtype(t)
    f: Callable[..., Any]
    if t in ("u16x2", "s16x2"):
        return _simd16(instr, ctx)
    if "relu" in instr.parts and op in ("min", "max"):
        return _int_relu(instr, ctx)
    wide = "wide" in instr.parts
    hi = "hi" in instr.parts
    sat = "sat" in instr.parts
    if op in ("mul", "mad") and (wide or hi):
        return _mul_wide_hi(instr, ctx, dt, wide, op == "mad")
    if op == "add":
        f = (lambda a, b: _int_sat(arr(a).astype(np.int64) + b, dt)) if sat else np.add
    elif op == "sub":
        f = (lambda a, b: _int_sat(arr(a).astype(np.int64) - b, dt)) if sat else np.subtract
    elif op == "mul":
        f = np.multiply
    elif op == "mad":
        f = (
            (lambda a, b, c: _int_sat(arr(a).astype(np.int64) * b + c, dt))
            if sat
            else (lambda a, b, c: a * b + c)
        )
    elif op == "div":
        f = _idiv
    elif op == "rem":
        f = _irem
    elif op == "min":
        f = np.minimum
    elif op == "max":
        f = np.maximum
    else:
        raise UnsupportedInstruction(f"{instr.opcode} on integers")
    return simple(instr, ctx, lambda *xs: arr(f(*xs)).astype(dt, copy=False))


def _int_sat(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    info = np.iinfo(dt)
    return np.clip(x, info.min, info.max).astype(dt)


def _idiv(a: Any, b: Any) -> Any:
    a, b = np.broadcast_arrays(arr(a), arr(b))
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
    a, b = np.broadcast_arrays(arr(a), arr(b))
    zero = b == 0
    bs = np.where(zero, 1, b)
    r = np.fmod(a, bs) if a.dtype.kind == "i" else a % bs
    return np.where(
        zero, a.dtype.type(-1 & np.iinfo(a.dtype).max) if a.dtype.kind == "u" else a.dtype.type(-1), r
    )


def _mul_wide_hi(instr: Instr, ctx: Builder, dt: np.dtype, wide: bool, mad: bool) -> Op:
    """PTX ISA, Integer Arithmetic Instructions: mul and mad with .wide (the double-width product)
    or .hi (its upper half; 64-bit operands through four 32-bit partial products)."""
    size = dt.itemsize
    signed = dt.kind == "i"
    if wide:
        out = (SINT if signed else UINT)[size * 2]

        def f(a: Any, b: Any, *c: Any) -> Any:
            r = arr(a).astype(out) * arr(b).astype(out)
            return r + c[0] if c else r

        types = [dt, dt, np.dtype(out)] if mad else None
        dst, *srcs = instr.operands
        w = writer(ctx, dst)
        rs = [reader(ctx, s, types[i] if types else dt) for i, s in enumerate(srcs)]
        return Op(instr, lambda m, idx: w(m, idx, f(*[r(m, idx) for r in rs])))
    if size <= 4:
        big = np.int64 if signed else np.uint64
        sat = "sat" in instr.parts  # mad.hi.sat.s32: the sum clamped to the s32 range, not wrapped

        def f(a: Any, b: Any, *c: Any) -> Any:
            h = (arr(a).astype(big) * arr(b).astype(big)) >> (8 * size)
            if c and sat:
                return _int_sat(h + arr(c[0]).astype(np.int64), dt)
            r = h.astype(dt)
            return r + c[0] if c else r

        return simple(instr, ctx, f)

    def f64(a: Any, b: Any, *c: Any) -> Any:
        ua, ub = np.broadcast_arrays(
            arr(a).view(np.uint64) if arr(a).ndim else arr(a).astype(np.uint64),
            arr(b).view(np.uint64) if arr(b).ndim else arr(b).astype(np.uint64),
        )
        h = _mulhi_u64(ua, ub)
        if signed:
            h = (
                h
                - np.where(arr(a) < 0, ub, 0).astype(np.uint64)
                - np.where(arr(b) < 0, ua, 0).astype(np.uint64)
            )
        r = h.view(dt) if h.ndim else h.astype(dt)
        return r + c[0] if c else r

    return simple(instr, ctx, f64)


def _mulhi_u64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    m32 = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    al, ah, bl, bh = a & m32, a >> s32, b & m32, b >> s32
    ll, lh, hl, hh = al * bl, al * bh, ah * bl, ah * bh
    mid = (ll >> s32) + (lh & m32) + (hl & m32)
    return hh + (lh >> s32) + (hl >> s32) + (mid >> s32)


def _simd16(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Integer Arithmetic Instructions: add, sub, min, max (.relu, .sat) on .u16x2/.s16x2,
    two 16-bit lanes of a 32-bit register (sm_90)."""
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


def _int_relu(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Integer Arithmetic Instructions: max.relu, min.relu: the result clamped at 0."""
    dt = dtype(itype(instr))
    f = np.maximum if instr.parts[0] == "max" else np.minimum
    return simple(instr, ctx, lambda a, b: np.maximum(f(a, b), 0).astype(dt))


@builds("mul24", "mad24")
def _mul24(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Integer Arithmetic Instructions: mul24, mad24 (.lo/.hi): products of the low 24
    bits, sign-extended for .s32; .hi is bits 16-47 of the 48-bit product."""
    dt = dtype(itype(instr))
    signed = dt.kind == "i"
    hi = "hi" in instr.parts
    if "sat" in instr.parts:
        raise UnsupportedInstruction(f"the emulator does not implement '{instr.opcode}'")

    def low24(x: Any) -> np.ndarray:
        v = arr(x).astype(np.int64) & 0xFFFFFF
        return np.where(v >= 0x800000, v - 0x1000000, v) if signed else v

    def f(a: Any, b: Any, *c: Any) -> Any:
        p = low24(a) * low24(b)  # at most 48 bits
        r = (p >> 16) if hi else p
        r = (r & 0xFFFFFFFF).astype(np.uint32)
        if c:
            r = r + arr(c[0]).astype(np.uint32)
        return r.astype(np.uint32).view(dt) if np.ndim(r) else np.uint32(r).view(dt)

    return simple(instr, ctx, f, [dt] * (len(instr.operands) - 1))


@builds("addc", "subc", "madc")
def carry_op(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Extended-Precision Integer Arithmetic Instructions: add.cc, addc, sub.cc, subc,
    mad.cc, madc: multi-word arithmetic through the carry flag, kept in the register %cc."""
    op = instr.parts[0]
    dt = dtype(itype(instr))
    u = np.dtype(UINT[dt.itemsize])
    use_cf, set_cf = op.endswith("c"), "cc" in instr.parts
    dst, *srcs = instr.operands
    w = writer(ctx, dst)
    rs = [reader(ctx, x, u) for x in srcs]
    wcf, rcf = writer(ctx, ("reg", "%cc", False)), reader(ctx, ("reg", "%cc", False), np.dtype(np.bool_))
    hi = "hi" in instr.parts

    def run(m: Machine, idx: LaneSet) -> None:
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


def _carry_add(a: np.ndarray, b: np.ndarray, cin: Any) -> tuple[np.ndarray, np.ndarray]:
    """a + b + cin with wrap-around, and the carry out (unsigned arrays of one width)."""
    s1 = a + b
    s2 = s1 + np.asarray(cin).astype(a.dtype)
    return s2, (s1 < a) | (s2 < s1)


@builds("dp4a", "dp2a")
def _dot_product(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Integer Arithmetic Instructions: dp4a (c + the four byte products of a and b),
    dp2a (two 16x8-bit products; .lo/.hi picks the bytes of b)."""
    ta, tb = (dtype(t) for t in [p for p in instr.parts if p in DT][:2])
    dst, a, b, c = instr.operands
    w = writer(ctx, dst)
    ra, rb = reader(ctx, a, np.dtype(np.uint32)), reader(ctx, b, np.dtype(np.uint32))
    rc = reader(ctx, c, np.dtype(np.int32 if ta.kind == "i" or tb.kind == "i" else np.uint32))
    four = instr.parts[0] == "dp4a"
    hi = "hi" in instr.parts

    def run(m: Machine, idx: LaneSet) -> None:
        x, y = np.broadcast_arrays(arr(ra(m, idx)), arr(rb(m, idx)))
        total = arr(rc(m, idx)).astype(np.int64)
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
def _sad(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Integer Arithmetic Instructions: sad (d = c + |a - b|)."""
    dt = dtype(itype(instr))
    return simple(instr, ctx, lambda a, b, c: (c + select(a > b, a - b, b - a)).astype(dt))


_VIDEO: dict[str, Callable[..., Any]] = {
    "vabsdiff": lambda a, b: np.abs(a - b), "vadd": np.add, "vsub": np.subtract, "vmin": np.minimum,
    "vmax": np.maximum, "vavrg": lambda a, b: _average_away(a + b),
}  # fmt: skip


def _average_away(total: np.ndarray) -> np.ndarray:
    """vavrg's lane: half the sum, a half rounded away from zero (up for unsigned lanes; a GPU's
    signed lanes round -0.5 to -1, tests/emulator/ptx_truth.json)."""
    return np.where(total >= 0, (total + 1) >> 1, -((1 - total) >> 1))


@builds(*[f"{op}{n}" for op in _VIDEO for n in (2, 4)])
def _video(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, SIMD Video Instructions: vadd2/4, vsub2/4, vavrg2/4, vabsdiff2/4, vmin2/4, vmax2/4:
    per-half (2) or per-byte (4) lanes; .sat clamps each lane, .add sums the lanes into c."""
    name, lanes = instr.parts[0][:-1], int(instr.parts[0][-1])
    bits = 32 // lanes
    signed = [t.startswith("s") for t in instr.parts if t in DT]  # d, a, b
    dst, a, b, c = instr.operands
    w = writer(ctx, dst)
    ra, rb, rc = (reader(ctx, o, np.dtype(np.uint32)) for o in (a, b, c))
    sat, add = "sat" in instr.parts, "add" in instr.parts
    f = _VIDEO[name]

    def run(m: Machine, idx: LaneSet) -> None:
        x, y, z = np.broadcast_arrays(*(arr(r(m, idx)) for r in (ra, rb, rc)))
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


# ---------------------------------------------------------------- bits


def int_unary(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Integer Arithmetic Instructions: abs, neg, popc, clz, bfind, brev; Logic and Shift
    Instructions: not, cnot. popc, clz and bfind write a u32 whatever the source width; bfind gives
    the position of the most significant non-sign bit (.shiftamt: its distance from the top), or
    0xFFFFFFFF if there is none."""
    op, t = instr.parts[0], itype(instr)
    dt = dtype(t)
    if op == "abs":
        return simple(instr, ctx, np.abs)
    if op == "neg":
        return simple(instr, ctx, np.negative)
    if op == "not":
        return simple(instr, ctx, np.invert if dt.kind != "b" else np.logical_not)
    if op == "cnot":
        return simple(instr, ctx, lambda a: (arr(a) == 0).astype(dt))
    u32 = np.dtype(np.uint32)
    dst, src = instr.operands
    w, r = writer(ctx, dst), reader(ctx, src, dtype(UINT_NAME[dt.itemsize]))
    if op == "popc":
        return Op(instr, lambda m, idx: w(m, idx, popcount(r(m, idx)).astype(u32)))
    if op == "clz":
        return Op(instr, lambda m, idx: w(m, idx, (8 * dt.itemsize - bit_length(r(m, idx))).astype(u32)))
    if op == "brev":
        return Op(instr, lambda m, idx: w(m, idx, bit_reverse(r(m, idx))))
    shiftamt = "shiftamt" in instr.parts
    rs = reader(ctx, src, dt)

    def bfind(m: Machine, idx: LaneSet) -> None:
        v = arr(rs(m, idx))
        u = np.where(v < 0, ~v, v).astype(UINT[dt.itemsize]) if dt.kind == "i" else v
        pos = bit_length(u).astype(np.int64) - 1
        res = np.where(pos < 0, 0xFFFFFFFF, (8 * dt.itemsize - 1 - pos) if shiftamt else pos)
        w(m, idx, res.astype(u32))

    return Op(instr, bfind)


_BYTE_POPC = np.array([bin(i).count("1") for i in range(256)], np.uint8)


_BYTE_REV = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], np.uint8)


def popcount(v: Any) -> np.ndarray:
    a = np.ascontiguousarray(arr(v))
    b = a.reshape(-1).view(np.uint8).reshape(a.size, a.itemsize)
    return _BYTE_POPC[b].sum(axis=1, dtype=np.uint32).reshape(a.shape)


def bit_length(v: Any) -> np.ndarray:
    a = arr(v).astype(np.uint64)
    hi = (a >> np.uint64(32)).astype(np.float64)
    lo = (a & np.uint64(0xFFFFFFFF)).astype(np.float64)
    with np.errstate(divide="ignore"):
        bl_hi = np.where(hi > 0, np.floor(np.log2(np.maximum(hi, 1))) + 33, 0)
        bl_lo = np.where(lo > 0, np.floor(np.log2(np.maximum(lo, 1))) + 1, 0)
    return np.where(hi > 0, bl_hi, bl_lo).astype(np.int64)


def bit_reverse(v: Any) -> np.ndarray:
    a = np.ascontiguousarray(arr(v))
    b = _BYTE_REV[a.reshape(-1).view(np.uint8).reshape(a.size, a.itemsize)[:, ::-1]]
    return np.ascontiguousarray(b).view(a.dtype).reshape(a.shape)


@builds("and", "or", "xor")
def _bitwise(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Logic and Shift Instructions: and, or, xor (on predicates too)."""
    dt = dtype(itype(instr))
    f: Callable[..., Any]
    if dt.kind == "b":
        f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[instr.parts[0]]
    else:
        f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[instr.parts[0]]
    return simple(instr, ctx, f)


@builds("shl", "shr")
def _shift(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Logic and Shift Instructions: shl, shr. Shifts past the width give 0 (shr.s: the
    sign), as PTX clamps the amount; the amount is always read as u32."""
    dt = dtype(itype(instr))
    bits = 8 * dt.itemsize
    if instr.parts[0] == "shr" and dt.kind == "i":
        f = lambda a, b: np.right_shift(a, np.minimum(arr(b), bits - 1).astype(dt))  # noqa: E731
    else:
        sh = np.left_shift if instr.parts[0] == "shl" else np.right_shift

        def f(a: Any, b: Any) -> Any:
            b = arr(b)
            return np.where(b >= bits, dt.type(0), sh(a, np.minimum(b, bits - 1).astype(dt)))

    return simple(instr, ctx, f, [dt, np.dtype(np.uint32)])


def _field_arg(x: Any, bits: int) -> np.ndarray:
    """bfe/bfi's position or length: the PTX ISA restricts it to 0..255; past that, a GPU reads a
    32-bit field's modulo 256 and saturates a 64-bit one (tests/emulator/ptx_truth.json, an H200)."""
    v = arr(x).astype(np.int64)
    return v & 0xFF if bits == 32 else v


@builds("bfe")
def _bfe(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Integer Arithmetic Instructions: bfe. Extract `len` bits from `pos`; for signed types
    the bits past the field (or past the msb) copy its top bit."""
    dt = dtype(itype(instr))
    bits = 8 * dt.itemsize
    u = UINT[dt.itemsize]

    def f(a: Any, pos: Any, ln: Any) -> Any:
        a, pos, ln = np.broadcast_arrays(arr(a), _field_arg(pos, bits), _field_arg(ln, bits))
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
def _bfi(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Integer Arithmetic Instructions: bfi (insert the low `len` bits of a into b at `pos`)."""
    dt = dtype(itype(instr))
    bits = 8 * dt.itemsize
    u = UINT[dt.itemsize]

    def f(a: Any, b: Any, pos: Any, ln: Any) -> Any:
        pos = np.minimum(_field_arg(pos, bits), bits)
        ln = _field_arg(ln, bits)
        mask = np.where(ln >= bits, ~u(0), np.left_shift(u(1), np.minimum(ln, bits - 1).astype(u)) - u(1))
        mask = np.where(pos >= bits, u(0), np.left_shift(mask, np.minimum(pos, bits - 1).astype(u)))
        ins = np.where(
            pos >= bits, u(0), np.left_shift(arr(a).astype(u), np.minimum(pos, bits - 1).astype(u))
        )
        return (ins & mask) | (arr(b).astype(u) & ~mask)

    return simple(instr, ctx, f, [dt, dt, np.dtype(np.uint32), np.dtype(np.uint32)])


@builds("prmt")
def _prmt(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Data Movement and Conversion Instructions: prmt. Each result byte is a byte of the
    pair {b, a} picked by a selector nibble of c (the default mode; bit 3 replicates its sign), or
    by the .f4e, .b4e, .rc8, .ecl, .ecr, .rc16 patterns."""
    mode = next((p for p in instr.parts if p in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")), "")

    def f(a: Any, b: Any, c: Any) -> Any:
        a, b, c = np.broadcast_arrays(
            arr(a).astype(np.uint64), arr(b).astype(np.uint64), arr(c).astype(np.uint64)
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
def _lop3(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Logic and Shift Instructions: lop3 (any function of three inputs, by its truth table)."""

    def f(a: Any, b: Any, c: Any, lut: Any) -> Any:
        lut = int(lut)
        out = np.zeros(np.broadcast(a, b, c).shape, np.uint32)
        for i in range(8):
            if lut >> i & 1:
                ta = a if i & 4 else ~arr(a)
                tb = b if i & 2 else ~arr(b)
                tc = c if i & 1 else ~arr(c)
                out |= ta & tb & tc
        return out

    return simple(instr, ctx, f, [np.dtype(np.uint32)] * 4)


@builds("shf")
def _shf(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Logic and Shift Instructions: shf.l, shf.r: a funnel shift of the 64-bit {b, a}
    (.clamp: by at most 32; .wrap: by c mod 32)."""
    left = "l" in instr.parts
    clamp = "clamp" in instr.parts

    def f(a: Any, b: Any, c: Any) -> Any:
        n = np.minimum(arr(c), 32) if clamp else arr(c) & 31
        wide = arr(a).astype(np.uint64) | (arr(b).astype(np.uint64) << np.uint64(32))
        n = arr(n).astype(np.uint64)
        if left:
            return ((wide << n) >> np.uint64(32)).astype(np.uint32)
        return (wide >> n).astype(np.uint32)

    return simple(instr, ctx, f, [np.dtype(np.uint32)] * 3)


@builds("fns")
def _fns(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Integer Arithmetic Instructions: fns (find the offset-th set bit of mask, counting
    up or down from bit base; 0xFFFFFFFF if there is none)."""

    def f(mask: Any, base: Any, offset: Any) -> Any:
        mask, base, offset = np.broadcast_arrays(
            arr(mask).astype(np.int64),
            arr(base).astype(np.int64),
            arr(offset).astype(np.int32).astype(np.int64),
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
