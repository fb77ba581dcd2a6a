"""What a topic's plan is made of: launches held so they can be run, traced, checked and timed.

A topic's `plan(call)` turns one run of a version into a `Plan`: the launches (and small host
steps, such as zeroing a counter) in order, and how to read the answer once they ran.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import arrays
from ..module import Kernel

if TYPE_CHECKING:
    from ..checks import Findings
    from ..emulator import Trace
    from .engine import Engine
    from .topic import Block, Dim3, Size, Version


@dataclass(frozen=True)
class Launch:
    """One kernel launch: `launch()` runs it, `.trace()` and `.check()` run it on the emulator."""

    kernel: Kernel
    grid: Dim3
    block: Dim3
    args: tuple[Any, ...]
    shared_mem: int = 0

    def __call__(self) -> None:
        self.kernel(self.grid, self.block, self.args, shared_mem=self.shared_mem)

    def trace(self, **kw: Any) -> Trace:
        return self.kernel.trace(self.grid, self.block, self.args, shared_mem=self.shared_mem, **kw)

    def check(self) -> Findings:
        return self.kernel.check(self.grid, self.block, self.args, shared_mem=self.shared_mem)

    def __repr__(self) -> str:
        """The launch as the learner would write it: `reduce3((64,), (128,), (x, out, n), shared_mem=1024)`."""
        shared = f", shared_mem={self.shared_mem}" if self.shared_mem else ""
        args = ", ".join(_arg(a) for a in self.args)
        return f"{self.kernel.name}({_dims(self.grid)}, {_dims(self.block)}, ({args}){shared})"


def blocks_in_words(blocks: int, block: Any) -> str:
    """A launch in words: "1 block of 32", "3 blocks of 64", "4 blocks of 32×16"."""
    return f"{blocks} block{'s' * (blocks != 1)} of {block}"


def _dims(d: Dim3) -> str:
    """(256,) for (256, 1, 1); (4, 8) for (4, 8, 1)."""
    kept = d[: max((i for i, x in enumerate(d) if x != 1), default=0) + 1]
    return f"({kept[0]},)" if len(kept) == 1 else str(tuple(kept))


def _arg(a: Any) -> str:
    if arrays.is_device_array(a):
        return f"<{a.dtype} array of {a.size}>"
    if isinstance(a, np.generic):
        return f"np.{a.dtype}({a})"
    return repr(a)


Step = Launch | Callable[[], Any]


@dataclass(frozen=True)
class Plan:
    """The steps of one run of a version, in order, and how to read the answer after them."""

    steps: Sequence[Step]
    answer: Callable[[], Any]

    def __call__(self) -> Any:
        """Run every step, then read the answer."""
        for step in self.steps:
            step()
        return self.answer()

    @property
    def launches(self) -> list[Launch]:
        return [s for s in self.steps if isinstance(s, Launch)]


@dataclass(frozen=True)
class Call:
    """One run of a version, as its topic's plan sees it: device inputs, block, grid and helpers."""

    engine: Engine
    version: Version
    inputs: tuple[Any, ...]  # device arrays
    size: Size  # N, or (rows, cols)
    block: Block
    grid: Dim3

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.inputs[0].dtype)

    @property
    def n(self) -> int:
        """The number of elements: N, or rows × cols."""
        return math.prod(self.size) if isinstance(self.size, tuple) else int(self.size)

    @property
    def block3(self) -> Dim3:
        b = self.block if isinstance(self.block, tuple) else (self.block,)
        return (*b, *(1,) * (3 - len(b)))  # type: ignore[return-value]

    def kernel(self, name: str | None = None, *, block: Block | None = None) -> Kernel:
        """The version's kernel compiled for these inputs' dtype, or another version's, or any
        other kernel of the topic's file by name."""
        return self.engine.kernel(name or self.version, self.dtype, self.block if block is None else block)

    def launch(
        self,
        args: tuple[Any, ...],
        *,
        kernel: Kernel | None = None,
        grid: Dim3 | None = None,
        block: Dim3 | None = None,
        shared_mem: int = 0,
    ) -> Launch:
        """A launch of the version's kernel (or `kernel`) over this call's grid and block."""
        return Launch(
            kernel or self.kernel(), grid or self.grid, block or self.block3, tuple(args), shared_mem
        )

    @staticmethod
    def zeros(shape: Any, dtype: Any) -> Any:
        return arrays.zeros(shape, dtype)

    @staticmethod
    def empty(shape: Any, dtype: Any) -> Any:
        return arrays.empty(shape, dtype)
