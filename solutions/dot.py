"""Notebook 01's exercises: answers that pass, and wrong answers a learner writes."""

from course.dot.exercises import KAHAN_STUB, STRIDE_STUB, atomic_truth

STRIDE = STRIDE_STUB.replace("i += blockDim.x)", "i += blockDim.x * gridDim.x)")

KAHAN = r"""
extern "C" __global__ void dot_kahan(const float* a, const float* b, float* sums, int n) {
    unsigned int g = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0, c = 0;                       // c: what the adds so far lost (negated)
    for (unsigned int i = g; i < n; i += blockDim.x * gridDim.x) {
        float y = a[i] * b[i] - c;
        float t = s + y;
        c = (t - s) - y;
        s = t;
    }
    sums[g] = s;
}"""

SOLUTIONS = {
    "atomics": atomic_truth(),
    "stride": STRIDE,
    "kahan": KAHAN,
    "grid": 660,  # 132 SMs x 5 blocks of 384 (2048 threads per SM) on the emulator's H100 model
}

WRONG = {
    "atomics": [
        # every element makes an atomic (the article's view): 'atomics' named, not the count
        (
            {k: (10_000, v[1], v[2]) for k, v in atomic_truth().items()},
            "'atomics' is not what the trace counts",
        ),
        ({k: (v[0], v[1], v[2] + 1) for k, v in atomic_truth().items()}, "'loads of a per thread (most)'"),
        ({}, "fill in every launch"),
    ],
    "stride": [
        (STRIDE_STUB.replace("i += blockDim.x)", "i += gridDim.x)"), "loaded 2 times"),
        (STRIDE.replace("i < n;", "i <= n;"), "out-of-bounds"),
        (STRIDE.replace("atomicAdd(out, sum)", "out[0] = sum"), "race"),
        (STRIDE.replace("i += blockDim.x * gridDim.x)", "i += 0)"), "InstructionBudgetExceeded"),
        (STRIDE.replace("sum += a[i] * b[i];", "sum += a[i] * b[i]"), "does not compile"),
    ],
    "kahan": [
        (KAHAN_STUB.replace("float s = 0;", "double s = 0;"), "no double arithmetic"),
        (KAHAN.replace("c = (t - s) - y;", "c = (t - s) + y;"), "spacings from its exact sum"),
        (KAHAN.replace("dot_kahan", "dot_mine"), "there is no kernel `dot_kahan`"),
    ],
    "grid": [
        (2**26 // 256, "per atomic"),  # the text's N / 256: every thread adds a handful of products
        (132 * 8, "partly empty"),  # the text's one wave for blocks of 256: 2048 / 384 is not 8
        (132 * 4, "fewer blocks than they can hold"),
        (0, "a grid is a number of blocks"),
    ],
}
