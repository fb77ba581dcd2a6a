"""The device's limits and what one wave of blocks is: course.backend's device models,
course.cubin's register counts, and course.occupancy's calculation against hand-worked cases;
every one-wave version of every topic launches exactly one wave under the H100, H200 and T4
models (and, on a GPU, under the driver's occupancy API)."""

from __future__ import annotations

import dataclasses
import struct

import numpy as np
import pytest

import course
from course import backend, compiler, cubin, occupancy, reduction
from course.engine import OneWave
from course.errors import InputError
from course.reduction import topic as reduction_topic
from course.topics import TOPICS

MODELS = ("h100", "h200", "t4")
H100, H200, T4 = (backend.MODELS[m] for m in MODELS)
LARGE_N = 2**30  # far more elements than one wave covers


def one_wave_cases() -> list[pytest.param]:
    """(engine, version, block) of every listed version launched as one wave, at every block it takes."""
    return [
        pytest.param(eng, v, block, id=f"{v.name}-{block}")
        for eng in TOPICS
        for v in eng.topic.versions
        if v.listed and isinstance(v.grid, OneWave) and not v.grid.per_sm
        for block in v.blocks
    ]


def dtype_of(eng, v) -> np.dtype:
    return np.dtype(v.dtypes[0] if v.dtypes else eng.bench.dtypes[0])


# ---------------------------------------------------------------- the device and its models


def test_the_default_model_is_the_h100_and_every_figure_says_where_it_came_from(
    emulator_backend, monkeypatch
):
    monkeypatch.delenv("COURSE_DEVICE_MODEL", raising=False)
    with backend.using("emulator"):
        dev = course.device()
    assert dev is backend.EMULATED is H100
    assert (dev.sm_count, dev.threads_per_sm, dev.blocks_per_sm, dev.memory_peak_gbps) == (
        132,
        2048,
        32,
        3350.0,
    )
    assert "\n" not in str(dev) and "132 SMs × 2048 threads" in str(dev) and "3.35 TB/s" in str(dev)
    rows = {r["limit"]: r for r in dev.describe()}
    assert rows["blocks per SM"]["value"] == "32" and "H100 model" in rows["blocks per SM"]["from"]
    assert rows["DRAM latency"]["value"] == "600 ns" and "not measured" in rows["DRAM latency"]["from"]
    assert rows["shared memory reserved per block"]["value"] == "1024 B"
    assert "datasheet" in dev.source("memory_peak_gbps")
    with pytest.raises(ValueError, match="no field 'speed'"):
        dev.source("speed")


def test_a_model_is_chosen_by_set_backend_or_the_environment(emulator_backend, monkeypatch):
    with backend.using("emulator", model="t4") as dev:
        assert dev is T4 and course.device() is T4
        assert (dev.sm_count, dev.threads_per_sm, dev.blocks_per_sm) == (40, 1024, 16)
        assert (dev.shared_memory_per_sm, dev.shared_memory_reserved_per_block, dev.arch) == (
            65536,
            0,
            "sm_75",
        )
        assert dev.memory_peak_gbps == 320.0 and "T4-like" in dev.name
    assert course.device() is not T4  # using() gave the model back
    monkeypatch.setenv("COURSE_DEVICE_MODEL", "H200")
    with backend.using("emulator") as dev:
        assert dev is H200 and dev.memory_peak_gbps == 4800.0 and dev.sm_count == 132
    monkeypatch.setenv("COURSE_DEVICE_MODEL", "a100")
    with pytest.raises(ValueError, match=r"COURSE_DEVICE_MODEL must be one of \['h100', 'h200', 't4'\]"):
        backend.using("emulator").__enter__()
    with pytest.raises(ValueError, match="model must be one of"):
        course.set_backend("emulator", model="v100")


def test_datasheet_peaks_by_the_name_a_gpu_reports():
    assert backend.datasheet_peak("NVIDIA H100 80GB HBM3") == 3350.0
    assert backend.datasheet_peak("NVIDIA H100 PCIe") == 2000.0
    assert backend.datasheet_peak("NVIDIA H200") == 4800.0 and backend.datasheet_peak("Tesla T4") == 320.0
    assert backend.datasheet_peak("Some Future GPU") is None


def test_littles_law_reads_the_model():
    assert occupancy.bytes_needed_per_sm(H200) == 21818  # 4.8 TB/s × 600 ns / 132 SMs
    assert occupancy.bytes_needed_per_sm(H100) == 15227  # 3.35 TB/s × 600 ns / 132 SMs
    assert occupancy.bytes_needed_per_sm(T4) == 4800  # 320 GB/s × 600 ns / 40 SMs


# ---------------------------------------------------------------- the occupancy calculation, by hand


@pytest.mark.parametrize(
    ("dev", "threads", "registers", "shared", "blocks", "limits"),
    [
        # 256 threads = 8 warps; 64 warps an SM: 8 blocks; 16 registers leave room for 16
        (H100, 256, 16, 0, 8, ["threads"]),
        # 64 registers: 2048 a warp, 8 warps per sub-partition (16384 registers), 32 warps: 4 blocks
        (H100, 256, 64, 0, 4, ["registers"]),
        # 33 registers: 1056 a warp, rounded up to 1280; 12 warps a sub-partition, 48 warps: 6 blocks
        (H100, 256, 33, 0, 6, ["registers"]),
        # 48 KiB + the 1 KiB reservation = 50176 B a block; 233472 // 50176 = 4 (threads allow 16)
        (H100, 128, 0, 48 * 1024, 4, ["shared memory"]),
        # one warp a block: the 32 block slots run out before the 64 warps
        (H100, 32, 8, 0, 32, ["blocks"]),
        # 1024 threads of 64 registers fill the register file exactly once
        (H100, 1024, 64, 0, 1, ["registers"]),
        # 65 registers: 2304 a warp x 32 warps > 65536 a block: it cannot launch at all
        (H100, 1024, 65, 0, 0, ["registers"]),
        # a T4 SM holds 1024 threads and 16 blocks; 64 registers a thread fill its 64 Ki registers too
        (T4, 256, 64, 0, 4, ["threads", "registers"]),
        (T4, 32, 8, 0, 16, ["blocks"]),
        # no reservation on Turing, 256-byte units: 20480 B a block, 65536 // 20480 = 3
        (T4, 128, 16, 20 * 1024, 3, ["shared memory"]),
        # 100 B rounds up to 256 on Turing (and to 1024 + 128 on Hopper)
        (T4, 32, 0, 100, 16, ["blocks"]),
    ],
)  # fmt: skip
def test_calculate_by_hand(dev, threads, registers, shared, blocks, limits):
    occ = occupancy.calculate(dev, threads, registers=registers, shared=shared)
    assert occ.blocks == blocks
    assert occ.limits == limits


def test_the_shared_memory_a_block_takes_is_rounded_to_the_allocation_unit():
    assert occupancy.calculate(T4, 32, shared=100).shared == 256
    assert occupancy.calculate(H100, 32, shared=100).shared == 1024 + 128
    assert occupancy.calculate(H100, 32, shared=233 * 1024).blocks == 0  # above the 227 KiB opt-in limit


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threads": 0}, "a block has 1 to 1024 threads"),
        ({"threads": 2048}, "a block has 1 to 1024 threads"),
        ({"threads": 256, "registers": 300}, "0 to 255 registers"),
        ({"threads": 256, "shared": -1}, "at least 0 bytes"),
        ({"threads": 256.0}, "threads must be an int"),
    ],
)
def test_calculate_refuses_what_no_launch_has(kwargs, message):
    with pytest.raises(InputError, match=message):
        occupancy.calculate(H100, **kwargs)


# ---------------------------------------------------------------- registers from NVRTC's cubin


def _text_section_registers(data: bytes) -> dict[str, int]:
    """The registers nvdisasm reads from each `.text.<kernel>` section header: sh_info's top byte
    (a second, independent place in the ELF)."""
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = data[heads[shstrndx][4] :]
    out = {}
    for h in heads:
        name = names[h[0] : names.index(b"\0", h[0])].decode()
        if name.startswith(".text."):
            out[name[len(".text.") :]] = h[7] >> 24
    return out


def test_cubin_register_counts_agree_with_the_section_headers():
    source = compiler.read_kernel("reduction.cu")
    names = tuple(f"reduce7<{b}>" for b in reduction_topic.BLOCKS)
    opts = compiler.compile_options(("-arch=sm_75", *reduction_topic.options(np.dtype(np.float32))))
    data = compiler.compile_cubin(source, "reduction.cu", opts, names)
    counts = cubin.read_regcounts(data)
    assert counts == _text_section_registers(data)
    assert {"reduce1", "reduce_vec4"} <= counts.keys() and all(1 <= r <= 255 for r in counts.values())
    with pytest.raises(ValueError, match="not a 64-bit little-endian ELF"):
        cubin.read_regcounts(b"not an elf")
    with pytest.raises(ValueError, match="real architecture"):
        cubin.registers(source, filename="r.cu", options=(), name_expressions=(), arch="compute_90")


def test_register_counts_are_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path))
    code = 'extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }'
    cubin._registers.cache_clear()
    first = cubin.registers(code, filename="k.cu", options=(), name_expressions=(), arch="sm_90")
    assert list((tmp_path / "regs").glob("*.json"))
    cubin._registers.cache_clear()
    monkeypatch.setattr(compiler, "compile_cubin", lambda *a: pytest.fail("compiled again despite the cache"))
    assert cubin.registers(code, filename="k.cu", options=(), name_expressions=(), arch="sm_90") == first
    cubin._registers.cache_clear()


# ---------------------------------------------------------------- one wave, every version, every model


def test_reduce7_at_32_launches_one_wave_not_two():
    for model, per_sm in (("h100", 32), ("h200", 32), ("t4", 16)):
        with backend.using("emulator", model=model) as dev:
            assert reduction.ENGINE.grid("reduce7", LARGE_N, 32) == (dev.sm_count * per_sm, 1, 1)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(("eng", "v", "block"), one_wave_cases())
def test_one_wave_versions_launch_exactly_one_wave(model, eng, v, block):
    with backend.using("emulator", model=model) as dev:
        dtype = dtype_of(eng, v)
        kernel = eng.kernel(v, dtype, block)
        dynamic = v.shared_bytes(block, dtype)
        registers, static, _ = occupancy.usage(kernel, dev)
        held = occupancy.resident_blocks(kernel, block, dynamic, dev)
        assert eng.grid(v, LARGE_N, block, dtype) == (dev.sm_count * held, 1, 1)
    # what the SM holds fits every limit, checked here on their own
    threads, warps = int(block), -(-int(block) // 32)
    per_warp = -(-registers * 32 // 256) * 256
    taken = -(-(static + dynamic + dev.shared_memory_reserved_per_block) // occupancy.shared_unit(dev))
    taken *= occupancy.shared_unit(dev)
    assert 1 <= held <= dev.blocks_per_sm
    assert held * threads <= dev.threads_per_sm
    assert held * warps * per_warp <= dev.registers_per_sm
    assert held * taken <= dev.shared_memory_per_sm
    # and one more block would not fit
    more = held + 1
    assert (
        more > dev.blocks_per_sm
        or more * threads > dev.threads_per_sm
        or more * taken > dev.shared_memory_per_sm
        or occupancy.calculate(dev, threads, registers=registers).blocks < more
    )


def test_every_topic_with_a_grid_stride_loop_is_covered():
    names = {p.values[1].name for p in one_wave_cases()}
    assert {"dot2", "dot_vec4", "hist5_lanes", "reduce7", "reduce_single_pass"} <= names


# ---------------------------------------------------------------- on a GPU: the driver agrees


@pytest.mark.gpu
@pytest.mark.parametrize(("eng", "v", "block"), one_wave_cases())
def test_the_emulators_count_matches_the_gpus_occupancy_api(cupy_backend, eng, v, block):
    gpu = cupy_backend
    like = dataclasses.replace(gpu, backend="emulator")  # the GPU's limits, the course's arithmetic
    dtype = dtype_of(eng, v)
    kernel = eng.kernel(v, dtype, block)
    dynamic = v.shared_bytes(block, dtype)
    regs_gpu, static_gpu, _ = occupancy.usage(kernel, gpu)
    regs_nvrtc, static_ptx, _ = occupancy.usage(kernel, like)
    assert (regs_nvrtc, static_ptx) == (regs_gpu, static_gpu), f"NVRTC {compiler.nvrtc_version()}"
    held = occupancy.resident_blocks(kernel, block, dynamic, gpu)  # the driver's answer
    assert occupancy.resident_blocks(kernel, block, dynamic, like) == held
    assert eng.grid(v, LARGE_N, block, dtype) == (gpu.sm_count * held, 1, 1)


def test_static_shared_memory_is_counted_as_ptxas_lays_it_out(emulator_backend):
    """reduce_single_pass's 257 bytes of shared variables (int32: 32 partial sums of 8 bytes and a
    flag) take 272, rounded to 16, as the GPU's shared_size_bytes says (measured on an H100): the
    occupancy calculation counts the 272; float32's 129 bytes take 144."""
    for dtype, declared, taken in ((np.int32, 257, 272), (np.float32, 129, 144)):
        kernel = reduction.ENGINE.kernel("reduce_single_pass", dtype)
        assert kernel.static_shared_bytes == declared
        assert occupancy.usage(kernel)[1] == taken
