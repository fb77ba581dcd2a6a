"""Moves and conversions (PTX ISA, "Data Movement and Conversion Instructions": mov, cvt).

cvt rounds with the float code's `round_exact` (a 64-bit integer is first split into an exact
pair of doubles), saturates float -> integer conversions as PTX always does, and writes what an
H200 writes for NaN (`nan_to_int`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import UnsupportedInstruction
from ..ptx import Instr
from .contract import Builder, LaneSet, Machine, Op
from .floating import flush_subnormal, flushes, round_exact, two_sum
from .halves import HALVES, f64_to_half, half_finish, half_fmt, half_to_f64, pack16, storage16
from .operands import DT, UINT, arr, builds, dtype, itype, reader, simple, writer


@builds("mov")
def _mov(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Data Movement and Conversion Instructions: mov, including the vector forms that pack
    and unpack a wide register (mov.b64 %rd, {lo, hi}: lo is the low half)."""
    dt = dtype(itype(instr))
    dst, src = instr.operands
    if dst[0] == "vec" and len(dst[1]) > 1:  # unpack: mov.b64 {lo, hi}, %rd
        parts = [writer(ctx, d) for d in dst[1]]
        piece = UINT[dt.itemsize // len(parts)]
        r = reader(ctx, src, dt)

        def unpack(m: Machine, idx: LaneSet) -> None:
            v = np.ascontiguousarray(arr(r(m, idx)).reshape(-1))
            halves = v.view(piece).reshape(v.size, len(parts))
            for k, w in enumerate(parts):
                w(m, idx, halves[:, k] if idx is not None or v.size > 1 else halves[0, k])

        return Op(instr, unpack)
    if src[0] == "vec" and len(src[1]) > 1:  # pack: mov.b64 %rd, {lo, hi}
        piece_t = np.dtype(UINT[dt.itemsize // len(src[1])])
        rs = [reader(ctx, s, piece_t) for s in src[1]]
        w = writer(ctx, dst)

        def pack(m: Machine, idx: LaneSet) -> None:
            vals = np.broadcast_arrays(*[arr(r(m, idx)) for r in rs])
            w(m, idx, np.ascontiguousarray(np.stack(vals, axis=-1)).view(dt).reshape(vals[0].shape))

        return Op(instr, pack)
    w = writer(ctx, dst)
    r = reader(ctx, src, dt)
    return Op(instr, lambda m, idx: w(m, idx, r(m, idx)))


@builds("cvt")
def _cvt(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Data Movement and Conversion Instructions: cvt between integer and float types
    (.rn/.rz/.rm/.rp, the .rni-style rounding to integers, .sat, .ftz); float -> integer always
    saturates, NaN gives `nan_to_int`. 16-bit floats go to `_half_cvt`."""
    types = [p for p in instr.parts if p in DT]
    if len(types) != 2 or any(p in instr.parts for p in ("tf32", "e4m3x2", "e5m2x2", "rna")):
        raise UnsupportedInstruction(f"the emulator does not implement the conversion '{instr.opcode}'")
    if types[0] in HALVES or types[1] in HALVES:
        return _half_cvt(instr, ctx, types)
    dt, st = dtype(types[0]), dtype(types[1])
    mode = next((p for p in instr.parts if p in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi")), "")
    sat, ftz = "sat" in instr.parts, "ftz" in instr.parts

    def f(a: Any) -> Any:
        a = arr(a)
        if ftz:
            a = flush_subnormal(a)
        if st.kind == "f" and dt.kind == "f":
            if mode in ("rni", "rzi", "rmi", "rpi"):
                a = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[mode](a)
            if mode in ("rz", "rm", "rp") and dt.itemsize < st.itemsize:
                r = round_exact(a.astype(np.float64), 0.0, mode, dt)
            else:
                r = a.astype(dt)
            if sat:  # NaN -> 0, and -0 + 0 is +0 as on the GPU
                r = (np.where(np.isnan(r), dt.type(0), np.clip(r, 0, 1)) + dt.type(0)).astype(dt)
            if ftz and dt == np.float32:  # a double too small for a normal float flushes
                r = np.where(flushes(a), np.copysign(np.float32(0), a), r).astype(dt)
            return r
        if st.kind == "f":  # float -> int: round, then saturate (PTX always saturates here)
            rnd = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil, "": np.trunc}[mode or ""]
            return _float_to_int(rnd(a.astype(np.float64)), dt, types[1])
        if dt.kind == "f":  # int -> float: 64-bit integers are an exact pair of doubles
            if mode in ("rz", "rm", "rp") or (a.dtype.itemsize == 8 and dt.itemsize == 8):
                hi, err = _int_pair(a)
                return round_exact(hi, err, mode or "rn", dt)
            return a.astype(dt)
        return _saturated(a, dt) if sat else a.astype(dt)

    return simple(instr, ctx, f, [st])


def _half_cvt(instr: Instr, ctx: Builder, types: list[str]) -> Op:
    """PTX ISA, Data Movement and Conversion Instructions: cvt where either side is f16, bf16 or a
    packed pair (cvt.rn.f16x2.f32 d, a, b puts a in the *high* half), rounded once."""
    dst_t, src_t = types
    mode = next((p for p in instr.parts if p in ("rn", "rz", "rm", "rp")), "rn")
    rint = next((p for p in instr.parts if p in ("rni", "rzi", "rmi", "rpi")), "")
    flags = {"ftz": "ftz" in instr.parts, "sat": "sat" in instr.parts, "relu": "relu" in instr.parts,
             "satfinite": "satfinite" in instr.parts}  # fmt: skip
    if dst_t == "f16":  # a GPU ignores .ftz converting to f16, source and result (ptx_truth.json, an H200)
        flags["ftz"] = False
    dst, *srcs = instr.operands
    w = writer(ctx, dst)
    if dst_t.endswith("x2"):  # two float32 sources packed: the first goes to the upper half
        fmt = half_fmt(dst_t)
        rs = [reader(ctx, s, dtype(src_t)) for s in srcs]

        def run_pack(m: Machine, idx: LaneSet) -> None:
            a, b = (arr(r(m, idx)).astype(np.float64) for r in rs)
            hi_, lo_ = (half_finish(f64_to_half(v, 0.0, fmt, mode), fmt, **flags) for v in (a, b))
            w(m, idx, pack16([lo_, hi_], dst_t))

        return Op(instr, run_pack)
    if src_t.endswith("x2"):
        raise UnsupportedInstruction(f"the emulator does not implement the conversion '{instr.opcode}'")
    r = reader(ctx, srcs[0], storage16(src_t) if src_t in HALVES else dtype(src_t))

    def value(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The source as an exact float64 pair."""
        if src_t in HALVES:
            v = half_to_f64(a, half_fmt(src_t))
            return v, np.zeros_like(v)
        if dtype(src_t).kind == "f":
            v = a.astype(np.float64)
            if flags["ftz"] and a.dtype == np.float32:
                v = flush_subnormal(a).astype(np.float64)
            return v, np.zeros_like(v)
        return _int_pair(a)

    def run(m: Machine, idx: LaneSet) -> None:
        a = arr(r(m, idx))
        hi, err = value(a)
        if rint:
            hi = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[rint](hi)
            err = np.zeros_like(hi)
        if dst_t in HALVES:
            fmt = half_fmt(dst_t)
            bits = f64_to_half(hi, err, fmt, mode)
            w(m, idx, half_finish(bits, fmt, **flags))
            return
        dt = dtype(dst_t)
        if dt.kind == "f":
            out = round_exact(hi, err, mode, dt) if dt.itemsize < 8 or np.any(err) else hi.astype(dt)
            if flags["sat"]:
                out = (np.where(np.isnan(out), dt.type(0), np.clip(out, 0, 1)) + dt.type(0)).astype(dt)
            if flags["ftz"]:  # a bf16 subnormal is a float32 subnormal: flushed
                out = flush_subnormal(np.asarray(out, dt))
            w(m, idx, np.asarray(out, dt))
            return
        rnd = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil, "": np.trunc}[rint]
        w(m, idx, _float_to_int(rnd(hi), dt, src_t))

    return Op(instr, run)


def _saturated(a: np.ndarray, dt: np.dtype) -> np.ndarray:
    """An integer converted to another integer type, clamped to its range (exactly: 64-bit values do
    not fit a double)."""
    want, have = np.iinfo(dt), np.iinfo(a.dtype)
    out = a.astype(dt)
    if have.min < want.min:
        out = np.where(a < want.min, dt.type(want.min), out)
    if have.max > want.max:
        out = np.where(a > a.dtype.type(want.max), dt.type(want.max), out)
    return out


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
    return two_sum(high, low)


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
