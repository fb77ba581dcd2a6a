"""The bug checker: run a launch once on the emulator and name every bug its accesses show.

    findings = kernel.check((64,), (256,), (x, out, np.int32(n)), shared_mem=2048)
    print(findings)            # one paragraph per bug: kind, line, threads, elements, why
    findings.kinds()           # {"race"}

Five kinds, each found where compute-sanitizer is blind to it:

- `out-of-bounds`: any access outside its buffer, against the buffer's exact length (a
  memory pool's rounding hides small overruns from memcheck).
- `misaligned`: an N-byte access at an address that is not a multiple of N.
- `race`: two threads touch the same word, one writes, and nothing orders them: in one
  barrier interval, by different warps, or by lanes of one warp with no __syncwarp()/
  shuffle/vote between (since Volta a warp is not in lockstep, volatile or not). In global
  memory also between blocks, unless one of them is an atomic, both are volatile flag
  traffic, or a fence-then-flag protocol orders them. racecheck sees none of the global ones.
- `uninitialized`: a read of shared memory no thread of the block wrote before (initcheck
  does not look at shared memory), or of a `course.empty` array no launch has written.
- `barrier-divergence`: threads of a block at different __syncthreads(), or at one that
  others never reach because they returned early or looped fewer times (synccheck passes
  that one: exited threads count as arrived on the GPU).

The emulator stops at the first out-of-bounds or misaligned access (nothing after it can be
trusted); the other checks read the trace of everything that ran. Each finding aggregates
one kind of bug on one line and buffer (races: on the lines that race with each other): a
count, a few examples, one explanation. `find(trace)` runs the trace checks on any trace.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np

from .analysis import MEMORY_OPS, element_size
from .emulator import FaultReport, Trace, id_ranges
from .emulator.trace import LANES

KINDS = ("out-of-bounds", "race", "uninitialized", "barrier-divergence", "misaligned")
EXAMPLES = 3  # instances spelled out per finding

Dim3 = tuple[int, int, int]


# ---------------------------------------------------------------- findings


@dataclass(frozen=True)
class Finding:
    """One class of bug at one place: what, where, who, how often, and why it matters."""

    kind: str  # one of KINDS
    lines: tuple[int, ...]  # .cu lines involved (a race: both accesses; a barrier: barrier and exit)
    explanation: str  # one line a learner understands
    buffer: str = ""  # the array: a kernel parameter or a __shared__ variable ("" for barriers)
    space: str = ""  # global, shared or local ("" for barriers)
    scope: str = ""  # races: "within a warp", "between warps" or "between blocks" (the widest seen)
    blocks: tuple[Dim3, ...] = ()  # a few blocks (blockIdx) where it happens
    threads: tuple[Dim3, ...] = ()  # a few threads (threadIdx) involved
    elements: tuple[int, ...] = ()  # a few element indices of the buffer (flat; misaligned: byte offsets)
    element_count: int = 0  # how many distinct elements in all
    count: int = 1  # how many: threads at fault, racing accesses, uninitialised reads, or blocks
    examples: tuple[str, ...] = ()  # a few instances in words
    code: tuple[str, ...] = ()  # the source text of each line

    def __str__(self) -> str:
        where = f" in {self.space} memory `{self.buffer}`" if self.buffer else ""
        where += f" ({self.scope})" if self.scope else ""
        lines = ", ".join(map(str, self.lines)) or "?"
        head = f"[{self.kind}]{where}{',' * bool(where)} line{'s' * (len(self.lines) > 1)} {lines}"
        one, many = _COUNTED.get(self.kind, ("time", "times"))
        times = f"{self.count} {one if self.count == 1 else many}"
        if self.element_count:
            times += f" on {self.element_count} element{'s' * (self.element_count > 1)}"
        out = [f"{head}: {times}", f"  {self.explanation}"]
        out += [f"  {n:>4} | {text}" for n, text in zip(self.lines, self.code)]
        out += [f"  e.g. {e}" for e in self.examples]
        return "\n".join(out)


_COUNTED = {  # what Finding.count counts, singular and plural
    "out-of-bounds": ("thread", "threads"),
    "misaligned": ("thread", "threads"),
    "race": ("racing access", "racing accesses"),
    "uninitialized": ("read", "reads"),
    "barrier-divergence": ("block", "blocks"),
}


class Findings(list[Finding]):
    """The findings of one check: a list (empty when the kernel is clean) that prints well."""

    def __init__(self, items: Any = (), kernel: str = ""):
        super().__init__(items)
        self.kernel = kernel

    def kinds(self) -> set[str]:
        return {f.kind for f in self}

    def of(self, kind: str) -> Findings:
        """The findings of one kind."""
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
        return Findings([f for f in self if f.kind == kind], self.kernel)

    def __str__(self) -> str:
        name = self.kernel or "the kernel"
        if not self:
            return f"{name}: no bugs found"
        return f"{name}: {len(self)} finding{'s' * (len(self) > 1)}\n\n" + "\n\n".join(map(str, self))

    __repr__ = __str__

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        name = html.escape(self.kernel or "the kernel")
        if not self:
            return f"<p><b>{name}</b>: no bugs found</p>"
        rows = []
        for f in self:
            code = "<br>".join(
                f"{n}: <code>{html.escape(t)}</code>" for n, t in zip(f.lines, f.code)
            ) or ", ".join(map(str, f.lines))
            where = f"{f.space} <code>{html.escape(f.buffer)}</code>" if f.buffer else ""
            if f.scope:
                where += f" ({html.escape(f.scope)})"
            ex = "<br>".join(html.escape(e) for e in f.examples)
            rows.append(
                f"<tr><td><b>{f.kind}</b></td><td>{code}</td><td>{where}</td><td>{f.count}</td>"
                f"<td>{html.escape(f.explanation)}<br><small>{ex}</small></td></tr>"
            )
        return (
            f"<p><b>{name}</b>: {len(self)} finding{'s' * (len(self) > 1)}</p><table>"
            "<tr><th>kind</th><th>line</th><th>where</th><th>times</th><th>what and why</th></tr>"
            + "".join(rows)
            + "</table>"
        )


# ---------------------------------------------------------------- the check


def findings(
    trace: Trace, fault: FaultReport | None = None, *, initialized: dict[str, np.ndarray] | None = None
) -> Findings:
    """Every bug a checked launch showed: its fault (from `course.emulator.run_checked`), then the
    races, uninitialised reads and barrier divergence in its trace.

    `initialized` maps a global buffer's name to a byte mask of what held a value at launch; buffers
    not in it count as initialised. `Kernel.check` is the way to call this.
    """
    found = [_fault_finding(trace, fault)] if fault is not None else []
    bases = {b.name: b.base for b in trace.buffers if b.space == "global"}
    masks = {bases[name]: mask for name, mask in (initialized or {}).items() if name in bases}
    found += find(trace, initialized=masks)
    return Findings(sorted(found, key=_order), trace.kernel)


def find(trace: Trace, *, initialized: dict[int, np.ndarray] | None = None) -> Findings:
    """Races, uninitialised reads and barrier divergence in a trace (what `check` adds to faults).

    `initialized` maps a global buffer's base address to a byte mask of what held a value at
    launch; buffers not in it count as initialised. A trace filtered by block or space sees
    only what it recorded.
    """
    accs = _all_accesses(trace)
    found = _races(trace, accs) + _uninitialized(trace, accs, initialized) + barrier_divergence(trace)
    return Findings(sorted(found, key=_order), trace.kernel)


def _order(f: Finding) -> tuple[int, int, str]:
    return (KINDS.index(f.kind), min(f.lines, default=0), f.buffer)


# ---------------------------------------------------------------- words


def _coords(linear: int, dims: tuple[int, int, int]) -> Dim3:
    x, y, _ = dims
    return (linear % x, (linear // x) % y, linear // (x * y))


def _fmt(c: Dim3) -> str:
    return f"({c[0]}, {c[1]}, {c[2]})"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _code(source: list[str], lines: tuple[int, ...]) -> tuple[str, ...]:
    return tuple(source[n - 1].strip() if 1 <= n <= len(source) else "" for n in lines)


_VERBS = {"ld": "reads", "st": "writes", "atom": "atomically updates", "red": "atomically updates"}


# ---------------------------------------------------------------- faults the emulator stopped at


def _fault_finding(trace: Trace, fault: FaultReport) -> Finding:
    if fault.kind == "barrier":
        return _barrier_fault(trace, fault)
    if fault.kind == "collective":
        return _collective_fault(trace, fault)
    verb = _VERBS.get(fault.op, "accesses")
    # a stray address is pinned to the buffer it lies nearest to, which for a far stray (an index
    # scaled twice) is whichever buffer happens to lie there; the first thread at fault strays
    # least in the usual bugs, and names the buffer the trace's error names too
    name = min(fault.accesses, key=lambda a: (a.block[::-1], a.thread[::-1])).buffer
    keep = sorted(
        (a for a in fault.accesses if a.buffer == name), key=lambda a: (a.block[::-1], a.thread[::-1])
    )
    first = keep[0]
    if fault.kind == "misaligned":  # name the byte, not an element: the address is between elements
        places = [a.byte for a in keep]
        examples = tuple(
            f"block {_fmt(a.block)} thread {_fmt(a.thread)} {verb} {fault.size} bytes at byte {a.byte} of {a.buffer}"
            for a in keep[:EXAMPLES]
        )
        explanation = (
            f"a {fault.size}-byte access must start at a multiple of {fault.size} bytes; this one "
            f"{verb} `{name}` at a byte offset that is not (a pointer cast from a byte offset?)"
        )
    else:
        places = [a.element for a in keep]
        examples = tuple(
            f"block {_fmt(a.block)} thread {_fmt(a.thread)} {verb} {a.buffer}[{a.element}]"
            for a in keep[:EXAMPLES]
        )
        side = {(True, False): "before the start", (False, True): "past the end"}.get(
            (min(places) < 0, max(places) >= 0), "before the start and past the end"
        )
        explanation = (
            f"{verb} `{name}` {side}: it has {first.length} {'element' if first.length == 1 else 'elements'} (indices 0 to {first.length - 1}"
            f"{f', {first.itemsize} bytes each' if first.itemsize > 1 else ''}); every index a thread uses must "
            "be checked against the length (`if (i < n)`), for each access it makes"
        )
        if len(keep) < len(fault.accesses):
            explanation += (
                f"; {len(fault.accesses) - len(keep)} more threads of this instruction strayed further, "
                "to addresses nearer other buffers"
            )
        if fault.space == "shared" and first.length == 0:
            explanation = (
                f"{verb} `{name}`, which has no memory at all: an `extern __shared__` array gets the "
                "launch's dynamic shared memory, and this launch gave none (pass shared_mem=...)"
            )
    return Finding(
        kind=fault.kind, lines=fault.lines, explanation=explanation, buffer=name, space=fault.space,
        blocks=tuple(dict.fromkeys(a.block for a in keep))[:EXAMPLES],
        threads=tuple(dict.fromkeys(a.thread for a in keep))[:EXAMPLES],
        elements=tuple(dict.fromkeys(places))[:EXAMPLES], element_count=len(set(places)),
        count=len(keep), examples=examples, code=_code(trace.source, fault.lines),
    )  # fmt: skip


SYNC_FIX = "move it out of the branch, or pass __activemask()"
# a shuffle reads other lanes' registers: a mask of only the lanes that are there leaves the read undefined
SHUFFLE_SYNC_FIX = (
    "keep every lane in the call (also lanes that return early) and put the condition on what is done "
    "with its result"
)


def _collective_fault(trace: Trace, fault: FaultReport) -> Finding:
    assert fault.block is not None
    if fault.outside:
        return Finding(
            kind="barrier-divergence", lines=fault.lines, blocks=(fault.block,), count=fault.blocks_affected,
            explanation=(
                f"`{fault.opcode}` is run by lanes whose member mask leaves them out: a lane must be in the "
                "mask it passes (on a GPU this is an illegal instruction, and the program's CUDA context is "
                "lost); a lane that has done its part should leave the loop, not call again without itself"
            ),
            threads=fault.threads,
            examples=(f"block {_fmt(fault.block)} warp {fault.warp}: lanes {id_ranges(fault.lanes_missing)} "
                      f"run {fault.opcode} with masks that do not name them",),
            code=_code(trace.source, fault.lines),
        )  # fmt: skip
    example = (
        f"block {_fmt(fault.block)} warp {fault.warp}: lanes {id_ranges(fault.lanes_here)} run "
        f"{fault.opcode}, lanes {id_ranges(fault.lanes_missing)} of its mask are elsewhere"
    )
    return Finding(
        kind="barrier-divergence", lines=fault.lines, blocks=(fault.block,), count=fault.blocks_affected,
        explanation=(
            f"`{fault.opcode}` names lanes in its member mask that are not there (diverged or exited): every "
            "lane in the mask must reach the same *_sync call; "
            + (SHUFFLE_SYNC_FIX if fault.opcode.startswith("shfl") else SYNC_FIX)
        ),
        threads=fault.threads, examples=(example,), code=_code(trace.source, fault.lines),
    )  # fmt: skip


def _barrier_fault(trace: Trace, fault: FaultReport) -> Finding:
    assert fault.block is not None
    parts = [f"threads {id_ranges(threads)} wait at line {line}" for line, threads in fault.waiting]
    if fault.exited:
        parts.append(f"threads {id_ranges(fault.exited)} have exited")
    return Finding(
        kind="barrier-divergence", lines=fault.lines, blocks=(fault.block,),
        explanation=(
            "threads of one block wait at different __syncthreads() calls, which never meet: a barrier "
            "inside a branch that not every thread takes; put the __syncthreads() where all threads reach it"
        ),
        threads=fault.threads,
        examples=(f"block {_fmt(fault.block)}: " + "; ".join(parts),), code=_code(trace.source, fault.lines),
    )  # fmt: skip


# ---------------------------------------------------------------- accesses, lane by lane

# kinds of access: plain load, plain store, atomic, "strong" load, strong store. Strong: in global
# memory volatile/relaxed/acquire/release (flag traffic); in both spaces, a load that the same
# thread then checks with atomicCAS on the same word (the compare-and-swap loop's first read).
LD, ST, AT, SLD, SST = range(5)
# which kinds race with which (symmetric; rows and columns LD ST AT SLD SST). Atomics never race
# with each other. In global memory nothing races with an atomic ("neither with an atomic"), and
# a strong load does not race with a strong store (polling a flag another block sets). In shared
# memory volatile is no excuse (the warp-synchronous reductions), and an atomic still races with
# a plain access of another thread in the same barrier interval (an unsynchronised reset or read).
CONFLICT = {
    "global": np.array(
        [[0, 1, 0, 0, 1],
         [1, 1, 0, 1, 1],
         [0, 0, 0, 0, 0],
         [0, 1, 0, 0, 0],
         [1, 1, 0, 0, 1]], bool),
    "shared": np.array(
        [[0, 1, 1, 0, 1],
         [1, 1, 1, 1, 1],
         [1, 1, 0, 0, 1],
         [0, 1, 0, 0, 1],
         [1, 1, 1, 1, 1]], bool),
}  # fmt: skip
_STRONG = ("volatile", "relaxed", "acquire", "release")
_WARP_SYNC_OPS = ("shfl", "vote", "match")


@dataclass
class _Accesses:
    """One row per (lane, unit) of every load, store and atomic in one memory space.

    A unit is the smallest access size seen on the row's buffer, so an 8-byte and a 4-byte
    access of the same bytes meet on shared units; `unit` is the byte address of its start.
    """

    space: str
    event: np.ndarray
    lane: np.ndarray
    unit: np.ndarray
    usize: np.ndarray  # bytes per unit
    kind: np.ndarray
    block: np.ndarray
    warp: np.ndarray
    epoch: np.ndarray
    step: np.ndarray
    wseg: np.ndarray  # warp-sync points (__syncwarp, shuffle, vote) its warp passed before it
    line: np.ndarray
    buffer: np.ndarray

    def __len__(self) -> int:
        return len(self.event)

    @property
    def thread(self) -> np.ndarray:
        return self.warp.astype(np.int64) * LANES + self.lane

    @property
    def writes(self) -> np.ndarray:
        return np.isin(self.kind, (ST, AT, SST))

    @property
    def reads(self) -> np.ndarray:
        return np.isin(self.kind, (LD, AT, SLD))


def _warp_segments(trace: Trace) -> np.ndarray:
    """Per event: how many warp-level sync points (__syncwarp, shuffles, votes) its warp ran before."""
    is_sync = np.isin(trace.op, _WARP_SYNC_OPS)
    bars = np.flatnonzero(trace.op == "bar")
    is_sync[bars] = np.char.find(trace.opcode[bars].astype(str), "warp") >= 0
    wpb = -(-trace.threads_per_block // LANES)
    key = trace.columns["block"].astype(np.int64) * wpb + trace.warp
    order = np.argsort(key, kind="stable")  # events are in step order already
    if not len(order):
        return np.zeros(0, np.int64)
    k, s = key[order], is_sync[order].astype(np.int64)
    before = np.cumsum(s) - s
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    counts = np.diff(np.r_[starts, len(k)])
    out = np.empty(len(k), np.int64)
    out[order] = before - np.repeat(before[starts], counts)
    return out


def _all_accesses(trace: Trace) -> list[_Accesses]:
    wseg = _warp_segments(trace)
    return [_accesses(trace, space, wseg) for space in ("shared", "global")]


def _accesses(trace: Trace, space: str, wseg: np.ndarray | None = None) -> _Accesses:
    ev = np.flatnonzero((trace.space == space) & np.isin(trace.op, MEMORY_OPS))
    e_i, lane = np.nonzero(trace.lanes()[ev])
    e = ev[e_i]
    addr, buf = trace.addr[e, lane], trace.buffer[e, lane].astype(np.int64)
    size = trace.size[e].astype(np.int64)
    smallest = np.full(len(trace.buffers) + 1, 1 << 30, np.int64)
    np.minimum.at(smallest, buf, size)
    u = smallest[buf]
    per = np.maximum(size // u, 1)
    rep = np.repeat(np.arange(len(e)), per)
    k = np.arange(len(rep)) - np.repeat(np.cumsum(per) - per, per)
    e, lane, buf = e[rep], lane[rep], buf[rep]
    unit = addr[rep] + k * u[rep]
    op = trace.op[e]
    kind = np.where(np.isin(op, ("atom", "red")), AT, np.where(op == "st", ST, LD))
    if space == "global":  # volatile flags are how blocks talk without atomics
        opcodes = np.unique(trace.opcode[e]) if len(e) else np.empty(0, str)
        strong = [c for c in opcodes if any(q in c.split(".") for q in _STRONG)]
        if strong:
            s = np.isin(trace.opcode[e], strong)
            kind = np.where(s & (kind == LD), SLD, np.where(s & (kind == ST), SST, kind))
    cas = np.flatnonzero((kind == AT) & (np.char.find(trace.opcode[e], ".cas") >= 0))
    if len(cas):  # a CAS loop's first plain read of the word it then compares-and-swaps
        thread = trace.warp[e].astype(np.int64) * LANES + lane
        key = _rows(np.stack([trace.columns["block"][e].astype(np.int64), thread, unit], axis=1))
        kind[(kind == LD) & np.isin(key, key[cas])] = SLD
    if wseg is None:
        wseg = _warp_segments(trace)
    return _Accesses(
        space=space, event=e, lane=lane.astype(np.int64), unit=unit, usize=u[rep], kind=kind,
        block=trace.columns["block"][e].astype(np.int64), warp=trace.warp[e].astype(np.int64),
        epoch=trace.epoch[e].astype(np.int64), step=trace.step[e], wseg=wseg[e], line=trace.line[e],
        buffer=buf,
    )  # fmt: skip


# ---------------------------------------------------------------- races


def _rows(a: np.ndarray) -> np.ndarray:
    """Each row of a 2-D array as one opaque value, for np.isin/np.unique over whole rows."""
    a = np.ascontiguousarray(a)
    return a.view(np.dtype((np.void, a.dtype.itemsize * a.shape[1]))).reshape(-1)


def _hazards(
    keys: list[np.ndarray], actor: np.ndarray, step: np.ndarray, kind: np.ndarray, conflict: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Racing pairs (earlier, later) of rows with equal `keys` and different `actor`s.

    For every row, the nearest earlier row of its group by another actor whose kind conflicts
    with it. If any pair of a group races, some row finds a partner this way (the later one
    of the pair: its partner search covers the earlier), and the partner found is the access it
    most directly races with. Sorting and a binary search per kind: no pair enumeration.
    """
    if not len(actor):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    order = np.lexsort([actor, step, *keys[::-1]])
    group = np.cumsum(_new_group(keys, order))
    a, k = actor[order], kind[order]
    earlier, later = [], []
    for kk in np.unique(k):
        rows = np.flatnonzero(k == kk)
        cand = np.flatnonzero(conflict[kk][k])
        if not len(cand):
            continue
        ca, cg = a[cand], group[cand]
        run = np.r_[True, (ca[1:] != ca[:-1]) | (cg[1:] != cg[:-1])]
        run_start = np.maximum.accumulate(np.where(run, np.arange(len(cand)), 0))
        j = np.searchsorted(cand, rows) - 1  # the last candidate strictly before the row
        jj = np.maximum(j, 0)
        j2 = np.where(ca[jj] == a[rows], run_start[jj] - 1, jj)  # skip the row's own actor
        ok = (j >= 0) & (j2 >= 0)
        j2 = np.maximum(j2, 0)
        ok &= (cg[j2] == group[rows]) & (ca[j2] != a[rows])
        earlier.append(order[cand[j2[ok]]])
        later.append(order[rows[ok]])
    if not earlier:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(earlier), np.concatenate(later)


def _new_group(keys: list[np.ndarray], order: np.ndarray) -> np.ndarray:
    """For rows sorted by `order` (keys first): True where the keys differ from the row before."""
    new = np.zeros(len(order), bool)
    new[:1] = True
    for key in keys:
        ks = key[order]
        new[1:] |= ks[1:] != ks[:-1]
    return new


SCOPES = ("within a warp", "between warps", "between blocks")


def races(trace: Trace) -> list[Finding]:
    """Conflicting accesses to one word that nothing orders, in shared and global memory."""
    return _races(trace, _all_accesses(trace))


def _races(trace: Trace, accs: list[_Accesses]) -> list[Finding]:
    found = []
    for acc in accs:
        space = acc.space
        if not len(acc):
            continue
        pairs = []
        b, e, w, s, u = acc.block, acc.epoch, acc.warp, acc.wseg, acc.unit
        for scope, keys, actor in (
            (0, [b, e, w, s, u], acc.lane),
            (1, [b, e, u], w),
            (2, [u], b),
        ):
            if scope == 2 and space != "global":
                continue
            i, j = _hazards(keys, actor, acc.step, acc.kind, CONFLICT[space])
            if scope == 2 and len(i):
                keep = ~_ordered_by_flags(trace, acc, i, j)
                i, j = i[keep], j[keep]
            pairs.append((i, j, np.full(len(i), scope)))
        if pairs:
            found += _race_findings(trace, acc, *(np.concatenate(c) for c in zip(*pairs)))
    return found


def _ordered_by_flags(trace: Trace, acc: _Accesses, first: np.ndarray, then: np.ndarray) -> np.ndarray:
    """Which cross-block pairs a fence-then-flag protocol orders (the last-block-done pattern).

    Block A's access x is released when a thread of A that did x (or any thread, after a later
    __syncthreads) runs __threadfence() and then writes a flag word (an atomic or a store).
    Block B's access y is acquired when B touched that flag after the flag write and before y
    (in y's thread, or in an earlier barrier interval of B). Atomics of one step apply in
    thread order (block by block), as the emulator runs them.
    """
    ordered = np.zeros(len(first), bool)
    fences = np.flatnonzero(trace.op == "fence")
    if not len(fences):
        return ordered
    fe, fl = np.nonzero(trace.lanes()[fences])
    f_ev = fences[fe]
    f_block, f_thread = trace.columns["block"][f_ev].astype(np.int64), trace.warp[f_ev] * LANES + fl
    f_step, f_epoch = trace.step[f_ev], trace.epoch[f_ev]
    thread = acc.thread
    who = acc.block * trace.threads_per_block + thread  # the order atomics of one step apply in
    fencing = _rows(np.stack([f_block, f_thread], axis=1))
    writes = np.flatnonzero(acc.writes)
    writes = writes[np.isin(_rows(np.stack([acc.block[writes], thread[writes]], axis=1)), fencing)]
    by_thread: dict[tuple[int, int], list[int]] = {}  # in step order
    for r in writes[np.argsort(acc.step[writes], kind="stable")].tolist():
        by_thread.setdefault((int(acc.block[r]), int(thread[r])), []).append(r)
    # per block: (fence thread, fence step, fence epoch, flag row: its thread's next write)
    releases: dict[int, list[tuple[int, int, int, int]]] = {}
    for blk, th, st, ep in zip(f_block.tolist(), f_thread.tolist(), f_step.tolist(), f_epoch.tolist()):
        flag = next((r for r in by_thread.get((blk, th), ()) if acc.step[r] > st), None)
        if flag is not None:
            releases.setdefault(blk, []).append((th, st, ep, flag))
    if not releases:
        return ordered
    flag_units = np.array(sorted({int(acc.unit[r[3]]) for rs in releases.values() for r in rs}), np.int64)
    touches = np.flatnonzero(np.isin(acc.unit, flag_units))
    for n, (x, y) in enumerate(zip(first.tolist(), then.tolist())):
        for th, st, ep, w in releases.get(int(acc.block[x]), ()):
            if not ((th == thread[x] and st > acc.step[x]) or ep > acc.epoch[x]):
                continue
            q = touches[(acc.block[touches] == acc.block[y]) & (acc.unit[touches] == acc.unit[w])]
            same_step = (acc.step[q] == acc.step[w]) & (acc.kind[q] == AT) & (acc.kind[w] == AT)
            q = q[(acc.step[q] > acc.step[w]) | (same_step & (who[q] > who[w]))]
            before_y = ((thread[q] == thread[y]) & (acc.step[q] < acc.step[y])) | (
                acc.epoch[q] < acc.epoch[y]
            )
            if before_y.any():
                ordered[n] = True
                break
    return ordered


_RACE_WHY = {
    ("shared", 0): (
        "lanes of one warp use the same shared element with no __syncwarp() between them and one writes: "
        "since Volta a warp's lanes are not in lockstep (volatile does not help), so the read may see the "
        "old or the new value; separate the reads and the writes with __syncwarp(), or use shuffles"
    ),
    ("shared", 1): (
        "threads of different warps use the same shared element between two __syncthreads() and one of "
        "them writes: which goes first is up to the scheduler; put a __syncthreads() between the write "
        "and the other access"
    ),
    ("global", 0): (
        "lanes of one warp use the same global element with nothing ordering them and one writes: which "
        "value lands (or is read) is undefined; let one thread do it, or use an atomic"
    ),
    ("global", 1): (
        "threads of one block use the same global element between two __syncthreads() and one writes: "
        "the order is up to the scheduler; let one thread do it, use an atomic, or add a __syncthreads()"
    ),
    ("global", 2): (
        "different blocks use the same global element and at least one writes it without an atomic: "
        "blocks run in any order, or at once, so updates get lost and reads see either value; use an "
        "atomic (atomicAdd...), or give each block its own element and combine them afterwards"
    ),
}
_KIND_VERBS = {LD: "reads", ST: "writes", AT: "atomically updates", SLD: "reads", SST: "writes"}


def _race_findings(
    trace: Trace, acc: _Accesses, first: np.ndarray, then: np.ndarray, scope: np.ndarray
) -> list[Finding]:
    """One finding per buffer and group of lines that race with each other.

    Line pairs that share a line are one bug (the six steps of an unsynchronised warp
    reduction race each with the next): they merge, and the examples show each pair once.
    """
    if not len(first):
        return []
    l1, l2 = acc.line[first], acc.line[then]
    pair_keys = np.stack([acc.buffer[then], np.minimum(l1, l2), np.maximum(l1, l2)], axis=1)
    uniq, inv = np.unique(pair_keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    parent: dict[tuple[int, int], tuple[int, int]] = {}

    def root(x: tuple[int, int]) -> tuple[int, int]:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for buf, a, b in uniq.tolist():
        parent[root((buf, a))] = root((buf, b))
    comp_of_pair = [root((buf, a)) for buf, a, _ in uniq.tolist()]
    out = []
    for comp in dict.fromkeys(comp_of_pair):
        pair_ids = [i for i, c in enumerate(comp_of_pair) if c == comp]
        sel = np.flatnonzero(np.isin(inv, pair_ids))
        buf = int(uniq[pair_ids[0], 0])
        widest = int(scope[sel].max())
        info = trace.buffers[buf]
        unit = element_size(trace, buf)
        elements = np.unique((acc.unit[then[sel]] - info.base) // unit)
        # examples: the first racing pair of each line pair, the widest scope first
        picks = []
        for pid in pair_ids:
            mine = sel[inv[sel] == pid]
            picks.append(int(mine[np.argmax(scope[mine])]))
        picks.sort(key=lambda k: (-int(scope[k]), int(acc.line[first[k]]), int(acc.line[then[k]])))
        for sc in np.unique(scope[sel])[::-1]:  # then one of each narrower scope
            if len(picks) < EXAMPLES and int(sc) not in {int(scope[k]) for k in picks}:
                picks.append(int(sel[np.argmax(scope[sel] == sc)]))
        examples = [_race_example(trace, acc, int(first[k]), int(then[k])) for k in picks[: EXAMPLES + 1]]
        lines = tuple(sorted({int(x) for x in uniq[pair_ids, 1:].reshape(-1)}))
        blocks = np.unique(acc.block[np.r_[first[sel], then[sel]]])
        threads = np.unique(acc.thread[np.r_[first[sel], then[sel]]])
        out.append(
            Finding(
                kind="race",
                lines=lines,
                explanation=_RACE_WHY[(acc.space, widest)],
                buffer=info.name,
                space=acc.space,
                scope=SCOPES[widest],
                blocks=tuple(_coords(int(x), trace.grid) for x in blocks[:EXAMPLES]),
                threads=tuple(_coords(int(x), trace.block_dim) for x in threads[:EXAMPLES]),
                elements=tuple(int(x) for x in elements[:EXAMPLES]),
                element_count=len(elements),
                count=len(sel),
                examples=tuple(examples),
                code=_code(trace.source, lines),
            )
        )
    return out


def _race_example(trace: Trace, acc: _Accesses, x: int, y: int) -> str:
    info = trace.buffers[int(acc.buffer[y])]
    el = (int(acc.unit[y]) - info.base) // element_size(trace, int(acc.buffer[y]))
    bx, by = (_fmt(_coords(int(acc.block[r]), trace.grid)) for r in (x, y))
    tx, ty = (_fmt(_coords(int(acc.thread[r]), trace.block_dim)) for r in (x, y))
    who_y = f"thread {ty}" if bx == by else f"block {by} thread {ty}"
    return (
        f"block {bx}: thread {tx} {_KIND_VERBS[int(acc.kind[x])]} {info.name}[{el}] (line {int(acc.line[x])}), "
        f"then {who_y} {_KIND_VERBS[int(acc.kind[y])]} it (line {int(acc.line[y])})"
    )


# ---------------------------------------------------------------- uninitialised reads


def uninitialized(trace: Trace, *, initialized: dict[int, np.ndarray] | None = None) -> list[Finding]:
    """Reads of shared memory no thread of the block wrote before, and of global memory that held
    no value at launch (per `initialized`: base address -> byte mask) and no thread wrote before."""
    return _uninitialized(trace, _all_accesses(trace), initialized)


def _uninitialized(
    trace: Trace, accs: list[_Accesses], initialized: dict[int, np.ndarray] | None
) -> list[Finding]:
    found = []
    for acc in accs:
        space = acc.space
        if not len(acc):
            continue
        if space == "shared":  # per block, nothing holds a value at the start
            keys = [acc.block, acc.unit]
            held = np.zeros(len(acc), bool)
        else:
            if not initialized:
                continue
            bases = np.array([b.base for b in trace.buffers], np.int64)[acc.buffer]
            held = np.ones(len(acc), bool)
            known = np.isin(bases, list(initialized))
            for base, mask in initialized.items():
                sel = np.flatnonzero(known & (bases == base))
                if not len(sel):
                    continue
                off = acc.unit[sel] - base
                unit = int(acc.usize[sel[0]])
                ok = np.ones(len(sel), bool)
                for b in range(unit):
                    ok &= mask[np.clip(off + b, 0, len(mask) - 1)]
                held[sel] = ok
            keys = [acc.unit]
        order = np.lexsort([acc.step, *keys[::-1]])
        new = _new_group(keys, order)
        starts = np.flatnonzero(new)
        big = np.iinfo(np.int64).max
        first_write = np.minimum.reduceat(np.where(acc.writes[order], acc.step[order], big), starts)
        group = np.cumsum(new) - 1
        step, first = acc.step[order], first_write[group]
        # atomics in the step of the first write are serialised: only the first of them found the
        # word unwritten, the others read what it wrote (a plain load in that step races instead)
        atomic_then = (acc.kind[order] == AT) & (step == first)
        seen = np.cumsum(atomic_then)
        before_group = np.r_[0, seen[starts[1:] - 1]][group]
        first_atomic = atomic_then & (seen - before_group == 1)
        early = (step < first) | ((step == first) & ~atomic_then) | first_atomic
        bad_sorted = acc.reads[order] & ~held[order] & early
        bad = order[bad_sorted]
        found += _uninit_findings(trace, acc, bad)
    return found


def _uninit_findings(trace: Trace, acc: _Accesses, bad: np.ndarray) -> list[Finding]:
    if not len(bad):
        return []
    keys = np.stack([acc.buffer[bad], acc.line[bad]], axis=1)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    out = []
    for g, (buf, line) in enumerate(uniq.tolist()):
        rows = bad[inv == g]
        rows = rows[np.argsort(acc.step[rows], kind="stable")]
        info = trace.buffers[buf]
        unit = element_size(trace, buf)
        elements = (acc.unit[rows] - info.base) // unit
        # one access per (thread, element): a vector load covers several units
        _, firsts = np.unique(
            np.stack([acc.event[rows], acc.lane[rows], elements], axis=1), axis=0, return_index=True
        )
        rows, elements = rows[np.sort(firsts)], elements[np.sort(firsts)]
        if acc.space == "shared":
            why = (
                f"reads `{info.name}` elements no thread of the block wrote before: shared memory starts "
                "with garbage; write every element that is read (and __syncthreads() before reading)"
            )
        else:
            why = (
                f"reads `{info.name}` elements that hold no value: the array came from course.empty() and "
                "no launch wrote them; start from course.zeros(), or write before reading"
            )
        examples = [
            f"block {_fmt(_coords(int(acc.block[r]), trace.grid))} thread "
            f"{_fmt(_coords(int(acc.thread[r]), trace.block_dim))} reads {info.name}[{int(el)}]"
            for r, el in zip(rows[:EXAMPLES], elements[:EXAMPLES])
        ]
        blocks = np.unique(acc.block[rows])
        out.append(
            Finding(
                kind="uninitialized",
                lines=(line,),
                explanation=why,
                buffer=info.name,
                space=acc.space,
                blocks=tuple(_coords(int(x), trace.grid) for x in blocks[:EXAMPLES]),
                threads=tuple(dict.fromkeys(_coords(int(t), trace.block_dim) for t in acc.thread[rows]))[
                    :EXAMPLES
                ],
                elements=tuple(int(x) for x in np.unique(elements)[:EXAMPLES]),
                element_count=len(np.unique(elements)),
                count=len(rows),
                examples=tuple(examples),
                code=_code(trace.source, (line,)),
            )
        )
    return out


# ---------------------------------------------------------------- barriers part of a block misses


def barrier_divergence(trace: Trace) -> list[Finding]:
    """Blocks where a thread exited after fewer __syncthreads() than another thread of its block
    reached: a barrier inside a branch, or a loop with a barrier that threads run different
    numbers of times. (Threads waiting at different barriers make the emulator raise; `check`
    reports that.) A run cut short by a fault only counts threads that did exit."""
    bars = np.flatnonzero((trace.op == "bar") & (np.char.find(trace.opcode.astype(str), "warp") < 0))
    exits = np.flatnonzero(trace.op == "exit")
    if not len(exits) or not len(bars):
        return []
    tpb = trace.threads_per_block
    lanes = trace.lanes()
    be, bl = np.nonzero(lanes[bars])
    ee, el = np.nonzero(lanes[exits])
    b_ev, e_ev = bars[be], exits[ee]
    b_block = trace.columns["block"][b_ev].astype(np.int64)
    b_thread = trace.warp[b_ev].astype(np.int64) * LANES + bl
    e_block = trace.columns["block"][e_ev].astype(np.int64)
    e_thread = trace.warp[e_ev].astype(np.int64) * LANES + el
    blocks, b_idx = np.unique(b_block, return_inverse=True)
    counts = np.zeros((len(blocks), tpb), np.int64)
    np.add.at(counts, (b_idx.reshape(-1), b_thread), 1)
    most = counts.max(axis=1)
    e_in = np.isin(e_block, blocks)
    e_slot = np.searchsorted(blocks, e_block[e_in])
    e_count = counts[e_slot, e_thread[e_in]]
    short = e_count < most[e_slot]  # exited having passed fewer barriers than another thread reached
    if not short.any():
        return []
    # per divergent block: the first barrier an exited thread missed
    missed = np.full(len(blocks), np.iinfo(np.int64).max)
    np.minimum.at(missed, e_slot[short], e_count[short])
    # the arrivals at that barrier (the k-th, 0-based, of each thread) and the exits that skipped it
    rank = _rank(b_block * tpb + b_thread)
    at = missed[b_idx.reshape(-1)] == rank
    gone = short & (e_count == missed[e_slot])
    by_line: dict[int, list[tuple[int, np.ndarray, np.ndarray, int, int]]] = {}
    for s in np.flatnonzero(missed < np.iinfo(np.int64).max):
        here = at & (b_idx.reshape(-1) == s)
        bar_line = int(np.bincount(trace.line[b_ev[here]]).argmax())
        left = gone & (e_slot == s)
        exit_lines = trace.line[e_ev[e_in][left]]
        exit_line = int(np.bincount(exit_lines).argmax())
        by_line.setdefault(bar_line, []).append(
            (int(blocks[s]), b_thread[here], e_thread[e_in][left], exit_line, int(missed[s]))
        )
    out = []
    for bar_line, hits in by_line.items():
        exit_line = hits[0][3]
        lines = (bar_line,) if exit_line == bar_line else (bar_line, exit_line)
        examples = [
            f"block {_fmt(_coords(blk, trace.grid))}: threads {id_ranges(arrived)} reach the "
            f"__syncthreads() on line {bar_line} ({_ordinal(k + 1)} barrier); threads {id_ranges(left)} "
            f"never do: they finished at line {el}"
            for blk, arrived, left, el, k in hits[:EXAMPLES]
        ]
        missing = np.concatenate([h[2] for h in hits[:EXAMPLES]])
        out.append(
            Finding(
                kind="barrier-divergence",
                lines=lines,
                explanation=(
                    "a __syncthreads() that only part of the block reaches (the others returned early or "
                    "looped fewer times) is undefined behaviour: on a GPU the barrier may count exited "
                    "threads, hang, or let threads through early; every thread must reach every barrier, "
                    "so guard the work, not the barrier"
                ),
                blocks=tuple(_coords(h[0], trace.grid) for h in hits[:EXAMPLES]),
                threads=tuple(dict.fromkeys(_coords(int(t), trace.block_dim) for t in missing))[:EXAMPLES],
                count=len(hits),
                examples=tuple(examples),
                code=_code(trace.source, lines),
            )
        )
    return out


def _rank(key: np.ndarray) -> np.ndarray:
    """For rows in time order: how many earlier rows have the same key (0, 1, 2...)."""
    order = np.argsort(key, kind="stable")
    k = key[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    counts = np.diff(np.r_[starts, len(k)])
    out = np.empty(len(k), np.int64)
    out[order] = np.arange(len(k)) - np.repeat(starts, counts)
    return out
