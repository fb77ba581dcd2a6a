"""Notebook 01's exercises: answers that pass, and wrong answers a learner writes."""

from course.dot.exercises import (
    ACCURATE_STUB,
    ORDER_STUB,
    STRIDE_STUB,
    VEC_STUB,
    atomic_truth,
    block_cost_truth,
    rounding_truth,
)

STRIDE = STRIDE_STUB.replace("i += blockDim.x)", "i += blockDim.x * gridDim.x)")

ACCURATE = r"""
extern "C" __global__ void dot_accurate(const float* a, const float* b, float* sums, int n) {
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

VEC_LOOP = """    for (unsigned int i = first; i < n; i += stride) {
        sum += a[i] * b[i];
    }"""

VEC = VEC_STUB.replace(
    VEC_LOOP,
    """    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    for (unsigned int j = first; j < n / 4; j += stride) {
        float4 x = a4[j], y = b4[j];
        sum += x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w;
    }
    for (unsigned int i = 4 * (n / 4) + first; i < n; i += stride) {
        sum += a[i] * b[i];
    }""",
)

# a float4 pointer indexed with the element index (the fourth read's D308): vector i is elements
# 4i .. 4i + 3, so a4[4j] reads 16j onwards, far past the end for most threads
VEC_ELEMENT_INDEX = VEC.replace(
    """    for (unsigned int j = first; j < n / 4; j += stride) {
        float4 x = a4[j], y = b4[j];""",
    """    for (unsigned int i = 4 * first; i + 3 < n; i += 4 * stride) {
        float4 x = a4[i], y = b4[i];""",
)

ORDER_ATOMIC = "    if (threadIdx.x == 0) atomicAdd(out, sum);"

ORDER = ORDER_STUB.replace(
    ORDER_ATOMIC,
    """    if (threadIdx.x == 0) {
        partial[blockIdx.x] = sum;
        __threadfence();  // the sum is visible to every block before the ticket is taken
        if (atomicInc(&blocks_done, gridDim.x - 1) == gridDim.x - 1) {  // the last ticket
            const volatile float* p = partial;
            float total = 0;
            for (unsigned int k = 0; k < gridDim.x; k++) total += p[k];  // block order, every run
            out[0] = total;
        }
    }""",
)

# every thread writes the block's word and takes a ticket (the fourth read's D309): a race inside the
# block, which the fence the kernel has cannot order
ORDER_EVERY_THREAD = ORDER.replace("    if (threadIdx.x == 0) {\n        partial", "    {\n        partial")

# thread 0 writes, fences and takes the ticket, then thread 1 of the last block adds the sums with no
# barrier between (the fifth read's D403): a write then a read inside a block, which a fence cannot order
ORDER_NO_BARRIER = ORDER_STUB.replace(
    ORDER_ATOMIC,
    """    __shared__ bool last;
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = sum;
        __threadfence();
        last = atomicInc(&blocks_done, gridDim.x - 1) == gridDim.x - 1;
    }
    if (threadIdx.x == 1 && last) {
        const volatile float* p = partial;
        float total = 0;
        for (unsigned int k = 0; k < gridDim.x; k++) total += p[k];
        out[0] = total;
    }""",
)

SOLUTIONS = {
    "rounding": rounding_truth(),
    "block_cost": block_cost_truth(),
    "vec4": VEC,
    "ordered": ORDER,
    "atomics": atomic_truth(),
    "stride": STRIDE,
    "accurate": ACCURATE,
    "grid": 660,  # 132 SMs x 5 blocks of 384 (2048 threads per SM) on the emulator's H100 model
}

WRONG = {
    "rounding": [
        # the text's index for the article's 2i²: 3i², 5i² and ones are not 2i²
        (
            {k: (369,) for k in rounding_truth()},
            "'first i whose add rounds' is not what NumPy's float32 running sum finds",
        ),
        # where the running sum first passes 2^24: that add is still exact (an even product)
        (
            {
                "a[i] = i, b[i] = 3i": (256,),
                "a[i] = i, b[i] = 5i": (216,),
                "a[i] = b[i] = 1, N = 2^25": (2**24 - 1,),
            },
            "not a multiple of the spacing",
        ),
        ({}, "fill in every data"),
    ],
    "block_cost": [
        # the text's counts for blocks of 256, copied
        ({k: (64, 9, 45) for k in block_cost_truth()}, "'dot1: shared loads by one lane alone'"),
        # one shared load per float (not four at a time)
        ({k: (v[0] * 4, v[1], v[2]) for k, v in block_cost_truth().items()}, "16 bytes wide"),
        # the halving steps without the first barrier
        (
            {k: (v[0], v[1] - 1, v[2]) for k, v in block_cost_truth().items()},
            "one barrier after the products",
        ),
    ],
    "vec4": [
        (VEC_STUB, "narrower than 16 bytes (here 4 bytes a lane)"),
        # float2 loads: 8 bytes a lane, still not 16
        (
            VEC.replace("const float4* a4 = reinterpret_cast<const float4*>(a);", "")
            .replace("const float4* b4 = reinterpret_cast<const float4*>(b);", "")
            .replace(
                "float4 x = a4[j], y = b4[j];",
                "float2 x = reinterpret_cast<const float2*>(a)[2 * j], y = reinterpret_cast<const float2*>(b)[2 * j];"
                " float2 u = reinterpret_cast<const float2*>(a)[2 * j + 1], v = reinterpret_cast<const float2*>(b)[2 * j + 1];",
            )
            .replace("x.z * y.z + x.w * y.w", "u.x * v.x + u.y * v.y"),
            "here 8 bytes a lane",
        ),
        # a contiguous run of float4s per thread: each element once, but a warp's lanes far apart
        (
            VEC.replace(
                "for (unsigned int j = first; j < n / 4; j += stride) {",
                "unsigned int per = (n / 4 + stride - 1) / stride;\n"
                "    for (unsigned int j = first * per; j < min(n / 4, (first + 1) * per); j++) {",
            ),
            "coalesced loads",
        ),
        (
            VEC.replace(
                "for (unsigned int i = 4 * (n / 4) + first; i < n; i += stride)",
                "for (unsigned int i = n; i < n; i += stride)",
            ),
            "loaded 0 times",
        ),
        (VEC.replace("j < n / 4;", "j <= n / 4;"), "out-of-bounds"),
        (VEC.replace("j < n / 4;", "j < (n + 3) / 4;"), "elements 4j to 4j + 3"),
        # the float4 pointer indexed with the element index: loads far past a and b
        (VEC_ELEMENT_INDEX, "index the float4 pointer with j"),
        (VEC.replace("x.w * y.w", "x.z * y.w"), "the sum is wrong"),
    ],
    "ordered": [
        (ORDER_STUB, "no atomic on a float"),
        # the last block by its index: on a GPU blocks finish in any order
        (
            ORDER.replace(
                "if (atomicInc(&blocks_done, gridDim.x - 1) == gridDim.x - 1)",
                "if (blockIdx.x == gridDim.x - 1)",
            ),
            "only a counter",
        ),
        # a ticket that never goes back to 0: the second launch finds no last block
        (
            ORDER.replace(
                "atomicInc(&blocks_done, gridDim.x - 1) == gridDim.x - 1",
                "atomicAdd(&blocks_done, 1) == gridDim.x - 1",
            ),
            "back at 0",
        ),
        # the last block forgets its own sum
        (ORDER.replace("k < gridDim.x; k++", "k + 1 < gridDim.x; k++"), "its own included"),
        # no fence: the last block may read a block's word before that block's store has landed
        (ORDER.replace("__threadfence();", ""), "__threadfence() between the write"),
        # no `if (threadIdx.x == 0)`: every thread writes the block's word (a fence cannot help)
        (ORDER_EVERY_THREAD, "block_sum leaves the block's sum in thread 0 only"),
        # a fixed order, but not the one asked for
        (
            ORDER.replace(
                "for (unsigned int k = 0; k < gridDim.x; k++) total += p[k];",
                "for (int k = gridDim.x - 1; k >= 0; k--) total += p[k];",
            ),
            "in block order, partial[0]",
        ),
    ],
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
        (STRIDE.replace("i += blockDim.x * gridDim.x)", "i += 0)"), "a loop that never ends"),
        (STRIDE.replace("sum += a[i] * b[i];", "sum += a[i] * b[i]"), "does not compile"),
        # the threads of a block interleaved across the grid: each element once, the right sum, but
        # neighbouring lanes gridDim.x elements apart
        (
            STRIDE.replace(
                "unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;",
                "unsigned int i = threadIdx.x * gridDim.x + blockIdx.x;",
            ),
            "coalesced loads",
        ),
        (  # block 0 does it all: each element loaded once, the right sum, and no grid-stride loop
            STRIDE_STUB.replace(
                "for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x)",
                "for (unsigned int i = threadIdx.x; blockIdx.x == 0 && i < n; i += blockDim.x)",
            ),
            "loads no element of a",
        ),
    ],
    "accurate": [
        (ACCURATE_STUB.replace("float s = 0;", "double s = 0;"), "no double arithmetic"),
        (ACCURATE.replace("c = (t - s) - y;", "c = (t - s) + y;"), "not a number"),
        (
            ACCURATE.replace("float y = a[i] * b[i] - c;", "float y = a[i] * b[i];"),
            "spacings from its exact sum",
        ),
        (ACCURATE.replace("dot_accurate", "dot_mine"), "there is no kernel `dot_accurate`"),
    ],
    "grid": [
        (2**26 // 256, "per atomic"),  # the text's N / 256: every thread adds a handful of products
        (132 * 8, "partly empty"),  # the text's one wave for blocks of 256: 2048 / 384 is not 8
        (132 * 4, "fewer blocks than they can hold"),
        (3000, "partly empty"),  # 4.5 waves: each SM full, but the last wave leaves SMs idle
        (0, "a grid is a number of blocks"),
    ],
}
