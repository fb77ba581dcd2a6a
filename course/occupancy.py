"""How many blocks of a kernel one SM holds at once: what "one wave" of blocks means.

    occupancy.resident_blocks(kernel, 256)       # blocks of 256 threads an SM holds at once
    occupancy.occupancy(kernel, 256)             # the same, with what limits it, in words
    occupancy.calculate(device, 256, registers=40, shared=4096)   # the arithmetic alone

On a GPU the driver answers: `cuOccupancyMaxActiveBlocksPerMultiprocessor` on the function CuPy
loaded, with its registers and static shared memory from the function's attributes. On the
emulator the course does the same arithmetic as CUDA's occupancy calculator (`cuda_occupancy.h`)
on the device model's limits, with the registers NVRTC allocates for the model's architecture
(`course.cubin`): an SM holds as many blocks as its threads, its block slots, its registers
(allocated per warp, in units of 256, in four sub-partitions) and its shared memory (allocated
in units of 128 or 256 bytes, plus the driver's reservation per block) all allow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import cubin
from .backend import Device, device
from .errors import InputError

if TYPE_CHECKING:
    from .module import Kernel

REGISTER_UNIT = 256  # registers are allocated to a warp in units of 256 (compute capability 3 to 9)
SUB_PARTITIONS = 4  # an SM's register file is split between its four schedulers
MAX_REGISTERS_PER_THREAD = 255


def shared_unit(dev: Device) -> int:
    """Shared memory is allocated to a block in units of 256 bytes before Ampere, 128 from it."""
    return 128 if dev.compute_capability[0] >= 8 else 256


@dataclass(frozen=True)
class Occupancy:
    """Blocks an SM holds at once, and what each of its limits alone would allow."""

    blocks: int  # resident blocks per SM
    by_threads: int
    by_blocks: int
    by_registers: int
    by_shared: int
    threads: int  # per block
    registers: int  # per thread
    shared: int  # bytes a block takes: static + dynamic + the driver's reservation, rounded up
    source: str = "the course's occupancy calculation"

    @property
    def limits(self) -> list[str]:
        """The limits that bind: 'threads', 'blocks', 'registers', 'shared memory'."""
        each = {"threads": self.by_threads, "blocks": self.by_blocks, "registers": self.by_registers}
        each["shared memory"] = self.by_shared
        least = min(each.values())
        return [name for name, n in each.items() if n == least]

    def __str__(self) -> str:
        return (
            f"{self.blocks} blocks of {self.threads} threads per SM (limited by {' and '.join(self.limits)})"
        )


def calculate(dev: Device, threads: int, *, registers: int = 0, shared: int = 0) -> Occupancy:
    """Blocks of `threads` threads that one SM of `dev` holds at once, for a kernel that takes
    `registers` registers a thread and `shared` bytes of shared memory a block (static + dynamic):
    CUDA's occupancy calculation (cuda_occupancy.h, default shared-memory carveout)."""
    for what, v in (("threads", threads), ("registers", registers), ("shared", shared)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise InputError(f"{what} must be an int, not {v!r}")
    if not 1 <= threads <= dev.max_threads_per_block:
        raise InputError(f"a block has 1 to {dev.max_threads_per_block} threads on {dev.name}; got {threads}")
    if not 0 <= registers <= MAX_REGISTERS_PER_THREAD:
        raise InputError(f"a thread takes 0 to {MAX_REGISTERS_PER_THREAD} registers; got {registers}")
    if shared < 0:
        raise InputError(f"shared memory is at least 0 bytes; got {shared}")
    warps = -(-threads // dev.warp_size)
    by_threads = (dev.threads_per_sm // dev.warp_size) // warps
    by_registers = math.inf
    if registers:
        per_warp = -(-registers * dev.warp_size // REGISTER_UNIT) * REGISTER_UNIT
        # the hardware checks a block's registers as if its warps filled all four sub-partitions
        assumed = per_warp * -(-warps // SUB_PARTITIONS) * SUB_PARTITIONS
        if max(assumed, per_warp * warps) > dev.registers_per_block:
            by_registers = 0
        else:
            by_registers = (dev.registers_per_sm // SUB_PARTITIONS // per_warp) * SUB_PARTITIONS // warps
    unit = shared_unit(dev)
    taken = -(-(shared + dev.shared_memory_reserved_per_block) // unit) * unit
    allowed = dev.shared_memory_per_block_optin + dev.shared_memory_reserved_per_block
    by_shared = math.inf if not taken else 0 if taken > allowed else dev.shared_memory_per_sm // taken
    counts = [by_threads, dev.blocks_per_sm, by_registers, by_shared]
    blocks = int(min(counts))
    big = dev.blocks_per_sm * 64  # "no limit" shown as a number larger than any other
    return Occupancy(
        blocks, by_threads, dev.blocks_per_sm, int(min(by_registers, big)), int(min(by_shared, big)),
        threads, registers, taken,
    )  # fmt: skip


STATIC_SHARED_ALIGN = 16


def usage(kernel: Kernel, dev: Device | None = None) -> tuple[int, int, str]:
    """(registers a thread, static shared bytes a block, where they came from) of `kernel` on `dev`."""
    dev = dev or device()
    if dev.on_gpu:
        attrs = _cupy_function(kernel).attributes
        return int(attrs["num_regs"]), int(attrs["shared_size_bytes"]), "the loaded function's attributes"
    regs = cubin.registers(
        kernel.module.code,
        filename=kernel.module.compiled.filename,
        options=kernel.module.options,
        name_expressions=kernel.module.name_expressions,
        arch=dev.arch,
    )
    if kernel.ptx_name not in regs:
        raise KeyError(f"NVRTC's {dev.arch} cubin has no kernel {kernel.ptx_name}; it has {sorted(regs)}")
    # ptxas rounds a kernel's static shared memory up to 16 bytes (the GPU's shared_size_bytes: 257
    # bytes of variables take 272; the cubin's .nv.shared section shows the same layout)
    static = -(-kernel.static_shared_bytes // STATIC_SHARED_ALIGN) * STATIC_SHARED_ALIGN
    return regs[kernel.ptx_name], static, f"NVRTC's {dev.arch} cubin"


def occupancy(kernel: Kernel, block: Any, dynamic_shared: int = 0, dev: Device | None = None) -> Occupancy:
    """Blocks of `kernel` with `block` threads and `dynamic_shared` bytes an SM of `dev` (the
    active device) holds at once, with what limits it. On a GPU the count is the driver's."""
    dev = dev or device()
    threads = math.prod(block) if isinstance(block, tuple) else int(block)
    registers, static, where = usage(kernel, dev)
    calc = calculate(dev, threads, registers=registers, shared=static + int(dynamic_shared))
    if not dev.on_gpu:
        return Occupancy(**{**calc.__dict__, "source": f"the course's occupancy calculation ({where})"})
    blocks = _driver_blocks(kernel, threads, int(dynamic_shared))
    return Occupancy(**{**calc.__dict__, "blocks": blocks, "source": "the CUDA occupancy API"})


def resident_blocks(kernel: Kernel, block: Any, dynamic_shared: int = 0, dev: Device | None = None) -> int:
    """Blocks of `kernel` an SM holds at once (see `occupancy`); a launch of this many blocks per
    SM, `dev.sm_count` times, is one wave."""
    return occupancy(kernel, block, dynamic_shared, dev).blocks


def _cupy_function(kernel: Kernel) -> Any:
    """The `cupy.RawKernel` CuPy loaded for `kernel`."""
    name = kernel.name if kernel.name in kernel.module.name_expressions else kernel.ptx_name
    return kernel.module.cupy_module().get_function(name)


def _driver_blocks(kernel: Kernel, threads: int, dynamic_shared: int) -> int:
    """cuOccupancyMaxActiveBlocksPerMultiprocessor on the CUfunction CuPy loaded (CuPy's own
    driver binding, which matches its CUDA version; else cuda-bindings')."""
    fn = _cupy_function(kernel).kernel.ptr  # the CUfunction handle
    try:
        from cupy.cuda import driver as cupy_driver

        return int(cupy_driver.occupancyMaxActiveBlocksPerMultiprocessor(fn, threads, dynamic_shared))
    except AttributeError:  # a CuPy without the binding
        from cuda.bindings import driver

        err, blocks = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            driver.CUfunction(fn), threads, dynamic_shared
        )
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuOccupancyMaxActiveBlocksPerMultiprocessor failed: {err}") from None
        return int(blocks)


def bytes_needed_per_sm(dev: Device | None = None) -> int:
    """Little's law: the bytes each SM must have in flight to keep DRAM busy: the bandwidth (the
    measured read stream on a GPU, else the memory's peak) × the DRAM latency / the SMs
    (`dev.source` says where each figure came from)."""
    dev = dev or device()
    gbps = dev.read_stream_gbps or dev.memory_peak_gbps
    return int(gbps * 1e9 * dev.dram_latency_ns * 1e-9 / dev.sm_count)
