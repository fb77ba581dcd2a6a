"""Notebook 03's exercises: answers that pass, and wrong answers a learner writes."""

import numpy as np

from course.histogram.exercises import AGGREGATE_STUB, WARP_COPIES_STUB, pattern_bytes, pattern_truth

# 2: zero every warp's copy, and let the whole block finish counting before the merge reads
ZEROED = WARP_COPIES_STUB.replace("k < 256;", "k < warps * 256;")
WARP_COPIES = ZEROED.replace(
    "atomicAdd(&mine[x[i]], 1u);\n", "atomicAdd(&mine[x[i]], 1u);\n    __syncthreads();\n"
)

# 3: the lanes with the same byte find each other; the lowest adds the group's size
AGGREGATE = AGGREGATE_STUB.replace(
    "        atomicAdd(&hist[byte], 1u);\n",
    "        const unsigned int peers = __match_any_sync(__activemask(), byte);\n"
    "        if ((threadIdx.x & 31) == __ffs(peers) - 1) atomicAdd(&hist[byte], __popc(peers));\n",
)

# 3, another natural answer: groups built one at a time with __ballot_sync (no __match_any_sync)
AGGREGATE_BALLOT = AGGREGATE_STUB.replace(
    "        atomicAdd(&hist[byte], 1u);\n",
    """        const unsigned int lane = threadIdx.x & 31;
        unsigned int left = __activemask();
        while (left) {
            const int leader = __ffs(left) - 1;
            const unsigned int b = __shfl_sync(left, byte, leader);
            const unsigned int same = __ballot_sync(left, byte == b);
            if (lane == leader) atomicAdd(&hist[b], __popc(same));
            left &= ~same;
        }
""",
)

SOLUTIONS = {
    "patterns": pattern_truth(),
    "warp_copies": WARP_COPIES,
    "aggregate": AGGREGATE,
    "grid": 660,  # 132 SMs x 5 blocks: 228 KiB / (37.5 KiB + 1 KiB) on the emulator's H100 model
}

_TRUTH = pattern_truth()

WRONG = {
    "patterns": [
        # lanes counted as the distinct bytes of the warp, not the lanes on the commonest one
        (
            {k: (len(set(pattern_bytes(k).tolist())), v[1]) for k, v in _TRUTH.items()},
            "'lanes on the busiest bin' is not what the trace counts",
        ),
        # ways counted as the lanes in the fullest bank, lanes on one word counted apart
        (
            {k: (v[0], int(np.bincount(pattern_bytes(k) % 32).max())) for k, v in _TRUTH.items()},
            "'7': 'bank ways' is not what the trace counts",
        ),
        ({"l": (1, 1)}, "fill in every pattern"),
    ],
    "warp_copies": [
        (ZEROED, "race"),  # zeroed, but the merge reads copies other warps are still adding to
        (  # the barrier added, but the copies past the first are never zeroed
            WARP_COPIES_STUB.replace("1u);\n", "1u);\n    __syncthreads();\n", 1),
            "uninitialized",
        ),
        (WARP_COPIES.replace("temp + (threadIdx.x / 32) * 256", "temp"), "each warp counts in its own copy"),
        (  # each warp merges its own copy into hist: warps x 256 global atomics a block
            WARP_COPIES.replace(
                "for (int b = threadIdx.x; b < 256; b += blockDim.x) {",
                "for (int b = threadIdx.x % 32; b < 256; b += 32) {",
            ).replace("for (int w = 0; w < warps; ++w) sum += temp[w * 256 + b];", "sum = mine[b];"),
            "one global atomic per bin and block",
        ),
        (WARP_COPIES.replace("atomicAdd(&hist[b], sum);", "atomicAdd(&hist[b] sum);"), "does not compile"),
    ],
    "aggregate": [
        (AGGREGATE_STUB, "at most one atomic per distinct byte"),  # hist1 as it is
        (AGGREGATE.replace("if ((threadIdx.x & 31) == __ffs(peers) - 1) ", ""), "more than the bytes hold"),
        (AGGREGATE.replace("__popc(peers)", "1u"), "fewer than the bytes hold"),
        # the full mask in a loop whose last trip only some lanes of the warp take
        (
            AGGREGATE.replace("__activemask()", "0xffffffffu"),
            "names lanes in its member mask that are not there",
        ),
        (  # the right counts by another route: a shared histogram per block (exercise 2's idea)
            AGGREGATE_STUB.replace(
                "    const long long stride",
                "    __shared__ unsigned int temp[256];\n"
                "    for (int b = threadIdx.x; b < 256; b += blockDim.x) temp[b] = 0;\n"
                "    __syncthreads();\n    const long long stride",
            )
            .replace("atomicAdd(&hist[byte], 1u);", "atomicAdd(&temp[byte], 1u);")
            .replace(
                "    }\n}",
                "    }\n    __syncthreads();\n"
                "    for (int b = threadIdx.x; b < 256; b += blockDim.x) if (temp[b]) atomicAdd(&hist[b], temp[b]);\n}",
            ),
            "no shared memory",
        ),
    ],
    "grid": [
        (132 * 8, "second wave"),  # threads only: 2048 / 256
        (132 * 6, "second wave"),  # shared memory without the driver's 1 KiB a block
        (132, "fewer blocks than they could"),  # the article's one block per SM
        (0, "a grid is a number of blocks"),
    ],
}
