"""The kernel API: backend choice, compilation, launch and argument validation, arrays."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import course
from course import compiler

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

template <int SCALE>
__global__ void scale(int* v, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        v[i] *= SCALE;
}
"""


def _run(code: str, env: dict[str, str]) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return out.stdout.strip()


def test_without_a_usable_gpu_the_emulator_is_chosen(monkeypatch):
    """CuPy may be installed with no driver: that must mean 'emulator', not a crash."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "COURSE_BACKEND"}
    env["CUDA_VISIBLE_DEVICES"] = ""  # hides any GPU, as on a machine without one
    assert _run("import course; print(course.device().backend)", env) == "emulator"
    env["COURSE_BACKEND"] = "emulator"
    assert _run("import course; print(course.device().backend)", env) == "emulator"


def test_forcing_cupy_without_a_gpu_says_why(monkeypatch):
    import os

    env = dict(os.environ, COURSE_BACKEND="cupy", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(
        [sys.executable, "-c", "import course; course.device()"], capture_output=True, text=True, env=env
    )
    assert proc.returncode != 0
    assert "COURSE_BACKEND=cupy" in proc.stderr


def test_bad_backend_name_is_rejected():
    with pytest.raises(ValueError, match="backend must be one of"):
        course.set_backend("opencl")


def test_emulated_device_reports_h100_like_limits(emulator_backend):
    d = course.device()
    assert d.backend == "emulator"
    assert (d.warp_size, d.sm_count, d.max_threads_per_block) == (32, 132, 1024)
    assert d.shared_memory_per_block == 48 * 1024
    assert d.max_block_dims == (1024, 1024, 64)
    assert "emulator" in str(d)


@pytest.mark.parametrize("n", [1, 31, 32, 33, 255, 256, 257, 1000, 4097])
def test_saxpy_matches_numpy(backend, rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    k = course.Module(code=SAXPY).get_function("saxpy")
    dy = course.asarray(y)
    k(((n + 127) // 128,), (128,), (np.float32(2.5), course.asarray(x), dy, np.int32(n)))
    fused = (2.5 * x.astype(np.float64) + y).astype(np.float32)  # the compiler emits one fma
    np.testing.assert_array_equal(course.asnumpy(dy), fused)


def test_template_kernels_by_name_expression(backend, rng):
    v = rng.integers(-1000, 1000, 777).astype(np.int32)
    mod = course.Module(code=SAXPY, name_expressions=("scale<3>", "scale<-2>"))
    for name, factor in (("scale<3>", 3), ("scale<-2>", -2)):
        dv = course.asarray(v)
        mod.get_function(name)((2,), (64,), (dv, np.uint64(v.size)))
        np.testing.assert_array_equal(course.asnumpy(dv), v * factor)


def test_kernel_files_load_from_the_package():
    with pytest.raises(FileNotFoundError, match=r"no kernel file 'nope\.cu'"):
        course.Module.from_file("nope.cu")


def test_missing_kernel_names_the_ones_there():
    mod = course.Module(code=SAXPY, name_expressions=("scale<3>",))
    with pytest.raises(KeyError, match="saxpy"):
        mod.get_function("saxpi")


def test_compile_error_shows_log_and_offending_line():
    bad = 'extern "C" __global__ void k(float* x) {\n    x[0] = undefined_thing + 1;\n}\n'
    with pytest.raises(course.CompileError) as e:
        course.Module(code=bad)
    msg = str(e.value)
    assert "undefined_thing" in msg and "identifier" in msg
    assert "line 2: x[0] = undefined_thing + 1;" in msg


def test_ptx_is_cached_by_source_and_options(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("COURSE_CACHE_DIR", raising=False)
    assert compiler.cache_dir() == tmp_path / "gpu-patterns-course"
    first = compiler.compile_ptx(SAXPY, options=("-DX=1",))
    files = list((tmp_path / "gpu-patterns-course" / "ptx").glob("*.json"))
    assert len(files) == 1
    again = compiler.compile_ptx(SAXPY, options=("-DX=1",))
    assert again.ptx == first.ptx
    compiler.compile_ptx(SAXPY, options=("-DX=2",))
    assert len(list((tmp_path / "gpu-patterns-course" / "ptx").glob("*.json"))) == 2
    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path / "mine"))
    assert compiler.cache_dir() == tmp_path / "mine"


def test_ptx_has_line_info_for_compute_90():
    ptx = compiler.compile_ptx(SAXPY).ptx
    assert ".target sm_90" in ptx
    assert ".loc" in ptx


class TestLaunchValidation:
    @pytest.fixture
    def saxpy(self, backend):
        return course.Module(code=SAXPY).get_function("saxpy")

    @pytest.fixture
    def args(self, backend):
        return (np.float32(1), course.zeros(10, np.float32), course.zeros(10, np.float32), np.int32(10))

    def test_too_many_threads(self, saxpy, args):
        with pytest.raises(course.LaunchError, match="2048 threads; at most 1024"):
            saxpy((1,), (64, 32), args)

    def test_block_dimension_limit(self, saxpy, args):
        with pytest.raises(course.LaunchError, match=r"block.z = 128 is outside 1..64"):
            saxpy((1,), (1, 1, 128), args)

    def test_zero_sized_grid(self, saxpy, args):
        with pytest.raises(course.LaunchError, match=r"grid.x = 0"):
            saxpy(0, 32, args)

    def test_dims_must_be_ints(self, saxpy, args):
        with pytest.raises(TypeError, match="grid must"):
            saxpy((1.5,), (32,), args)
        with pytest.raises(TypeError, match="1 to 3 ints"):
            saxpy((1, 1, 1, 1), (32,), args)

    def test_shared_memory_limit(self, saxpy, args):
        with pytest.raises(course.LaunchError, match="shared memory"):
            saxpy((1,), (32,), args, shared_mem=10**6)
        with pytest.raises(course.LaunchError, match=">= 0"):
            saxpy((1,), (32,), args, shared_mem=-4)

    def test_wrong_argument_count(self, saxpy, args):
        with pytest.raises(TypeError, match=r"takes 4 arguments, 3 given"):
            saxpy((1,), (32,), args[:3])

    def test_python_int_for_an_int_parameter(self, saxpy, args):
        with pytest.raises(TypeError, match=r"argument 3 \(int n\).*np.int32"):
            saxpy((1,), (32,), (*args[:3], 10))

    def test_wrong_scalar_width(self, saxpy, args):
        with pytest.raises(TypeError, match=r"int n\) is 4 bytes wide; got int64"):
            saxpy((1,), (32,), (*args[:3], np.int64(10)))

    def test_int_where_a_float_is_declared(self, saxpy, args):
        with pytest.raises(TypeError, match=r"float a\) needs a floating-point scalar"):
            saxpy((1,), (32,), (np.int32(1), *args[1:]))

    def test_numpy_array_for_a_pointer(self, saxpy, args):
        with pytest.raises(TypeError, match=r"const float\* x\) is a pointer.*course.asarray"):
            saxpy((1,), (32,), (args[0], np.zeros(10, np.float32), *args[2:]))

    def test_scalar_for_a_pointer(self, saxpy, args):
        with pytest.raises(TypeError, match=r"float\* y\) is a pointer"):
            saxpy((1,), (32,), (args[0], args[1], np.float32(0), args[3]))

    def test_args_must_be_a_tuple(self, saxpy, args):
        with pytest.raises(TypeError, match="args must be a tuple"):
            saxpy((1,), (32,), args[1])


@pytest.mark.gpu
def test_non_contiguous_cupy_array_is_rejected(cupy_backend):
    import cupy

    k = course.Module(code=SAXPY).get_function("saxpy")
    y = cupy.zeros((10, 2), cupy.float32)[:, 0]
    with pytest.raises(TypeError, match="not C-contiguous"):
        k((1,), (32,), (np.float32(1), y, y, np.int32(10)))


def test_emulator_arrays_behave_like_device_arrays(emulator_backend, rng):
    a = rng.standard_normal((3, 5)).astype(np.float32)
    d = course.asarray(a)
    assert d.shape == (3, 5) and d.dtype == np.float32 and d.nbytes == 60 and d.size == 15
    np.testing.assert_array_equal(course.asnumpy(d), a)
    with pytest.raises(TypeError, match=r"course\.asnumpy"):
        np.asarray(d)
    e = course.empty(4, np.int32)
    assert not e.initialized and (course.asnumpy(e) == -1).all()  # garbage, not zeros
    z = course.zeros(4, np.int32)
    assert z.initialized and (course.asnumpy(z) == 0).all()
    assert course.asarray(d) is d
    assert course.asarray(d, np.float64).dtype == np.float64


def test_trace_writes_outputs_like_a_launch(backend, rng):
    n = 100
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    k = course.Module(code=SAXPY).get_function("saxpy")
    dy = course.asarray(y)
    t = k.trace((1,), (128,), (np.float32(-1), course.asarray(x), dy, np.int32(n)))
    np.testing.assert_allclose(course.asnumpy(dy), y - x, rtol=1e-6)
    loads = t.where(space="global", op="ld")
    assert len(loads) == 2 * 4  # x and y, by each of the 4 warps
    assert set(t.buffers[b].name for b in np.unique(loads.buffer[loads.buffer >= 0])) == {"x", "y"}
    last = loads.select(loads.warp == 3)
    assert bin(int(last.mask[0])).count("1") == n - 96  # only the lanes with i < n load


def test_compiling_leaves_python_bytes_alone(tmp_path, monkeypatch):
    """NVRTC writes its log into the buffer it is given; a shared bytes object must never be it."""
    import struct

    monkeypatch.setenv("COURSE_CACHE_DIR", str(tmp_path))  # a fresh cache: NVRTC really runs
    compiler.compile_ptx(SAXPY + "\n// fresh\n")
    assert struct.pack("<B", 32) == b" " and b" "[0] == 32


def test_float32_subnormals_flush_as_cupy_compiles():
    """CuPy's RawModule always adds -ftz=true; the emulator's PTX must come from the same options."""
    ptx = compiler.compile_ptx(SAXPY).ptx
    assert "fma.rn.ftz.f32" in ptx
    assert "-ftz=true" in compiler.compile_options(())


def test_module_from_a_path(tmp_path, backend, rng):
    cu = tmp_path / "mine.cu"
    cu.write_text(SAXPY)
    k = course.Module(path=cu).get_function("saxpy")
    x, y = rng.standard_normal(50).astype(np.float32), np.zeros(50, np.float32)
    dy = course.asarray(y)
    k((1,), (64,), (np.float32(3), course.asarray(x), dy, np.int32(50)))
    np.testing.assert_allclose(course.asnumpy(dy), 3 * x, rtol=1e-6)
    with pytest.raises(TypeError, match="exactly one of code="):
        course.Module(code=SAXPY, path=cu)
    with pytest.raises(TypeError, match="exactly one of code="):
        course.Module()


def test_cuda_headers_come_from_the_wheels(backend, rng):
    """cuda_fp16.h and cooperative_groups.h, which NVRTC alone lacks, compile and run."""
    src = r"""
    #include <cuda_fp16.h>
    #include <cooperative_groups.h>
    namespace cg = cooperative_groups;
    extern "C" __global__ void warp_sums(const float* x, float* out, int n) {
        cg::thread_block_tile<32> warp = cg::tiled_partition<32>(cg::this_thread_block());
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        float v = __half2float(__float2half(i < n ? x[i] : 0.0f));
        for (int o = 16; o > 0; o >>= 1) v += warp.shfl_down(v, o);
        if (warp.thread_rank() == 0) out[i / 32] = v;
    }"""
    n = 100
    x = rng.standard_normal(n).astype(np.float32)
    out = course.zeros(4, np.float32)
    course.Module(code=src).get_function("warp_sums")((1,), (128,), (course.asarray(x), out, np.int32(n)))
    halves = np.pad(x.astype(np.float16).astype(np.float32), (0, 28))
    np.testing.assert_allclose(course.asnumpy(out), halves.reshape(4, 32).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_cupy_installed_without_a_driver_falls_back_to_the_emulator():
    """With CuPy installed and no usable GPU, importing the course still works and kernels run on
    the emulator (CI installs CuPy to check this; without CuPy the test has nothing to check)."""
    pytest.importorskip("cupy")
    import os

    env = {k: v for k, v in os.environ.items() if k != "COURSE_BACKEND"}
    env["CUDA_VISIBLE_DEVICES"] = ""
    code = (
        "import numpy as np, cupy, course; from course import reduction; "
        "x = np.arange(1, 1001, dtype=np.uint32); "
        "print(course.device().backend, reduction.run('reduce3', x) == 500500)"
    )
    assert _run(code, env) == "emulator True"


POINTERS = r"""
#ifndef ELEM_TYPE
#define ELEM_TYPE double
#endif
typedef ELEM_TYPE elem_t;
extern "C" __global__ void ints(int* x, int n) { if (threadIdx.x < n) x[threadIdx.x] += 1; }
extern "C" __global__ void elems(const elem_t* x, float* out) { out[0] = x[0]; }
template <typename U> __global__ void any(U* x) { x[0] = x[0]; }
"""


def test_an_array_of_another_element_type_is_refused_on_both_backends(backend):
    mod = course.Module(code=POINTERS, options=("-DELEM_TYPE=float",), name_expressions=("any<float>",))
    ints = mod.get_function("ints")
    floats = course.asarray(np.ones(4, np.float32))
    with pytest.raises(
        course.ArgumentError, match=r"\(int\* x\) points to int32 elements, but the array holds float32"
    ):
        ints((1,), (32,), (floats, np.int32(4)))
    with pytest.raises(TypeError, match=r"x\.astype"):  # check() refuses too: it would find nothing wrong
        ints.check((1,), (32,), (floats, np.int32(4)))
    elems = mod.get_function("elems")  # elem_t is ELEM_TYPE is float, through the typedef and the -D option
    with pytest.raises(course.ArgumentError, match="NumPy's default dtype is float64"):
        elems((1,), (1,), (course.asarray(np.ones(4)), course.zeros(1, np.float32)))
    elems((1,), (1,), (floats, course.zeros(1, np.float32)))
    mod.get_function("any<float>")(
        (1,), (1,), (course.asarray(np.ones(2, np.int64)),)
    )  # U unknown: unchecked


def test_a_launch_is_validated_once_per_argument_signature(emulator_backend, monkeypatch):
    k = course.Module(code=POINTERS).get_function("ints")
    x = course.asarray(np.zeros(4, np.int32))
    calls = []
    real = course.Kernel.validate
    monkeypatch.setattr(course.Kernel, "validate", lambda self, *a: calls.append(a) or real(self, *a))
    for _ in range(3):
        k((1,), (32,), (x, np.int32(4)))
    assert len(calls) == 1 and course.asnumpy(x).tolist() == [3, 3, 3, 3]
    k((1,), (64,), (x, np.int32(4)))  # another block: validated again
    k((1,), (32,), (course.asarray(np.zeros(8, np.int32)), np.int32(8)))  # same kinds: not again
    assert len(calls) == 2
    with pytest.raises(course.ArgumentError):
        k((1,), (32,), (x, 4))  # a Python int where the kernel takes a 4-byte int


@pytest.mark.parametrize("version", ["dot1", "dot3"])
def test_inspect_counts_what_one_launch_wrote_as_written_for_the_next(version: str) -> None:
    # dot1 and dot3 write per-block partial sums into course.empty() memory, then a second launch
    # sums them: inspect (the panel's path) must not call those reads uninitialised, as check does not
    from course import dot

    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal(1000).astype(np.float32) for _ in range(2))
    with course.backend.using("emulator"):
        findings, _ = dot.ENGINE.inspect(version, a, b, block=256)
    assert not findings.kinds(), findings
    assert not dot.check(version, a, b).kinds()
