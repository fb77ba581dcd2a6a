"""What the warp-scan exercise (`scan.exercises.warp`) holds a learner's kernel to, read from its
trace: registers only, one load of x and one store of y per lane and no atomics, every lane a
shuffle reads from makes the call, and at most log2 32 warp-wide exchanges (apart from exercises.py, which is the exercises themselves)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..exercises import Target
from ..module import Kernel

WARP_STEPS = 5  # log2(32)


def registers_only() -> Target:
    def measure(trace: Any, k: Kernel) -> str:
        shared = trace.where(space="shared")
        if len(shared):
            return (
                f"the trace has {len(shared)} shared-memory accesses (line {int(shared.line[0])}): "
                "a warp's lanes can exchange registers directly"
            )
        bars = trace.where(op="bar")
        if len(bars):
            return f"the trace has a barrier (__syncthreads or __syncwarp, line {int(bars.line[0])}): a shuffle needs none"
        return ""

    return Target("no shared-memory access and no barrier", measure)


def _busiest_thread(trace: Any, events: Any) -> tuple[int, int, int] | None:
    """(accesses, block, thread) of the thread that makes the most of `events`' lane-accesses, or
    None when none makes more than one."""
    if not len(events):
        return None
    ids = (events.block[:, None].astype(np.int64) * trace.threads_per_block + events.thread_ids())[
        events.lanes()
    ]
    per = np.bincount(ids)
    worst = int(np.argmax(per))
    if per[worst] <= 1:
        return None
    b, t = divmod(worst, trace.threads_per_block)
    return int(per[worst]), b, t


def one_load_per_lane() -> Target:
    """Each thread loads at most one element of x: the warp scan moves values between lanes'
    registers; a lane that reads its predecessors' elements itself is the naive scan in a warp."""

    def measure(trace: Any, k: Kernel) -> str:
        busiest = _busiest_thread(trace, trace.where(op="ld", space="global"))
        if busiest is None:
            return ""
        count, b, t = busiest
        return (
            f"thread {t} of block {b} loads {count} elements of x: each lane loads its own element "
            "once, and the others' values reach it through shuffles, not through memory"
        )

    return Target("one load of x per lane", measure)


def one_store_per_lane() -> Target:
    """Each thread writes its own element of y once, with a plain store, and nothing is atomic: a
    lane that adds its value into its successors' y (atomicAdd) scans through memory, one atomic
    after another, and needs y zeroed before the launch, which the exercise never promises."""

    def measure(trace: Any, k: Kernel) -> str:
        atomics = trace.where(op=["atom", "red"])
        if len(atomics):
            return (
                f"the trace has {len(atomics)} atomic{'s' * (len(atomics) != 1)} ({atomics.columns['opcode'][0]}, "
                f"line {int(atomics.line[0])}): a lane adding its value into other lanes' y scans through "
                "memory, one atomic after another (and counts on y being zero before the launch); the values "
                "move between lanes' registers, and each lane stores its own y once"
            )
        busiest = _busiest_thread(trace, trace.where(op="st", space="global"))
        if busiest is None:
            return ""
        count, b, t = busiest
        return (
            f"thread {t} of block {b} stores to global memory {count} times: each lane stores its own "
            "element of y once, when its sum is complete"
        )

    return Target("one store of y per lane, and no atomics", measure)


def sources_take_part() -> Target:
    """Every lane a shuffle reads from makes that same call. The emulator hands over an idle lane's
    register; on a GPU "if the target thread is inactive, the retrieved value is undefined" (CUDA C++
    Programming Guide, warp shuffle functions)."""

    def measure(trace: Any, k: Kernel) -> str:
        sh = trace.where(op="shfl")
        if not len(sh):
            return ""
        active, src = sh.lanes(), sh.columns["addr"]
        for r in range(len(sh)):
            lanes = np.flatnonzero(active[r])
            from_idle = [lane for lane in lanes if not active[r, int(src[r, lane]) % 32]]
            if from_idle:
                lane = int(from_idle[0])
                return (
                    f"line {int(sh.line[r])}: lane {lane} of warp {int(sh.warp[r])}, block {int(sh.block[r])} reads "
                    f"lane {int(src[r, lane])}, which does not make this call ({len(from_idle)} lane{'s' * (len(from_idle) != 1)} read so): "
                    "on a GPU the value read from a lane outside the call is undefined. The lane read from "
                    "must be in the mask and make the same call, so every lane makes the shuffle and the "
                    "test goes on the add"
                )
        return ""

    return Target("every lane a shuffle reads from makes the call", measure)


# warp-wide exchanges: shuffles, and votes (ballot, any, all) and warp reductions (__reduce_add_sync),
# which the trace records as "vote"; each is one step of lanes trading values
EXCHANGES = ("shfl", "vote", "match")


def five_shuffles() -> Target:
    def measure(trace: Any, k: Kernel) -> str:
        sh = trace.where(op=list(EXCHANGES))
        if not len(sh):
            return ""
        key = sh.block.astype(np.int64) * 64 + sh.warp
        warps, counts = np.unique(key, return_counts=True)
        worst = int(np.argmax(counts))
        if counts[worst] <= WARP_STEPS:
            return ""
        b, w = divmod(int(warps[worst]), 64)
        mine = sh.where(block=b, warp=w)
        kinds, n = np.unique(mine.columns["opcode"].astype(str), return_counts=True)
        said = ", ".join(f"{c} × {o}" for o, c in zip(kinds, n, strict=True))
        return (
            f"warp {w} of block {b} runs {counts[worst]} warp-wide exchanges ({said}): Kogge-Stone across "
            f"32 lanes takes log2 32 = {WARP_STEPS} steps, one shuffle each; a vote or a warp reduction "
            "is a warp-wide step too"
        )

    return Target(f"at most {WARP_STEPS} shuffles per warp (votes and warp reductions count too)", measure)
