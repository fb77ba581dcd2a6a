"""Notebook 04's exercises: answers that pass, and wrong answers a learner writes."""

from course.scan.exercises import EXCLUSIVE_STUB, WARP_STUB, work_truth

LOAD = "XY[threadIdx.x] = (i < n) ? X[i] : 0;"
EXCLUSIVE = EXCLUSIVE_STUB.replace(LOAD, "XY[threadIdx.x] = (threadIdx.x > 0 && i <= n) ? X[i - 1] : 0;")

MARK = "    // your scan: v becomes the sum of v over lanes 0 to lane of this warp\n"
WARP = WARP_STUB.replace(
    MARK,
    """    for (unsigned int d = 1; d < 32; d *= 2) {
        int below = __shfl_up_sync(0xffffffffu, v, d);   // every lane calls it
        if (lane >= d) v += below;
    }
""",
)

# other answers a learner writes that are right too (tests/test_scan.py checks they pass)
EXCLUSIVE_ALSO = [
    # the shift with i < n: the thread at i == n stores nothing, so what it loads does not matter
    EXCLUSIVE_STUB.replace(LOAD, "XY[threadIdx.x] = (threadIdx.x > 0 && i < n) ? X[i - 1] : 0;"),
    # the inclusive scan, then each thread reads its left neighbour (one more barrier)
    EXCLUSIVE_STUB.replace(
        "    if (i < n) Y[i] = XY[threadIdx.x];",
        "    __syncthreads();\n    if (i < n) Y[i] = threadIdx.x > 0 ? XY[threadIdx.x - 1] : 0;",
    ),
    # the inclusive scan less the thread's own element
    EXCLUSIVE_STUB.replace("Y[i] = XY[threadIdx.x];", "Y[i] = XY[threadIdx.x] - X[i];"),
]
WARP_ALSO = [
    # the course's form: the add under the condition, the shuffle unconditional, offsets unrolled
    WARP_STUB.replace(
        MARK,
        "".join(
            f"    {{ int up = __shfl_up_sync(0xffffffff, v, {d}); v = lane >= {d} ? v + up : v; }}\n"
            for d in (1, 2, 4, 8, 16)
        ),
    ),
]

# the double buffer (the fastest one-block kernel of the GPU section): both buffers in the dynamic XY
# overrun it (the launch gives blockDim.x ints); the second as a static array of its own is right
DOUBLE_IN_XY = r"""
extern "C" __global__ void kogge_stone_exclusive(const int* X, int* Y, int n) {
    extern __shared__ int XY[];
    int* A = XY;
    int* B = XY + blockDim.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    A[threadIdx.x] = (threadIdx.x > 0 && i <= n) ? X[i - 1] : 0;
    __syncthreads();
    for (unsigned int stride = 1; stride < blockDim.x; stride *= 2) {
        B[threadIdx.x] = A[threadIdx.x] + (threadIdx.x >= stride ? A[threadIdx.x - stride] : 0);
        __syncthreads();
        int* t = A; A = B; B = t;
    }
    if (i < n) Y[i] = A[threadIdx.x];
}"""
DOUBLE_STATIC = DOUBLE_IN_XY.replace(
    "int* B = XY + blockDim.x;", "__shared__ int other[1024];\n    int* B = other;"
)
EXCLUSIVE_ALSO.append(DOUBLE_STATIC)

SOLUTIONS = {
    "work": work_truth(),
    "exclusive": EXCLUSIVE,
    "warp": WARP,
    # every block's (tiles, windows) at N = 300 000, then the choice: 128 puts 74 tiles on 74 SMs, 32 KB
    # each, with a look-back of 3 windows (64 passes too: 2 tiles on the busiest SM, the same 32 KB, and 5
    # windows; the H100 timed 128 fastest and 64 at the 10 % line, docs/notes/scan-gpu-facts.md step 5)
    "block": {32: (293, 10), 64: (147, 5), 128: (74, 3), 256: (37, 2), "block": 128},
}

SERIAL = EXCLUSIVE_STUB.replace(
    """    for (unsigned int stride = 1; stride < blockDim.x; stride *= 2) {
        __syncthreads();
        int in1 = 0;
        if (threadIdx.x >= stride) in1 = XY[threadIdx.x - stride];
        __syncthreads();
        if (threadIdx.x >= stride) XY[threadIdx.x] += in1;
    }
    if (i < n) Y[i] = XY[threadIdx.x];""",
    """    __syncthreads();
    if (i < n) {
        int s = 0;
        for (int j = blockIdx.x * blockDim.x; j < i; ++j) s += X[j];
        Y[i] = s;
    }""",
)

SHARED_WARP = WARP_STUB.replace(
    MARK,
    """    __shared__ int s[1024];
    for (unsigned int d = 1; d < 32; d *= 2) {
        s[threadIdx.x] = v;
        __syncwarp();
        if (lane >= d) v += s[threadIdx.x - d];
        __syncwarp();
    }
""",
)

SERIAL_WARP = WARP_STUB.replace(
    MARK,
    """    int mine = v;
    for (unsigned int d = 1; d < 32; ++d) {
        int below = __shfl_up_sync(0xffffffffu, mine, d);
        if (lane >= d) v += below;
    }
""",
)

# the naive scan inside a warp: no shuffle, no shared memory, each lane reads x over lanes 0 to itself
NAIVE_WARP = WARP_STUB.replace(
    MARK,
    """    { int base = i - lane; int s = 0;
      for (int j = 0; j <= (int)lane; ++j) if (base + j < n) s += x[base + j];
      v = s; }
""",
)

# the shift, then thread 0 scans the block's XY on its own between two barriers
SERIAL_BY_THREAD_0 = EXCLUSIVE.replace(
    """    for (unsigned int stride = 1; stride < blockDim.x; stride *= 2) {
        __syncthreads();
        int in1 = 0;
        if (threadIdx.x >= stride) in1 = XY[threadIdx.x - stride];
        __syncthreads();
        if (threadIdx.x >= stride) XY[threadIdx.x] += in1;
    }""",
    """    __syncthreads();
    if (threadIdx.x == 0) {
        int s = 0;
        for (unsigned int k = 0; k < blockDim.x; ++k) { s += XY[k]; XY[k] = s; }
    }
    __syncthreads();""",
)
assert SERIAL_BY_THREAD_0 != EXCLUSIVE
# the shift across block boundaries: block 1 starts from block 0's last element
ACROSS_BLOCKS = EXCLUSIVE_STUB.replace(LOAD, "XY[threadIdx.x] = (i > 0 && i <= n) ? X[i - 1] : 0;")
# one barrier per step: a thread adds before its neighbour has read
ONE_BARRIER = EXCLUSIVE.replace(
    "        __syncthreads();\n        if (threadIdx.x >= stride) XY", "        if (threadIdx.x >= stride) XY"
)
# the shuffle only where its value is used: lanes below d never make the call
SHUFFLE_IN_THE_BRANCH = WARP.replace(
    "        int below = __shfl_up_sync(0xffffffffu, v, d);   // every lane calls it\n        if (lane >= d) v += below;",
    "        if (lane >= d) v += __shfl_up_sync(0xffffffffu, v, d);",
)
assert ACROSS_BLOCKS != EXCLUSIVE_STUB and ONE_BARRIER != EXCLUSIVE and SHUFFLE_IN_THE_BRANCH != WARP
# the shuffle in the branch with a mask of the lanes that take it: lanes d to 2d - 1 still read lanes
# that skipped the call (undefined on a GPU; the emulator hands over their register)
MASK_OF_THE_BRANCH = [
    SHUFFLE_IN_THE_BRANCH.replace(
        "__shfl_up_sync(0xffffffffu, v, d)", "__shfl_up_sync(__activemask(), v, d)"
    ),
    SHUFFLE_IN_THE_BRANCH.replace(
        "        if (lane >= d) v += __shfl_up_sync(0xffffffffu, v, d);",
        "        unsigned m = __ballot_sync(0xffffffffu, lane >= d);\n        if (lane >= d) v += __shfl_up_sync(m, v, d);",
    ),
    SHUFFLE_IN_THE_BRANCH.replace(
        "__shfl_up_sync(0xffffffffu, v, d)", "__shfl_up_sync(0xffffffffu << d, v, d)"
    ),
]
assert all(k != SHUFFLE_IN_THE_BRANCH for k in MASK_OF_THE_BRANCH)
# no shuffle and no store of its own: each lane adds its value into y of itself and every later lane of
# its warp, 528 atomics a warp one after another (and y must be zero before the launch)
ATOMIC_SCATTER = WARP_STUB.replace(
    MARK + "    if (i < n) y[i] = v;",
    "    for (int j = i; j < i - (int)lane + 32; ++j) if (j < n) atomicAdd(&y[j], v);",
)
assert ATOMIC_SCATTER != WARP_STUB
# no shuffle: 32 warp-wide reductions, lane k keeps the sum over lanes 0 to k (a serial loop over the lanes)
REDUCE_PER_LANE = WARP_STUB.replace(
    MARK,
    """    { int s = 0;
      for (int k = 0; k < 32; ++k) {
          int t = __reduce_add_sync(0xffffffffu, (int)lane <= k ? v : 0);
          if ((int)lane == k) s = t;
      }
      v = s; }
""",
)

BLOCK = SOLUTIONS["block"]
TRUTH = work_truth()
KS, KSD, BK = TRUTH

WRONG = {
    "work": [
        # N log2 N adds for Kogge-Stone (the textbook's order of growth, not the count)
        ({**TRUTH, KS: (TRUTH[KS][0], 512 * 9, TRUTH[KS][2])}, "'adds' is not what the trace counts"),
        # two barriers per step for the double buffer too
        ({**TRUTH, KSD: (TRUTH[KSD][0], TRUTH[KSD][1], 2 * TRUTH[KSD][0])}, "'barriers'"),
        # Brent-Kung's 2 log2 N steps, the root counted twice
        ({**TRUTH, BK: (TRUTH[BK][0] + 1, TRUTH[BK][1], TRUTH[BK][2])}, "'steps'"),
        # Brent-Kung's adds as Blelloch's 2N - 2: the down-sweep counted down from the root; the rule for
        # Brent-Kung's tree, not Kogge-Stone's
        ({**TRUTH, BK: (TRUTH[BK][0], 2 * 2048 - 2, TRUTH[BK][2])}, "one level short of the root"),
        ({}, "fill in every launch"),
    ],
    "exclusive": [
        (EXCLUSIVE_STUB, "inclusive scan"),
        (ACROSS_BLOCKS, "the first element of block 1's segment"),
        (EXCLUSIVE_STUB.replace(LOAD, "XY[threadIdx.x] = (i < n) ? X[i - 1] : 0;"), "out-of-bounds"),
        (ONE_BARRIER, "race"),
        (DOUBLE_IN_XY, "the launch gives `XY` blockDim.x ints"),
        (SERIAL, "a log-depth scan"),  # the right answer by a loop over the elements before i
        # thread 0 scans XY alone; the compiler loads its words four at a time, each counted: caught at once
        (SERIAL_BY_THREAD_0, "thread 0 of block 0 loads"),
    ],
    "warp": [
        (SHUFFLE_IN_THE_BRANCH, "member mask"),
        (WARP.replace("if (lane >= d)", "if (lane > d)"), "is wrong"),
        (
            WARP.replace("int v = (i < n) ? x[i] : 0;", "if (i >= n) return;\n    int v = x[i];"),
            "member mask",
        ),
        *[(k, "which does not make this call") for k in MASK_OF_THE_BRANCH],
        (REDUCE_PER_LANE, "a vote or a warp reduction is a warp-wide step too"),
        (ATOMIC_SCATTER, "one store of y per lane, and no atomics"),
        (SHARED_WARP, "no shared-memory access"),
        (SERIAL_WARP, "shuffles"),  # the right sums, one lane below at a time: 31 shuffles
        (
            NAIVE_WARP,
            "elements of x: each lane loads its own element once",
        ),  # no shuffle: each lane reads its predecessors itself
        (WARP_STUB, "nothing was scanned"),
    ],
    "block": [
        ({**BLOCK, "block": 32}, "a longer chain of look-back round trips"),  # the right counts, 10 windows
        ({**BLOCK, "block": 256}, "fewer SMs at work"),  # 37 of 132 SMs, 64 KB each
        ({**BLOCK, 128: (73, 3)}, "block 128's 'tiles' is not"),  # N / 4096 rounded down
        (
            {**BLOCK, 128: (74, 2)},
            "block 128's 'windows' is not",
        ),  # 73 / 32 rounded down: a partial window dropped
        ({**BLOCK, 32: (293, 9)}, "block 32's 'windows' is not"),  # 293 / 32 rounded down
        ({**BLOCK, "block": 100}, "lookback takes a block of"),
        # the course's default with its own counts only (the form before): the other blocks' counts missing
        ({"block": 128, "tiles": 74, "windows": 3}, "give every block's two counts"),
        (128, "give every block's two counts"),  # the course's default alone: no reasoning shown
        (None, "give every block's two counts"),
        ({**BLOCK, 64: (None, None)}, "fill in every entry"),
        ({**BLOCK, 64: 147}, "block 64's entry is (tiles, windows)"),
    ],
}


# ---------------------------------------------------------------- exercises 5 to 8 (banks, tile, moved, propagate)

from course.scan.exercises import PROPAGATE_STUB, bank_truth, bytes_truth, tile_truth  # noqa: E402

PROPAGATE_MARK = "    // FILL ME IN (about 3 lines): one thread per element of y past the first tile\n"
PROPAGATE = PROPAGATE_STUB.replace(
    PROPAGATE_MARK,
    """    int i = tile + blockIdx.x * blockDim.x + threadIdx.x;   // past the first tile
    if (i < n) y[i] += scanned_totals[i / tile - 1];
""",
)
PROPAGATE_ALSO = [
    # a 64-bit index and the tile computed first
    PROPAGATE_STUB.replace(
        PROPAGATE_MARK,
        """    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x + tile;
    if (i >= n) return;
    int t = (int)(i / tile);
    y[i] = y[i] + scanned_totals[t - 1];
""",
    ),
]

SOLUTIONS.update({
    "banks": bank_truth(),
    "moved": bytes_truth(),
    "tile": tile_truth(),
    "propagate": PROPAGATE,
})  # fmt: skip

BANKS, MOVED, TILE = bank_truth(), bytes_truth(), tile_truth()
UP1, UP4, UP16, UP64, DOWN16 = BANKS
M2, M4, M10 = MOVED
T32, T256 = TILE

WRONG.update({
    "banks": [
        # 2s-way at every stride: the busy lanes' spacing alone, forgetting that fewer lanes are busy
        ({**BANKS, UP64: (32,)}, "'ways' is not what the trace counts"),
        ({**BANKS, DOWN16: (16,)}, "'ways'"),  # the up-sweep's count for the down-sweep's step
        ({}, "fill in every step"),
    ],
    "moved": [
        ({**MOVED, M4: (4.0,)}, "'elements moved per element' is not what the trace counts"),  # 4N at once
        ({**MOVED, M10: (4.0,)}, "within 3 % passes"),
        ({**MOVED, M2: (3.0,)}, "each launch reads or writes"),  # 2 + 2 (T - 1) / T: the last tile counted full
        ({**MOVED, M4: (3.5,)}, "each launch reads or writes"),  # the same at 4 tiles
    ],
    "tile": [
        ({**TILE, T256: (TILE[T256][0], 8 * TILE[T256][0], TILE[T256][2])}, "'shuffles, whole block'"),  # every warp as warp 0
        ({**TILE, T32: (TILE[T32][0], TILE[T32][1] - 5, TILE[T32][2])}, "a block of 32 has one warp"),  # block 32: 6
        ({**TILE, T256: (TILE[T256][0], TILE[T256][1], 2 * 8)}, "__syncthreads"),  # Kogge-Stone's 2 log2(256)
    ],
    "propagate": [
        (PROPAGATE_STUB, "y is unchanged"),
        # indexed from 0 and tile 0 skipped: every thread of the N - tile grid lands in tile 0 or none
        (
            PROPAGATE.replace("int i = tile + blockIdx.x * blockDim.x + threadIdx.x;", "int i = blockIdx.x * blockDim.x + threadIdx.x;")
            .replace("if (i < n) y[i]", "if (i >= tile && i < n) y[i]"),
            "The grid covers only N − tile threads",
        ),
        # indexed from 0, the add made safe for tile 0: every thread of the N - tile grid works in tile 0
        (
            PROPAGATE.replace("int i = tile + blockIdx.x * blockDim.x + threadIdx.x;", "int i = blockIdx.x * blockDim.x + threadIdx.x;")
            .replace("if (i < n) y[i] += scanned_totals[i / tile - 1];", "if (i < n) y[i] += i >= tile ? scanned_totals[i / tile - 1] : 0;"),
            "every element your threads touched is in tile 0",
        ),
        # the first tile gets a prefix too: scanned_totals[-1]
        (PROPAGATE.replace("int i = tile + blockIdx.x", "int i = blockIdx.x"), "the checker found a bug"),
        # the tile's own total instead of the tiles before it
        # the tile's own total: the verdict says what the element should get (the rule), not what it got
        (PROPAGATE.replace("scanned_totals[i / tile - 1]", "scanned_totals[i / tile]"), "it should get the sum"),
        # the bound check forgotten: the last block's threads past n
        (PROPAGATE.replace("if (i < n) y[i]", "y[i]"), "the checker found a bug"),
        # a thread per tile, looping over it: the course's add_tile_prefix, one thread at a time
        (
            PROPAGATE_STUB.replace(
                PROPAGATE_MARK,
                """    int t = 1 + blockIdx.x * blockDim.x + threadIdx.x;
    if (t * tile >= n) return;
    for (int i = t * tile; i < n && i < (t + 1) * tile; ++i) y[i] += scanned_totals[t - 1];
""",
            ),
            "touches y",
        ),
    ],
})  # fmt: skip
