"""Notebook 05's exercises: answers that pass, and wrong answers a learner writes."""

from course.reduction.exercises import (
    ANY_BLOCK_STUB,
    FOUR_STUB,
    SHUFFLE_STUB,
    occupancy_truth,
    warp_steps_truth,
    wavefronts_truth,
    ways_truth,
)

# kernel 3's tree for any block: count the partial sums still alive; each step folds the upper
# half (rounded down) onto the lower one, and the middle one of an odd count waits for the next step
ANY_TREE = """    for (unsigned int len = blockDim.x; len > 1; ) {
        unsigned int half = (len + 1) / 2;
        if (tid + half < len) sdata[tid] += sdata[tid + half];
        __syncthreads();
        len = half;
    }"""
STUB_TREE = """    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }"""
ANY_BLOCK = ANY_BLOCK_STUB.replace(STUB_TREE, ANY_TREE)

# another natural answer: the tree of the next power of two, threads without a partner idle
POW2_TREE = """    unsigned int p = 1;
    while (p < blockDim.x) p <<= 1;
    for (unsigned int s = p / 2; s > 0; s >>= 1) {
        if (tid < s && tid + s < blockDim.x) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }"""

# the textbook fix for an odd count: thread 0 also adds the leftover, two partners in one barrier
# step (fourth read R307: it was counted as two steps, the check now counts barrier steps)
ODD_LEFTOVER_TREE = """    for (unsigned int len = blockDim.x; len > 1; len /= 2) {
        unsigned int s = len / 2;
        if (tid < s) sdata[tid] += sdata[tid + s];
        if (tid == 0 && (len & 1)) sdata[0] += sdata[len - 1];
        __syncthreads();
    }"""

STUB_WARP = """    if (tid < 32) {
        volatile acc_t* vs = sdata;
        vs[tid] += vs[tid + 32]; vs[tid] += vs[tid + 16]; vs[tid] += vs[tid + 8];
        vs[tid] += vs[tid + 4]; vs[tid] += vs[tid + 2]; vs[tid] += vs[tid + 1];
    }"""
# the block's sum left in sdata[0], where the stub's last line reads it
SHUFFLE_WARP = """    if (tid < 32) {
        acc_t w = sdata[tid] + sdata[tid + 32];
        for (int d = 16; d > 0; d >>= 1) w += __shfl_down_sync(0xffffffffu, w, d);
        if (tid == 0) sdata[0] = w;
    }"""
SHUFFLE = SHUFFLE_STUB.replace(STUB_WARP, SHUFFLE_WARP)

# the other natural answer: out written from the register (the stub's last line dropped)
SHUFFLE_REGISTER = SHUFFLE_STUB.replace(
    STUB_WARP + "\n    // ----\n    if (tid == 0) out[blockIdx.x] = sdata[0];",
    """    if (tid < 32) {
        acc_t w = sdata[tid] + sdata[tid + 32];
        for (int d = 1; d < 32; d <<= 1) w += __shfl_xor_sync(0xffffffffu, w, d);
        if (tid == 0) out[blockIdx.x] = w;
    }""",
)

# kernel 5's fixed warp steps: right, and race-free, but in shared memory
SHARED_WARP = """    if (tid < 32) {
        for (unsigned int s = 32; s > 0; s >>= 1) {
            acc_t w = sdata[tid] + sdata[tid + s];
            __syncwarp();
            sdata[tid] = w;
            __syncwarp();
        }
    }"""

# four elements per thread: four loads, each of blockDim.x neighbouring elements, each checked
STUB_LOADS = """    acc_t v = 0;
    // ----"""
FOUR = FOUR_STUB.replace(
    STUB_LOADS,
    """    unsigned int i = blockIdx.x * (blockDim.x * 4) + tid;
    acc_t v = 0;
    for (unsigned int k = 0; k < 4; ++k)
        if (i + k * blockDim.x < n) v += x[i + k * blockDim.x];
    // ----""",
)

# the other natural answer: one 16-byte load of four neighbouring elements per lane (512 contiguous
# bytes per warp request, as reduce_vec4 loads), a scalar tail
FOUR_VEC = FOUR_STUB.replace(
    STUB_LOADS,
    """    unsigned int i = (blockIdx.x * blockDim.x + tid) * 4;
    acc_t v = 0;
    if (i + 3 < n) {
        uint4 q = reinterpret_cast<const uint4*>(x)[i / 4];
        v = (acc_t)q.x + q.y + q.z + q.w;
    } else {
        for (unsigned int k = i; k < n; ++k) v += x[k];
    }
    // ----""",
)

SOLUTIONS = {
    "ways": ways_truth(),
    "warp_steps": warp_steps_truth(),
    "any_block": ANY_BLOCK,
    "wavefronts": wavefronts_truth(),
    "four": FOUR,
    "blocks_per_sm": occupancy_truth(),
    # blocks of 512 per SM: an SM holds 4 (2048 threads), 4 x 512 x 2 loads x 4 B = 16 384 B in flight,
    # past Little's law on the emulator's H100 model (15 227 B); 2 per SM give half that
    "grid": 4,
    "shuffle": SHUFFLE,
}

WRONG = {
    "ways": [
        ({}, "fill in every stride"),
        # the third read's hint followed (fourth read R306): the block of 256's worst conflicts kept
        # where its warp 0 has idle lanes too, at s = 32, 64 and 128
        (
            {**ways_truth(), **{s: (1, 1, c) for s, (_, _, c) in ways_truth(256).items() if s >= 32}},
            "32: 'worst bank conflict' is not what the trace counts",
        ),
        # the text's block of 256 carried over: at s = 8 and beyond fewer lanes add there
        ({**ways_truth(), 8: (2, 0, 8)}, "8: 'worst bank conflict' is not what the trace counts"),
        ({s: (w, 0, c) for s, (w, d, c) in ways_truth().items()}, "'of them divergent'"),
        ({s: (16, d, c) for s, (w, d, c) in ways_truth().items()}, "'warps busy'"),
    ],
    "warp_steps": [
        ({}, "fill in every warp"),
        # "a warp retires after the last step it adds in" (kernel 1's warps add in steps 1 to a,
        # no gap): it reaches the store's barrier and one per step up to there, no more
        ({w: (1 + a, a) for w, (b, a) in warp_steps_truth().items()}, "'barriers it reaches'"),
        # kernel 2's and 3's pattern carried over: the adding threads contiguous from thread 0
        (warp_steps_truth(version="reduce2"), "'steps in which it adds'"),
        # the barrier after the first store forgotten: one per step only
        ({w: (b - 1, a) for w, (b, a) in warp_steps_truth().items()}, "'barriers it reaches'"),
    ],
    "wavefronts": [
        ({}, "fill in every step"),
        # counted as 4-byte words: one wavefront per conflict-free access
        ({k: (w // 2, c // 2) for k, (w, c) in wavefronts_truth().items()}, "'wavefronts'"),
        # every wavefront of an 8-byte access called a conflict
        ({k: (w, w - 1) for k, (w, c) in wavefronts_truth().items()}, "'of them from conflicts'"),
    ],
    "four": [
        (FOUR_STUB, "too small"),
        # four neighbouring elements per thread: right, but a warp's lanes read 16 bytes apart
        (
            FOUR_STUB.replace(
                STUB_LOADS,
                """    unsigned int i = 4 * (blockIdx.x * blockDim.x + tid);
    acc_t v = 0;
    for (unsigned int k = 0; k < 4; ++k)
        if (i + k < n) v += x[i + k];
    // ----""",
            ),
            "sectors",
        ),
        # kernel 4's article bug times four: one check for all four loads
        (
            FOUR_STUB.replace(
                STUB_LOADS,
                """    unsigned int i = blockIdx.x * (blockDim.x * 4) + tid;
    acc_t v = 0;
    if (i < n) v = (acc_t)x[i] + x[i + blockDim.x] + x[i + 2 * blockDim.x] + x[i + 3 * blockDim.x];
    // ----""",
            ),
            "out-of-bounds",
        ),
        # the four elements added in elem_t and widened afterwards: wraps around near 2^32
        (
            FOUR_STUB.replace(
                STUB_LOADS,
                """    unsigned int i = blockIdx.x * (blockDim.x * 4) + tid;
    elem_t a = 0;
    for (unsigned int k = 0; k < 4; ++k)
        if (i + k * blockDim.x < n) a += x[i + k * blockDim.x];
    acc_t v = a;
    // ----""",
            ),
            "wraps past 2^32",
        ),
        # kernel 4's index with four loads: blocks overlap, elements summed twice
        (FOUR.replace("blockIdx.x * (blockDim.x * 4)", "blockIdx.x * (blockDim.x * 2)"), "too large"),
        # thread 0 sums its whole block alone (right sums; one-lane requests)
        (
            FOUR_STUB.replace(
                STUB_LOADS,
                """    unsigned int b = blockIdx.x * (blockDim.x * 4);
    acc_t v = 0;
    if (tid == 0)
        for (unsigned int k = 0; k < 4 * blockDim.x && b + k < n; ++k) v += x[b + k];
    // ----""",
            ),
            "load requests of x",
        ),
        # warp 0 alone loops over the block, 32 neighbours at a time (coalesced, right sums)
        (
            FOUR_STUB.replace(
                STUB_LOADS,
                """    unsigned int b = blockIdx.x * (blockDim.x * 4);
    acc_t v = 0;
    if (tid < 32)
        for (unsigned int k = tid; k < 4 * blockDim.x && b + k < n; k += 32) v += x[b + k];
    // ----""",
            ),
            "load requests of x",
        ),
    ],
    "blocks_per_sm": [
        ({}, "fill in every launch"),
        # threads alone: 2048 / threads, capped at 32 blocks
        ({c: (min(32, 2048 // c[0]),) for c in occupancy_truth()}, "'blocks per SM'"),
        # the driver's 1 KB per block forgotten: 233 472 / 22 528 = 10 blocks instead of 9
        ({**occupancy_truth(), (64, 16, 22528): (10,)}, "(64, 16, 22528)"),
    ],
    "any_block": [
        (ANY_BLOCK_STUB, "never reached sdata[0]"),
        # s rounded up, every thread below s adds: partners past the live sums are added again
        (
            ANY_BLOCK_STUB.replace(
                STUB_TREE,
                """    for (unsigned int s = (blockDim.x + 1) / 2; s > 1; s = (s + 1) / 2) {
        if (tid < s && tid + s < blockDim.x) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) sdata[0] += sdata[1];
    __syncthreads();""",
            ),
            "more than once",
        ),
        # the barrier moved inside the branch: only the adding threads reach it
        (
            ANY_BLOCK_STUB.replace(
                STUB_TREE,
                """    for (unsigned int len = blockDim.x; len > 1; ) {
        unsigned int half = (len + 1) / 2;
        if (tid + half < len) {
            sdata[tid] += sdata[tid + half];
            __syncthreads();
        }
        len = half;
    }""",
            ),
            "barrier-divergence",
        ),
        # one thread adds everything in one interval: right, but no tree
        (
            ANY_BLOCK_STUB.replace(
                STUB_TREE,
                """    if (tid == 0)
        for (unsigned int j = 1; j < blockDim.x; ++j) sdata[0] += sdata[j];""",
            ),
            "added 95 other elements of sdata into its own in one barrier step",
        ),
        # the same loop with a barrier after each add: a chain, one partner a step
        (
            ANY_BLOCK_STUB.replace(
                STUB_TREE,
                """    for (unsigned int j = 1; j < blockDim.x; ++j) {
        if (tid == 0) sdata[0] += sdata[j];
        __syncthreads();
    }""",
            ),
            "took 95 barrier steps",
        ),
        # the rounding right but no barrier between the steps
        (ANY_BLOCK.replace("        __syncthreads();\n        len = half;", "        len = half;"), "race"),
    ],
    "grid": [
        (2, "too few for the latency under load"),  # Little's law with the idle latency: half a wave
        (1, "too few for the latency under load"),
        (16, "fewer blocks per SM already"),  # "more waves are always faster"
        (8, "fewer blocks per SM already"),
        (3, "answer with one of"),
        (0, "answer with one of"),
        ("4", "answer with one of"),
    ],
    "shuffle": [
        (SHUFFLE_STUB, "race"),
        (SHUFFLE_STUB.replace(STUB_WARP, SHARED_WARP), "shuffles"),
        # the whole tree in shared memory first (kernel 3's loop), then shuffles of one lane's sum
        (
            SHUFFLE_STUB.replace("s > 32; s >>= 1", "s > 0; s >>= 1").replace(
                STUB_WARP,
                """    if (tid < 32) {
        acc_t w = (tid == 0) ? sdata[0] : 0;
        for (int d = 16; d > 0; d >>= 1) w += __shfl_down_sync(0xffffffffu, w, d);
        if (tid == 0) sdata[0] = w;
    }""",
            ),
            "__syncthreads()",
        ),
        # the thread's own v is stale once the loop has added into sdata[tid]
        (
            SHUFFLE_STUB.replace(
                STUB_WARP,
                """    if (tid < 32) {
        v += sdata[tid + 32];
        for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
        if (tid == 0) sdata[0] = v;
    }""",
            ),
            "too small",
        ),
        # offsets from 32: lanes past the warp hand back their own value, counted twice
        (SHUFFLE.replace("int d = 16;", "int d = 32;"), "too large"),
        # shuffles only in lane 0: the other lanes named in the mask never call them
        (SHUFFLE.replace("if (tid < 32) {", "if (tid == 0) {"), "barrier-divergence"),
        # out written from the register inside the marked part, the stub's last line left in: it
        # writes out again from sdata[0], which holds one lane's partial sum (fourth read R308)
        (
            SHUFFLE_STUB.replace(
                STUB_WARP,
                """    if (tid < 32) {
        acc_t w = sdata[tid] + sdata[tid + 32];
        for (int d = 16; d > 0; d >>= 1) w += __shfl_down_sync(0xffffffffu, w, d);
        if (tid == 0) out[blockIdx.x] = w;
    }""",
            ),
            "stored out[0] 2 times",
        ),
        # the warp's halvings half in shared memory, half in registers
        (
            SHUFFLE_STUB.replace(
                STUB_WARP,
                """    if (tid < 32) {
        acc_t w = sdata[tid] + sdata[tid + 32];
        __syncwarp();
        sdata[tid] = w;
        __syncwarp();
        w = sdata[tid] + sdata[tid + 16];
        for (int d = 8; d > 0; d >>= 1) w += __shfl_down_sync(0xffffffffu, w, d);
        if (tid == 0) sdata[0] = w;
    }""",
            ),
            "loaded shared memory 3 times",
        ),
    ],
}
