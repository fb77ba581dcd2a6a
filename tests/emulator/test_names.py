"""The C names of the PTX symbols that reach a learner's messages."""

from __future__ import annotations

import numpy as np
import pytest

import course
from course.emulator.names import display, local_static


@pytest.mark.parametrize(
    "symbol, names",
    [
        pytest.param("_ZZ13hist2_articleE4temp", ("temp", "hist2_article"), id="extern-C"),
        pytest.param("_ZZ7reduce6ILj256EEvPKfPfjE5sdata", ("sdata", "reduce6<256>"), id="template"),
        pytest.param(
            "_ZZ17transpose_articleILi32EEvPiS0_iiE11smem_matrix",
            ("smem_matrix", "transpose_article<32>"),
            id="template-int",
        ),
        pytest.param("_ZZ3fooIfEvPT_E3buf", ("buf", "foo<...>"), id="template-of-a-type"),
        pytest.param("_ZZN2ns3fooEvE1x", ("x", "ns::foo"), id="namespace"),
        pytest.param("_ZZ4funcE4temp_0", ("temp", "func"), id="second-of-one-name"),
        pytest.param("_ZZ3fooE6buf_E2", ("buf_E2", "foo"), id="E-digit-in-the-name"),
        pytest.param("sdata", None, id="plain"),
        pytest.param("_Z7reduce6ILj256EEvPKfPfj", None, id="a-function"),
        pytest.param("_ZZ4func", None, id="cut-short"),
    ],
)
def test_local_statics_are_read_back_to_their_c_names(symbol, names):
    assert local_static(symbol) == names


def test_display_names_the_array_and_its_function():
    assert display("_ZZ13hist2_articleE4temp") == "`temp` (shared array of `hist2_article`)"
    assert display("_ZZ12dot3_articleE5cache", "1024 B") == "`cache` (shared array of `dot3_article`, 1024 B)"
    assert display("sdata") == "`sdata`"


def test_every_shared_array_of_the_course_kernels_is_read_back():
    """What NVRTC emits for the course's own kernels: each static shared array gets a C name."""
    for name in ("dot.cu", "histogram.cu", "reduction.cu", "scan.cu", "transpose.cu"):
        module = course.Module.from_file(name)
        for entry in module.kernel_names:
            for var in module.program.compiled(entry).shared:
                if var.name.startswith("_ZZ"):
                    assert local_static(var.name) is not None, var.name


def test_an_out_of_bounds_shared_write_names_the_array_in_c(emulator_backend):
    src = r"""
    extern "C" __global__ void hist(const unsigned char* x, unsigned int* h) {
        __shared__ unsigned int temp[256];
        temp[threadIdx.x] = x[threadIdx.x];
        __syncthreads();
        h[threadIdx.x % 256] = temp[255 - threadIdx.x % 256];
    }"""
    k = course.Module(code=src).get_function("hist")
    x, h = course.asarray(np.zeros(512, np.uint8)), course.zeros(256, np.uint32)
    with pytest.raises(course.OutOfBoundsError) as info:
        k((1,), (512,), (x, h))
    message = str(info.value)
    assert "`temp` (shared array of `hist`, 1024 B at offset 0)" in message and "_ZZ" not in message
