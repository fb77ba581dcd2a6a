"""The machine's side of memory: what its lanes load, store and update atomically, checked and
recorded; device-function .params; printf's reads; and the words that name a thread in messages.

`MemoryAccess` is a part of `machine.Machine` kept in its own file: it reads the machine's state
(declared below) and never schedules anything. Every access goes through `access`: split by state
space and buffer, checked for alignment and bounds (a fault names the thread, the line and the
buffer), recorded in the trace, and marked in `course.empty` arrays' written-byte masks.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import KernelFault
from .link import LinkedKernel, Program
from .memory import (
    LOCAL_WINDOW,
    SHARED_WINDOW,
    WINDOW_SIZE,
    Memory,
    Region,
    check_alignment,
    raise_misaligned,
    raise_out_of_bounds,
)
from .names import display
from .ops import LaneSet
from .ptx import Instr, source_name
from .trace import LANES, BufferInfo, Trace, TraceRecorder

Piece = tuple[Any, np.ndarray, np.ndarray]  # ops.contract.Piece: (lanes or None, typed array, indices)


@dataclass
class Fault:
    """What the KernelFault being raised is about, as data: the bug checker turns it into a finding."""

    kind: str  # out-of-bounds, misaligned, barrier (a block's threads at different bar.sync), collective
    pc: int  # the instruction (-1 for a barrier: see the threads' bar_pc)
    threads: np.ndarray  # machine thread ids at fault (barrier: every thread of the block)
    addr: np.ndarray | None = None  # their addresses (collective: the mask's lanes that are elsewhere)
    space: str = ""
    op: str = ""
    size: int = 0
    outside: bool = False  # collective: the lanes named in addr called with a mask that leaves them out


class MemoryAccess:
    """Loads, stores, atomics' access, .params, the trace and thread names of a `Machine`."""

    # the machine's state this part reads (machine.Machine sets it; see its docstring)
    name: str
    program: Program
    compiled: LinkedKernel
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    block_lanes: int
    warps_per_block: int
    block_ids: np.ndarray
    block_slot: np.ndarray
    all_threads: np.ndarray
    n_threads: int
    registers: dict[str, np.ndarray]
    kernel_params: dict[str, bytes]
    call_params: dict[str, np.ndarray]
    memory: Memory
    shared_memory: Region
    local_memory: Region
    n_global_buffers: int
    shared_offsets: np.ndarray
    shared_sizes: list[int]
    shared_itemsize: dict[int, int]
    shared_bytes: int
    dynamic_shared: int
    written: dict[int, np.ndarray]
    recorder: TraceRecorder | None
    keep_slot: np.ndarray | None
    barrier_epoch: np.ndarray
    current_pc: int
    steps: int
    issued: int
    work: int
    fault: Fault | None  # what the KernelFault being raised is about

    # -- lanes

    def count(self, idx: LaneSet) -> int:
        """How many lanes idx names."""
        if idx is None:
            return self.n_threads
        return idx.stop - idx.start if isinstance(idx, slice) else len(idx)

    def threads(self, idx: LaneSet) -> np.ndarray:
        """The thread numbers (in the wave) of a group's lanes: idx is None (all), a slice or an array."""
        if idx is None:
            return self.all_threads
        return self.all_threads[idx] if isinstance(idx, slice) else idx

    # -- the runtime functions CUDA C calls

    def external_call(self, name: str, keys: list[str], idx: LaneSet, instr: Instr) -> None:
        """The two functions CUDA C calls into the runtime: printf and assert."""
        t = self.threads(idx)
        ptrs = [self.call_params[k][t, :8].copy().view(np.uint64)[:, 0] for k in keys]
        if name == "__assertfail":
            msg = self.read_cstring(int(t[0]), int(ptrs[0][0]))
            raise KernelFault(
                f"{self.name}: assertion `{msg}` failed in {self.who(int(t[0]))} {self.program.where(instr)}"
            )
        for k, thread in enumerate(t):
            fmt = self.read_cstring(int(thread), int(ptrs[0][k]))
            args = int(ptrs[1][k]) if len(ptrs) > 1 else 0
            print(_printf(fmt, lambda a, n, th=int(thread): self.read_bytes(th, a, n), args), end="")

    def read_bytes(self, t: int, addr: int, n: int) -> bytes:
        """Bytes at a generic address, as thread t sees them."""
        for region, window, row in (
            (self.local_memory, LOCAL_WINDOW, t),
            (self.shared_memory, SHARED_WINDOW, self.block_slot[t]),
        ):
            if window <= addr < window + WINDOW_SIZE:
                off = addr - window
                return region.data[row, off : off + n].tobytes()
        j, inside = self.memory.locate(np.array([addr], np.int64), n)
        if not inside[0]:
            raise KernelFault(f"{self.name}: printf was given a bad pointer {addr:#x}")
        buf = self.memory.buffers[int(j[0])]
        return buf.data[addr - buf.base : addr - buf.base + n].tobytes()

    def read_cstring(self, t: int, addr: int) -> str:
        out = b""
        while b"\0" not in out and len(out) < 4096:
            out += self.read_bytes(t, addr + len(out), 1)
        return out.split(b"\0", 1)[0].decode(errors="replace")

    # -- params of device-function calls (per thread)

    def param_read(self, key: str, off: int, dt: np.dtype, idx: LaneSet) -> np.ndarray:
        rows = self.call_params[key] if idx is None else self.call_params[key][idx]
        return np.ascontiguousarray(rows[:, off : off + dt.itemsize]).view(dt)[:, 0]

    def param_write(self, key: str, off: int, dt: np.dtype, idx: LaneSet, value: Any) -> None:
        n = self.count(idx)
        raw = (
            np.ascontiguousarray(np.broadcast_to(np.asarray(value, dt), (n,)))
            .view(np.uint8)
            .reshape(n, dt.itemsize)
        )
        if idx is None:
            self.call_params[key][:, off : off + dt.itemsize] = raw
        else:
            self.call_params[key][idx, off : off + dt.itemsize] = raw

    def param_scalar(self, name: str, off: int, dt: np.dtype) -> Any:
        return np.frombuffer(self.kernel_params[name], dt, count=1, offset=off)[0]

    # -- memory

    def load(
        self, instr: Instr, space: str, addr: np.ndarray, idx: LaneSet, dt: np.dtype, n: int
    ) -> np.ndarray:
        cnt = self.count(idx)
        out = np.empty((cnt, n), dt) if n > 1 else None
        for sel, arr, flat in self.access(instr, space, addr, idx, dt, n, "ld"):
            vals = arr[flat[:, None] + np.arange(n)] if n > 1 else arr[flat]
            if sel is None:
                if out is None:
                    return vals
                out[:] = vals
            else:
                if out is None:
                    out = np.empty(cnt, dt)
                out[sel] = vals
        return out  # type: ignore[return-value]

    def store(
        self, instr: Instr, space: str, addr: np.ndarray, idx: LaneSet, vals: np.ndarray, dt: np.dtype, n: int
    ) -> None:
        for sel, arr, flat in self.access(instr, space, addr, idx, dt, n, "st"):
            v = vals if sel is None else vals[sel]
            if n > 1:
                arr[flat[:, None] + np.arange(n)] = v
            else:
                arr[flat] = v

    def access(
        self, instr: Instr, space: str, addr: np.ndarray, idx: LaneSet, dt: np.dtype, n: int, op: str
    ) -> list[tuple[Any, np.ndarray, np.ndarray]]:
        """Split an access by memory space and buffer; check bounds and alignment; record it."""
        t = self.threads(idx)
        if space == "generic":
            sh = (addr >= SHARED_WINDOW) & (addr < SHARED_WINDOW + WINDOW_SIZE)
            lo = (addr >= LOCAL_WINDOW) & (addr < LOCAL_WINDOW + WINDOW_SIZE)
            gl = ~(sh | lo)
            parts = []
            for mask, sp, base in (
                (gl, "global", 0),
                (sh, "shared", SHARED_WINDOW),
                (lo, "local", LOCAL_WINDOW),
            ):
                if not mask.any():
                    continue
                if mask.all():
                    return self._resolve_space(instr, sp, addr - base, t, dt, n, op)
                sel = np.flatnonzero(mask)
                for s2, arr, flat in self._resolve_space(instr, sp, addr[sel] - base, t[sel], dt, n, op):
                    parts.append((sel if s2 is None else sel[s2], arr, flat))
            return parts
        return self._resolve_space(instr, space, addr, t, dt, n, op)

    def _resolve_space(
        self, instr: Instr, space: str, addr: np.ndarray, t: np.ndarray, dt: np.dtype, n: int, op: str
    ) -> list[tuple[Any, np.ndarray, np.ndarray]]:
        size = dt.itemsize * n
        bad = check_alignment(addr, size)
        if bad is not None:
            k = int(np.flatnonzero(bad)[0])
            self.fault = Fault("misaligned", self.current_pc, t[bad], addr[bad], space, op, size)
            raise_misaligned(
                int(addr[k]), size, f"{self.name}: {self.who(int(t[k]))}", self.program.where(instr)
            )
        if space in ("shared", "local"):
            region = self.shared_memory if space == "shared" else self.local_memory
            out = (addr < 0) | (addr + size > region.used)
            if out.any():
                self._oob_region(instr, space, addr, out, t, op, size)
            rows = self.block_slot[t] if space == "shared" else t
            per_row = region.row_bytes // dt.itemsize
            flat = rows * per_row + addr // dt.itemsize
            if self.recorder is not None and self.recorder.wants_space(space):
                if space == "shared":
                    var = np.maximum(np.searchsorted(self.shared_offsets, addr, side="right") - 1, 0)
                    elem = (addr - self.shared_offsets[var]) // dt.itemsize
                    self.shared_itemsize.setdefault(int(var[0]), dt.itemsize)
                    bufid = self.n_global_buffers + var
                else:
                    elem = addr // dt.itemsize
                    bufid = np.full(len(t), self.n_global_buffers + len(self.compiled.shared))
                self.record(instr, space, op, t, addr, size, bufid, elem)
            return [(None, region.view(dt), flat)]
        j, inside = self.memory.locate(addr, size)
        if not inside.all():
            self._oob_global(instr, addr, inside, t, op, size)
        bufs = np.unique(j) if len(j) else j
        groups = []
        for b in bufs:
            sel = None if len(bufs) == 1 else np.flatnonzero(j == b)
            a = addr if sel is None else addr[sel]
            buf = self.memory.buffers[int(b)]
            arr = self.memory.typed(int(b), dt)
            if arr is None:
                usable = buf.data.size // dt.itemsize * dt.itemsize
                arr = buf.data[:usable].view(dt)
            groups.append((sel, arr, (a - buf.base) // dt.itemsize))
            mask = self.written.get(buf.base) if self.written and op != "ld" else None
            if mask is not None:
                mask[((a - buf.base)[:, None] + np.arange(size)).reshape(-1)] = True
            if self.recorder is not None:
                rec_space = buf.space if space == "global" else space
                if self.recorder.wants_space(rec_space):
                    tt = t if sel is None else t[sel]
                    elem = (a - buf.base) // max(buf.itemsize, 1)
                    self.record(instr, rec_space, op, tt, a, size, np.full(len(tt), int(b)), elem)
        return groups

    def _oob_global(
        self, instr: Instr, addr: np.ndarray, inside: np.ndarray, t: np.ndarray, op: str, size: int
    ) -> None:
        k = int(np.flatnonzero(~inside)[0])
        self.fault = Fault("out-of-bounds", self.current_pc, t[~inside], addr[~inside], "global", op, size)
        others = int((~inside).sum()) - 1
        verb = {"ld": "read", "st": "write"}.get(op, f"{op} (atomic)")
        raise_out_of_bounds(
            f"{self.name}: {self.who(int(t[k]))} tried to {verb} {size} bytes at {self.memory.nearest(int(addr[k]))}"
            f"{f' (and {others} more threads went out of bounds)' if others else ''}, "
            f"{self.program.where(instr)}"
        )

    def _oob_region(
        self, instr: Instr, space: str, addr: np.ndarray, out: np.ndarray, t: np.ndarray, op: str, size: int
    ) -> None:
        k = int(np.flatnonzero(out)[0])
        self.fault = Fault("out-of-bounds", self.current_pc, t[out], addr[out], space, op, size)
        verb = {"ld": "read", "st": "write"}.get(op, f"{op} (atomic)")
        used = self.shared_bytes if space == "shared" else self.compiled.local_size
        detail = ""
        if space == "shared" and len(self.compiled.shared):
            parts = [
                display(s.name, f"{self.shared_sizes[i]} B at offset {s.offset}")
                for i, s in enumerate(self.compiled.shared)
            ]
            detail = ": " + " and ".join(parts)
            if self.compiled.dynamic_names and self.dynamic_shared == 0:
                detail += "; the launch gave 0 bytes of dynamic shared memory: pass shared_mem=..."
        raise_out_of_bounds(
            f"{self.name}: {self.who(int(t[k]))} tried to {verb} {size} bytes at {space} offset {int(addr[k])}, "
            f"but the block has only {used} bytes of {space} memory{detail}, {self.program.where(instr)}"
        )

    # -- the trace

    def _rows(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sorted threads by warp: each warp, where its lanes start in t, and each lane's row."""
        w = t >> 5
        if w[0] == w[-1]:  # one warp: most recorded instructions
            return w[:1], np.zeros(1, np.int64), np.zeros(len(t), np.int64)
        starts = np.concatenate(([0], np.flatnonzero(w[1:] != w[:-1]) + 1))
        row = np.cumsum(np.concatenate(([0], (w[1:] != w[:-1]).astype(np.int64))))
        return w[starts], starts, row

    def record(
        self,
        instr: Instr,
        space: str,
        op: str,
        t: np.ndarray,
        addr: np.ndarray,
        size: int,
        bufid: np.ndarray,
        elem: np.ndarray,
    ) -> None:
        if self.recorder is None or self.keep_slot is None or len(t) == 0:
            return
        keep = self.keep_slot[self.block_slot[t]]
        if not keep.all():
            self.recorder.dropped += int((~keep).sum())
            if not keep.any():
                return
            t, addr, bufid, elem = t[keep], addr[keep], bufid[keep], elem[keep]
        wave_warp, starts, row = self._rows(t)
        lane = t & 31
        nrow = len(starts)
        per_lane = {}
        for name, vals in (("addr", addr), ("buffer", bufid), ("index", elem)):
            mat = np.full((nrow, LANES), -1, np.int64)
            mat[row, lane] = vals
            per_lane[name] = mat
        self._add_rows(instr, space, op, wave_warp, starts, lane, size, per_lane)

    def record_lanes(
        self, instr: Instr, idx: LaneSet, space: str, op: str, values: np.ndarray, size: int
    ) -> None:
        if self.recorder is None:
            return
        t = self.threads(idx)
        none = np.full(len(t), -1)
        self.record(instr, space, op, t, np.asarray(values, np.int64), size, none, none)

    def record_sync(self, instr: Instr, idx: LaneSet, op: str) -> None:
        if self.recorder is None or not self.recorder.wants_space("sync"):
            return
        t = self.threads(idx)
        none = np.full(len(t), -1)
        self.record(instr, "sync", op, t, none, 0, none, none)

    def _add_rows(
        self,
        instr: Instr,
        space: str,
        op: str,
        wave_warp: np.ndarray,
        starts: np.ndarray,
        lane: np.ndarray,
        size: int,
        per_lane: dict[str, np.ndarray],
    ) -> None:
        slot = wave_warp // self.warps_per_block
        bits = np.left_shift(np.uint64(1), lane.astype(np.uint64))
        mask = np.bitwise_or.reduceat(bits, starts).astype(np.uint32)
        assert self.recorder is not None
        self.recorder.add({
            "block": self.block_ids[slot], "warp": wave_warp % self.warps_per_block, "epoch": self.barrier_epoch[slot],
            "mask": mask, **per_lane,  # and what every row of this instruction shares:
            "step": self.steps, "pc": self.current_pc, "ptx_line": instr.ptx_line, "line": instr.line,
            "space": space, "op": op, "opcode": instr.opcode, "size": size,
        })  # fmt: skip

    def trace(self) -> Trace:
        assert self.recorder is not None
        bufs = [
            BufferInfo(b.name, b.space, b.itemsize, b.nbytes, b.dtype, b.base) for b in self.memory.buffers
        ]
        for i, s in enumerate(self.compiled.shared):
            item = self.shared_itemsize.get(i, 4)
            bufs.append(BufferInfo(source_name(s.name), "shared", item, self.shared_sizes[i], "", s.offset))
        bufs.append(BufferInfo("local", "local", 1, self.compiled.local_size, ""))
        return self.recorder.build(
            kernel=self.name,
            grid=self.grid,
            block=self.block,
            buffers=bufs,
            source=self.program.source.splitlines(),
            instructions=(self.issued, self.work),
        )

    # -- words for messages

    def _block_coords(self, slot: int) -> tuple[int, int, int]:
        b = int(self.block_ids[slot])
        gx, gy, _ = self.grid
        return (b % gx, (b // gx) % gy, b // (gx * gy))

    def who(self, t: int) -> str:
        ltid = t % self.block_lanes
        bx, by, _ = self.block
        tid = (ltid % bx, (ltid // bx) % by, ltid // (bx * by))
        return f"block {self._block_coords(t // self.block_lanes)} thread {tid}"

    def who_first(self, idx: LaneSet) -> str:
        return f"{self.name}: {self.who(int((self.threads(idx))[0]))}"

    def where(self, instr: Instr) -> str:
        return self.program.where(instr)


_FMT = re.compile(r"%([-+ #0]*)(\d+)?(?:\.(\d+))?(hh|h|ll|l|z)?([diouxXcsfFeEgGpa%])")


def _printf(fmt: str, read: Any, argbuf: int) -> str:
    """C printf over vprintf's packed argument buffer (each argument aligned to its size)."""
    out, pos, off = [], 0, 0
    for m in _FMT.finditer(fmt):
        out.append(fmt[pos : m.start()])
        pos = m.end()
        flags, width, prec, length, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        size = 8 if conv in "fFeEgGaps" or length in ("l", "ll", "z") else 4
        off = -(-off // size) * size
        raw = read(argbuf + off, size)
        off += size
        spec = "%" + (flags or "") + (width or "") + (f".{prec}" if prec else "")
        if conv in "fFeEgGa":
            value: Any = struct.unpack("<d", raw)[0]
            out.append((spec + ("e" if conv == "a" else conv)) % value)
        elif conv == "s":
            out.append((spec + "s") % _cstring(read, struct.unpack("<Q", raw)[0]))
        elif conv == "p":
            out.append(hex(struct.unpack("<Q", raw)[0]))
        elif conv == "c":
            out.append(chr(raw[0]))
        else:
            signed = conv in "di"
            value = int.from_bytes(raw, "little", signed=signed)
            out.append((spec + {"u": "d", "i": "d"}.get(conv, conv)) % value)
    out.append(fmt[pos:])
    return "".join(out)


def _cstring(read: Any, addr: int) -> str:
    out = b""
    while b"\0" not in out and len(out) < 4096:
        out += read(addr + len(out), 1)
    return out.split(b"\0", 1)[0].decode(errors="replace")
