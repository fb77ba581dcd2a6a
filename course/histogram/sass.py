"""What the histogram kernels' atomics compile to: the SASS (the GPU's machine code) of
`kernels/histogram.cu`, compiled by NVRTC for sm_90 and read with `cuobjdump -sass`.

The instruction explains what timings alone cannot: a shared `atomicAdd(&temp[b], 1u)` becomes
`ATOMS.POPC.INC.32`, one instruction that adds to each address the number of lanes on it (the
hardware already aggregates same-word lanes), while `__match_any_sync` aggregation puts `MATCH.ANY`,
`POPC` and `ATOMS.ADD` in front of it. Reading the SASS needs CUDA's `cuobjdump` (and `nvdisasm`)
on PATH; without them the table says so.
"""

from __future__ import annotations

import collections
import re
import shutil

from .. import compiler, sass
from ..source import Table

KERNELS = (
    "hist1", "hist1_agg", "hist2", "hist3_vec", "hist4_warp_agg", "hist5_lanes", "hist6_runs",
    "hist_wide", "hist_wide_plain",
)  # fmt: skip
# the opcodes the counting and the agreement compile to, in the order a reader meets them
OPCODES = ("REDG.E.ADD", "ATOMS.POPC.INC.32", "MATCH.ANY", "POPC", "ATOMS.ADD")
NO_TOOL = (
    "the SASS needs CUDA's cuobjdump and nvdisasm on PATH (CUDA's toolkit, or pip install "
    "nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm): {why}"
)


def _bare(body: list[str]) -> list[str]:
    """The instructions without their predicates (@P0, @!UP1)."""
    return [re.sub(r"^@!?U?P\w+\s+", "", i) for i in body]


def functions(listing: str) -> dict[str, list[str]]:
    """Each function's instructions (without predicate or ';'), by name, from `cuobjdump -sass` text."""
    return {name: _bare(body) for name, body in sass.functions(listing).items()}


def count(instructions: list[str]) -> dict[str, int]:
    """How many instructions of `instructions` start with each of OPCODES (POPC alone: not ATOMS.POPC)."""
    ops = collections.Counter(i.split()[0] for i in instructions if i.split())
    return {
        op: sum(k for name, k in ops.items() if name == op or name.startswith(op + ".")) for op in OPCODES
    }


def table_of(bodies: dict[str, list[str]], kernels: tuple[str, ...] = KERNELS) -> Table:
    """One row per kernel: the static count of each opcode of OPCODES in its SASS."""
    rows = Table()
    for name in kernels:
        if name in bodies:
            rows.append({"kernel": name, **count(bodies[name])})
    return rows


def atomics_table(arch: str = "sm_90", kernels: tuple[str, ...] = KERNELS) -> Table:
    """The atomics and the lanes' agreement in each kernel's SASS for `arch` (static counts: an
    unrolled loop repeats its instruction). Without cuobjdump: an empty table saying so."""
    if shutil.which("cuobjdump") is None or shutil.which("nvdisasm") is None:
        return Table(note=NO_TOOL.format(why="not found here"))
    source = compiler.read_kernel("histogram.cu")
    opts = compiler.compile_options((f"-arch={arch}", "-DLOAD_BYTES=16"))
    cubin = compiler.compile_cubin(source, "histogram.cu", opts, ())
    try:
        listing = sass.disassemble(cubin)
    except RuntimeError as exc:  # cuobjdump printed no functions
        return Table(note=NO_TOOL.format(why=str(exc)))
    rows = table_of({name: _bare(body) for name, body in listing.items()}, kernels)
    if not rows:
        return Table(note=NO_TOOL.format(why="cuobjdump's listing has none of the kernels"))
    return rows
