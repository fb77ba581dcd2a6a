"""Notebook 03's exercises: answers that pass, and wrong answers a learner writes."""

import numpy as np

from course.histogram.exercises import (
    AGGREGATE_STUB,
    VEC4_STUB,
    WARP_COPIES_STUB,
    WIDE_STUB,
    agg_truth,
    copies_truth,
    in_flight_truth,
    pattern_bytes,
    pattern_truth,
)

# 2: zero every warp's copy, and let the whole block finish counting before the merge reads
ZEROED = WARP_COPIES_STUB.replace("k < 256;", "k < warps * 256;")
WARP_COPIES = ZEROED.replace(
    "atomicAdd(&mine[x[i]], 1u);\n", "atomicAdd(&mine[x[i]], 1u);\n    __syncthreads();\n"
)

# aggregate, the way hist1_agg does it (shown in the notebook): __match_any_sync, which the exercise rules out
MATCHED = AGGREGATE_STUB.replace(
    "        atomicAdd(&hist[byte], 1u);\n",
    "        const unsigned int peers = __match_any_sync(__activemask(), byte);\n"
    "        if ((threadIdx.x & 31) == __ffs(peers) - 1) atomicAdd(&hist[byte], __popc(peers));\n",
)

# aggregate: groups built one at a time with __shfl_sync and __ballot_sync (no __match_any_sync)
AGGREGATE = AGGREGATE_STUB.replace(
    "        atomicAdd(&hist[byte], 1u);\n",
    """        const unsigned int lane = threadIdx.x & 31;
        unsigned int left = __activemask();
        while (left & (1u << lane)) {  // until this lane's byte is counted: then it leaves
            const int leader = __ffs(left) - 1;
            const unsigned int b = __shfl_sync(left, byte, leader);
            const unsigned int same = __ballot_sync(left, byte == b);
            if (lane == leader) atomicAdd(&hist[b], __popc(same));
            left &= ~same;
        }
""",
)

# vec4: whole words first, four keys each, then the n % 4 bytes after the last whole word
VEC4 = VEC4_STUB.replace(
    "    for (long long i = first; i < n; i += stride) atomicAdd(&temp[x[i]], 1u);\n",
    """    const long long nw = n / 4;
    for (long long i = first; i < nw; i += stride) {
        const unsigned int w = words[i];
        atomicAdd(&temp[w & 255], 1u);
        atomicAdd(&temp[(w >> 8) & 255], 1u);
        atomicAdd(&temp[(w >> 16) & 255], 1u);
        atomicAdd(&temp[w >> 24], 1u);
    }
    for (long long i = 4 * nw + first; i < n; i += stride) atomicAdd(&temp[x[i]], 1u);
""",
)

# wide_bins: hist2's zero, count, merge over `bins` bins, keys past the last bin skipped
WIDE_COUNT = """    for (int b = threadIdx.x; b < bins; b += blockDim.x) counts[b] = 0;
    __syncthreads();
    for (long long i = first; i < n; i += stride) {
        const unsigned int key = x[i];
        if (key < (unsigned int)bins) atomicAdd(&counts[key], 1u);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < bins; b += blockDim.x)
        if (counts[b]) atomicAdd(&hist[b], counts[b]);
"""
WIDE_LINE = "    for (long long i = first; i < n; i += stride) atomicAdd(&hist[x[i]], 1u);\n"
WIDE = WIDE_STUB.replace(WIDE_LINE, WIDE_COUNT)

_AGG = agg_truth()
_COPIES = copies_truth()
_FLIGHT = in_flight_truth()

SOLUTIONS = {
    "patterns": pattern_truth(),
    "warp_copies": WARP_COPIES,
    "aggregate": AGGREGATE,
    "agg_atomics": _AGG,
    "in_flight": _FLIGHT,
    "copies_banks": _COPIES,
    "vec4": VEC4,
    "wide_bins": WIDE,
    "grid": 660,  # 132 SMs x 5 blocks: 228 KiB / (37.5 KiB + 1 KiB) on the emulator's H100 model
}

_TRUTH = pattern_truth()

WRONG = {
    "agg_atomics": [
        (
            {k: (32, v[1]) for k, v in _AGG.items()},
            "'min(l, 8)': 'global atomics of the warp'",
        ),  # hist1's count
        (
            {k: (v[0], v[0]) for k, v in _AGG.items()},
            "'l': 'largest number one atomic adds'",
        ),  # groups, not size
        ({"l": (32, 1)}, "fill in every pattern"),
    ],
    "in_flight": [
        # the threads of one block, not of the SM
        (
            {k: (v[0] // int(k.split(", ")[2].split()[0]), v[1]) for k, v in _FLIGHT.items()},
            "'bytes in flight an SM'",
        ),
        ({k: (v[0], 10 * v[1]) for k, v in _FLIGHT.items()}, "'% of Little's law'"),
        ({}, "fill in every launch"),
    ],
    "copies_banks": [
        (
            {k: (32 // int(k[2:].split(",")[0]), v[1]) for k, v in _COPIES.items()},
            "'lanes on one word (most)'",
        ),
        # ways counted as lanes in the fullest bank, lanes on one word counted apart
        (
            {k: (v[0], 8 if k == "C=4, byte l % 2" else v[1]) for k, v in _COPIES.items()},
            "'C=4, byte l % 2': 'bank ways",
        ),
        ({"C=1, byte 4*l": (1, 4)}, "fill in every case"),
    ],
    "vec4": [
        (VEC4_STUB, "narrower than 4 bytes"),  # one byte a load, as hist2
        (
            VEC4.replace(
                "    for (long long i = 4 * nw + first; i < n; i += stride) atomicAdd(&temp[x[i]], 1u);\n", ""
            ),
            "fewer than the bytes hold",
        ),  # the tail forgotten
        (VEC4.replace("long long i = 4 * nw + first", "long long i = first"), "more than the bytes hold"),
    ],
    "wide_bins": [
        (WIDE_STUB, "the checker found a bug"),  # keys past the last bin write past hist
        (WIDE.replace("        if (key < (unsigned int)bins) ", "        "), "the checker found a bug"),
        (
            WIDE.replace(
                "    __syncthreads();\n    for (int b = threadIdx.x; b < bins; b += blockDim.x)\n        if",
                "    for (int b = threadIdx.x; b < bins; b += blockDim.x)\n        if",
            ),
            "race",
        ),
        (
            WIDE_STUB.replace(
                WIDE_LINE,
                "    for (long long i = first; i < n; i += stride) if (x[i] < bins) atomicAdd(&hist[x[i]], 1u);\n",
            ),
            "one global atomic per bin and block",
        ),
    ],
    "patterns": [
        # lanes counted as the distinct bytes of the warp, not the lanes on the commonest one
        (
            {k: (len(set(pattern_bytes(k).tolist())), v[1]) for k, v in _TRUTH.items()},
            "'lanes on the busiest bin' is not what the trace counts",
        ),
        # ways counted as the lanes in the fullest bank, lanes on one word counted apart
        (
            {k: (v[0], int(np.bincount(pattern_bytes(k) % 32).max())) for k, v in _TRUTH.items()},
            "'l % 16': 'bank ways' is not what the trace counts",
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
        (MATCHED, "no __match_any_sync"),  # hist1_agg's way, copied from the notebook
        (  # no agreement: one lane at a time, each reloading its byte before its atomic
            AGGREGATE_STUB.replace(
                "        atomicAdd(&hist[byte], 1u);\n",
                "        for (int r = 0; r < 32; ++r)\n"
                "            if ((threadIdx.x & 31) == r) atomicAdd(&hist[x[i]], 1u);\n",
            ),
            "made 33 atomics on hist[7], but its lanes held byte 7 in 2 trips",
        ),
        (  # the lanes agree on the leader's byte only; the others add alone
            AGGREGATE_STUB.replace(
                "        atomicAdd(&hist[byte], 1u);\n",
                """        const unsigned int lane = threadIdx.x & 31;
        const unsigned int active = __activemask();
        const int leader = __ffs(active) - 1;
        const unsigned int b = __shfl_sync(active, byte, leader);
        const unsigned int same = __ballot_sync(active, byte == b);
        if (lane == leader) atomicAdd(&hist[b], __popc(same));
        else if (byte != b) atomicAdd(&hist[byte], 1u);
""",
            ),
            "made 2 atomics on hist[0], but its lanes held byte 0 in 1 trip of its loop",
        ),
        (  # a fast path for a warp whose bytes are all equal, and no agreement otherwise
            AGGREGATE_STUB.replace(
                "        atomicAdd(&hist[byte], 1u);\n",
                """        const unsigned int active = __activemask();
        int all;
        __match_all_sync(active, byte, &all);
        if (!all) atomicAdd(&hist[byte], 1u);
        else if ((threadIdx.x & 31) == __ffs(active) - 1) atomicAdd(&hist[byte], __popc(active));
""",
            ),
            "made 2 atomics on hist[0], but its lanes held byte 0 in 1 trip of its loop",
        ),
        (AGGREGATE.replace("if (lane == leader) ", ""), "more than the bytes hold"),
        (AGGREGATE.replace("__popc(same)", "1u"), "fewer than the bytes hold"),
        # every lane stays in the loop until the warp is done, and calls again with a mask without
        # itself: fine-looking on paper, an illegal instruction on a GPU
        (
            AGGREGATE.replace("while (left & (1u << lane)) {", "while (left) {"),
            "whose member mask leaves them out",
        ),
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
        (0, "a whole number: an int"),
        (660.0, "an int"),
    ],
}
