"""The GPU's DRAM latency and read stream, measured (course.probe): what a GPU device carries, what
it says when the measurement is off or fails, and on a GPU that the figures are plausible."""

from __future__ import annotations

import dataclasses

import pytest

import course
from course import backend, occupancy, probe

GPU_LIKE = dataclasses.replace(backend.MODELS["h100"], backend="cupy", name="NVIDIA H100 80GB HBM3", model="")


class FakeCupy:
    __version__ = "14.2.0"

    class cuda:
        class runtime:
            @staticmethod
            def driverGetVersion() -> int:
                return 13000


def test_a_measured_gpu_carries_the_figures_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        probe, "measure", lambda *identity: {"dram_latency_ns": 712.6, "read_stream_gbps": 3010.0}
    )
    gpu = backend._measured(GPU_LIKE, FakeCupy)
    assert (gpu.dram_latency_ns, gpu.read_stream_gbps) == (712.6, 3010.0)
    assert gpu.source("dram_latency_ns").startswith("measured on this GPU")
    table = str(gpu.describe())
    assert "3010 GB/s" in table and "713 ns" in table
    # Little's law reads the measured stream, not the datasheet's 3350
    assert occupancy.bytes_needed_per_sm(gpu) == int(3010e9 * 712.6e-9 / gpu.sm_count)


def test_a_failed_measurement_keeps_the_gpu_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*identity: object) -> dict:
        raise RuntimeError("out of memory")

    monkeypatch.setattr(probe, "measure", fail)
    gpu = backend._measured(GPU_LIKE, FakeCupy)
    assert gpu.backend == "cupy" and gpu.read_stream_gbps is None
    assert gpu.dram_latency_ns == GPU_LIKE.dram_latency_ns
    assert "not measured: RuntimeError: out of memory" in gpu.source("read_stream_gbps")
    assert occupancy.bytes_needed_per_sm(gpu) == occupancy.bytes_needed_per_sm(GPU_LIKE)  # the peak


def test_course_probe_off_skips_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COURSE_PROBE", "off")
    monkeypatch.setattr(probe, "measure", lambda *identity: pytest.fail("measured although off"))
    assert (
        backend._measured(GPU_LIKE, FakeCupy).source("read_stream_gbps") == "not measured: COURSE_PROBE=off"
    )


def test_the_emulator_says_it_measured_nothing() -> None:
    model = backend.MODELS["h200"]
    assert model.read_stream_gbps is None and "not measured" in model.source("read_stream_gbps")
    assert "—" in str(model.describe())


def test_the_probe_kernels_compile_for_the_emulator_too() -> None:
    # the same CUDA C NVRTC compiles on the GPU machine; here: it is valid and names both kernels
    mod = course.Module(code=probe.SOURCE)
    assert mod.get_function("chase") is not None and mod.get_function("read_stream") is not None


@pytest.mark.gpu
def test_on_a_gpu_the_figures_are_plausible(cupy_backend: course.Device) -> None:
    gpu = cupy_backend
    assert gpu.source("read_stream_gbps") == probe.HOW, gpu.source("read_stream_gbps")
    assert 200 < gpu.dram_latency_ns < 3000  # a DRAM round trip: hundreds of ns, never an L2 hit's ~200-300
    assert 0.5 * gpu.memory_peak_gbps < gpu.read_stream_gbps <= 1.02 * gpu.memory_peak_gbps
