"""A topic as data: its versions in story order and everything the engine needs to run them.

A topic module fills in a `Topic` (and, where its versions carry fields of their own, a
`Version` subclass); `course.engine.Engine` runs any `Topic`: it compiles, sizes grids,
launches, traces, checks, benchmarks and builds the panel, and names no topic.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import occupancy
from ..backend import Device
from ..errors import InputError

if TYPE_CHECKING:
    from ..bench import Goal, Inputs
    from ..emulator import Trace
    from .launch import Call, Plan

Block = int | tuple[int, int]  # threads per block: 1-D, or (x, y) for 2-D blocks
Size = int | tuple[int, int]  # an input's size: N elements, or (rows, cols)
Dim3 = tuple[int, int, int]


# ---------------------------------------------------------------- launch rules: how many blocks


@dataclass(frozen=True)
class Cover:
    """One thread per `per_thread` elements: enough blocks to cover N (kernels 1-6 of reduction)."""

    per_thread: int = 1

    def __call__(self, size: Size, block: Block, where: Device | Residency) -> Dim3:
        return (max(1, -(-_elements(size) // (_threads(block) * self.per_thread))), 1, 1)

    def __str__(self) -> str:
        each = "one element" if self.per_thread == 1 else f"{self.per_thread} elements"
        return f"enough blocks to cover N with {each} per thread"


@dataclass(frozen=True)
class Residency:
    """Where a version's launch runs, as its grid rule sees it: the device, and how many blocks of
    the version's kernel (its registers, its shared memory) one SM holds at once."""

    device: Device
    # blocks per SM of the version's kernel at a block size (course.occupancy); None: no kernel
    # known, so an SM's threads and blocks alone count
    resident: Callable[[Block], int] | None = None

    def blocks_per_sm(self, block: Block) -> int:
        if self.resident is not None:
            return self.resident(block)
        return occupancy.calculate(self.device, _threads(block)).blocks

    @property
    def sm_count(self) -> int:
        return self.device.sm_count


def residency(where: Device | Residency) -> Residency:
    """A grid rule's third argument as a `Residency` (rules written for a bare Device keep working)."""
    return where if isinstance(where, Residency) else Residency(where)


@dataclass(frozen=True)
class OneWave:
    """As many blocks as the GPU holds at once (`per_sm` per SM, or as many as the kernel's
    occupancy allows), fewer if N needs fewer: a grid-stride loop covers the rest."""

    per_thread: int = 1  # elements a thread takes per loop iteration (to count the blocks N needs)
    per_sm: int | None = None  # blocks per SM; None: as many as fit (course.occupancy)

    def resident(self, block: Block, where: Device | Residency) -> int:
        """Blocks in one wave: SMs × blocks an SM holds at once."""
        t = residency(where)
        return t.sm_count * (self.per_sm or t.blocks_per_sm(block))

    def __call__(self, size: Size, block: Block, where: Device | Residency) -> Dim3:
        needed = -(-_elements(size) // (_threads(block) * self.per_thread))
        return (max(1, min(needed, self.resident(block, where))), 1, 1)

    def __str__(self) -> str:
        per_sm = (
            f"{self.per_sm} blocks"
            if self.per_sm
            else "as many blocks as fit (threads, blocks, registers, shared memory)"
        )
        return f"one wave: {per_sm} per SM, fewer if N needs fewer; a grid-stride loop does the rest"


@dataclass(frozen=True)
class OneBlock:
    """A single block (the one-block versions of dot and scan)."""

    def __call__(self, size: Size, block: Block, where: Device | Residency) -> Dim3:
        return (1, 1, 1)

    def __str__(self) -> str:
        return "one block"


@dataclass(frozen=True)
class Tiles:
    """One block per `tile` (rows, cols) of a matrix: a 2-D grid over (cols, rows)."""

    tile: tuple[int, int] = (32, 32)

    def __call__(self, size: Size, block: Block, where: Device | Residency) -> Dim3:
        rows, cols = size if isinstance(size, tuple) else (1, size)
        return (max(1, -(-cols // self.tile[1])), max(1, -(-rows // self.tile[0])), 1)

    def __str__(self) -> str:
        return f"one block per {self.tile[0]}×{self.tile[1]} tile"


# how many blocks for an input: (size, block, target) -> grid; the classes above, or any callable
# (a rule that reads only the device may take the target's `device`, or a Device where one is passed)
GridRule = Callable[[Size, Block, Residency], Dim3]


def awkward_sizes(block: Block) -> list[Size]:
    """Where bounds checks go wrong: 1, a warp and its neighbours, a block and its neighbours,
    1000 (no power of two), and a few blocks and a bit."""
    b = _threads(block)
    return sorted({1, 31, 32, 33, b - 1, b, b + 1, 1000, 3 * b + 7} - {0})


def _elements(size: Size) -> int:
    return math.prod(size) if isinstance(size, tuple) else int(size)


def _threads(block: Block) -> int:
    return math.prod(block) if isinstance(block, tuple) else int(block)


# ---------------------------------------------------------------- a version and a topic


@dataclass(frozen=True)
class Version:
    """One kernel version: what it is called, what changed, and how it is launched."""

    name: str  # what the learner calls it: the kernel's name in the .cu unless `kernel` says otherwise
    title: str  # what changed from the version before, in a line
    grid: GridRule  # how many blocks for an input
    blocks: tuple[Block, ...]  # the block sizes it accepts
    kernel: str = ""  # its kernel in the topic's .cu file (default: `name`)
    template: bool = False  # compiled per block size, as kernel<block>, through name_expressions
    instance: Callable[[Block], str] | None = None  # a template instance per block other than kernel<block>
    listed: bool = True  # computes the right answer: one of versions(); the article's buggy ones are not
    bug: str = ""  # the article's code: what is wrong with it
    bug_is_a_race: bool = (
        False  # its bug gives a wrong value, never a stray access or a hang: a GPU runs it as is
    )
    note: str = ""  # anything run() does for it that a reader should know (e.g. converts a scan)
    max_n: int | None = None  # the largest N it can take (one-block versions)
    dtypes: tuple[str, ...] | None = None  # input dtypes it takes (None: every dtype of the topic)
    bench: bool = True  # timed by `python -m course.bench` (listed versions only)

    @property
    def kernel_name(self) -> str:
        return self.kernel or self.name

    def shared_bytes(self, block: Block, dtype: np.dtype) -> int:
        """The dynamic shared memory a launch with `block` on `dtype` inputs asks for (a topic's
        version that takes some says how much; its plan and its one-wave grid both read it)."""
        return 0

    def instance_for(self, block: Block) -> str:
        """The kernel a launch with `block` runs: a template instance, or the kernel itself."""
        if self.instance is not None:
            return self.instance(block)
        return f"{self.kernel_name}<{block}>" if self.template else self.kernel_name


@dataclass(frozen=True)
class BenchSpec:
    """How a topic is benchmarked: the sizes, dtypes and inputs, the bytes that must move, CuPy's
    built-ins to compare with, and the goals of its issue."""

    dtypes: tuple[str, ...]
    sizes: tuple[Size, ...]
    quick_sizes: tuple[Size, ...]  # the goals' sizes and the smallest
    emulator_sizes: tuple[Size, ...]  # small enough to trace
    moved: Callable[[Size, np.dtype], int]  # bytes that must move between DRAM and the SMs
    generate: Callable[[Size, np.dtype, str | None, np.random.Generator], tuple[np.ndarray, ...]]
    baselines: Mapping[str, Callable[[Inputs], Callable[[], Any]]]  # CuPy's built-ins; × CuPy uses the first
    goals: tuple[Goal, ...] = ()
    dists: tuple[str | None, ...] = (None,)  # input distributions (histogram: uniform, all-equal, ...)
    block: Block | None = None  # the block size versions are timed with (None: each version's default)
    # CUB itself (course.bench.cub), where the topic is one of its device-wide algorithms; × CUB uses the first
    cub: Mapping[str, Callable[[Inputs], Callable[[], Any]]] = field(default_factory=dict)

    @property
    def baseline(self) -> str:
        return next(iter(self.baselines))

    @property
    def shaped(self) -> bool:
        """Whether sizes are (rows, cols) rather than N."""
        return isinstance(self.sizes[0], tuple)


@dataclass(frozen=True)
class PanelSpec:
    """What the interactive panel shows: its input for N, its picture and its numbers."""

    make_input: Callable[[int, np.random.Generator], tuple[np.ndarray, ...]]  # inputs of size N
    draw: Callable[[Any, Trace, Version], Any]  # (axes, trace of block 0, version) -> artists
    metrics: Callable[[Trace, Version], Mapping[str, Any]]  # numbers read from that trace
    # what the picture traces, from the inputs, the block and the version (None: all of the inputs)
    picture_input: Callable[[tuple[np.ndarray, ...], Block, Version], tuple[np.ndarray, ...]] | None = None
    # the grid the picture is traced with, for a version and block (None: the version's own rule);
    # a grid-stride loop shows its iterations only with fewer blocks than the input needs
    picture_grid: Callable[[Version, Block], int | None] | None = None
    version: str = ""  # where it starts
    n: int = 1000
    figsize: tuple[float, float] = (9.0, 4.5)
    # the largest N the panel offers a version on the emulator, where its work grows faster than N
    # (a naive O(N^2) scan) or is mostly fixed work per block: a click must answer in half a
    # second; a number, or a function of the block
    emulator_max_n: Mapping[str, int | Callable[[Block], int]] = field(default_factory=dict)
    # why, for each capped version: the panel says it under the N slider
    limit_notes: Mapping[str, str] = field(default_factory=dict)
    # the largest N a version takes with a block, where that depends on the block (a one-block
    # scan covers 1 or 2 x block elements); None: the version's own max_n alone
    block_max_n: Callable[[Version, Block], int | None] | None = None


@dataclass(frozen=True)
class Topic:
    """Everything about one topic that is not the engine: a description the engine runs."""

    name: str
    title: str
    kernel_file: str  # in course/kernels/
    versions: tuple[Version, ...]  # in story order
    inputs: tuple[str, ...]  # the names of run()'s inputs, e.g. ("a", "b")
    prepare: Callable[..., tuple[np.ndarray, ...]]  # host inputs, validated (TypeError/ValueError) and copied
    size: Callable[..., Size]  # N (or the shape) of prepared inputs: what grids and limits read
    reference: Callable[..., Any]  # NumPy's answer, in the form run() returns
    compare: Callable[[Any, Any, tuple[np.ndarray, ...]], str]  # (got, want, inputs) -> "" or what is wrong
    options: Callable[[np.dtype], tuple[str, ...]]  # compile options (-D types) for an input dtype
    plan: Callable[[Call], Plan]  # the launches of one run, and how to read its answer
    block: Block  # the default block size
    tolerance: str = ""  # how floats are compared with the reference, in words
    bench: BenchSpec | None = None
    panel: PanelSpec | None = None
    # inputs of a size, for tests that run every version on awkward sizes (None: the panel's input)
    sample: Callable[[Size, np.random.Generator], tuple[np.ndarray, ...]] | None = None
    # the awkward sizes to run a version at, for a block size (None: the 1-D ones of `awkward_sizes`)
    sample_sizes: Callable[[Block], list[Size]] | None = None

    def example(self, size: Size, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        """Random inputs of `size` (what the conformance test runs every version on)."""
        if self.sample is not None:
            return self.sample(size, rng)
        if self.panel is not None and isinstance(size, int):
            return self.panel.make_input(size, rng)
        raise ValueError(f"{self.name} describes no sample inputs")

    def sizes_for(self, block: Block) -> list[Size]:
        return self.sample_sizes(block) if self.sample_sizes else awkward_sizes(block)

    def version(self, name: str) -> Version:
        for v in self.versions:
            if v.name == name:
                return v
        raise InputError(
            f"{self.name} has no version {name!r}; versions are {[v.name for v in self.versions]}"
        )
