"""Comparison and selection (PTX ISA, "Comparison and Selection Instructions" and "Half Precision
Comparison Instructions"): set, setp, selp, slct.

Float comparisons are ordered (false when either side is NaN) unless the comparison ends in u
(equ, ltu, ...: true when either is NaN); num and nan test for NaNs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...errors import UnsupportedInstruction
from ..ptx import Instr
from .contract import Builder, LaneSet, Machine, Op
from .floating import flush_subnormal
from .halves import HALVES, half_flush, half_fmt, half_to_f64, lanes16, pack16, storage16
from .operands import arr, builds, dtype, itype, reader, select, simple, writer

_CMP = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal,
}  # fmt: skip


def comparison(cmp: str) -> Callable[[Any, Any], Any]:
    if cmp in _CMP:
        f = _CMP[cmp]
        if cmp == "ne":  # ordered: false when either is NaN
            return lambda a, b: (
                np.not_equal(a, b) & ~(np.isnan(a) | np.isnan(b)) if arr(a).dtype.kind == "f" else f(a, b)
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
def _setp(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Comparison and Selection Instructions: set, setp. setp writes p (and q = !p in
    setp d|q), combined with a third predicate by .and/.or/.xor; set writes all ones (1.0 for f32)
    or 0. 16-bit float sources go to `_half_setp`."""
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

        def run_set(m: Machine, idx: LaneSet) -> None:
            x, y = ra(m, idx), rb(m, idx)
            p = cmp(flush_subnormal(x) if ftz else x, flush_subnormal(y) if ftz else y)
            if rc is not None and boolop is not None:
                p = boolop(p, rc(m, idx))
            w(m, idx, np.where(p, ones, out_t.type(0)).astype(out_t))

        return Op(instr, run_set)
    outs = dst[1] if dst[0] == "pair" else [dst]
    wp = writer(ctx, outs[0])
    wq = writer(ctx, outs[1]) if len(outs) > 1 else None

    def run(m: Machine, idx: LaneSet) -> None:
        x, y = ra(m, idx), rb(m, idx)
        if ftz:
            x, y = flush_subnormal(x), flush_subnormal(y)
        p = arr(cmp(x, y))
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


def _half_setp(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Half Precision Comparison Instructions: set, setp on f16, bf16 and packed pairs.
    setp.f16x2 writes p|q (low lane, high lane); set.*.f16x2.f16x2 writes 1.0 or 0.0 per lane,
    set.*.u32.f16x2 0xFFFF or 0 per lane."""
    src = instr.parts[-1]
    fmt = half_fmt(src)
    cmp = comparison(instr.parts[1])
    boolop = next((_BOOL[p] for p in instr.parts[2:] if p in _BOOL), None)
    ftz = "ftz" in instr.parts
    dst, a, b, *rest = instr.operands
    ra, rb = reader(ctx, a, storage16(src)), reader(ctx, b, storage16(src))
    rc = reader(ctx, rest[0], np.dtype(np.bool_)) if rest else None

    def preds(m: Machine, idx: LaneSet) -> list[np.ndarray]:
        la, lb = lanes16(ra(m, idx), src), lanes16(rb(m, idx), src)
        out = []
        for x, y in zip(la, lb):
            vx, vy = half_to_f64(x, fmt), half_to_f64(y, fmt)
            if ftz:
                vx, vy = half_flush(vx, fmt), half_flush(vy, fmt)
            p = np.asarray(cmp(vx, vy))
            if rc is not None and boolop is not None:
                p = boolop(p, rc(m, idx))
            out.append(p)
        return out

    if instr.parts[0] == "set":
        out_t = instr.parts[-2]
        w = writer(ctx, dst)
        if out_t in HALVES:
            one = np.uint16(0x3C00 if half_fmt(out_t) == "f16" else 0x3F80)
        else:
            one = np.uint16(0xFFFF) if src.endswith("x2") else None

        def run_set(m: Machine, idx: LaneSet) -> None:
            ps = preds(m, idx)
            if one is None:  # a 32-bit integer or float from one comparison
                dt = dtype(out_t)
                ones = (
                    np.float32(1.0) if dt.kind == "f" else dt.type(np.iinfo(dt).max if dt.kind == "u" else -1)
                )
                w(m, idx, np.where(ps[0], ones, dt.type(0)).astype(dt))
                return
            w(m, idx, pack16([np.where(p, one, np.uint16(0)).astype(np.uint16) for p in ps], src))

        return Op(instr, run_set)
    outs = dst[1] if dst[0] == "pair" else [dst]
    ws = [writer(ctx, o) for o in outs]

    def run(m: Machine, idx: LaneSet) -> None:
        ps = preds(m, idx)
        if len(ps) == 1 and len(ws) == 2:  # p|q on a scalar: q is the complement
            ps = [ps[0], ~ps[0]]
        for w, p in zip(ws, ps):
            w(m, idx, p)

    return Op(instr, run)


@builds("selp")
def _selp(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Comparison and Selection Instructions: selp (d = c ? a : b)."""
    dt = dtype(itype(instr))
    return simple(instr, ctx, lambda a, b, c: select(c, a, b).astype(dt), [dt, dt, np.dtype(np.bool_)])


@builds("slct")
def _slct(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Comparison and Selection Instructions: slct (d = c >= 0 ? a : b; c is s32 or f32;
    .ftz flushes a subnormal c to a zero of its sign first, so -1e-45 selects a)."""
    dt = dtype(instr.parts[-2])
    ct = dtype(instr.parts[-1])
    ftz = "ftz" in instr.parts
    return simple(
        instr,
        ctx,
        lambda a, b, c: select((flush_subnormal(c) if ftz else arr(c)) >= 0, a, b).astype(dt),
        [dt, dt, ct],
    )
