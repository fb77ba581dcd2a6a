"""The SIMT machine: warps of 32 lanes, scheduled fairly, executed in NumPy batches.

Each scheduler step, every warp with a runnable lane executes one instruction: the
lanes at the warp's lowest program counter (that is how diverged lanes reconverge).
Warps sitting at the same instruction run as one NumPy operation — the speed of the
emulator. Blocks run in waves of at most `WAVE_THREADS` threads, in block order, so a
block may wait on a flag set by an earlier block (chained scans) and still finish.

`link.py` turns PTX into the instructions run here; `ops/` says what each one does;
`access.py` is the machine's side of memory, the trace and thread names.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..errors import BarrierError, CourseError, InstructionBudgetExceeded, KernelFault
from . import ops
from .access import Fault, MemoryAccess
from .link import LinkedKernel, Program, defect
from .memory import Memory, Region
from .ptx import Instr
from .trace import LANES, Trace, TraceRecorder, id_ranges

__all__ = ["BAR", "EXIT", "RUN", "WAIT", "Fault", "Machine", "Program", "budget", "run_kernel", "set_budget"]

# WAIT: a lane at a *_sync warp collective whose member mask names lanes still on their way there;
# as on Volta and later, it waits for them (PTX: "until all non-exited threads in membermask have
# executed" it), and the collective runs once they have all arrived
RUN, BAR, EXIT, WAIT = 0, 1, 2, 3
WAVE_THREADS = 1 << 17
NO_PC = np.iinfo(np.int64).max  # where a lane that is not running is scheduled: never
DEFAULT_BUDGET = 2_000_000  # scheduler steps; a step runs one instruction of every runnable warp
MAX_CALL_DEPTH = 32


# A group of lanes the scheduler runs as one: its pc, its lanes (None: every thread of the wave),
# how many warps issue it, and its ceiling: the lowest pc of a running lane of its warps left out of
# it (NO_PC if none; -1 while lanes wait at a collective). While the group moves as one to a pc
# below its ceiling, it stays its warps' lowest-pc lanes: the next step needs no schedule.
Group = tuple[int, ops.LaneSet, int, int]

# thread-instructions a launch may run: about ten seconds of emulation, so a launch far too big
# for the emulator (or a runaway grid-stride loop) stops with an error instead of hanging
DEFAULT_WORK = 500_000_000


def _run_of(idx: np.ndarray) -> slice | np.ndarray:
    """Sorted lanes as a slice where they are one run of threads: a slice reads registers as views
    and writes them without an index array (divergent blocks are such runs), else the array."""
    n = len(idx)
    if n and int(idx[-1]) - int(idx[0]) + 1 == n:
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return idx


def _array_of(idx: ops.LaneSet) -> np.ndarray:
    assert idx is not None  # the whole wave is never one of several groups
    return np.arange(idx.start, idx.stop) if isinstance(idx, slice) else idx


def _regroup(groups: list[Group], moved: list[Any]) -> list[Group]:
    """The next step's groups when every group moved as one to a known pc below its ceiling: by pc,
    in pc order, groups that meet at one pc merged (as the schedule would find them)."""
    if len(set(moved)) == len(moved):  # no two meet: the same groups, in pc order
        out = [(pc, g[1], g[2], g[3]) for pc, g in zip(moved, groups)]
        return out if moved == sorted(moved) else sorted(out, key=lambda g: g[0])
    at: dict[int, list[Group]] = {}
    for g, pc in zip(groups, moved):
        at.setdefault(pc, []).append(g)
    out = []
    for pc in sorted(at):
        parts = at[pc]
        idx = (
            parts[0][1]
            if len(parts) == 1
            else _run_of(np.sort(np.concatenate([_array_of(g[1]) for g in parts])))
        )
        out.append((pc, idx, sum(g[2] for g in parts), min(g[3] for g in parts)))
    return out


class _Regroup(Exception):
    """A warp collective parked or released waiting lanes: the scheduler regroups the lanes."""


def set_budget(steps: int | None = None, *, work: int | None = None) -> None:
    """Change the default budgets: scheduler steps per launch, and thread-instructions per launch."""
    global DEFAULT_BUDGET, DEFAULT_WORK
    for name, value in (("steps", steps), ("work", work)):
        if value is not None and value < 1:
            raise ValueError(f"the {name} budget must be positive, not {value}")
    DEFAULT_BUDGET = int(steps) if steps is not None else DEFAULT_BUDGET
    DEFAULT_WORK = int(work) if work is not None else DEFAULT_WORK


@contextlib.contextmanager
def budget(steps: int | None = None, *, work: int | None = None) -> Iterator[None]:
    """The default budgets changed for a block of code (every launch in it that names none), then
    restored: `with budget(steps=200_000): ...`."""
    global DEFAULT_BUDGET, DEFAULT_WORK
    saved = DEFAULT_BUDGET, DEFAULT_WORK
    set_budget(steps, work=work)
    try:
        yield
    finally:
        DEFAULT_BUDGET, DEFAULT_WORK = saved


# ---------------------------------------------------------------- the machine


def run_kernel(
    program: Program,
    entry: str,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    args: list[tuple[str, Any]],
    shared_mem: int = 0,
    *,
    kernel_name: str | None = None,
    recorder: TraceRecorder | None = None,
    budget: int | None = None,
    written: list[tuple[np.ndarray, np.ndarray]] | None = None,
    notes: list[str] | None = None,
) -> Trace | None:
    """Run one launch. Arrays in `args` are written in place. Returns a Trace if recording.

    `written`: (array, byte mask) pairs; every byte of the array a thread stores to (or updates
    atomically) is set True in its mask (how `course.empty` arrays learn what is initialised).
    `notes`: a list that gets what the launch did that a GPU may not (see Machine.notes).
    """
    m = Machine(
        program, entry, grid, block, args, shared_mem, kernel_name or entry, recorder, budget, written=written
    )
    with np.errstate(all="ignore"):
        m.run()
    if notes is not None:
        notes += m.notes()
    return m.trace() if recorder is not None else None


class Machine(MemoryAccess):
    """One launch of one kernel on the emulator.

    Threads. The grid runs in waves of consecutive blocks (`WAVE_THREADS` threads at most). In a
    wave, block number `block_ids[s]` has the threads s * block_lanes ... (s + 1) * block_lanes - 1:
    its threads rounded up to whole warps, so warp = thread >> 5 and lane = thread & 31 everywhere;
    the padding lanes start as exited. Registers hold one value per thread of the wave
    (`registers[name]`), shared memory one row per block, local memory one row per thread.

    Lane states (`lane_state`, one per thread, with its `pc`): RUN, runnable; BAR, arrived at a
    bar.sync (`barrier_pc`) and waiting for its block; WAIT, arrived at a *_sync warp collective
    whose member mask names lanes still on their way (`wait_masks`); EXIT, finished.

    Steps. Each scheduler step, every warp with a RUN lane executes one instruction: its RUN lanes
    at the warp's lowest pc (diverged lanes reconverge where their paths meet). Those lanes form
    groups, one per pc, each run as one NumPy operation over all its warps (`Group`). A group's
    ceiling is the lowest pc of the lanes of its warps left out of it: while the group moves as one
    to a pc below its ceiling (straight-line code, uniform branches) the next step needs no
    schedule, which is most of the emulator's speed.

    When collectives complete. A block barrier releases at the end of the step in which the last
    of its live threads arrives (all RUN lanes gone to BAR or EXIT); all must wait at one bar.sync
    (else BarrierError), and its `barrier_epoch` counts up, so the trace knows each access's barrier
    interval (a block some of whose threads have exited passes too: undefined on a GPU, so `notes`
    says so). A warp collective runs at once if every lane its member mask names is in the group or
    has exited; else the lanes there WAIT until the missing ones come, and then all run it together on the next
    step. A named lane waiting at a bar.sync, or a warp whose lanes all WAIT, can never complete it:
    BarrierError.

    Limits: `budget` scheduler steps and `DEFAULT_WORK` thread-instructions a launch; calls nest at
    most `MAX_CALL_DEPTH` deep (`call_stack`, `call_depth`). What the instructions may ask of the
    machine is `ops.contract.Machine`; memory, the trace and messages are in `MemoryAccess`.
    """

    def __init__(
        self,
        program: Program,
        entry: str,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        args: list[tuple[str, Any]],
        shared_mem: int,
        kernel_name: str,
        recorder: TraceRecorder | None,
        budget: int | None,
        *,
        written: list[tuple[np.ndarray, np.ndarray]] | None = None,
    ):
        self.program = program
        self.entry_fn = program.entry(entry)
        self.compiled = program.compiled(entry)
        self.name = kernel_name
        self.grid, self.block = grid, block
        self.dynamic_shared = shared_mem
        self.recorder = recorder
        self.budget = budget or DEFAULT_BUDGET  # scheduler steps this launch may take
        self.steps = 0
        self.current_pc = -1  # the instruction being executed (for messages and the trace)
        self.work = 0  # thread-instructions executed
        self.issued = 0  # warp-instructions issued: what the SMs' schedulers spend their cycles on
        self.memory = Memory()  # global buffers: the arguments and the module's variables
        self.kernel_params: dict[str, bytes] = {}  # parameter -> its bytes (a pointer: its buffer's base)
        self.kernel_param_names: dict[str, str] = {}  # parameter -> the name the caller gave its argument
        self._map_args(args)
        for name, (base, data, var) in program.module_vars.items():
            if self.compiled.module_symbols is None or name in self.compiled.module_symbols:
                self.memory.add_buffer(name, data, var.space, base=base)
        self.n_global_buffers = len(self.memory.buffers)
        self.block_threads = block[0] * block[1] * block[2]
        self.block_lanes = -(-self.block_threads // LANES) * LANES  # rounded up to whole warps
        self.warps_per_block = self.block_lanes // LANES
        self.n_blocks = grid[0] * grid[1] * grid[2]
        self.shared_bytes = (  # a block's shared memory: static, then dynamic
            self.compiled.dynamic_offset + shared_mem
            if self.compiled.dynamic_names
            else self.compiled.static_shared
        )
        self.shared_offsets = np.array([s.offset for s in self.compiled.shared], np.int64)
        self.shared_sizes = [
            shared_mem if s.name in self.compiled.dynamic_names else s.size for s in self.compiled.shared
        ]
        self.shared_itemsize: dict[int, int] = {}  # shared variable -> the size its first access used
        self.fault: Fault | None = None  # what the KernelFault being raised is about (for the checker)
        # the first barrier that let a block through while some of its threads had exited:
        # (wave slot, pc, threads there, threads exited), and how many blocks did so in all
        self.partial_barrier: tuple[int, int, np.ndarray, np.ndarray] | None = None
        self.partial_barrier_block = (0, 0, 0)
        self.partial_blocks = 0
        self.written = {self.memory.add_buffer("", a): mask for a, mask in written or ()}  # base -> byte mask

    def _map_args(self, args: list[tuple[str, Any]]) -> None:
        for (cname, value), p in zip(args, self.entry_fn.params):
            if isinstance(value, np.ndarray):
                base = self.memory.add_buffer(cname, value)
                raw = np.uint64(base).tobytes()
            else:
                raw = np.asarray(value).tobytes()
            self.kernel_params[p.name] = raw.ljust(max(p.size, 8), b"\0")
            self.kernel_param_names[p.name] = cname

    # -- running

    def run(self) -> None:
        try:
            per_wave = max(1, WAVE_THREADS // self.block_lanes)
            for first in range(0, self.n_blocks, per_wave):
                self._start_wave(np.arange(first, min(first + per_wave, self.n_blocks)))
                self._run_wave()
        except CourseError:
            raise
        except Exception as exc:
            pc = self.current_pc
            ins = (
                self.compiled.code[pc].instr if pc is not None and 0 <= pc < len(self.compiled.code) else None
            )
            raise defect(exc, "running", ins, self.program, self.name) from exc

    def _start_wave(self, blocks: np.ndarray) -> None:
        self.block_ids = blocks
        nb = len(blocks)
        self.n_threads = T = nb * self.block_lanes  # T: a short name for the wave's thread count here
        self.n_warps = T // LANES
        t = self.all_threads = np.arange(T, dtype=np.int64)
        self.block_slot = t // self.block_lanes  # each thread's block, as its position in the wave
        ltid = t % self.block_lanes
        valid = ltid < self.block_threads
        self.pc = np.zeros(T, np.int64)
        self.lane_state = np.where(valid, RUN, EXIT).astype(np.int8)
        self.barrier_pc = np.full(T, -1, np.int64)  # the bar.sync a BAR lane waits at
        self.barrier_vote = np.zeros(T, np.bool_)  # its predicate for __syncthreads_count/_and/_or
        self.barrier_epoch = np.zeros(nb, np.int32)  # per block: barriers passed
        self.call_depth = np.zeros(T, np.int64)
        self.call_stack = np.zeros((T, MAX_CALL_DEPTH), np.int64) if self.compiled.has_calls else None
        self.saved_frames: dict[str, np.ndarray] = {}  # frames of recursive calls
        self.registers = {name: np.zeros(T, dt) for name, dt in self.compiled.storage.items()}
        bx, by, _ = self.block
        gx, gy, _ = self.grid
        b = blocks[self.block_slot]
        lane = (ltid & 31).astype(np.uint32)
        specials = {
            "%tid.x": ltid % bx, "%tid.y": (ltid // bx) % by, "%tid.z": ltid // (bx * by),
            "%ntid.x": bx, "%ntid.y": by, "%ntid.z": self.block[2],
            "%ctaid.x": b % gx, "%ctaid.y": (b // gx) % gy, "%ctaid.z": b // (gx * gy),
            "%nctaid.x": gx, "%nctaid.y": gy, "%nctaid.z": self.grid[2],
            "%laneid": lane, "%warpid": ltid >> 5, "%nwarpid": self.warps_per_block,
            "%smid": b % 132, "%nsmid": 132, "%gridid": 0,
            "%lanemask_eq": np.left_shift(1, lane), "%lanemask_lt": np.left_shift(1, lane) - 1,
            "%lanemask_le": np.left_shift(2, lane.astype(np.uint64)) - 1,
            "%lanemask_gt": ~(np.left_shift(2, lane.astype(np.uint64)) - 1),
            "%lanemask_ge": ~(np.left_shift(1, lane) - 1),
            "%dynamic_smem_size": self.dynamic_shared, "%total_smem_size": self.shared_bytes,
        }  # fmt: skip
        for name, v in specials.items():
            self.registers[name] = np.broadcast_to(
                np.asarray(v).astype(np.int64).astype(np.uint32), (T,)
            ).copy()
        self.shared_memory = Region(nb, self.shared_bytes, self.shared_bytes, "shared")
        self.local_memory = Region(T, self.compiled.local_size, self.compiled.local_size, "local")
        # per-thread .param variables of device-function calls: key -> bytes per thread
        self.call_params = {
            key: np.zeros((T, size), np.uint8) for key, size in self.compiled.param_vars.items()
        }
        keep = self.recorder is not None
        self.keep_slot = self._block_filter(blocks) if keep else None
        self.barrier_pending = False  # a lane arrived at a barrier or exited this step
        self.n_waiting = 0  # lanes in WAIT
        self.wait_masks = np.zeros(T, np.uint32)  # the member mask each of them waits with

    def _block_filter(self, blocks: np.ndarray) -> np.ndarray:
        want = self.recorder.block_filter if self.recorder else None
        if want is None:
            return np.ones(len(blocks), bool)
        if callable(want):
            return np.array([bool(want(int(b))) for b in blocks])
        if isinstance(want, (int, np.integer)):
            want = [want]
        return np.isin(blocks, np.fromiter(want, np.int64))

    def _run_wave(self) -> None:
        same: list[Group] | None = None  # the next step's groups when known without a schedule
        while True:
            if same is not None:
                groups = same
            else:
                groups = self._schedule()
                if not groups:
                    if (self.lane_state == BAR).any():
                        self._release_barriers(force=True)
                        continue
                    return
            if self.steps >= self.budget:  # after the schedule: a launch may take all its steps
                self._out_of_budget()
            same = self._run_group(*groups[0]) if len(groups) == 1 else self._run_groups(groups)

    def _run_groups(self, groups: list[Group]) -> list[Group] | None:
        """Run several groups a step at a time for as long as each moves as one below its ceiling;
        return the next step's groups if known."""
        code = self.compiled.code
        while True:
            moved = []
            for p, idx, w, _ in groups:
                self.work += self.count(idx)
                self.issued += w
                moved.append(self._execute(code[p], p, idx))
            if self._end_step():
                return None
            for m, g in zip(moved, groups):
                if m is None or not 0 <= m < g[3] or m >= len(code):
                    return None
            groups = _regroup(groups, moved)
            if self.steps >= self.budget:
                return groups

    def _run_group(self, p: int, idx: ops.LaneSet, warps: int, ceiling: int) -> list[Group] | None:
        """Run the wave's only group for as long as it moves as one below its ceiling (straight-line
        code and uniform branches: most of a kernel's steps); return its next step if known."""
        code, lanes, top = self.compiled.code, self.count(idx), min(ceiling, len(self.compiled.code))
        while True:
            self.work += lanes
            self.issued += warps
            moved = self._execute(code[p], p, idx)
            if self._end_step():
                return None
            if moved is None or not 0 <= moved < top:
                return None
            if self.steps >= self.budget:
                return [(moved, idx, warps, ceiling)]
            p = moved

    def _end_step(self) -> bool:
        """Count a step and its limits; True if it released a barrier (the lanes regroup)."""
        self.steps += 1
        if self.work > DEFAULT_WORK:
            self._out_of_work()
        if self.barrier_pending:
            self._release_barriers()
            return True
        return False

    def _schedule(self) -> list[Group]:
        """The lanes that run next, grouped by pc: in each warp, the running lanes at its lowest pc
        (see Group). Called on every step of divergent code, so it keeps to a few whole-array steps."""
        if self.n_waiting:
            self._raise_if_a_warp_waits_forever()
        pcr = np.where(self.lane_state == RUN, self.pc, NO_PC).reshape(self.n_warps, LANES)
        wmin = pcr.min(axis=1)
        live = wmin != NO_PC
        mins = wmin[live]
        if not len(mins):
            return []
        lo, hi = int(mins.min()), int(mins.max())
        if not live.all():
            wmin[~live] = -1  # a warp with no running lane has none to pick
        picked = pcr == wmin[:, None]
        act = np.flatnonzero(picked)
        if self.n_waiting:  # lanes parked at a collective may be released by any step: schedule each
            behind, ceiling = None, -1
        elif len(act) == np.count_nonzero(pcr != NO_PC):
            behind = None if lo == hi else np.full(len(mins), NO_PC)
            ceiling = NO_PC
        else:  # per warp, the lowest pc of its running lanes not picked
            behind = np.where(picked, NO_PC, pcr).min(axis=1)[live]
            ceiling = int(behind.min())
        if lo == hi:
            return [(lo, None if len(act) == self.n_threads else _run_of(act), len(mins), ceiling)]
        pcs = pcr.reshape(-1)[act]
        order = np.argsort(mins, kind="stable")
        by_pc = mins[order]
        starts = np.flatnonzero(np.r_[True, by_pc[1:] != by_pc[:-1]])
        warps = np.diff(np.r_[starts, len(by_pc)])
        ceilings = (
            np.minimum.reduceat(behind[order], starts).tolist() if behind is not None else [-1] * len(starts)
        )
        return [
            (p, _run_of(act[pcs == p]), w, c)
            for p, w, c in zip(by_pc[starts].tolist(), warps.tolist(), ceilings)
        ]

    def _execute(self, op: ops.Op, p: int, idx: ops.LaneSet) -> int | None:
        """Run op on idx; return the next pc if all of idx moved to one known place (and no lane
        changed state: barriers, exits, calls and returns answer None)."""
        self.current_pc = p
        if op.guard is not None:
            g = self.registers[op.guard[0]] if idx is None else self.registers[op.guard[0]][idx]
            if op.guard[1]:
                g = ~g
            if op.kind == "branch":
                if g.all():
                    return self._goto(idx, op.target)
                if not g.any():
                    return self._goto(idx, p + 1)
                t = self.threads(idx)
                self.pc[t[g]] = op.target
                self.pc[t[~g]] = p + 1
                return None
            if not g.all():
                t = self.threads(idx)
                self.pc[t[~g]] = p + 1
                if not g.any():
                    return None
                idx = _run_of(t[g])
        kind = op.kind
        if kind == "branch":
            return self._goto(idx, op.target)
        try:
            op.run(self, idx)
        except _Regroup:  # a warp collective parked or released lanes before it had any effect
            return None
        if kind == "normal":
            if idx is None:
                self.pc += 1
            else:
                self.pc[idx] += 1
            return p + 1
        t = self.threads(idx)
        if kind == "exit":
            self.lane_state[t] = EXIT
            self.barrier_pending = True
            self.record_sync(op.instr, idx, "exit")
        elif kind == "bar":
            self.pc[t] = p + 1
        elif kind == "call":
            self.pc[t] = op.target
        elif kind == "ret":
            self._return(t)
        return None

    def _goto(self, idx: ops.LaneSet, target: int) -> int:
        if idx is None:
            self.pc[:] = target
        else:
            self.pc[idx] = target
        return target

    # -- barriers

    def arrive(self, instr: Instr, idx: ops.LaneSet, red: Any) -> None:
        t = self.threads(idx)
        self.lane_state[t] = BAR
        self.barrier_pc[t] = self.pc[t]
        if red is not None:
            self.barrier_vote[t] = np.broadcast_to(red[2](self, idx), t.shape)
        self.barrier_pending = True
        self.record_sync(instr, idx, "bar")

    def _release_barriers(self, force: bool = False) -> None:
        self.barrier_pending = False
        st = self.lane_state.reshape(-1, self.block_lanes)
        at_bar = st == BAR
        waiting = at_bar.any(axis=1)
        if not waiting.any():
            return
        ready = waiting & ~((st == RUN) | (st == WAIT)).any(axis=1)
        if not ready.any():
            return
        bp = self.barrier_pc.reshape(-1, self.block_lanes)
        big = np.iinfo(np.int64).max
        lo = np.where(at_bar, bp, big).min(axis=1)
        hi = np.where(at_bar, bp, -1).max(axis=1)
        bad = ready & (lo != hi)
        if bad.any():
            self._barrier_divergence(int(np.flatnonzero(bad)[0]))
        partial = ready & (st[:, : self.block_threads] == EXIT).any(axis=1)
        if partial.any():  # passed while threads of the block had exited: fine here, undefined on a GPU
            self._note_partial_barrier(partial, lo)
        release = at_bar & ready[:, None]
        flat = release.reshape(-1)
        for p in np.unique(bp[release]):
            op = self.compiled.code[int(p)]
            if "red" in op.instr.parts:  # __syncthreads_count / _and / _or: combine the block's votes
                self._finish_bar_red(op, flat & (self.barrier_pc == p))
        self.lane_state[flat] = RUN
        self.barrier_epoch[ready] += 1

    def _finish_bar_red(self, op: ops.Op, threads: np.ndarray) -> None:
        how = next(p for p in op.instr.parts if p in ("popc", "and", "or"))
        pred = self.barrier_vote.reshape(-1, self.block_lanes)
        arrived = threads.reshape(-1, self.block_lanes)
        live = self.lane_state.reshape(-1, self.block_lanes) != EXIT
        vals = pred & live
        if how == "popc":
            per_block = vals.sum(axis=1).astype(np.uint32)
        elif how == "and":
            per_block = (vals | ~live).all(axis=1).astype(np.uint32)
        else:
            per_block = vals.any(axis=1).astype(np.uint32)
        idx = np.flatnonzero(arrived.reshape(-1))
        writer = ops.writer(_RegisterNames(self.compiled), op.instr.operands[0])
        writer(self, idx, per_block[self.block_slot[idx]])

    def _note_partial_barrier(self, partial: np.ndarray, pcs: np.ndarray) -> None:
        """Keep the first barrier that let a block through with threads missing (for `notes`)."""
        self.partial_blocks += int(partial.sum())
        if self.partial_barrier is None:
            slot = int(np.flatnonzero(partial)[0])
            st = self.lane_state.reshape(-1, self.block_lanes)[slot, : self.block_threads]
            self.partial_barrier = (
                slot,
                int(pcs[slot]),
                np.flatnonzero(st == BAR),
                np.flatnonzero(st == EXIT),
            )
            self.partial_barrier_block = self._block_coords(slot)

    def notes(self) -> list[str]:
        """What a finished launch did that a GPU does not promise to do the same way: a barrier
        that part of a block never reached (its other threads had returned)."""
        if self.partial_barrier is None:
            return []
        _, pc, arrived, exited = self.partial_barrier
        more = self.partial_blocks - 1
        return [
            f"{self.name}: block {self.partial_barrier_block} passed the __syncthreads() at line "
            f"{self.compiled.code[pc].instr.line} with threads {id_ranges(arrived)} only ({id_ranges(exited)} had "
            f"returned{f'; {more} more blocks did too' if more else ''}): undefined on a GPU, where every "
            "thread must reach each barrier; .check(...) says more"
        ]

    def _barrier_divergence(self, slot: int) -> None:
        bp = self.barrier_pc.reshape(-1, self.block_lanes)[slot]
        st = self.lane_state.reshape(-1, self.block_lanes)[slot]
        where = []
        for p in np.unique(bp[st == BAR]):
            tids = np.flatnonzero((bp == p) & (st == BAR))
            where.append(
                f"threads {id_ranges(tids)} wait {self.program.where(self.compiled.code[int(p)].instr)}"
            )
        exited = np.flatnonzero(st[: self.block_threads] == EXIT)
        self.fault = Fault("barrier", -1, slot * self.block_lanes + np.arange(self.block_threads))
        if len(exited):
            where.append(f"threads {id_ranges(exited)} have exited")
        raise BarrierError(
            f"{self.name}: block {self._block_coords(slot)} is stuck: its threads wait at different "
            "__syncthreads() calls, which never meet (a barrier inside a divergent branch?):\n  "
            + "\n  ".join(where)
        )

    def check_converged(self, instr: Instr, idx: ops.LaneSet, masks: Any) -> None:
        """Before a *_sync collective runs: the lanes its member mask names must all be here.

        Lanes already waiting at this instruction count as here. If named lanes are still running
        elsewhere, the lanes here wait for them (raises _Regroup: nothing has happened yet); once
        the last arrives, the waiting lanes are released and all run the collective together on the
        next step. A named lane waiting at a __syncthreads() can never come: an error."""
        t = self.threads(idx)
        lane = t & 31
        masks = np.broadcast_to(np.asarray(masks, np.uint32), t.shape)
        own = np.left_shift(np.uint32(1), lane.astype(np.uint32))
        if ((masks & own) == 0).any():  # PTX: the executing thread must be in membermask
            self._not_in_own_mask(instr, t, masks, own)
        here = ops.warp_reduce(self, idx, own, "or")
        warp = t >> 5
        parked = (
            self._lane_bits((self.lane_state == WAIT) & (self.pc == self.current_pc))
            if self.n_waiting
            else None
        )
        if parked is not None:
            here = here | parked[warp]
        missing = masks & self._lane_bits(self.lane_state != EXIT)[warp] & ~here
        if not missing.any():
            if parked is not None and parked[warp].any():  # the last lanes came: run it all together
                back = (self.lane_state == WAIT) & (self.pc == self.current_pc)
                back &= np.isin(np.arange(len(back)) >> 5, warp)
                self.lane_state[back] = RUN
                self.n_waiting -= int(back.sum())
                raise _Regroup
            return
        if (missing & self._lane_bits(self.lane_state == BAR)[warp]).any():
            self._collective_divergence(instr, t, masks, missing)
        stay = np.isin(warp, warp[missing != 0])  # every lane here of a warp still missing lanes
        self.lane_state[t[stay]] = WAIT
        self.wait_masks[t[stay]] = masks[stay]
        self.n_waiting += int(stay.sum())
        raise _Regroup

    def _not_in_own_mask(self, instr: Instr, t: np.ndarray, masks: np.ndarray, own: np.ndarray) -> None:
        """A lane runs a *_sync collective with a member mask that leaves it out: undefined in PTX,
        an illegal instruction on a GPU (the CUDA context is lost). A collective fault whose
        'missing' lanes are the callers themselves."""
        outside = np.where((masks & own) == 0, own, np.uint32(0))
        k = int(np.flatnonzero(outside)[0])
        self.fault = Fault("collective", self.current_pc, t, outside.astype(np.int64), outside=True)
        raise BarrierError(
            f"{self.name}: {self.who(int(t[k]))} runs '{instr.opcode}' with member mask "
            f"{int(masks[k]):#010x}, which leaves out the lane itself {self.program.where(instr)}"
        )

    def _lane_bits(self, lanes: np.ndarray) -> np.ndarray:
        """Per warp, the bit mask of its lanes where `lanes` is true."""
        bits = np.uint64(1) << np.arange(LANES, dtype=np.uint64)
        return (lanes.reshape(self.n_warps, LANES) * bits).sum(axis=1).astype(np.uint32)

    def _raise_if_a_warp_waits_forever(self) -> None:
        """A warp whose lanes all wait (or have exited, or wait at a __syncthreads) never moves again."""
        st = self.lane_state.reshape(self.n_warps, LANES)
        stuck = (st == WAIT).any(axis=1) & ~(st == RUN).any(axis=1)
        if not stuck.any():
            return
        w = int(np.flatnonzero(stuck)[0])
        t = w * LANES + np.flatnonzero(st[w] == WAIT)
        pc = int(self.pc[t[0]])
        t = t[self.pc[t] == pc]
        self.current_pc = pc
        here = self._lane_bits((self.lane_state == WAIT) & (self.pc == pc))[w]
        missing = self.wait_masks[t] & ~here
        self._collective_divergence(self.compiled.code[pc].instr, t, self.wait_masks[t], missing)

    def _collective_divergence(
        self, instr: Instr, t: np.ndarray, masks: np.ndarray, missing: np.ndarray
    ) -> None:
        k = int(np.flatnonzero(missing)[0])
        self.fault = Fault("collective", self.current_pc, t, missing.astype(np.int64))
        raise BarrierError(
            f"{self.name}: {self.who(int(t[k]))} runs '{instr.opcode}' with member mask "
            f"{int(masks[k]):#010x}, but lanes {int(missing[k]):#010x} of its warp are elsewhere "
            f"(diverged) {self.program.where(instr)}"
        )

    def _out_of_work(self) -> None:
        raise InstructionBudgetExceeded(
            f"{self.name} has run {self.work:,} thread-instructions on the emulator "
            f"({self.n_blocks} blocks of {self.block_threads} threads) and is not finished: that is more than "
            "the emulator should take on (it would run for minutes). Use a smaller N, a GPU, or "
            "course.emulator.set_budget(work=...) if you mean it"
        )

    def _out_of_budget(self) -> None:
        running = np.flatnonzero(self.lane_state == RUN)
        at = ""
        if len(running):
            t = int(running[0])
            at = f"; {self.who(t)} is {self.program.where(self.compiled.code[int(self.pc[t])].instr)}"
        raise InstructionBudgetExceeded(
            f"{self.name} ran {self.budget} scheduler steps without finishing (an endless loop, or a "
            f"thread waiting for something that never happens?){at}. For a long but correct kernel, "
            "pass budget=... to Kernel.trace or call course.emulator.set_budget(...)"
        )

    # -- calls

    def enter_call(self, site: int, idx: ops.LaneSet, params: list[tuple[str, str]]) -> None:
        """The lanes idx call a device function at the call instruction `site`: a recursive callee's
        registers are saved first, the arguments' .params copied to the callee's, the return pushed."""
        t = self.threads(idx)
        # checked before a recursive callee's frame is saved: the frames have MAX_CALL_DEPTH slots
        if self.call_stack is None or (self.call_depth[t] >= MAX_CALL_DEPTH).any():
            raise KernelFault(f"{self.name}: device function calls nested deeper than {MAX_CALL_DEPTH}")
        if site in self.compiled.frames:
            self.save_frame(site, idx)
        for src, dst in params:
            self._copy_param(src, dst, t)
        self.push_call(t, site)

    def push_call(self, t: np.ndarray, site: int) -> None:
        assert self.call_stack is not None
        self.call_stack[t, self.call_depth[t]] = site
        self.call_depth[t] += 1

    def _return(self, t: np.ndarray) -> None:
        assert self.call_stack is not None
        self.call_depth[t] -= 1
        sites = self.call_stack[t, self.call_depth[t]]
        for site in np.unique(sites):
            sel = t[sites == site]
            for src, dst in self.compiled.ret_maps.get(int(site), []):
                self._copy_param(src, dst, sel)
            if int(site) in self.compiled.frames:
                self.restore_frame(int(site), sel)
            self.pc[sel] = site + 1

    def _copy_param(self, src: str, dst: str, t: np.ndarray) -> None:
        """Pass a .param between caller and callee (names are reused with other sizes)."""
        width = min(self.call_params[src].shape[1], self.call_params[dst].shape[1])
        self.call_params[dst][t, :width] = self.call_params[src][t, :width]

    def save_frame(self, site: int, idx: ops.LaneSet) -> None:
        """Before a recursive call: keep the callee's registers and local bytes of this depth."""
        t = self.threads(idx)
        regs, (lo, hi) = self.compiled.frames[site]
        d = self.call_depth[t]
        for r in regs:
            if r not in self.saved_frames:
                self.saved_frames[r] = np.zeros((self.n_threads, MAX_CALL_DEPTH), self.registers[r].dtype)
            self.saved_frames[r][t, d] = self.registers[r][t]
        if hi > lo:
            key = f"local:{lo}"
            if key not in self.saved_frames:
                self.saved_frames[key] = np.zeros((self.n_threads, MAX_CALL_DEPTH, hi - lo), np.uint8)
            self.saved_frames[key][t, d] = self.local_memory.data[t, lo:hi]

    def restore_frame(self, site: int, t: np.ndarray) -> None:
        regs, (lo, hi) = self.compiled.frames[site]
        d = self.call_depth[t]
        for r in regs:
            self.registers[r][t] = self.saved_frames[r][t, d]
        if hi > lo:
            self.local_memory.data[t, lo:hi] = self.saved_frames[f"local:{lo}"][t, d]


class _RegisterNames:
    """The kernel's registers by their resolved names (ops.Names), to write one after the fact."""

    def __init__(self, compiled: LinkedKernel):
        self.compiled = compiled

    def reg(self, name: str) -> str:
        return name

    def storage(self, name: str) -> np.dtype:
        return self.compiled.storage[name]


def _fulfils_the_contract(m: Machine) -> ops.Machine:
    return m  # mypy checks here that Machine is what the instructions expect (ops.contract.Machine)
