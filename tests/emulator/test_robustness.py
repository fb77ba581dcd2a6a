"""Faults at the byte, rounding at the tie, barriers at the last warp, and PTX nobody meant to write.

The first tests kill mutants that survived by hand (a bounds check one byte late, rz rounding to
nearest, bf16 ties away from zero, a barrier released before the last warp arrives). The fuzz test
feeds the emulator malformed and unusual PTX: whatever it raises must be a course error.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import course
from course.emulator import Program, run_kernel
from course.errors import CourseError, EmulatorDefect, OutOfBoundsError, UnsupportedInstruction


def launch(src: str, grid: int, block: int, *args, shared_mem: int = 0, name: str = "k"):
    k = course.Module(code=src).get_function(name)
    dev = [course.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    k((grid,), (block,), tuple(dev), shared_mem=shared_mem)
    return [course.asnumpy(d) if isinstance(a, np.ndarray) else d for a, d in zip(args, dev)]


# ---------------------------------------------------------------- bounds at the byte


@pytest.mark.parametrize("n", [1, 5, 7, 33])
def test_byte_array_read_one_past_the_end_faults(n: int, emulator_backend: course.Device) -> None:
    src = r'extern "C" __global__ void k(const unsigned char* x, unsigned char* y, int n) { int i = threadIdx.x; y[i] = x[i]; }'
    x = np.arange(n, dtype=np.uint8)
    (_, y, _) = launch(src, 1, n, x, np.zeros(n, np.uint8), np.int32(n))
    np.testing.assert_array_equal(y, x)  # the last byte is inside
    with pytest.raises(OutOfBoundsError, match="buffer 'x' at index"):
        launch(src, 1, n + 1, x, np.zeros(n + 1, np.uint8), np.int32(n))


def test_word_access_ending_one_byte_past_a_byte_array_faults(emulator_backend: course.Device) -> None:
    src = r'extern "C" __global__ void k(const unsigned char* x, int* y, int off) { y[0] = *(const int*)(x + off); }'
    x = np.arange(8, dtype=np.uint8)
    (_, y, _) = launch(src, 1, 1, x, np.zeros(1, np.int32), np.int32(4))
    assert y[0] == int.from_bytes(bytes([4, 5, 6, 7]), "little")
    with pytest.raises(OutOfBoundsError):
        launch(src, 1, 1, x[:7].copy(), np.zeros(1, np.int32), np.int32(4))  # bytes 4..7 of a 7-byte buffer


@pytest.mark.parametrize("size", [1, 17, 33])
def test_shared_write_one_byte_past_the_array_faults(size: int, emulator_backend: course.Device) -> None:
    src = f"""
extern "C" __global__ void k(unsigned char* out) {{
    __shared__ unsigned char s[{size}];
    s[threadIdx.x] = (unsigned char)threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}}"""
    (out,) = launch(src, 1, size, np.zeros(size, np.uint8))
    np.testing.assert_array_equal(out, np.arange(size, dtype=np.uint8))
    with pytest.raises(OutOfBoundsError, match="shared"):
        launch(src, 1, size + 1, np.zeros(size + 1, np.uint8))


# ---------------------------------------------------------------- rounding at the tie


def test_double_to_float_rz_truncates(emulator_backend: course.Device) -> None:
    src = r"""extern "C" __global__ void k(const double* x, float* z, float* n) {
        int i = threadIdx.x; z[i] = __double2float_rz(x[i]); n[i] = __double2float_rn(x[i]); }"""
    up = 1 + 2.0**-23 * 0.75  # nearer to 1 + 2**-23 than to 1
    x = np.array([up, -up, 1 / 3, -1 / 3, 2.0**-130 * 1.75, 1e300, -1e300])
    _, z, n = launch(src, 1, len(x), x, np.zeros(len(x), np.float32), np.zeros(len(x), np.float32))
    assert z[0] == 1.0 and z[1] == -1.0 and n[0] == np.float32(1 + 2.0**-23)
    assert z[2] == np.nextafter(np.float32(1 / 3), np.float32(0)) or z[2] == np.float32(1 / 3) < 1 / 3
    assert abs(float(z[2])) <= 1 / 3 and abs(float(z[3])) <= 1 / 3
    assert z[5] == np.finfo(np.float32).max and z[6] == -np.finfo(np.float32).max  # rz never overflows
    assert np.isinf(n[5])


def test_float_to_bfloat16_ties_round_to_even(emulator_backend: course.Device) -> None:
    src = r"""#include <cuda_bf16.h>
    extern "C" __global__ void k(const float* x, unsigned short* y) {
        int i = threadIdx.x; y[i] = __bfloat16_as_ushort(__float2bfloat16_rn(x[i])); }"""
    # exactly halfway between two bfloat16 values: low 16 bits 0x8000
    bits = np.array([0x3F808000, 0x3F818000, 0xBF808000, 0xBF818000, 0x00008000, 0x7F7F8000], np.uint32)
    _, y = launch(src, 1, len(bits), bits.view(np.float32), np.zeros(len(bits), np.uint16))
    np.testing.assert_array_equal(y, np.array([0x3F80, 0x3F82, 0xBF80, 0xBF82, 0x0000, 0x7F80], np.uint16))


# ---------------------------------------------------------------- NaN to an integer, and div.approx's flushed range


def test_nan_to_integer_gives_what_the_gpu_gives(emulator_backend: course.Device) -> None:
    """An H200 converts NaN to 0x8000000000000000 for a 64-bit destination (from any float) and to
    0x80000000 from a double to 32 bits; from float or half to 32 bits it gives 0."""
    src = r"""#include <cuda_fp16.h>
    extern "C" __global__ void k(const float* f, const double* d, const unsigned short* h,
                                 long long* s64, unsigned long long* u64, int* s32, unsigned* u32) {
        int i = threadIdx.x; __half x = __ushort_as_half(h[i]);
        s64[3 * i] = __float2ll_rn(f[i]); s64[3 * i + 1] = __double2ll_rz(d[i]); s64[3 * i + 2] = __half2ll_rd(x);
        u64[3 * i] = __float2ull_rz(f[i]); u64[3 * i + 1] = __double2ull_rn(d[i]); u64[3 * i + 2] = __half2ull_ru(x);
        s32[3 * i] = __float2int_rn(f[i]); s32[3 * i + 1] = __double2int_rz(d[i]); s32[3 * i + 2] = __half2int_rn(x);
        u32[3 * i] = __float2uint_rz(f[i]); u32[3 * i + 1] = __double2uint_rn(d[i]); u32[3 * i + 2] = __half2uint_rn(x);
    }"""
    f = np.array([np.nan, -np.nan, np.inf, -2.5], np.float32)
    d = f.astype(np.float64)
    h = f.astype(np.float16).view(np.uint16)
    outs = [np.zeros(12, t) for t in (np.int64, np.uint64, np.int32, np.uint32)]
    *_, s64, u64, s32, u32 = launch(src, 1, 4, f, d, h, *outs)
    nan = slice(0, 6)  # the two NaNs (either sign), each from float, double and half
    assert (s64[nan] == -(2**63)).all() and (u64[nan] == 2**63).all()
    np.testing.assert_array_equal(s32[nan], [0, -(2**31), 0] * 2)
    np.testing.assert_array_equal(u32[nan], [0, 2**31, 0] * 2)
    # numbers are unchanged: inf saturates, -2.5 rounds in the named mode (and saturates at 0 unsigned)
    np.testing.assert_array_equal(s64[6:], [2**63 - 1] * 3 + [-2, -2, -3])
    np.testing.assert_array_equal(u64[6:], [2**64 - 1] * 3 + [0, 0, 0])
    np.testing.assert_array_equal(s32[6:], [2**31 - 1] * 3 + [-2, -2, -2])
    np.testing.assert_array_equal(u32[6:], [2**32 - 1] * 3 + [0, 0, 0])


@pytest.mark.parametrize("op", ["div.approx.f32", "div.approx.ftz.f32"])
def test_div_approx_flushes_for_divisors_past_2_to_126(op: str, emulator_backend: course.Device) -> None:
    """div.approx.f32 is a * (1/b): for 2^126 < |b| < 2^128 the reciprocal flushes, so the quotient is
    a zero with the sign of a*b (NaN for an infinite a); div.full and div.rn keep the small quotient."""
    src = r"""extern "C" __global__ void k(const float* a, const float* b, float* y, float* full, float* rn) {
        int i = threadIdx.x; float v, w, z;
        asm("OP %0, %1, %2;" : "=f"(v) : "f"(a[i]), "f"(b[i]));
        asm("div.full.f32 %0, %1, %2;" : "=f"(w) : "f"(a[i]), "f"(b[i]));
        asm("div.rn.f32 %0, %1, %2;" : "=f"(z) : "f"(a[i]), "f"(b[i]));
        y[i] = v; full[i] = w; rn[i] = z; }""".replace("OP", op)
    a = np.array([-3.0, 3.0, 3.0, np.inf, 1e30, 6.0, 1.0], np.float32)
    b = np.array([2.0**127, -(2.0**127), 1.5 * 2.0**126, 2.0**127, 2.0**126, 3.0, np.inf], np.float32)
    z = np.zeros(len(a), np.float32)
    *_, y, full, rn = launch(src, 1, len(a), a, b, z, z.copy(), z.copy())
    assert (y[:3] == 0).all() and list(np.signbit(y[:3])) == [True, True, False]
    assert np.isnan(y[3])
    np.testing.assert_array_equal(y[4:], (a[4:] / b[4:]).astype(np.float32))  # |b| <= 2^126: the quotient
    np.testing.assert_array_equal(full, a / b)
    np.testing.assert_array_equal(rn, a / b)
    assert full[0] < 0 and full[0] != 0  # -3 / 2^127 is a float32 subnormal, kept without .ftz


# ---------------------------------------------------------------- the barrier waits for the last warp


@pytest.mark.parametrize("block", [64, 96, 1024])
def test_syncthreads_waits_for_the_last_warp(block: int, emulator_backend: course.Device) -> None:
    """The last warp is slow (a loop) before it writes; after the barrier every warp reads it."""
    src = r"""
extern "C" __global__ void k(int* out, int spin) {
    extern __shared__ int s[];
    int t = threadIdx.x;
    int acc = 0;
    if (t >= blockDim.x - 32) for (int k = 0; k < spin; ++k) acc += (k * k) & 1;
    if (acc == 123456789) out[0] = -2;  // never: keeps the loop
    s[t] = t;
    __syncthreads();
    out[t] = s[blockDim.x - 1 - t];
}"""
    (out, _) = launch(src, 1, block, np.zeros(block, np.int32), np.int32(200), shared_mem=4 * block)
    np.testing.assert_array_equal(out, np.arange(block)[::-1])


# ---------------------------------------------------------------- lanes left behind in a warp


def count_schedules(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    from course.emulator.machine import Machine

    calls = [0]
    schedule = Machine._schedule

    def counted(self: Machine) -> Any:
        calls[0] += 1
        return schedule(self)

    monkeypatch.setattr(Machine, "_schedule", counted)
    return calls


@pytest.mark.parametrize("block", [33, 256, 1024])
def test_one_lane_loops_while_its_warp_waits(
    block: int, emulator_backend: course.Device, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thread 0 adds the block's values one by one (dot1's shape) while lanes 1..31 of its warp
    wait to reconverge: right sums, and the loop runs without a schedule per instruction."""
    src = r"""
extern "C" __global__ void k(const int* x, int* out) {
    extern __shared__ int s[];
    s[threadIdx.x] = x[threadIdx.x + blockIdx.x * blockDim.x];
    __syncthreads();
    if (threadIdx.x == 0) {
        int sum = 0;
        for (unsigned int k = 0; k < blockDim.x; ++k) sum += s[k] * (int)(k % 7 + 1);
        out[blockIdx.x] = sum;
    }
}"""
    x = np.random.default_rng(block).integers(-1000, 1000, 3 * block).astype(np.int32)
    calls = count_schedules(monkeypatch)
    (_, out) = launch(src, 3, block, x, np.zeros(3, np.int32), shared_mem=4 * block)
    weights = np.arange(block) % 7 + 1
    np.testing.assert_array_equal(out, (x.reshape(3, block) * weights).sum(axis=1))
    assert calls[0] < 60, f"{calls[0]} schedules for a loop of {block} trips"


@pytest.mark.parametrize("block", [32, 64, 96])
def test_blocks_out_of_step_run_every_kind_of_instruction(
    block: int, emulator_backend: course.Device
) -> None:
    """Block 0 takes a detour, so the other blocks (one run of threads) run ahead of it through
    shared memory, a barrier, shuffles, votes and atomics: what each block computes is right."""
    src = r"""
extern "C" __global__ void k(const int* x, int* out, unsigned int* total, int detour) {
    extern __shared__ int s[];
    int t = threadIdx.x, g = blockIdx.x * blockDim.x + t, v = x[g];
    if (blockIdx.x == 0) for (int k = 0; k < detour; ++k) v += (k * t) % 3;
    s[t] = v;
    __syncthreads();
    v += s[blockDim.x - 1 - t];
    int sum = v;
    for (int d = 16; d > 0; d /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, d);
    unsigned int odd = __ballot_sync(0xffffffffu, v & 1);
    out[g] = sum + (int)__popc(odd);
    atomicAdd(total, (unsigned int)(v & 0xff));
}"""
    grid, detour = 5, 40
    x = np.random.default_rng(block).integers(-1000, 1000, grid * block).astype(np.int32)
    (_, out, total, _) = launch(src, grid, block, x, np.zeros(grid * block, np.int32), np.zeros(1, np.uint32),
                                np.int32(detour), shared_mem=4 * block)  # fmt: skip
    t = np.arange(block)
    v = x.reshape(grid, block).astype(np.int64)
    v[0] += sum((k * t) % 3 for k in range(detour))
    v = v + v[:, ::-1]
    warps = v.reshape(grid, block // 32, 32)
    sums = np.repeat(warps.sum(axis=2), 32, axis=1)
    odd = np.repeat((warps & 1).sum(axis=2), 32, axis=1)
    np.testing.assert_array_equal(out, (sums + odd).reshape(-1).astype(np.int32))
    assert int(total[0]) == int((v & 0xFF).sum()) % 2**32


@pytest.mark.parametrize("block", [32, 45, 128])
def test_lanes_that_loop_different_trips_reconverge(block: int, emulator_backend: course.Device) -> None:
    """Lanes leave a loop one by one and wait inside an outer loop, at pcs between the looping
    lanes' own: the lanes left behind must rejoin at the right instruction, every round."""
    src = r"""
extern "C" __global__ void k(const int* x, int* out, int n) {
    int t = threadIdx.x, acc = 0;
    for (int r = 0; r < 3; ++r) {
        if (t % 3 != 0) {
            for (int k = 0; k < (t % 37) + r; ++k) acc += x[(k * 5 + t) % n];
            acc ^= r;
        } else {
            acc += r * t;
        }
        acc *= 3;
    }
    out[t] = acc;
}"""
    n = 101
    x = np.random.default_rng(block).integers(-50, 50, n).astype(np.int32)
    (_, out, _) = launch(src, 1, block, x, np.zeros(block, np.int32), np.int32(n))
    want = []
    for t in range(block):
        acc = 0
        for r in range(3):
            if t % 3:
                acc += sum(int(x[(k * 5 + t) % n]) for k in range(t % 37 + r))
                acc ^= r
            else:
                acc += r * t
            acc *= 3
        want.append(acc)
    np.testing.assert_array_equal(out, np.array(want, np.int64).astype(np.int32))


# ---------------------------------------------------------------- malformed and unusual PTX

BASE = r"""
#include <cuda_fp16.h>
extern "C" __global__ void k(const float* x, float* y, __half* h, int n) {
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    s[threadIdx.x] = v * 2.0f;
    __syncthreads();
    v += s[(threadIdx.x + 1) & 63] + __shfl_down_sync(0xffffffffu, v, 1);
    if (i < n) { y[i] = sqrtf(fabsf(v)) + __popc(i); h[i] = __float2half(v); atomicAdd(&y[0], 1.0f); }
}
"""

UNUSUAL = [
    # registers without '%', declared inside braces, hex and float immediates, a label per line
    """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p) {
  .reg .b32 %r<4>; .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  { .reg .b32 t1; mov.b32 t1, 0xfffefffe; add.s32 %r1, t1, 0x7e; }
  L1: mov.f32 %r2, 0f3F800000;
  cvta.to.global.u64 %rd2, %rd1;
  st.global.u32 [%rd2], %r1;
  ret;
}""",
    # a 0d double immediate moved into an integer register, predicates without '%'
    """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p) {
  .reg .pred P; .reg .b64 %rd<4>; .reg .f64 %fd<2>;
  ld.param.u64 %rd1, [p];
  mov.b64 %rd2, 0d3FF0000000000000;
  setp.ne.s64 P, %rd2, 0;
  @P mov.f64 %fd1, 0d4000000000000000;
  cvta.to.global.u64 %rd3, %rd1;
  st.global.f64 [%rd3], %fd1;
  ret;
}""",
]


def _mutate(ptx: str, rng: np.random.Generator) -> str:
    lines = ptx.split("\n")
    body = [k for k, s in enumerate(lines) if s.strip() and not s.strip().startswith(("//", ".file", ".loc"))]
    k = int(rng.choice(body))
    s = lines[k]
    choice = int(rng.integers(0, 12))
    tokens = s.split()
    if choice == 0:
        lines.pop(k)
    elif choice == 1:
        lines.insert(k, s)
    elif choice == 2 and tokens:
        lines[k] = s.replace(
            tokens[0], tokens[0] + rng.choice([".x", ".f16x2", ".v8", ".sat", ".b128", ".rn"]), 1
        )
    elif choice == 3:
        lines[k] = s.replace(";", "", 1)
    elif choice == 4:
        lines[k] = re.sub(r"%r\d+", "%r999", s, count=1)
    elif choice == 5:
        lines[k] = re.sub(r"\d+", str(int(rng.integers(-(2**40), 2**40))), s, count=1)
    elif choice == 6:
        lines[k] = s.replace(",", "", 1)
    elif choice == 7:
        lines[k] = s + " {"
    elif choice == 8:
        lines[k] = s.replace("[", "[[", 1)
    elif choice == 9:
        lines[k] = re.sub(r"\$L__\w+", "$L__nowhere", s)
    elif choice == 10:
        lines[k] = s.replace("%", "", 1)
    else:
        lines[k] = "".join(rng.permutation(list(s)))
    return "\n".join(lines)


def _run_all(ptx: str) -> None:
    program = Program(ptx, BASE)
    for name, fn in program.module.entries.items():
        program.compiled(name)
        args = []
        for p in fn.params:
            if p.type in ("u64", "b64", "s64"):
                args.append((p.name, np.zeros(64, np.float32)))
            else:
                args.append((p.name, np.int32(40)))
        run_kernel(program, name, (2, 1, 1), (64, 1, 1), args, shared_mem=256, budget=3000)


def test_unusual_ptx_runs(emulator_backend: course.Device) -> None:
    for ptx in UNUSUAL:
        _run_all(ptx)


def test_fuzzed_ptx_raises_only_course_errors(emulator_backend: course.Device) -> None:
    ptx = course.compiler.compile_ptx(BASE).ptx
    _run_all(ptx)  # the unmutated kernel runs
    rng = np.random.default_rng(17)
    seen: dict[str, int] = {}
    for _ in range(400):
        bad = ptx
        for _ in range(int(rng.integers(1, 4))):
            bad = _mutate(bad, rng)
        try:
            with np.errstate(all="ignore"):
                _run_all(bad)
        except CourseError as exc:
            seen[type(exc).__name__] = seen.get(type(exc).__name__, 0) + 1
            if isinstance(exc, EmulatorDefect):
                assert "defect of the emulator" in str(exc) and "set_backend('cupy')" in str(exc)
        except Exception as exc:  # anything else reached a learner as a bare Python error
            raise AssertionError(f"{type(exc).__name__}: {exc}\n--- PTX ---\n{bad}") from exc
    assert seen, "no mutant raised anything: the fuzzer is not reaching the emulator"


def test_internal_error_names_kernel_instruction_and_line(
    emulator_backend: course.Device, monkeypatch
) -> None:
    """A defect inside an instruction's implementation reaches the learner as an EmulatorDefect."""
    from course.emulator.ops import integer as ops  # popc is built there

    src = r"""extern "C" __global__ void k(int* y) {
    y[threadIdx.x] = __popc(threadIdx.x);
}"""
    monkeypatch.setattr(ops, "popcount", lambda v: [][1])
    with pytest.raises(EmulatorDefect, match=r"kernel k at PTX line \d+ .*popc.*line 2 of kernel.cu"):
        launch(src, 1, 32, np.zeros(32, np.int32))


def test_unsupported_instruction_names_opcode_and_line(emulator_backend: course.Device) -> None:
    src = r"""extern "C" __global__ void k(int* y) {
    int v = threadIdx.x;
    asm volatile("bmsk.clamp.b32 %0, %0, 3;" : "+r"(v));
    y[threadIdx.x] = v;
}"""
    with pytest.raises(UnsupportedInstruction, match=r"bmsk\.clamp\.b32.*line 3 of kernel\.cu"):
        course.Module(code=src).get_function("k")


@pytest.mark.gpu
def test_a_kernel_with_an_instruction_the_emulator_lacks_runs_on_a_gpu(cupy_backend: course.Device) -> None:
    """The emulator's instruction set does not limit a GPU: get_function reads only the kernel's
    shared memory declarations there (an H200 refused mad24.hi.sat.s32 before: the whole kernel was
    built for the emulator first)."""
    src = r"""extern "C" __global__ void k(unsigned* y) {
    unsigned v = threadIdx.x;
    asm volatile("bmsk.clamp.b32 %0, %0, 3;" : "+r"(v));
    y[threadIdx.x] = v;
}"""
    y = course.zeros(32, np.uint32)
    course.Module(code=src).get_function("k")((1,), (32,), (y,))
    t = np.arange(32)
    want = [((1 << min(3, 32 - p)) - 1) << p & 0xFFFFFFFF for p in t.tolist()]  # PTX ISA: bmsk.clamp
    assert course.asnumpy(y).tolist() == want


@pytest.mark.parametrize("typ", ["u32", "s32"])
def test_bfe_field_as_wide_as_the_word(typ: str, emulator_backend: course.Device) -> None:
    """bfe.{u,s}32 with a length of 32 or more takes the whole word from pos on (mutation survivor)."""
    src = f"""extern "C" __global__ void k(const unsigned* x, const unsigned* pos, const unsigned* len, unsigned* y) {{
    int i = threadIdx.x; unsigned v;
    asm("bfe.{typ} %0, %1, %2, %3;" : "=r"(v) : "r"(x[i]), "r"(pos[i]), "r"(len[i]));
    y[i] = v;
}}"""
    x = np.array([0xDEADBEEF, 0x12345678, 0x80000001, 0xFFFFFFFF, 0x7FFFFFFF], np.uint32)
    pos = np.array([0, 0, 4, 0, 31], np.uint32)
    ln = np.array([32, 40, 32, 255, 32], np.uint32)
    *_, y = launch(src, 1, len(x), x, pos, ln, np.zeros(len(x), np.uint32))
    want = [int(v) >> int(p) for v, p in zip(x, pos)]
    if typ == "s32":  # bits past the field copy its top bit (the word's sign here)
        want = [(w | (0xFFFFFFFF << (32 - int(p)) & 0xFFFFFFFF)) if int(v) >> 31 else w
                for w, v, p in zip(want, x, pos)]  # fmt: skip
    np.testing.assert_array_equal(y, np.array(want, np.uint32))


def test_bfi_field_as_wide_as_the_word(emulator_backend: course.Device) -> None:
    """bfi.b32 with a length of 32 or more inserts the whole of a from pos on (mutation survivor)."""
    src = r"""extern "C" __global__ void k(const unsigned* a, const unsigned* b, const unsigned* pos,
                                     const unsigned* len, unsigned* y) {
    int i = threadIdx.x; unsigned v;
    asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(v) : "r"(a[i]), "r"(b[i]), "r"(pos[i]), "r"(len[i]));
    y[i] = v;
}"""
    a = np.array([0xDEADBEEF, 0x12345679, 0xFFFFFFFF, 0x0000000F], np.uint32)
    b = np.array([0x11111111, 0xFFFFFFFF, 0x00000000, 0xF0F0F0F0], np.uint32)
    pos = np.array([0, 0, 8, 4], np.uint32)
    ln = np.array([32, 255, 32, 4], np.uint32)
    *_, y = launch(src, 1, len(a), a, b, pos, ln, np.zeros(len(a), np.uint32))
    np.testing.assert_array_equal(y, np.array([0xDEADBEEF, 0x12345679, 0xFFFFFF00, 0xF0F0F0F0], np.uint32))


@pytest.mark.parametrize("cmp", ["num", "nan"])
def test_setp_num_and_nan_with_one_nan_operand(cmp: str, emulator_backend: course.Device) -> None:
    """setp.num: both operands are numbers; setp.nan: at least one is NaN (mutation survivor)."""
    src = f"""extern "C" __global__ void k(const float* a, const float* b, unsigned* y) {{
    int i = threadIdx.x; unsigned v;
    asm("{{ .reg .pred p; setp.{cmp}.f32 p, %1, %2; selp.u32 %0, 1, 0, p; }}" : "=r"(v) : "f"(a[i]), "f"(b[i]));
    y[i] = v;
}}"""
    a = np.array([1.0, np.nan, 2.0, np.nan, -np.inf], np.float32)
    b = np.array([3.0, 4.0, np.nan, np.nan, np.inf], np.float32)
    *_, y = launch(src, 1, len(a), a, b, np.zeros(len(a), np.uint32))
    either = np.isnan(a) | np.isnan(b)
    np.testing.assert_array_equal(y, (either if cmp == "nan" else ~either).astype(np.uint32))


@pytest.mark.parametrize("ftz", [True, False])
def test_f16_ftz_flushes_a_subnormal_result_to_a_signed_zero(
    ftz: bool, emulator_backend: course.Device
) -> None:
    """mul.ftz.f16: a product below the smallest normal half (2^-14) becomes ±0; without .ftz
    it is kept as a subnormal (mutation survivor)."""
    op = "mul.ftz.f16" if ftz else "mul.f16"
    src = f"""extern "C" __global__ void k(const unsigned short* a, const unsigned short* b, unsigned short* y) {{
    int i = threadIdx.x; unsigned short v;
    asm("{op} %0, %1, %2;" : "=h"(v) : "h"(a[i]), "h"(b[i]));
    y[i] = v;
}}"""
    a = np.array([2.0**-10, -(2.0**-10), 2.0**-7, 3.0, 0.5, 3 * 2.0**-12], np.float16)
    b = np.array(
        [2.0**-10, 2.0**-8, 2.0**-7, 2.0**-20, -(2.0**-14), 2.0**-12], np.float16
    )  # 2^-7 * 2^-7: normal
    *_, y = launch(src, 1, len(a), a.view(np.uint16), b.view(np.uint16), np.zeros(len(a), np.uint16))
    want = (a.astype(np.float64) * b).astype(np.float16)  # exact products, rounded once
    assert (np.abs(want) < 2.0**-14).sum() == 5 and (want < 0).sum() == 2  # five subnormal, two negative
    assert want[-1].view(np.uint16) == 3  # an odd one: the flush clears every bit but the sign
    if ftz:
        want = np.where(np.abs(want) < 2.0**-14, np.copysign(np.float16(0), want), want)
    np.testing.assert_array_equal(y, want.view(np.uint16))


@pytest.mark.parametrize("boolop", ["and", "or", "xor"])
def test_setp_combines_with_a_predicate_operand(boolop: str, emulator_backend: course.Device) -> None:
    """setp.lt.{and,or,xor}.s32 p, a, b, c: p = (a < b) BOOLOP c (mutation survivor)."""
    src = f"""extern "C" __global__ void k(const int* a, const int* b, const int* c, unsigned* y) {{
    int i = threadIdx.x; unsigned v;
    asm("{{ .reg .pred q, p; setp.ne.s32 q, %3, 0; setp.lt.{boolop}.s32 p, %1, %2, q; selp.u32 %0, 1, 0, p; }}"
        : "=r"(v) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
    y[i] = v;
}}"""
    a = np.array([1, 1, 5, 5, -3], np.int32)
    b = np.array([2, 2, 2, 2, -4], np.int32)
    c = np.array([0, 1, 0, 1, 1], np.int32)
    *_, y = launch(src, 1, len(a), a, b, c, np.zeros(len(a), np.uint32))
    want = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[boolop](a < b, c != 0)
    np.testing.assert_array_equal(y, want.astype(np.uint32))


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("nan", [True, False])
def test_float_min_max_with_and_without_nan_propagation(
    op: str, nan: bool, emulator_backend: course.Device
) -> None:
    """{min,max}{.NaN}.f32: .NaN returns NaN when either operand is NaN; without it, the other
    operand (mutation survivor)."""
    opcode = f"{op}{'.NaN' if nan else ''}.f32"
    src = f"""extern "C" __global__ void k(const float* a, const float* b, float* y) {{
    int i = threadIdx.x; float v;
    asm("{opcode} %0, %1, %2;" : "=f"(v) : "f"(a[i]), "f"(b[i]));
    y[i] = v;
}}"""
    a = np.array([1.0, np.nan, 3.0, np.nan, -2.0], np.float32)
    b = np.array([2.0, 4.0, np.nan, np.nan, -5.0], np.float32)
    *_, y = launch(src, 1, len(a), a, b, np.zeros(len(a), np.float32))
    pick = np.minimum(a, b) if op == "min" else np.maximum(a, b)  # NaN wherever either is NaN
    if not nan:
        pick = np.where(np.isnan(a), b, np.where(np.isnan(b), a, pick))
    np.testing.assert_array_equal(y, pick)


@pytest.mark.parametrize("mode", ["f4e", "b4e"])
def test_prmt_forward_and_backward_4_extract(mode: str, emulator_backend: course.Device) -> None:
    """prmt.b32.f4e / .b4e: four bytes of the 8-byte {b, a} taken forward (or backward) from the
    byte that c's two low bits name (mutation survivor)."""
    src = f"""extern "C" __global__ void k(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* y) {{
    int i = threadIdx.x; unsigned v;
    asm("prmt.b32.{mode} %0, %1, %2, %3;" : "=r"(v) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
    y[i] = v;
}}"""
    a = np.full(8, 0x33221100, np.uint32)
    b = np.full(8, 0x77665544, np.uint32)
    c = np.array([0, 1, 2, 3, 4, 5, 0xFFFFFFFE, 0xFFFFFFFF], np.uint32)  # only bits 1:0 count
    *_, y = launch(src, 1, len(a), a, b, c, np.zeros(len(a), np.uint32))
    both = (b.astype(np.uint64) << np.uint64(32)) | a  # byte j of {b, a} is 0x11 * j here
    s = (c & 3).astype(np.uint64)
    if mode == "f4e":  # bytes s, s+1, s+2, s+3 (low to high)
        want = (both >> (np.uint64(8) * s)) & np.uint64(0xFFFFFFFF)
    else:  # bytes s, s-1, s-2, s-3 (mod 8), low to high: 0 -> {5 6 7 0} as the PTX ISA lists them
        picks = [(s - np.uint64(k)) % np.uint64(8) for k in range(4)]
        want = sum(
            ((both >> (np.uint64(8) * p)) & np.uint64(0xFF)) << np.uint64(8 * k) for k, p in enumerate(picks)
        )
    np.testing.assert_array_equal(y, want.astype(np.uint32))


@pytest.mark.parametrize("typ", ["u32", "s32"])
def test_mad_wide_adds_a_64_bit_addend(typ: str, emulator_backend: course.Device) -> None:
    """mad.wide.{u,s}32 d, a, b, c: the 64-bit product of two 32-bit words plus a 64-bit c, whose
    upper half counts (mutation survivor: c read as a 32-bit word)."""
    w = "long long" if typ == "s32" else "unsigned long long"
    h = "int" if typ == "s32" else "unsigned"
    src = f"""extern "C" __global__ void k(const {h}* a, const {h}* b, const {w}* c, {w}* y) {{
    int i = threadIdx.x; {w} v;
    asm("mad.wide.{typ} %0, %1, %2, %3;" : "=l"(v) : "r"(a[i]), "r"(b[i]), "l"(c[i]));
    y[i] = v;
}}"""
    small, big = (np.int32, np.int64) if typ == "s32" else (np.uint32, np.uint64)
    a = np.array([3, 70000, 0x7FFFFFFF, 2, 1], small)
    b = np.array([5, 70000, 2, 0x7FFFFFFF, 0], small)
    c = np.array([1, 2**40 + 7, 3 * 2**33, -(2**35) if typ == "s32" else 2**63, 2**32], big)
    if typ == "s32":
        a[1], b[2] = -70000, -2
    *_, y = launch(src, 1, len(a), a, b, c, np.zeros(len(a), big))
    want = [int(x) * int(z) + int(v) for x, z, v in zip(a, b, c)]
    np.testing.assert_array_equal(y, np.array(want, big))


@pytest.mark.parametrize("op", ["min", "max"])
def test_float_red_min_max_with_many_lanes_on_one_element(op: str, emulator_backend: course.Device) -> None:
    """red.global.{min,max}.f32 with 32 lanes on each of two elements: the least (greatest) value
    reaches memory and a NaN operand loses to a number (mutation survivor: the float table's name)."""
    src = f"""extern "C" __global__ void k(const float* x, float* y) {{
    int i = threadIdx.x;
    asm volatile("red.global.{op}.f32 [%0], %1;" :: "l"(y + i % 2), "f"(x[i]) : "memory");
}}"""
    x = np.random.default_rng(5).uniform(-100, 100, 64).astype(np.float32)
    x[[2, 7]] = np.nan  # one NaN in each element's lanes
    *_, y = launch(src, 1, len(x), x, np.zeros(2, np.float32))
    pick = np.fmin if op == "min" else np.fmax  # the memory's 0 takes part too
    np.testing.assert_array_equal(y, [pick.reduce(np.r_[0, x[0::2]]), pick.reduce(np.r_[0, x[1::2]])])


def test_cvt_sat_from_half_to_float_clamps_to_zero_and_one(emulator_backend: course.Device) -> None:
    """cvt.sat.f32.f16: the value clamped to [0, 1], NaN made 0 (mutation survivor: lower bound 1)."""
    src = r"""extern "C" __global__ void k(const unsigned short* x, float* y) {
    int i = threadIdx.x; float v;
    asm("cvt.sat.f32.f16 %0, %1;" : "=f"(v) : "h"(x[i]));
    y[i] = v;
}"""
    x = np.array([-1.0, -0.0, 0.0, 0.25, 0.5, 1.0, 2.0, np.inf, -np.inf, np.nan], np.float16)
    *_, y = launch(src, 1, len(x), x.view(np.uint16), np.zeros(len(x), np.float32))
    want = np.array([0.0, 0.0, 0.0, 0.25, 0.5, 1.0, 1.0, 1.0, 0.0, 0.0], np.float32)
    np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))  # +0, never -0


@pytest.mark.parametrize("lanes", [2, 4])
def test_vavrg_is_the_rounded_up_average_of_each_lane(lanes: int, emulator_backend: course.Device) -> None:
    """vavrg{2,4}.u32.u32.u32: each 16-bit (8-bit) lane of d is (a + b + 1) >> 1 of that lane
    (mutation survivor: the shift turned left)."""
    src = f"""extern "C" __global__ void k(const unsigned* a, const unsigned* b, unsigned* y) {{
    int i = threadIdx.x; unsigned v;
    asm("vavrg{lanes}.u32.u32.u32 %0, %1, %2, %3;" : "=r"(v) : "r"(a[i]), "r"(b[i]), "r"(0));
    y[i] = v;
}}"""
    rng = np.random.default_rng(lanes)
    a = np.r_[rng.integers(0, 2**32, 30, dtype=np.uint64), 0xFFFFFFFF, 0].astype(np.uint32)
    b = np.r_[rng.integers(0, 2**32, 30, dtype=np.uint64), 0xFFFFFFFF, 1].astype(np.uint32)
    *_, y = launch(src, 1, len(a), a, b, np.zeros(len(a), np.uint32))
    bits = 32 // lanes
    want = np.zeros(len(a), np.uint64)
    for k in range(lanes):
        la, lb = ((x.astype(np.uint64) >> np.uint64(bits * k)) & np.uint64((1 << bits) - 1) for x in (a, b))
        want |= ((la + lb + np.uint64(1)) >> np.uint64(1)) << np.uint64(bits * k)
    np.testing.assert_array_equal(y, want.astype(np.uint32))


@pytest.mark.parametrize("shiftamt", [False, True])
def test_bfind_of_a_signed_word_finds_its_top_non_sign_bit(
    shiftamt: bool, emulator_backend: course.Device
) -> None:
    """bfind{.shiftamt}.s32: the position of the most significant bit that differs from the sign
    (.shiftamt: its distance from bit 31); 0xFFFFFFFF for 0 and -1 (mutation survivor: 0 taken for
    negative)."""
    op = "bfind.shiftamt.s32" if shiftamt else "bfind.s32"
    src = f"""extern "C" __global__ void k(const int* x, unsigned* y) {{
    int i = threadIdx.x; unsigned v;
    asm("{op} %0, %1;" : "=r"(v) : "r"(x[i]));
    y[i] = v;
}}"""
    x = np.array([0, -1, 1, -2, 5, -6, 0x40000000, -(2**31), 2**31 - 1], np.int32)
    *_, y = launch(src, 1, len(x), x, np.zeros(len(x), np.uint32))
    pos = np.array([-1, -1, 0, 0, 2, 2, 30, 30, 30])
    want = np.where(pos < 0, 0xFFFFFFFF, 31 - pos if shiftamt else pos)
    np.testing.assert_array_equal(y, want.astype(np.uint32))


@pytest.mark.parametrize("ftz", [False, True])
def test_cvt_from_double_to_float_keeps_subnormals_unless_ftz(
    ftz: bool, emulator_backend: course.Device
) -> None:
    """cvt.rn.f32.f64 rounds a double below 2^-126 to a subnormal float; .ftz flushes it to a zero
    of its sign (mutation survivor: flushed without .ftz too)."""
    op = "cvt.rn.ftz.f32.f64" if ftz else "cvt.rn.f32.f64"
    src = f"""extern "C" __global__ void k(const double* x, float* y) {{
    int i = threadIdx.x; float v;
    asm("{op} %0, %1;" : "=f"(v) : "d"(x[i]));
    y[i] = v;
}}"""
    x = np.array([1e-40, -1e-42, 2.0**-149, 2.0**-126, -(2.0**-126), 1.0, 0.0], np.float64)
    *_, y = launch(src, 1, len(x), x, np.zeros(len(x), np.float32))
    want = x.astype(np.float32)
    if ftz:
        want[:3] = np.copysign(np.float32(0), want[:3])
    assert np.count_nonzero(want[:3]) == (0 if ftz else 3)
    np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))


def test_every_block_runs_on_an_sm_below_nsmid(emulator_backend: course.Device) -> None:
    """%smid lies in 0 ... %nsmid - 1 (the PTX ISA's range), and a grid larger than the GPU uses
    every SM (mutation survivor: smid = block % 133 with 132 SMs)."""
    src = r"""extern "C" __global__ void k(unsigned* sm, unsigned* count) {
    unsigned s, n;
    asm("mov.u32 %0, %%smid;" : "=r"(s));
    asm("mov.u32 %0, %%nsmid;" : "=r"(n));
    if (threadIdx.x == 0) { sm[blockIdx.x] = s; count[0] = n; }
}"""
    sm, count = launch(src, 300, 32, np.zeros(300, np.uint32), np.zeros(1, np.uint32))
    assert sm.max() < count[0]
    assert len(np.unique(sm)) == count[0]


def test_lane_masks_name_the_lanes_below_at_and_above_each_lane(emulator_backend: course.Device) -> None:
    """%lanemask_lt, _le, _eq, _ge, _gt of lane l: bits below l, up to l, l alone, from l, above l
    (mutation survivor: _le one off)."""
    src = r"""extern "C" __global__ void k(unsigned* y) {
    unsigned lt, le, eq, ge, gt;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
    asm("mov.u32 %0, %%lanemask_le;" : "=r"(le));
    asm("mov.u32 %0, %%lanemask_eq;" : "=r"(eq));
    asm("mov.u32 %0, %%lanemask_ge;" : "=r"(ge));
    asm("mov.u32 %0, %%lanemask_gt;" : "=r"(gt));
    unsigned* row = y + 5 * threadIdx.x;
    row[0] = lt; row[1] = le; row[2] = eq; row[3] = ge; row[4] = gt;
}"""
    (y,) = launch(src, 1, 64, np.zeros(5 * 64, np.uint32))
    lane = np.arange(64, dtype=np.uint64) % 32
    below = (np.uint64(1) << lane) - np.uint64(1)
    bit = np.uint64(1) << lane
    full = np.uint64(0xFFFFFFFF)
    want = np.stack([below, below | bit, bit, full & ~below, full & ~(below | bit)], axis=1)
    np.testing.assert_array_equal(y.reshape(64, 5), want.astype(np.uint32))


@pytest.mark.parametrize("op", ["min", "max"])
@pytest.mark.parametrize("typ", ["f16", "bf16"])
def test_half_min_max_order_minus_zero_below_plus_zero(
    op: str, typ: str, emulator_backend: course.Device
) -> None:
    """{min,max}.{f16,bf16}: -0 < +0, in either operand order (mutation survivor: the sign test of
    equal values always false)."""
    src = f"""extern "C" __global__ void k(const unsigned short* a, const unsigned short* b, unsigned short* y) {{
    int i = threadIdx.x; unsigned short v;
    asm("{op}.{typ} %0, %1, %2;" : "=h"(v) : "h"(a[i]), "h"(b[i]));
    y[i] = v;
}}"""
    plus, minus, one = 0x0000, 0x8000, 0x3C00 if typ == "f16" else 0x3F80
    a = np.array([minus, plus, minus, plus, one], np.uint16)
    b = np.array([plus, minus, minus, plus, minus], np.uint16)
    *_, y = launch(src, 1, len(a), a, b, np.zeros(len(a), np.uint16))
    lo, hi = [minus, minus, minus, plus, minus], [plus, plus, minus, plus, one]
    np.testing.assert_array_equal(y, np.array(lo if op == "min" else hi, np.uint16))


@pytest.mark.parametrize("lanes", [2, 4])
@pytest.mark.parametrize("typ", ["u32", "s32"])
def test_video_add_sat_clamps_each_lane_to_its_range(
    lanes: int, typ: str, emulator_backend: course.Device
) -> None:
    """vadd{2,4}.T.T.T.sat: each 16-bit (8-bit) lane's sum clamped to the lane's range, its largest
    value included (mutation survivor: the top of the range one short)."""
    src = f"""extern "C" __global__ void k(const unsigned* a, const unsigned* b, unsigned* y) {{
    int i = threadIdx.x; unsigned v;
    asm("vadd{lanes}.{typ}.{typ}.{typ}.sat %0, %1, %2, %3;" : "=r"(v) : "r"(a[i]), "r"(b[i]), "r"(0));
    y[i] = v;
}}"""
    rng = np.random.default_rng(lanes)
    a = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    *_, y = launch(src, 1, len(a), a, b, np.zeros(len(a), np.uint32))
    bits, signed = 32 // lanes, typ == "s32"
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    want = np.zeros(len(a), np.uint64)
    clamped = 0
    for k in range(lanes):
        la, lb = (((x.astype(np.int64) >> (bits * k)) & ((1 << bits) - 1)) for x in (a, b))
        if signed:
            la, lb = (np.where(v >= 1 << (bits - 1), v - (1 << bits), v) for v in (la, lb))
        s = la + lb
        clamped += int(((s > hi) | (s < lo)).sum())
        want |= (np.clip(s, lo, hi) & ((1 << bits) - 1)).astype(np.uint64) << np.uint64(bits * k)
    assert clamped > 10  # random lanes often leave the range: the clamp is reached
    np.testing.assert_array_equal(y, want.astype(np.uint32))


@pytest.mark.parametrize("boolop", ["", "and", "or", "xor"])
def test_setp_with_two_destinations_writes_the_complement_to_the_second(
    boolop: str, emulator_backend: course.Device
) -> None:
    """setp.lt{.BoolOp}.s32 p|q, a, b{, c}: p = BoolOp(a < b, c), q = BoolOp(!(a < b), c) (mutation
    survivor: q's writer taken from a third destination)."""
    op = f"setp.lt.{boolop}.s32 p|q, %2, %3, c;" if boolop else "setp.lt.s32 p|q, %2, %3;"
    src = f"""extern "C" __global__ void k(const int* a, const int* b, const int* c, unsigned* y, unsigned* z) {{
    int i = threadIdx.x; unsigned v, w;
    asm("{{ .reg .pred c, p, q; setp.ne.s32 c, %4, 0; {op} selp.u32 %0, 1, 0, p; selp.u32 %1, 1, 0, q; }}"
        : "=r"(v), "=r"(w) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
    y[i] = v; z[i] = w;
}}"""
    a = np.array([1, 1, 5, 5, -3, 7], np.int32)
    b = np.array([2, 2, 2, 2, -4, 7], np.int32)
    c = np.array([0, 1, 0, 1, 1, 0], np.int32)
    *_, y, z = launch(src, 1, len(a), a, b, c, np.zeros(len(a), np.uint32), np.zeros(len(a), np.uint32))
    t, cc = a < b, c != 0
    f = {"": lambda x, _: x, "and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[boolop]
    np.testing.assert_array_equal(y, f(t, cc).astype(np.uint32))
    np.testing.assert_array_equal(z, f(~t, cc).astype(np.uint32))


@pytest.mark.parametrize("typ", ["f16", "bf16"])
def test_cvt_sat_to_a_half_clamps_to_zero_and_one(typ: str, emulator_backend: course.Device) -> None:
    """cvt.rn.sat.{f16,bf16}.f32: the value clamped to [0, 1] in the 16-bit format, NaN made 0
    (mutation survivor: bf16's 1.0 one bit off)."""
    src = f"""extern "C" __global__ void k(const float* x, unsigned short* y) {{
    int i = threadIdx.x; unsigned short v;
    asm("cvt.rn.sat.{typ}.f32 %0, %1;" : "=h"(v) : "f"(x[i]));
    y[i] = v;
}}"""
    x = np.array([-2.0, -0.0, 0.0, 0.25, 0.5, 1.0, 1.5, 3e38, np.inf, np.nan], np.float32)
    *_, y = launch(src, 1, len(x), x, np.zeros(len(x), np.uint16))
    want = np.clip(np.nan_to_num(x, nan=0.0, posinf=1.0), 0, 1) + np.float32(0)  # +0, never -0
    if typ == "f16":
        bits = want.astype(np.float16).view(np.uint16)
    else:
        bits = (want.view(np.uint32) >> 16).astype(np.uint16)  # 0, 0.25, 0.5 and 1 are exact in bf16
    np.testing.assert_array_equal(y, bits)


def test_mad_hi_sat_clamps_the_sum_to_the_s32_range(emulator_backend: course.Device) -> None:
    """mad.hi.sat.s32: the upper half of a * b plus c, clamped to the s32 range (it wrapped around;
    found reading a mutation survivor)."""
    src = r"""extern "C" __global__ void k(const int* a, const int* b, const int* c, int* y) {
    int i = threadIdx.x; int v;
    asm("mad.hi.sat.s32 %0, %1, %2, %3;" : "=r"(v) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
    y[i] = v;
}"""
    top, bottom = 2**31 - 1, -(2**31)
    a = np.array([top, bottom, 5, bottom, 123456789], np.int32)
    b = np.array([top, top, 7, bottom, -987654321], np.int32)
    c = np.array([top, bottom, 3, -5, 1000], np.int32)
    *_, y = launch(src, 1, len(a), a, b, c, np.zeros(len(a), np.int32))
    want = [max(bottom, min(top, ((int(x) * int(z)) >> 32) + int(w))) for x, z, w in zip(a, b, c)]
    assert want[:2] == [top, bottom]  # the first two saturate
    np.testing.assert_array_equal(y, np.array(want, np.int32))


@pytest.mark.parametrize("op", ["add", "sub"])
def test_packed_s16x2_sat_clamps_each_half(op: str, emulator_backend: course.Device) -> None:
    """{add,sub}.sat.s16x2: each signed 16-bit half clamped to -32768 ... 32767 (mutation survivor:
    the top made 32768, which wraps to -32768)."""
    src = f"""extern "C" __global__ void k(const unsigned* a, const unsigned* b, unsigned* y) {{
    int i = threadIdx.x; unsigned v;
    asm("{op}.sat.s16x2 %0, %1, %2;" : "=r"(v) : "r"(a[i]), "r"(b[i]));
    y[i] = v;
}}"""
    rng = np.random.default_rng(16)
    a = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    *_, y = launch(src, 1, len(a), a, b, np.zeros(len(a), np.uint32))
    f = np.add if op == "add" else np.subtract
    want = np.zeros(len(a), np.uint32)
    for k in range(2):
        la, lb = (
            ((x >> np.uint32(16 * k)) & np.uint32(0xFFFF)).astype(np.uint16).view(np.int16) for x in (a, b)
        )
        r = f(la.astype(np.int64), lb)
        assert (r > 32767).any() and (r < -32768).any()
        want |= (np.clip(r, -32768, 32767).astype(np.int16).view(np.uint16).astype(np.uint32)) << np.uint32(
            16 * k
        )
    np.testing.assert_array_equal(y, want)


def test_match_any_in_a_partial_last_warp(emulator_backend: course.Device) -> None:
    """__match_any_sync in a block whose last warp has 16 threads: each lane gets the lanes of its
    member mask holding its value (mutation survivor: a lookup past the last thread)."""
    src = r"""extern "C" __global__ void k(const int* v, unsigned* y) {
    int i = threadIdx.x;
    unsigned mask = i < 32 ? 0xFFFFFFFFu : 0x0000FFFFu;  // the threads the warp has
    y[i] = __match_any_sync(mask, v[i]);
}"""
    v = (np.arange(48) % 3).astype(np.int32)
    (_, y) = launch(src, 1, 48, v, np.zeros(48, np.uint32))
    want = []
    for i in range(48):
        w = range(32) if i < 32 else range(32, 48)
        want.append(sum(1 << (j % 32) for j in w if v[j] == v[i]))
    np.testing.assert_array_equal(y, np.array(want, np.uint32))


@pytest.mark.parametrize("typ", ["u32", "s32"])
@pytest.mark.parametrize("half", ["lo", "hi"])
def test_mad24_adds_c_to_the_product_of_the_low_24_bits(
    typ: str, half: str, emulator_backend: course.Device
) -> None:
    """mad24.{lo,hi}.{u32,s32}: the 48-bit product of the low 24 bits (sign-extended for .s32), its
    low 32 bits (.lo) or bits 16-47 (.hi), plus c (mutation survivor: c subtracted)."""
    src = f"""extern "C" __global__ void k(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* y) {{
    int i = threadIdx.x; unsigned v;
    asm("mad24.{half}.{typ} %0, %1, %2, %3;" : "=r"(v) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
    y[i] = v;
}}"""
    rng = np.random.default_rng(24)
    a, b, c = (rng.integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32) for _ in range(3))
    a[:4] = [0x00800000, 0xFF7FFFFF, 0x00FFFFFF, 0x12800000]  # low 24 bits: -2^23, 2^23 - 1, -1, -2^23
    *_, y = launch(src, 1, len(a), a, b, c, np.zeros(len(a), np.uint32))

    def low24(x: np.ndarray) -> np.ndarray:
        v = x.astype(np.int64) & 0xFFFFFF
        return np.where(v >= 0x800000, v - 0x1000000, v) if typ == "s32" else v

    p = low24(a) * low24(b)
    want = ((p >> 16 if half == "hi" else p) + c.astype(np.int64)) & 0xFFFFFFFF
    np.testing.assert_array_equal(y, want.astype(np.uint32))


@pytest.mark.parametrize("ctype", ["s32", "f32"])
def test_slct_takes_a_where_c_is_zero_or_more(ctype: str, emulator_backend: course.Device) -> None:
    """slct.s32.{s32,f32} d, a, b, c: a where c >= 0 (0 and -0.0 included), else b (mutation
    survivor: c >= 1)."""
    ct, reg = ("int", "r") if ctype == "s32" else ("float", "f")
    src = f"""extern "C" __global__ void k(const int* a, const int* b, const {ct}* c, int* y) {{
    int i = threadIdx.x; int v;
    asm("slct.s32.{ctype} %0, %1, %2, %3;" : "=r"(v) : "r"(a[i]), "r"(b[i]), "{reg}"(c[i]));
    y[i] = v;
}}"""
    a, b = np.arange(10, 16, dtype=np.int32), np.arange(20, 26, dtype=np.int32)
    c = np.array([0, 1, -1, 5, -7, 0], np.int32)
    if ctype == "f32":
        c = np.array([0.0, 0.5, -0.5, 3.0, -np.inf, -0.0], np.float32)
    *_, y = launch(src, 1, len(a), a, b, c, np.zeros(len(a), np.int32))
    np.testing.assert_array_equal(y, np.where(c >= 0, a, b))


def test_a_one_element_vector_operand_reads_its_element() -> None:
    """`{%r1}` as a mov's source or destination is %r1 (mutation survivors: the element taken from the
    wrong place; the destination not taken)."""
    from course.emulator import run_kernel

    ptx = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry one(.param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    add.u32 %r1, %r1, 7;
    mov.b32 %r2, {%r1};
    mov.b32 {%r1}, %r2;
    add.u32 %r2, %r1, 1;
    st.global.u32 [%rd2], %r2;
    ret;
}
"""
    out = np.zeros(1, np.uint32)
    run_kernel(Program(ptx, ""), "one", (1, 1, 1), (1, 1, 1), [("out", out)])
    assert out[0] == 8  # ptxas takes {%r} on either side of a mov (checked with ptxas 13, sm_90)


def test_half_ftz_flushes_subnormal_operands_first(emulator_backend: course.Device) -> None:
    """add.ftz.f16: a subnormal operand counts as a zero of its sign, so a subnormal plus 0 is 0
    (mutation survivor: f16's smallest normal taken as 2^-15)."""
    src = r"""extern "C" __global__ void k(const unsigned short* a, const unsigned short* b, unsigned short* y) {
    int i = threadIdx.x; unsigned short v;
    asm("add.ftz.f16 %0, %1, %2;" : "=h"(v) : "h"(a[i]), "h"(b[i]));
    y[i] = v;
}"""
    a = np.array([1.5 * 2.0**-15, 2.0**-15, 2.0**-24, -(1.75 * 2.0**-15), 2.0**-14, 1.0], np.float16)
    b = np.zeros(len(a), np.float16)
    *_, y = launch(src, 1, len(a), a.view(np.uint16), b.view(np.uint16), np.zeros(len(a), np.uint16))
    want = np.where(np.abs(a) < np.float16(2.0**-14), np.float16(0), a)  # -x + 0 is +0 as well
    np.testing.assert_array_equal(y, want.view(np.uint16))


def test_signed_bytes_and_shorts_are_sign_extended_into_wider_registers(
    emulator_backend: course.Device,
) -> None:
    """A signed char or short loaded into a wider register keeps its value (-1 stays -1, not 255):
    the register holds the loaded integer, sign-extended (mutation survivor: its bits zero-extended)."""
    src = r"""extern "C" __global__ void k(const signed char* c, const short* s, int* y) {
    int i = threadIdx.x;
    y[i] = c[i] * 3 + s[i];
}"""
    c = np.array([-1, -128, 127, 0, -7, 5], np.int8)
    s = np.array([-1, -32768, 32767, 1, -300, 300], np.int16)
    *_, y = launch(src, 1, len(c), c, s, np.zeros(len(c), np.int32))
    np.testing.assert_array_equal(y, c.astype(np.int32) * 3 + s)


@pytest.mark.parametrize("how", ["and", "or", "add", "min", "max"])
def test_a_warp_reduction_over_part_of_the_warp_combines_its_members_only(
    how: str, emulator_backend: course.Device
) -> None:
    """__reduce_*_sync with a member mask of 16 lanes: each member gets the reduction over the members
    (mutation survivor: the and's identity for the lanes left out made 0)."""
    fn = {"and": "__reduce_and_sync", "or": "__reduce_or_sync", "add": "__reduce_add_sync",
          "min": "__reduce_min_sync", "max": "__reduce_max_sync"}[how]  # fmt: skip
    src = f"""extern "C" __global__ void k(const unsigned* v, unsigned* y) {{
    int i = threadIdx.x;
    if ((i & 31) < 16) y[i] = {fn}(0x0000FFFFu, v[i]);
}}"""
    v = np.random.default_rng(3).integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    v[:16] |= np.uint32(0x80000001)  # bits every member of warp 0 has: the and is not 0
    *_, y = launch(src, 1, 64, v, np.zeros(64, np.uint32))
    f = {"and": np.bitwise_and, "or": np.bitwise_or, "add": np.add, "min": np.minimum, "max": np.maximum}[how]
    for w in range(2):
        members = v[32 * w : 32 * w + 16]
        np.testing.assert_array_equal(y[32 * w : 32 * w + 16], f.reduce(members, dtype=np.uint32))


def test_a_vector_where_an_instruction_takes_one_value_is_unsupported() -> None:
    """`add.u32 %r2, {%r1, %r1}, 1` is refused with a course error that names the operand, not run
    on the vector's first element (mutation survivor)."""
    ptx = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry two(.param .u64 out)
{
    .reg .b32 %r<3>;
    mov.u32 %r1, %tid.x;
    add.u32 %r2, {%r1, %r1}, 1;
    ret;
}
"""
    with pytest.raises(UnsupportedInstruction, match="cannot read operand"):
        run_kernel(Program(ptx, ""), "two", (1, 1, 1), (1, 1, 1), [("out", np.zeros(1, np.uint32))])


@pytest.mark.parametrize("ftype", ["f32", "f64"])
def test_testp_normal_and_subnormal_at_their_boundary(ftype: str, emulator_backend: course.Device) -> None:
    """testp.{normal,subnormal,finite}: the smallest normal is normal, the largest subnormal is
    subnormal, infinity and NaN neither, and ±0 normal, as an H200 says (tests/emulator/ptx_truth.json;
    mutation survivor: |a| > tiny for normal)."""
    ct, reg, dt = ("float", "f", np.float32) if ftype == "f32" else ("double", "d", np.float64)
    src = f"""extern "C" __global__ void k(const {ct}* x, int* y) {{
    int i = threadIdx.x; int n, s, f;
    asm("{{ .reg .pred p; testp.normal.{ftype} p, %1; selp.s32 %0, 1, 0, p; }}" : "=r"(n) : "{reg}"(x[i]));
    asm("{{ .reg .pred p; testp.subnormal.{ftype} p, %1; selp.s32 %0, 1, 0, p; }}" : "=r"(s) : "{reg}"(x[i]));
    asm("{{ .reg .pred p; testp.finite.{ftype} p, %1; selp.s32 %0, 1, 0, p; }}" : "=r"(f) : "{reg}"(x[i]));
    y[i] = n | (s << 1) | (f << 2);
}}"""
    tiny = np.finfo(dt).tiny
    below = np.nextafter(tiny, dt(0))
    x = np.array([tiny, -tiny, below, -below, 0.0, -0.0, np.inf, np.nan, 1.5, np.finfo(dt).max], dt)
    *_, y = launch(src, 1, len(x), x, np.zeros(len(x), np.int32))
    normal, subnormal, finite = y & 1, (y >> 1) & 1, (y >> 2) & 1
    assert normal.tolist() == [1, 1, 0, 0, 1, 1, 0, 0, 1, 1]
    assert subnormal.tolist() == [0, 0, 1, 1, 0, 0, 0, 0, 0, 0]
    assert finite.tolist() == [1, 1, 1, 1, 1, 1, 0, 0, 1, 1]


def test_isspacep_tells_shared_local_and_global_generic_addresses_apart(
    emulator_backend: course.Device,
) -> None:
    """isspacep.{shared,local,global} on generic pointers, the shared array's first byte included (it
    is the shared window's first address: mutation survivor `a > SHARED_WINDOW`)."""
    src = r"""extern "C" __global__ void k(const int* x, int* y) {
    __shared__ int s[64];
    volatile int loc[4];
    int t = threadIdx.x;
    s[t] = t; loc[t & 3] = t;
    const void* p = t % 3 == 0 ? (const void*)&s[t / 3] : t % 3 == 1 ? (const void*)(x + t) : (const void*)&loc[t & 3];
    unsigned sh, lo, gl;
    asm("{ .reg .pred q; isspacep.shared q, %1; selp.u32 %0, 1, 0, q; }" : "=r"(sh) : "l"(p));
    asm("{ .reg .pred q; isspacep.local q, %1; selp.u32 %0, 1, 0, q; }" : "=r"(lo) : "l"(p));
    asm("{ .reg .pred q; isspacep.global q, %1; selp.u32 %0, 1, 0, q; }" : "=r"(gl) : "l"(p));
    y[t] = sh | (gl << 1) | (lo << 2);
}"""
    n = 64
    *_, y = launch(src, 1, n, np.arange(n, dtype=np.int32), np.zeros(n, np.int32))
    assert y.tolist() == [[1, 2, 4][t % 3] for t in range(n)]  # lane 0 holds &s[0]


@pytest.mark.parametrize("form", ["u32", "s32", "f32"])
def test_set_writes_all_ones_minus_one_or_one_point_zero_for_true(
    form: str, emulator_backend: course.Device
) -> None:
    """set.<cmp>{.and}.<dtype>.f32: true is 0xFFFFFFFF (u32), -1 (s32) or 1.0f (f32), false is 0, with
    and without a predicate operand (mutation survivor: the destination type read from the wrong part)."""
    reg, ct = {"u32": ("r", "unsigned"), "s32": ("r", "int"), "f32": ("f", "float")}[form]
    src = f"""extern "C" __global__ void k(const float* a, const float* b, {ct}* lt, {ct}* both) {{
    int i = threadIdx.x; {ct} d, e;
    asm("set.lt.{form}.f32 %0, %1, %2;" : "={reg}"(d) : "f"(a[i]), "f"(b[i]));
    asm("{{ .reg .pred p; setp.ne.s32 p, %3, 0; set.lt.and.{form}.f32 %0, %1, %2, p; }}"
        : "={reg}"(e) : "f"(a[i]), "f"(b[i]), "r"(i & 1));
    lt[i] = d; both[i] = e;
}}"""
    a = np.array([1.0, 2.0, -1.0, 0.0, np.nan, 3.0, -np.inf, 5.0], np.float32)
    b = np.array([2.0, 1.0, -1.0, 0.5, 1.0, np.inf, 0.0, np.nan], np.float32)
    out_t = {"u32": np.uint32, "s32": np.int32, "f32": np.float32}[form]
    _, _, lt, both = launch(src, 1, len(a), a, b, np.zeros(len(a), out_t), np.zeros(len(a), out_t))
    true = {"u32": 0xFFFFFFFF, "s32": -1, "f32": 1.0}[form]
    with np.errstate(invalid="ignore"):
        expected = np.where(a < b, true, 0).astype(out_t)
    np.testing.assert_array_equal(lt, expected)
    np.testing.assert_array_equal(both, np.where(np.arange(len(a)) & 1, expected, 0).astype(out_t))


def test_cvt_ftz_flushes_a_float32_subnormal_source(emulator_backend: course.Device) -> None:
    """cvt.ftz.f64.f32 and cvt.rpi.ftz.f32.f32 flush a float32 subnormal source to a signed zero
    first; without .ftz it converts (rounded up, a positive one becomes 1.0). Converting to f16 a GPU
    ignores .ftz: a positive subnormal rounded up is f16's smallest subnormal either way (an H200,
    tests/emulator/ptx_truth.json; mutation survivor: the half conversion's source flush)."""
    src = r"""extern "C" __global__ void k(const float* x, double* wide, double* keep, float* up, float* up_keep,
                                  unsigned short* half, unsigned short* half_keep) {
    int i = threadIdx.x; double w, k; float u, v; unsigned short h, g;
    asm("cvt.ftz.f64.f32 %0, %1;" : "=d"(w) : "f"(x[i]));
    asm("cvt.f64.f32 %0, %1;" : "=d"(k) : "f"(x[i]));
    asm("cvt.rpi.ftz.f32.f32 %0, %1;" : "=f"(u) : "f"(x[i]));
    asm("cvt.rpi.f32.f32 %0, %1;" : "=f"(v) : "f"(x[i]));
    asm("cvt.rp.ftz.f16.f32 %0, %1;" : "=h"(h) : "f"(x[i]));
    asm("cvt.rp.f16.f32 %0, %1;" : "=h"(g) : "f"(x[i]));
    wide[i] = w; keep[i] = k; up[i] = u; up_keep[i] = v; half[i] = h; half_keep[i] = g;
}"""
    tiny = np.finfo(np.float32).tiny
    x = np.array([tiny / 2, -tiny / 4, np.float32(1e-45), tiny, -1.5, 2.25], np.float32)
    n = len(x)
    f32, u16 = (np.zeros(n, np.float32) for _ in range(2)), (np.zeros(n, np.uint16) for _ in range(2))
    _, wide, keep, up, up_keep, half, half_keep = launch(src, 1, n, x, np.zeros(n), np.zeros(n), *f32, *u16)
    sub = np.abs(x) < tiny
    flushed = np.where(sub, np.copysign(0.0, x), x)
    np.testing.assert_array_equal(wide, flushed.astype(np.float64))
    assert (np.signbit(wide) == np.signbit(x)).all()
    np.testing.assert_array_equal(keep, x.astype(np.float64))
    np.testing.assert_array_equal(up, np.ceil(flushed).astype(np.float32))
    np.testing.assert_array_equal(up_keep, np.ceil(x))  # a positive subnormal rounds up to 1
    # rounded up to f16: a negative value too small for f16 is -0 (0x8000), and any positive one
    # below f16's smallest subnormal becomes it (0x0001), .ftz or not
    np.testing.assert_array_equal(half, half_keep)
    np.testing.assert_array_equal(half[:4], [0x0001, 0x8000, 0x0001, 0x0001])
    np.testing.assert_array_equal(half[4:], np.array([-1.5, 2.25], np.float16).view(np.uint16))


def test_a_vector_kernel_parameter_loads_each_element_in_order() -> None:
    """ld.param.v2 of a by-value 8-byte parameter (NVRTC's form for an int2 argument) reads element
    k at offset 4k (mutation survivor: the elements read backwards)."""
    from course.emulator import run_kernel

    ptx = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry two(.param .align 8 .b8 two_param_0[8], .param .u64 out)
{
    .reg .b32 %r<3>;
    .reg .b64 %rd<3>;
    ld.param.v2.u32 {%r1, %r2}, [two_param_0];
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    st.global.v2.u32 [%rd2], {%r1, %r2};
    ret;
}
"""
    out = np.zeros(2, np.uint32)
    pair = np.array([7, 9], np.uint32).view(np.uint64)[0]  # the struct's bytes, by value
    run_kernel(Program(ptx, ""), "two", (1, 1, 1), (1, 1, 1), [("pair", pair), ("out", out)])
    assert out.tolist() == [7, 9]


@pytest.mark.parametrize(("rounding", "sign"), [("rn", 0), ("rz", 0), ("rd", 1), ("ru", 0)])
def test_an_exact_zero_sum_of_tiny_doubles_takes_the_rounding_modes_sign(
    rounding: str, sign: int, emulator_backend: course.Device
) -> None:
    """x + (-x) is +0, except rounding toward -inf where it is -0 (IEEE 754), also for x below
    2^-960, where the emulator redoes the sum exactly (mutation survivor: the exact redo taken for
    an exact zero, which it gives as +0)."""
    src = f"""extern "C" __global__ void k(const double* x, double* y) {{
    int i = threadIdx.x; y[i] = __dadd_{rounding}(x[i], -x[i]);
}}"""
    x = np.array([2.0**-1000, -(2.0**-1070), 5e-324, 1.5], np.float64)
    *_, y = launch(src, 1, len(x), x, np.ones(len(x)))
    assert (y == 0).all() and np.signbit(y).tolist() == [bool(sign)] * len(x)


@pytest.mark.parametrize("rounding", ["rn", "rz", "rd", "ru"])
def test_a_sum_of_two_negative_zeros_is_negative_zero_beside_a_tiny_factor(
    rounding: str, emulator_backend: course.Device
) -> None:
    """fma(-0, x, -0) is -0 + -0 = -0 in every rounding mode, with x below 2^-960 too, where the
    emulator redoes the fma exactly (mutation survivor: the exact redo taken for an exact zero)."""
    src = f"""extern "C" __global__ void k(const double* x, double* y) {{
    int i = threadIdx.x; y[i] = __fma_{rounding}(-0.0, x[i], -0.0);
}}"""
    x = np.array([2.0**-1000, 5e-324, 1.5, -(2.0**-990)], np.float64)
    *_, y = launch(src, 1, len(x), x, np.ones(len(x)))
    # -0 * -x is +0, and +0 + -0 is +0 but toward -inf
    assert (y == 0).all() and np.signbit(y).tolist() == [True, True, True, rounding == "rd"]
