"""Warp-level instructions (PTX ISA, "Parallel Synchronization and Communication Instructions" and
"Data Movement and Conversion Instructions: shfl.sync"): barriers, shuffles, votes, match, redux.

A *_sync collective first asks the machine whether every lane of its member mask is here
(`m.check_converged`: if some are on their way the lanes wait and the collective runs once they
come); then it combines the lanes of each warp at once with NumPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import UnsupportedInstruction
from ..ptx import Instr
from .contract import Builder, LaneSet, Machine, Op
from .operands import arr, builds, dtype, itype, reader, writer


@builds("bar", "barrier")
def _bar(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Parallel Synchronization and Communication Instructions: bar, barrier (bar.sync and
    bar.red: __syncthreads and its _count/_and/_or) and bar.warp.sync (__syncwarp). The lanes
    arrive and the machine releases the block (machine.Machine says when); partial barriers with
    a thread count and bar.arrive are not implemented."""
    if "warp" in instr.parts:
        mask = reader(ctx, instr.operands[0], np.dtype(np.uint32))

        def warp_sync(m: Machine, idx: LaneSet) -> None:
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


def lanes_of(m: Machine, idx: LaneSet) -> tuple[np.ndarray, np.ndarray]:
    t = m.threads(idx)
    return t, t & 31


@builds("shfl")
def _shfl(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Data Movement and Conversion Instructions: shfl.sync d|p, a, b, c, membermask.

    b is the source lane (.idx) or the offset (.up, .down, .bfly); c packs two fields the CUDA
    intrinsics fill in from `width`: bits 0-4 the clamp (31 for .idx/.down/.bfly, 0 for .up) and
    bits 8-12 the segment mask ((32 - width) << 8), which splits the warp into sub-warps. A lane
    whose source is out of its segment gets its own a and p = false. The value is read from the
    source lane's register even if that lane is inactive (PTX: undefined).
    """
    mode = next(p for p in instr.parts if p in ("up", "down", "bfly", "idx"))
    dst, a, b, c, *maskop = instr.operands
    outs = dst[1] if dst[0] == "pair" else [dst]
    wd = writer(ctx, outs[0])
    wp = writer(ctx, outs[1]) if len(outs) > 1 else None
    name_a = ctx.reg(a[1]) if a[0] == "reg" else None
    ra = reader(ctx, a, np.dtype(np.uint32))
    rb, rc = reader(ctx, b, np.dtype(np.uint32)), reader(ctx, c, np.dtype(np.uint32))
    rmask = reader(ctx, maskop[0], np.dtype(np.uint32)) if maskop else (lambda m, idx: np.uint32(0xFFFFFFFF))

    def run(m: Machine, idx: LaneSet) -> None:
        t, lane = lanes_of(m, idx)
        m.check_converged(instr, idx, rmask(m, idx))
        bval = arr(rb(m, idx)).astype(np.int64) & 31
        cval = arr(rc(m, idx)).astype(np.int64)
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
            full = m.registers[name_a]
            val = full[src]
        else:
            val = np.broadcast_to(np.asarray(ra(m, idx)), t.shape)
        wd(m, idx, val)
        if wp is not None:
            wp(m, idx, ok)
        m.record_lanes(instr, idx, "reg", "shfl", src - (t - lane), 4)

    return Op(instr, run)


def warp_reduce(m: Machine, idx: LaneSet, values: np.ndarray, how: str) -> np.ndarray:
    """Combine `values` over the active lanes of each warp; every lane gets its warp's result."""
    t, _ = lanes_of(m, idx)
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


def member_reduce(m: Machine, idx: LaneSet, values: np.ndarray, masks: Any, how: str) -> np.ndarray:
    """Combine `values` over the lanes each lane's member mask names (among the active ones):
    a *_sync collective with a partial mask (a cooperative-groups tile) sees only its members."""
    t, lane = lanes_of(m, idx)
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
def _vote(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Parallel Synchronization and Communication Instructions: vote.sync (.all, .any,
    .uni, .ballot) over the lanes of the member mask."""
    mode = next(p for p in instr.parts if p in ("all", "any", "uni", "ballot"))
    dst, p, *maskop = instr.operands
    w = writer(ctx, dst)
    rp = reader(ctx, p, np.dtype(np.bool_))
    rmask = reader(ctx, maskop[0], np.dtype(np.uint32)) if maskop else (lambda m, idx: np.uint32(0xFFFFFFFF))

    def run(m: Machine, idx: LaneSet) -> None:
        t, lane = lanes_of(m, idx)
        m.check_converged(instr, idx, rmask(m, idx))
        pred = np.broadcast_to(arr(rp(m, idx)), t.shape)
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
def _activemask(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Parallel Synchronization and Communication Instructions: activemask (the lanes
    that run this instruction together)."""
    w = writer(ctx, instr.operands[0])

    def run(m: Machine, idx: LaneSet) -> None:
        _, lane = lanes_of(m, idx)
        bits = np.left_shift(np.uint32(1), lane.astype(np.uint32)).astype(np.uint32)
        w(m, idx, warp_reduce(m, idx, bits, "or"))

    return Op(instr, run)


@builds("match")
def _match(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Parallel Synchronization and Communication Instructions: match.sync. .any: the lanes
    of the member mask with the same value; .all: the mask if all have the same value, else 0
    (and p says which)."""
    mode = "all" if "all" in instr.parts else "any"
    dt = dtype(itype(instr))
    dst, a, maskop = instr.operands[:3]
    outs = dst[1] if dst[0] == "pair" else [dst]
    wd = writer(ctx, outs[0])
    wp = writer(ctx, outs[1]) if len(outs) > 1 else None
    ra, rmask = reader(ctx, a, dt), reader(ctx, maskop, np.dtype(np.uint32))

    def run(m: Machine, idx: LaneSet) -> None:
        t, lane = lanes_of(m, idx)
        m.check_converged(instr, idx, rmask(m, idx))
        v = np.broadcast_to(arr(ra(m, idx)), t.shape)
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
def _redux(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Parallel Synchronization and Communication Instructions: redux.sync (.add, .min,
    .max, .and, .or, .xor over the member mask, on 32-bit integers)."""
    how = next(p for p in instr.parts if p in ("add", "min", "max", "and", "or", "xor"))
    dt = dtype(itype(instr))
    dst, a, maskop = instr.operands
    w, ra, rmask = writer(ctx, dst), reader(ctx, a, dt), reader(ctx, maskop, np.dtype(np.uint32))

    def run(m: Machine, idx: LaneSet) -> None:
        t, _ = lanes_of(m, idx)
        m.check_converged(instr, idx, rmask(m, idx))
        v = np.broadcast_to(arr(ra(m, idx)), t.shape).astype(dt)
        w(m, idx, member_reduce(m, idx, v, rmask(m, idx), how).astype(dt))
        m.record_sync(instr, idx, "vote")

    return Op(instr, run)
