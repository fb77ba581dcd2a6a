"""The engine: runs any topic's description, and gives every topic module the same API.

    from course import reduction                 # a topic module: its description + an Engine
    reduction.versions()                         # the versions that compute the right answer
    reduction.run("reduce3", x, block=128)       # the answer, as NumPy, on the active backend
    reduction.trace("reduce3", x)                # every launch the version makes, on the emulator
    reduction.check("reduce4_article", x)        # the checker's findings ([] when clean)
    reduction.panel()                            # the interactive panel

The engine compiles the topic's `.cu` once per input dtype and backend, checks what a version
can take (dtype, N, block size) before it launches anything, sizes the grid by the version's
rule, and hands the topic's `plan` a `Call` to build the launches from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import arrays, backend, occupancy
from ..checks import Findings
from ..emulator import Trace
from ..errors import ArgumentError, InputError
from ..module import Kernel, Module
from .launch import Call, Launch, Plan, Step
from .topic import BenchSpec, Block, Residency, Topic, Version

if TYPE_CHECKING:
    from ..bench import Inputs
    from ..ui.panel import Panel

STOPPING = ("out-of-bounds", "misaligned")  # findings after which a multi-launch check goes no further
VET_MAX = 1 << 18  # the largest input of a buggy version run() checks on the emulator before a GPU (seconds)


class Engine:
    """Runs one topic: its kernels, its versions' launches, traces, checks, benchmark and panel."""

    def __init__(self, topic: Topic):
        self.topic = topic
        self._modules: dict[tuple[tuple[str, ...], str], Module] = {}
        self._resident: dict[
            tuple[Any, ...], int
        ] = {}  # blocks an SM holds, by version, dtype, block, device

    @property
    def name(self) -> str:
        return self.topic.name

    @property
    def bench(self) -> BenchSpec | None:
        return self.topic.bench

    def __repr__(self) -> str:
        return f"<Engine of {self.name}: {len(self.topic.versions)} versions>"

    # ---------------------------------------------------------------- the topic API

    def versions(self) -> list[str]:
        """The versions that compute the right answer, in story order. The article's buggy
        versions are not listed; they stay reachable by name."""
        return [v.name for v in self.topic.versions if v.listed]

    def version(self, name: str | Version) -> Version:
        """A version's description, by name (ValueError naming the versions there are)."""
        return name if isinstance(name, Version) else self.topic.version(name)

    def reference(self, *inputs: Any) -> Any:
        """NumPy's answer, in the form `run` returns."""
        return self.topic.reference(*self._prepare(inputs))

    def run(self, version: str, *inputs: Any, block: Block | None = None) -> Any:
        """The answer of `version` on `inputs` (NumPy arrays are copied), on the active backend.

        On a GPU, a version with a known bug is run on the emulator first (after the topic's own
        refusals, which say what is wrong in the topic's words): if it reads or writes out of
        bounds, or hangs at a barrier, that error is raised there, and the GPU (whose context such
        a launch can poison) never runs it."""
        v, host, block = self.admit(version, inputs, block)
        plan = self.plan(v, *(arrays.asarray(a) for a in host), block=block)
        if v.bug and not v.bug_is_a_race and backend.on_gpu():
            self._vet(v, host, block)
        return plan()

    def _vet(self, v: Version, host: tuple[np.ndarray, ...], block: Block) -> None:
        n = sum(a.size for a in host)
        if n > VET_MAX:
            raise InputError(
                f"{v.name} is the article's code ({v.bug}); on a GPU it runs only for inputs the "
                f"emulator can check first, up to {VET_MAX} elements; got {n}"
            )
        if self.check(v.name, *host, block=block).kinds() & {*STOPPING, "barrier-divergence"}:
            self.trace(v.name, *host, block=block)  # raises the emulator's error, with its thread and line

    def trace(
        self,
        version: str,
        *inputs: Any,
        block: Block | None = None,
        grid: int | None = None,
        blocks: Any = None,
        spaces: Any = None,
    ) -> Trace:
        """One trace spanning every launch `version` makes on `inputs`, run on the emulator.

        `blocks` and `spaces` limit what is recorded (see `Kernel.trace`); `grid` overrides the
        version's grid (e.g. the article's launch of kernel 7)."""
        v, host, block = self.admit(version, inputs, block)
        with backend.using("emulator"):
            plan = self.plan(v, *(arrays.asarray(a) for a in host), block=block, grid=grid)
            traces = []
            for step in plan.steps:
                if isinstance(step, Launch):
                    traces.append(step.trace(blocks=blocks, spaces=spaces))
                else:
                    step()
        return Trace.concat(traces)

    def first_trace(self, version: str, *inputs: Any, **kw: Any) -> Trace:
        """The trace of `version`'s own launch on `inputs`, the first it makes (not a pass that
        adds partial sums or converts after it), on the emulator; kw as `trace`'s (block, grid,
        blocks, spaces)."""
        return self.trace(version, *inputs, **kw).launches()[0]

    def check(
        self, version: str, *inputs: Any, block: Block | None = None, grid: int | None = None
    ) -> Findings:
        """The checker's findings on every launch `version` makes (empty when clean), on the emulator."""
        v, host, block = self.admit(version, inputs, block)
        found: list[Any] = []
        with backend.using("emulator"):
            plan = self.plan(v, *(arrays.asarray(a) for a in host), block=block, grid=grid)
            for step in plan.steps:
                if isinstance(step, Launch):
                    findings = step.check()
                    found += findings
                    if findings.kinds() & set(STOPPING):
                        break  # what comes after a stray access reads what it never wrote
                step()
        return Findings(found, v.name)

    def inspect(
        self, version: str, *inputs: Any, block: Block | None = None, grid: int | None = None
    ) -> tuple[Findings, Trace]:
        """`check` and `trace` in one run on the emulator: the findings and the trace of every
        launch the version makes (up to a fault that stops it)."""
        v, host, block = self.admit(version, inputs, block)
        found: list[Any] = []
        traces = []
        with backend.using("emulator"):
            plan = self.plan(v, *(arrays.asarray(a) for a in host), block=block, grid=grid)
            for step in plan.steps:
                if not isinstance(step, Launch):
                    step()
                    continue
                findings, trace = step.kernel.inspect(
                    step.grid, step.block, step.args, shared_mem=step.shared_mem
                )
                found += findings
                traces.append(trace)
                if findings.kinds() & {*STOPPING, "barrier-divergence"}:
                    break  # the launch stopped, or its outputs cannot be trusted
        return Findings(found, v.name), Trace.concat(traces)

    def panel(self, **state: Any) -> Panel:
        """The interactive panel: version, block size and N; the answer checked, the picture and
        numbers read from the trace. Keyword arguments set where it starts (version, n, block)."""
        from ..ui.panel import Panel

        return Panel(self, **state)

    # ---------------------------------------------------------------- for story helpers and the benchmark

    def admit(
        self, version: str | Version, inputs: Iterable[Any], block: Block | None
    ) -> tuple[Version, tuple[np.ndarray, ...], Block]:
        """The version, the inputs as NumPy copies and the block size, once each was found to be
        something the version can take; a ValueError or TypeError saying what is allowed if not."""
        v = self.version(version)
        host = self._prepare(tuple(inputs))
        if v.dtypes is not None and str(host[0].dtype) not in v.dtypes:
            raise ArgumentError(f"{v.name} takes {' or '.join(v.dtypes)} inputs, not {host[0].dtype}")
        size = self.topic.size(*host)
        n = int(np.prod(size)) if isinstance(size, tuple) else int(size)
        if v.max_n is not None and n > v.max_n:
            raise InputError(f"{v.name} takes at most {v.max_n} elements (one block); got {n}")
        return v, host, self.block_for(v, block)

    def block_for(self, version: str | Version, block: Block | None = None) -> Block:
        """`block` if the version accepts it (ValueError listing what it accepts), else its default."""
        v = self.version(version)
        if block is None:
            return self.topic.block if self.topic.block in v.blocks else v.blocks[0]
        if isinstance(block, list):
            block = tuple(block)
        if (
            isinstance(block, bool)
            or not isinstance(block, (int, np.integer, tuple))
            or block not in v.blocks
        ):
            raise InputError(f"{v.name} takes a block size in {list(v.blocks)}; got {block!r}")
        return int(block) if isinstance(block, (int, np.integer)) else block

    def plan(
        self, version: str | Version, *inputs: Any, block: Block | None = None, grid: int | None = None
    ) -> Plan:
        """The launches of one run of `version` on device arrays `inputs`, not yet run.

        `grid` overrides the version's grid rule with that many blocks."""
        v = self.version(version)
        block = self.block_for(v, block)
        size = self.topic.size(*inputs)
        if grid is not None:
            if isinstance(grid, bool) or not isinstance(grid, (int, np.integer)) or grid < 1:
                raise InputError(f"grid must be a number of blocks, at least 1; got {grid!r}")
            dims = (int(grid), 1, 1)
        else:
            dims = v.grid(size, block, self.residency(v, inputs[0].dtype))
        return self.topic.plan(Call(self, v, tuple(inputs), size, block, dims))

    def residency(self, version: str | Version, dtype: Any) -> Residency:
        """What `version`'s grid rule sees for inputs of `dtype` on the active device: the device,
        and how many blocks of the version's kernel (with its dynamic shared memory) an SM holds."""
        v, dt, dev = self.version(version), np.dtype(dtype), backend.device()

        def resident(block: Block) -> int:
            key = (v.name, dt, block, dev)
            if key not in self._resident:
                kernel = self.kernel(v, dt, block)
                self._resident[key] = occupancy.resident_blocks(kernel, block, v.shared_bytes(block, dt), dev)
            return self._resident[key]

        return Residency(dev, resident)

    def grid(
        self, version: str | Version, size: Any, block: Block | None = None, dtype: Any = None
    ) -> tuple[int, int, int]:
        """The grid `version` launches for an input of `size` (N or a shape) and `dtype` (default:
        the first it takes) with `block`, on the active device, without making the input."""
        v = self.version(version)
        if dtype is None:
            dtype = v.dtypes[0] if v.dtypes else self.topic.bench.dtypes[0] if self.topic.bench else "float32"
        return v.grid(size, self.block_for(v, block), self.residency(v, dtype))

    def kernel(self, version: str | Version, dtype: Any, block: Block | None = None) -> Kernel:
        """The compiled kernel of `version` for inputs of `dtype` (templates: for `block`), or any
        other kernel of the topic's file by its name (a helper pass a plan launches)."""
        module = self._module(self.topic.options(np.dtype(dtype)))
        if isinstance(version, str) and version not in {v.name for v in self.topic.versions}:
            return module.get_function(version)
        v = self.version(version)
        return module.get_function(v.instance_for(self.block_for(v, block)))

    def _module(self, options: tuple[str, ...]) -> Module:
        key = (options, backend.device().backend)
        if key not in self._modules:
            names = tuple(
                v.instance_for(b) for v in self.topic.versions if v.template or v.instance for b in v.blocks
            )
            self._modules[key] = Module.from_file(
                self.topic.kernel_file, options=options, name_expressions=tuple(dict.fromkeys(names))
            )
        return self._modules[key]

    def cases(self, dtype: str) -> list[tuple[str, Callable[[Inputs], list[Step]]]]:
        """The versions the benchmark times for inputs of `dtype`: (name, setup), where setup
        prepares one input set's outputs and returns the steps of one timed run."""
        return [
            (v.name, self._bench_setup(v))
            for v in self.topic.versions
            if v.listed and v.bench and (v.dtypes is None or dtype in v.dtypes)
        ]

    def _bench_setup(self, v: Version) -> Callable[[Inputs], list[Step]]:
        wanted = self.topic.bench.block if self.topic.bench else None
        block = wanted if wanted in v.blocks else self.block_for(v)
        return lambda inputs: list(self.plan(v, *inputs.arrays, block=block).steps)

    def _prepare(self, inputs: tuple[Any, ...]) -> tuple[np.ndarray, ...]:
        names = self.topic.inputs
        if len(inputs) != len(names):
            raise ArgumentError(
                f"{self.name} takes {len(names)} input{'s' * (len(names) > 1)} ({', '.join(names)}); "
                f"got {len(inputs)}"
            )
        return self.topic.prepare(*(arrays.asnumpy(a) if arrays.is_device_array(a) else a for a in inputs))
