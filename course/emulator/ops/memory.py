"""Memory instructions (PTX ISA, "Data Movement and Conversion Instructions": ld, ldu, st, cvta,
isspacep, prefetch; "Parallel Synchronization and Communication Instructions": atom, red, membar,
fence), with every atomic operation in one place.

The machine resolves an address (space, buffer, bounds, alignment, the trace); what a load, a
store or an atomic does with the memory it gets back is here. Atomics apply in thread order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import UnsupportedInstruction
from ..memory import LOCAL_WINDOW, SHARED_WINDOW, WINDOW_SIZE
from ..ptx import Instr
from .contract import Builder, LaneSet, Machine, Op
from .floating import two_sum
from .halves import HALVES, f64_to_half, half_fmt, half_to_f64, lanes16, pack16, storage16
from .operands import SPACES, arr, builds, dtype, itype, reader, select, writer


@builds("ld", "ldu")
def _ld(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Data Movement and Conversion Instructions: ld, ldu in every state space and vector
    width (.v2/.v4: the machine returns one row per lane). Kernel and call .params go to `_ld_param`."""
    space = _space(instr)
    dt = dtype(itype(instr))
    n = _vec(instr)
    dst, src = instr.operands
    dsts = dst[1] if dst[0] == "vec" else [dst]
    ws = [writer(ctx, d) for d in dsts]
    if space == "param":
        return _ld_param(instr, ctx, src, dt, ws)
    addr = address(ctx, src)

    def run(m: Machine, idx: LaneSet) -> None:
        vals = m.load(instr, space, addr(m, idx), idx, dt, n)
        for k, w in enumerate(ws):
            w(m, idx, vals[:, k] if n > 1 else vals)

    return Op(instr, run)


def _ld_param(instr: Instr, ctx: Builder, src: tuple, dt: np.dtype, ws: list) -> Op:
    """PTX ISA, Data Movement and Conversion Instructions: ld.param: a kernel parameter (one value
    for every thread) or a device-function call's per-thread .param."""
    name, off = src[1], src[2]
    if ctx.is_kernel_param(name):

        def run_kernel_param(m: Machine, idx: LaneSet) -> None:
            for k, w in enumerate(ws):
                w(m, idx, m.param_scalar(name, off + k * dt.itemsize, dt))

        return Op(instr, run_kernel_param)
    key = ctx.param_var(name)

    def run(m: Machine, idx: LaneSet) -> None:
        for k, w in enumerate(ws):
            w(m, idx, m.param_read(key, off + k * dt.itemsize, dt, idx))

    return Op(instr, run)


@builds("st")
def _st(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Data Movement and Conversion Instructions: st in every state space and vector width."""
    space = _space(instr)
    dt = dtype(itype(instr))
    n = _vec(instr)
    dst, src = instr.operands
    srcs = src[1] if src[0] == "vec" else [src]
    rs = [reader(ctx, s, dt) for s in srcs]
    if space == "param":
        key, off = ctx.param_var(dst[1]), dst[2]

        def run_param(m: Machine, idx: LaneSet) -> None:
            for k, r in enumerate(rs):
                m.param_write(key, off + k * dt.itemsize, dt, idx, r(m, idx))

        return Op(instr, run_param)
    addr = address(ctx, dst)

    def run(m: Machine, idx: LaneSet) -> None:
        cnt = m.count(idx)
        vals = np.stack([np.broadcast_to(np.asarray(r(m, idx), dt), (cnt,)) for r in rs], axis=1)
        m.store(instr, space, addr(m, idx), idx, vals if n > 1 else vals[:, 0], dt, n)

    return Op(instr, run)


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


def address(ctx: Builder, op: tuple) -> Callable[[Machine, LaneSet], np.ndarray]:
    """How to compute each lane's address from an operand [%r+off], [symbol+off] or [imm]."""
    if op[0] != "addr":
        raise UnsupportedInstruction(f"expected an address, got {op!r}")
    base, off = op[1], op[2]
    if base is None:
        return lambda m, idx: np.full(m.count(idx), off, np.int64)
    if base.startswith("%"):
        name = ctx.reg(base)
        signed = ctx.storage(name).itemsize == 8

        def addr(m: Machine, idx: LaneSet) -> np.ndarray:
            v = m.registers[name] if idx is None else m.registers[name][idx]
            return (v.view(np.int64) if signed else v.astype(np.int64)) + off

        return addr
    value = ctx.symbol_address(base) + off
    return lambda m, idx: np.full(m.count(idx), value, np.int64)


# ---------------------------------------------------------------- atomics


@builds("atom", "red")
def _atom(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Parallel Synchronization and Communication Instructions: atom, red. The operation
    is `ATOMIC_OPS[kind]`, applied in thread order by `apply_atomic`; atom writes each lane the
    value it saw, red writes nothing. 16-bit floats (atom.add.noftz.f16 ...) round each add."""
    space = _space(instr)
    t = itype(instr)
    dt = dtype(t)
    kind = next((p for p in instr.parts[1:] if p in ATOMIC_OPS), None)
    if t in HALVES:  # atom.add.noftz.f16 and friends: a rounded 16-bit add per lane
        kind = f"add.{t}" if kind == "add" else None
        dt = storage16(t)
    if kind is None or _vec(instr) > 1:
        raise UnsupportedInstruction(f"the emulator does not implement '{instr.opcode}'")
    op = instr.parts[0]
    if op == "red":
        dst, ad, *srcs = None, *instr.operands
    else:
        dst, ad, *srcs = instr.operands
    w = writer(ctx, dst) if dst is not None else None
    addr = address(ctx, ad)
    rs = [reader(ctx, s, dt) for s in srcs]
    how = kind

    def run(m: Machine, idx: LaneSet) -> None:
        cnt = m.count(idx)
        operands = [np.broadcast_to(np.asarray(r(m, idx), dt), (cnt,)) for r in rs]
        old = np.empty(cnt, dt)
        for sel, target, flat in m.access(instr, space, addr(m, idx), idx, dt, 1, op):
            seen = apply_atomic(
                target, flat, how, [x if sel is None else x[sel] for x in operands], op == "atom"
            )
            if sel is None:
                old = seen
            else:
                old[sel] = seen
        if w is not None:
            w(m, idx, old)

    return Op(instr, run)


def apply_atomic(
    target: np.ndarray, flat: np.ndarray, kind: str, operands: list[np.ndarray], returns: bool
) -> np.ndarray:
    """Apply the atomic `kind` at `target[flat]` for every lane in thread order (lanes that hit one
    element each see the previous one's result); return the value each lane saw."""
    f = ATOMIC_OPS[kind]
    n = len(flat)
    order = np.argsort(flat, kind="stable")
    fs = flat[order]
    first = np.r_[True, fs[1:] != fs[:-1]]
    if first.all():  # no two lanes on one element
        old = target[flat].copy()
        target[flat] = f(old, *operands)
        return old
    if not returns and kind in _UFUNCS:  # red: only the total matters
        ufunc = _UFUNCS[kind + ".f"] if target.dtype.kind == "f" and kind + ".f" in _UFUNCS else _UFUNCS[kind]
        old = target[flat].copy()
        ufunc.at(target, flat, operands[0])
        return old
    seg = np.cumsum(first) - 1
    seg_start = np.flatnonzero(first)
    if kind == "add" and target.dtype.kind in "iu":  # integer add: a running sum per element
        vals = operands[0][order].astype(target.dtype)
        incl = np.cumsum(vals, dtype=target.dtype)
        excl = incl - vals
        prefix = excl - excl[seg_start][seg]
        init = target[fs[seg_start]]
        old_sorted = init[seg] + prefix
        last = np.r_[seg_start[1:], n] - 1
        target[fs[seg_start]] = old_sorted[last] + vals[last]
        old = np.empty(n, target.dtype)
        old[order] = old_sorted
        return old
    rank = np.arange(n) - seg_start[seg]  # else one round per lane that shares an element
    old = np.empty(n, target.dtype)
    for r in range(int(rank.max()) + 1):
        pos = order[rank == r]
        o = target[flat[pos]]
        old[pos] = o
        target[flat[pos]] = f(o, *[x[pos] for x in operands])
    return old


def _inc(old: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(old >= b, old.dtype.type(0), old + old.dtype.type(1))


def _dec(old: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where((old == 0) | (old > b), b, old - old.dtype.type(1))


def _half_add(t: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """atom.add.noftz.{f16,bf16,f16x2,bf16x2}: a rounded 16-bit add per lane, no flush."""
    fmt = half_fmt(t)

    def add(old: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = []
        for x, y in zip(lanes16(old, t), lanes16(b, t)):
            hi, err = two_sum(*np.broadcast_arrays(half_to_f64(x, fmt), half_to_f64(y, fmt)))
            with np.errstate(all="ignore"):
                out.append(f64_to_half(hi, err, fmt, "rn"))
        return pack16(out, t).astype(old.dtype)

    return add


# what each atomic does to the old value `old` with the lanes' operands (cas: compare, new value)
ATOMIC_OPS: dict[str, Callable[..., np.ndarray]] = {
    "add": lambda old, b: old + b,
    "min": lambda old, b: np.fmin(old, b) if old.dtype.kind == "f" else np.minimum(old, b),
    "max": lambda old, b: np.fmax(old, b) if old.dtype.kind == "f" else np.maximum(old, b),
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "exch": lambda old, b: b,
    "cas": lambda old, b, c: select(old == b, c, old),
    "inc": _inc, "dec": _dec,
    **{f"add.{t}": _half_add(t) for t in HALVES},
}  # fmt: skip


# the atomics whose lanes may be combined in any order when no lane needs the value it saw (red)
_UFUNCS: dict[str, np.ufunc] = {
    "add": np.add, "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor,
    "min": np.minimum, "max": np.maximum, "min.f": np.fmin, "max.f": np.fmax,  # floats: NaN loses
}  # fmt: skip


# ---------------------------------------------------------------- addresses, fences


@builds("cvta")
def _cvta(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Data Movement and Conversion Instructions: cvta. Shared and local addresses sit in
    their own windows of the generic address space (memory.SHARED_WINDOW, LOCAL_WINDOW)."""
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
            instr, lambda m, idx: w(m, idx, (arr(r(m, idx)).astype(np.uint64) - np.uint64(base)).astype(dt))
        )
    return Op(instr, lambda m, idx: w(m, idx, arr(r(m, idx)).astype(np.uint64) + np.uint64(base)))


@builds("isspacep")
def _isspacep(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Data Movement and Conversion Instructions: isspacep (is this generic address in the
    shared, local or global window?)."""
    space = instr.parts[1]
    dst, src = instr.operands
    w, r = writer(ctx, dst), reader(ctx, src, np.dtype(np.uint64))

    def f(m: Machine, idx: LaneSet) -> None:
        a = arr(r(m, idx)).astype(np.uint64)
        sh = (a >= SHARED_WINDOW) & (a < SHARED_WINDOW + WINDOW_SIZE)
        lo = (a >= LOCAL_WINDOW) & (a < LOCAL_WINDOW + WINDOW_SIZE)
        # no generic address of the emulator is in the .const or .param window (a GPU says false
        # for a global pointer too: tests/emulator/ptx_truth.json)
        w(m, idx, {"shared": sh, "local": lo, "global": ~sh & ~lo}.get(space, np.zeros_like(sh)))

    return Op(instr, f)


@builds("membar", "fence")
def _fence(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Parallel Synchronization and Communication Instructions: membar, fence. Every access
    here completes in order, so a fence changes nothing; the trace records it (the bug checker
    orders blocks by it)."""
    return Op(instr, lambda m, idx: m.record_sync(instr, idx, "fence"))


@builds("prefetch", "prefetchu")
def _prefetch(instr: Instr, ctx: Builder) -> Op:
    """PTX ISA, Data Movement and Conversion Instructions: prefetch, prefetchu. No caches here."""
    return Op(instr, lambda m, idx: None)
